"""``python -m overspill.api.cli``: the same as the console script."""

from . import main

raise SystemExit(main(exit_when_done=True))
