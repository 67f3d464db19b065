"""The grep engine: one pattern over one artifact's bytes, and over many at once.

``grep`` scans chunks in place with RE2 and builds the matching lines,
``grep_patterns`` compiles a pattern with its bounds, ``grep_groups`` merges
context as GNU ``grep -C`` prints it, ``grep_text`` streams GNU ``grep -n``'s
text; ``search_pool`` and ``search_worker`` grep ahead in worker processes for a
search across many outputs.

May import: ``stored`` (an artifact's bytes), ``catalog`` and the foundations;
never ``reading`` or ``writing``.
"""
