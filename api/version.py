"""The release, as one constant: the distribution's version (pyproject.toml reads
it from here), what ``--version`` prints and what the local server's handshake
compares, without the ~30 ms importlib.metadata costs a verb."""

VERSION = "0.2.0"
