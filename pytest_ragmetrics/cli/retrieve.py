"""``ragmetrics retrieve``: a built-in retriever run over a dataset's queries, written as a
TREC run (several datasets: a run per pair in a folder, and a summary per metric)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TextIO

from pytest_ragmetrics.cli.common import (
    Subparsers,
    add_cache_options,
    cache_dir,
    cache_of,
    dataset_pairs,
    require_positive,
    write_notes,
    write_summary,
)
from pytest_ragmetrics.cli.flags import FORMATS, SETTING, add
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.vocabulary import DEFAULT_METRICS

if TYPE_CHECKING:
    from pytest_ragmetrics.comparison.runs import Retrieved

# The flags of the dense retriever: (flag, its keyword of build_retriever).
_DENSE = {
    "--model": "model",
    "--batch-size": "batch_size",
    "--max-seq-length": "max_seq_length",
    "--query-prefix": "query_prefix",
    "--passage-prefix": "passage_prefix",
    "--index": "index",
    "--device": "device",
    "--devices": "devices",
}


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "retrieve",
        help="run a built-in retriever over a dataset and write a TREC run",
        description="Search a dataset's queries with the dense or BM25 retriever and write a "
        "TREC run that 'ragmetrics evaluate' reads. Embeddings and runs are cached.",
    )
    add(
        p,
        "--dataset",
        "BEIR or FlagEmbedding folder, or a folder with dataset.json (TREC, SMART); repeat it "
        "(NAME=DIR) for several: each gets its own run in --out, a folder, and a summary is "
        "printed",
        required=True,
    )
    add(p, "--split", "split(s) whose queries to search: test (default), test,dev, or "
        "NAME=test,dev (repeats add up)")  # fmt: skip
    add(p, "--retriever", "the built-in retriever", required=True)
    add(p, "--k", "documents per query (default 100)", default=SETTING)
    add_cache_options(p, "cache folder for embeddings and runs")
    add(
        p,
        "--out",
        "TREC run file to write; with several (dataset, split) pairs a folder, which gets "
        "NAME-SPLIT.trec per pair",
        metavar="RUN",
        required=True,
    )
    add(p, "--metric", "with several pairs: metrics of the summary, -m ndcg_at_10,map or -m "
        "repeated (default: "
        + " ".join(DEFAULT_METRICS) + ")")  # fmt: skip
    add(p, "--ignore-identical-ids", "with several pairs: score the summary with BEIR's "
        "identical-ids rule (the runs written are not filtered)")  # fmt: skip
    add(p, "--format", "of the summary", choices=FORMATS[:3])
    add(p, "--tag", "run tag (last column; default: the retriever's name)")
    _add_dense_options(p)
    p.set_defaults(handler=run)


def _add_dense_options(p: argparse.ArgumentParser) -> None:
    dense = p.add_argument_group("dense options")
    add(dense, "--model", "dense: model folder or locally cached hub name (default: "
        "all-MiniLM-L6-v2)", metavar="PATH_OR_NAME")  # fmt: skip
    add(dense, "--batch-size", "encoding batch size (default 32)")
    add(dense, "--max-seq-length", "truncate inputs (tokens)")
    add(dense, "--query-prefix", "text put before every query (e5, bge, ...)")
    add(dense, "--passage-prefix", "text put before every passage")
    add(dense, "--index", "faiss index type")
    add(dense, "--device", "torch device, e.g. cpu or cuda:0")
    add(dense, "--devices", "encode on several devices/processes, e.g. cuda:0,cuda:1 or cpu,cpu")
    ray = p.add_argument_group("Ray options (dense; pip install 'pytest-ragmetrics[ray]')")
    add(
        ray,
        "--ray",
        "encode and search on a Ray cluster: ADDRESS (host:6379, ray://host:10001, auto, "
        "local); without one, RAY_ADDRESS, else a local cluster. Same run, same cache entries",
    )
    add(ray, "--actors", "Ray actors holding the model (default: all CPUs)")
    add(ray, "--gpus-per-actor", "GPUs per Ray actor (default 0; 0.5 shares a GPU)")


def run(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.cli.common import refuse_overwriting
    from pytest_ragmetrics.comparison.runs import retrieve_pairs, run_targets

    require_positive(args, "k")
    pairs = dataset_pairs(args)
    targets = run_targets(args.out, pairs)
    for target in targets.values():
        refuse_overwriting(
            str(target),
            "--out",
            kind="run",
            folders={f"--dataset {p.name}": str(p.path) for p in pairs},
            cache=cache_dir(args),
        )
    options = retriever_options(args)
    executor = options.get("executor")
    several = len(pairs) > 1

    def done(retrieved: Retrieved) -> None:
        if several:  # the summary goes to stdout; the progress of each pair to stderr
            sys.stderr.write(f"{retrieved.pair}: {retrieved.summary(args.k)}\n")

    try:
        found = retrieve_pairs(
            args.retriever, pairs, targets, args.k, options, tag=args.tag, done=done
        )
        if several:
            return _summary(args, found, out)
        [retrieved] = found
        out.write(f"{retrieved.name}: {retrieved.summary(args.k)}\n")
        write_notes(out, [retrieved.short] if retrieved.short else [])
        if executor is not None:
            # Nothing runs on Ray when the cache has the embeddings and the run.
            where = executor.describe() if executor.used else "nothing to do: cache hit"
            out.write(f"Ray: {where}\n")
    finally:
        if executor is not None:
            executor.close()
    return 0


def _summary(args: argparse.Namespace, found: list[Retrieved], out: TextIO) -> int:
    """The runs of several pairs scored against their qrels: the summary per metric."""
    from pytest_ragmetrics.comparison.runs import score
    from pytest_ragmetrics.metrics.semantics import MetricSemantics
    from pytest_ragmetrics.report.datasets import PairMeans

    metrics = list(args.metrics or DEFAULT_METRICS)
    rules = MetricSemantics(ignore_identical_ids=bool(args.ignore_identical_ids))
    cells, notes = [], []
    for retrieved in found:
        evaluation = score(retrieved.dataset.qrels, retrieved.run, metrics, rules)
        cells.append(PairMeans(args.tag or retrieved.name, retrieved.pair, evaluation.mean))
        notes += [f"{retrieved.pair}: {note}" for note in evaluation.notes]
        if retrieved.short:
            notes.append(f"{retrieved.pair}: {retrieved.short}")
    write_summary(cells, metrics, [r.pair for r in found], args.format, out, notes)
    return 0


def retriever_options(args: argparse.Namespace) -> dict[str, Any]:
    """build_retriever's keywords from the command line (dense options only for dense)."""
    options: dict[str, Any] = {
        name: getattr(args, name) for name in _DENSE.values() if getattr(args, name) is not None
    }
    if "devices" in options:
        options["devices"] = options["devices"].split(",")
    if args.ray is not None:
        options["executor"] = _ray_executor(args)
    elif args.actors is not None or args.gpus_per_actor is not None:
        raise ConfigError("--actors and --gpus-per-actor: only with --ray")
    if args.retriever == "bm25" and options:
        flags = {value: flag for flag, value in _DENSE.items()} | {"executor": "--ray"}
        raise ConfigError(f"{', '.join(flags[n] for n in options)}: only for --retriever dense")
    cache = cache_of(args)
    if cache is not None:
        options["cache"] = cache
    return options


def _ray_executor(args: argparse.Namespace) -> Any:
    """The RayExecutor of --ray [ADDRESS], --actors, --gpus-per-actor."""
    from pytest_ragmetrics.executors import RayExecutor

    require_positive(args, "actors")
    if args.gpus_per_actor is not None and not args.gpus_per_actor >= 0:
        raise ConfigError(f"--gpus-per-actor must be a number >= 0, got {args.gpus_per_actor}")
    return RayExecutor(
        None if args.ray is True else args.ray,  # True: --ray alone
        actors=args.actors,
        gpus_per_actor=args.gpus_per_actor or 0,
    )
