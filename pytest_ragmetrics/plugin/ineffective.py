"""Settings that do nothing in the configuration they are in: each one gets a one-line note in
the terminal summary, instead of being silently ignored (a judge option without a judge, a
generator option without a generator, a token budget with nothing remote to spend it on)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pytest_ragmetrics.plugin.settings import HTTP_JUDGE_SETTINGS, Settings

# Read by the built-in judges only (ragmetrics_judge); which kinds read each one.
# (Another kind given an http-only option is a ConfigError already: see settings._check_judge.)
_JUDGE_OPTIONS: dict[str, tuple[str, ...]] = {
    "judge_model": ("embedding", "http"),
    "judge_verdicts": ("recorded",),
    "judge_repeats": ("embedding", "http"),
    **{f"judge_{name}": ("http",) for name in HTTP_JUDGE_SETTINGS},
}
_GENERATOR_OPTIONS = (
    "generator_model",
    "generator_concurrency",
    "generator_timeout",
    "generator_attempt_timeout",
    "generator_prompts",
    "generator_temperature",
    "generator_seed",
    "generator_max_tokens",
)


def _set(settings: Settings, name: str) -> bool:
    return getattr(settings, name) is not None


def ineffective_options(settings: Settings, environ: Mapping[str, str] | None = None) -> list[str]:
    """One note per setting that has no effect in this configuration."""
    environ = os.environ if environ is None else environ
    notes: list[str] = []
    judge = settings.judge
    for name, kinds in _JUDGE_OPTIONS.items():
        if not _set(settings, name) or judge in kinds:
            continue
        why = (
            "ragmetrics_judge is not set, so no built-in judge reads it"
            if judge is None
            else f"ragmetrics_judge = {judge} does not read it (only {' or '.join(kinds)})"
        )
        notes.append(f"ragmetrics_{name} has no effect: {why}")
    generator = bool(settings.generator_url or environ.get("RAGMETRICS_GENERATOR_URL"))
    if not generator:
        notes += [
            f"ragmetrics_{name} has no effect: no generator endpoint is configured "
            "(ragmetrics_generator_url or RAGMETRICS_GENERATOR_URL)"
            for name in _GENERATOR_OPTIONS
            if _set(settings, name)
        ]
    elif settings.answers is not None and settings.answers.exists() and not settings.record_answers:
        used = [
            f"ragmetrics_{n}" for n in ("generator_url", *_GENERATOR_OPTIONS) if _set(settings, n)
        ]
        notes.append(
            f"rag_pipeline replays the recorded answers in {settings.display(settings.answers)}: "
            f"the generator ({', '.join(used) or 'RAGMETRICS_GENERATOR_URL'}) makes none of "
            "them; --ragmetrics-record-answers regenerates them with it"
        )
    if settings.judge_budget is not None and judge != "http" and not generator:
        notes.append(
            "ragmetrics_judge_budget has no effect: nothing remote spends tokens (neither "
            "ragmetrics_judge = http nor a generator endpoint is configured)"
        )
    return notes
