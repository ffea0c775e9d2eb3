"""Plugin settings: each option's value parsed once (``options.py`` declares them), paths made
absolute, and the settings checked against each other at start-up."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_ragmetrics.baseline.tolerances import Tolerances
from pytest_ragmetrics.cache import inside_cache_entries
from pytest_ragmetrics.data.selection import (
    DatasetSelection,
    parse_named_paths,
    parse_splits,
    select_datasets,
)
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.fileio import is_within, same_file
from pytest_ragmetrics.metrics.semantics import MetricSemantics
from pytest_ragmetrics.options import OPTION, OPTIONS, Option
from pytest_ragmetrics.values import as_bool
from pytest_ragmetrics.vocabulary import DEFAULT_PLUGIN_METRICS

if TYPE_CHECKING:
    from pytest_ragmetrics.outputs import OutputKind


@dataclass(frozen=True)
class Settings:
    """Validated plugin settings (paths absolute)."""

    rootdir: Path
    dataset: Path | None = None  # the first dataset's folder (the only one, usually)
    split: str = "test"
    # Every (dataset, split) pair of the session; one pair unless several were configured.
    datasets: tuple[DatasetSelection, ...] = ()
    k: int = 100
    metrics: tuple[str, ...] = DEFAULT_PLUGIN_METRICS
    judged_rankings: Path | None = None
    retriever: str | None = None
    model: str | None = None
    executor: str | None = None
    judge: str | None = None
    judge_model: str | None = None
    judge_url: str | None = None
    judge_verdicts: Path | None = None
    judge_concurrency: int | None = None
    judge_timeout: float | None = None
    judge_attempt_timeout: float | None = None
    judge_prompts: Path | None = None
    # The prompts read from judge_prompts at start-up: role name -> text (prompts.JUDGE_ROLES).
    judge_prompt_texts: Mapping[str, str] = field(default_factory=dict)
    judge_temperature: float | None = None
    judge_seed: int | None = None
    judge_repeats: int | None = None
    semantics: MetricSemantics = field(default_factory=MetricSemantics)
    baseline: Path = Path(".ragmetrics/baseline.json")
    tolerances: Tolerances = field(default_factory=Tolerances)
    alpha: float | None = None
    unjudged_drops: str = "fail"
    supplementary_qrels: Path | None = None
    strict: bool = False
    update_baseline: bool = False
    cache_dir: Path = Path(".ragmetrics/cache")
    use_cache: bool = True
    clear_cache: bool = False
    json_report: Path | None = None
    markdown_report: Path | None = None
    html_report: Path | None = None
    html_worst: int = 10
    junit_properties: bool = False
    min_judge_kappa: float | None = None
    calibration: Path = Path(".ragmetrics/calibration.json")
    judge_budget: int | None = None
    generator_url: str | None = None
    generator_model: str | None = None
    generator_concurrency: int | None = None
    generator_timeout: float | None = None
    generator_attempt_timeout: float | None = None
    generator_prompts: Path | None = None
    # The prompts read from generator_prompts: role name -> text (prompts.GENERATOR_ROLES).
    generator_prompt_texts: Mapping[str, str] = field(default_factory=dict)
    generator_temperature: float | None = None
    generator_seed: int | None = None
    generator_max_tokens: int | None = None
    top_n: int = 3
    context_chars: int | None = None
    answers: Path | None = None
    dry_run: bool = False
    record_answers: bool = False

    def __post_init__(self) -> None:
        if not self.datasets and self.dataset is not None:
            single = DatasetSelection(self.dataset.name, self.dataset, self.split)
            object.__setattr__(self, "datasets", (single,))

    @property
    def several_datasets(self) -> bool:
        """Whether tests that use a dataset run once per (dataset, split) pair."""
        return len(self.datasets) > 1

    def display(self, path: Path) -> str:
        """``path`` relative to the project root when inside it (for messages)."""
        try:
            return path.relative_to(self.rootdir).as_posix()
        except ValueError:
            return str(path)


# The ragmetrics_judge_* settings only the http judge reads.
HTTP_JUDGE_SETTINGS = (
    "url", "concurrency", "timeout", "attempt_timeout", "prompts", "temperature", "seed"
)  # fmt: skip
# Settings fields whose name is not the option's without its "ragmetrics_" prefix.
_FIELD = {
    "ragmetrics_tolerance": "tolerances",
    "ragmetrics_json": "json_report",
    "ragmetrics_markdown": "markdown_report",
    "ragmetrics_html": "html_report",
}
# What each output the plugin writes over an existing file is (outputs.py): the kind it
# may replace.
_WRITES: dict[str, OutputKind] = {
    "ragmetrics_json": "report",
    "ragmetrics_markdown": "markdown",
    "ragmetrics_html": "html",
    "ragmetrics_answers": "answers",
}
_SEMANTICS = ("ragmetrics_relevance_level", "ragmetrics_gain", "ragmetrics_query_set")
# Read together by _datasets, not one by one.
_DATASET_OPTIONS = ("ragmetrics_dataset", "ragmetrics_split", "ragmetrics_ignore_identical_ids")


def build_settings(
    get: Callable[[str], tuple[Any, bool]],
    *,
    rootdir: Path,
    invocation_dir: Path,
    flags: Mapping[str, bool],
) -> Settings:
    """Validate raw values; ``get(name)`` returns (value, came_from_command_line).

    Ini paths are relative to ``rootdir``, command-line ones to ``invocation_dir``. Raises
    ConfigError with the option name and what is allowed.
    """
    values: dict[str, Any] = {"rootdir": rootdir}
    semantics: dict[str, Any] = {}
    values.update(_datasets(get, rootdir, invocation_dir))
    for option in OPTIONS:
        if option.name in _DATASET_OPTIONS:
            continue
        raw, from_cli = get(option.name)
        if option.kind == "flag":
            values[option.name.removeprefix("ragmetrics_")] = as_bool(raw, option.name)
            continue
        text = _as_text(raw)
        if text is None:
            continue
        base = invocation_dir if from_cli else rootdir
        value = _read(option, text, base, rootdir)
        if option.name in _SEMANTICS:
            semantics[option.name.removeprefix("ragmetrics_")] = value
        elif value is not None:
            values[_FIELD.get(option.name, option.name.removeprefix("ragmetrics_"))] = value
    values["semantics"] = MetricSemantics(**semantics)
    _check_executor(values)
    _check_judge(values, get)
    _read_prompt_folders(values, rootdir)
    values["update_baseline"] = bool(flags.get("update_baseline"))
    values["use_cache"] = not flags.get("no_cache")
    values["clear_cache"] = bool(flags.get("clear_cache"))
    values["dry_run"] = bool(flags.get("dry_run"))
    values["record_answers"] = bool(flags.get("record_answers")) or (
        os.environ.get("RAGMETRICS_RECORD_ANSWERS", "").strip().lower() in ("1", "true", "yes")
    )
    if flags.get("strict"):
        values["strict"] = True
    settings = Settings(**values)
    check_paths_apart(settings)
    _check_dataset_files(settings)
    if settings.supplementary_qrels is not None and settings.several_datasets:
        raise ConfigError(
            "ragmetrics_supplementary_qrels: several datasets are configured and the labels "
            "do not say which one they belong to; use them with one dataset"
        )
    return settings


def _check_dataset_files(settings: Settings) -> None:
    """A missing dataset folder, split or file stops pytest at start-up, naming the path,
    before any test (or retriever) runs. Nothing is read but a dataset.json."""
    if not settings.datasets:
        return
    from pytest_ragmetrics.data.layouts import check_dataset_files
    from pytest_ragmetrics.errors import DataFormatError

    for pair in settings.datasets:
        try:
            check_dataset_files(pair.path, pair.split)
        except DataFormatError as exc:
            raise ConfigError(f"ragmetrics_dataset: {exc}") from None


def _datasets(
    get: Callable[[str], tuple[Any, bool]], rootdir: Path, invocation_dir: Path
) -> dict[str, Any]:
    """The dataset folders, their splits and where identical ids are dropped."""
    raw, from_cli = get("ragmetrics_dataset")
    # A list (pytest's args ini type, the repeated flag) item by item, as written: a folder
    # may have spaces; a text (from build_settings' other callers) split at white space.
    items = [str(v) for v in raw] if isinstance(raw, list) else (_as_text(raw) or "").split()
    split_text = _as_text(get("ragmetrics_split")[0]) or "test"
    if not items:
        return {"split": split_text}
    base = invocation_dir if from_cli else rootdir
    named = parse_named_paths(items, "ragmetrics_dataset")
    folders = [(name, _resolve_input(path, base, "ragmetrics_dataset")) for name, path in named]
    for (_, written), (_, folder) in zip(named, folders, strict=True):
        if from_cli and len(written.split()) > 1 and not folder.exists():
            raise ConfigError(
                f"--ragmetrics-dataset: no folder {written!r}; each value names one folder "
                "(spaces are part of its name): give several datasets as several "
                "--ragmetrics-dataset flags"
            )
    names = [name for name, _ in folders]
    splits = parse_splits(split_text, names, "ragmetrics_split")
    ignore = _ignore_identical_ids(get("ragmetrics_ignore_identical_ids")[0], names)
    selected = select_datasets(folders, splits, lambda name: name in ignore)
    first = selected[0]
    return {"dataset": first.path, "split": first.split, "datasets": selected}


def _ignore_identical_ids(raw: Any, names: list[str]) -> set[str]:
    """The datasets ``ragmetrics_ignore_identical_ids`` applies to."""
    text = (_as_text(raw) or "false").strip()
    try:
        return set(names) if as_bool(text, "ragmetrics_ignore_identical_ids") else set()
    except ConfigError:
        chosen = text.replace(",", " ").split()
        unknown = [name for name in chosen if name not in names]
        if unknown:
            raise ConfigError(
                f"ragmetrics_ignore_identical_ids: {', '.join(unknown)} is not a configured "
                f"dataset; write true, false or some of {', '.join(names)}"
            ) from None
        return set(chosen)


def _as_text(value: Any) -> str | None:
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value)


def _read(option: Option, text: str, base: Path, rootdir: Path) -> Any:
    if option.kind in ("input", "input-folder"):
        return _resolve_input(text, base, option.name)
    if option.kind in ("output", "output-folder"):
        return _resolve_output(text, base, option.name, rootdir)
    if option.kind == "model":
        return _model_value(text, base, option.name)
    return option.value(text)


def _check_executor(values: dict[str, Any]) -> None:
    """ragmetrics_executor: ray only for the built-in dense retriever; local is the default."""
    kind = values.get("executor")
    if kind in (None, "local"):
        values["executor"] = None
    elif values.get("retriever") != "dense":
        raise ConfigError(
            f"ragmetrics_executor = {kind} is for the built-in dense retriever "
            "(ragmetrics_retriever = dense); for your own rag_retriever fixture, pass "
            f"executor={kind!r} to DenseRetriever in conftest.py"
        )


def _check_judge(values: dict[str, Any], get: Callable[[str], tuple[Any, bool]]) -> None:
    """The ragmetrics_judge* settings against each other: a judge gets what it needs."""
    kind = values.get("judge")
    if kind == "http":  # an http judge's model is a served name, never a folder
        values["judge_model"] = _as_text(get("ragmetrics_judge_model")[0])
    if kind is None:
        return
    if kind == "recorded" and not values.get("judge_verdicts"):
        raise ConfigError(
            "ragmetrics_judge = recorded needs ragmetrics_judge_verdicts = path/to/verdicts.jsonl"
        )
    for key in HTTP_JUDGE_SETTINGS:
        if values.get(f"judge_{key}") is not None and kind != "http":
            raise ConfigError(f"ragmetrics_judge_{key} is only used by the http judge, not {kind}")
    if values.get("judge_repeats") is not None and kind not in ("embedding", "http"):
        raise ConfigError(
            f"ragmetrics_judge_repeats is only used by the embedding and http judges, not {kind}"
        )


def _read_prompt_folders(values: dict[str, Any], rootdir: Path) -> None:
    """Read and check the prompt folders now, so that a bad template stops pytest before any
    test runs, naming the file (and line)."""
    from pytest_ragmetrics.prompts import GENERATOR_ROLES, JUDGE_ROLES, read_prompts

    for who, roles in (("generator", GENERATOR_ROLES), ("judge", JUDGE_ROLES)):
        folder = values.get(f"{who}_prompts")
        if folder is None:
            continue
        try:
            label = folder.relative_to(rootdir).as_posix()
        except ValueError:
            label = str(folder)
        try:
            values[f"{who}_prompt_texts"] = read_prompts(folder, roles, label=label)
        except ConfigError as exc:
            raise ConfigError(f"ragmetrics_{who}_prompts: {exc}") from None


def _resolve_input(value: str, base: Path, option: str) -> Path:
    path = Path(os.path.expandvars(os.path.expanduser(value)))
    if path.is_absolute():
        return path
    return _resolved(base / path, value, option)


def _resolved(path: Path, value: str, option: str) -> Path:
    """``path.resolve()``, with a symlink loop or an unreadable folder as a ConfigError."""
    try:
        return path.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop before Python 3.13
        raise ConfigError(f"{option}: cannot resolve {value!r} ({exc})") from None


def _resolve_output(value: str, base: Path, option: str, rootdir: Path) -> Path:
    """An output path from ``base`` (the rootdir, or where pytest runs for a command-line
    value) that stays inside ``base`` or the project; ``..`` may not lead out of both.

    A file option naming an existing folder (or the cache folder naming a file) is refused
    here, before any test runs, rather than when the session ends.
    """
    path = _output_path(value, base, option, rootdir)
    folder = option == "ragmetrics_cache_dir"
    try:
        os.stat(path)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a symlink loop, a component that is a file, no permission
        raise ConfigError(f"{option}: cannot use {value!r} ({exc.strerror or exc})") from None
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
    from pytest_ragmetrics.fileio import is_stream

    resolved = Path(os.path.normpath(base / raw))
    root = Path(os.path.abspath(rootdir))
    inside = resolved == root or root in resolved.parents
    if not inside or not (is_within(resolved, root) or is_stream(resolved)):
        raise ConfigError(
            f"{option}: {value!r} points outside the project ({root}) and the folder pytest "
            f"runs in ({base}); use a path inside one of them, or an absolute path if you "
            "really mean another place"
        )
    return resolved


def _model_value(value: str | None, base: Path, option: str) -> str | None:
    """A model folder relative to ``base`` (rootdir for ini values) made absolute; a model
    name (no such folder) kept as given."""
    if value is None:
        return None
    candidate = _resolve_input(value, base, option)
    return str(candidate) if candidate.is_dir() else value


def check_paths_apart(settings: Settings) -> None:
    """Refuse outputs that would overwrite something else the plugin owns or reads.

    The outputs (the baseline, the reports) are distinct files, the reports replace only a
    file of their own kind (``outputs.py``: never a baseline, qrels, labels), none is a file the
    plugin reads (judged rankings, recorded verdicts, the calibration file), lies in a folder
    it reads (the dataset, a model) or among the cache's entries or the dataset digests; the
    cache folder is neither the project folder (or above it) nor overlaps a folder read. Which
    option is which comes from its kind in ``options.py``. See RELIABILITY.md ("Paths").
    """
    paths = _Paths(settings)
    paths.check_cache()
    for i, (option, path) in enumerate(paths.outputs):
        paths.check_output(option, path, paths.outputs[:i])
    for option, path in paths.outputs:  # after: two outputs of one file say so first
        paths.check_kind(option, path)


class _Paths:
    """The settings' paths by role, and the rules between them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.outputs: list[tuple[str, Path]] = []
        self.files: list[tuple[str, Path]] = []
        self.folders: list[tuple[str, Path]] = []
        roles = {
            "output": self.outputs,
            "input": self.files,
            "input-folder": self.folders,
            "model": self.folders,
        }
        for option in OPTIONS:
            role = roles.get(option.kind)
            if role is None:
                continue
            if option.name == "ragmetrics_dataset":
                role.extend((option.name, d.path) for d in settings.datasets)
                continue
            value = getattr(settings, _FIELD.get(option.name, option.name[len("ragmetrics_") :]))
            if value is None or (option.kind == "model" and not Path(value).is_absolute()):
                continue  # unset, or a model name rather than a folder
            role.append((option.name, Path(value)))
        self.cache = settings.cache_dir
        self.digests = settings.baseline.parent / "datasets"

    def refuse(self, message: str) -> NoReturn:
        raise ConfigError(message)

    def check_cache(self) -> None:
        show = self.settings.display
        if is_within(self.settings.rootdir, self.cache):
            self.refuse(
                f"ragmetrics_cache_dir: {show(self.cache)} is the project folder or holds it; "
                "the cache needs a folder of its own, e.g. .ragmetrics/cache"
            )
        for other, folder in self.folders:
            if is_within(self.cache, folder) or is_within(folder, self.cache):
                self.refuse(
                    f"ragmetrics_cache_dir: {show(self.cache)} overlaps the folder of {other} "
                    f"({show(folder)}); the cache needs a folder of its own"
                )

    def check_kind(self, option: str, path: Path) -> None:
        """A report (or the recorded answers, when recording) replaces only a file of its own
        kind: not the baseline, qrels, labels or any file it did not write (``outputs.py``)."""
        kind = _WRITES.get(option)
        if kind is None or (option == "ragmetrics_answers" and not self.settings.record_answers):
            return
        from pytest_ragmetrics.outputs import replacing_problem

        problem = replacing_problem(path, kind)
        if problem is not None:
            self.refuse(f"{option}: {self.settings.display(path)}: {problem}")

    def check_output(self, option: str, path: Path, earlier: list[tuple[str, Path]]) -> None:
        show = self.settings.display
        for other, other_path in earlier:
            if same_file(path, other_path):
                self.refuse(
                    f"{option} and {other} are the same file ({show(path)}); give each output "
                    "a path of its own"
                )
        for other, read in self.files:
            if same_file(path, read):
                self.refuse(
                    f"{option}: {show(path)} is the file {other} reads; writing there would "
                    "overwrite it. Give the output a path of its own"
                )
        for other, folder in self.folders:
            if is_within(path, folder):
                self.refuse(
                    f"{option}: {show(path)} is inside the folder of {other} ({show(folder)}); "
                    "writing there would change what the plugin reads. Give the output a path "
                    "outside it"
                )
        if inside_cache_entries(path, self.cache):
            self.refuse(
                f"{option}: {show(path)} is inside the cache folder's entries "
                f"({show(self.cache)}); give the output a path outside the cache"
            )
        if option != "ragmetrics_baseline" and is_within(path, self.digests):
            self.refuse(
                f"{option}: {show(path)} is inside the dataset digests folder beside the "
                f"baseline ({show(self.digests)}); give it another path"
            )


def settings_from_pytest(config: Any) -> Settings:
    """Settings from a pytest Config: ini keys and their ``--ragmetrics-...`` overrides.

    Ini paths are relative to the ini file's folder (the rootdir), command-line paths to the
    folder pytest was started in.
    """

    def get(name: str) -> tuple[Any, bool]:
        value = config.getoption(name, default=None)
        if value is not None:
            _refuse_empty(name, value)
            return value, True
        from pytest import UsageError  # loaded already: this reads a pytest Config

        try:
            return config.getini(name), False
        except UsageError as exc:  # its bool type: "invalid truth value 'maybe'", no key
            hint = "; write true or false" if OPTION[name].ini_type == "bool" else ""
            raise ConfigError(f"{name}: {exc}{hint}") from None

    inipath = config.inipath
    return build_settings(
        get,
        rootdir=inipath.parent if inipath is not None else config.rootpath,
        invocation_dir=config.invocation_params.dir,
        flags={
            "update_baseline": config.getoption("ragmetrics_update_baseline"),
            "no_cache": config.getoption("ragmetrics_no_cache"),
            "clear_cache": config.getoption("ragmetrics_clear_cache"),
            "dry_run": config.getoption("ragmetrics_dry_run"),
            "record_answers": config.getoption("ragmetrics_record_answers"),
        },
    )


def _refuse_empty(name: str, value: Any) -> None:
    """An empty command-line value is a usage error naming the flag. Taken as unset, it would
    pass over the ini value to the default: ``--ragmetrics-baseline=$VAR`` with ``VAR`` unset
    compared the run with another baseline, or none, and a regression passed."""
    values = value if isinstance(value, list) else [value]
    if any(isinstance(v, str) and not v.strip() for v in values):
        flag = OPTION[name].flag
        raise ConfigError(
            f"{flag}: the value is empty (an unset variable, as in {flag}=$VAR?); give a "
            f"value, or leave {flag} out to use {name} from the ini file or its default"
        )
