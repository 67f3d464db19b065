"""Reading: bounded answers over what an artifact stores, and search across outputs.

``reading`` is the ``Reader`` (windows, lines, tails, grep, downloads, each
bounded and saying where to continue), ``reads`` the windows' arithmetic,
``follow`` the rhythm of following a growing artifact, ``search`` the search
across a principal's outputs.

May import: ``grep``, ``catalog``, ``ledger``, ``stored`` and the foundations;
never ``writing``.
"""
