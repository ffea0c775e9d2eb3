"""The options of the built-in judges, shared by ``calibrate`` and ``judge-pool``: one group
per judge, and the keywords of ``build_judge`` they give (another judge's option is refused)."""

from __future__ import annotations

import argparse
from typing import Any

from pytest_ragmetrics.cli.common import add_endpoint_options
from pytest_ragmetrics.cli.flags import add
from pytest_ragmetrics.errors import ConfigError

# The command-line options of each judge (--model names a folder for one, a model for the other).
JUDGE_OPTIONS: dict[str, tuple[str, ...]] = {
    "embedding": ("threshold", "model"),
    "http": (
        "model", "url", "api_key_env", "timeout", "attempt_timeout", "concurrency", "prompts",
        "temperature", "judge_seed",
    ),
    "recorded": ("verdicts",),
}  # fmt: skip


def add_judge_options(p: argparse.ArgumentParser, *, threshold: str, verdicts: str) -> None:
    """The options of each judge (:data:`JUDGE_OPTIONS`), in one group per judge."""
    emb = p.add_argument_group("embedding options")
    add(emb, "--threshold", threshold)
    add(
        emb,
        "--model",
        "embedding: local model folder; http: model name",
        setting="ragmetrics_judge_model",
    )
    web = p.add_argument_group("http options")
    add_endpoint_options(web, "RAGMETRICS_JUDGE", "question", 60)
    add(
        web,
        "--prompts",
        "folder of the judge's prompts, as ragmetrics_judge_prompts reads it (system.txt, "
        "support.txt, relevance.txt, agreement.txt, context.txt, context_system.txt; a missing "
        "file keeps the built-in prompt); a relevance judge (--question relevance, judge-pool) "
        "asks the context question: context.txt and context_system.txt",
    )
    add(web, "--temperature", "sampling temperature (default 0)")
    add(web, "--judge-seed", "the seed sent with the questions (default 0)")
    rec = p.add_argument_group("recorded options")
    add(rec, "--verdicts", verdicts)


def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """The judge options given, as build_judge (and build_relevance_judge) keywords: the
    --prompts folder read and checked (a ConfigError names the file), --judge-seed as seed;
    a ConfigError for another judge's option."""
    every = dict.fromkeys(name for names in JUDGE_OPTIONS.values() for name in names)
    given = {name: getattr(args, name) for name in every if getattr(args, name) is not None}
    wrong = sorted(set(given) - set(JUDGE_OPTIONS[args.judge]))
    if wrong:
        flags = ", ".join("--" + name.replace("_", "-") for name in wrong)
        raise ConfigError(f"{flags}: not an option of --judge {args.judge}")
    if "prompts" in given:
        from pytest_ragmetrics.prompts import JUDGE_ROLES, read_prompts

        folder = given["prompts"]
        given["prompts"] = read_prompts(folder, JUDGE_ROLES, label=f"--prompts {folder}")
    if "judge_seed" in given:
        given["seed"] = given.pop("judge_seed")
    if args.judge == "http":
        # An off-script reply leaves its item without a verdict (counted), not the run failed.
        given["unparseable"] = "unjudged"
    return given
