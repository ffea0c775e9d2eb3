"""The data model: Qrels, Run, Corpus, Queries and Dataset, backed by numpy arrays.

Each concept has its module (:mod:`~pytest_ragmetrics.data.arrays` ids and CSR arrays,
:mod:`~pytest_ragmetrics.data.qrels`, :mod:`~pytest_ragmetrics.data.run` and
:mod:`~pytest_ragmetrics.data.ranking` its order, :mod:`~pytest_ragmetrics.data.corpus` corpus,
queries and dataset); every name is importable from here too, as it always was.
"""

from pytest_ragmetrics.data.arrays import (
    Entries,
    FloatArray,
    IntArray,
    StrArray,
    as_str_array,
    encode_ids,
)
from pytest_ragmetrics.data.corpus import Corpus, Dataset, Document, Queries
from pytest_ragmetrics.data.qrels import GRADE_RANGE_HINT, MAX_GRADE, MIN_GRADE, Qrels
from pytest_ragmetrics.data.ranking import ranking_key
from pytest_ragmetrics.data.run import Run
from pytest_ragmetrics.data.segments import QueryKeyed, QuerySegments

__all__ = [
    "GRADE_RANGE_HINT",
    "MAX_GRADE",
    "MIN_GRADE",
    "Corpus",
    "Dataset",
    "Document",
    "Entries",
    "FloatArray",
    "IntArray",
    "Qrels",
    "Queries",
    "QueryKeyed",
    "QuerySegments",
    "Run",
    "StrArray",
    "as_str_array",
    "encode_ids",
    "ranking_key",
]
