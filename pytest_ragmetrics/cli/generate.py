"""``ragmetrics generate``: a test set from a corpus (queries, qrels, reference answers, a
``dataset.json`` recording provenance), its filters, and applying a person's review.

Registered by :mod:`pytest_ragmetrics.cli.app` through :func:`add_parser`; raises
:class:`~pytest_ragmetrics.errors.RagMetricsError` for bad input (exit code 2 there).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_ragmetrics.cli.common import (
    Subparsers,
    add_cache_options,
    add_endpoint_options,
    one_split,
)
from pytest_ragmetrics.cli.flags import add
from pytest_ragmetrics.errors import ConfigError

if TYPE_CHECKING:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.testsets.build import FilterSettings
    from pytest_ragmetrics.testsets.model import Candidate, TestSet

GENERATORS = ("offline", "http")
# Options that only one generator reads (the other refuses them).
_GENERATOR_OPTIONS = {
    "offline": (
        "min_words", "max_words", "keyphrase_terms", "sentence_pick", "remove_query",
        "keyphrase_pick", "reinflect", "cut_echo", "echo_overlap",
    ),
    "http": (
        "url", "model", "api_key_env", "timeout", "attempt_timeout", "concurrency", "prompts",
        "temperature", "max_tokens", "no_answers", "max_passage_chars", "budget", "api",
    ),
}  # fmt: skip
_JUDGE_OPTIONS = ("judge_model", "judge_url", "judge_threshold", "judge_verdicts", "calibration")


def add_parser(sub: Subparsers) -> None:
    """The ``generate`` command's parser."""
    p = sub.add_parser(
        "generate",
        help="generate a test set (queries, qrels, reference answers) from a corpus",
        description="Write a dataset folder that ragmetrics_dataset reads as it is: queries made "
        "from the corpus's documents, each document its query's relevant answer (qrels), "
        "reference answers where the generator gives them, review.jsonl for a person, and a "
        "dataset.json recording provenance (generator, prompts, seed, corpus fingerprint, "
        "filters and what each removed). --apply-review rebuilds the folder from a reviewed "
        "review.jsonl. Other top-ranked documents: `ragmetrics retrieve`, then `ragmetrics "
        "pool` and `judge-pool` on the folder.",
    )
    add(p, "--corpus", "corpus.jsonl, or a dataset folder")
    add(p, "--out", "the dataset folder to write", metavar="DIR", required=True)
    add(p, "--queries", "queries to keep")
    add(p, "--candidates", "queries to generate before filtering (default N; more leaves room "
        "for filters)")  # fmt: skip
    add(p, "--seed", "document order and sampling (default 0)")
    add(p, "--generator")
    add(p, "--styles", "offline: sentence,title,keyphrase (default all); http: "
        "fact,paraphrase,multi (default), claim, topic")  # fmt: skip
    add(p, "--split", "the split the qrels are (default test)", metavar="SPLIT", setting=None)
    add(p, "--name", "the dataset's name (default: the folder's)")
    add(p, "--format", "of the summary", choices=("table", "json"))
    add(p, "--dry-run", "count the requests the http generator would send (nothing is sent "
        "or written)")  # fmt: skip
    add_cache_options(p, "reply and verdict cache folder")
    _add_generator_options(p)
    _add_filter_options(p)
    review = p.add_argument_group("review")
    add(review, "--apply-review", "rebuild --out's queries, qrels and answers from this "
        "reviewed file")  # fmt: skip
    add(review, "--accepted-only", "with --apply-review: keep decided rows only")
    p.set_defaults(handler=cmd_generate)


def _add_generator_options(p: argparse.ArgumentParser) -> None:
    off = p.add_argument_group("offline generator")
    add(off, "--min-words", "sentence queries: fewest words (default 6)")
    add(off, "--max-words", "sentence queries: most words (default 40)")
    add(off, "--keyphrase-terms", "keyphrase queries: words (default 4)")
    add(off, "--sentence-pick", "sentence queries: which sentence (default random; conclusion: "
        "the last stating a finding, claim-like; hard: the one the rest of its document repeats "
        "least)")  # fmt: skip
    add(off, "--remove-query", "sentence and title queries: this share (0-1, seeded) are cut "
        "from their document in the folder's own corpus copy (inverse cloze; Lee et al. 2019 "
        "use 0.9)")  # fmt: skip
    add(off, "--cut-echo", "with --remove-query: this share (0-1, seeded) of the cut queries "
        "also cut the sentence of their text that restates them most (default 0)")  # fmt: skip
    add(off, "--echo-overlap", "with --cut-echo: cut that sentence only when it holds this "
        "share (0-1, by idf) of the query's content words (default 0: always)")  # fmt: skip
    add(off, "--keyphrase-pick", "keyphrase queries: rare (default: highest tf-idf) or common "
        "(words in at least 1%% of the documents only)")  # fmt: skip
    add(off, "--reinflect", "this share (0-1, seeded) of each query's content words is put in "
        "another form of its stem that the corpus uses and the query's document does not "
        "(needs PyStemmer; default 0)")  # fmt: skip
    web = p.add_argument_group("http generator")
    add_endpoint_options(web, "RAGMETRICS_GENERATOR", "request", 120, settings=False)
    add(web, "--model", "model name (or RAGMETRICS_GENERATOR_MODEL)", setting=None)
    add(web, "--api", "chat (default: /v1/chat/completions) or completions (/v1/completions, "
        "for a base model without a chat template: each request's prompts are sent as one "
        "text, joined by blank lines)")  # fmt: skip
    add(web, "--prompts", "prompt folder: system.txt, fact.txt, paraphrase.txt, multi.txt, "
        "claim.txt, topic.txt, statement_system.txt, answer.txt, answer_system.txt (a missing "
        "file keeps the built-in prompt)", setting=None)  # fmt: skip
    add(web, "--temperature", "sampling temperature (default 0)", setting=None)
    add(web, "--max-tokens", "tokens per reply (default 64)")
    add(web, "--no-answers", "no reference answers")
    add(web, "--max-passage-chars", "passage cut (default 1500)")
    add(web, "--budget", "stop before this many tokens")


def _add_filter_options(p: argparse.ArgumentParser) -> None:
    f = p.add_argument_group("filters")
    add(f, "--keep-duplicates", "no exact-duplicate filter")
    add(f, "--near-duplicates", "drop queries this close (embedding cosine) to an earlier "
        "one, e.g. 0.95")  # fmt: skip
    add(f, "--embedding-model", "near duplicates: the model")
    add(f, "--leak-words", "drop queries holding their reference answer, or N of its words in "
        "a row (default 5; 0: off)")  # fmt: skip
    add(f, "--answerability-judge", "drop queries whose source passage this relevance judge "
        "finds not relevant (applied only when its calibrated kappa reaches --min-kappa; else "
        "reported)")  # fmt: skip
    add(f, "--judge-model", "embedding: model folder; http: model name")
    add(f, "--judge-url", "http judge: base URL")
    add(f, "--judge-threshold", "embedding judge: cosine threshold")
    add(f, "--judge-verdicts", "recorded judge: verdicts")
    add(f, "--calibration", "calibration file (ragmetrics calibrate)")
    add(f, "--min-kappa", "the kappa gate (default 0.4)", default=0.4)


# -- the command ---------------------------------------------------------------------------


def cmd_generate(args: argparse.Namespace, out: TextIO) -> int:
    """Generate (or, with --apply-review, rebuild) the test set; print a summary."""
    from pytest_ragmetrics.testsets.folder import check_output_folder

    _check_options(args)
    target = Path(args.out)
    if args.apply_review is not None:
        return _apply_review(args, target, out)
    check_output_folder(target, args.corpus)
    from pytest_ragmetrics.fileio import check_writable
    from pytest_ragmetrics.testsets.folder import load_corpus

    # Before any generator call: a folder that refuses the test set would lose it.
    check_writable(target / "manifest.json", what="test-set folder", hint="pass --out DIR")

    corpus = load_corpus(args.corpus)
    count = args.queries
    candidates_wanted = args.candidates or count
    cache = _cache(args)
    if args.generator == "http":
        generator = _http_generator(args, cache)
        if args.dry_run:
            plan = generator.plan(corpus, candidates_wanted)
            out.write(f"dry run: {plan.describe()}; nothing was sent or written\n")
            return 0
        candidates, dropped, cost, identity = _run_http(generator, corpus, candidates_wanted)
    else:
        if args.dry_run:
            out.write("dry run: the offline generator sends no requests; nothing was written\n")
            return 0
        candidates, identity = _run_offline(args, corpus, candidates_wanted)
        dropped, cost = {}, {}
    testset = _filtered(args, corpus, candidates, cache, identity, dropped, cost)
    if not len(testset):
        from pytest_ragmetrics.testsets.model import shortfall

        raise ConfigError(
            f"--corpus {args.corpus}: no query to write, nothing was written: "
            + shortfall(testset.provenance, 0)
        )
    from pytest_ragmetrics.testsets.folder import write_testset

    write_testset(target, corpus, testset, split=one_split(args))
    _summary(args, testset, out)
    return 0


def _check_options(args: argparse.Namespace) -> None:
    from pytest_ragmetrics.values import MAX_CUTOFF

    for name in ("queries", "candidates", "concurrency", "max_tokens", "budget", "min_words",
                 "max_words", "keyphrase_terms", "max_passage_chars"):  # fmt: skip
        value = getattr(args, name)
        if value is not None and not 0 < value <= MAX_CUTOFF:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} must be a positive integer, got {value}")
    if args.apply_review is not None:
        if args.corpus is not None or args.queries is not None:
            raise ConfigError(
                "--apply-review: rebuilds --out from the review; no --corpus or --queries"
            )
        return
    if args.accepted_only:
        raise ConfigError("--accepted-only: only with --apply-review")
    if args.corpus is None or args.queries is None:
        raise ConfigError("--corpus PATH and --queries N are required (or --apply-review FILE)")
    if args.candidates is not None and args.candidates < args.queries:
        raise ConfigError(f"--candidates {args.candidates} is below --queries {args.queries}")
    other = "http" if args.generator == "offline" else "offline"
    for name in _GENERATOR_OPTIONS[other]:
        if getattr(args, name) not in (None, False):
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag}: an option of --generator {other}")
    if args.answerability_judge is None:
        for name in _JUDGE_OPTIONS:
            if getattr(args, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag}: only with --answerability-judge")
    if args.embedding_model is not None and args.near_duplicates is None:
        raise ConfigError("--embedding-model: only with --near-duplicates")
    if args.leak_words < 0:
        raise ConfigError(f"--leak-words must be 0 (off) or positive, got {args.leak_words}")


def _cache(args: argparse.Namespace) -> Cache | None:
    from pytest_ragmetrics.cache import Cache

    return None if args.no_cache else Cache(args.cache_dir)


def _styles(args: argparse.Namespace) -> dict[str, Any]:
    if args.styles is None:
        return {}
    return {"styles": [s.strip() for s in args.styles.split(",") if s.strip()]}


def _run_offline(
    args: argparse.Namespace, corpus: Corpus, count: int
) -> tuple[list[Candidate], dict[str, Any]]:
    from pytest_ragmetrics.progress import progress, stream_reporter, use_reporter
    from pytest_ragmetrics.testsets.offline import OfflineGenerator

    options = {
        name: getattr(args, name)
        for name in _GENERATOR_OPTIONS["offline"]
        if getattr(args, name) is not None
    }
    generator = OfflineGenerator(seed=args.seed, **_styles(args), **options)
    with use_reporter(stream_reporter()), progress("generating queries", count) as advance:
        candidates = generator.generate(corpus, count, advance=advance)
    return candidates, generator.identity()


def _http_generator(args: argparse.Namespace, cache: Cache | None) -> Any:
    from pytest_ragmetrics.testsets.http import TESTSET_ROLES, HttpTestsetGenerator
    from pytest_ragmetrics.transport import Budget, Endpoint

    endpoint = Endpoint.take(
        {
            "url": args.url,
            "model": args.model,
            "api_key_env": args.api_key_env,
            "timeout": args.timeout,
            "attempt_timeout": args.attempt_timeout,
            "concurrency": args.concurrency,
            "api": args.api,
        }
    )
    options: dict[str, Any] = {}
    for name in ("temperature", "max_tokens", "max_passage_chars"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    if args.prompts is not None:
        from pytest_ragmetrics.prompts import read_prompts

        options["prompts"] = read_prompts(
            args.prompts, TESTSET_ROLES, label=f"--prompts {args.prompts}"
        )
    if args.budget is not None:
        options["budget"] = Budget(args.budget, option="--budget")
    return HttpTestsetGenerator(
        endpoint,
        seed=args.seed,
        answers=not args.no_answers,
        cache=cache,
        **_styles(args),
        **options,
    )


def _run_http(
    generator: Any, corpus: Corpus, count: int
) -> tuple[list[Candidate], dict[str, str], dict[str, int], dict[str, Any]]:
    from pytest_ragmetrics.progress import progress, stream_reporter, use_reporter

    with use_reporter(stream_reporter()), progress("generating queries", count) as advance:
        outcome = generator.generate(corpus, count, advance=advance)
    return outcome.candidates, outcome.dropped, outcome.cost.to_dict(), generator.identity()


def _filtered(
    args: argparse.Namespace,
    corpus: Corpus,
    candidates: list[Candidate],
    cache: Cache | None,
    identity: dict[str, Any],
    dropped: dict[str, str],
    cost: dict[str, int],
) -> TestSet:
    from pytest_ragmetrics.progress import progress, stream_reporter, use_reporter
    from pytest_ragmetrics.testsets.build import build_testset

    settings = _filter_settings(args, cache)
    with use_reporter(stream_reporter()), progress("filtering", len(candidates)) as advance:
        return build_testset(
            candidates,
            args.queries,
            corpus,
            settings,
            generator=identity,
            corpus_source=str(args.corpus),
            dropped=dropped,
            cost=cost,
            name=args.name,
            advance=advance,
        )


def _filter_settings(args: argparse.Namespace, cache: Cache | None) -> FilterSettings:
    from pytest_ragmetrics.testsets.build import FilterSettings

    embed, model = None, ""
    if args.near_duplicates is not None:
        from pytest_ragmetrics.judges.embedding import EmbeddingJudge

        embedder = EmbeddingJudge(args.embedding_model)
        embed, model = embedder.embed, embedder.model_name
    judge, kappa = None, None
    if args.answerability_judge is not None:
        judge, kappa = _answerability_judge(args, cache)
    return FilterSettings(
        exact=not args.keep_duplicates,
        near_cosine=args.near_duplicates,
        embed=embed,
        embed_model=model,
        leak_words=args.leak_words or None,
        judge=judge,
        kappa=kappa,
        min_kappa=args.min_kappa,
    )


def _answerability_judge(args: argparse.Namespace, cache: Cache | None) -> tuple[Any, float | None]:
    from pytest_ragmetrics.judges.factory import build_relevance_judge

    options: dict[str, Any] = {}
    if args.answerability_judge == "http":
        options["unparseable"] = "unjudged"  # an off-script reply keeps its query
    judge = build_relevance_judge(
        args.answerability_judge,
        cache=cache,
        threshold=args.judge_threshold,
        model=args.judge_model,
        url=args.judge_url,
        verdicts=args.judge_verdicts,
        **options,
    )
    kappa = None
    if args.calibration is not None:
        from pytest_ragmetrics.judges.calibration.store import trusted_kappa

        if not Path(args.calibration).is_file():
            raise ConfigError(f"--calibration {args.calibration}: no such file")
        kappa = trusted_kappa(args.calibration, judge.identity())
    return judge, kappa


def _apply_review(args: argparse.Namespace, target: Path, out: TextIO) -> int:
    from pytest_ragmetrics.testsets.folder import rebuild_from_review

    testset = rebuild_from_review(
        target, args.apply_review, accepted_only=args.accepted_only, split=one_split(args)
    )
    _summary(args, testset, out)
    return 0


def _summary(args: argparse.Namespace, testset: TestSet, out: TextIO) -> None:
    if args.format == "json":
        out.write(json.dumps(testset.provenance, indent=2, sort_keys=True, ensure_ascii=False))
        out.write("\n")
        return
    out.writelines(line + "\n" for line in testset.summary(str(args.out)))
