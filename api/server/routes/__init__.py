"""The ``/v1`` routes, one module per resource; ``local`` is served on the local
server's own socket only, ``ui`` is the web UI."""
