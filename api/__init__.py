"""Every outside surface of overspill: CLI, HTTP API, web UI, client, model tools."""

if __name__ != "overspill.api":  # one identity: the folder is never a top-level package
    raise ImportError(
        f"{__name__} is overspill.api: import it as overspill.api (install the "
        "project: pip install -e .), not as a folder of the checkout"
    )
