"""Plugin settings: each ini key with its ``--ragmetrics-...`` override, validated once."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ragmetrics.errors import ConfigError, MetricError
from pytest_ragmetrics.metrics.names import parse_metrics
from pytest_ragmetrics.metrics.semantics import GAINS, QUERY_SETS, MetricSemantics
from pytest_ragmetrics.options import DEFAULT_METRICS


@dataclass(frozen=True)
class Tolerance:
    """How far a metric may drop: absolute, or relative to the baseline value."""

    value: float
    relative: bool = False

    def allowed_drop(self, baseline: float) -> float:
        return self.value * abs(baseline) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"


@dataclass(frozen=True)
class Tolerances:
    default: Tolerance = Tolerance(0.01)
    per_metric: Mapping[str, Tolerance] = field(default_factory=dict)

    def for_metric(self, metric: str) -> Tolerance:
        return self.per_metric.get(metric, self.default)


def _parse_one_tolerance(text: str, where: str) -> Tolerance:
    raw = text.strip()
    relative = raw.endswith("%")
    number = raw[:-1] if relative else raw
    try:
        value = float(number)
    except ValueError:
        raise ConfigError(
            f"{where}: {text!r} is not a tolerance; write 0.01 (absolute) or 2% (relative)"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: tolerance {text!r} must be a non-negative number")
    return Tolerance(value / 100 if relative else value, relative)


def parse_tolerances(items: Sequence[str], where: str = "ragmetrics_tolerance") -> Tolerances:
    """Parse ``0.01 ndcg_at_10=0.005 recall_at_100=2%``."""
    default = Tolerance(0.01)
    per_metric: dict[str, Tolerance] = {}
    for item in _split_list(items):
        if "=" in item:
            metric, _, value = item.partition("=")
            try:
                name = parse_metrics([metric])[0].name
            except MetricError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            per_metric[name] = _parse_one_tolerance(value, f"{where} ({name})")
        else:
            default = _parse_one_tolerance(item, where)
    return Tolerances(default, per_metric)


def _split_list(items: Sequence[str] | str) -> list[str]:
    if isinstance(items, str):
        items = [items]
    out: list[str] = []
    for item in items:
        out.extend(part for part in re.split(r"[\s,]+", item) if part)
    return out


@dataclass(frozen=True)
class Settings:
    """Validated plugin settings (paths absolute)."""

    rootdir: Path
    dataset: Path | None = None
    split: str = "test"
    k: int = 100
    metrics: tuple[str, ...] = DEFAULT_METRICS
    judged_rankings: Path | None = None
    retriever: str | None = None
    model: str | None = None
    executor: str | None = None
    judge: str | None = None
    judge_model: str | None = None
    judge_url: str | None = None
    judge_verdicts: Path | None = None
    judge_concurrency: int | None = None
    semantics: MetricSemantics = field(default_factory=MetricSemantics)
    baseline: Path = Path(".ragmetrics/baseline.json")
    tolerances: Tolerances = field(default_factory=Tolerances)
    alpha: float | None = None
    strict: bool = False
    update_baseline: bool = False
    cache_dir: Path = Path(".ragmetrics/cache")
    use_cache: bool = True
    clear_cache: bool = False
    json_report: Path | None = None
    markdown_report: Path | None = None
    junit_properties: bool = False
    min_judge_kappa: float | None = None
    calibration: Path = Path(".ragmetrics/calibration.json")

    def display(self, path: Path) -> str:
        """``path`` relative to the project root when inside it (for messages)."""
        try:
            return path.relative_to(self.rootdir).as_posix()
        except ValueError:
            return str(path)


def _resolve_input(value: str, base: Path) -> Path:
    path = Path(os.path.expandvars(os.path.expanduser(value)))
    return path if path.is_absolute() else (base / path).resolve()


def _resolve_output(value: str, base: Path, option: str, rootdir: Path) -> Path:
    """An output path from ``base`` (the rootdir, or where pytest runs for a command-line
    value) that stays inside ``base`` or the project; ``..`` may not lead out of both.

    A file option naming an existing folder (or the cache folder naming a file) is refused
    here, before any test runs, rather than when the session ends.
    """
    path = _output_path(value, base, option, rootdir)
    folder = option == "ragmetrics_cache_dir"
    if path.exists() and path.is_dir() != folder:
        wanted, found = ("a folder", "a file") if folder else ("a file", "a folder")
        raise ConfigError(f"{option}: {value!r} is {found}; give the path of {wanted}")
    return path


def _output_path(value: str, base: Path, option: str, rootdir: Path) -> Path:
    from pytest_ragmetrics.fileio import path_inside

    raw = os.path.expandvars(os.path.expanduser(value))
    try:
        return path_inside(base, raw, option=option)
    except ConfigError:
        if base == rootdir:
            raise
    # e.g. --ragmetrics-json=../report.json run from a subfolder of the project
    resolved, root = (base / raw).resolve(), rootdir.resolve()
    if resolved != root and root not in resolved.parents:
        raise ConfigError(
            f"{option}: {value!r} points outside the project ({root}) and the folder pytest "
            f"runs in ({base}); use a path inside one of them, or an absolute path if you "
            "really mean another place"
        )
    return resolved


def _positive_int(text: str, option: str, example: int) -> int:
    if not text.strip().isdigit() or int(text) <= 0:
        raise ConfigError(f"{option}: {text!r} must be a positive integer, e.g. {example}")
    return int(text)


def _float_in(text: str, option: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{option}: {text!r} is not a number") from None
    if not (low <= value <= high):
        raise ConfigError(f"{option}: {text!r} must be between {low:g} and {high:g}")
    return value


def build_settings(
    get: Callable[[str], tuple[Any, bool]],
    *,
    rootdir: Path,
    invocation_dir: Path,
    flags: Mapping[str, bool],
) -> Settings:
    """Validate raw values; ``get(name)`` returns (value, came_from_command_line).

    Raises ConfigError with the option name and what is allowed.
    """

    def base_for(from_cli: bool) -> Path:
        return invocation_dir if from_cli else rootdir

    def text(name: str) -> tuple[str | None, bool]:
        value, from_cli = get(name)
        if value is None or value == "" or value == []:
            return None, from_cli
        if isinstance(value, list):
            return " ".join(str(v) for v in value), from_cli
        return str(value), from_cli

    values: dict[str, Any] = {"rootdir": rootdir}
    dataset, cli = text("ragmetrics_dataset")
    if dataset:
        values["dataset"] = _resolve_input(dataset, base_for(cli))
    split, _ = text("ragmetrics_split")
    values["split"] = split or "test"
    k_text, _ = text("ragmetrics_k")
    if k_text is not None:
        values["k"] = _positive_int(k_text, "ragmetrics_k", 100)
    metrics_raw, cli = get("ragmetrics_metrics")
    if metrics_raw:
        names = _split_list(metrics_raw)
        try:
            values["metrics"] = tuple(spec.name for spec in parse_metrics(names))
        except MetricError as exc:
            raise ConfigError(f"ragmetrics_metrics: {exc}") from None
    judged, cli = text("ragmetrics_judged_rankings")
    if judged:
        values["judged_rankings"] = _resolve_input(judged, base_for(cli))
    retriever, _ = text("ragmetrics_retriever")
    if retriever and retriever.lower() not in ("none", ""):
        if retriever.lower() not in ("dense", "bm25"):
            raise ConfigError(
                f"ragmetrics_retriever: {retriever!r} is not a built-in retriever; use dense "
                "or bm25, or override the rag_retriever fixture in conftest.py"
            )
        values["retriever"] = retriever.lower()
    model, cli = text("ragmetrics_model")
    values["model"] = _model_value(model, base_for(cli))
    values["executor"] = _executor_value(text("ragmetrics_executor")[0], values.get("retriever"))
    values.update(_judge_settings(text, base_for))
    level_text, _ = text("ragmetrics_relevance_level")
    gain, _ = text("ragmetrics_gain")
    query_set, _ = text("ragmetrics_query_set")
    level = 1
    if level_text is not None:
        try:
            level = int(level_text)
        except ValueError:
            raise ConfigError(
                f"ragmetrics_relevance_level: {level_text!r} must be an integer grade, e.g. 1"
            ) from None
    if gain is not None and gain not in GAINS:
        raise ConfigError(f"ragmetrics_gain: {gain!r} must be one of {', '.join(GAINS)}")
    if query_set is not None and query_set not in QUERY_SETS:
        raise ConfigError(
            f"ragmetrics_query_set: {query_set!r} must be one of {', '.join(QUERY_SETS)}"
        )
    values["semantics"] = MetricSemantics(level, gain or "linear", query_set or "qrels")  # type: ignore[arg-type]
    baseline, cli = text("ragmetrics_baseline")
    values["baseline"] = _resolve_output(
        baseline or ".ragmetrics/baseline.json", base_for(cli), "ragmetrics_baseline", rootdir
    )
    tolerance_raw, _ = get("ragmetrics_tolerance")
    if tolerance_raw:
        values["tolerances"] = parse_tolerances(_split_list(tolerance_raw))
    alpha, _ = text("ragmetrics_alpha")
    if alpha is not None:
        values["alpha"] = _float_in(alpha, "ragmetrics_alpha", 0.0, 1.0)
    strict, _ = get("ragmetrics_strict")
    values["strict"] = _as_bool(strict, "ragmetrics_strict")
    cache_dir, cli = text("ragmetrics_cache_dir")
    values["cache_dir"] = _resolve_output(
        cache_dir or ".ragmetrics/cache", base_for(cli), "ragmetrics_cache_dir", rootdir
    )
    for name, key in (
        ("ragmetrics_json", "json_report"),
        ("ragmetrics_markdown", "markdown_report"),
    ):
        value, cli = text(name)
        if value:
            values[key] = _resolve_output(value, base_for(cli), name, rootdir)
    junit, _ = get("ragmetrics_junit_properties")
    values["junit_properties"] = _as_bool(junit, "ragmetrics_junit_properties")
    kappa, _ = text("ragmetrics_min_judge_kappa")
    if kappa is not None:
        values["min_judge_kappa"] = _float_in(kappa, "ragmetrics_min_judge_kappa", -1.0, 1.0)
    calibration, cli = text("ragmetrics_calibration")
    if calibration:
        values["calibration"] = _resolve_input(calibration, base_for(cli))
    values["update_baseline"] = bool(flags.get("update_baseline"))
    values["use_cache"] = not flags.get("no_cache")
    values["clear_cache"] = bool(flags.get("clear_cache"))
    if flags.get("strict"):
        values["strict"] = True
    return Settings(**values)


JUDGES = ("embedding", "http", "recorded")


def _model_value(value: str | None, base: Path) -> str | None:
    """A model folder relative to ``base`` (rootdir for ini values) made absolute; a model
    name (no such folder) kept as given."""
    if value is None:
        return None
    candidate = _resolve_input(value, base)
    return str(candidate) if candidate.is_dir() else value


def _executor_value(value: str | None, retriever: str | None) -> str | None:
    """ragmetrics_executor: local or ray, and ray only for the built-in dense retriever."""
    from pytest_ragmetrics.executors.base import EXECUTOR_KINDS

    kind = (value or "local").strip().lower()
    if kind not in EXECUTOR_KINDS:
        raise ConfigError(
            f"ragmetrics_executor: {value!r} must be one of {', '.join(EXECUTOR_KINDS)}"
        )
    if kind == "local":
        return None
    if retriever != "dense":
        raise ConfigError(
            f"ragmetrics_executor = {kind} is for the built-in dense retriever "
            "(ragmetrics_retriever = dense); for your own rag_retriever fixture, pass "
            f"executor={kind!r} to DenseRetriever in conftest.py"
        )
    return kind


def _judge_settings(
    text: Callable[[str], tuple[str | None, bool]], base_for: Callable[[bool], Path]
) -> dict[str, Any]:
    """The ragmetrics_judge* keys, checked against each other (a judge gets what it needs)."""
    kind = (text("ragmetrics_judge")[0] or "none").lower()
    model, model_cli = text("ragmetrics_judge_model")
    url, _ = text("ragmetrics_judge_url")
    verdicts, cli = text("ragmetrics_judge_verdicts")
    if kind != "http":  # an http judge's model is a served name
        model = _model_value(model, base_for(model_cli))
    values: dict[str, Any] = {"judge_model": model, "judge_url": url}
    concurrency, _ = text("ragmetrics_judge_concurrency")
    if concurrency is not None:
        values["judge_concurrency"] = _positive_int(concurrency, "ragmetrics_judge_concurrency", 8)
    if verdicts:
        values["judge_verdicts"] = _resolve_input(verdicts, base_for(cli))
    if kind == "none":
        return values
    if kind not in JUDGES:
        raise ConfigError(
            f"ragmetrics_judge: {kind!r} is not a built-in judge; use {', '.join(JUDGES)}, "
            "or override the rag_judge fixture in conftest.py"
        )
    if kind == "recorded" and not verdicts:
        raise ConfigError(
            "ragmetrics_judge = recorded needs ragmetrics_judge_verdicts = path/to/verdicts.jsonl"
        )
    for key, value in (("url", url), ("concurrency", concurrency)):
        if value and kind != "http":
            raise ConfigError(f"ragmetrics_judge_{key} is only used by the http judge, not {kind}")
    values["judge"] = kind
    return values


def _as_bool(value: Any, option: str) -> bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{option}: {value!r} must be true or false")


def settings_from_pytest(config: Any) -> Settings:
    """Settings from a pytest Config: ini keys and their ``--ragmetrics-...`` overrides.

    Ini paths are relative to the ini file's folder (the rootdir), command-line paths to the
    folder pytest was started in.
    """

    def get(name: str) -> tuple[Any, bool]:
        value = config.getoption(name, default=None)
        if value is not None:
            return value, True
        return config.getini(name), False

    inipath = config.inipath
    return build_settings(
        get,
        rootdir=inipath.parent if inipath is not None else config.rootpath,
        invocation_dir=config.invocation_params.dir,
        flags={
            "update_baseline": config.getoption("ragmetrics_update_baseline"),
            "no_cache": config.getoption("ragmetrics_no_cache"),
            "clear_cache": config.getoption("ragmetrics_clear_cache"),
        },
    )
