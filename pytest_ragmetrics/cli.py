"""The ``ragmetrics`` command: evaluate, compare, report, retrieve, calibrate, pool, judge-pool,
generate (no pytest needed)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from pytest_ragmetrics.cli_output import SafeOutput, table, write_document
from pytest_ragmetrics.deltas import delta_text
from pytest_ragmetrics.errors import ConfigError, MetricError, RagMetricsError, RagMetricsWarning
from pytest_ragmetrics.options import OPTION, add_cli_argument
from pytest_ragmetrics.report.escaping import for_terminal
from pytest_ragmetrics.vocabulary import DEFAULT_METRICS, JUDGE_KINDS, RETRIEVER_KINDS

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.calibration import CalibrationResult

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.tolerances import Tolerances
    from pytest_ragmetrics.baseline.verdicts import Against
    from pytest_ragmetrics.comparison import Input, Judgments, SystemsComparison, Versus
    from pytest_ragmetrics.report.html import ReportPage

FORMATS = ("table", "json", "markdown")
# Exit codes, the same for every command (README, "Exit codes").
EXIT_OK = 0
EXIT_FAILED = 1  # compare: an evaluation regressed or is not comparable (or --strict: missing)
EXIT_BAD_INPUT = 2  # a file, option or argument we cannot use (argparse's usage errors too)
EXIT_INTERNAL_ERROR = 3
# How to write an output elsewhere, in the error for a folder that refuses it.
_OUT_HINT = "pass {} FILE to write it elsewhere"


def _shown(text: object) -> str:
    """A message for stderr: its control characters shown as escapes, tab and newline kept."""
    return for_terminal(text, newlines=True)


def _number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4f}"


def _require_positive(args: argparse.Namespace, *names: str) -> None:
    """A ConfigError for the first of the integer options ``names`` given below 1."""
    from pytest_ragmetrics.values import MAX_CUTOFF

    for name in names:
        value = getattr(args, name)
        if value is not None and not 0 < value <= MAX_CUTOFF:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} must be a positive integer, got {value} (at most {MAX_CUTOFF})"
            )


def _refuse_overwriting(
    output: str,
    flag: str,
    *,
    files: dict[str, str | None] | None = None,
    folders: dict[str, str | None] | None = None,
    cache: str | None = None,
) -> None:
    """A ConfigError when ``output`` would overwrite an input file, a file in an input folder
    or a cache entry."""
    from pytest_ragmetrics.cache import inside_cache_entries
    from pytest_ragmetrics.fileio import is_within, same_file

    target = Path(output)
    for other, path in (files or {}).items():
        if path is not None and same_file(target, Path(path)):
            raise ConfigError(f"{flag} {output}: that is the {other} file; it would be overwritten")
    for other, path in (folders or {}).items():
        if path is not None and is_within(target, Path(path)):
            raise ConfigError(
                f"{flag} {output}: inside the {other} folder {path}; write it somewhere else"
            )
    if cache is not None and inside_cache_entries(target, Path(cache)):
        raise ConfigError(f"{flag} {output}: inside the cache folder {cache}; write it elsewhere")


def _add_evaluate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Long by nature: one add_argument per flag; the command's whole interface in one place.
    p = sub.add_parser(
        "evaluate",
        help="evaluate a TREC run against qrels",
        description="Evaluate a run against relevance judgments (trec_eval semantics).",
    )
    judgments = p.add_mutually_exclusive_group(required=True)
    judgments.add_argument("--qrels", help="TREC qrels or BEIR qrels TSV (.gz ok)")
    judgments.add_argument(
        "--dataset",
        action="append",
        metavar="[NAME=]DIR",
        help="take the qrels of a dataset folder instead (BEIR, FlagEmbedding, or a folder "
        "with dataset.json such as TREC or SMART collections, grade mapping applied); "
        "repeat it (NAME=DIR) to evaluate several datasets and print a summary per metric",
    )
    p.add_argument(
        "--split",
        help="with --dataset: the split(s), test (default), test,dev or NAME=test,dev per dataset",
    )
    p.add_argument(
        "--run",
        required=True,
        action="append",
        metavar="[PAIR=]RUN",
        help="TREC run file (.gz ok); with several datasets or runs, PAIR=RUN says which "
        "(dataset, split) pair it is for (NAME or NAME-SPLIT); rows are named by the runs' tags",
    )
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        dest="metrics",
        metavar="NAME",
        help="metric such as ndcg_at_10, map, mrr (repeatable); default: "
        + " ".join(DEFAULT_METRICS),
    )
    for name in ("ragmetrics_relevance_level", "ragmetrics_gain", "ragmetrics_query_set"):
        add_cli_argument(p, name, default=OPTION[name].value(OPTION[name].default or ""))
    p.add_argument(
        "--ignore-identical-ids",
        action="store_true",
        help="drop every retrieved document whose id equals its query's id before scoring "
        "(BEIR's rule, for corpora that contain the queries: ArguAna, Quora)",
    )
    p.add_argument(
        "-J",
        "--judged-docs-only",
        action="store_true",
        help="evaluate every metric judged-only, with unjudged documents (and grade -1) "
        "removed from the rankings (trec_eval -J; the metrics are named <metric>_judged)",
    )
    add_cli_argument(
        p,
        "ragmetrics_supplementary_qrels",
        help="supplementary qrels from 'ragmetrics judge-pool': also report every metric on "
        "the human qrels plus these labels (human judgments win); one run only",
    )
    p.add_argument(
        "--per-query",
        action="store_true",
        help="also print per-query values (--format json always has them, for "
        "'ragmetrics compare')",
    )
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="json: a document 'ragmetrics compare' reads (schema pytest-ragmetrics/evaluation: "
        "means, per-query values, the qrels fingerprint, the scoring rules)",
    )
    p.set_defaults(handler=_cmd_evaluate)


def _cmd_evaluate(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.comparison import evaluation_document, load_judgments
    from pytest_ragmetrics.data.trec import read_run
    from pytest_ragmetrics.metrics.retrieval import evaluate

    metrics = args.metrics or list(DEFAULT_METRICS)
    if args.judged_docs_only:
        metrics = _judged_forms(metrics)
    if args.dataset is None and args.split is not None:
        raise ConfigError("--split: only with --dataset")
    pairs = _dataset_pairs(args) if args.dataset else []
    if len(pairs) > 1 or len(args.run) > 1:
        if args.supplementary_qrels is not None:
            raise ConfigError("--supplementary-qrels: with one run and one dataset only")
        return _evaluate_several(args, pairs, metrics, out)
    if pairs:
        judgments = load_judgments(None, str(pairs[0].path), pairs[0].split)
    else:
        judgments = load_judgments(args.qrels, None, None)
    [run_text] = args.run
    run_file = _run_file(run_text)
    run = read_run(run_file)
    semantics = {
        "relevance_level": args.relevance_level,
        "gain": args.gain,
        "query_set": args.query_set,
        "ignore_identical_ids": args.ignore_identical_ids,
    }
    evaluation = evaluate(judgments.qrels, run, metrics, **semantics)
    if args.supplementary_qrels is not None:
        from pytest_ragmetrics.pooling import load_supplement

        corpus = None if judgments.dataset is None else judgments.dataset.corpus
        supplement = load_supplement(
            args.supplementary_qrels, calibration=None, min_kappa=None, corpus=corpus
        )
        evaluation.supplemented = supplement.evaluate(judgments.qrels, run, metrics, **semantics)
        evaluation.notes.extend(supplement.notes)
    if args.format == "json":
        # Always with per-query values: 'ragmetrics compare' pairs them (--per-query is for
        # the table).
        document = evaluation_document(evaluation, run=run_file, dataset=judgments.identity)
        if evaluation.supplemented is not None:
            document["supplemented"] = evaluation.supplemented.to_dict()
        out.write(json.dumps(document, indent=2) + "\n")
        return 0
    tablefmt = "github" if args.format == "markdown" else "simple"
    names = list(evaluation.metrics)
    rows = [["all", *(_number(evaluation.mean[m]) for m in names)]]
    if evaluation.supplemented is not None:
        labelled = evaluation.supplemented.metrics
        rows.append(["all (+ judge labels)", *(_number(labelled.get(m)) for m in names)])
    if args.per_query:
        rows += [
            [qid, *(_number(values[m]) for m in names)]
            for qid, values in evaluation.per_query.items()
        ]
    out.write(
        table(rows, headers=["query", *names], tablefmt=tablefmt, disable_numparse=True) + "\n"
    )
    out.write(f"\n{len(evaluation)} queries\n")
    if evaluation.supplemented is not None:
        sup = evaluation.supplemented
        out.write(
            f"+ judge labels: {sup.labels_used} labels of judge "
            f"{(sup.judge or {}).get('name')!r} from {args.supplementary_qrels} "
            "(human judgments win)\n"
        )
    for note in evaluation.notes:
        out.write(f"note: {for_terminal(note)}\n")
    return 0


def _dataset_pairs(args: argparse.Namespace) -> list[Any]:
    """The (dataset, split) pairs of repeated --dataset [NAME=]DIR and --split."""
    from pytest_ragmetrics.data.selection import parse_named_paths, parse_splits, select_datasets

    named = parse_named_paths(" ".join(args.dataset), "--dataset")
    splits = parse_splits(args.split or "test", [name for name, _ in named], "--split")
    ignore = bool(getattr(args, "ignore_identical_ids", False))
    return list(select_datasets([(n, Path(p)) for n, p in named], splits, lambda name: ignore))


def _run_file(text: str) -> str:
    """The file of a --run [PAIR=]RUN value (a path that holds '=' is taken whole)."""
    key, sep, path = text.partition("=")
    return path if sep and key and not Path(text).exists() else text


def _evaluate_several(
    args: argparse.Namespace, pairs: list[Any], metrics: list[str], out: TextIO
) -> int:
    """Several runs and/or datasets: a summary per metric, pairs as columns (and their mean),
    runs (by tag) as rows."""
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import read_qrels, read_run, run_tag
    from pytest_ragmetrics.metrics.retrieval import evaluate
    from pytest_ragmetrics.report.datasets import Cell

    qrels_of: dict[str, Any] = {}
    if pairs:
        for pair in pairs:
            qrels_of[pair.key] = load_dataset(pair.path, pair.split).qrels
    else:
        qrels_of["qrels"] = read_qrels(args.qrels)
    cells, notes = [], []
    for text in args.run:
        key = _run_pair(text, pairs, qrels_of)
        path = _run_file(text)
        evaluation = evaluate(
            qrels_of[key],
            read_run(path),
            metrics,
            relevance_level=args.relevance_level,
            gain=args.gain,
            query_set=args.query_set,
            ignore_identical_ids=args.ignore_identical_ids,
        )
        label = run_tag(path) or Path(path).name
        cells.append(Cell(label, key, evaluation.mean))
        notes += [f"{label} on {key}: {note}" for note in evaluation.notes]
    return _write_summary(cells, metrics, [p.key for p in pairs], args.format, out, notes)


def _run_pair(text: str, pairs: list[Any], qrels_of: dict[str, Any]) -> str:
    """Which pair a --run value is for: its PAIR= prefix, or the only pair."""
    key, sep, _ = text.partition("=")
    if sep and key and not Path(text).exists():
        matches: list[str] = [p.key for p in pairs if key in (p.name, p.key)]
        if len(matches) == 1:
            return matches[0]
        raise ConfigError(
            f"--run {text}: {key!r} "
            + ("names several pairs; write NAME-SPLIT" if matches else "is no --dataset pair")
            + f" (the pairs are {', '.join(qrels_of)})"
        )
    if len(qrels_of) == 1:
        return str(next(iter(qrels_of)))
    raise ConfigError(
        f"--run {text}: with several datasets say which pair it is for: "
        f"PAIR={text} with PAIR one of {', '.join(qrels_of)}"
    )


def _write_summary(
    cells: list[Any],
    metrics: list[str],
    order: list[str],
    form: str,
    out: TextIO,
    notes: list[str],
) -> int:
    """The per-dataset summary of ``cells`` in table, markdown or JSON form."""
    from pytest_ragmetrics.report.datasets import summarize, summary_table

    tables = summarize(cells, metrics, order, minimum_pairs=1)
    if form == "json":
        payload = {"by_dataset": {t.metric: t.to_dict() for t in tables}, "notes": notes}
        out.write(json.dumps(payload, indent=2) + "\n")
        return 0
    tablefmt = "github" if form == "markdown" else "simple"
    out.write("\n\n".join(summary_table(t, tablefmt) for t in tables) + "\n")
    for note in notes:
        out.write(f"note: {for_terminal(note)}\n")
    return 0


def _judged_forms(metrics: list[str]) -> list[str]:
    """Every metric's judged-only form, for ``-J``."""
    from pytest_ragmetrics.metrics.names import judged_only_name

    try:
        return [judged_only_name(name) for name in metrics]
    except MetricError as exc:
        raise MetricError(f"-J: {exc}") from None


def _add_cache_options(p: argparse.ArgumentParser, folder: str) -> None:
    """--cache-dir (described as ``folder``) and --no-cache."""
    p.add_argument(
        "--cache-dir",
        default=".ragmetrics/cache",
        metavar="DIR",
        help=f"{folder} (default .ragmetrics/cache)",
    )
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")


def _add_retrieve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Long by nature: one add_argument per flag; the command's whole interface in one place.
    p = sub.add_parser(
        "retrieve",
        help="run a built-in retriever over a dataset and write a TREC run",
        description="Search a dataset's queries with the dense or BM25 retriever and write a "
        "TREC run that 'ragmetrics evaluate' reads. Embeddings and runs are cached.",
    )
    p.add_argument(
        "--dataset",
        required=True,
        action="append",
        metavar="[NAME=]DIR",
        help="BEIR or FlagEmbedding folder, or a folder with dataset.json (TREC, SMART); repeat "
        "it (NAME=DIR) for several: each gets its own run in --out, a folder, and a summary is "
        "printed",
    )
    p.add_argument(
        "--split",
        default="test",
        help="split(s) whose queries to search: test (default), test,dev, or NAME=test,dev",
    )
    p.add_argument("--retriever", required=True, choices=RETRIEVER_KINDS)
    p.add_argument(
        "--model",
        metavar="PATH_OR_NAME",
        help="dense: model folder or locally cached hub name (default: all-MiniLM-L6-v2)",
    )
    p.add_argument("--k", type=int, default=100, help="documents per query (default 100)")
    _add_cache_options(p, "cache folder for embeddings and runs")
    p.add_argument(
        "--out",
        required=True,
        metavar="RUN",
        help="TREC run file to write; with several (dataset, split) pairs a folder, which gets "
        "NAME-SPLIT.trec per pair",
    )
    p.add_argument(
        "-m",
        "--metric",
        action="append",
        dest="metrics",
        metavar="NAME",
        help="with several pairs: metrics of the summary (default: "
        + " ".join(DEFAULT_METRICS)
        + ")",
    )
    p.add_argument(
        "--ignore-identical-ids",
        action="store_true",
        help="with several pairs: score the summary with BEIR's identical-ids rule (the runs "
        "written are not filtered)",
    )
    p.add_argument("--format", choices=FORMATS, default="table", help="of the summary")
    p.add_argument("--tag", help="run tag (last column; default: the retriever's name)")
    dense = p.add_argument_group("dense options")
    dense.add_argument("--batch-size", type=int, help="encoding batch size (default 32)")
    dense.add_argument("--max-seq-length", type=int, help="truncate inputs (tokens)")
    dense.add_argument("--query-prefix", help="text put before every query (e5, bge, ...)")
    dense.add_argument("--passage-prefix", help="text put before every passage")
    dense.add_argument("--index", choices=("flat", "ivf", "hnsw"), help="faiss index type")
    dense.add_argument("--device", help="torch device, e.g. cpu or cuda:0")
    dense.add_argument(
        "--devices", help="encode on several devices/processes, e.g. cuda:0,cuda:1 or cpu,cpu"
    )
    ray = p.add_argument_group("Ray options (dense; pip install 'pytest-ragmetrics[ray]')")
    ray.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="encode and search on a Ray cluster: ADDRESS (host:6379, ray://host:10001, auto, "
        "local); without one, RAY_ADDRESS, else a local cluster. Same run, same cache entries",
    )
    ray.add_argument("--actors", type=int, help="Ray actors holding the model (default: all CPUs)")
    ray.add_argument(
        "--gpus-per-actor", type=float, help="GPUs per Ray actor (default 0; 0.5 shares a GPU)"
    )
    p.set_defaults(handler=_cmd_retrieve)


def _cmd_retrieve(args: argparse.Namespace, out: TextIO) -> int:
    import time

    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import write_run
    from pytest_ragmetrics.progress import stream_reporter, use_reporter
    from pytest_ragmetrics.retrievers import build_retriever

    _require_positive(args, "k")
    pairs = _dataset_pairs(args)
    targets = _run_targets(args.out, pairs)
    for target in targets.values():
        _refuse_overwriting(
            str(target),
            "--out",
            folders={f"--dataset {p.name}": str(p.path) for p in pairs},
            cache=None if args.no_cache else args.cache_dir,
        )
    if len(pairs) > 1:
        return _retrieve_several(args, pairs, targets, out)
    dataset = load_dataset(pairs[0].path, pairs[0].split)
    options = _retriever_options(args)
    started = time.perf_counter()
    executor = options.get("executor")
    try:
        with use_reporter(stream_reporter()):
            retriever = build_retriever(args.retriever, dataset.corpus, **options)
            run = retriever.search(dataset.queries, args.k)
        write_run(run, args.out, tag=args.tag or retriever.name)
        out.write(
            f"{retriever.name}: {len(run)} queries x top {args.k} of {len(dataset.corpus)} "
            f"documents -> {args.out} ({time.perf_counter() - started:.1f} s)\n"
        )
        short = _short_rankings_note(run, dataset, args.k, retriever.name)
        if short:
            out.write(f"note: {for_terminal(short)}\n")
        if executor is not None:
            # Nothing runs on Ray when the cache has the embeddings and the run.
            where = executor.describe() if executor.used else "nothing to do: cache hit"
            out.write(f"Ray: {where}\n")
    finally:
        if executor is not None:
            executor.close()
    return 0


def _short_rankings_note(run: Any, dataset: Any, k: int, name: str) -> str:
    """The note on rankings shorter than k (normal for some retrievers), or ""."""
    from pytest_ragmetrics.retrievers.base import short_rankings

    found = short_rankings(
        run, dataset.queries.query_ids, k, retriever=name, corpus_size=len(dataset.corpus)
    )
    return "" if found is None else found.note()


def _run_targets(out: str, pairs: list[Any]) -> dict[str, Path]:
    """Where each pair's run goes: --out itself for one pair, NAME-SPLIT.trec in it for more."""
    if len(pairs) == 1:
        return {pairs[0].key: Path(out)}
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {out}: with several datasets --out is a folder; this is a file")
    return {p.key: folder / f"{p.key}.trec" for p in pairs}


def _retrieve_several(
    args: argparse.Namespace, pairs: list[Any], targets: dict[str, Path], out: TextIO
) -> int:
    """Each pair searched with its own retriever (over its corpus), its run written, and the
    summary of the runs printed."""
    import time

    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import write_run
    from pytest_ragmetrics.metrics.retrieval import evaluate
    from pytest_ragmetrics.progress import stream_reporter, use_reporter
    from pytest_ragmetrics.report.datasets import Cell
    from pytest_ragmetrics.retrievers import build_retriever

    metrics = args.metrics or list(DEFAULT_METRICS)
    cells, notes = [], []
    options = _retriever_options(args)
    executor = options.get("executor")
    try:
        for pair in pairs:
            dataset = load_dataset(pair.path, pair.split, name=pair.name)
            started = time.perf_counter()
            with use_reporter(stream_reporter()):
                retriever = build_retriever(args.retriever, dataset.corpus, **options)
                run = retriever.search(dataset.queries, args.k)
            target = targets[pair.key]
            write_run(run, target, tag=args.tag or retriever.name)
            sys.stderr.write(
                f"{pair.key}: {len(run)} queries x top {args.k} of {len(dataset.corpus)} "
                f"documents -> {target} ({time.perf_counter() - started:.1f} s)\n"
            )
            evaluation = evaluate(
                dataset.qrels, run, metrics, ignore_identical_ids=args.ignore_identical_ids
            )
            cells.append(Cell(args.tag or retriever.name, pair.key, evaluation.mean))
            notes += [f"{pair.key}: {note}" for note in evaluation.notes]
            short = _short_rankings_note(run, dataset, args.k, retriever.name)
            if short:
                notes.append(f"{pair.key}: {short}")
    finally:
        if executor is not None:
            executor.close()
    return _write_summary(cells, metrics, [p.key for p in pairs], args.format, out, notes)


def _retriever_options(args: argparse.Namespace) -> dict[str, Any]:
    """build_retriever's keywords from the command line (dense options only for dense)."""
    options: dict[str, Any] = {
        name: value
        for name, value in (
            ("model", args.model),
            ("batch_size", args.batch_size),
            ("max_seq_length", args.max_seq_length),
            ("query_prefix", args.query_prefix),
            ("passage_prefix", args.passage_prefix),
            ("index", args.index),
            ("device", args.device),
            ("devices", args.devices.split(",") if args.devices else None),
        )
        if value is not None
    }
    if args.ray is not None:
        options["executor"] = _ray_executor(args)
    elif args.actors is not None or args.gpus_per_actor is not None:
        raise ConfigError("--actors and --gpus-per-actor: only with --ray")
    if args.retriever == "bm25" and options:
        flags = ", ".join(
            "--ray" if name == "executor" else "--" + name.replace("_", "-") for name in options
        )
        raise ConfigError(f"{flags}: only for --retriever dense")
    if not args.no_cache:
        from pytest_ragmetrics.cache import Cache

        options["cache"] = Cache(args.cache_dir)
    return options


def _ray_executor(args: argparse.Namespace) -> Any:
    """The RayExecutor of --ray [ADDRESS], --actors, --gpus-per-actor."""
    from pytest_ragmetrics.executors import RayExecutor

    _require_positive(args, "actors")
    if args.gpus_per_actor is not None and not args.gpus_per_actor >= 0:
        raise ConfigError(f"--gpus-per-actor must be a number >= 0, got {args.gpus_per_actor}")
    return RayExecutor(
        args.ray or None,
        actors=args.actors,
        gpus_per_actor=args.gpus_per_actor or 0,
    )


COMPARE_DESCRIPTION = """\
Two forms.

  ragmetrics compare [--qrels QRELS | --dataset DIR] RUN_A RUN_B [RUN_C ...]
    Systems on the same judgments, each against the first (the reference). An input is a
    TREC run (evaluated here against --qrels or --dataset), a 'ragmetrics evaluate --format
    json' output, or a JSON report or baseline file (its retrieval evaluations, or those
    named with --evaluation). Prints every run's metrics and, per run against the reference:
    Δ, its 95% bootstrap CI, the paired randomization-test p, wins/ties/losses over the
    queries, and the queries that changed most. A TREC run does not record its k: "k unknown".

  ragmetrics compare BASELINE_OR_REPORT REPORT
    The plugin's verdicts outside pytest: each evaluation of a JSON report (--ragmetrics-json)
    against the same evaluation in a baseline file or an earlier report.

The first form is used when --qrels, --dataset or --evaluation is given, when there are not
exactly two inputs, or when an input is a TREC run or an evaluate output; else the second.

What the baseline holds and the report lacks (evaluations, metrics, queries) is named, with
how many, as not compared; with --strict it fails the comparison.

Exit code 0 when nothing regressed; 1 when an evaluation (or a run, against the reference)
dropped by more than --tolerance (and significantly, with --alpha) or is not comparable, or
with --strict when an evaluation, metric or query of the baseline was not compared; 2
when a file or option cannot be used (one line naming it; a newer schema version included);
3 on an internal error.
"""
# The scoring rules: (attribute, flag). They apply to the TREC runs, which are scored here.
_SCORING_OPTIONS = (
    ("relevance_level", "--relevance-level"),
    ("gain", "--gain"),
    ("query_set", "--query-set"),
    ("ignore_identical_ids", "--ignore-identical-ids"),
)
# The options of the runs form only.
_RUNS_OPTIONS = (
    ("split", "--split"),
    ("metrics", "-m"),
    ("judged_docs_only", "-J"),
    ("most_changed", "--most-changed"),
    *_SCORING_OPTIONS,
)


def _add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # Long by nature: one add_argument per flag; the command's whole interface in one place.
    p = sub.add_parser(
        "compare",
        help="compare runs on the same judgments (with significance), or a report with a baseline",
        description=COMPARE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="runs: TREC run files, evaluate outputs, JSON reports or baselines (the first is "
        "the reference); or BASELINE_OR_REPORT REPORT",
    )
    runs = p.add_argument_group("runs (the first form)")
    judgments = runs.add_mutually_exclusive_group()
    judgments.add_argument("--qrels", help="TREC qrels or BEIR qrels TSV (.gz ok)")
    judgments.add_argument(
        "--dataset",
        metavar="DIR",
        help="take the qrels of a dataset folder instead (as for 'ragmetrics evaluate')",
    )
    runs.add_argument("--split", help="with --dataset: the qrels split (default test)")
    runs.add_argument(
        "-m",
        "--metric",
        action="append",
        dest="metrics",
        metavar="NAME",
        help="metric (repeatable); default: " + " ".join(DEFAULT_METRICS) + " for runs alone, "
        "else the metrics every evaluation given has",
    )
    for name in ("ragmetrics_relevance_level", "ragmetrics_gain", "ragmetrics_query_set"):
        add_cli_argument(runs, name, help=OPTION[name].help + "; for TREC runs")
    runs.add_argument(
        "--ignore-identical-ids",
        action="store_true",
        default=None,
        help="drop retrieved documents whose id is the query's id (as 'ragmetrics evaluate')",
    )
    runs.add_argument(
        "-J",
        "--judged-docs-only",
        action="store_true",
        default=None,
        help="judged-only forms of the metrics (trec_eval -J), as 'ragmetrics evaluate'",
    )
    runs.add_argument(
        "--evaluation",
        action="append",
        metavar="NAME",
        help="from JSON reports and baselines, only the evaluations with this name, test id or "
        "'test [name]' label (repeatable; default: every retrieval evaluation)",
    )
    runs.add_argument(
        "--most-changed",
        type=int,
        metavar="N",
        help="queries listed per run, by the first metric (default 5; JSON: every metric)",
    )
    add_cli_argument(
        p,
        "ragmetrics_tolerance",
        type=None,  # repeatable: all values are parsed together by the same parser
        action="append",
        help="allowed drop: 0.01 (absolute, default), 2%% (relative), or per metric like "
        "ndcg_at_10=0.005 (repeatable)",
    )
    add_cli_argument(p, "ragmetrics_alpha")
    add_cli_argument(p, "ragmetrics_unjudged_drops", default="fail")
    p.add_argument(
        "--format",
        choices=(*FORMATS, "html"),
        default="table",
        help="html: one self-contained page (see 'ragmetrics report'), on stdout or --out",
    )
    p.add_argument("--out", metavar="OUT.html", help="with --format html: write the page here")
    p.add_argument(
        "--worst",
        type=int,
        metavar="N",
        help="with --format html: queries shown in detail per metric (default 10)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="two-argument form: fail (exit code 1) when an evaluation, metric or query of the "
        "baseline is missing from the report (without it they are named, not failed)",
    )
    p.set_defaults(handler=_cmd_compare)


def _cmd_compare(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.comparison import read_input

    tolerance = list(args.tolerance or ["0.01"])
    option = OPTION["ragmetrics_tolerance"]
    tolerances = option.value(" ".join(tolerance), option.cli)
    if args.format != "html":
        for flag, value in (("--out", args.out), ("--worst", args.worst)):
            if value is not None:
                raise ConfigError(f"{flag}: only with --format html")
    inputs = [read_input(path) for path in args.inputs]
    if (
        args.qrels is not None
        or args.dataset is not None
        or args.evaluation
        or len(inputs) != 2
        or any(item.kind in ("run", "evaluation") for item in inputs)
    ):
        if args.strict:
            raise ConfigError(
                "--strict: only in the two-argument form (BASELINE_OR_REPORT REPORT); comparing "
                "runs, the queries only one run holds are named in each run's verdict"
            )
        return _compare_runs(args, out, inputs, tolerances, tolerance)
    given = [flag for name, flag in _RUNS_OPTIONS if getattr(args, name) is not None]
    if given:
        raise ConfigError(
            f"{', '.join(given)}: only when comparing runs (give --qrels or --dataset); "
            f"{args.inputs[0]} and {args.inputs[1]} are compared evaluation by evaluation"
        )
    return _compare_pair(args, out, inputs, tolerances, tolerance)


def _compare_pair(
    args: argparse.Namespace,
    out: TextIO,
    inputs: Sequence[Input],
    tolerances: Tolerances,
    tolerance: list[str],
) -> int:
    """``compare BASELINE_OR_REPORT REPORT``: the plugin's verdicts, evaluation by evaluation,
    and what the baseline holds that the report lacks (failing with --strict)."""
    from pytest_ragmetrics.baseline.pair import compare_pair

    if args.format == "html":
        _require_positive(args, "worst")
        if args.out is not None:
            _refuse_overwriting(
                args.out, "--out", files={"before": args.inputs[0], "after": args.inputs[1]}
            )
    before, after = (_evaluations_of(item) for item in inputs)
    # Only a baseline can be blessed: the advice after a failure says what fits.
    against: Against = "baseline" if inputs[0].kind == "baseline" else "report"
    pair = compare_pair(
        before,
        after,
        tolerances,
        paths=(args.inputs[0], args.inputs[1]),
        alpha=args.alpha,
        unjudged_drops=args.unjudged_drops,
        strict=args.strict,
    )
    if args.format == "html":
        from pytest_ragmetrics.report.html import Compared, comparison_page

        page = comparison_page(
            before,
            after,
            {r.key: v for r, v in pair.results},
            header=_report_header(Path(args.inputs[1])),
            compared=Compared(
                before=args.inputs[0],
                after=args.inputs[1],
                tolerance=tuple(tolerance),
                alpha=args.alpha,
                strict=args.strict,
                not_compared=tuple(pair.not_compared()["lines"]),
            ),
        )
        _write_page(args, out, page, args.inputs[1], pair.summary())
    elif args.format == "json":
        out.write(json.dumps(pair.to_dict(), indent=2, sort_keys=True) + "\n")
    else:
        from pytest_ragmetrics.report.pair import pair_table

        out.write(pair_table(pair, markdown=args.format == "markdown", against=against))
    return EXIT_FAILED if pair.exit_failed else EXIT_OK


def _evaluations_of(item: Input) -> dict[tuple[str, str], dict[str, Any]]:
    """The evaluations of a baseline or report given to the two-argument form."""
    from pathlib import Path

    from pytest_ragmetrics.baseline.compare import evaluations_in, load_evaluations

    if item.kind == "text":  # not JSON: its reader names the problem
        return load_evaluations(Path(item.path))
    return evaluations_in(item.data, Path(item.path))


def _compare_runs(
    args: argparse.Namespace,
    out: TextIO,
    inputs: Sequence[Input],
    tolerances: Tolerances,
    tolerance: list[str],
) -> int:
    """``compare --qrels Q RUN_A RUN_B ...``: every run against the first."""
    from pytest_ragmetrics.comparison import MOST_CHANGED, compare_systems, load_systems
    from pytest_ragmetrics.metrics.semantics import MetricSemantics

    judgments = _runs_judgments(args, inputs)
    semantics = MetricSemantics(
        args.relevance_level if args.relevance_level is not None else 1,
        args.gain or "linear",
        args.query_set or "qrels",
        bool(args.ignore_identical_ids),
    )
    systems = load_systems(
        inputs,
        judgments=judgments,
        metrics=args.metrics,
        judged_only=bool(args.judged_docs_only),
        semantics=semantics,
        select=args.evaluation or (),
    )
    comparison = compare_systems(
        systems,
        tolerances,
        tolerance=tolerance,
        alpha=args.alpha,
        judgments=judgments,
        most_changed=args.most_changed or MOST_CHANGED,
        unjudged_drops=args.unjudged_drops,
    )
    failed = len(comparison.failed)
    if args.format == "json":
        out.write(json.dumps(comparison.to_dict(), indent=2) + "\n")
    elif args.format == "markdown":
        from pytest_ragmetrics.report.markdown import comparison_markdown

        out.write(comparison_markdown(comparison))
    elif args.format == "html":
        from pytest_ragmetrics.report.html import systems_page

        _write_page(
            args,
            out,
            systems_page(comparison),
            args.inputs[0],
            f"{len(systems)} runs, {failed} failed",
        )
    else:
        _runs_table(comparison, out)
    return 1 if failed else 0


def _runs_judgments(args: argparse.Namespace, inputs: Sequence[Input]) -> Judgments | None:
    """Check the options of a comparison of runs against its inputs; the judgments of
    ``--qrels`` or ``--dataset``, if given."""
    from pytest_ragmetrics.comparison import load_judgments

    _require_positive(args, "most_changed", "worst")
    if len(inputs) < 2:
        raise ConfigError(
            f"{args.inputs[0]}: compare needs at least two inputs (runs: the reference first)"
        )
    if args.format == "html" and args.out is not None:
        _refuse_overwriting(
            args.out, "--out", files={f"input {item.path}": item.path for item in inputs}
        )
    judgments = None
    if args.qrels is not None or args.dataset is not None:
        judgments = load_judgments(args.qrels, args.dataset, args.split)
    elif args.split is not None:
        raise ConfigError("--split: only with --dataset")
    if args.evaluation and not any(item.kind in ("report", "baseline") for item in inputs):
        raise ConfigError("--evaluation: only picks evaluations of JSON reports and baselines")
    if not any(item.kind in ("run", "text") for item in inputs):
        given = [flag for name, flag in _SCORING_OPTIONS if getattr(args, name) is not None]
        if given:
            raise ConfigError(
                f"{', '.join(given)}: only for TREC runs, which are evaluated here; the "
                "evaluations given were scored when they were written"
            )
    return judgments


def _runs_table(comparison: SystemsComparison, out: TextIO) -> None:
    """The table form of a comparison of runs: every run's means, then each against the
    reference, then what failed and why."""
    # Long: one table's header, rows and legend; split, its columns would be spread apart.
    from pytest_ragmetrics.comparison import KIND_WORDS, k_text, semantics_text

    reference = comparison.reference
    metrics = list(comparison.metrics)
    out.write(f"reference: {for_terminal(reference.label)} ({KIND_WORDS[reference.kind]})\n")
    if comparison.judgments is not None:
        out.write(f"judgments: {comparison.judgments.description}\n")
    semantics = reference.record.evaluation.semantics
    if semantics is not None:
        out.write(f"semantics: {semantics_text(semantics.as_dict())}\n")
    rows = []
    for system in comparison.systems:
        mean = system.record.evaluation.mean
        versus = next((v for v in comparison.versus if v.system is system), None)
        verdicts = {m.metric: m for m in versus.verdict.metrics} if versus else {}
        cells = []
        for metric in metrics:
            cell = _number(mean.get(metric))
            m = verdicts.get(metric)
            if m is not None:
                cell += {"regressed": " ▼", "lost": " ▼", "improved": " ▲"}.get(m.status, "  ")
                c = m.comparison
                significant = c is not None and c.n and c.p_value < comparison.significance
                cell += "*" if significant else " "
            cells.append(cell)
        rows.append(
            [
                system.label,
                KIND_WORDS[system.kind],
                k_text(system.record.k),
                *cells,
                versus.verdict.status if versus else "reference",
            ]
        )
    out.write(
        "\n"
        + table(
            rows,
            headers=["run", "input", "k", *metrics, "status"],
            tablefmt="simple",
            disable_numparse=True,
            colalign=("left", "left", "left", *("right",) * len(metrics), "left"),
        )
        + "\n"
    )
    out.write(
        f"\n▲ ▼ beyond the tolerance ({' '.join(comparison.tolerance)}); * p < "
        f"{comparison.significance:g} against the reference (paired randomization test)\n"
    )
    for versus in comparison.versus:
        out.write("\n" + _versus_text(comparison, versus))
    notes = [f"{s.label}: {n}" for s in comparison.systems for n in s.record.evaluation.notes]
    notes += [n for v in comparison.versus for n in v.notes]
    if notes:
        out.write("\n" + "".join(f"note: {for_terminal(n)}\n" for n in notes))
    for versus in comparison.failed:
        out.write("\n" + comparison.explanation(versus) + "\n")
    counts: dict[str, int] = {}
    for versus in comparison.versus:
        counts[versus.verdict.status] = counts.get(versus.verdict.status, 0) + 1
    tally = ", ".join(f"{n} {status}" for status, n in counts.items())
    out.write(
        f"\n{len(comparison.systems)} runs, each against {for_terminal(reference.label)}: {tally}; "
        f"{len(comparison.failed)} failed\n"
    )


def _versus_text(comparison: SystemsComparison, versus: Versus) -> str:
    """One run against the reference: per metric Δ, CI, p and wins/ties/losses; the queries
    that changed most by the first metric."""
    # Long: one table's header, rows and legend; split, its columns would be spread apart.
    from pytest_ragmetrics.comparison import rank_move

    verdict = versus.verdict
    head = for_terminal(f"{versus.system.label} against {comparison.reference.label}")
    head += f": {verdict.status}"
    if not verdict.metrics:
        return head + "\n"
    paired = max((m.comparison.n for m in verdict.metrics if m.comparison), default=0)
    rows = []
    for m in verdict.metrics:
        c = m.comparison
        stats = ["", "", "", "", ""]
        if c is not None and c.n:
            stats = [
                f"[{delta_text(c.ci_low)}, {delta_text(c.ci_high)}]",
                f"{c.p_value:.4f}",
                str(c.better),
                str(c.same),
                str(c.worse),
            ]
        rows.append(
            [
                m.metric,
                f"{m.baseline:.4f}",
                f"{m.current:.4f}",
                delta_text(m.delta),
                *stats,
                m.status,
            ]
        )
    text = (
        f"{head} ({paired} queries paired)\n"
        + table(
            rows,
            headers=[
                "metric",
                "reference",
                "run",
                "Δ",
                "95% CI of Δ",
                "p",
                "wins",
                "ties",
                "losses",
                "status",
            ],
            tablefmt="simple",
            disable_numparse=True,
            colalign=("left", *("right",) * 8, "left"),
        )
        + "\n"
    )
    first = comparison.metrics[0]
    changes = versus.most_changed.get(first, ())
    if changes:
        text += (
            f"most changed by {for_terminal(first)}:\n"
            + table(
                [
                    [
                        c.query,
                        f"{c.reference:.4f}",
                        f"{c.value:.4f}",
                        delta_text(c.delta),
                        rank_move(c.rank_reference, c.rank_value),
                    ]
                    for c in changes
                ],
                headers=["query", "reference", "run", "Δ", "first relevant rank"],
                tablefmt="simple",
                disable_numparse=True,
                colalign=("left", "right", "right", "right", "left"),
            )
            + "\n"
        )
    return text


def _write_page(
    args: argparse.Namespace, out: TextIO, page: ReportPage, path: str, summary: str
) -> None:
    """``--format html``: the page on stdout, or in --out with a one-line summary."""
    from pytest_ragmetrics.report.html import html_report

    text = html_report(page, worst=args.worst or 10)
    if args.out is None:
        write_document(out, text)
    else:
        from pytest_ragmetrics.fileio import atomic_write_text

        atomic_write_text(args.out, text)
        out.write(f"{summary}; wrote {args.out}\n")


def _report_header(path: Any) -> dict[str, Any]:
    """plugin_version, created and settings of a JSON report ({} for a baseline file)."""
    from pytest_ragmetrics.errors import BaselineError
    from pytest_ragmetrics.fileio import read_json_file

    data = read_json_file(path, error=BaselineError)
    if not isinstance(data, dict) or "evaluations" not in data:
        return {}
    return {k: data[k] for k in ("plugin_version", "created", "settings") if k in data}


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report",
        help="draw a JSON report as one self-contained HTML page",
        description="Build the HTML report of a JSON report (--ragmetrics-json): per layer a "
        "summary of evaluations x metrics with baseline, delta, CI and status; per metric a "
        "per-query delta chart and a histogram; the most regressed queries in detail. One file "
        "with no external resource: open it from disk or upload it as a CI artifact.",
    )
    p.add_argument("report", metavar="REPORT.json", help="JSON report (or a baseline file)")
    p.add_argument("--html", required=True, metavar="OUT.html", help="the page to write")
    p.add_argument(
        "--worst",
        type=int,
        default=10,
        metavar="N",
        help="queries shown in detail per metric (default 10)",
    )
    p.set_defaults(handler=_cmd_report)


def _cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.fileio import atomic_write_text
    from pytest_ragmetrics.report.html import html_report, read_report_page

    _require_positive(args, "worst")
    _refuse_overwriting(args.html, "--html", files={"REPORT.json": args.report})
    page = read_report_page(Path(args.report))
    text = html_report(page, worst=args.worst)
    atomic_write_text(args.html, text)
    out.write(
        f"{len(page.evaluations)} evaluations; wrote {args.html} "
        f"({len(text.encode('utf-8')):,} bytes)\n"
    )
    return 0


# The questions `calibrate` measures a judge on.
QUESTIONS = ("support", "agreement", "relevance")


def _add_calibrate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure a judge's agreement with human labels (accuracy, kappa) on one of its "
        "questions: claim support, answer-reference agreement, passage relevance",
        description="Judge human-labelled items and report agreement with the labels: accuracy, "
        "Cohen's kappa, confusion matrix. A threshold judge (embedding) gets its threshold "
        "tuned on a seeded half and is scored on the other half. --save records the result, "
        "keyed by the identity of the question as the judge asks it, for the "
        "ragmetrics_min_judge_kappa gate. --question support (default): claim support against "
        "--labels (JSONL: claim, context_sentences, label SUPPORT/CONTRADICT/NOINFO; supported "
        "= SUPPORT). --question agreement: answer_correctness's question \"does the answer "
        'agree with the reference?" against --labels (JSONL: answer, reference, label '
        "AGREE/DISAGREE; or SciFact's claim_support, where the claim is the answer, its "
        "evidence sentences the reference, SUPPORT agrees, CONTRADICT disagrees and NOINFO "
        "pairs are left out). --question relevance: a relevance judge (judge-pool's, and "
        "context_relevance's) on a dataset's qrels: relevant vs judged non-relevant, or, for "
        "qrels that judge only relevant documents, vs negatives sampled from the corpus; with "
        "--run, the top --top documents a retriever handed over instead (hard negatives; the "
        "output says how the negatives were chosen).",
    )
    p.add_argument("--judge", required=True, choices=JUDGE_KINDS)
    p.add_argument(
        "--question",
        choices=QUESTIONS,
        default="support",
        help="support: claim support against --labels (default); agreement: answer-reference "
        "agreement against --labels (embedding and http judges); relevance: passage relevance "
        "against --dataset's qrels",
    )
    p.add_argument(
        "--labels", metavar="FILE.jsonl", help="support, agreement: human labels (.gz ok)"
    )
    p.add_argument("--dataset", metavar="DIR", help="relevance: dataset folder (qrels and texts)")
    p.add_argument("--split", help="relevance: the split (default test)")
    p.add_argument(
        "--negatives",
        type=int,
        metavar="N",
        help="relevance, for qrels without judged non-relevant pairs: negatives sampled per "
        "positive (default 1; not with --run)",
    )
    p.add_argument(
        "--run",
        metavar="RUN",
        help="relevance: a TREC run; label each query's top --top documents by the qrels "
        "(relevant, else non-relevant: judged so, or unjudged and presumed so, which makes "
        "kappa a lower bound) instead of sampling negatives",
    )
    p.add_argument(
        "--top", type=int, metavar="N", help="relevance with --run: documents per query (default 3)"
    )
    p.add_argument(
        "--max-chars",
        type=int,
        metavar="C",
        help="relevance: cut each passage (title + ' ' + text) after C characters, as a "
        "pipeline cuts its contexts (the example pipeline: 600); default: whole passages",
    )
    p.add_argument("--format", choices=FORMATS, default="table")
    p.add_argument(
        "--save",
        metavar="PATH",
        help="record the result in this calibration file (e.g. .ragmetrics/calibration.json)",
    )
    p.add_argument("--limit", type=int, metavar="N", help="use only the first N labelled items")
    p.add_argument("--seed", type=int, default=0, help="seed of the tuning split (default 0)")
    _add_cache_options(p, "verdict cache folder")
    _add_judge_options(
        p,
        threshold="score this fixed threshold on all items instead of tuning one (agreement: "
        "the agreement threshold; relevance: the relevance threshold)",
        verdicts="recorded assessments, query_id = item id (relevance: query_id, doc_id, "
        "relevant per line)",
    )
    p.set_defaults(handler=_cmd_calibrate)


def _add_judge_options(p: argparse.ArgumentParser, *, threshold: str, verdicts: str) -> None:
    """The options of each judge (_JUDGE_OPTIONS), in one group per judge."""
    emb = p.add_argument_group("embedding options")
    emb.add_argument("--threshold", type=float, help=threshold)
    emb.add_argument("--model", help="embedding: local model folder; http: model name")
    web = p.add_argument_group("http options")
    web.add_argument(
        "--url", help="base URL of an OpenAI-compatible server (or RAGMETRICS_JUDGE_URL)"
    )
    web.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (default RAGMETRICS_JUDGE_API_KEY)",
    )
    web.add_argument(
        "--timeout", type=float, help="seconds a question may take, retries included (default 60)"
    )
    web.add_argument(
        "--concurrency",
        type=int,
        metavar="N",
        help="questions in flight at once (default 1; 4 to 16 suits hosted APIs)",
    )
    add_cli_argument(
        web,
        "ragmetrics_judge_prompts",
        help="folder of the judge's prompts, as ragmetrics_judge_prompts reads it (system.txt, "
        "support.txt, relevance.txt, agreement.txt, context.txt, context_system.txt; a missing "
        "file keeps the built-in prompt); a relevance judge (--question relevance, judge-pool) "
        "asks the context question: context.txt and context_system.txt",
    )
    add_cli_argument(web, "ragmetrics_judge_temperature", help="sampling temperature (default 0)")
    add_cli_argument(
        web, "ragmetrics_judge_seed", help="the seed sent with the questions (default 0)"
    )
    rec = p.add_argument_group("recorded options")
    rec.add_argument("--verdicts", metavar="FILE.jsonl", help=verdicts)


# The command-line options of each judge (--model names a folder for one, a model for the other).
_JUDGE_OPTIONS: dict[str, tuple[str, ...]] = {
    "embedding": ("threshold", "model"),
    "http": (
        "model", "url", "api_key_env", "timeout", "concurrency", "prompts", "temperature",
        "judge_seed",
    ),
    "recorded": ("verdicts",),
}  # fmt: skip


def _judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """The judge options given, as build_judge (and build_relevance_judge) keywords: the
    --prompts folder read and checked (a ConfigError names the file), --judge-seed as seed;
    a ConfigError for another judge's option."""
    every = dict.fromkeys(name for names in _JUDGE_OPTIONS.values() for name in names)
    given = {name: getattr(args, name) for name in every if getattr(args, name) is not None}
    wrong = sorted(set(given) - set(_JUDGE_OPTIONS[args.judge]))
    if wrong:
        flags = ", ".join("--" + name.replace("_", "-") for name in wrong)
        raise ConfigError(f"{flags}: not an option of --judge {args.judge}")
    if "prompts" in given:
        from pytest_ragmetrics.prompts import JUDGE_ROLES, read_prompts

        folder = given["prompts"]
        given["prompts"] = read_prompts(folder, JUDGE_ROLES, label=f"--prompts {folder}")
    if "judge_seed" in given:
        given["seed"] = given.pop("judge_seed")
    return given


# The options of each question of `calibrate` (the others are a usage error for it).
_QUESTION_OPTIONS: dict[str, tuple[str, ...]] = {
    "support": ("labels",),
    "agreement": ("labels",),
    "relevance": ("dataset", "split", "negatives", "run", "top", "max_chars"),
}


def _check_question_options(args: argparse.Namespace) -> None:
    """A ConfigError for a missing required option or an option of another question."""
    if args.question == "relevance" and args.dataset is None:
        raise ConfigError("--dataset DIR: required for --question relevance")
    if args.question != "relevance" and args.labels is None:
        raise ConfigError(f"--labels FILE.jsonl: required for --question {args.question}")
    every = dict.fromkeys(name for names in _QUESTION_OPTIONS.values() for name in names)
    for name in every:
        if getattr(args, name) is not None and name not in _QUESTION_OPTIONS[args.question]:
            owners = " or ".join(q for q, names in _QUESTION_OPTIONS.items() if name in names)
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag}: only with --question {owners}")
    if args.run is None and args.top is not None:
        raise ConfigError("--top: only with --run (the documents a retriever handed over)")
    if args.run is not None and args.negatives is not None:
        raise ConfigError(
            "--negatives: not with --run (the negatives are the retrieved documents the qrels "
            "do not judge relevant)"
        )
    if args.question == "agreement" and args.judge not in ("embedding", "http"):
        raise ConfigError(
            f"--judge {args.judge}: the agreement question is asked by the embedding and http "
            "judges only"
        )


def _check_save(path: str) -> None:
    """Before any judge call: a folder that refuses ``--save`` would lose the calibration."""
    from pytest_ragmetrics.fileio import check_writable

    check_writable(path, what="calibration file", hint=_OUT_HINT.format("--save"))


def _cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.judges.calibration import (
        calibrate,
        calibrate_agreement,
        read_agreement_labels,
        save_calibration,
    )
    from pytest_ragmetrics.judges.factory import build_judge
    from pytest_ragmetrics.progress import stream_reporter, use_reporter

    options = _judge_options(args)
    _require_positive(args, "concurrency", "limit", "negatives", "top", "max_chars")
    _check_question_options(args)
    if args.question == "relevance":
        return _calibrate_relevance(args, options, out)
    if args.save:
        _refuse_overwriting(
            args.save,
            "--save",
            files={"--labels": args.labels, "--verdicts": args.verdicts},
            folders={"--prompts": args.prompts},
            cache=None if args.no_cache else args.cache_dir,
        )
        _check_save(args.save)
    if args.judge == "http":
        # A weak model's off-script reply is counted as unjudged, not fatal, while calibrating.
        options["unparseable"] = "unjudged"
    if args.question == "agreement" and "threshold" in options:
        # --threshold is the threshold of the question calibrated: here the agreement one.
        options["agreement_threshold"] = options.pop("threshold")
    judge = build_judge(
        args.judge, cache=None if args.no_cache else Cache(args.cache_dir), **options
    )
    tune = args.threshold is None
    note = ""
    with use_reporter(stream_reporter()):
        if args.question == "agreement":
            labels = read_agreement_labels(args.labels)
            result = calibrate_agreement(judge, labels, seed=args.seed, limit=args.limit, tune=tune)
            if labels.left_out:
                note = f"left out: {labels.left_out} items ({labels.left_out_reason})\n"
        else:
            result = calibrate(judge, args.labels, seed=args.seed, limit=args.limit, tune=tune)
    if args.save:
        save_calibration(args.save, result, hint=_OUT_HINT.format("--save"))
    if args.format == "json":
        out.write(json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
        return 0
    tablefmt = "github" if args.format == "markdown" else "simple"
    if args.question == "agreement":
        out.write(_calibration_tables(result, args.labels, tablefmt, "agrees", "disagrees"))
    else:
        out.write(_calibration_tables(result, args.labels, tablefmt))
    out.write(note)
    if args.save:
        out.write(f"\nsaved to {args.save} (judge {result.judge_key[:12]})\n")
    return 0


def _calibrate_relevance(args: argparse.Namespace, options: dict[str, Any], out: TextIO) -> int:
    """``calibrate --question relevance``: a relevance judge against a dataset's qrels."""
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.judges.calibration import (
        calibrate_relevance,
        relevance_labels,
        retrieved_relevance_labels,
        save_calibration,
    )
    from pytest_ragmetrics.judges.relevance import build_relevance_judge
    from pytest_ragmetrics.progress import stream_reporter, use_reporter

    if args.save:
        _refuse_overwriting(
            args.save,
            "--save",
            files={"--verdicts": args.verdicts, "--run": args.run},
            folders={"--dataset": args.dataset, "--prompts": args.prompts},
            cache=None if args.no_cache else args.cache_dir,
        )
        _check_save(args.save)
    if args.judge == "http":
        options["unparseable"] = "unjudged"
    dataset = load_dataset(args.dataset, args.split or "test")
    if args.run is not None:
        from pytest_ragmetrics.data.trec import read_run

        pairs, negatives = retrieved_relevance_labels(
            read_run(args.run),
            dataset.qrels,
            dataset.queries,
            dataset.corpus,
            top=3 if args.top is None else args.top,
            max_chars=args.max_chars,
            run_name=f"run {Path(args.run).name}",
        )
    else:
        pairs, negatives = relevance_labels(
            dataset.qrels,
            dataset.queries,
            dataset.corpus,
            negatives=args.negatives,
            seed=args.seed,
        )
        if args.max_chars is not None:
            import dataclasses

            pairs = [dataclasses.replace(p, passage=p.passage[: args.max_chars]) for p in pairs]
            negatives += f"; passages cut after {args.max_chars} characters"
    judge = build_relevance_judge(
        args.judge, cache=None if args.no_cache else Cache(args.cache_dir), **options
    )
    with use_reporter(stream_reporter()):
        result = calibrate_relevance(
            judge,
            pairs,
            negatives=negatives,
            seed=args.seed,
            limit=args.limit,
            tune=args.threshold is None,
            source=f"{dataset.name} {dataset.split}"
            + ("" if args.run is None else f", run {Path(args.run).name}"),
        )
    if args.save:
        save_calibration(args.save, result, hint=_OUT_HINT.format("--save"))
    if args.format == "json":
        out.write(json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
        return 0
    tablefmt = "github" if args.format == "markdown" else "simple"
    source = f"{args.dataset} qrels"
    if args.run is not None:
        source += f", top {3 if args.top is None else args.top} of {args.run}"
    out.write(_calibration_tables(result, source, tablefmt, "relevant"))
    out.write(f"{negatives}\n")
    if args.save:
        out.write(f"\nsaved to {args.save} (judge {result.judge_key[:12]})\n")
    return 0


def _calibration_tables(
    result: CalibrationResult,
    labels: str,
    tablefmt: str,
    positive: str = "supported",
    negative: str | None = None,
) -> str:
    """The figures of a calibration, then its confusion matrix (rows and columns named by
    what a positive is, and a negative: "not <positive>" unless given)."""
    negative = negative or f"not {positive}"
    identity = result.judge
    c = result.confusion
    if result.tuning is not None:
        how = (
            f"{result.threshold} (best kappa on {result.tuning.n} tuning items, seed "
            f"{result.seed}; figures below are on the other {result.n})"
        )
    else:
        # A judge scored as it is: its own threshold, if it has one (in its identity).
        fixed = (identity.get("parameters") or {}).get("threshold")
        how = "-" if fixed is None else f"{fixed} (fixed)"
    rows = [
        ["judge", f"{identity.get('name')} ({identity.get('model')})"],
        ["labels", f"{labels} ({result.labels.get('n')} items)"],
        ["threshold", how],
        ["n", str(result.n)],
        ["unjudged", str(result.unjudged)],
        ["accuracy", _number(result.accuracy)],
        ["kappa", _number(result.kappa)],
        ["seconds", f"{result.seconds:.1f}"],
    ]
    matrix = [
        [f"human: {positive}", str(c["tp"]), str(c["fn"])],
        [f"human: {negative}", str(c["fp"]), str(c["tn"])],
    ]
    headers = ["", f"judge: {positive}", f"judge: {negative}"]
    return (
        table(rows, tablefmt=tablefmt, disable_numparse=True)
        + "\n\n"
        + table(matrix, headers=headers, tablefmt=tablefmt, disable_numparse=True)
        + "\n"
    )


def _add_pool(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "pool",
        help="list the unjudged (query, document) pairs in the runs' top depth (JSONL to judge)",
        description="Pool the runs: every (query, document) pair in the union of the runs' "
        "top --depth that the qrels do not judge (grade -1 counts as unjudged), for the judged "
        "queries, with the query and document text, as JSONL a person can review and fill in "
        "(relevant: true/false) or 'ragmetrics judge-pool' can label.",
    )
    p.add_argument("--qrels", help="TREC qrels or BEIR qrels TSV (.gz ok)")
    p.add_argument(
        "--dataset",
        metavar="DIR",
        help="dataset folder: its qrels (unless --qrels is given) and the query and document "
        "texts the rows carry (without it rows have ids only)",
    )
    p.add_argument("--split", help="with --dataset: the split (default test)")
    p.add_argument(
        "--run", required=True, action="append", metavar="RUN", help="TREC run (repeatable)"
    )
    p.add_argument("--depth", type=int, default=10, help="top documents per run (default 10)")
    p.add_argument("--out", required=True, metavar="POOL.jsonl", help="pool file to write")
    p.add_argument("--format", choices=FORMATS, default="table", help="of the summary")
    p.set_defaults(handler=_cmd_pool)


def _run_labels(paths: Sequence[str]) -> list[str]:
    """A name per run: its tag, or its file name when tags are missing or repeated."""
    from pytest_ragmetrics.data.trec import run_tag

    tags = [run_tag(path) or Path(path).name for path in paths]
    if len(set(tags)) < len(tags):
        tags = [str(path) for path in paths]
    return tags


def _cmd_pool(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import read_qrels, read_run
    from pytest_ragmetrics.pooling import build_pool, write_pool

    _require_positive(args, "depth")
    if args.qrels is None and args.dataset is None:
        raise ConfigError("give --qrels FILE or --dataset DIR (or both: texts from the dataset)")
    if args.split is not None and args.dataset is None:
        raise ConfigError("--split: only with --dataset")
    _refuse_overwriting(
        args.out,
        "--out",
        files={"--qrels": args.qrels, **{f"--run {r}": r for r in args.run}},
        folders={"--dataset": args.dataset},
    )
    dataset = load_dataset(args.dataset, args.split or "test") if args.dataset else None
    qrels = read_qrels(args.qrels) if args.qrels else dataset.qrels  # type: ignore[union-attr]
    labels = _run_labels(args.run)
    runs = [(label, read_run(path)) for label, path in zip(labels, args.run, strict=True)]
    entries = build_pool(
        qrels,
        runs,
        args.depth,
        queries=None if dataset is None else dataset.queries,
        corpus=None if dataset is None else dataset.corpus,
    )
    write_pool(args.out, entries, hint=_OUT_HINT.format("--out"))
    per_run = {label: sum(1 for e in entries if label in e.runs) for label in labels}
    summary = {
        "pool": args.out,
        "pairs": len(entries),
        "queries": len({e.query_id for e in entries}),
        "depth": args.depth,
        "unjudged_per_run": per_run,
        "texts": dataset is not None,
    }
    if args.format == "json":
        out.write(json.dumps(summary, indent=2) + "\n")
        return 0
    rows = [[label, str(n)] for label, n in per_run.items()]
    tablefmt = "github" if args.format == "markdown" else "simple"
    out.write(
        table(
            rows,
            headers=["run", f"unjudged pairs in its top {args.depth}"],
            tablefmt=tablefmt,
            disable_numparse=True,
        )
        + "\n"
    )
    out.write(
        f"\nwrote {args.out}: {len(entries)} unjudged pairs over {summary['queries']} queries\n"
    )
    if dataset is None:
        out.write("note: without --dataset the rows carry no texts; a judge needs them\n")
    return 0


def _add_judge_pool(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "judge-pool",
        help="label a pool file with a relevance judge and write supplementary qrels",
        description="Ask a relevance judge about every row of a pool file that has no verdict "
        "yet (rows a person filled in are kept), write the pool back with each row's "
        "relevant, judge identity, raw verdict and token counts, and write the labels as TREC "
        "qrels whose first line names the judge (ragmetrics_supplementary_qrels reads them; "
        "human judgments always win).",
    )
    p.add_argument("--pool", required=True, metavar="POOL.jsonl", help="from 'ragmetrics pool'")
    p.add_argument("--judge", required=True, choices=JUDGE_KINDS)
    p.add_argument(
        "--qrels-out", required=True, metavar="FILE", help="supplementary qrels to write"
    )
    p.add_argument(
        "--out",
        metavar="POOL.jsonl",
        help="where the labelled pool goes (default: the --pool file, updated in place)",
    )
    p.add_argument(
        "--rejudge", action="store_true", help="also ask about rows that already have a verdict"
    )
    p.add_argument("--format", choices=FORMATS, default="table", help="of the summary")
    _add_cache_options(p, "verdict cache folder")
    _add_judge_options(
        p,
        threshold="cosine at or above which a passage is relevant (default 0.5; calibrate "
        "--question relevance tunes one)",
        verdicts="recorded relevance verdicts: query_id, doc_id, relevant per line (a "
        "filled-in pool file is one)",
    )
    p.set_defaults(handler=_cmd_judge_pool)


def _cmd_judge_pool(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.fileio import check_writable
    from pytest_ragmetrics.judges.relevance import build_relevance_judge
    from pytest_ragmetrics.pooling import (
        judge_pool,
        read_pool,
        write_pool,
        write_supplementary_qrels,
    )
    from pytest_ragmetrics.progress import progress, stream_reporter, use_reporter

    options = _judge_options(args)
    _require_positive(args, "concurrency")
    target = args.out or args.pool
    inputs = {"--verdicts": args.verdicts}
    _refuse_overwriting(
        args.qrels_out,
        "--qrels-out",
        files={"--pool": args.pool, "--out": target, **inputs},
        folders={"--prompts": args.prompts},
        cache=None if args.no_cache else args.cache_dir,
    )
    if args.out is not None:
        _refuse_overwriting(
            args.out,
            "--out",
            files=inputs,
            folders={"--prompts": args.prompts},
            cache=None if args.no_cache else args.cache_dir,
        )
    # Before any judge call: a folder that refuses the outputs would lose the verdicts.
    out_hint, qrels_hint = _OUT_HINT.format("--out"), _OUT_HINT.format("--qrels-out")
    check_writable(target, what="pool file", hint=out_hint)
    check_writable(args.qrels_out, what="supplementary qrels", hint=qrels_hint)
    entries = read_pool(args.pool)
    if args.judge == "http":
        # An off-script reply leaves its row without a verdict (counted), not the pool unjudged.
        options["unparseable"] = "unjudged"
    judge = build_relevance_judge(
        args.judge, cache=None if args.no_cache else Cache(args.cache_dir), **options
    )
    with use_reporter(stream_reporter()), progress("judging the pool", len(entries)) as advance:
        result = judge_pool(entries, judge, path=args.pool, rejudge=args.rejudge, advance=advance)
    write_pool(target, result.entries, hint=out_hint)
    written = (
        write_supplementary_qrels(args.qrels_out, result.entries, hint=qrels_hint)
        if any(e.relevant is not None for e in result.entries)
        else 0
    )
    summary = {
        **result.summary(),
        "judge": judge.identity(),
        "pool": target,
        "qrels": args.qrels_out if written else None,
        "labels_written": written,
    }
    if args.format == "json":
        out.write(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        return 0
    identity = summary["judge"]
    rows = [["judge", f"{identity.get('name')} ({identity.get('model')})"]]
    rows += [[key, str(value)] for key, value in result.summary().items()]
    tablefmt = "github" if args.format == "markdown" else "simple"
    out.write(table(rows, tablefmt=tablefmt, disable_numparse=True) + "\n")
    out.write(f"\nwrote {target}")
    if written:
        out.write(f" and {args.qrels_out} ({written} labels)")
    else:
        out.write(f"; no row has a verdict, so {args.qrels_out} was not written")
    out.write("\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``ragmetrics`` command."""
    parser = argparse.ArgumentParser(
        prog="ragmetrics",
        description="Retrieval and answer-layer metrics for RAG, trec_eval-exact.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_evaluate(sub)
    _add_compare(sub)
    _add_report(sub)
    _add_retrieve(sub)
    _add_calibrate(sub)
    _add_pool(sub)
    _add_judge_pool(sub)
    from pytest_ragmetrics.cli_generate import add_generate

    add_generate(sub)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; returns the exit code (2 for bad input, with a one-line reason)."""
    # A text stream in all that the commands use (write, flush).
    stream = cast("TextIO", SafeOutput(out or sys.stdout))
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings(record=True) as caught:
            # Our warnings are messages for the user, one line each on stderr, whatever
            # filters the calling program set (a test run may turn warnings into errors).
            warnings.simplefilter("always", RagMetricsWarning)
            try:
                code: int = args.handler(args, stream)
            finally:
                for warning in caught:
                    if issubclass(warning.category, RagMetricsWarning):
                        message = _shown(warning.message)
                        sys.stderr.write(f"ragmetrics {args.command}: warning: {message}\n")
                    else:
                        warnings.showwarning(
                            warning.message, warning.category, warning.filename, warning.lineno
                        )
    except RagMetricsError as exc:
        sys.stderr.write(f"ragmetrics {args.command}: error: {_shown(exc)}\n")
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


if __name__ == "__main__":
    raise SystemExit(main())
