"""The context ledger: what each output kept out of a model's context, and what
was read back of it -- counts only, never content.

``read_context`` says which tool and conversation a read comes from,
``ledger`` counts reads and writes them once a second, ``ledger_stats`` answers
``overspill stats`` for a period, an owner, a harness or a conversation.

May import: the foundations only (``records``, ``context``, ``db``, ``errors``).
"""
