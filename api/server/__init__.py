"""The HTTP server: the FastAPI app (``app``), its dependencies and error map,
the ``/v1`` routes (``routes``), ``/mcp`` for remote agents (``mcp_http``), the
web UI's files (``static``) and running it (``running``: ``overspill serve`` on
TCP, the local server on the home's Unix socket)."""
