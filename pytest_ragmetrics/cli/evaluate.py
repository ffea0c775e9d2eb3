"""``ragmetrics evaluate``: a TREC run scored against qrels or a dataset's judgments (several
runs over several datasets print a summary per metric)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

from pytest_ragmetrics.cli.common import (
    Subparsers,
    dataset_pairs,
    number,
    semantics_of,
    tablefmt,
    write_json,
    write_notes,
    write_summary,
)
from pytest_ragmetrics.cli.flags import FORMATS, add
from pytest_ragmetrics.cli.output import table
from pytest_ragmetrics.errors import ConfigError, MetricError
from pytest_ragmetrics.vocabulary import DEFAULT_METRICS

if TYPE_CHECKING:
    from pytest_ragmetrics.data.selection import DatasetSelection
    from pytest_ragmetrics.metrics.evaluation import Evaluation


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "evaluate",
        help="evaluate a TREC run against qrels",
        description="Evaluate a run against relevance judgments (trec_eval semantics).",
    )
    judgments = p.add_mutually_exclusive_group(required=True)
    add(judgments, "--qrels")
    add(
        judgments,
        "--dataset",
        "take the qrels of a dataset folder instead (BEIR, FlagEmbedding, or a folder with "
        "dataset.json such as TREC or SMART collections, grade mapping applied); repeat it "
        "(NAME=DIR) to evaluate several datasets and print a summary per metric",
    )
    add(p, "--split", "with --dataset: the split(s), test (default), test,dev or NAME=test,dev "
        "per dataset (repeats add up)")  # fmt: skip
    add(
        p,
        "--run",
        "TREC run file (.gz ok); with several datasets or runs, PAIR=RUN says which (dataset, "
        "split) pair it is for (NAME or NAME-SPLIT); rows are named by the runs' tags",
        metavar="[PAIR=]RUN",
        required=True,
    )
    add(p, "--metric", "metric such as ndcg_at_10, map, mrr; several: -m ndcg_at_10,map or "
        "-m repeated; default: " + " ".join(DEFAULT_METRICS))  # fmt: skip
    for flag in ("--relevance-level", "--gain", "--query-set"):
        add(p, flag)
    add(
        p,
        "--ignore-identical-ids",
        "drop every retrieved document whose id equals its query's id before scoring (BEIR's "
        "rule, for corpora that contain the queries: ArguAna, Quora)",
    )
    add(
        p,
        "--judged-docs-only",
        "evaluate every metric judged-only, with unjudged documents (and grade -1) removed "
        "from the rankings (trec_eval -J; the metrics are named <metric>_judged)",
    )
    add(
        p,
        "--supplementary-qrels",
        "supplementary qrels from 'ragmetrics judge-pool': also report every metric on the "
        "human qrels plus these labels (human judgments win); one run only",
    )
    add(p, "--per-query", "also print per-query values (--format json always has them, for "
        "'ragmetrics compare')")  # fmt: skip
    add(
        p,
        "--format",
        "json: a document 'ragmetrics compare' reads (schema pytest-ragmetrics/evaluation: "
        "means, per-query values, the qrels fingerprint, the scoring rules)",
        choices=FORMATS[:3],
    )
    p.set_defaults(handler=run)


def metrics_of(args: argparse.Namespace) -> list[str]:
    """The metrics of -m (or the default), in their judged-only forms with -J."""
    from pytest_ragmetrics.metrics.names import judged_only_name

    metrics = list(dict.fromkeys(args.metrics or DEFAULT_METRICS))
    if not args.judged_docs_only:
        return metrics
    try:
        return [judged_only_name(name) for name in metrics]
    except MetricError as exc:
        raise MetricError(f"-J: {exc}") from None


def run(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.comparison import evaluation_document, load_judgments
    from pytest_ragmetrics.comparison.runs import run_pair, run_path, score, supplemented
    from pytest_ragmetrics.data.trec import read_run

    metrics = metrics_of(args)
    if args.dataset is None and args.split is not None:
        raise ConfigError("--split: only with --dataset")
    pairs = dataset_pairs(args) if args.dataset else []
    if len(pairs) > 1 or len(args.run) > 1:
        if args.supplementary_qrels is not None:
            raise ConfigError("--supplementary-qrels: with one run and one dataset only")
        return _several(args, pairs, metrics, out)
    first = pairs[0] if pairs else None
    judgments = load_judgments(
        args.qrels,
        None if first is None else str(first.path),
        None if first is None else first.split,
    )
    [text] = args.run
    path = run_path(text)
    if first is not None:
        run_pair(text, [first.key], {first.key: first.name})  # a PAIR= prefix must name it
    elif path != text:
        raise ConfigError(f"--run {text}: a PAIR= prefix names a --dataset pair; there is none")
    run_ = read_run(path)
    semantics = semantics_of(args)
    evaluation = score(judgments.qrels, run_, metrics, semantics)
    if args.supplementary_qrels is not None:
        for note in supplemented(
            evaluation,
            args.supplementary_qrels,
            judgments.qrels,
            run_,
            judgments.dataset,
            semantics,
        ):
            sys.stderr.write(f"ragmetrics evaluate: note: {note}\n")
    if args.format == "json":
        # Always with per-query values: 'ragmetrics compare' pairs them (--per-query is for
        # the table).
        document = evaluation_document(evaluation, run=path, dataset=judgments.identity)
        if evaluation.supplemented is not None:
            document["supplemented"] = evaluation.supplemented.to_dict()
        write_json(out, document)
        return 0
    _write_table(args, evaluation, out)
    return 0


def _write_table(args: argparse.Namespace, evaluation: Evaluation, out: TextIO) -> None:
    """The means (and with --per-query each query's values), then the notes."""
    names = list(evaluation.metrics)
    rows = [["all", *(number(evaluation.mean[m]) for m in names)]]
    sup = evaluation.supplemented
    if sup is not None:
        rows.append(["all (+ judge labels)", *(number(sup.metrics.get(m)) for m in names)])
    if args.per_query:
        rows += [[q, *(number(v[m]) for m in names)] for q, v in evaluation.per_query.items()]
    out.write(table(rows, headers=["query", *names], tablefmt=tablefmt(args)) + "\n")
    out.write(f"\n{len(evaluation)} queries\n")
    if sup is not None:
        out.write(
            f"+ judge labels: {sup.labels_used} labels of judge "
            f"{(sup.judge or {}).get('name')!r} from {args.supplementary_qrels} "
            "(human judgments win)\n"
        )
    write_notes(out, list(evaluation.notes))


def _several(
    args: argparse.Namespace, pairs: list[DatasetSelection], metrics: list[str], out: TextIO
) -> int:
    """Several runs and/or datasets: a summary per metric, pairs as columns (and their mean),
    runs (by tag) as rows."""
    from pytest_ragmetrics.comparison.runs import score_pairs
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import read_qrels
    from pytest_ragmetrics.report.datasets import PairMeans

    if pairs:
        qrels_of = {pair.key: load_dataset(pair.path, pair.split).qrels for pair in pairs}
    else:
        qrels_of = {"qrels": read_qrels(args.qrels)}
    names = {pair.key: pair.name for pair in pairs}
    scored = score_pairs(args.run, qrels_of, metrics, semantics_of(args), names)
    cells = [PairMeans(s.label, s.pair, s.evaluation.mean) for s in scored]
    notes = [note for s in scored for note in s.notes]
    write_summary(cells, metrics, [p.key for p in pairs], args.format, out, notes)
    return 0
