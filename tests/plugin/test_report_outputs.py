"""The plugin's reports (--ragmetrics-json, --ragmetrics-markdown, --ragmetrics-html) and the
answers --ragmetrics-record-answers writes replace only a file of their own kind, as the
``ragmetrics`` command's outputs do (outputs.py): pointed at a baseline, qrels, a run or a
person's labels, pytest stops at start-up naming the option, the file and what it holds, and
the file is left byte for byte as it was."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers.plugin_project import make_project
from tests.plugin.test_data_loss import TESTS, snapshot

# Files a user keeps in the project, none of them a report.
FILES = {
    "qrels.txt": "q1 0 d1 1\nq2 0 d2 1\n",
    "labels.jsonl": '{"id": "1", "claim": "c", "context_sentences": ["s"], "label": "SUPPORT"}\n',
    "a.run": "q1 Q0 d1 1 2.0 a\nq2 Q0 d2 1 1.0 a\n",
    "table.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
    "settings.json": '{"schema": "https://example.org/settings", "evaluations": []}\n',
}


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with a blessed baseline, a copy of it (old.json) and the files above."""
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    shutil.copy(pytester.path / ".ragmetrics" / "baseline.json", pytester.path / "old.json")
    for name, text in FILES.items():
        (pytester.path / name).write_text(text)
    return pytester


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ragmetrics-json=old.json"], "ragmetrics_json: old.json: that file is a baseline "
         "file, not a JSON report; writing would overwrite it. Give another path, or move the "
         "file away first"),
        (["--ragmetrics-json=qrels.txt"], "ragmetrics_json: qrels.txt: that file is not a JSON "
         "report ragmetrics wrote"),
        (["--ragmetrics-json=settings.json"], "ragmetrics_json: settings.json: that file is not "
         "a JSON report ragmetrics wrote"),
        (["--ragmetrics-json=a.run"], "ragmetrics_json: a.run: that file is a TREC run, not"),
        (["--ragmetrics-html=labels.jsonl"], "ragmetrics_html: labels.jsonl: that file is not an "
         "HTML report ragmetrics wrote"),
        (["--ragmetrics-markdown=old.json"], "ragmetrics_markdown: old.json: that file is a "
         "baseline file; appending a Markdown report would damage it"),
        (["--ragmetrics-markdown=qrels.txt"], "ragmetrics_markdown: qrels.txt: that file holds "
         "data, not text"),
        (["--ragmetrics-markdown=labels.jsonl"], "that file holds data, not text"),
        (["--ragmetrics-markdown=table.tsv"], "that file holds data, not text"),
        (["--ragmetrics-markdown=a.run"], "that file is a TREC run; appending"),
        (["--ragmetrics-record-answers", "--ragmetrics-answers=labels.jsonl"],
         "ragmetrics_answers: labels.jsonl: that file is not recorded answers ragmetrics wrote"),
    ],
)  # fmt: skip
def test_a_report_never_replaces_a_file_of_another_kind(
    project: pytest.Pytester, args: list[str], message: str
) -> None:
    before = snapshot(project.path)
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert message in result.stderr.str()
    assert snapshot(project.path) == before


def test_an_ini_report_path_is_refused_the_same_way(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS, ini='ragmetrics_json = "qrels.txt"\n')
    (pytester.path / "qrels.txt").write_text(FILES["qrels.txt"])
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ragmetrics_json: qrels.txt: that file is not a JSON report" in result.stderr.str()
    assert (pytester.path / "qrels.txt").read_text() == FILES["qrels.txt"]


def test_reports_replace_their_own_and_follow_text(project: pytest.Pytester) -> None:
    """The reports of the last run are replaced (the Markdown one appended to), and so is an
    empty file; the Markdown report follows any text, as $GITHUB_STEP_SUMMARY holds."""
    summary = "## Build\n\n[log](https://example.org) of step 1\t(ok)\n"
    (project.path / "summary.md").write_text(summary)
    (project.path / "empty.json").write_text("")
    args = ["--ragmetrics-json=empty.json", "--ragmetrics-markdown=summary.md",
            "--ragmetrics-html=page.html"]  # fmt: skip
    for _ in range(2):
        project.runpytest(*args).assert_outcomes(passed=1)
    document = json.loads((project.path / "empty.json").read_text())
    assert document["schema"] == "pytest-ragmetrics/report"
    text = (project.path / "summary.md").read_text()
    assert text.startswith(summary)
    assert text.count("ragmetrics") >= 2
