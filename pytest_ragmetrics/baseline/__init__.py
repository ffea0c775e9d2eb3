"""Baselines: the committed store of evaluations, the comparison of a run with it, tolerances,
and what changed in a dataset since. Knows nothing of pytest.

Names load on first use: settings need the tolerances at pytest start-up, not numpy.
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.changes import (
        describe_change,
        explain_dataset_change,
        save_dataset_digests,
    )
    from pytest_ragmetrics.baseline.compare import (
        compare_evaluations,
        compare_files,
        compare_to_baseline,
        evaluations_in,
        load_evaluations,
    )
    from pytest_ragmetrics.baseline.store import (
        SCHEMA_VERSION,
        UPDATE_HINT,
        BaselineStore,
        stale_entries,
    )
    from pytest_ragmetrics.baseline.tolerances import Tolerance, Tolerances, parse_tolerances
    from pytest_ragmetrics.baseline.verdicts import (
        Against,
        BaselineVerdict,
        MetricVerdict,
        Status,
        failure_message,
    )

_EXPORTS = {
    "describe_change": "pytest_ragmetrics.baseline.changes",
    "explain_dataset_change": "pytest_ragmetrics.baseline.changes",
    "save_dataset_digests": "pytest_ragmetrics.baseline.changes",
    "compare_evaluations": "pytest_ragmetrics.baseline.compare",
    "compare_files": "pytest_ragmetrics.baseline.compare",
    "compare_to_baseline": "pytest_ragmetrics.baseline.compare",
    "evaluations_in": "pytest_ragmetrics.baseline.compare",
    "load_evaluations": "pytest_ragmetrics.baseline.compare",
    "SCHEMA_VERSION": "pytest_ragmetrics.baseline.store",
    "UPDATE_HINT": "pytest_ragmetrics.baseline.store",
    "BaselineStore": "pytest_ragmetrics.baseline.store",
    "stale_entries": "pytest_ragmetrics.baseline.store",
    "Tolerance": "pytest_ragmetrics.baseline.tolerances",
    "Tolerances": "pytest_ragmetrics.baseline.tolerances",
    "parse_tolerances": "pytest_ragmetrics.baseline.tolerances",
    "Against": "pytest_ragmetrics.baseline.verdicts",
    "MetricVerdict": "pytest_ragmetrics.baseline.verdicts",
    "Status": "pytest_ragmetrics.baseline.verdicts",
    "BaselineVerdict": "pytest_ragmetrics.baseline.verdicts",
    "failure_message": "pytest_ragmetrics.baseline.verdicts",
}
__all__ = [
    "SCHEMA_VERSION",
    "UPDATE_HINT",
    "Against",
    "BaselineStore",
    "BaselineVerdict",
    "MetricVerdict",
    "Status",
    "Tolerance",
    "Tolerances",
    "compare_evaluations",
    "compare_files",
    "compare_to_baseline",
    "describe_change",
    "evaluations_in",
    "explain_dataset_change",
    "failure_message",
    "load_evaluations",
    "parse_tolerances",
    "save_dataset_digests",
    "stale_entries",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
