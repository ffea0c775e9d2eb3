"""``ragmetrics compare BASELINE_OR_REPORT REPORT`` as one record: the verdict of every
evaluation of the report, and everything the baseline holds that was *not* compared — its
evaluations the report lacks, and per evaluation its metrics and queries the report lacks.

What was not compared is never silent: every renderer names it, with a line saying how many and
that it was not compared; with ``strict`` it fails the comparison (exit code 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.records import label

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.tolerances import Tolerances
    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict
    from pytest_ragmetrics.records import EvaluationRecord

SHOWN = 10  # queries named per evaluation (the JSON form lists them all)


@dataclass(frozen=True)
class Gap:
    """Metrics or queries of a baseline entry that the report's evaluation lacks."""

    test: str
    name: str
    metrics: tuple[str, ...] = ()
    queries: tuple[str, ...] = ()
    # Metrics of the report's evaluation that the baseline entry lacks: nothing to compare.
    new_metrics: tuple[str, ...] = ()

    def new_metric_lines(self) -> list[str]:
        if not self.new_metrics:
            return []
        return [f"{label(self.test, self.name)}: {', '.join(self.new_metrics)}"]

    def lines(self) -> list[str]:
        where = label(self.test, self.name)
        out = []
        if self.metrics:
            out.append(f"{where}: metrics not in the report: {', '.join(self.metrics)}")
        if self.queries:
            shown = ", ".join(self.queries[:SHOWN])
            more = f" and {len(self.queries) - SHOWN} more" if len(self.queries) > SHOWN else ""
            out.append(
                f"{where}: {len(self.queries)} queries not in the report (their values count "
                f"as lost): {shown}{more}"
            )
        return out


@dataclass
class PairComparison:
    """The verdicts of ``after``'s evaluations against ``before`` (paths as given), the
    evaluations of ``before`` that ``after`` lacks (``missing``: (test, name, layer)), and the
    metric and query gaps of the evaluations compared."""

    before: str
    after: str
    results: list[tuple[EvaluationRecord, BaselineVerdict]]
    missing: list[tuple[str, str, str]] = field(default_factory=list)
    strict: bool = False
    # The means ``before`` records per evaluation compared (key -> metric -> mean), over all
    # of its queries: a verdict's are over the queries both hold.
    before_means: Mapping[tuple[str, str], Mapping[str, float]] = field(default_factory=dict)

    @property
    def failed(self) -> list[tuple[EvaluationRecord, BaselineVerdict]]:
        return [(r, v) for r, v in self.results if v.status in ("regressed", "not comparable")]

    @property
    def gaps(self) -> list[Gap]:
        out = []
        for recorded, verdict in self.results:
            if (
                verdict.metrics_not_compared
                or verdict.only_baseline
                or verdict.metrics_not_in_baseline
            ):
                out.append(
                    Gap(
                        recorded.test,
                        recorded.name,
                        tuple(verdict.metrics_not_compared),
                        tuple(verdict.only_baseline),
                        tuple(verdict.metrics_not_in_baseline),
                    )
                )
        return out

    @property
    def new(self) -> int:
        return sum(1 for _, v in self.results if v.status == "new")

    @property
    def incomplete(self) -> bool:
        """The baseline holds evaluations, metrics or queries that were not compared."""
        return bool(self.missing or self.gaps)

    @property
    def exit_failed(self) -> bool:
        return bool(self.failed) or (self.strict and self.incomplete)

    def not_compared_lines(self) -> list[str]:
        """What was not compared, in words ([] when everything was)."""
        if not self.incomplete:
            return []
        lines = []
        if self.missing:
            n = len(self.missing)
            lines.append(
                f"not compared: {n} evaluation{'s' if n != 1 else ''} of {self.before} "
                f"{'are' if n != 1 else 'is'} missing from {self.after}:"
            )
            lines += [f"  {label(test, name)}" for test, name, _ in self.missing]
        lacking = [line for gap in self.gaps for line in gap.lines()]
        if lacking:
            lines.append(f"not compared: what {self.after} lacks of {self.before}'s evaluations:")
            lines += [f"  {line}" for line in lacking]
        new = sum(len(gap.new_metrics) for gap in self.gaps)
        if new:
            lines.append(
                f"not compared: {new} metric{'s' if new != 1 else ''} of {self.after} "
                f"{'are' if new != 1 else 'is'} not in {self.before} (added since it was "
                "made; not gated until the baseline is updated):"
            )
            lines += [f"  {line}" for gap in self.gaps for line in gap.new_metric_lines()]
        if self.strict:
            lines.append("--strict: what was not compared fails the comparison (exit code 1)")
        else:
            lines.append("(give --strict to fail when anything of the baseline is not compared)")
        return lines

    def notes(self) -> list[str]:
        """Every note of the evaluations compared, each prefixed by its label, as every
        format shows them: the evaluation's own, the queries only ``after`` holds, its
        verdict's (:func:`~pytest_ragmetrics.baseline.verdicts.labelled_notes`)."""
        from pytest_ragmetrics.baseline.verdicts import labelled_notes

        return labelled_notes(
            (
                label(r.test, r.name),
                [*r.evaluation.notes, *only_current_notes(self.after, self.before, v)],
                v,
            )
            for r, v in self.results
        )

    def summary(self) -> str:
        """The closing line: counts of evaluations, new ones, failures and what is missing."""
        text = f"{len(self.results)} evaluations"
        if self.new:
            text += f" ({self.new} new: not in {self.before})"
        text += f", {len(self.failed)} failed"
        if self.missing:
            n = len(self.missing)
            text += (
                f"; {n} evaluation{'s' if n != 1 else ''} of {self.before} not in {self.after}: "
                "not compared"
            )
        if self.gaps:
            text += f"; {len(self.gaps)} compared without some metrics or queries"
        new_metrics = sum(len(g.new_metrics) for g in self.gaps)
        if new_metrics:
            text += f"; {new_metrics} metrics not in {self.before}: not compared"
        if self.strict and self.incomplete:
            text += " (--strict: failed)"
        return text

    def not_compared(self) -> dict[str, Any]:
        """The JSON form of what was not compared (also in the HTML page's document)."""
        return {
            "evaluations": [
                {"test": test, "name": name, "layer": layer} for test, name, layer in self.missing
            ],
            "metrics": [
                {"test": g.test, "name": g.name, "metrics": list(g.metrics)}
                for g in self.gaps
                if g.metrics
            ],
            "queries": [
                {"test": g.test, "name": g.name, "queries": list(g.queries)}
                for g in self.gaps
                if g.queries
            ],
            "metrics_not_in_baseline": [
                {"test": g.test, "name": g.name, "metrics": list(g.new_metrics)}
                for g in self.gaps
                if g.new_metrics
            ],
            "lines": self.not_compared_lines(),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "evaluations": [
                {
                    "test": r.test,
                    "name": r.name,
                    "layer": r.layer,
                    **v.to_dict(),
                    **({"notes": list(r.evaluation.notes)} if r.evaluation.notes else {}),
                }
                for r, v in self.results
            ],
            "failed": len(self.failed),
            "new": self.new,
            "missing": len(self.missing),
            "not_compared": self.not_compared(),
            "strict": self.strict,
            "strict_failed": self.strict and self.incomplete,
            "notes": self.notes(),
            "summary": self.summary(),
        }


def only_current_notes(after: str, before: str, verdict: BaselineVerdict) -> list[str]:
    """The queries ``after`` holds and ``before`` does not, in words ([] when none): their
    values are in ``after``'s means but in no Δ."""
    queries = verdict.only_current
    if not queries:
        return []
    more = f" and {len(queries) - SHOWN} more" if len(queries) > SHOWN else ""
    n = len(queries)
    return [
        f"{n} {'query' if n == 1 else 'queries'} only in {after}, not in {before} (counted in "
        f"its means, in no Δ): {', '.join(queries[:SHOWN])}{more}"
    ]


def not_compared_notes(run: str, verdict: BaselineVerdict) -> list[str]:
    """Comparing runs: the reference's metrics and queries that ``run`` lacks, and the queries
    only ``run`` holds, in words."""
    out = []
    if verdict.metrics_not_compared:
        out.append(
            f"{run}: metrics of the reference not compared (no value in this run): "
            f"{', '.join(verdict.metrics_not_compared)}"
        )
    if verdict.metrics_not_in_baseline:
        out.append(
            f"{run}: metrics not in the reference, not compared: "
            f"{', '.join(verdict.metrics_not_in_baseline)}"
        )
    queries = verdict.only_baseline
    if queries:
        more = f" and {len(queries) - SHOWN} more" if len(queries) > SHOWN else ""
        out.append(
            f"{run}: {len(queries)} queries of the reference not in this run (their values "
            f"count as lost): {', '.join(queries[:SHOWN])}{more}"
        )
    out += [f"{run}: {note}" for note in only_current_notes("this run", "the reference", verdict)]
    return out


def compare_pair(
    before: Mapping[tuple[str, str], Mapping[str, Any]],
    after: Mapping[tuple[str, str], Mapping[str, Any]],
    tolerances: Tolerances,
    *,
    paths: tuple[str, str],
    alpha: float | None = None,
    unjudged_drops: str = "fail",
    strict: bool = False,
) -> PairComparison:
    """Every evaluation of ``after`` against ``before`` (read with
    :func:`~pytest_ragmetrics.baseline.compare.load_evaluations`), with what ``before`` holds
    that ``after`` lacks."""
    from pytest_ragmetrics.baseline.compare import compare_evaluations
    from pytest_ragmetrics.baseline.lost import valued

    results = compare_evaluations(
        before, after, tolerances, alpha=alpha, unjudged_drops=unjudged_drops
    )
    missing = [
        (test, name, str(before[(test, name)].get("layer", "retrieval")))
        for test, name in sorted(before)
        if (test, name) not in after
    ]
    means = {
        key: {str(m): float(v) for m, v in (before[key].get("metrics") or {}).items() if valued(v)}
        for key in before
    }
    return PairComparison(paths[0], paths[1], results, missing, strict, means)
