"""ragmetrics_judge_budget caps the session, not each process (issue 24, class 6b): under
``-n 2`` the workers spend from one ledger, so two workers together stay within the budget
(they once spent 560 tokens against a budget of 300)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from pytest_ragmetrics.errors import BudgetError
from pytest_ragmetrics.transport import Budget, Usage
from tests.helpers.fake_openai import Reply, completion, serve
from tests.helpers.plugin_project import SERIAL_AND_N2, make_project

CALL = Usage(90, 10)  # each call reports 100 tokens


def _spend(ledger: str, spent: multiprocessing.Queue[int]) -> None:  # in a child process
    budget = Budget(300, ledger=ledger)
    calls = 0
    try:
        while True:
            budget.reserve(100, "test")
            budget.settle(100, CALL, 300)
            calls += 1
    except BudgetError:
        spent.put(calls)


def test_processes_sharing_a_ledger_share_one_budget(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[int] = context.Queue()
    ledger = str(tmp_path / "budget.json")
    workers = [context.Process(target=_spend, args=(ledger, queue)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert sum(queue.get(timeout=5) for _ in workers) == 3  # 300 tokens in all, not 900
    assert Budget(300, ledger=ledger).spent == 300
    with pytest.raises(BudgetError, match="300 tokens used across this session's workers by 3"):
        Budget(300, ledger=ledger).reserve(1, "test")
    assert Budget(300).spent == 0  # without a ledger: this process's own counts


TESTS = """
import pytest

@pytest.mark.parametrize("i", range(8))
def test_generate(rag_generator, i):
    rag_generator.generate(f"question {i}", ["a context"])
"""


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_the_budget_caps_the_whole_session_under_xdist(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    body = {**completion("An answer."), "usage": {"prompt_tokens": 90, "completion_tokens": 10}}
    with serve([Reply(body=body) for _ in range(20)]) as server:
        ini = (
            f'ragmetrics_generator_url = "{server.url}"\n'
            'ragmetrics_generator_model = "m"\nragmetrics_generator_max_tokens = "10"\n'
            'ragmetrics_judge_budget = "350"\n'
        )
        make_project(pytester, ini=ini, tests=TESTS)
        result = pytester.runpytest_subprocess("-p", "no:randomly", *xdist)
        sent = server.count
    assert sent == 3, result.stdout.str()  # 3 x 100 tokens: the session's budget, whole
    result.assert_outcomes(passed=3, failed=5)
    result.stdout.fnmatch_lines(["*token budget (ragmetrics_judge_budget = 350): 300 tokens*"])
