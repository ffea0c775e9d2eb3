"""The plugin's ini keys and flags, as plain data: pytest reads them on every run, cheaply.

Parsing and validating the values lives in :mod:`pytest_ragmetrics.settings`, imported only when
a project configures or uses pytest-ragmetrics.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

DEFAULT_METRICS = (
    "ndcg_at_10",
    "recall_at_5",
    "recall_at_100",
    "precision_at_5",
    "mrr_at_10",
    "map_at_100",
)


class IniOption:
    """One setting: ini key ``name``, command-line flag ``--name-with-dashes``."""

    __slots__ = ("default", "help", "metavar", "name", "type")

    def __init__(
        self,
        name: str,
        help: str,
        default: str | None,
        type: str = "string",
        metavar: str = "VALUE",
    ) -> None:
        self.name = name
        self.help = help
        self.default = default
        self.type = type  # pytest addini type
        self.metavar = metavar

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


INI_OPTIONS: tuple[IniOption, ...] = (
    IniOption(
        "ragmetrics_dataset",
        "BEIR or FlagEmbedding dataset folder (ini: relative to the rootdir)",
        None,
        metavar="DIR",
    ),
    IniOption(
        "ragmetrics_split",
        "split of the dataset to evaluate (default: test)",
        "test",
        metavar="NAME",
    ),
    IniOption(
        "ragmetrics_k",
        "documents retrieved per query by rag_run (default: 100)",
        "100",
        metavar="K",
    ),
    IniOption(
        "ragmetrics_metrics",
        "metrics computed and shown (space or comma separated; "
        f"default: {' '.join(DEFAULT_METRICS)})",
        " ".join(DEFAULT_METRICS),
        type="args",
        metavar="NAMES",
    ),
    IniOption(
        "ragmetrics_judged_rankings",
        "JSONL of judged rankings for the judged_rankings fixture",
        None,
        metavar="FILE",
    ),
    IniOption(
        "ragmetrics_retriever",
        "built-in retriever for the default rag_retriever fixture: "
        "dense or bm25 (default: none; override rag_retriever in conftest.py)",
        None,
        metavar="KIND",
    ),
    IniOption(
        "ragmetrics_model",
        "model path or name for the built-in dense retriever "
        "(default: the offline all-MiniLM-L6-v2)",
        None,
        metavar="MODEL",
    ),
    IniOption(
        "ragmetrics_executor",
        "where the built-in dense retriever encodes and searches: local (default) or ray "
        "(the cluster at RAY_ADDRESS, else a local one; needs pytest-ragmetrics[ray])",
        None,
        metavar="KIND",
    ),
    IniOption(
        "ragmetrics_judge",
        "built-in judge for the rag_judge fixture: embedding, http or recorded "
        "(default: none; override rag_judge in conftest.py)",
        None,
        metavar="KIND",
    ),
    IniOption(
        "ragmetrics_judge_model",
        "the judge's model: a local folder for embedding (default: the offline "
        "all-MiniLM-L6-v2), the served model's name for http (or RAGMETRICS_JUDGE_MODEL)",
        None,
        metavar="MODEL",
    ),
    IniOption(
        "ragmetrics_judge_url",
        "base URL of the OpenAI-compatible server of the http judge (or RAGMETRICS_JUDGE_URL; "
        "the API key is read from RAGMETRICS_JUDGE_API_KEY only)",
        None,
        metavar="URL",
    ),
    IniOption(
        "ragmetrics_judge_concurrency",
        "http judge: questions in flight at once (default: 1; 4 to 16 suits hosted APIs)",
        None,
        metavar="N",
    ),
    IniOption(
        "ragmetrics_judge_verdicts",
        "JSONL of recorded assessments for the recorded judge",
        None,
        metavar="FILE",
    ),
    IniOption(
        "ragmetrics_relevance_level",
        "minimum grade that counts as relevant (default: 1)",
        "1",
        metavar="N",
    ),
    IniOption(
        "ragmetrics_gain",
        "nDCG gain: linear (trec_eval) or exponential (default: linear)",
        "linear",
        metavar="GAIN",
    ),
    IniOption(
        "ragmetrics_query_set",
        "average over all judged queries (qrels, default) or only those in the run (intersection)",
        "qrels",
        metavar="SET",
    ),
    IniOption(
        "ragmetrics_baseline",
        "baseline file (default: .ragmetrics/baseline.json)",
        ".ragmetrics/baseline.json",
        metavar="FILE",
    ),
    IniOption(
        "ragmetrics_tolerance",
        "allowed drop before a metric regresses: 0.01 (absolute, "
        "default), 2% (relative), and per-metric overrides like ndcg_at_10=0.005",
        "0.01",
        type="args",
        metavar="TOL",
    ),
    IniOption(
        "ragmetrics_alpha",
        "fail a regression only when its randomization-test p-value "
        "is below this too (default: off)",
        None,
        metavar="P",
    ),
    IniOption(
        "ragmetrics_strict",
        "a missing baseline entry fails the test (for CI)",
        "false",
        type="bool",
    ),
    IniOption(
        "ragmetrics_cache_dir",
        "cache folder for embeddings, runs and verdicts (default: .ragmetrics/cache)",
        ".ragmetrics/cache",
        metavar="DIR",
    ),
    IniOption("ragmetrics_json", "write the JSON report here", None, metavar="FILE"),
    IniOption(
        "ragmetrics_markdown",
        "append the Markdown report here (e.g. $GITHUB_STEP_SUMMARY)",
        None,
        metavar="FILE",
    ),
    IniOption(
        "ragmetrics_junit_properties",
        "add metric means to JUnit XML properties",
        "false",
        type="bool",
    ),
    IniOption(
        "ragmetrics_min_judge_kappa",
        "ignore answer-layer thresholds and baselines of "
        "judges whose calibrated Cohen's kappa is below this",
        None,
        metavar="KAPPA",
    ),
    IniOption(
        "ragmetrics_calibration",
        "judge calibration file written by `ragmetrics "
        "calibrate --save` (default: .ragmetrics/calibration.json)",
        ".ragmetrics/calibration.json",
        metavar="FILE",
    ),
)

#: Flags without an ini key.
FLAG_UPDATE_BASELINE = "--ragmetrics-update-baseline"
FLAG_NO_CACHE = "--ragmetrics-no-cache"
FLAG_CLEAR_CACHE = "--ragmetrics-clear-cache"


def configured(getoption: Callable[..., Any], getini: Callable[[str], Any]) -> bool:
    """Whether any ragmetrics ini key or command-line option differs from its default.

    ``getoption``/``getini`` are pytest's ``config.getoption``/``config.getini``.
    """
    for name in ("ragmetrics_update_baseline", "ragmetrics_no_cache", "ragmetrics_clear_cache"):
        if getoption(name, default=False):
            return True
    for option in INI_OPTIONS:
        if getoption(option.name, default=None) is not None:
            return True
        value = getini(option.name)
        if option.type == "bool":
            if value:
                return True
        elif option.type == "args":
            if list(value) != shlex.split(option.default or ""):
                return True
        elif value != option.default:
            return True
    return False
