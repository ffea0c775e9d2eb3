"""The ``ragmetrics`` command: evaluate, compare, retrieve, calibrate (no pytest needed)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from pytest_ragmetrics.errors import RagMetricsError

FORMATS = ("table", "json", "markdown")


def _number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4f}"


def _add_evaluate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "evaluate",
        help="evaluate a TREC run against qrels",
        description="Evaluate a run against relevance judgments (trec_eval semantics).",
    )
    p.add_argument("--qrels", required=True, help="TREC qrels or BEIR qrels TSV (.gz ok)")
    p.add_argument("--run", required=True, help="TREC run file (.gz ok)")
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        dest="metrics",
        metavar="NAME",
        help="metric such as ndcg_at_10, map, mrr (repeatable); default: "
        "ndcg_at_10 recall_at_100 map_at_100 mrr_at_10",
    )
    p.add_argument(
        "--relevance-level",
        type=int,
        default=1,
        help="minimum grade that counts as relevant (default 1)",
    )
    p.add_argument(
        "--query-set",
        choices=("qrels", "intersection"),
        default="qrels",
        help="average over all judged queries (missing = 0, trec_eval -c; default) "
        "or only over queries in both files",
    )
    p.add_argument(
        "--gain",
        choices=("linear", "exponential"),
        default="linear",
        help="nDCG gain: grade (trec_eval; default) or 2^grade - 1",
    )
    p.add_argument("--per-query", action="store_true", help="also print per-query values")
    p.add_argument("--format", choices=FORMATS, default="table")
    p.set_defaults(handler=_cmd_evaluate)


def _cmd_evaluate(args: argparse.Namespace, out: TextIO) -> int:
    from tabulate import tabulate

    from pytest_ragmetrics.data.trec import read_qrels, read_run
    from pytest_ragmetrics.metrics.retrieval import evaluate

    metrics = args.metrics or ["ndcg_at_10", "recall_at_100", "map_at_100", "mrr_at_10"]
    evaluation = evaluate(
        read_qrels(args.qrels),
        read_run(args.run),
        metrics,
        relevance_level=args.relevance_level,
        gain=args.gain,
        query_set=args.query_set,
    )
    if args.format == "json":
        payload: dict[str, Any] = {"metrics": evaluation.mean, "num_queries": len(evaluation)}
        if args.per_query:
            payload["per_query"] = evaluation.per_query
        if evaluation.notes:
            payload["notes"] = evaluation.notes
        out.write(json.dumps(payload, indent=2) + "\n")
        return 0
    tablefmt = "github" if args.format == "markdown" else "simple"
    names = list(evaluation.metrics)
    rows = [["all", *(_number(evaluation.mean[m]) for m in names)]]
    if args.per_query:
        rows += [
            [qid, *(_number(values[m]) for m in names)]
            for qid, values in evaluation.per_query.items()
        ]
    out.write(
        tabulate(rows, headers=["query", *names], tablefmt=tablefmt, disable_numparse=True) + "\n"
    )
    out.write(f"\n{len(evaluation)} queries\n")
    for note in evaluation.notes:
        out.write(f"note: {note}\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ragmetrics`` command."""
    parser = argparse.ArgumentParser(
        prog="ragmetrics",
        description="Retrieval and answer-layer metrics for RAG, trec_eval-exact.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_evaluate(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; returns the exit code (2 for bad input, with a one-line reason)."""
    stream = out or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args, stream)
    except RagMetricsError as exc:
        sys.stderr.write(f"ragmetrics {args.command}: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    stream.flush()
    return code


if __name__ == "__main__":
    raise SystemExit(main())
