"""The client side: every way to the store from a process that is not the server.

``api`` is the typed client interface (one method per operation) with its two
implementations: ``in_process`` (the store in this process) and ``http`` (a
server over ``/v1``, on ``calls`` and ``wire``: the standard library's HTTP, which
the CLI's verbs use directly to stay light). ``sinks`` are the executor's way
into a server, ``local_server`` starts and finds this home's local server.
"""
