"""Writing: how bytes become an artifact, and how they are rewritten at rest.

``ingest`` creates artifacts (validation, retention, quota) and their writers;
``writer`` streams a producer's chunks into segments with a lease; ``producers``
are its two ways of making segments; ``publishing`` is the transactions that
make stored segments part of an artifact; ``segments`` the write path's seams,
``segment_storage`` where a writer's segment bytes go before any row names them;
``writes`` its records; ``db_retry`` a write through a brief database outage;
``compaction`` rewrites a cold artifact as compressed frames.

May import: ``reading`` (a writer's own reads), ``catalog``, ``ledger``,
``stored`` and the store's foundations (``errors``, ``records``, ``context``,
``db``, ``blobs`` ...). Nothing below imports this package: only ``store``.
"""
