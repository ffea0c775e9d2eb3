"""Safety: nothing we read executes code; configured output paths stay inside the project;
nothing reaches the network unless an HTTP judge is configured (checked with network_guard)."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_ragmetrics.cache import Cache, identity_key
from pytest_ragmetrics.errors import RagMetricsWarning
from tests.helpers.fake_openai import serve
from tests.helpers.paths import REPO
from tests.helpers.plugin_project import UNRELATED_PLUGINS, make_project, write_dataset

PACKAGE = REPO / "pytest_ragmetrics"
TESTS_DIR = REPO  # where tests.helpers.network_guard is imported from in a child pytest

# --- (a) nothing we read executes code -------------------------------------------------------

# Modules whose loaders run code from the data they read.
CODE_LOADING_MODULES = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "marshal"}
CODE_LOADING_MODULES |= {"shelve", "joblib", "yaml", "jsonpickle"}
CODE_RUNNING_BUILTINS = {"eval", "exec", "compile", "__import__"}


def unsafe_calls(source: str) -> list[str]:
    """Every construct in ``source`` that could execute code found in data it reads."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]]
        else:
            names = []
        problems += [f"line {node.lineno}: imports {n}" for n in names if n in CODE_LOADING_MODULES]
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = owner = ""
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
            owner = func.value.id if isinstance(func.value, ast.Name) else ""
        keywords = {k.arg: k.value for k in node.keywords}
        if isinstance(func, ast.Name) and name in CODE_RUNNING_BUILTINS:
            problems.append(f"line {node.lineno}: calls {name}()")
        if owner in {"torch", "yaml"} and name in {"load", "unsafe_load", "full_load"}:
            problems.append(f"line {node.lineno}: calls {owner}.{name}()")
        pickle = keywords.get("allow_pickle")
        if (
            owner in {"np", "numpy"}
            and name == "load"
            and not (isinstance(pickle, ast.Constant) and pickle.value is False)
        ):
            problems.append(f"line {node.lineno}: np.load without allow_pickle=False")
        elif pickle is not None and not (
            isinstance(pickle, ast.Constant) and pickle.value is False
        ):
            problems.append(f"line {node.lineno}: allow_pickle is not False")
        remote = keywords.get("trust_remote_code")
        if remote is not None and not (isinstance(remote, ast.Constant) and remote.value is False):
            problems.append(f"line {node.lineno}: trust_remote_code is not False")
    return problems


def test_the_scanner_finds_each_unsafe_construct() -> None:
    sample = textwrap.dedent(
        """
        import pickle
        from yaml import load
        import numpy as np
        eval("1")
        exec("x = 1")
        np.load("a.npy")
        np.load("a.npy", allow_pickle=True)
        np.save("a.npy", x, allow_pickle=True)
        torch.load("w.bin")
        AutoModel.from_pretrained("m", trust_remote_code=True)
        np.load("a.npy", allow_pickle=False)  # fine
        rag_eval.retrieval(run)  # fine: a method named like a builtin is not the builtin
        """
    )
    found = unsafe_calls(sample)
    assert [p.split(": ", 1)[1] for p in found] == [
        "imports pickle",
        "imports yaml",
        "calls eval()",
        "calls exec()",
        "np.load without allow_pickle=False",
        "np.load without allow_pickle=False",
        "allow_pickle is not False",
        "calls torch.load()",
        "trust_remote_code is not False",
    ]


def test_the_package_reads_nothing_that_executes_code() -> None:
    problems = {
        str(path.relative_to(PACKAGE.parent)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := unsafe_calls(path.read_text(encoding="utf-8")))
    }
    assert problems == {}
    # And the plain-text spellings, in case code builds them dynamically.
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for needle in ("allow_pickle=True", "yaml.load(", "pickle.load", "pickle.loads"):
            assert needle not in text, f"{path}: {needle}"


class _Payload:
    """Unpickling this creates ``marker``: proof that the payload is live."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


def test_a_planted_pickle_in_the_cache_is_refused_never_unpickled(tmp_path: Path) -> None:
    identity = {"model": "m", "corpus": "c"}
    good = {"vectors": np.arange(12, dtype=np.float32).reshape(3, 4)}
    cache = Cache(tmp_path / "cache")
    cache.put_arrays("embeddings", identity, good)
    entry = tmp_path / "cache" / "embeddings" / identity_key("embeddings", identity)
    marker = tmp_path / "code-ran"
    payload = np.array([_Payload(marker)], dtype=object)
    # An object array saved with pickle, under the name and (faked) shape the manifest expects.
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["arrays"]["vectors"] = {"shape": [1], "dtype": "object"}
    (entry / "manifest.json").write_text(json.dumps(manifest))
    np.save(entry / "vectors.npy", payload, allow_pickle=True)
    with pytest.warns(RagMetricsWarning, match=r"unreadable .*allow_pickle=False.*rewriting it"):
        assert Cache(tmp_path / "cache").get_arrays("embeddings", identity) is None
    assert not marker.exists()
    # Treated as a miss: recomputed and rewritten, and the next reader hits.
    again = Cache(tmp_path / "cache").arrays("embeddings", identity, lambda: good)
    np.testing.assert_array_equal(again["vectors"], good["vectors"])
    assert Cache(tmp_path / "cache").get_arrays("embeddings", identity) is not None
    assert not marker.exists()
    # The payload is live: loading it the unsafe way does run it.
    np.save(tmp_path / "evil.npy", payload, allow_pickle=True)
    np.load(tmp_path / "evil.npy", allow_pickle=True)
    assert marker.exists()


@pytest.mark.parametrize("planted", ["raw-pickle", "npz-archive", "arrays-not-an-object"])
def test_other_planted_files_are_unreadable_entries(tmp_path: Path, planted: str) -> None:
    import pickle  # test only: to plant what the cache must refuse

    identity = {"model": "m"}
    Cache(tmp_path).put_arrays("run", identity, {"x": np.ones(3)})
    entry = tmp_path / "run" / identity_key("run", identity)
    if planted == "raw-pickle":
        (entry / "x.npy").write_bytes(pickle.dumps(_Payload(tmp_path / "code-ran")))
    elif planted == "npz-archive":
        with open(entry / "x.npy", "wb") as handle:
            np.savez(handle, x=np.ones(3))
    else:
        manifest = json.loads((entry / "manifest.json").read_text())
        manifest["arrays"] = ["x"]
        (entry / "manifest.json").write_text(json.dumps(manifest))
    with pytest.warns(RagMetricsWarning, match="unreadable"):
        assert Cache(tmp_path).get_arrays("run", identity) is None
    assert not (tmp_path / "code-ran").exists()
    assert not entry.exists()  # discarded, to be rewritten


# --- (b) configured output paths stay inside the project ---------------------------------------

OUTPUTS = {
    "ragmetrics_baseline": "baseline.json",
    "ragmetrics_cache_dir": "cache",
    "ragmetrics_json": "report.json",
    "ragmetrics_markdown": "report.md",
}
TESTS = """
    def test_retrieval(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="toy")
"""


@pytest.mark.parametrize("form", ["ini", "cli"])
@pytest.mark.parametrize("option", list(OUTPUTS))
def test_relative_paths_escaping_the_project_are_refused(
    pytester: pytest.Pytester, option: str, form: str
) -> None:
    escape = f"../outside/{OUTPUTS[option]}"
    ini = f'{option} = "{escape}"\n' if form == "ini" else ""
    make_project(pytester, ini=ini, tests=TESTS)
    args = [f"--{option.replace('_', '-')}={escape}"] if form == "cli" else []
    result = pytester.runpytest("--ragmetrics-update-baseline", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"pytest-ragmetrics: {option}: '{escape}' points outside the project" in (
        result.stderr.str()
    )
    assert not (pytester.path.parent / "outside").exists()


def test_a_symlink_out_of_the_project_is_an_escape_too(pytester: pytest.Pytester) -> None:
    outside = pytester.path.parent / "elsewhere"
    outside.mkdir()
    make_project(pytester, tests=TESTS)
    (pytester.path / "reports").symlink_to(outside)
    result = pytester.runpytest("--ragmetrics-json=reports/report.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ragmetrics_json: 'reports/report.json' points outside the project" in (
        result.stderr.str()
    )
    assert not any(outside.iterdir())


def _write_everything(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest("--ragmetrics-update-baseline", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    return result


def test_absolute_paths_are_the_users_choice(pytester: pytest.Pytester, tmp_path: Path) -> None:
    if importlib.util.find_spec("bm25s") is None:  # the built-in BM25 retriever's run cache
        pytest.skip("bm25s is not installed")
    elsewhere = tmp_path / "elsewhere"
    make_project(pytester, ini='ragmetrics_retriever = "bm25"\n', conftest="", tests=TESTS)
    _write_everything(
        pytester,
        *(f"--{o.replace('_', '-')}={elsewhere / name}" for o, name in OUTPUTS.items()),
    )
    assert (elsewhere / "baseline.json").is_file()
    assert any((elsewhere / "cache" / "run").iterdir())
    assert json.loads((elsewhere / "report.json").read_text())["evaluations"]
    assert "toy" in (elsewhere / "report.md").read_text()
    assert not (pytester.path / ".ragmetrics").exists()


def test_dot_dot_that_stays_inside_is_fine(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini='ragmetrics_json = "reports/../out/report.json"\n',
        tests=TESTS,
    )
    _write_everything(pytester)
    assert (pytester.path / "out" / "report.json").is_file()


def test_command_line_paths_are_relative_to_where_pytest_runs(pytester: pytest.Pytester) -> None:
    """From a subfolder, ``../report.json`` is the project's top folder: inside, accepted."""
    make_project(pytester, tests=TESTS)
    sub = pytester.mkdir("sub")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(sub)
        result = pytester.runpytest(
            "--ragmetrics-update-baseline",
            "-p",
            "no:cacheprovider",
            "--ragmetrics-json=../report.json",
            "--ragmetrics-markdown=report.md",
            str(pytester.path),
        )
        result.assert_outcomes(passed=1)
        assert (pytester.path / "report.json").is_file()
        assert (sub / "report.md").is_file()
        escaping = pytester.runpytest("--ragmetrics-json=../../report.json", str(pytester.path))
    assert escaping.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"ragmetrics_json: '../../report.json' points outside the project ({pytester.path}) "
        f"and the folder pytest runs in ({sub})"
    ) in escaping.stderr.str()
    assert not (pytester.path.parent / "report.json").exists()


# --- (c) no network unless an HTTP judge is configured -----------------------------------------

GUARD = ("-p", "tests.helpers.network_guard")
SPEED = ("-p", "no:cacheprovider", *UNRELATED_PLUGINS)


def subprocess_env() -> dict[str, str]:
    path = os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


ATTEMPTS = """
    import socket
    import urllib.request

    import pytest


    def test_swallowed_connect():
        try:
            socket.create_connection(("192.0.2.1", 80), timeout=0.5)
        except OSError:
            pass  # code that falls back silently must still fail the session


    def test_swallowed_connect_ex_and_lookup():
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            with pytest.raises(OSError, match="blocked by network_guard"):
                sock.connect_ex(("2001:db8::1", 443))
        with pytest.raises(OSError):
            socket.getaddrinfo("example.invalid", 443)
        assert socket.getaddrinfo("localhost", 80)  # local names still resolve
        with pytest.raises(OSError):
            urllib.request.urlopen("http://example.invalid/", timeout=0.5)


    def test_unix_sockets_are_fine():
        left, right = socket.socketpair(socket.AF_UNIX)
        left.sendall(b"ping")
        assert right.recv(4) == b"ping"
        left.close()
        right.close()
"""


def test_network_guard_fails_a_session_that_tried_to_connect(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_net=textwrap.dedent(ATTEMPTS))
    result = pytester.runpytest(*GUARD, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*network_guard: 4 blocked network access*",
            "*socket.create_connection to 192.0.2.1:80",
            "*socket.connect_ex to 2001:db8::1:443",
            "*socket.getaddrinfo of example.invalid:443",
            "*socket.create_connection to example.invalid:80",
            "network_guard: the session fails; code under test must not reach the network",
        ]
    )


def test_network_guard_sees_xdist_workers(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_net=textwrap.dedent(ATTEMPTS))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *GUARD, *SPEED, "-n", "2"],
        cwd=pytester.path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout
    assert "3 passed" in done.stdout
    assert "network_guard: 4 blocked network access" in done.stdout


def test_network_guard_passes_a_quiet_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_quiet="def test_it():\n    assert True\n")
    result = pytester.runpytest(*GUARD)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["network_guard: no network access attempted"])


def test_the_http_judge_talks_only_to_its_url(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Allowed its own endpoint only, the judge works, and nothing else (not even the proxy
    of the environment) is contacted."""
    pytester.makepyfile(
        test_judge="""
        import os

        from pytest_ragmetrics.judges import HttpJudge
        from pytest_ragmetrics.transport import Endpoint


        def test_judge():
            judge = HttpJudge(Endpoint(os.environ["JUDGE_URL"], "tiny", max_retries=0))
            a = judge.assess("which animal purrs?", "Cats purr SUPPORTED.", ["Cats purr."])
            assert a.groundedness == 1.0
        """
    )
    with serve() as server:
        monkeypatch.setenv("JUDGE_URL", server.url)
        monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
        monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
        port = server.url.rsplit(":", 1)[1]
        result = pytester.runpytest(*GUARD, f"--network-guard-allow=127.0.0.1:{port}")
        assert server.count == 2  # one claim, one relevance question
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["network_guard: no network access attempted"])


REAL_PATHS = """
    import pytest

    from pytest_ragmetrics.judges import EmbeddingJudge
    from pytest_ragmetrics.retrievers import BM25Retriever


    @pytest.mark.rag_threshold(recall_at_1=0.5)
    def test_dense(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="dense")


    def test_bm25(rag_eval, rag_corpus, rag_queries, rag_cache):
        retriever = BM25Retriever(rag_corpus, cache=rag_cache)
        rag_eval.retrieval(retriever.search(rag_queries, 3), name="bm25", retriever=retriever)


    def test_answers(rag_eval, rag_cache):
        judge = EmbeddingJudge(cache=rag_cache)
        answer = judge.assess(
            "which animal purrs",
            "Cats purr. Cats sleep all day.",
            ["Cats purr and sleep all day."],
            query_id="q1",
        )
        rag_eval.answers([answer])


    def test_query(rag_query):
        assert rag_query.ranking
"""


def test_the_plugins_real_code_paths_make_no_connection(tmp_path: Path) -> None:
    """Dataset load, dense retrieval with its caches, BM25, the embedding judge, a baseline
    update and both reports, cold and then warm, under the guard: exit 0, no attempt."""
    # find_spec, not importorskip: importing these here, after in-process pytester runs put
    # back sys.modules, would load numpy's extension modules a second time.
    for name in ("sentence_transformers", "faiss", "bm25s"):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed")
    write_dataset(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'ragmetrics_dataset = "data"\n'
        'ragmetrics_retriever = "dense"\n'
        'ragmetrics_k = "3"\n'
        'ragmetrics_metrics = "ndcg_at_10 recall_at_1 mrr groundedness"\n'
    )
    (tmp_path / "test_rag.py").write_text(textwrap.dedent(REAL_PATHS))
    for extra in (["--ragmetrics-update-baseline"], ["--ragmetrics-strict"]):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "pytest", *GUARD, *SPEED, "-p", "no:xdist"),
                *("--ragmetrics-json=report.json", "--ragmetrics-markdown=summary.md", *extra),
            ],
            cwd=tmp_path,
            env=subprocess_env(),
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "7 passed" in done.stdout
        assert "network_guard: no network access attempted" in done.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert {e["name"] for e in report["evaluations"]} == {"dense", "bm25", "answers"}
    assert (tmp_path / ".ragmetrics" / "baseline.json").is_file()
    assert (tmp_path / "summary.md").read_text().count("## pytest-ragmetrics\n") == 2
    cache = tmp_path / ".ragmetrics" / "cache"
    assert {p.name for p in cache.iterdir() if p.is_dir()} >= {"embeddings", "run"}
