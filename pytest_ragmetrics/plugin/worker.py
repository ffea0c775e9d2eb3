"""The xdist worker's role: it runs tests and records evaluations like a plain run, but sends
them on the test reports and tells the controller, at the end, every test it collected."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_ragmetrics.plugin.session import RagSession

# The evaluations of a test travel on its call report under this attribute.
REPORT_ATTRIBUTE = "ragmetrics"
# Each worker reports the tests it collected, deselected ones included, in workeroutput.
COLLECTION_KEY = "ragmetrics_collected"
# The controller names, in each worker's workerinput, the file the session's budget is kept in.
BUDGET_LEDGER_KEY = "ragmetrics_budget_ledger"


class WorkerPlugin:
    """Registered on xdist workers only."""

    def __init__(self, session: RagSession, workerinput: dict[str, object]) -> None:
        self.session = session
        ledger = workerinput.get(BUDGET_LEDGER_KEY)
        if isinstance(ledger, str):
            session.budget_ledger = ledger

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A collection error: the controller must not call this worker's tests gone."""
        if report.failed:
            from pytest_ragmetrics.plugin.session import COLLECTION_ERRORS

            self.session.collection_fault(COLLECTION_ERRORS)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Send the controller (which does not collect) the tests that exist."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[COLLECTION_KEY] = self.session.collection_summary()
