"""``ragmetrics pool``: the unjudged (query, document) pairs in the runs' top depth, written
as JSONL for a person or ``ragmetrics judge-pool`` to label."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pytest_ragmetrics.cli import common
from pytest_ragmetrics.cli.common import Subparsers
from pytest_ragmetrics.cli.flags import FORMATS, add
from pytest_ragmetrics.cli.output import table
from pytest_ragmetrics.errors import ConfigError


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "pool",
        help="list the unjudged (query, document) pairs in the runs' top depth (JSONL to judge)",
        description="Pool the runs: every (query, document) pair in the union of the runs' "
        "top --depth that the qrels do not judge (grade -1 counts as unjudged), for the judged "
        "queries, with the query and document text, as JSONL a person can review and fill in "
        "(relevant: true/false) or 'ragmetrics judge-pool' can label.",
    )
    add(p, "--qrels")
    add(p, "--dataset", "dataset folder: its qrels (unless --qrels is given) and the query and "
        "document texts the rows carry (without it rows have ids only)", metavar="DIR")  # fmt: skip
    add(p, "--split", "with --dataset: the split (default test)", metavar="SPLIT")
    add(p, "--run", "TREC run (repeatable)", required=True)
    add(p, "--depth", "top documents per run (default 10)")
    add(p, "--out", "pool file to write", metavar="POOL.jsonl", required=True)
    add(p, "--format", "of the summary", choices=FORMATS[:3])
    p.set_defaults(handler=run)


def run_labels(paths: Sequence[str]) -> list[str]:
    """A name per run: its tag, or its file name when tags are missing or repeated."""
    from pytest_ragmetrics.comparison.runs import run_label

    tags = [run_label(path) for path in paths]
    return [str(path) for path in paths] if len(set(tags)) < len(tags) else tags


def run(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import read_qrels, read_run
    from pytest_ragmetrics.pooling import build_pool, keep_verdicts, write_pool

    common.require_positive(args, "depth")
    pair = common.one_pair(args)
    if args.qrels is None and pair is None:
        raise ConfigError("give --qrels FILE or --dataset DIR (or both: texts from the dataset)")
    common.refuse_overwriting(
        args.out,
        "--out",
        kind="pool",
        files={"--qrels": args.qrels, **{f"--run {r}": r for r in args.run}},
        folders={"--dataset": None if pair is None else str(pair.path)},
    )
    dataset = None if pair is None else load_dataset(pair.path, pair.split)
    qrels = read_qrels(args.qrels) if args.qrels else dataset.qrels  # type: ignore[union-attr]
    labels = run_labels(args.run)
    runs = [(label, read_run(path)) for label, path in zip(labels, args.run, strict=True)]
    entries = build_pool(
        qrels,
        runs,
        args.depth,
        queries=None if dataset is None else dataset.queries,
        corpus=None if dataset is None else dataset.corpus,
    )
    entries, kept = keep_verdicts(Path(args.out), entries, qrels, label=f"--out {args.out}")
    write_pool(args.out, entries, hint=common.OUT_HINT.format("--out"))
    per_run = {label: sum(1 for e in entries if label in e.runs) for label in labels}
    queries = len({e.query_id for e in entries})
    if args.format == "json":
        common.write_json(
            out,
            {
                "pool": args.out,
                "pairs": len(entries),
                "queries": queries,
                "depth": args.depth,
                "unjudged_per_run": per_run,
                "texts": dataset is not None,
                "kept": kept,
            },
        )
        return 0
    rows = [[label, str(n)] for label, n in per_run.items()]
    headers = ["run", f"unjudged pairs in its top {args.depth}"]
    out.write(table(rows, headers=headers, tablefmt=common.tablefmt(args)) + "\n")
    out.write(f"\nwrote {args.out}: {len(entries)} unjudged pairs over {queries} queries\n")
    if kept:
        out.write(f"kept the verdicts of {kept} rows of the pool file it replaced\n")
    if dataset is None:
        out.write("note: without --dataset the rows carry no texts; a judge needs them\n")
    return 0
