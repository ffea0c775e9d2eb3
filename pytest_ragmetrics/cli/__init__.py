"""The ``ragmetrics`` command (no pytest needed): one module per subcommand (``evaluate``,
``compare``, ``report``, ``retrieve``, ``calibrate``, ``pool``, ``judge_pool``,
``generate``), every flag defined once in :mod:`.flags` (settings' flags from
:mod:`pytest_ragmetrics.options`), the parser and ``main`` in :mod:`.app`."""

from pytest_ragmetrics.cli.app import build_parser, main
from pytest_ragmetrics.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERNAL_ERROR,
    EXIT_OK,
)

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_INTERNAL_ERROR",
    "EXIT_OK",
    "build_parser",
    "main",
]
