"""Metric names (``ndcg_at_10``, ``map``, ``groundedness``): parsing, validation, registry."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pytest_ragmetrics.errors import MetricError
from pytest_ragmetrics.values import MAX_CUTOFF, finite_number
from pytest_ragmetrics.vocabulary import Layer

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from pytest_ragmetrics.metrics.ranked import RankedJudgments

Cutoff = Literal["required", "optional", "none"]
MetricFunction = Callable[["RankedJudgments", "int | None"], "npt.NDArray[np.float64]"]


@dataclass(frozen=True)
class Family:
    """A metric family such as ``ndcg``; with a cutoff it becomes ``ndcg_at_10``."""

    name: str
    cutoff: Cutoff
    layer: Layer
    description: str
    function: MetricFunction | None = None  # None: computed by the built-in engine
    builtin: bool = True
    judged_form: bool = True  # whether ``<name>_judged`` exists (retrieval metrics only)
    # The worst value the metric can take (every built-in one lies in [0, 1], higher is
    # better: 0); None for a registered metric that did not declare one.
    worst: float | None = 0.0


@dataclass(frozen=True)
class MetricSpec:
    """One parsed metric: family, optional cutoff, and whether it is judged-only.

    ``judged_only`` (names ending in ``_judged``): computed on each query's ranking with the
    unjudged documents removed and the ranks recomputed (trec_eval ``-J``).
    """

    name: str
    family: str
    k: int | None
    layer: Layer
    judged_only: bool = False


_FAMILIES: dict[str, Family] = {}
JUDGED_SUFFIX = "_judged"


def _builtin(
    name: str, cutoff: Cutoff, layer: Layer, description: str, *, judged_form: bool = True
) -> None:
    _FAMILIES[name] = Family(name, cutoff, layer, description, judged_form=judged_form)


_builtin("precision", "required", "retrieval", "relevant docs in the top k / k")
_builtin("recall", "required", "retrieval", "relevant docs in the top k / all relevant docs")
_builtin("ndcg", "optional", "retrieval", "normalised discounted cumulative gain (graded)")
_builtin("map", "optional", "retrieval", "average precision over all relevant docs")
_builtin("mrr", "optional", "retrieval", "1 / rank of the first relevant doc")
_builtin("recall_cap", "required", "retrieval", "relevant docs in the top k / min(R, k)")
_builtin("hit_rate", "required", "retrieval", "1 if any relevant doc is in the top k")
# On a ranking with the unjudged documents removed every document is judged: no _judged form.
_builtin(
    "judged",
    "required",
    "retrieval",
    "share of the top k that has any judgment",
    judged_form=False,
)
_builtin("r_precision", "none", "retrieval", "relevant docs in the top R / R")
# trec_eval has no cutoff form of bpref or infAP; neither do we.
_builtin(
    "bpref", "none", "retrieval", "binary preference: judged relevant above judged non-relevant"
)
_builtin("infap", "none", "retrieval", "inferred average precision (trec_eval's infAP)")
_builtin("groundedness", "none", "answer", "supported claims / judged claims")
_builtin("answer_relevance", "none", "answer", "does the answer address the question")
_builtin("answer_correctness", "none", "answer", "does the answer agree with the reference")
_builtin("context_relevance", "none", "answer", "relevant contexts / judged contexts")

#: Every built-in metric lies in [0, 1]; a registered one may not.
_UNIT_INTERVAL = frozenset(_FAMILIES)


def in_unit_interval(spec: MetricSpec) -> bool:
    """Whether ``spec``'s values lie in [0, 1] (every built-in metric's do)."""
    return spec.family in _UNIT_INTERVAL


_NAME = re.compile(r"^(?P<family>[a-z][a-z0-9_]*?)(?:(?:_at_|@)(?P<k>[^_@]*))?$")
# trec_eval / pytrec_eval / ranx spellings, accepted and turned into ours.
_ALIASES = {
    "p": "precision",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "recip_rank": "mrr",
    "rprec": "r_precision",
    "success": "hit_rate",
    "hits": "hit_rate",
    "recall": "recall",
    "ndcg": "ndcg",
    "map": "map",
    "r-precision": "r_precision",
    "bpref": "bpref",
    "infap": "infap",
}
_TREC_NAME = re.compile(r"^(?P<family>[a-z_-]+?)(?:[._](?P<k>\d+))?$")


def families() -> dict[str, Family]:
    """All known families, built-in and registered."""
    return dict(_FAMILIES)


def register_metric(
    name: str,
    function: MetricFunction,
    *,
    cutoff: Cutoff = "optional",
    description: str = "",
    worst: float | None = None,
    higher_is_better: bool = True,
) -> None:
    """Register an extra retrieval metric family.

    ``function(ranked, k)`` gets the ranked judgments of every query (see
    :class:`~pytest_ragmetrics.metrics.retrieval.RankedJudgments`) and the cutoff (None when
    uncut) and returns one float per query. Registering a built-in name is an error.
    ``<name>_judged`` evaluates the same function on the judged-only rankings. ``worst``
    declares the worst value the metric can take (0.0 for one in [0, 1], higher better): a
    fall to it on every query then fails whatever the p-value, as for built-in metrics; a
    value below it is an error. ``higher_is_better`` declares the metric's direction: deltas,
    thresholds and regressions read higher as better, so a metric where lower is better (a
    mean rank, a latency) is refused; register its negation or reciprocal instead.
    """
    if higher_is_better is not True:
        raise MetricError(
            f"metric {name!r}: higher_is_better={higher_is_better!r}; only metrics where higher "
            "is better can be registered (deltas, thresholds and regressions read them so): "
            "register the negation, e.g. lambda ranked, k: -mean_rank(ranked, k), or 1 / value"
        )
    if worst is not None and finite_number(worst) is None:
        raise MetricError(
            f"metric {name!r}: worst={worst!r} must be a finite number (the worst value the "
            "metric can take, e.g. worst=0.0) or None"
        )
    if (
        not isinstance(name, str)
        or not re.fullmatch(r"[a-z][a-z0-9_]*", name)
        or "_at_" in name
        or name.endswith(("_at", JUDGED_SUFFIX))
    ):
        raise MetricError(
            f"metric name {name!r} must be lowercase letters, digits and '_' (no '_at_', "
            f"not ending in '_at' or '{JUDGED_SUFFIX}')"
        )
    existing = _FAMILIES.get(name)
    if existing is not None and existing.builtin:
        raise MetricError(f"metric {name!r} is built in and cannot be replaced")
    _FAMILIES[name] = Family(
        name,
        cutoff,
        "retrieval",
        description or name,
        function,
        builtin=False,
        worst=None if worst is None else float(worst),
    )


def unregister_metric(name: str) -> None:
    """Remove a registered (not built-in) metric family."""
    family = _FAMILIES.get(name)
    if family is not None and not family.builtin:
        del _FAMILIES[name]


def _forms(family: Family, suffix: str = "") -> list[str]:
    """The written forms of one family (``ndcg``, ``ndcg_at_K``), with ``suffix`` appended."""
    if family.cutoff == "required":
        return [f"{family.name}_at_K{suffix}"]
    if family.cutoff == "optional":
        return [f"{family.name}{suffix}", f"{family.name}_at_K{suffix}"]
    return [f"{family.name}{suffix}"]


def _has_judged_form(family: Family) -> bool:
    return family.layer == "retrieval" and family.judged_form


def valid_forms(family: Family) -> str:
    """Every valid form of one family, judged-only ones included, for error messages."""
    forms = _forms(family)
    if _has_judged_form(family):
        forms += _forms(family, JUDGED_SUFFIX)
    return ", ".join(forms)


def valid_names_hint() -> str:
    """A one-line list of valid metric forms, for error messages."""
    forms = [", ".join(_forms(fam)) for fam in _FAMILIES.values()]
    no_judged = [
        ", ".join(_forms(f))
        for f in _FAMILIES.values()
        if f.layer == "retrieval" and not f.judged_form
    ]
    judged = f"{JUDGED_SUFFIX} after a retrieval metric (e.g. ndcg_at_10{JUDGED_SUFFIX}"
    judged += f"; not {', '.join(no_judged)})" if no_judged else ")"
    return (
        ", ".join(forms)
        + f" (K a positive integer); {judged} evaluates it with unjudged documents removed"
    )


def parse_metric(name: str) -> MetricSpec:
    """Parse ``ndcg_at_10`` / ``ndcg@10`` / ``map`` / ``map_judged``; unknown names list the
    valid ones."""
    if not isinstance(name, str):
        raise MetricError(f"metric name must be a string, got {name!r}")
    text = name.strip().lower()
    if not text.endswith(JUDGED_SUFFIX) or text in _FAMILIES:
        return _parse_plain(name, text)
    base_text = text[: -len(JUDGED_SUFFIX)]
    family = _family_of(base_text)
    if family is not None and not _has_judged_form(family):
        why = (
            "it is an answer-layer metric"
            if family.layer != "retrieval"
            else "with the unjudged documents removed every document is judged"
        )
        raise MetricError(
            f"metric {name!r}: {', '.join(_forms(family))} has no judged-only form ({why}); "
            f"valid forms: {valid_forms(family)}"
        )
    base = _parse_plain(name, base_text, JUDGED_SUFFIX)
    return MetricSpec(base.name + JUDGED_SUFFIX, base.family, base.k, base.layer, True)


def judged_only_name(name: str) -> str:
    """The canonical name of a metric's judged-only form: ``map`` -> ``map_judged``
    (``map_judged`` stays); an error for metrics without one."""
    spec = parse_metric(name)
    return spec.name if spec.judged_only else parse_metric(spec.name + JUDGED_SUFFIX).name


def _family_of(lowered: str) -> Family | None:
    """The family a name (without ``_judged``) belongs to, whether or not its cutoff is valid."""
    text = _canonical_spelling(lowered)
    match = _NAME.match(text)
    return _FAMILIES.get(text) or (_FAMILIES.get(match.group("family")) if match else None)


def _parse_plain(name: str, lowered: str, suffix: str = "") -> MetricSpec:
    """Parse a name without the ``_judged`` suffix; errors quote ``name`` as written and
    suggest forms ending in ``suffix``."""
    text = _canonical_spelling(lowered)
    family = _FAMILIES.get(text)
    if family is not None:
        if family.cutoff == "required":
            raise MetricError(
                f"metric {name!r} needs a cutoff: write {family.name}_at_K{suffix}, e.g. "
                f"{family.name}_at_10{suffix}"
            )
        return MetricSpec(family.name, family.name, None, family.layer)
    match = _NAME.match(text)
    if match and match.group("k") is not None:
        family = _FAMILIES.get(match.group("family"))
        if family is not None:
            raw_k = match.group("k")
            if family.cutoff == "none":
                raise MetricError(
                    f"metric {family.name!r} takes no cutoff; write {family.name}{suffix} "
                    f"(valid forms: {valid_forms(family)})"
                )
            if not (raw_k.isascii() and raw_k.isdigit()) or not 0 < int(raw_k) <= MAX_CUTOFF:
                raise MetricError(
                    f"metric {name!r}: cutoff {raw_k!r} must be a positive integer up to "
                    f"{MAX_CUTOFF}, e.g. {family.name}_at_10{suffix}"
                )
            k = int(raw_k)
            return MetricSpec(f"{family.name}_at_{k}", family.name, k, family.layer)
    raise MetricError(f"unknown metric {name!r}; valid metrics: {valid_names_hint()}")


def _canonical_spelling(text: str) -> str:
    """Map trec_eval spellings (``P_5``, ``P.5``, ``ndcg_cut_10``, ``recip_rank``) to ours."""
    if text in _FAMILIES or "_at_" in text:
        return text
    if "@" in text:
        family, _, k = text.partition("@")
        return f"{_ALIASES.get(family, family)}@{k}"
    match = _TREC_NAME.match(text)
    if match and match.group("family") in _ALIASES:
        family = _ALIASES[match.group("family")]
        return family if match.group("k") is None else f"{family}_at_{match.group('k')}"
    return text


def parse_metrics(names: Iterable[str] | str) -> list[MetricSpec]:
    """Parse several names, dropping repeats and keeping order; one string is one name."""
    if isinstance(names, str):
        names = [names]
    specs: dict[str, MetricSpec] = {}
    for name in names:
        spec = parse_metric(name)
        specs.setdefault(spec.name, spec)
    if not specs:
        raise MetricError(f"no metrics given; valid metrics: {valid_names_hint()}")
    return list(specs.values())
