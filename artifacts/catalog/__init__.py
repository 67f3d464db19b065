"""The catalog: artifacts' metadata and lifecycle, and what admins set over them.

``catalog`` (an artifact's rows as its owner sees them), ``retention`` (which
level decides an expiry), ``policies`` (retention and quota policies),
``quotas`` and ``usage`` (per-owner bytes), ``sweeper`` (cleanup that frees
space), ``tokens`` (API tokens, stored hashed), ``audit`` (who did what).

May import: ``stored`` and the foundations; never ``reading``, ``grep`` or
``writing``.
"""
