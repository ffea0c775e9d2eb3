"""``ragmetrics calibrate``: a judge's agreement with human labels (accuracy, Cohen's kappa,
confusion matrix) on one of its questions: claim support, answer relevance, answer-reference
agreement, passage relevance; ``--save`` records it for the ragmetrics_min_judge_kappa gate."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_ragmetrics.cli.common import (
    OUT_HINT,
    Subparsers,
    add_cache_options,
    cache_dir,
    cache_of,
    number,
    one_pair,
    refuse_overwriting,
    require_positive,
    tablefmt,
    write_json,
)
from pytest_ragmetrics.cli.flags import FORMATS, add
from pytest_ragmetrics.cli.judging import add_judge_options, judge_options
from pytest_ragmetrics.cli.output import table
from pytest_ragmetrics.errors import ConfigError

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.calibration import CalibrationResult

DESCRIPTION = (
    "Judge human-labelled items and report agreement with the labels: accuracy, Cohen's "
    "kappa, confusion matrix. A threshold judge (embedding) gets its threshold tuned on a "
    "seeded half and is scored on the other half. --save records the result, keyed by the "
    "identity of the question as the judge asks it, for the ragmetrics_min_judge_kappa gate. "
    "--question support (default): claim support against --labels (JSONL: claim, "
    "context_sentences, label SUPPORT/CONTRADICT/NOINFO; supported = SUPPORT). --question "
    'answer-relevance: answer_relevance\'s question "does this answer address the question?" '
    "against --labels (JSONL: question, answer, label RELEVANT/NOT_RELEVANT). --question "
    'agreement: answer_correctness\'s question "does the answer agree with the reference?" '
    "against --labels (JSONL: answer, reference, label AGREE/DISAGREE; or SciFact's "
    "claim_support, where the claim is the answer, its evidence sentences the reference, "
    "SUPPORT agrees, CONTRADICT disagrees and NOINFO pairs are left out). --question "
    "relevance: a relevance judge (judge-pool's, and context_relevance's) on a dataset's "
    "qrels: relevant vs judged non-relevant, or, for qrels that judge only relevant documents, "
    "vs negatives sampled from the corpus; with --run, the top --top documents a retriever "
    "handed over instead (hard negatives; the output says how the negatives were chosen)."
)
# The options of each question (the others are a usage error for it).
QUESTION_OPTIONS: dict[str, tuple[str, ...]] = {
    "support": ("labels",),
    "answer-relevance": ("labels",),
    "agreement": ("labels",),
    "relevance": ("dataset", "split", "negatives", "run", "top", "max_chars"),
}


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "calibrate",
        help="measure a judge's agreement with human labels (accuracy, kappa) on one of its "
        "questions: claim support, answer relevance, answer-reference agreement, passage "
        "relevance",
        description=DESCRIPTION,
    )
    add(p, "--judge", "the judge to calibrate", required=True)
    add(p, "--question", "support: claim support against --labels (default); "
        "answer-relevance: whether an answer addresses the question, against --labels; "
        "agreement: answer-reference agreement against --labels (embedding and http judges); "
        "relevance: passage relevance against --dataset's qrels", default="support")  # fmt: skip
    add(p, "--labels", "support, answer-relevance, agreement: human labels (.gz ok)")
    add(p, "--dataset", "relevance: dataset folder (qrels and texts)", metavar="DIR")
    add(p, "--split", "relevance: the split (default test)", metavar="SPLIT")
    add(p, "--negatives", "relevance, for qrels without judged non-relevant pairs: negatives "
        "sampled per positive (default 1; not with --run)")  # fmt: skip
    add(p, "--run", "relevance: a TREC run; label each query's top --top documents by the "
        "qrels (relevant, else non-relevant: judged so, or unjudged and presumed so, which "
        "makes kappa a lower bound) instead of sampling negatives")  # fmt: skip
    add(p, "--top", "relevance with --run: documents per query (default 3)")
    add(p, "--max-chars", "relevance: cut each passage (title + ' ' + text) after C "
        "characters, as a pipeline cuts its contexts (the example pipeline: 600); default: "
        "whole passages")  # fmt: skip
    add(p, "--format", choices=FORMATS[:3])
    add(p, "--save", "record the result in this calibration file (e.g. "
        ".ragmetrics/calibration.json)")  # fmt: skip
    add(p, "--limit", "use only the first N labelled items")
    add(p, "--seed", "seed of the tuning split (default 0)")
    add_cache_options(p, "verdict cache folder")
    add_judge_options(
        p,
        threshold="score this fixed threshold on all items instead of tuning one "
        "(answer-relevance: the relevance threshold; agreement: the agreement threshold; "
        "relevance: the relevance judge's threshold)",
        verdicts="recorded assessments, query_id = item id (answer-relevance: their "
        "addresses_question; relevance: query_id, doc_id, relevant per line)",
    )
    p.set_defaults(handler=run)


def check_question_options(args: argparse.Namespace) -> None:
    """A ConfigError for a missing required option or an option of another question."""
    if args.question == "relevance" and args.dataset is None:
        raise ConfigError("--dataset DIR: required for --question relevance")
    if args.question != "relevance" and args.labels is None:
        raise ConfigError(f"--labels FILE.jsonl: required for --question {args.question}")
    every = dict.fromkeys(name for names in QUESTION_OPTIONS.values() for name in names)
    for name in every:
        if getattr(args, name) is not None and name not in QUESTION_OPTIONS[args.question]:
            found = [q for q, names in QUESTION_OPTIONS.items() if name in names]
            owners = " or ".join(filter(None, (", ".join(found[:-1]), found[-1])))
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag}: only with --question {owners}")
    if args.run is not None and len(args.run) > 1:
        raise ConfigError(f"--run: one run here; got {len(args.run)}")
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


def _check_save(args: argparse.Namespace, files: dict[str, str | None], **folders: Any) -> None:
    """Before any judge call: --save may not overwrite an input, and a folder that refuses it
    would lose the calibration."""
    from pytest_ragmetrics.fileio import check_writable

    if not args.save:
        return
    folders = {"--prompts": args.prompts, **{f"--{k}": v for k, v in folders.items()}}
    files = {"--verdicts": args.verdicts, **files}
    cache = cache_dir(args)
    refuse_overwriting(
        args.save, "--save", kind="calibration", files=files, folders=folders, cache=cache
    )
    check_writable(args.save, what="calibration file", hint=OUT_HINT.format("--save"))


def run(args: argparse.Namespace, out: TextIO) -> int:
    options = judge_options(args)
    require_positive(args, "concurrency", "limit", "negatives", "top", "max_chars")
    check_question_options(args)
    if args.question == "relevance":
        return _calibrate_relevance(args, options, out)
    _check_save(args, {"--labels": args.labels})
    own = {"agreement": "agreement_threshold", "answer-relevance": "relevance_threshold"}
    if args.question in own and "threshold" in options:
        # --threshold is the threshold of the question calibrated: here not claim support's.
        options[own[args.question]] = options.pop("threshold")
    result, note = _calibrate_labels(args, options)
    if args.question == "agreement":
        return _write(args, out, result, args.labels, note, ("agrees", "disagrees"))
    if args.question == "answer-relevance":
        return _write(args, out, result, args.labels, note, ("relevant",))
    return _write(args, out, result, args.labels, note)


def _calibrate_labels(
    args: argparse.Namespace, options: dict[str, Any]
) -> tuple[CalibrationResult, str]:
    """The judge on the --labels of --question support, answer-relevance or agreement; a
    note on the items left out."""
    from pytest_ragmetrics.judges.calibration import (
        calibrate,
        calibrate_agreement,
        calibrate_answer_relevance,
        read_agreement_labels,
    )
    from pytest_ragmetrics.judges.factory import build_judge
    from pytest_ragmetrics.progress import stream_reporter, use_reporter

    judge = build_judge(args.judge, cache=cache_of(args), **options)
    tune = args.threshold is None
    with use_reporter(stream_reporter()):
        if args.question == "answer-relevance":
            return calibrate_answer_relevance(
                judge, args.labels, seed=args.seed, limit=args.limit, tune=tune
            ), ""
        if args.question != "agreement":
            return calibrate(judge, args.labels, seed=args.seed, limit=args.limit, tune=tune), ""
        labels = read_agreement_labels(args.labels)
        result = calibrate_agreement(judge, labels, seed=args.seed, limit=args.limit, tune=tune)
    note = f"left out: {labels.left_out} items ({labels.left_out_reason})\n"
    return result, note if labels.left_out else ""


def _calibrate_relevance(args: argparse.Namespace, options: dict[str, Any], out: TextIO) -> int:
    """``calibrate --question relevance``: a relevance judge against a dataset's qrels."""
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.judges.calibration import calibrate_relevance
    from pytest_ragmetrics.judges.factory import build_relevance_judge
    from pytest_ragmetrics.progress import stream_reporter, use_reporter

    pair = one_pair(args)
    assert pair is not None  # check_question_options: --dataset is required here
    run_file = None if args.run is None else args.run[0]
    _check_save(args, {"--run": run_file}, dataset=str(pair.path))
    dataset = load_dataset(pair.path, pair.split)
    pairs, negatives = _relevance_items(args, dataset, run_file)
    judge = build_relevance_judge(args.judge, cache=cache_of(args), **options)
    source = f"{dataset.name} {dataset.split}"
    with use_reporter(stream_reporter()):
        result = calibrate_relevance(
            judge,
            pairs,
            negatives=negatives,
            seed=args.seed,
            limit=args.limit,
            tune=args.threshold is None,
            source=source + ("" if run_file is None else f", run {Path(run_file).name}"),
        )
    labels = f"{pair.path} qrels"
    if run_file is not None:
        labels += f", top {3 if args.top is None else args.top} of {run_file}"
    return _write(args, out, result, labels, f"{negatives}\n", ("relevant",))


def _relevance_items(args: argparse.Namespace, dataset: Any, run_file: str | None) -> Any:
    """(labelled pairs, how the negatives were chosen): a run's top documents, or the qrels'
    relevant documents and sampled negatives; passages cut to --max-chars."""
    import dataclasses

    from pytest_ragmetrics.judges.calibration import relevance_labels, retrieved_relevance_labels

    if run_file is not None:
        from pytest_ragmetrics.data.trec import read_run

        return retrieved_relevance_labels(
            read_run(run_file),
            dataset.qrels,
            dataset.queries,
            dataset.corpus,
            top=3 if args.top is None else args.top,
            max_chars=args.max_chars,
            run_name=f"run {Path(run_file).name}",
        )
    pairs, negatives = relevance_labels(
        dataset.qrels, dataset.queries, dataset.corpus, negatives=args.negatives, seed=args.seed
    )
    if args.max_chars is not None:
        pairs = [dataclasses.replace(p, passage=p.passage[: args.max_chars]) for p in pairs]
        negatives += f"; passages cut after {args.max_chars} characters"
    return pairs, negatives


def _write(
    args: argparse.Namespace,
    out: TextIO,
    result: CalibrationResult,
    labels: str,
    note: str,
    words: tuple[str, ...] = (),
) -> int:
    """Save the result (--save), then print it: JSON, or its tables and ``note``."""
    from pytest_ragmetrics.judges.calibration import save_calibration

    if args.save:
        save_calibration(args.save, result, hint=OUT_HINT.format("--save"))
    if args.format == "json":
        too_few = result.too_few(_class_words(words)) or None
        write_json(out, {**result.to_dict(), "too_few_labels": too_few}, sort_keys=True)
        return 0
    out.write(calibration_tables(result, labels, tablefmt(args), words))
    out.write(note)
    if args.save:
        out.write(f"\nsaved to {args.save} (judge {result.judge_key[:12]})\n")
    return 0


def _class_words(words: Sequence[str]) -> tuple[str, str]:
    """(what a positive is, what a negative is): ``words``, else "supported" and "not
    <positive>"."""
    positive = words[0] if words else "supported"
    return positive, words[1] if len(words) > 1 else f"not {positive}"


def calibration_tables(
    result: CalibrationResult, labels: str, layout: str, words: Sequence[str] = ()
) -> str:
    """The figures of a calibration, then its confusion matrix, its rows and columns named by
    ``words``: what a positive is ("supported" unless given), and a negative ("not
    <positive>" unless given); then, when the kappa is measured on too few labels to trust,
    a note saying so."""
    from pytest_ragmetrics.judges.base import identity_label
    from pytest_ragmetrics.judges.calibration.figures import TRUST_RULE

    positive, negative = _class_words(words)
    c = result.confusion
    count = result.labels.get("n")
    rows = [
        ["judge", identity_label(result.judge)],
        ["labels", labels if count is None else f"{labels} ({count} items)"],
        ["threshold", _threshold_text(result)],
        ["n", f"{result.n} ({c['tp'] + c['fn']} {positive}, {c['fp'] + c['tn']} {negative})"],
        ["unjudged", str(result.unjudged)],
        ["accuracy", number(result.accuracy)],
        ["kappa", number(result.kappa)],
        ["seconds", f"{result.seconds:.1f}"],
    ]
    if result.unjudged:
        # What ragmetrics_min_judge_kappa reads: no trust bought by leaving hard items out.
        rows.insert(-1, ["kappa for the gate (unjudged = disagreements)", number(result.gated)])
    matrix = [
        [f"human: {positive}", str(c["tp"]), str(c["fn"])],
        [f"human: {negative}", str(c["fp"]), str(c["tn"])],
    ]
    headers = ["", f"judge: {positive}", f"judge: {negative}"]
    text = f"{table(rows, tablefmt=layout)}\n\n{table(matrix, headers, tablefmt=layout)}\n"
    too_few = result.too_few((positive, negative))
    if too_few:
        text += (
            f"\ntoo few labels: this kappa is {too_few}; it says little, and the kappa gate "
            f"(ragmetrics_min_judge_kappa) does not trust it: label more items ({TRUST_RULE})\n"
        )
    return text


def _threshold_text(result: CalibrationResult) -> str:
    """The threshold row: tuned (on how many items, which seed), fixed, or none."""
    if result.tuning is not None:
        return (
            f"{result.threshold} (best kappa on {result.tuning.n} tuning items, seed "
            f"{result.seed}; figures below are on the other {result.n})"
        )
    # A judge scored as it is: its own threshold, if it has one (in its identity).
    fixed = (result.judge.get("parameters") or {}).get("threshold")
    return "-" if fixed is None else f"{fixed} (fixed)"
