"""What the commands of ``ragmetrics`` share: exit codes, checks of their options (a
ConfigError names the flag), the (dataset, split) pairs of ``--dataset``/``--split``, the
scoring rules of the scoring flags, and the per-dataset summary they print."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from pytest_ragmetrics.cli.flags import SETTING, add
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.report.escaping import for_terminal

if TYPE_CHECKING:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.selection import DatasetSelection
    from pytest_ragmetrics.metrics.semantics import MetricSemantics
    from pytest_ragmetrics.outputs import OutputKind
    from pytest_ragmetrics.report.datasets import PairMeans

# Exit codes, the same for every command (README, "Exit codes").
EXIT_OK = 0
EXIT_FAILED = 1  # compare: an evaluation regressed or is not comparable (or --strict: missing)
EXIT_BAD_INPUT = 2  # a file, option or argument we cannot use (argparse's usage errors too)
EXIT_INTERNAL_ERROR = 3
# How to write an output elsewhere, in the error for a folder that refuses it.
OUT_HINT = "pass {} FILE to write it elsewhere"
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def shown(text: object) -> str:
    """A message for stderr: its control characters shown as escapes, tab and newline kept."""
    return for_terminal(text, newlines=True)


def number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4f}"


def tablefmt(args: argparse.Namespace) -> str:
    """tabulate's layout for ``--format``: GitHub Markdown or the terminal's."""
    return "github" if args.format == "markdown" else "simple"


def write_notes(out: TextIO, notes: list[str]) -> None:
    for note in notes:
        out.write(f"note: {for_terminal(note)}\n")


def require_positive(args: argparse.Namespace, *names: str) -> None:
    """A ConfigError for the first of the integer options ``names`` given below 1."""
    from pytest_ragmetrics.values import MAX_CUTOFF

    for name in names:
        value = getattr(args, name)
        if value is not None and not 0 < value <= MAX_CUTOFF:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(
                f"{flag} must be a positive integer, got {value} (at most {MAX_CUTOFF})"
            )


def refuse_overwriting(
    output: str,
    flag: str,
    *,
    kind: OutputKind,
    files: dict[str, str | None] | None = None,
    folders: dict[str, str | None] | None = None,
    cache: str | None = None,
) -> None:
    """A ConfigError when ``output`` would overwrite an input file, a file in an input folder,
    a cache entry, or any existing file that is not a ``kind`` ragmetrics wrote (see
    :mod:`~pytest_ragmetrics.outputs`)."""
    from pytest_ragmetrics.cache import inside_cache_entries
    from pytest_ragmetrics.fileio import is_within, same_file
    from pytest_ragmetrics.outputs import refuse_replacing

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
    refuse_replacing(output, flag, kind)


def add_cache_options(p: argparse.ArgumentParser, folder: str) -> None:
    """--cache-dir (described as ``folder``) and --no-cache."""
    add(p, "--cache-dir", f"{folder} (default .ragmetrics/cache)", metavar="DIR")
    add(p, "--no-cache")


def add_endpoint_options(
    group: argparse._ArgumentGroup, env: str, item: str, timeout: int, *, settings: bool = True
) -> None:
    """--url, --api-key-env, --timeout, --attempt-timeout and --concurrency of an
    OpenAI-compatible server whose environment variables start with ``env`` and which answers
    ``item`` s: a judge's, or the test-set generator's (``settings=False``: no setting of the
    plugin is its)."""
    setting = SETTING if settings else None
    add(group, "--url", f"base URL of an OpenAI-compatible server (or {env}_URL)", setting=setting)
    add(group, "--api-key-env", f"environment variable holding the API key (default {env}_API_KEY)")
    add(group, "--timeout", f"seconds a {item} may take, retries included (a deadline; default "
        f"{timeout})", setting=setting)  # fmt: skip
    add(group, "--attempt-timeout", "seconds one attempt may take before it is retried within "
        "the deadline (default: the whole deadline)", setting=setting)  # fmt: skip
    hosted = "; 4 to 16 suits hosted APIs"
    add(group, "--concurrency", f"{item}s in flight at once (default 1{hosted})", setting=setting)


def cache_of(args: argparse.Namespace) -> Cache | None:
    """The cache of --cache-dir, or None with --no-cache."""
    from pytest_ragmetrics.cache import Cache

    return None if args.no_cache else Cache(args.cache_dir)


def cache_dir(args: argparse.Namespace) -> str | None:
    """The cache folder outputs must stay out of (None with --no-cache)."""
    return None if args.no_cache else str(args.cache_dir)


# -- datasets and splits ---------------------------------------------------------------------------


def split_text(args: argparse.Namespace) -> str:
    """Every --split value, as one ragmetrics_split text (repeats accumulate); a blank one is
    an error (it would silently mean the default, test)."""
    if any(not value.strip() for value in args.split or ()):
        raise ConfigError("--split: an empty value; name a split, e.g. --split test")
    return " ".join(args.split or ["test"])


def dataset_pairs(args: argparse.Namespace) -> list[DatasetSelection]:
    """The (dataset, split) pairs of repeated --dataset [NAME=]DIR and --split."""
    from pytest_ragmetrics.data.selection import parse_named_paths, parse_splits, select_datasets

    named = parse_named_paths(list(args.dataset), "--dataset")
    splits = parse_splits(split_text(args), [name for name, _ in named], "--split")
    ignore = bool(getattr(args, "ignore_identical_ids", False))
    folders = [(n, Path(p)) for n, p in named]
    return list(select_datasets(folders, splits, lambda name: ignore, "--dataset"))


def one_pair(args: argparse.Namespace) -> DatasetSelection | None:
    """The one (dataset, split) pair of a command that reads one (None without --dataset); a
    ConfigError for several, or for --split without --dataset."""
    if not args.dataset:
        if args.split:
            raise ConfigError("--split: only with --dataset")
        return None
    pairs = dataset_pairs(args)
    if len(pairs) > 1:
        keys = ", ".join(p.key for p in pairs)
        raise ConfigError(f"--dataset, --split: one (dataset, split) pair here; got {keys}")
    return pairs[0]


def one_split(args: argparse.Namespace) -> str:
    """The one split of a command that writes or reads one (--split given once; test)."""
    splits = split_text(args).split()
    if len(splits) > 1 or "," in splits[0] or "=" in splits[0]:
        raise ConfigError(f"--split: one split here; got {' '.join(splits)!r}")
    from pytest_ragmetrics.data.selection import check_split_name

    return check_split_name(splits[0], "--split")


def semantics_of(args: argparse.Namespace) -> MetricSemantics:
    """The scoring rules of --relevance-level, --gain, --query-set, --ignore-identical-ids
    (trec_eval's where not given)."""
    from pytest_ragmetrics.metrics.semantics import MetricSemantics

    default = MetricSemantics()
    return MetricSemantics(
        default.relevance_level if args.relevance_level is None else args.relevance_level,
        args.gain or default.gain,
        args.query_set or default.query_set,
        bool(args.ignore_identical_ids),
    )


def write_summary(
    cells: list[PairMeans],
    metrics: list[str],
    order: list[str],
    form: str,
    out: TextIO,
    notes: list[str],
) -> None:
    """The per-dataset summary of ``cells``: a table per metric in text or Markdown (the
    plugin's own builder), or JSON."""
    from pytest_ragmetrics.report.datasets import summarize, summary_table

    tables = summarize(cells, metrics, order, minimum_pairs=1)
    if form == "json":
        payload = {"by_dataset": {t.metric: t.to_dict() for t in tables}, "notes": notes}
        out.write(json.dumps(payload, indent=2) + "\n")
        return
    layout = "github" if form == "markdown" else "simple"
    out.write("\n\n".join(summary_table(t, layout) for t in tables) + "\n")
    write_notes(out, notes)


def write_json(out: TextIO, document: Any, *, sort_keys: bool = False) -> None:
    out.write(json.dumps(document, indent=2, sort_keys=sort_keys) + "\n")
