"""Every setting, declared once with its parser: an ini key, its ``--ragmetrics-...`` pytest flag
and, where the ``ragmetrics`` command has it too, that command's flag.

pytest reads this module on every run (``--help`` included), so it imports nothing heavy; the
parsers import what they need when a value is parsed. Paths are only tagged here (input file,
output file, output folder, model): where they are relative to depends on who asks (the
rootdir for an ini value, the current folder for a flag), see
:func:`pytest_ragmetrics.plugin.settings.build_settings`.
"""

from __future__ import annotations

import argparse
import functools
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.metrics.semantics import GAINS, QUERY_SETS
from pytest_ragmetrics.vocabulary import (
    DEFAULT_PLUGIN_METRICS,
    EXECUTOR_KINDS,
    JUDGE_KINDS,
    RETRIEVER_KINDS,
)

Kind = Literal["value", "input", "input-folder", "output", "output-folder", "model", "flag"]
Parser = Callable[[str, str], Any]  # (text, where it was written) -> value


@dataclass(frozen=True)
class Option:
    """One setting: ini key ``name``, pytest flag ``--name-with-dashes``.

    ``parse(text, where)`` turns the text into the value (a ConfigError names ``where``);
    ``ini_type`` is pytest's ``addini`` type; ``cli`` is the ``ragmetrics`` command's flag for
    the same setting, if it has one; ``repeat``: the pytest flag may be given several times,
    each value one item as written (a path may have spaces).
    """

    name: str
    help: str
    default: str | None = None
    parse: Parser | None = None
    kind: Kind = "value"
    ini_type: str = "string"
    metavar: str = "VALUE"
    cli: str | None = None
    repeat: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def ini_default(self) -> Any:
        if self.ini_type == "args":
            return shlex.split(self.default or "")
        return self.default

    def value(self, text: str, where: str | None = None) -> Any:
        """The parsed value of ``text`` (``where`` defaults to the ini key)."""
        return self.parse(text, where or self.name) if self.parse is not None else text


# -- parsers (each imports what it needs only when called) -------------------------------------


def _positive(example: int) -> Parser:
    def parse(text: str, where: str) -> int:
        from pytest_ragmetrics.values import parse_positive_int

        return parse_positive_int(text, where, example)

    return parse


def _count(
    name: str, help: str, example: int, *, default: str | None = None, cli: str | None = None
) -> Option:
    """A setting whose value is a whole number of at least 1 (``N``); ``example`` is the value
    its error message suggests."""
    return Option(name, help, default, parse=_positive(example), metavar="N", cli=cli)


def _alpha(text: str, where: str) -> float:
    from pytest_ragmetrics.values import parse_float

    value = parse_float(text, where)
    if not 0 < value <= 1:  # 0: no p-value is below it, so no regression could ever fail
        raise ConfigError(f"{where}: {text!r} must be a p-value above 0 and at most 1, e.g. 0.05")
    return value


def _between(low: float, high: float) -> Parser:
    def parse(text: str, where: str) -> float:
        from pytest_ragmetrics.values import float_in

        return float_in(text, where, low, high)

    return parse


def _integer(example: int) -> Parser:
    def parse(text: str, where: str) -> int:
        from pytest_ragmetrics.values import parse_int

        return parse_int(text, where, example)

    return parse


def _at_least(low: float) -> Parser:
    def parse(text: str, where: str) -> float:
        from pytest_ragmetrics.values import parse_float

        value = parse_float(text, where)
        if value < low:
            raise ConfigError(f"{where}: {text!r} must be at least {low:g}")
        return value

    return parse


def _seconds(example: float) -> Parser:
    def parse(text: str, where: str) -> float:
        from pytest_ragmetrics.values import parse_float

        value = parse_float(text, where)
        if not value > 0:
            raise ConfigError(f"{where}: {text!r} must be seconds > 0, e.g. {example:g}")
        return value

    return parse


def _kind(kinds: Sequence[str], what: str, otherwise: str) -> Parser:
    """One of ``kinds`` (case-insensitive), or None for 'none' or nothing."""
    listed = " or ".join(kinds) if len(kinds) == 2 else ", ".join(kinds)

    def parse(text: str, where: str) -> str | None:
        value = text.strip().lower()
        if value in ("", "none"):
            return None
        if value not in kinds:
            raise ConfigError(f"{where}: {text!r} is not a {what}; use {listed}, {otherwise}")
        return value

    return parse


def _choice(choices: Sequence[str]) -> Parser:
    def parse(text: str, where: str) -> str:
        if text not in choices:
            raise ConfigError(f"{where}: {text!r} must be one of {', '.join(choices)}")
        return text

    return parse


def _relevance_level(text: str, where: str) -> int:
    from pytest_ragmetrics.values import parse_int

    try:
        level = parse_int(text, where, 1)
    except ConfigError:
        raise ConfigError(f"{where}: {text!r} must be an integer grade, e.g. 1") from None
    if level < 0:
        # A negative grade (TREC's -1) is "pooled but not judged", never relevant (METRICS.md).
        raise ConfigError(
            f"{where}: {text!r}: the relevance level is the lowest grade that counts as "
            "relevant, 0 or more (default 1, like trec_eval's -l); a negative level would "
            "count negative grades (pooled but not judged) as relevant"
        )
    return level


def _metrics(text: str, where: str) -> tuple[str, ...]:
    from pytest_ragmetrics.errors import MetricError
    from pytest_ragmetrics.metrics.names import parse_metrics
    from pytest_ragmetrics.values import split_list

    try:
        return tuple(spec.name for spec in parse_metrics(split_list(text)))
    except MetricError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _tolerances(text: str, where: str) -> Any:
    from pytest_ragmetrics.baseline.tolerances import parse_tolerances
    from pytest_ragmetrics.values import split_list

    return parse_tolerances(split_list(text), where)


def _bool(text: str, where: str) -> bool:
    from pytest_ragmetrics.values import as_bool

    return as_bool(text, where)


def _text(text: str, where: str) -> str:
    return text


OPTIONS: tuple[Option, ...] = (
    Option(
        "ragmetrics_dataset",
        "dataset folder (BEIR, FlagEmbedding, or with a dataset.json), or several, each DIR "
        "or NAME=DIR: scifact=data/scifact cranfield=data/cranfield (ini: separated as in a "
        "shell, or a list, relative to the rootdir; the flag: one folder each time, repeat it "
        "for several; a folder may have spaces)",
        kind="input-folder",
        ini_type="args",
        metavar="[NAME=]DIR",
        cli="--dataset",
        repeat=True,
    ),
    Option(
        "ragmetrics_split",
        "split(s) to evaluate: test (default), test,dev, or per dataset: scifact=test "
        "cranfield=dev,test",
        "test",
        parse=_text,
        metavar="NAME",
        cli="--split",
    ),
    Option(
        "ragmetrics_ignore_identical_ids",
        "drop retrieved documents whose id is the query's id before scoring (BEIR's rule for "
        "corpora that contain their queries): true, false (default), or the names of the "
        "datasets it applies to",
        "false",
        parse=_text,
        metavar="WHICH",
        cli="--ignore-identical-ids",
    ),
    Option(
        "ragmetrics_k",
        "documents retrieved per query by rag_run (default: 100)",
        "100",
        parse=_positive(100),
        metavar="K",
        cli="--k",
    ),
    Option(
        "ragmetrics_metrics",
        "metrics computed and shown (space or comma separated; "
        f"default: {' '.join(DEFAULT_PLUGIN_METRICS)})",
        " ".join(DEFAULT_PLUGIN_METRICS),
        parse=_metrics,
        ini_type="args",
        metavar="NAMES",
        cli="--metric",
    ),
    Option(
        "ragmetrics_judged_rankings",
        "JSONL of judged rankings for the judged_rankings fixture",
        kind="input",
        metavar="FILE",
    ),
    Option(
        "ragmetrics_retriever",
        f"built-in retriever for the default rag_retriever fixture: {' or '.join(RETRIEVER_KINDS)} "
        "(default: none; override rag_retriever in conftest.py)",
        parse=_kind(
            RETRIEVER_KINDS,
            "built-in retriever",
            "or override the rag_retriever fixture in conftest.py",
        ),
        metavar="KIND",
        cli="--retriever",
    ),
    Option(
        "ragmetrics_model",
        "model path or name for the built-in dense retriever "
        "(default: the offline all-MiniLM-L6-v2)",
        kind="model",
        metavar="MODEL",
        cli="--model",
    ),
    Option(
        "ragmetrics_executor",
        "where the built-in dense retriever encodes and searches: local (default) or ray "
        "(the cluster at RAY_ADDRESS, else a local one; needs pytest-ragmetrics[ray])",
        parse=lambda text, where: _choice(EXECUTOR_KINDS)(text.strip().lower(), where),
        metavar="KIND",
    ),
    Option(
        "ragmetrics_judge",
        f"built-in judge for the rag_judge fixture: {', '.join(JUDGE_KINDS)} "
        "(default: none; override rag_judge in conftest.py)",
        parse=_kind(
            JUDGE_KINDS, "built-in judge", "or override the rag_judge fixture in conftest.py"
        ),
        metavar="KIND",
        cli="--judge",
    ),
    Option(
        "ragmetrics_judge_model",
        "the judge's model: a local folder for embedding (default: the offline "
        "all-MiniLM-L6-v2), the served model's name for http (or RAGMETRICS_JUDGE_MODEL)",
        kind="model",
        metavar="MODEL",
        cli="--model",
    ),
    Option(
        "ragmetrics_judge_url",
        "base URL of the OpenAI-compatible server of the http judge (or RAGMETRICS_JUDGE_URL; "
        "the API key is read from RAGMETRICS_JUDGE_API_KEY only)",
        parse=_text,
        metavar="URL",
        cli="--url",
    ),
    _count(
        "ragmetrics_judge_concurrency",
        "http judge: questions in flight at once (default: 1; 4 to 16 suits hosted APIs)",
        8,
        cli="--concurrency",
    ),
    Option(
        "ragmetrics_judge_timeout",
        "http judge: seconds a question may take, retries and the waits between them included "
        "(a deadline; default: 60)",
        parse=_seconds(60),
        metavar="SECONDS",
        cli="--timeout",
    ),
    Option(
        "ragmetrics_judge_attempt_timeout",
        "http judge: seconds one attempt of a question may take before it is abandoned and "
        "retried within the deadline (default: the whole deadline)",
        parse=_seconds(20),
        metavar="SECONDS",
        cli="--attempt-timeout",
    ),
    Option(
        "ragmetrics_judge_prompts",
        "http judge: folder of its prompts, one text file per role: system.txt (system "
        "prompt), support.txt ({claim}, {context}), relevance.txt ({query}, {answer}), "
        "agreement.txt ({answer}, {reference}, optionally {query}), context.txt ({query}, "
        "{passage}) and context_system.txt (the context question's system prompt); a missing "
        "file keeps the built-in prompt; in the question templates a literal brace is written "
        "{{ or }}, the system prompts are sent as written; read and checked at start-up (ini: "
        "relative to the rootdir)",
        kind="input-folder",
        metavar="DIR",
        cli="--prompts",
    ),
    Option(
        "ragmetrics_judge_temperature",
        "http judge: the sampling temperature of its questions (default: 0)",
        parse=_at_least(0.0),
        metavar="T",
        cli="--temperature",
    ),
    Option(
        "ragmetrics_judge_seed",
        "http judge: the seed sent with its questions (default: 0; repeats use seed+1, ...)",
        parse=_integer(0),
        metavar="N",
        cli="--judge-seed",
    ),
    _count(
        "ragmetrics_judge_repeats",
        "embedding and http judges: judge every answer this many times to measure the judge's "
        "noise (http: with seeds seed, seed+1, ...; default: 1)",
        3,
    ),
    Option(
        "ragmetrics_judge_verdicts",
        "JSONL of recorded assessments for the recorded judge",
        kind="input",
        metavar="FILE",
        cli="--verdicts",
    ),
    Option(
        "ragmetrics_judge_budget",
        "stop before the generator and the http judge together use more than this many "
        "tokens in the session, xdist workers included (as their endpoints report them; "
        "default: no limit)",
        parse=_positive(200000),
        metavar="TOKENS",
        cli="--budget",
    ),
    Option(
        "ragmetrics_generator_url",
        "base URL of the OpenAI-compatible server behind the rag_pipeline fixture's generator "
        "(or RAGMETRICS_GENERATOR_URL; the API key is read from RAGMETRICS_GENERATOR_API_KEY)",
        parse=_text,
        metavar="URL",
    ),
    Option(
        "ragmetrics_generator_model",
        "the served model's name for the generator (or RAGMETRICS_GENERATOR_MODEL)",
        parse=_text,
        metavar="MODEL",
    ),
    _count(
        "ragmetrics_generator_concurrency",
        "generator: requests in flight at once (default: 1)",
        8,
    ),
    Option(
        "ragmetrics_generator_timeout",
        "generator: seconds an answer may take, retries and the waits between them included "
        "(a deadline; default: 120)",
        parse=_seconds(120),
        metavar="SECONDS",
    ),
    Option(
        "ragmetrics_generator_attempt_timeout",
        "generator: seconds one attempt of a request may take before it is abandoned and "
        "retried within the deadline (default: the whole deadline)",
        parse=_seconds(30),
        metavar="SECONDS",
    ),
    Option(
        "ragmetrics_generator_prompts",
        "generator: folder of its prompts: system.txt (system prompt) and user.txt (the user "
        "message, with {query} and {contexts}; a literal brace is written {{ or }}); a missing "
        "file keeps the built-in prompt; the system prompt is sent as written; read and checked "
        "at start-up (ini: relative to the rootdir)",
        kind="input-folder",
        metavar="DIR",
    ),
    Option(
        "ragmetrics_generator_temperature",
        "generator: the sampling temperature (default: 0)",
        parse=_at_least(0.0),
        metavar="T",
    ),
    Option(
        "ragmetrics_generator_seed",
        "generator: the seed sent with each request (default: 0)",
        parse=_integer(0),
        metavar="N",
    ),
    _count(
        "ragmetrics_generator_max_tokens",
        "generator: the most tokens an answer may have (default: 128)",
        128,
    ),
    _count(
        "ragmetrics_top_n",
        "contexts the rag_pipeline fixture gives the generator: the retriever's top n (default: 3)",
        3,
        default="3",
    ),
    _count(
        "ragmetrics_context_chars",
        "rag_pipeline: cut each context after this many characters (default: no cut)",
        2000,
    ),
    Option(
        "ragmetrics_answers",
        "JSONL of recorded answers: rag_answers replays it when it exists (no model needed) "
        "and --ragmetrics-record-answers (or RAGMETRICS_RECORD_ANSWERS=1) rewrites it",
        kind="output",
        metavar="FILE",
    ),
    Option(
        "ragmetrics_relevance_level",
        "minimum grade that counts as relevant, 0 or more (default: 1)",
        "1",
        parse=_relevance_level,
        metavar="N",
        cli="--relevance-level",
    ),
    Option(
        "ragmetrics_gain",
        "nDCG gain: linear (trec_eval) or exponential (default: linear)",
        "linear",
        parse=_choice(GAINS),
        metavar="GAIN",
        cli="--gain",
    ),
    Option(
        "ragmetrics_query_set",
        "average over all judged queries (qrels, default) or only those in the run (intersection)",
        "qrels",
        parse=_choice(QUERY_SETS),
        metavar="SET",
        cli="--query-set",
    ),
    Option(
        "ragmetrics_baseline",
        "baseline file (default: .ragmetrics/baseline.json)",
        ".ragmetrics/baseline.json",
        kind="output",
        metavar="FILE",
    ),
    Option(
        "ragmetrics_tolerance",
        "allowed drop before a metric regresses: 0.01 (absolute, "
        "default), 2% (relative), and per-metric overrides like ndcg_at_10=0.005",
        "0.01",
        parse=_tolerances,
        ini_type="args",
        metavar="TOL",
        cli="--tolerance",
    ),
    Option(
        "ragmetrics_alpha",
        "fail a regression only when its randomization-test p-value "
        "is below this too, 0 < P <= 1 (default: off)",
        parse=_alpha,
        metavar="P",
        cli="--alpha",
    ),
    Option(
        "ragmetrics_supplementary_qrels",
        "supplementary qrels from `ragmetrics judge-pool` (judge labels of pooled unjudged "
        "documents): retrieval evaluations on the dataset also report their metrics on human + "
        "these qrels (human judgments win)",
        kind="input",
        metavar="FILE",
        cli="--supplementary-qrels",
    ),
    Option(
        "ragmetrics_unjudged_drops",
        "a metric drop that only newly retrieved unjudged documents explain (its judged-only "
        "form did not drop): fail (default; the message says so and how to judge them) or pass",
        "fail",
        parse=_choice(("fail", "pass")),
        metavar="fail|pass",
        cli="--unjudged-drops",
    ),
    Option(
        "ragmetrics_strict",
        "a missing baseline entry fails the test (for CI)",
        "false",
        parse=_bool,
        kind="flag",
        ini_type="bool",
        cli="--strict",
    ),
    Option(
        "ragmetrics_cache_dir",
        "cache folder for embeddings, runs and verdicts (default: .ragmetrics/cache)",
        ".ragmetrics/cache",
        kind="output-folder",
        metavar="DIR",
        cli="--cache-dir",
    ),
    Option("ragmetrics_json", "write the JSON report here", kind="output", metavar="FILE"),
    Option(
        "ragmetrics_markdown",
        "append the Markdown report here (e.g. $GITHUB_STEP_SUMMARY)",
        kind="output",
        metavar="FILE",
    ),
    Option(
        "ragmetrics_html",
        "write the HTML report here: one self-contained page (open it from a CI artifact)",
        kind="output",
        metavar="FILE",
        cli="--html",
    ),
    _count(
        "ragmetrics_html_worst",
        "queries shown in detail per metric in the HTML report (default: 10)",
        10,
        default="10",
        cli="--worst",
    ),
    Option(
        "ragmetrics_junit_properties",
        "add metric means to JUnit XML properties",
        "false",
        parse=_bool,
        kind="flag",
        ini_type="bool",
    ),
    Option(
        "ragmetrics_min_judge_kappa",
        "ignore answer-layer thresholds and baselines of "
        "judges whose calibrated Cohen's kappa is below this "
        "(or was measured on fewer than 20 labelled items, or fewer than 5 of a class)",
        parse=_between(-1.0, 1.0),
        metavar="KAPPA",
        cli="--min-kappa",
    ),
    Option(
        "ragmetrics_calibration",
        "judge calibration file written by `ragmetrics "
        "calibrate --save` (default: .ragmetrics/calibration.json)",
        ".ragmetrics/calibration.json",
        kind="input",
        metavar="FILE",
        cli="--calibration",
    ),
)
OPTION = {option.name: option for option in OPTIONS}


@dataclass(frozen=True)
class Flag:
    """A command-line flag of pytest without an ini key."""

    name: str
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


FLAGS: tuple[Flag, ...] = (
    Flag("ragmetrics_update_baseline", "write the current numbers into the baseline (bless them)"),
    Flag("ragmetrics_no_cache", "neither read nor write the cache"),
    Flag("ragmetrics_clear_cache", "empty the cache folder first"),
    Flag(
        "ragmetrics_dry_run",
        "count the generator calls rag_answers would make (cached answers excluded) and skip "
        "its tests instead of generating",
    ),
    Flag(
        "ragmetrics_record_answers",
        "generate the answers with the live pipeline and rewrite ragmetrics_answers "
        "(also: RAGMETRICS_RECORD_ANSWERS=1)",
    ),
)
FLAG_UPDATE_BASELINE, FLAG_NO_CACHE, FLAG_CLEAR_CACHE = (f.flag for f in FLAGS[:3])


def configured(getoption: Callable[..., Any], getini: Callable[[str], Any]) -> bool:
    """Whether any ragmetrics ini key or command-line option differs from its default.

    ``getoption``/``getini`` are pytest's ``config.getoption``/``config.getini``.
    """
    if any(getoption(flag.name, default=False) for flag in FLAGS):
        return True
    for option in OPTIONS:
        if getoption(option.name, default=None) is not None:
            return True
        try:
            value = getini(option.name)
        except Exception:  # pytest's UsageError for text its bool type refuses: the settings,
            return True  # read next, name the key
        if option.ini_type == "bool":
            if value:
                return True
        elif option.ini_type == "args":
            if list(value) != option.ini_default:
                return True
        elif value != option.default:
            return True
    return False


# -- the ``ragmetrics`` command -----------------------------------------------------------------


@functools.cache
def cli_type(option: Option) -> Callable[[str], Any] | None:
    """The argparse ``type`` of the ``ragmetrics`` command's flag of ``option``: its parser,
    a refused value becoming argparse's usage error (exit 2) with our message; None when
    the value is kept as written (a path, a name). One function per setting, wherever the
    flag appears."""
    if option.parse is None or option.kind != "value":
        return None
    flag = option.cli or option.flag

    def typed(text: str) -> Any:
        try:
            return option.value(text, flag)
        except ConfigError as exc:  # argparse names the flag itself: "argument --k: ..."
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag}: ")) from None

    return typed
