"""Bad input, one case per row: every case gives an error (or warning) of our own type whose
message says where (file:line, metric, option or query), and no case touches the baseline or
the cache.

Each case runs in a copy of one small project (BEIR dataset, built-in BM25 retriever) whose
baseline, dataset digests and BM25 run cache were written by a real ``--ragmetrics-update-
baseline`` run. The bytes and mtimes of every file under ``.ragmetrics/`` are compared before
and after the case; only the case that damages a cache entry may change that entry, and it
must come back byte-identical. Exhaustive variants per reader live in test_data.py; here each
kind of fault appears once, end to end.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_ragmetrics import (
    BaselineError,
    DataFormatError,
    JudgeError,
    MetricError,
    RagMetricsError,
    RagMetricsWarning,
    RetrieverError,
    Run,
    evaluate,
    load_dataset,
    read_run,
)
from pytest_ragmetrics.baseline import BaselineStore
from pytest_ragmetrics.cache import canonical_json
from pytest_ragmetrics.cli import main as cli_main
from pytest_ragmetrics.judges import EmbeddingJudge, HttpJudge, RecordedJudge
from pytest_ragmetrics.retrievers import (
    ShortRankingWarning,
    check_run,
    from_function,
    short_rankings,
)
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.fake_openai import Reply, completion, serve
from tests.helpers.plugin_project import UNRELATED_PLUGINS, write_dataset

INI = """\
[tool.pytest.ini_options]
ragmetrics_dataset = "data"
ragmetrics_retriever = "bm25"
ragmetrics_metrics = "ndcg_at_10 recall_at_1 mrr"
"""
TEST_FILE = """\
def test_retrieval(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="bm25")
"""
TEST_ID = "test_rag.py::test_retrieval"
NO_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project after one blessed run: baseline, digest sidecars and a BM25 run cache."""
    pytest.importorskip("bm25s")
    root = tmp_path_factory.mktemp("template")
    write_dataset(root)
    (root / "pyproject.toml").write_text(INI)
    (root / "test_rag.py").write_text(TEST_FILE)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", *NO_PLUGINS),
            *UNRELATED_PLUGINS,
            "--ragmetrics-update-baseline",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    state = root / ".ragmetrics"
    assert (state / "baseline.json").is_file()
    assert any((state / "cache" / "run").glob("*/*.npy"))
    assert any((state / "datasets").iterdir())
    return root


@dataclass
class Project:
    """A fresh copy of the template project (the pytester folder)."""

    pytester: pytest.Pytester
    template: Path

    @property
    def root(self) -> Path:
        return self.pytester.path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def state(self) -> Path:
        return self.root / ".ragmetrics"

    @property
    def baseline(self) -> Path:
        return self.state / "baseline.json"

    @property
    def cache(self) -> Path:
        return self.state / "cache"

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest(*NO_PLUGINS, *args)

    def conftest(self, text: str) -> None:
        (self.root / "conftest.py").write_text(textwrap.dedent(text))

    def tests(self, text: str) -> None:
        (self.root / "test_rag.py").write_text(textwrap.dedent(text))

    def ini(self, extra: str) -> None:
        """The template's ini with the keys of ``extra`` replaced or added."""
        keys = {line.split("=")[0].strip() for line in extra.splitlines() if "=" in line}
        kept = [line for line in INI.splitlines() if line.split("=")[0].strip() not in keys]
        (self.root / "pyproject.toml").write_text("\n".join(kept) + "\n" + extra)


Snapshot = dict[str, tuple[bytes, int]]


def snapshot(folder: Path) -> Snapshot:
    """Bytes and mtime of every file below ``folder``."""
    return {
        path.relative_to(folder).as_posix(): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def assert_untouched(before: Snapshot, after: Snapshot, may_change: tuple[str, ...]) -> None:
    """Every file is as it was; new files may only be (empty) lock files."""
    for name, (data, mtime) in before.items():
        if name.startswith(may_change):
            continue
        assert name in after, f"{name} was removed"
        assert after[name][0] == data, f"{name} was rewritten"
        assert after[name][1] == mtime, f"{name} was touched"
    for name, (data, _) in after.items():
        if name not in before and not name.startswith(may_change):
            assert name.endswith(".lock") and not data, f"{name} was created"


@dataclass(frozen=True)
class Case:
    """``act`` triggers the fault and checks the error; ``prepare`` runs before the snapshot."""

    act: Callable[[Project], None]
    prepare: Callable[[Project], None] | None = None
    may_change: tuple[str, ...] = ()


def output(result: pytest.RunResult) -> str:
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text, text
    return text


def data_error(
    call: Callable[[], object], path: Path, line: int | None, reason: str
) -> DataFormatError:
    """``call()`` raises a DataFormatError for ``path`` (and ``line``) whose text has ``reason``."""
    with pytest.raises(DataFormatError) as info:
        call()
    error = info.value
    assert (error.path, error.line) == (str(path), line)
    where = str(path) if line is None else f"{path}:{line}"
    assert str(error).startswith(f"{where}: "), str(error)
    assert reason in error.reason, error.reason
    return error


def ours(kind: type[RagMetricsError], call: Callable[[], object], *parts: str) -> RagMetricsError:
    """``call()`` raises ``kind`` and its message contains every one of ``parts``."""
    with pytest.raises(kind) as info:
        call()
    for part in parts:
        assert part in str(info.value), str(info.value)
    return info.value


# --- dataset files: corpus, queries, qrels (library, via load_dataset on the folder) ----------


def dataset_case(name: str, content: bytes | None, line: int | None, reason: str) -> Case:
    """Append ``content`` to data/``name`` (None: empty the file); load_dataset names it."""

    def act(p: Project) -> None:
        path = p.data / name
        path.write_bytes(b"" if content is None else path.read_bytes() + content)
        data_error(lambda: load_dataset(p.data), path, line, reason)

    return Case(act)


def truncated(name: str, line: int) -> Case:
    """Cut the last line of data/``name`` in half, as an interrupted copy would."""

    def act(p: Project) -> None:
        path = p.data / name
        data = path.read_bytes()
        path.write_bytes(data[: len(data) - 12])
        data_error(lambda: load_dataset(p.data), path, line, "not valid JSON")

    return Case(act)


def qrels_case(lines: bytes | None, line: int | None, reason: str) -> Case:
    return dataset_case("qrels/test.tsv", lines, line, reason)


def missing_split(p: Project) -> None:
    error = ours(DataFormatError, lambda: load_dataset(p.data, "dev"), "split 'dev' not found")
    assert str(error).startswith(f"{p.data}: ")
    assert "available splits: test" in str(error)


def stale_labels(p: Project) -> None:
    qrels = p.data / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q1\tgone-1\t1\nq2\tgone-2\t2\nq2\tgone-3\t0\n")
    with pytest.warns(RagMetricsWarning, match="3 judged documents are not in the corpus") as got:
        dataset = load_dataset(p.data)
    assert str(qrels) in str(got[0].message)
    assert dataset.qrels.num_judgments == 8  # still counted: a warning, not an error


# --- run files ------------------------------------------------------------------------------

RUN_LINES = "q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\nq2 Q0 d2 1 3.0 bm25\n"


def run_case(extra: bytes | None, line: int | None, reason: str, *, cut: int = 0) -> Case:
    def act(p: Project) -> None:
        path = p.root / "run.txt"
        body = RUN_LINES.encode() + (extra or b"")
        path.write_bytes(b"" if extra is None else body[: len(body) - cut])
        data_error(lambda: read_run(path), path, line, reason)

    return Case(act)


def exponential_gain_overflow(p: Project) -> None:
    qrels = {"q1": {"d1": 1, "d2": 900}}
    ours(
        MetricError,
        lambda: evaluate(qrels, {"q1": {"d1": 1.0}}, ["ndcg_at_10"], gain="exponential"),
        "grade 900 of query 'q1', document 'd2' is too large for exponential gain",
    )


def nan_score_in_memory(p: Project) -> None:
    ours(
        DataFormatError,
        lambda: evaluate({"q1": {"d1": 1}}, {"q1": {"d1": float("nan")}}, ["ndcg_at_10"]),
        "score nan of document 'd1' for query 'q1' is not a finite number",
    )


# --- the plugin: dataset, metric names, k, thresholds (pytester runs) -------------------------


def plugin_dataset_error(p: Project) -> None:
    corpus = p.data / "corpus.jsonl"
    corpus.write_bytes(corpus.read_bytes() + b'{"_id": "d6", "text": "caf\xe9"}\n')
    result = p.run("--ragmetrics-update-baseline")
    result.assert_outcomes(errors=1)
    assert f"{corpus}:6: not valid UTF-8 (byte 0xe9 at column 27)" in output(result)


def plugin_qrels_grade(p: Project) -> None:
    qrels = p.data / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q4\td1\trelevant\n")
    result = p.run("--ragmetrics-update-baseline")
    result.assert_outcomes(errors=1)
    assert f"{qrels}:7: grade 'relevant' is not an integer" in output(result)


def plugin_manifest_error(p: Project) -> None:
    """A dataset.json folder (here SMART files) reaches the plugin through load_dataset too."""
    (p.data / "dataset.json").write_text(
        json.dumps(
            {
                "format": "smart",
                "documents": "docs.all",
                "queries": "queries.qry",
                "qrels": {"test": "qrels.txt"},
                "query_ids": "ordinal",
            }
        )
    )
    (p.data / "docs.all").write_text(".I 1\n.W\ncats purr\n.I 2\n.W\ndogs\n.I 1\n.W\nbark\n")
    (p.data / "queries.qry").write_text(".I 001\n.W\nwhich animal purrs\n")
    (p.data / "qrels.txt").write_text("1 1 1\n")
    result = p.run("--ragmetrics-update-baseline")
    result.assert_outcomes(errors=1)
    text = output(result)
    assert f"{p.data / 'docs.all'}:7: document id '1' appears twice (first at line 1)" in text


def marker_case(marker: str, message: str) -> Case:
    def act(p: Project) -> None:
        p.tests(
            f"""
            import pytest

            @pytest.mark.{marker}
            def test_retrieval(rag_eval, rag_run):
                rag_eval.retrieval(rag_run, name="bm25")
            """
        )
        result = p.run("--ragmetrics-update-baseline")
        result.assert_outcomes(errors=1)
        text = output(result)
        assert "ERROR collecting test_rag.py" in text
        assert f"{TEST_ID}: rag_threshold: {message}" in text

    return Case(act)


def usage_case(message: str, *args: str, ini: str = "") -> Case:
    """A bad ini value or command-line option stops pytest at start-up, naming the option."""

    def act(p: Project) -> None:
        if ini:
            p.ini(ini)
        result = p.run("--ragmetrics-update-baseline", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert f"pytest-ragmetrics: {message}" in output(result)

    return Case(act)


def metric_in_test_body(p: Project) -> None:
    p.tests(
        """
        def test_retrieval(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="bm25", metrics=["ndcg_at_ten"])
        """
    )
    result = p.run("--ragmetrics-update-baseline")
    result.assert_outcomes(failed=1)
    assert "metric 'ndcg_at_ten': cutoff 'ten' must be a positive integer" in output(result)


def cli_bad_metric(p: Project) -> None:
    (p.root / "qrels.txt").write_text("q1 0 d1 1\n")
    (p.root / "run.txt").write_text(RUN_LINES)
    args = ["evaluate", "--qrels", "qrels.txt", "--run", "run.txt", "-m", "ndcg_at_10"]
    for metric, message in (
        ("recall@0", "metric 'recall@0': cutoff '0' must be a positive integer"),
        ("ndgc", "unknown metric 'ndgc'"),
    ):
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors):
            code = cli_main([*args, "-m", metric], out=io.StringIO())
        assert code == 2
        assert errors.getvalue().startswith(f"ragmetrics evaluate: error: {message}")


def report_path_is_a_folder(p: Project) -> None:
    (p.root / "report.json").mkdir()
    p.ini('ragmetrics_json = "report.json"\n')
    result = p.run("--ragmetrics-update-baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ragmetrics_json: 'report.json' is a folder; give the path of a file" in output(result)


def report_cannot_be_written(p: Project) -> None:
    """Found only when the session ends (the parent 'folder' became a file while the tests
    ran): the tests pass, the session fails with one line naming the file."""
    p.conftest(
        "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_sessionfinish(session):\n"
        "    (session.config.rootpath / 'reports').write_text('not a folder')\n"
    )
    result = p.run("--ragmetrics-markdown=reports/summary.md")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert f"ragmetrics: error: {p.root / 'reports' / 'summary.md'}: cannot write" in output(result)


def report_folder_is_a_file(p: Project) -> None:
    """Known at start-up: the report's folder is a file."""
    (p.root / "reports").write_text("not a folder")
    result = p.run("--ragmetrics-markdown=reports/summary.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ragmetrics_markdown: cannot use 'reports/summary.md' (Not a directory)" in output(
        result
    )


# --- the baseline file ------------------------------------------------------------------------


def baseline_case(damage: Callable[[str], str], message: str) -> Case:
    """The baseline is damaged (before the snapshot); the run fails naming it, and never
    rewrites it (no --ragmetrics-update-baseline)."""

    def prepare(p: Project) -> None:
        p.baseline.write_text(damage(p.baseline.read_text()))

    def act(p: Project) -> None:
        ours(BaselineError, lambda: BaselineStore.load(p.baseline), str(p.baseline), message)
        result = p.run()
        result.assert_outcomes(failed=1)
        assert message in output(result)
        assert "baseline.json" in output(result)

    return Case(act, prepare)


def _edit_entry(key: str, value: str) -> Callable[[str], str]:
    """Replace the value of ``key`` in the (only) entry with ``value`` (raw JSON)."""

    def damage(text: str) -> str:
        data = json.loads(text)
        data["entries"][TEST_ID]["bm25"][key] = json.loads(value)
        return json.dumps(data, indent=2)

    return damage


# --- the cache --------------------------------------------------------------------------------


def _run_entry(p: Project) -> Path:
    (entry,) = (path for path in (p.cache / "run").iterdir() if path.is_dir())
    return entry


def damage_cache_entry(p: Project) -> None:
    npy = next(_run_entry(p).glob("*.npy"))
    npy.write_bytes(npy.read_bytes()[:40])


def unreadable_cache_entry_is_rewritten(p: Project) -> None:
    entry = _run_entry(p)
    result = p.run("-W", "default::pytest_ragmetrics.RagMetricsWarning")
    result.assert_outcomes(passed=1)
    text = output(result)
    assert f"cache entry {entry} is unreadable" in text
    assert "treating it as a miss and rewriting it" in text
    # Rewritten: byte-identical to the entry the blessed run wrote.
    relative = entry.relative_to(p.root)
    assert snapshot(entry).keys() == snapshot(p.template / relative).keys()
    for name, (data, _) in snapshot(p.template / relative).items():
        assert (entry / name).read_bytes() == data, name


def _garble_verdicts(cache: Path, value: object, *, checksum: bool = False) -> None:
    """Put ``value`` in every cached verdict (with ``checksum``, its sha256 too: an entry
    whose value is consistent with its manifest but not of the shape its reader expects)."""
    for manifest in (cache / "judge-verdicts").glob("*/manifest.json"):
        data = json.loads(manifest.read_text())
        data["value"] = value
        if checksum:
            data["value_sha256"] = hashlib.sha256(canonical_json(value).encode()).hexdigest()
        manifest.write_text(json.dumps(data))


def hand_edited_http_verdict(p: Project) -> None:
    """A cached verdict edited by hand is an unreadable entry: asked again, rewritten."""
    with serve() as server:
        HttpJudge(Endpoint(server.url, "tiny"), cache=p.cache).judge_claims(
            ["Cats purr SUPPORTED."], ["c"]
        )
        _garble_verdicts(p.cache, {"verdict": False, "reply": "No."})
        judge = HttpJudge(Endpoint(server.url, "tiny"), cache=p.cache)
        with pytest.warns(RagMetricsWarning, match="unreadable .* is not what was written"):
            (claim,) = judge.judge_claims(["Cats purr SUPPORTED."], ["c"])
        assert claim.supported is True
        assert server.count == 2
    assert (
        HttpJudge(Endpoint("http://127.0.0.1:9", "tiny"), cache=p.cache)
        .judge_claims(["Cats purr SUPPORTED."], ["c"])[0]
        .supported
    )  # rewritten: served from the cache, nothing is asked


def hand_edited_embedding_similarity(p: Project) -> None:
    def encoder(texts: list[str]) -> list[list[float]]:
        return [[1.0, float(len(t))] for t in texts]

    def judge() -> EmbeddingJudge:
        return EmbeddingJudge(encoder=encoder, model_name="toy", cache=p.cache)

    expected = judge().judge_claims(["Cats purr."], ["Cats purr and sleep."])
    _garble_verdicts(p.cache, [{"text": "Cats purr.", "score": "high"}], checksum=True)
    with pytest.warns(RagMetricsWarning, match="unreadable .* does not have the shape"):
        assert judge().judge_claims(["Cats purr."], ["Cats purr and sleep."]) == expected


# --- retrievers (from_function / check_run) ---------------------------------------------------


def _retriever_error(result: object, *parts: str) -> Callable[[Project], None]:
    def act(p: Project) -> None:
        dataset = load_dataset(p.data)
        retriever = from_function(lambda text: result, corpus=dataset.corpus, name="prod")
        ours(RetrieverError, lambda: retriever.search(dataset.queries, 3), *parts)

    return act


def retriever_short(p: Project) -> None:
    """Fewer than k documents is normal: no warning, a summary the report shows as a note."""
    dataset = load_dataset(p.data)
    run = Run.from_rankings(
        {
            "q1": ["d1", "d2"],
            "q2": ["d2", "d1", "d3"],
            "q3": ["d3", "d4", "d5"],
            "q4": ["d5", "d1", "d2"],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_run(run, dataset.queries, 3, retriever="prod", corpus=dataset.corpus)
    found = short_rankings(run, dataset.queries.query_ids, 3, retriever="prod")
    assert found is not None and not found.mostly_empty
    assert found.note().startswith(
        "retriever 'prod' returned fewer than 3 documents for 1 of 4 queries (shortest 2); "
        "normal for a retriever that returns only the documents that match"
    )


def retriever_nothing(p: Project) -> None:
    """Nothing at all for most queries is probably a bug: a warning saying how to silence it."""
    dataset = load_dataset(p.data)
    retriever = from_function(lambda text: ["d1", "d2"] if "barks" in text else [], name="prod")
    with pytest.warns(ShortRankingWarning) as got:
        retriever.search(dataset.queries, 2)
    message = str(got[0].message)
    assert "retriever 'prod' returned nothing for 3 of 4 queries (e.g. 'q1', 'q3', 'q4')" in message
    assert 'filterwarnings = ["ignore::pytest_ragmetrics.errors.ShortRankingWarning"]' in message
    half = from_function(lambda text: [] if "barks" in text else ["d1", "d2"], name="prod")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        half.search(dataset.queries, 2)  # nothing for 1 of 4: a note, not a warning


def plugin_retriever_unknown_ids(p: Project) -> None:
    p.conftest(
        """
        import pytest
        from pytest_ragmetrics.retrievers import from_function

        @pytest.fixture(scope="session")
        def rag_retriever(rag_corpus):
            return from_function(lambda text: ["d1", "ghost"], corpus=rag_corpus, name="prod")
        """
    )
    result = p.run("--ragmetrics-update-baseline")
    result.assert_outcomes(errors=1)
    assert (
        "retriever 'prod' returned document 'ghost' for query 'q1', but the corpus has no such "
        "document" in output(result)
    )


# --- judges -----------------------------------------------------------------------------------


def http_judge_garbage(body: object, *parts: str) -> Callable[[Project], None]:
    """An OpenAI-compatible server that answers nonsense; nothing is cached."""

    def act(p: Project) -> None:
        with serve([Reply(200, body)]) as server:
            judge = HttpJudge(Endpoint(server.url, "tiny", max_retries=0), cache=p.cache)
            ours(
                JudgeError,
                lambda: judge.assess(
                    "which animal purrs", "Cats purr.", ["Cats purr."], query_id="q7"
                ),
                "judging query 'q7'",
                f"{server.url}/v1/chat/completions",
                *parts,
            )

    return act


def http_judge_rambles(p: Project) -> None:
    with serve(answer=lambda prompt: "It is hard to say.") as server:
        judge = HttpJudge(Endpoint(server.url, "tiny", max_retries=0), cache=p.cache)
        ours(
            JudgeError,
            lambda: judge.assess("which animal purrs", "Cats purr.", ["Cats purr."]),
            "judging query 'q-",  # no query_id given: the query's default id
            "model 'tiny' replied 'It is hard to say.' to the claim support question",
        )


def recorded_verdicts_garbage(p: Project) -> None:
    path = p.root / "verdicts.jsonl"
    path.write_text(
        '{"query_id": "q1", "answer": "Cats purr.", "claims": [{"text": "Cats purr.", '
        '"supported": true}]}\n'
        '{"query_id": "q2", "claims": [{"text": "x", "supported": "maybe"}]}\n'
    )
    data_error(lambda: RecordedJudge(path), path, 2, "supported must be true, false or null")


CASES = [
    # corpus
    pytest.param(truncated("corpus.jsonl", 5), id="corpus-truncated"),
    pytest.param(
        dataset_case("corpus.jsonl", b'{"_id": "d6", "text": "\xff"}\n', 6, "not valid UTF-8"),
        id="corpus-not-utf8",
    ),
    pytest.param(
        dataset_case("corpus.jsonl", b"d6\tFish swim.\n", 6, "not valid JSON"),
        id="corpus-not-json",
    ),
    pytest.param(
        dataset_case("corpus.jsonl", b'{"text": "no id"}\n', 6, "missing '_id' or 'id'"),
        id="corpus-missing-id",
    ),
    pytest.param(
        dataset_case(
            "corpus.jsonl",
            b'{"_id": "d2", "text": "again"}\n',
            6,
            "document id 'd2' appears twice (first at line 2)",
        ),
        id="corpus-duplicate-id",
    ),
    pytest.param(
        dataset_case("corpus.jsonl", None, None, "no documents in corpus file (it is empty)"),
        id="corpus-empty",
    ),
    pytest.param(
        dataset_case(
            "corpus.jsonl",
            b'{"_id": 1' + b"0" * 5000 + b', "text": "x"}\n',
            6,
            "cannot read this JSON line",
        ),
        id="corpus-5000-digit-id",
    ),
    pytest.param(
        dataset_case("corpus.jsonl", b"[" * 100_000 + b"\n", 6, "cannot read this JSON line"),
        id="corpus-nested-too-deep",
    ),
    pytest.param(
        dataset_case(
            "corpus.jsonl",
            b'{"_id": "d6", "text": "half \\ud800 a pair"}\n',
            6,
            "the escape \\ud800 is half of a surrogate pair",
        ),
        id="corpus-lone-surrogate",
    ),
    # queries
    pytest.param(truncated("queries.jsonl", 4), id="queries-truncated"),
    pytest.param(
        dataset_case("queries.jsonl", b'{"_id": "q5", "text": "\xc3("}\n', 5, "not valid UTF-8"),
        id="queries-not-utf8",
    ),
    pytest.param(
        dataset_case("queries.jsonl", b'{"id": null, "text": "x"}\n', 5, "must be a string"),
        id="queries-null-id",
    ),
    pytest.param(
        dataset_case(
            "queries.jsonl",
            b'{"_id": "q1", "text": "again"}\n',
            5,
            "query id 'q1' appears twice (first at line 1)",
        ),
        id="queries-duplicate-id",
    ),
    pytest.param(
        dataset_case("queries.jsonl", None, None, "no queries in queries file"),
        id="queries-empty",
    ),
    # qrels
    pytest.param(
        qrels_case(b"q1\td2\n", 7, "expected 3 columns like the first line"), id="qrels-truncated"
    ),
    pytest.param(qrels_case(b"q1\td\xe92\t1\n", 7, "not valid UTF-8"), id="qrels-not-utf8"),
    pytest.param(
        qrels_case(b"q1\td2\t0.5\n", 7, "grade '0.5' is not an integer"), id="qrels-fraction"
    ),
    pytest.param(
        qrels_case(b"q1\td2\tNaN\n", 7, "grade 'NaN' is not an integer"), id="qrels-nan-grade"
    ),
    pytest.param(
        qrels_case(b"q1\td2\t1" + b"0" * 30 + b"\n", 7, "is out of range"), id="qrels-huge-grade"
    ),
    pytest.param(
        qrels_case(b"q1\td2\t1e30\n", 7, "grade '1e30' is not an integer"), id="qrels-exponent"
    ),
    pytest.param(
        qrels_case(b"q1\td1\t2\n", 7, "document 'd1' is judged twice for query 'q1'"),
        id="qrels-duplicate",
    ),
    pytest.param(qrels_case(None, None, "no judgments in qrels file"), id="qrels-empty"),
    pytest.param(Case(missing_split), id="beir-without-split"),
    pytest.param(Case(stale_labels), id="stale-labels-warn-with-count"),
    # runs
    pytest.param(
        run_case(b"q2 Q0 d3 2 1.0 bm25\n", 4, "expected 'qid Q0 docno rank score tag'", cut=12),
        id="run-truncated",
    ),
    pytest.param(run_case(b"q2 Q0 d\xe9 2 1.0 t\n", 4, "not valid UTF-8"), id="run-not-utf8"),
    pytest.param(
        run_case(b"q2 Q0 d1 2 [0.5] bm25\n", 4, "score '[0.5]' is not a number"),
        id="run-not-a-number",
    ),
    pytest.param(
        run_case(b"q2 Q0 d3 2 nan bm25\n", 4, "score 'nan' is not a finite number"), id="run-nan"
    ),
    pytest.param(
        run_case(b"q2 Q0 d3 2 -inf bm25\n", 4, "score '-inf' is not a finite number"), id="run-inf"
    ),
    pytest.param(
        run_case(b"q1 Q0 d2 3 0.5 bm25\n", 4, "document 'd2' appears twice for query 'q1'"),
        id="run-duplicate",
    ),
    pytest.param(run_case(None, None, "no results in run file (it is empty)"), id="run-empty"),
    pytest.param(Case(nan_score_in_memory), id="run-nan-in-memory"),
    pytest.param(Case(exponential_gain_overflow), id="exponential-gain-overflow"),
    # the plugin
    pytest.param(Case(plugin_dataset_error), id="plugin-corpus-not-utf8"),
    pytest.param(Case(plugin_qrels_grade), id="plugin-qrels-grade"),
    pytest.param(Case(plugin_manifest_error), id="plugin-manifest-dataset-duplicate-id"),
    pytest.param(
        marker_case("rag_threshold(ndcg_at_10=0.5, recal_at_5=0.7)", "unknown metric 'recal_at_5'"),
        id="marker-unknown-metric",
    ),
    pytest.param(
        marker_case("rag_threshold(ndcg_at_0=0.5)", "metric 'ndcg_at_0': cutoff '0' must be"),
        id="marker-bad-k",
    ),
    pytest.param(
        marker_case("rag_threshold(recall_at_1=1.5)", "recall_at_1=1.5 is outside [0, 1]"),
        id="marker-threshold-above-1",
    ),
    pytest.param(
        marker_case("rag_threshold(mrr=-0.1)", "mrr=-0.1 is outside [0, 1]"),
        id="marker-threshold-below-0",
    ),
    pytest.param(
        usage_case(
            "ragmetrics_metrics: unknown metric 'ndgc_at_10'",
            ini='ragmetrics_metrics = "ndgc_at_10 mrr"\n',
        ),
        id="ini-unknown-metric",
    ),
    pytest.param(
        usage_case(
            "ragmetrics_metrics: metric 'recall_at_five': cutoff 'five' must be a positive",
            ini='ragmetrics_metrics = "recall_at_five"\n',
        ),
        id="ini-bad-metric-k",
    ),
    pytest.param(
        usage_case("ragmetrics_k: '0' must be a positive integer", ini='ragmetrics_k = "0"\n'),
        id="ini-k-zero",
    ),
    pytest.param(
        usage_case(
            "ragmetrics_metrics: unknown metric 'hits_rate'", "--ragmetrics-metrics=hits_rate"
        ),
        id="cli-unknown-metric",
    ),
    pytest.param(
        usage_case(
            "ragmetrics_metrics: metric 'P@-3': cutoff '-3' must be a positive",
            "--ragmetrics-metrics=P@-3",
        ),
        id="cli-bad-metric-k",
    ),
    pytest.param(
        usage_case("ragmetrics_k: '2.5' must be a positive integer", "--ragmetrics-k=2.5"),
        id="cli-k-fraction",
    ),
    pytest.param(
        usage_case(
            "ragmetrics_tolerance (ndcg_at_10): tolerance '-0.1' must be a non-negative number",
            "--ragmetrics-tolerance=ndcg_at_10=-0.1",
        ),
        id="cli-negative-tolerance",
    ),
    pytest.param(Case(metric_in_test_body), id="test-body-bad-metric-k"),
    pytest.param(Case(cli_bad_metric), id="ragmetrics-evaluate-bad-metric"),
    pytest.param(Case(report_path_is_a_folder), id="report-path-is-a-folder"),
    pytest.param(Case(report_cannot_be_written), id="report-cannot-be-written"),
    pytest.param(Case(report_folder_is_a_file), id="report-folder-is-a-file"),
    # the baseline
    pytest.param(baseline_case(lambda text: "", "the baseline file is empty"), id="baseline-empty"),
    pytest.param(
        baseline_case(lambda text: text[: len(text) // 2], "the baseline file is not valid JSON"),
        id="baseline-truncated",
    ),
    pytest.param(
        baseline_case(
            lambda text: text.replace('"schema_version": 1', '"schema_version": 7'),
            "written by a newer pytest-ragmetrics (baseline schema 7",
        ),
        id="baseline-newer-schema",
    ),
    pytest.param(
        baseline_case(_edit_entry("metrics", '{"ndcg_at_10": "0.9"}'), "'metrics' must map"),
        id="baseline-metric-is-text",
    ),
    pytest.param(
        baseline_case(_edit_entry("dataset", '"scifact"'), "'dataset' must be an object"),
        id="baseline-dataset-is-text",
    ),
    pytest.param(
        baseline_case(_edit_entry("identity", '["bm25"]'), "'identity' must be an object"),
        id="baseline-identity-is-list",
    ),
    pytest.param(
        baseline_case(
            _edit_entry("details", '{"first_relevant_rank": {"q1": "top"}}'),
            "details value 'first_relevant_rank' for query 'q1' is not an integer",
        ),
        id="baseline-rank-is-text",
    ),
    # the cache
    pytest.param(
        Case(unreadable_cache_entry_is_rewritten, damage_cache_entry, may_change=("cache/run/",)),
        id="cache-entry-unreadable",
    ),
    pytest.param(
        Case(hand_edited_http_verdict, may_change=("cache/judge-verdicts/",)),
        id="cache-http-verdict-hand-edited",
    ),
    pytest.param(
        Case(hand_edited_embedding_similarity, may_change=("cache/judge-verdicts/",)),
        id="cache-similarity-hand-edited",
    ),
    # retrievers
    pytest.param(
        Case(
            _retriever_error(
                ["d1", "d9"], "returned document 'd9' for query 'q1'", "corpus has no such"
            )
        ),
        id="retriever-unknown-doc",
    ),
    pytest.param(
        Case(_retriever_error(["d1", "d2", "d1"], "returned document 'd1' twice for query 'q1'")),
        id="retriever-duplicate-doc",
    ),
    pytest.param(
        Case(_retriever_error([("d1", float("inf"))], "score inf for document 'd1', query 'q1'")),
        id="retriever-inf-score",
    ),
    pytest.param(Case(retriever_short), id="retriever-fewer-than-k"),
    pytest.param(Case(retriever_nothing), id="retriever-nothing-for-most-queries"),
    pytest.param(Case(plugin_retriever_unknown_ids), id="plugin-retriever-unknown-doc"),
    # judges
    pytest.param(
        Case(http_judge_garbage("<html>teapot</html>", "malformed reply", "not JSON")),
        id="http-judge-not-json",
    ),
    pytest.param(
        Case(http_judge_garbage({"choices": [{"text": "yes"}]}, "no choices[0].message.content")),
        id="http-judge-wrong-shape",
    ),
    pytest.param(
        Case(http_judge_garbage(completion(["yes"]), "message content is list")),
        id="http-judge-content-not-text",
    ),
    pytest.param(Case(http_judge_rambles), id="http-judge-neither-yes-nor-no"),
    pytest.param(Case(recorded_verdicts_garbage), id="recorded-verdicts-garbage"),
]


@pytest.mark.parametrize("case", CASES)
def test_bad_input(
    pytester: pytest.Pytester, template: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    shutil.copytree(template, pytester.path, dirs_exist_ok=True)
    project = Project(pytester, template)
    if case.prepare is not None:
        case.prepare(project)
    before = snapshot(project.state)
    case.act(project)
    assert_untouched(before, snapshot(project.state), case.may_change)


def test_the_matrix_is_large_enough() -> None:
    assert len(CASES) >= 30
