"""Test sets generated from a corpus (loaded on first use): generators (``offline``: the
documents' own sentences, titles and keyphrases; ``http``: questions and reference answers from
an OpenAI-compatible endpoint), filters (duplicates, answer leaks, answerability by a calibrated
judge), the dataset folder with its provenance, and the review file. ``ragmetrics generate``
drives them; see README ("Test sets from a corpus") and docs/testsets.md."""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.testsets.build import FilterSettings, apply_filters, build_testset
    from pytest_ragmetrics.testsets.folder import load_corpus, write_testset
    from pytest_ragmetrics.testsets.http import HttpTestsetGenerator
    from pytest_ragmetrics.testsets.model import Candidate, FilterReport, TestSet
    from pytest_ragmetrics.testsets.offline import OfflineGenerator
    from pytest_ragmetrics.testsets.review import apply_review, read_review

_EXPORTS = {
    "FilterSettings": "pytest_ragmetrics.testsets.build",
    "apply_filters": "pytest_ragmetrics.testsets.build",
    "build_testset": "pytest_ragmetrics.testsets.build",
    "load_corpus": "pytest_ragmetrics.testsets.folder",
    "write_testset": "pytest_ragmetrics.testsets.folder",
    "HttpTestsetGenerator": "pytest_ragmetrics.testsets.http",
    "Candidate": "pytest_ragmetrics.testsets.model",
    "FilterReport": "pytest_ragmetrics.testsets.model",
    "TestSet": "pytest_ragmetrics.testsets.model",
    "OfflineGenerator": "pytest_ragmetrics.testsets.offline",
    "apply_review": "pytest_ragmetrics.testsets.review",
    "read_review": "pytest_ragmetrics.testsets.review",
}
__all__ = [
    "Candidate",
    "FilterReport",
    "FilterSettings",
    "HttpTestsetGenerator",
    "OfflineGenerator",
    "TestSet",
    "apply_filters",
    "apply_review",
    "build_testset",
    "load_corpus",
    "read_review",
    "write_testset",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
