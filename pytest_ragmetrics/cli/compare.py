"""``ragmetrics compare``: runs (or evaluations) on the same judgments, each against the
first; the same over several datasets; or a report against a baseline, evaluation by
evaluation (the plugin's verdicts outside pytest)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_ragmetrics.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    Subparsers,
    dataset_pairs,
    refuse_overwriting,
    require_positive,
    semantics_of,
    write_json,
)
from pytest_ragmetrics.cli.flags import SETTING, add, given, setting_help
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.vocabulary import DEFAULT_METRICS

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import Against
    from pytest_ragmetrics.comparison import Input, Judgments
    from pytest_ragmetrics.comparison.datasets import DatasetsComparison
    from pytest_ragmetrics.data.selection import DatasetSelection

DESCRIPTION = """\
Three forms.

  ragmetrics compare [--qrels QRELS | --dataset DIR] RUN_A RUN_B [RUN_C ...]
    Systems on the same judgments, each against the first (the reference). An input is a
    TREC run (evaluated here against --qrels or --dataset), a 'ragmetrics evaluate --format
    json' output, or a JSON report or baseline file (its retrieval evaluations, or those
    named with --evaluation). Prints every run's metrics and, per run against the reference:
    Δ, its 95% bootstrap CI, the paired randomization-test p, wins/ties/losses over the
    queries, and the queries that changed most. A TREC run does not record its k: "k unknown".

  ragmetrics compare --dataset A=DIR --dataset B=DIR [--split ...] SYSTEM_A SYSTEM_B [...]
    The same over several (dataset, split) pairs. A system is a folder of runs named by pair
    (A-test.trec, ...: what 'ragmetrics retrieve' writes for several pairs) or PAIR=RUN values
    (a system per run tag). Prints per metric a systems x pairs table with the mean (none for
    a system missing a pair; Markdown and HTML: the best of each column in bold), then each
    system's verdict against the reference on each pair.

  ragmetrics compare BASELINE_OR_REPORT REPORT
    The plugin's verdicts outside pytest: each evaluation of a JSON report (--ragmetrics-json)
    against the same evaluation in a baseline file or an earlier report.

The first form is used when --qrels, --dataset or --evaluation is given, when there are not
exactly two inputs, or when an input is a TREC run or an evaluate output; the second when
--dataset and --split name several pairs; else the third.

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
# The options of the runs forms only.
_RUNS_OPTIONS = (
    ("split", "--split"),
    ("metrics", "-m"),
    ("judged_docs_only", "-J"),
    ("most_changed", "--most-changed"),
    *_SCORING_OPTIONS,
)


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "compare",
        help="compare runs on the same judgments (with significance), or a report with a baseline",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add(p, "inputs", "runs: TREC run files, evaluate outputs, JSON reports or baselines (the "
        "first is the reference); systems over several datasets: folders of runs or PAIR=RUN; "
        "or BASELINE_OR_REPORT REPORT")  # fmt: skip
    _add_runs_options(p.add_argument_group("runs (the first two forms)"))
    add(p, "--tolerance", "allowed drop: 0.01 (absolute, default), 2%% (relative), or per "
        "metric like ndcg_at_10=0.005 (repeatable)")  # fmt: skip
    add(p, "--alpha")
    add(p, "--unjudged-drops", default=SETTING)
    add(p, "--format", "html: one self-contained page (see 'ragmetrics report'), on stdout or "
        "--out")  # fmt: skip
    add(p, "--out", "with --format html: write the page here", metavar="OUT.html")
    add(p, "--worst", "with --format html: queries shown in detail per metric (default 10)")
    add(p, "--strict", "two-argument form: fail (exit code 1) when an evaluation, metric or "
        "query of the baseline is missing from the report (without it they are named, not "
        "failed)")  # fmt: skip
    p.set_defaults(handler=run)


def _add_runs_options(runs: argparse._ArgumentGroup) -> None:
    judgments = runs.add_mutually_exclusive_group()
    add(judgments, "--qrels")
    add(judgments, "--dataset", "take the qrels of a dataset folder instead (as for "
        "'ragmetrics evaluate'); repeat it (NAME=DIR) to compare systems over several")  # fmt: skip
    add(runs, "--split", "with --dataset: the split(s), test (default), test,dev or "
        "NAME=test,dev per dataset (repeats add up)")  # fmt: skip
    add(runs, "--metric", "metric; several: -m ndcg_at_10,map or -m repeated; default: "
        + " ".join(DEFAULT_METRICS) + " for runs alone, else the metrics every evaluation "
        "given has")  # fmt: skip
    for flag in ("--relevance-level", "--gain", "--query-set"):
        add(runs, flag, setting_help(flag) + "; for TREC runs")
    add(runs, "--ignore-identical-ids", "drop retrieved documents whose id is the query's id "
        "(as 'ragmetrics evaluate')")  # fmt: skip
    add(runs, "--judged-docs-only", "judged-only forms of the metrics (trec_eval -J), as "
        "'ragmetrics evaluate'")  # fmt: skip
    add(runs, "--evaluation", "from JSON reports and baselines, only the evaluations with this "
        "name, test id or 'test [name]' label (repeatable; default: every retrieval "
        "evaluation)")  # fmt: skip
    add(runs, "--most-changed", "queries listed per run, by the first metric (default 5; JSON: "
        "every metric)")  # fmt: skip


def run(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.comparison import read_input
    from pytest_ragmetrics.options import OPTION

    option = OPTION["ragmetrics_tolerance"]
    # As written (for the reports) and parsed, once for every form.
    args.tolerance = list(args.tolerance or [option.default])
    args.tolerances = option.value(" ".join(args.tolerance), option.cli)
    if args.format != "html":
        for flag, value in (("--out", args.out), ("--worst", args.worst)):
            if value is not None:
                raise ConfigError(f"{flag}: only with --format html")
    pairs = dataset_pairs(args) if args.dataset else []
    if len(pairs) > 1:
        return _compare_datasets(args, out, pairs)
    inputs = [read_input(path) for path in args.inputs]
    if (
        args.qrels is not None
        or pairs
        or args.evaluation
        or len(inputs) != 2
        or any(item.kind in ("run", "evaluation") for item in inputs)
    ):
        if args.strict:
            raise ConfigError(
                "--strict: only in the two-argument form (BASELINE_OR_REPORT REPORT); comparing "
                "runs, the queries only one run holds are named in each run's verdict"
            )
        return _compare_runs(args, out, inputs)
    named = [flag for name, flag in _RUNS_OPTIONS if given(args, name)]
    if named:
        raise ConfigError(
            f"{', '.join(named)}: only when comparing runs (give --qrels or --dataset); "
            f"{args.inputs[0]} and {args.inputs[1]} are compared evaluation by evaluation"
        )
    return _compare_pair(args, out, inputs)


def _compare_pair(
    args: argparse.Namespace,
    out: TextIO,
    inputs: Sequence[Input],
) -> int:
    """``compare BASELINE_OR_REPORT REPORT``: the plugin's verdicts, evaluation by evaluation,
    and what the baseline holds that the report lacks (failing with --strict)."""
    from pytest_ragmetrics.baseline.pair import compare_pair

    if args.format == "html":
        require_positive(args, "worst")
        if args.out is not None:
            files = {"before": args.inputs[0], "after": args.inputs[1]}
            refuse_overwriting(args.out, "--out", kind="html", files=files)
    before, after = (_evaluations_of(item) for item in inputs)
    entries = [*before.values(), *after.values()]
    args.tolerances.check_used((m for e in entries for m in e.get("metrics") or {}), "--tolerance")
    # Only a baseline can be blessed: the advice after a failure says what fits.
    against: Against = "baseline" if inputs[0].kind == "baseline" else "report"
    pair = compare_pair(
        before,
        after,
        args.tolerances,
        paths=(args.inputs[0], args.inputs[1]),
        alpha=args.alpha,
        unjudged_drops=args.unjudged_drops,
        strict=args.strict,
    )
    if args.format == "html":
        _pair_page(args, out, pair, before, after)
    elif args.format == "json":
        write_json(out, pair.to_dict(), sort_keys=True)
    else:
        from pytest_ragmetrics.report.pair import pair_table

        out.write(pair_table(pair, markdown=args.format == "markdown", against=against))
    return EXIT_FAILED if pair.exit_failed else EXIT_OK


def _pair_page(
    args: argparse.Namespace,
    out: TextIO,
    pair: Any,
    before: dict[tuple[str, str], dict[str, Any]],
    after: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """The HTML page of the two-argument form."""
    from pytest_ragmetrics.cli.report import report_header, write_page
    from pytest_ragmetrics.report.html import Compared, comparison_page

    page = comparison_page(
        before,
        after,
        {r.key: v for r, v in pair.results},
        header=report_header(Path(args.inputs[1])),
        compared=Compared(
            before=args.inputs[0],
            after=args.inputs[1],
            tolerance=tuple(args.tolerance),
            alpha=args.alpha,
            strict=args.strict,
            not_compared=tuple(pair.not_compared()["lines"]),
        ),
    )
    write_page(args, out, page, args.inputs[1], pair.summary())


def _evaluations_of(item: Input) -> dict[tuple[str, str], dict[str, Any]]:
    """The evaluations of a baseline or report given to the two-argument form."""
    from pytest_ragmetrics.baseline.compare import evaluations_in, load_evaluations

    if item.kind == "text":  # not JSON: its reader names the problem
        return load_evaluations(Path(item.path))
    return evaluations_in(item.data, Path(item.path))


def _compare_runs(
    args: argparse.Namespace,
    out: TextIO,
    inputs: Sequence[Input],
) -> int:
    """``compare --qrels Q RUN_A RUN_B ...``: every run against the first."""
    from pytest_ragmetrics.comparison import MOST_CHANGED, compare_systems, load_systems

    judgments = _runs_judgments(args, inputs)
    systems = load_systems(
        inputs,
        judgments=judgments,
        metrics=args.metrics,
        judged_only=bool(args.judged_docs_only),
        semantics=semantics_of(args),
        select=args.evaluation or (),
    )
    args.tolerances.check_used(systems[0].record.evaluation.metrics, "--tolerance")
    comparison = compare_systems(
        systems,
        args.tolerances,
        tolerance=args.tolerance,
        alpha=args.alpha,
        judgments=judgments,
        most_changed=args.most_changed or MOST_CHANGED,
        unjudged_drops=args.unjudged_drops,
    )
    if args.format == "json":
        write_json(out, comparison.to_dict())
    elif args.format == "html":
        from pytest_ragmetrics.cli.report import write_page
        from pytest_ragmetrics.report.html import systems_page

        summary = f"{len(systems)} runs, {len(comparison.failed)} failed"
        write_page(args, out, systems_page(comparison), args.inputs[0], summary)
    else:
        from pytest_ragmetrics.report.comparison import comparison_markdown, comparison_text

        markdown = args.format == "markdown"
        out.write((comparison_markdown if markdown else comparison_text)(comparison))
    return EXIT_FAILED if comparison.failed else EXIT_OK


def _runs_judgments(args: argparse.Namespace, inputs: Sequence[Input]) -> Judgments | None:
    """Check the options of a comparison of runs against its inputs; the judgments of
    ``--qrels`` or ``--dataset``, if given."""
    from pytest_ragmetrics.comparison import load_judgments

    require_positive(args, "most_changed", "worst")
    if len(inputs) < 2:
        raise ConfigError(
            f"{args.inputs[0]}: compare needs at least two inputs (runs: the reference first)"
        )
    if args.split and not args.dataset:
        raise ConfigError("--split: only with --dataset")
    [pair] = dataset_pairs(args) if args.dataset else [None]
    folder = None if pair is None else str(pair.path)
    if args.format == "html" and args.out is not None:
        # Every file read: the inputs, the qrels and whatever the dataset folder holds.
        files = {f"input {item.path}": item.path for item in inputs}
        refuse_overwriting(
            args.out,
            "--out",
            kind="html",
            files={**files, "--qrels": args.qrels},
            folders={"--dataset": folder},
        )
    judgments = None
    if args.qrels is not None or args.dataset:
        judgments = load_judgments(args.qrels, folder, None if pair is None else pair.split)
    if args.evaluation and not any(item.kind in ("report", "baseline") for item in inputs):
        raise ConfigError("--evaluation: only picks evaluations of JSON reports and baselines")
    if not any(item.kind in ("run", "text") for item in inputs):
        named = [flag for name, flag in _SCORING_OPTIONS if given(args, name)]
        if named:
            raise ConfigError(
                f"{', '.join(named)}: only for TREC runs, which are evaluated here; the "
                "evaluations given were scored when they were written"
            )
    return judgments


def _compare_datasets(
    args: argparse.Namespace,
    out: TextIO,
    pairs: list[DatasetSelection],
) -> int:
    """``compare --dataset A=DIR --dataset B=DIR SYSTEM ...``: each system against the first,
    pair by pair; a systems x pairs table per metric."""
    from pytest_ragmetrics.comparison import MOST_CHANGED
    from pytest_ragmetrics.comparison.datasets import compare_datasets, folder_notes, system_runs
    from pytest_ragmetrics.comparison.systems import metric_names

    for flag, name in (("--evaluation", "evaluation"), ("--strict", "strict")):
        if given(args, name):
            raise ConfigError(f"{flag}: not with several datasets (their systems are runs)")
    require_positive(args, "most_changed", "worst")
    runs = system_runs(args.inputs, pairs)
    metrics = metric_names(args.metrics, bool(args.judged_docs_only))
    args.tolerances.check_used(metrics, "--tolerance")
    if args.format == "html" and args.out is not None:
        files = {f"run {path}": path for by_pair in runs.values() for path in by_pair.values()}
        folders = {f"--dataset {p.name}": str(p.path) for p in pairs}
        refuse_overwriting(args.out, "--out", kind="html", files=dict(files), folders=dict(folders))
    comparison = compare_datasets(
        runs,
        pairs,
        metrics,
        semantics_of(args),
        args.tolerances,
        tolerance=args.tolerance,
        alpha=args.alpha,
        unjudged_drops=args.unjudged_drops,
        most_changed=args.most_changed or MOST_CHANGED,
        notes=folder_notes(args.inputs, pairs),
    )
    _write_datasets(args, out, comparison)
    return EXIT_FAILED if comparison.failed else EXIT_OK


def _write_datasets(args: argparse.Namespace, out: TextIO, comparison: DatasetsComparison) -> None:
    """A comparison over several pairs in the format asked for."""
    if args.format == "json":
        from pytest_ragmetrics.report.datasets import comparison_summaries

        document = comparison.to_dict()
        document["by_dataset"] = {s.metric: s.to_dict() for s in comparison_summaries(comparison)}
        write_json(out, document)
    elif args.format == "html":
        from pytest_ragmetrics.cli.report import write_page
        from pytest_ragmetrics.report.html.datasets import datasets_page

        summary = f"{len(comparison.labels)} systems on {len(comparison.pairs)} pairs, "
        summary += f"{len(comparison.failed)} failed"
        write_page(args, out, datasets_page(comparison), args.inputs[0], summary)
    else:
        from pytest_ragmetrics.report.comparison import datasets_document

        out.write(datasets_document(comparison, markdown=args.format == "markdown"))
