"""An artifact's bytes at rest: segments and frames on a blob backend.

``content`` reads a stored prefix made of immutable segments (raw or compressed
frames, decoded with a small cache), ``frames`` is the frame codec,
``blob_refs`` says which blobs rows still name (and locks the answer),
``spill_files`` is the legacy spill file of an artifact.

May import: the foundations only (``blobs``, ``db``, ``errors``, ``records``,
``newlines`` ...).
"""
