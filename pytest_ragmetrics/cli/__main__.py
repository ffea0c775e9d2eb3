"""``python -m pytest_ragmetrics.cli``: the ``ragmetrics`` command."""

from pytest_ragmetrics.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
