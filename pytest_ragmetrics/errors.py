"""Exceptions raised by pytest-ragmetrics; every one says what was wrong, where, and what to do."""

from __future__ import annotations

import os

from pytest_ragmetrics.controls import show_controls


class RagMetricsError(Exception):
    """Base class of every error pytest-ragmetrics raises on purpose."""


class DataFormatError(RagMetricsError, ValueError):
    """A dataset, qrels or run file (or in-memory equivalent) is malformed."""

    def __init__(
        self, message: str, path: str | os.PathLike[str] | None = None, line: int | None = None
    ) -> None:
        self.path = None if path is None else os.fspath(path)
        self.line = line
        self.reason = message
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
            where += ": "
        super().__init__(where + message)


class MetricError(RagMetricsError, ValueError):
    """An unknown metric name, a bad cutoff, or a metric that cannot be computed."""


class ConfigError(RagMetricsError, ValueError):
    """An invalid option, ini value or argument."""


class ReadOnlyOptionError(ConfigError, AttributeError):
    """An option of a built retriever set (or deleted) after it was built: what it built (an
    index, embeddings) and the identity its runs are cached under would no longer agree. Also
    an ``AttributeError``, as for any read-only attribute."""


class BaselineError(RagMetricsError):
    """The baseline file cannot be read or written."""


class ReportError(RagMetricsError):
    """A report read back (a JSON report, a ``ragmetrics evaluate --format json`` output) is
    malformed, of another schema or of a newer version; the message names the file and the
    field."""


class CacheError(RagMetricsError):
    """A cache entry cannot be written."""


class OutputError(RagMetricsError, OSError):
    """A file (report, run, baseline) cannot be written; an existing one is left unchanged.

    Also an ``OSError``, so code that handles I/O errors keeps working. Its text is always
    the message given (never ``[Errno n] ...``), whatever OSError fields are set on it:
    :func:`pytest_ragmetrics.fileio.cannot_write` sets ``errno``, ``strerror`` and
    ``filename`` from the refusal it reports.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class RetrieverError(RagMetricsError):
    """A retriever could not be built or returned an invalid result."""


class JudgeError(RagMetricsError):
    """A judge could not be built or returned an invalid verdict."""


class DryRun(Exception):
    """Raised instead of sending requests in a dry run (``--ragmetrics-dry-run``); its
    message says what would have been sent. Not a failure: the plugin skips the test with it."""


class RagMetricsWarning(UserWarning):
    """Something is suspicious but the numbers can still be computed.

    Only what is probably a mistake is a warning (a retriever that finds nothing for most
    queries, a damaged cache entry, judged documents missing from a corpus read outside pytest);
    what is normal (short rankings) is a note in the report. Each message ends with
    :func:`how_to_silence` of its category.

    Its text is shown on one line with every control character escaped (ESC, CR, NUL, a
    right-to-left override, a newline: :func:`~pytest_ragmetrics.controls.show_controls`),
    wherever Python prints it — pytest's warnings summary included — since it may quote a file
    name, an id or a name from the data.
    """

    def __str__(self) -> str:
        return show_controls(super().__str__())


class ShortRankingWarning(RagMetricsWarning):
    """A retriever returned nothing at all for most of the queries it was asked."""


class ScoreOrderWarning(RagMetricsWarning):
    """A TREC run's rank column contradicts its scores (rank 1 has the lowest score): read as
    trec_eval reads it, by score descending, which reverses the file's order."""


class CacheWarning(RagMetricsWarning):
    """A cache entry could not be read: it is treated as a miss and written again."""


class StaleLabelsWarning(RagMetricsWarning):
    """Judged documents are missing from the corpus (they can never be retrieved)."""


def how_to_silence(category: type[Warning]) -> str:
    """The sentence that ends a warning: the filter entry that silences its category."""
    name = f"{category.__module__}.{category.__qualname__}"
    return (
        f'to silence this warning: filterwarnings = ["ignore::{name}"] in the pytest '
        f"configuration, or -W ignore::{name}"
    )


class ExecutorError(RagMetricsError):
    """An executor (a Ray cluster) cannot be reached, started or used."""


class BudgetError(RagMetricsError):
    """A call would exceed the token budget (ragmetrics_judge_budget); nothing more is sent."""


class GeneratorError(RagMetricsError):
    """The pipeline under test (its generator or recorded answers) failed or is misconfigured."""
