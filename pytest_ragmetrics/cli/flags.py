"""Every flag of the ``ragmetrics`` command, defined once (:data:`FLAGS`).

A flag whose setting has an ini key takes its parser, metavar and help from
:mod:`pytest_ragmetrics.options` (so a value means the same on the command line as in the
ini file); the others are declared here. A command adds a flag by its spelling with
:func:`add`; what may differ from one command to the next is only what the flag means there
(its help), its metavar, whether it is required, a narrower set of choices, a default, and
which setting a spelling several settings share stands for.

Repeating a flag either accumulates (a list flag: ``--dataset``, ``--split``, ``--run``,
``-m``, ...) or is refused with a usage error naming it; argparse alone would keep the last
value silently (``--split sf=test,dev --split cran=test`` dropped the dev split). ``-m``'s
values are lists as the ini key's are (``-m ndcg_at_10,map``).

An empty or blank value of any flag or argument that takes one is a usage error naming it
(:func:`_given`), as on the plugin's side: ``--out=$VAR`` with ``VAR`` unset must not mean
"the current folder", nor ``--tag ''`` the default tag.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_ragmetrics.options import OPTION, cli_type
from pytest_ragmetrics.transport.endpoint import APIS
from pytest_ragmetrics.values import python_only
from pytest_ragmetrics.vocabulary import JUDGE_KINDS, RETRIEVER_KINDS

# "items": a list flag whose values are themselves lists, split as the ini's (commas, spaces).
Kind = Literal["one", "list", "items", "switch", "positional", "version"]
Parser = argparse.ArgumentParser | argparse._ArgumentGroup | argparse._MutuallyExclusiveGroup
FORMATS = ("table", "json", "markdown", "html")
# add(..., default=SETTING): the setting's own default value; add(..., setting=SETTING) (the
# default): the flag stands for its own setting, if it has one.
SETTING = object()
_ONCE = "_ragmetrics_given"  # the namespace attribute that remembers the one-value flags given


class _Once(argparse.Action):
    """Store a value, refusing a second one: repeating a one-value flag is a usage error."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        given = namespace.__dict__.setdefault(_ONCE, {})
        if self.dest in given:
            raise argparse.ArgumentError(
                self,
                f"given twice ({given[self.dest]!r}, then {values!r}); it takes one value, "
                "give it once",
            )
        given[self.dest] = values
        setattr(namespace, self.dest, values)


@dataclass(frozen=True)
class Flag:
    """One flag: its spellings, how repeating it behaves (``kind``) and how its value is
    read; ``setting`` names the options.py setting it is the command-line form of."""

    spellings: tuple[str, ...]
    help: str = ""
    kind: Kind = "one"
    setting: str | None = None
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    dest: str | None = None
    nargs: str | None = None
    const: Any = None

    def arguments(self) -> dict[str, Any]:
        """add_argument's keywords (before a command's own)."""
        option = OPTION[self.setting] if self.setting else None
        kwargs: dict[str, Any] = {"help": self.help or (option.help if option else "")}
        if self.kind == "switch":
            return {**kwargs, "action": "store_true", "default": self.default or False}
        if self.kind == "version":
            from pytest_ragmetrics._version import __version__

            return {**kwargs, "action": "version", "version": f"%(prog)s {__version__}"}
        # A flag with choices shows them ({dense,bm25}), not the setting's metavar.
        kwargs["metavar"] = self.metavar or (
            option.metavar if option and not self.choices else None
        )
        kwargs["default"] = self.default
        actions = {"one": _Once, "list": "append", "items": "extend"}
        if self.kind in actions:
            kwargs["action"] = actions[self.kind]
        # A one-value flag reads its value with the setting's parser (a refused value is a
        # usage error); a list flag's values are read together by the command, which names
        # the flag in its error. An integer flag checks its range in the command (one line).
        own = option is not None and not self.choices and self.kind == "one"
        parse = _ascii(self.type) if self.type else (cli_type(option) if own and option else None)
        if self.kind == "items":
            parse = _items
        parse = _given(parse, self.spellings[-1] if self.kind != "positional" else None)
        extra = {"type": parse, "choices": self.choices, "dest": self.dest, "nargs": self.nargs}
        extra["const"] = self.const
        return {**kwargs, **{k: v for k, v in extra.items() if v is not None}}


def _ascii_number(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """``kind`` (int, float) refusing what only Python reads as a number (``1_000``, digits
    outside ASCII), as options.py's parsers and the data readers do: a usage error."""

    def parse(text: str) -> Any:
        if python_only(text):
            raise ValueError(text)
        return kind(text)

    parse.__name__ = getattr(kind, "__name__", "number")  # "invalid int value: '1_000'"
    return parse


_ASCII: dict[Any, Callable[[str], Any]] = {int: _ascii_number(int), float: _ascii_number(float)}


def _ascii(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """A flag's ``type``: int and float read ASCII numbers only (one parser each)."""
    return _ASCII.get(kind, kind)


@functools.cache  # one function per flag: a spelling reads values alike in every command
def _given(parse: Callable[[str], Any] | None, flag: str | None) -> Callable[[str], Any]:
    """``parse`` (None: the text as written) refusing an empty or blank value with a usage
    error: ``--out=$VAR`` with ``VAR`` unset, which would else mean a default, or the
    current folder. ``flag``: the option's spelling, None for a positional argument."""

    def given(text: str) -> Any:
        if not text.strip():
            example = f", as in {flag}=$VAR" if flag else ""
            raise argparse.ArgumentTypeError(
                f"the value is empty (an unset variable{example}?); give a value"
            )
        return text if parse is None else parse(text)

    given.__name__ = getattr(parse, "__name__", "value")  # argparse's "invalid int value"
    return given


def _items(text: str) -> list[str]:
    """The items of a list value, split as the ini's lists are: ``ndcg_at_10,map``."""
    from pytest_ragmetrics.values import split_list

    items = split_list(text)
    if not items:
        raise argparse.ArgumentTypeError(
            f"{text!r} names nothing; give names separated by commas, e.g. ndcg_at_10,map"
        )
    return items


def _run_tag(text: str) -> str:
    """A TREC run tag: one column, so no whitespace (a space would make it two)."""
    if any(c.isspace() for c in text):
        joined = "_".join(text.split())
        raise argparse.ArgumentTypeError(
            f"{text!r} holds whitespace, which a TREC run's tag column cannot; write {joined!r}"
        )
    return text


def _setting(name: str, kind: Kind = "one", **fields: Any) -> Flag:
    """The flag of setting ``name``, spelled as options.py says."""
    cli = OPTION[name].cli
    assert cli is not None, name
    spellings = ("-m", cli) if name == "ragmetrics_metrics" else (cli,)
    return Flag(spellings, kind=kind, setting=name, **fields)


def _flag(spelling: str, kind: Kind = "one", **fields: Any) -> Flag:
    return Flag((spelling,), kind=kind, **fields)


_QRELS = "TREC qrels or BEIR qrels TSV (.gz ok)"
FLAGS: dict[str, Flag] = {
    "--version": _flag("--version", "version", help="print the version and exit"),
    # -- judgments, runs, metrics ---------------------------------------------------------------
    "--qrels": _flag("--qrels", help=_QRELS, metavar="QRELS"),
    "--dataset": _setting("ragmetrics_dataset", "list", metavar="[NAME=]DIR"),
    "--split": _setting("ragmetrics_split", "list", metavar="SPLITS"),
    "--run": _flag("--run", "list", metavar="RUN"),
    "--metric": _setting("ragmetrics_metrics", "items", metavar="NAME", dest="metrics"),
    "--relevance-level": _setting("ragmetrics_relevance_level"),
    "--gain": _setting("ragmetrics_gain"),
    "--query-set": _setting("ragmetrics_query_set"),
    "--ignore-identical-ids": _setting("ragmetrics_ignore_identical_ids", "switch"),
    "--judged-docs-only": Flag(("-J", "--judged-docs-only"), kind="switch"),
    "--supplementary-qrels": _setting("ragmetrics_supplementary_qrels"),
    "--per-query": _flag("--per-query", "switch"),
    # -- what a command writes ------------------------------------------------------------------
    "--format": _flag("--format", choices=FORMATS, default="table"),
    "--out": _flag("--out"),
    "--html": _setting("ragmetrics_html", metavar="OUT.html"),
    "--worst": _setting("ragmetrics_html_worst", type=int),
    "--cache-dir": _setting("ragmetrics_cache_dir", default=OPTION["ragmetrics_cache_dir"].default),
    "--no-cache": _flag("--no-cache", "switch", help="neither read nor write the cache"),
    "--save": _flag("--save", metavar="PATH"),
    # -- compare ----------------------------------------------------------------------------------
    "inputs": Flag(("inputs",), kind="positional", nargs="+", metavar="INPUT"),
    "--evaluation": _flag("--evaluation", "list", metavar="NAME"),
    "--most-changed": _flag("--most-changed", type=int, metavar="N"),
    # Repeatable, all values parsed together by the setting's parser.
    "--tolerance": _setting("ragmetrics_tolerance", "list"),
    "--alpha": _setting("ragmetrics_alpha"),
    "--unjudged-drops": _setting("ragmetrics_unjudged_drops"),
    "--strict": _setting("ragmetrics_strict", "switch"),
    # -- report -----------------------------------------------------------------------------------
    "report": Flag(("report",), kind="positional", metavar="REPORT.json"),
    # -- retrieve ---------------------------------------------------------------------------------
    "--retriever": _setting("ragmetrics_retriever", choices=RETRIEVER_KINDS),
    "--model": _setting("ragmetrics_model", metavar="MODEL"),
    "--k": _setting("ragmetrics_k", type=int),
    "--tag": _flag("--tag", type=_run_tag),
    "--batch-size": _flag("--batch-size", type=int, metavar="N"),
    "--max-seq-length": _flag("--max-seq-length", type=int, metavar="N"),
    "--query-prefix": _flag("--query-prefix", metavar="TEXT"),
    "--passage-prefix": _flag("--passage-prefix", metavar="TEXT"),
    "--index": _flag("--index", choices=("flat", "ivf", "hnsw")),
    "--device": _flag("--device"),
    "--devices": _flag("--devices"),
    # Not a str const: argparse would pass it to the empty-value check.
    "--ray": _flag("--ray", nargs="?", const=True, metavar="ADDRESS"),
    "--actors": _flag("--actors", type=int, metavar="N"),
    "--gpus-per-actor": _flag("--gpus-per-actor", type=float, metavar="G"),
    # -- judges (calibrate, judge-pool) -----------------------------------------------------------
    "--judge": _setting("ragmetrics_judge", choices=JUDGE_KINDS),
    "--threshold": _flag("--threshold", type=float, metavar="T"),
    "--url": _setting("ragmetrics_judge_url"),
    "--api-key-env": _flag("--api-key-env", metavar="VAR"),
    "--api": _flag("--api", choices=APIS),
    "--timeout": _setting("ragmetrics_judge_timeout"),
    "--attempt-timeout": _setting("ragmetrics_judge_attempt_timeout"),
    "--concurrency": _setting("ragmetrics_judge_concurrency", type=int),
    "--prompts": _setting("ragmetrics_judge_prompts"),
    "--temperature": _setting("ragmetrics_judge_temperature"),
    "--judge-seed": _setting("ragmetrics_judge_seed"),
    "--verdicts": _setting("ragmetrics_judge_verdicts", metavar="FILE.jsonl"),
    # -- calibrate --------------------------------------------------------------------------------
    "--question": _flag(
        "--question", choices=("support", "answer-relevance", "agreement", "relevance")
    ),
    "--labels": _flag("--labels", metavar="FILE.jsonl"),
    "--negatives": _flag("--negatives", type=int, metavar="N"),
    "--top": _flag("--top", type=int, metavar="N"),
    "--max-chars": _flag("--max-chars", type=int, metavar="C"),
    "--limit": _flag("--limit", type=int, metavar="N"),
    "--seed": _flag("--seed", type=int, default=0, metavar="N"),
    # -- pool, judge-pool -------------------------------------------------------------------------
    "--depth": _flag("--depth", type=int, default=10, metavar="N"),
    "--pool": _flag("--pool", metavar="POOL.jsonl"),
    "--qrels-out": _flag("--qrels-out", metavar="FILE"),
    "--rejudge": _flag("--rejudge", "switch"),
    # -- generate ---------------------------------------------------------------------------------
    "--corpus": _flag("--corpus", metavar="PATH"),
    "--queries": _flag("--queries", type=int, metavar="N"),
    "--candidates": _flag("--candidates", type=int, metavar="M"),
    "--generator": _flag("--generator", choices=("offline", "http"), default="offline"),
    "--styles": _flag("--styles", metavar="A,B"),
    "--name": _flag("--name"),
    "--dry-run": _flag("--dry-run", "switch"),
    "--min-words": _flag("--min-words", type=int, metavar="N"),
    "--max-words": _flag("--max-words", type=int, metavar="N"),
    "--keyphrase-terms": _flag("--keyphrase-terms", type=int, metavar="N"),
    "--sentence-pick": _flag(
        "--sentence-pick", choices=("random", "first", "last", "conclusion", "hard")
    ),
    "--remove-query": _flag("--remove-query", type=float, metavar="P"),
    "--reinflect": _flag("--reinflect", type=float, metavar="R"),
    "--cut-echo": _flag("--cut-echo", type=float, metavar="E"),
    "--echo-overlap": _flag("--echo-overlap", type=float, metavar="T"),
    "--keyphrase-pick": _flag("--keyphrase-pick", choices=("rare", "common")),
    "--max-tokens": _flag("--max-tokens", type=int, metavar="N"),
    "--no-answers": _flag("--no-answers", "switch"),
    "--max-passage-chars": _flag("--max-passage-chars", type=int, metavar="N"),
    "--budget": _setting("ragmetrics_judge_budget"),
    "--keep-duplicates": _flag("--keep-duplicates", "switch"),
    "--near-duplicates": _flag("--near-duplicates", type=float, metavar="COSINE"),
    "--embedding-model": _flag("--embedding-model", metavar="DIR"),
    "--leak-words": _flag("--leak-words", type=int, default=5, metavar="N"),
    "--answerability-judge": _flag("--answerability-judge", choices=JUDGE_KINDS),
    "--judge-model": _flag("--judge-model", metavar="MODEL"),
    "--judge-url": _flag("--judge-url", metavar="URL"),
    "--judge-threshold": _flag("--judge-threshold", type=float, metavar="COSINE"),
    "--judge-verdicts": _flag("--judge-verdicts", metavar="FILE.jsonl"),
    "--calibration": _setting("ragmetrics_calibration"),
    "--min-kappa": _setting("ragmetrics_min_judge_kappa"),
    "--apply-review": _flag("--apply-review", metavar="REVIEW.jsonl"),
    "--accepted-only": _flag("--accepted-only", "switch"),
}


def add(
    parser: Parser,
    name: str,
    help: str | None = None,
    *,
    metavar: str | None = None,
    required: bool = False,
    choices: Sequence[str] | None = None,
    default: Any = None,
    setting: str | object | None = SETTING,
) -> argparse.Action:
    """Add flag ``name`` (a spelling in :data:`FLAGS`) to ``parser``; ``help`` says what it
    means for this command (else the flag's own help).

    ``setting`` says which setting the flag is here when its spelling serves several
    (``--model``: the retriever's in ``retrieve``, the judge's in ``calibrate``; they read
    values alike), or None where it is no setting's (``generate --url``: the test-set
    generator's server). The action records its flag and setting (``action.flag``,
    ``action.setting``) for the tests and the reference pages."""
    flag = FLAGS[name]
    kwargs = flag.arguments()
    if help is not None:
        kwargs["help"] = help
    if metavar is not None:
        kwargs["metavar"] = metavar
    if choices is not None:
        assert flag.choices is not None and set(choices) <= set(flag.choices), name
        kwargs["choices"] = tuple(choices)
    if default is SETTING:
        kwargs["default"] = setting_default(name)
    elif default is not None:
        kwargs["default"] = default
    if required:
        kwargs["required"] = True
    action = parser.add_argument(*flag.spellings, **kwargs)
    action.flag = flag  # type: ignore[attr-defined]
    action.setting = _setting_of(flag, setting)  # type: ignore[attr-defined]
    return action


def _setting_of(flag: Flag, setting: str | object | None) -> str | None:
    """The setting a flag stands for where it is added (see :func:`add`)."""
    if setting is SETTING:
        return flag.setting
    if setting is None:
        return None
    assert isinstance(setting, str) and flag.setting is not None, setting
    option = OPTION[setting]
    assert option.cli in flag.spellings and option.parse is OPTION[flag.setting].parse, setting
    return setting


def setting_help(name: str) -> str:
    """The help of the setting flag ``name`` stands for (options.py's)."""
    setting = FLAGS[name].setting
    assert setting is not None, name
    return OPTION[setting].help


def setting_default(name: str) -> Any:
    """The default value of the setting flag ``name`` stands for (options.py's)."""
    setting = FLAGS[name].setting
    assert setting is not None, name
    option = OPTION[setting]
    return option.value(option.default or "")


def given(args: argparse.Namespace, name: str) -> bool:
    """Whether option ``name`` (its dest) was given: not None, not an unset switch."""
    return getattr(args, name) not in (None, False, [])
