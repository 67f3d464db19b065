"""Every outside surface of overspill: CLI, HTTP API, web UI, client, model tools."""
