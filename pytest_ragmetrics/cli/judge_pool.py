"""``ragmetrics judge-pool``: a pool file labelled by a relevance judge, written back, and
its labels written as supplementary qrels (human judgments always win)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from pytest_ragmetrics.cli.common import (
    OUT_HINT,
    Subparsers,
    add_cache_options,
    cache_dir,
    cache_of,
    refuse_overwriting,
    require_positive,
    tablefmt,
    write_json,
)
from pytest_ragmetrics.cli.flags import FORMATS, add
from pytest_ragmetrics.cli.judging import add_judge_options, judge_options
from pytest_ragmetrics.cli.output import table


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "judge-pool",
        help="label a pool file with a relevance judge and write supplementary qrels",
        description="Ask a relevance judge about every row of a pool file that has no verdict "
        "yet (rows a person filled in are kept), write the pool back with each row's "
        "relevant, judge identity, raw verdict and token counts, and write the labels as TREC "
        "qrels whose first line names the judge (ragmetrics_supplementary_qrels reads them; "
        "human judgments always win).",
    )
    add(p, "--pool", "from 'ragmetrics pool'", required=True)
    add(p, "--judge", "the relevance judge that labels the rows", required=True)
    add(p, "--qrels-out", "supplementary qrels to write", required=True)
    add(p, "--out", "where the labelled pool goes (default: the --pool file, updated in "
        "place)", metavar="POOL.jsonl")  # fmt: skip
    add(p, "--rejudge", "also ask about rows that already have a verdict")
    add(p, "--format", "of the summary", choices=FORMATS[:3])
    add_cache_options(p, "verdict cache folder")
    add_judge_options(
        p,
        threshold="cosine at or above which a passage is relevant (default 0.5; calibrate "
        "--question relevance tunes one)",
        verdicts="recorded relevance verdicts: query_id, doc_id, relevant per line (a "
        "filled-in pool file is one)",
    )
    p.set_defaults(handler=run)


def _check_outputs(args: argparse.Namespace, target: str) -> None:
    """Before any judge call: the outputs overwrite no input, and a folder that refuses them
    would lose the verdicts."""
    from pytest_ragmetrics.fileio import check_writable

    inputs = {"--verdicts": args.verdicts}
    folders, cache = {"--prompts": args.prompts}, cache_dir(args)
    files = {"--pool": args.pool, "--out": target, **inputs}
    refuse_overwriting(
        args.qrels_out,
        "--qrels-out",
        kind="supplementary",
        files=files,
        folders=folders,
        cache=cache,
    )
    if args.out is not None:
        refuse_overwriting(
            args.out, "--out", kind="pool", files=inputs, folders=folders, cache=cache
        )
    check_writable(target, what="pool file", hint=OUT_HINT.format("--out"))
    check_writable(args.qrels_out, what="supplementary qrels", hint=OUT_HINT.format("--qrels-out"))


def run(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.judges.base import identity_label
    from pytest_ragmetrics.judges.factory import build_relevance_judge
    from pytest_ragmetrics.pooling import judge_pool, read_pool, write_pool
    from pytest_ragmetrics.progress import progress, stream_reporter, use_reporter

    options = judge_options(args)
    require_positive(args, "concurrency")
    target = args.out or args.pool
    _check_outputs(args, target)
    entries = read_pool(args.pool)
    judge = build_relevance_judge(args.judge, cache=cache_of(args), **options)
    with use_reporter(stream_reporter()), progress("judging the pool", len(entries)) as advance:
        result = judge_pool(entries, judge, path=args.pool, rejudge=args.rejudge, advance=advance)
    write_pool(target, result.entries, hint=OUT_HINT.format("--out"))
    written = _write_labels(args, result.entries)
    summary = {
        **result.summary(),
        "judge": judge.identity(),
        "pool": target,
        "qrels": args.qrels_out if written else None,
        "labels_written": written,
    }
    if args.format == "json":
        write_json(out, summary, sort_keys=True)
        return 0
    identity = summary["judge"]
    rows = [["judge", identity_label(identity)]]
    rows += [[key, str(value)] for key, value in result.summary().items()]
    out.write(table(rows, tablefmt=tablefmt(args)) + "\n")
    out.write(f"\nwrote {target}")
    if written:
        out.write(f" and {args.qrels_out} ({written} labels)\n")
    else:
        out.write(f"; no row has a verdict, so {args.qrels_out} was not written\n")
    return 0


def _write_labels(args: argparse.Namespace, entries: Any) -> int:
    """The labelled rows as supplementary qrels (none written when no row has a verdict)."""
    from pytest_ragmetrics.pooling import write_supplementary_qrels

    if not any(e.relevant is not None for e in entries):
        return 0
    hint = OUT_HINT.format("--qrels-out")
    return write_supplementary_qrels(args.qrels_out, entries, hint=hint)
