"""The ``ragmetrics`` command: its parser (a subcommand per module of this package) and
``main``, which turns our errors into one line on stderr and an exit code."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import TextIO, cast

from pytest_ragmetrics.cli import (
    calibrate,
    compare,
    evaluate,
    generate,
    judge_pool,
    pool,
    report,
    retrieve,
)
from pytest_ragmetrics.cli.common import EXIT_BAD_INPUT, EXIT_INTERNAL_ERROR, shown
from pytest_ragmetrics.cli.flags import add
from pytest_ragmetrics.cli.output import SafeOutput
from pytest_ragmetrics.errors import RagMetricsError, RagMetricsWarning
from pytest_ragmetrics.fileio import streams_read_once

COMMANDS = (evaluate, compare, report, retrieve, calibrate, pool, judge_pool, generate)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ragmetrics`` command."""
    parser = argparse.ArgumentParser(
        prog="ragmetrics",
        description="Retrieval and answer-layer metrics for RAG, trec_eval-exact.",
    )
    add(parser, "--version", setting=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; returns the exit code (2 for bad input, with a one-line reason)."""
    # A text stream in all that the commands use (write, flush).
    stream = cast("TextIO", SafeOutput(out or sys.stdout))
    args = build_parser().parse_args(argv)
    try:
        code = _run(args, stream)
    except RagMetricsError as exc:
        sys.stderr.write(f"ragmetrics {args.command}: error: {shown(exc)}\n")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except Exception:
        # Not 1: CI reads 1 as "regressed". A crash here is our bug, so show where it is.
        import traceback

        traceback.print_exc()
        sys.stderr.write(
            f"ragmetrics {args.command}: internal error (a bug in pytest-ragmetrics, not in "
            "your data); please report it with the traceback above\n"
        )
        return EXIT_INTERNAL_ERROR
    stream.flush()
    return code


def _run(args: argparse.Namespace, stream: TextIO) -> int:
    """The command's handler, our warnings shown as one line each on stderr, whatever filters
    the calling program set (a test run may turn warnings into errors); an input given as a
    pipe is read once, however often the command looks at it."""
    with warnings.catch_warnings(record=True) as caught, streams_read_once():
        warnings.simplefilter("always", RagMetricsWarning)
        try:
            code: int = args.handler(args, stream)
        finally:
            for warning in caught:
                if issubclass(warning.category, RagMetricsWarning):
                    message = shown(warning.message)
                    sys.stderr.write(f"ragmetrics {args.command}: warning: {message}\n")
                else:
                    warnings.showwarning(
                        warning.message, warning.category, warning.filename, warning.lineno
                    )
    return code
