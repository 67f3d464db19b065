"""``python -m overspill.api.cli``: the same as the console script."""

from overspill.api.cli import main

raise SystemExit(main(exit_when_done=True))
