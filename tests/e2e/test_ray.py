"""The Ray executor: same embeddings, runs and cache entries as the local path; clear errors;
nothing of Ray imported unless it is used. Tiny corpora here; SciFact in test_ray_scifact.py."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import functools
import io
import itertools
import json
import operator
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.data.model import Corpus, Queries, Run
from pytest_ragmetrics.errors import ConfigError, ExecutorError, JudgeError
from pytest_ragmetrics.executors import LocalExecutor, RayExecutor, resolve_executor
from pytest_ragmetrics.executors.ray_cluster import check_reachable
from pytest_ragmetrics.judges.base import check_text
from pytest_ragmetrics.judges.many import assess_many
from pytest_ragmetrics.retrievers.dense import DenseRetriever
from pytest_ragmetrics.retrievers.faiss_search import build_faiss_index, exact_top_k
from pytest_ragmetrics.retrievers.ray_backend import search_shard

# Twelve short documents; d3/d9 and d5/d11 are the same text, so their scores tie exactly.
TEXTS = [
    "Cats purr when they are content.",
    "Bake bread in a hot oven.",
    "The Moon orbits the Earth every month.",
    "Storms bring heavy rain and wind.",
    "Dogs bark at the postman.",
    "Vaccines train the immune system.",
    "Rivers carve valleys over millennia.",
    "Coffee contains caffeine.",
    "Bees pollinate flowers in spring.",
    "Storms bring heavy rain and wind.",
    "Glaciers retreat as the climate warms.",
    "Vaccines train the immune system.",
]
CORPUS = Corpus([f"d{i}" for i in range(len(TEXTS))], [""] * len(TEXTS), TEXTS)
QUERIES = Queries.from_dict(
    {
        "q1": "why do cats purr",
        "q2": "heavy rain storms",
        "q3": "how do vaccines work",
        "q4": "what is in coffee",
    }
)


def _same_run(a: Run, b: Run) -> None:
    """Identical runs: the same queries, documents, order and scores, bit for bit."""
    assert a.query_ids.tolist() == b.query_ids.tolist()
    assert np.array_equal(a.offsets, b.offsets)
    assert a.doc_ids[a.doc_codes].tolist() == b.doc_ids[b.doc_codes].tolist()
    assert np.array_equal(a.scores, b.scores)
    assert a.fingerprint == b.fingerprint


# -- exact search: shards merged give the one-index run, ties included (no Ray needed) ---------


@pytest.mark.parametrize("seed", range(6))
def test_shard_merge_equals_one_index_and_the_canonical_top_k(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Few distinct integer vectors repeated: many exact ties, also across the cut.
    base = rng.integers(-2, 3, size=(int(rng.integers(3, 12)), 8)).astype(np.float32)
    size = int(rng.integers(20, 400))
    embeddings = base[rng.integers(0, len(base), size)]
    vectors = rng.integers(-2, 3, size=(int(rng.choice([3, 30])), 8)).astype(np.float32)
    doc_ids = [f"doc{i:04d}" for i in range(size)]
    query_ids = [f"q{i}" for i in range(len(vectors))]
    depth = int(rng.integers(1, 60))

    scores, indices = exact_top_k(build_faiss_index(embeddings), vectors, depth)
    whole = Run.from_arrays(query_ids, indices, scores, doc_ids).truncate(depth)

    bounds = np.linspace(0, size, 4).astype(int)
    parts = [
        search_shard(embeddings[a:b], int(a), vectors, depth) for a, b in itertools.pairwise(bounds)
    ]
    merged = Run.from_arrays(
        query_ids,
        np.concatenate([p[1] for p in parts], axis=1),
        np.concatenate([p[0] for p in parts], axis=1),
        doc_ids,
    ).truncate(depth)
    _same_run(whole, merged)

    # Both are the first `depth` documents of the canonical order over every document.
    everything = np.tile(np.arange(size), (len(vectors), 1))
    full = Run.from_arrays(query_ids, everything, vectors @ embeddings.T, doc_ids).truncate(depth)
    assert whole.doc_ids[whole.doc_codes].tolist() == full.doc_ids[full.doc_codes].tolist()


# -- configuration errors (no cluster needed) --------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"actors": 0}, "actors must be a positive integer, got 0"),
        ({"actors": "2"}, "actors must be a positive integer, got '2'"),
        ({"gpus_per_actor": -1}, "gpus_per_actor must be a finite number >= 0, got -1"),
        ({"cpus_per_actor": 0}, "cpus_per_actor and gpus_per_actor are both 0"),
        ({"threads_per_actor": 0}, "threads_per_actor must be a positive integer"),
        ({"shards": 1.5}, "shards must be a positive integer"),
        ({"address": " "}, "address must be a Ray address"),
        ({"address": "head-node"}, "Ray address 'head-node' is not host:port"),
    ],
)
def test_bad_ray_options_are_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        RayExecutor(**options)
    assert message in str(info.value)


def test_an_unknown_executor_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"DenseRetriever: executor must be 'local' or 'ray'"):
        DenseRetriever(CORPUS, executor="spark")
    assert isinstance(resolve_executor(None, "x"), LocalExecutor)
    assert isinstance(resolve_executor("ray", "x"), RayExecutor)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_address_fails_fast_and_says_what_to_check() -> None:
    started = time.perf_counter()
    with pytest.raises(
        ExecutorError,
        match=r"cannot reach the Ray cluster at 'ray://127\.0\.0\.1:\d+' \(.*\); check RAY_ADDRESS",
    ):
        check_reachable(f"ray://127.0.0.1:{_closed_port()}", timeout=2)
    assert time.perf_counter() - started < 10
    with pytest.raises(ConfigError, match="is not host:port"):
        check_reachable("head-node")


def _python(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


def test_an_unreachable_ray_address_is_one_clear_line_from_the_cli(tmp_path: Path) -> None:
    data = _write_dataset(tmp_path)
    # In a fresh process: this one may already be connected to a cluster.
    result = _python(
        f"""
        import sys
        from pytest_ragmetrics.cli import main
        sys.exit(main(["retrieve", "--dataset", {str(data)!r}, "--retriever", "dense",
                       "--no-cache", "--out", {str(tmp_path / "run.trec")!r}, "--ray"]))
        """,
        env={"RAY_ADDRESS": f"127.0.0.1:{_closed_port()}"},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("ragmetrics retrieve: error: cannot reach the Ray cluster at")
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_ray_not_installed_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    retriever = DenseRetriever(CORPUS, executor="ray")
    with pytest.raises(ExecutorError, match=r"pip install 'pytest-ragmetrics\[ray\]'"):
        retriever.corpus_embeddings()


# -- nothing of Ray unless it is used ----------------------------------------------------------


def test_importing_the_plugin_and_retrievers_does_not_import_ray() -> None:
    result = _python(
        """
        import sys
        import pytest_ragmetrics.plugin, pytest_ragmetrics.retrievers, pytest_ragmetrics.executors
        import pytest_ragmetrics.judges.many, pytest_ragmetrics.cli
        from pytest_ragmetrics.data.model import Corpus
        from pytest_ragmetrics.retrievers import DenseRetriever
        DenseRetriever(Corpus(["d"], [""], ["text"]), executor="ray")  # built, not used
        print(sorted(m for m in sys.modules if m == "ray" or m.startswith("ray.")))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_pytest_start_up_does_not_import_ray(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_no_ray():
            assert "ray" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "ragmetrics", "-q")
    result.assert_outcomes(passed=1)


def test_a_warm_cache_needs_no_ray(tmp_path: Path) -> None:
    """A laptop or CI job with the cache gets hits with executor='ray' set, and never imports
    Ray (so it does not need it installed or a cluster)."""
    result = _python(
        f"""
        import sys
        from pytest_ragmetrics.data.model import Corpus, Queries
        from pytest_ragmetrics.retrievers import DenseRetriever
        corpus = Corpus(["a", "b", "c"], ["", "", ""], ["cats purr", "dogs bark", "rain falls"])
        queries = Queries.from_dict({{"q": "purring cats"}})
        local = DenseRetriever(corpus, cache={str(tmp_path)!r}).search(queries, 2)
        sys.modules["ray"] = None  # not installed
        remote = DenseRetriever(corpus, cache={str(tmp_path)!r}, executor="ray")
        assert remote.search(queries, 2).fingerprint == local.fingerprint
        assert remote.cache.hits == 1 and remote.corpus_encodings == 0
        print("ok")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# -- the same numbers on a cluster --------------------------------------------------------------


def _descendants(root: int) -> set[int]:
    """``root`` and every process below it (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = {root}
    while True:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        if not more:
            return found
        found |= more


def _listening_addresses(pids: set[int]) -> set[str]:
    """IP addresses on which these processes listen for TCP connections."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        inodes |= {link[8:-1] for link in links if link.startswith("socket:[")}
    addresses = set()
    for table, width in (("tcp", 4), ("tcp6", 16)):
        lines = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(local.split(":")[0])
            # The kernel prints each 32-bit word in host (little-endian) order.
            ip = b"".join(raw[i : i + 4][::-1] for i in range(0, width, 4))
            addresses.add(socket.inet_ntop(socket.AF_INET if width == 4 else socket.AF_INET6, ip))
    return addresses


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc")
def test_the_local_cluster_listens_on_loopback_only(ray_executor: RayExecutor) -> None:
    assert ray_executor.owns_cluster
    addresses = _listening_addresses(_descendants(os.getpid()))
    assert addresses, "the cluster's servers should be listening"
    assert addresses <= {"127.0.0.1", "::1", "::ffff:127.0.0.1"}, addresses


def test_ray_encodes_and_searches_like_the_local_path(ray_executor: RayExecutor) -> None:
    local = DenseRetriever(CORPUS, chunk_size=5)
    remote = DenseRetriever(CORPUS, chunk_size=5, executor=ray_executor)
    assert np.array_equal(remote.corpus_embeddings(), local.corpus_embeddings())
    # k > the corpus: every document, so every score (hence every query embedding) is compared.
    _same_run(remote.search(QUERIES, 20), local.search(QUERIES, 20))


def test_shards_and_a_tie_at_the_cut(ray_executor: RayExecutor) -> None:
    executor = RayExecutor(actors=2, shards=5, threads_per_actor=ray_executor.threads_per_actor)
    remote = DenseRetriever(CORPUS, executor=executor)
    run = remote.search(QUERIES, 1)
    _same_run(run, DenseRetriever(CORPUS).search(QUERIES, 1))
    # d3 and d9 tie for "heavy rain storms" (same text) and sit in different shards: the larger
    # id is kept, as the run's canonical order says.
    assert run.ranking("q2")[0][0] == "d9"


def test_a_cache_filled_on_ray_is_a_hit_for_the_local_path(
    ray_executor: RayExecutor, tmp_path: Path
) -> None:
    remote = DenseRetriever(CORPUS, cache=tmp_path, executor=ray_executor)
    local = DenseRetriever(CORPUS, cache=tmp_path)
    # The executor is in neither the identity nor the cache keys.
    assert remote.identity() == local.identity()
    assert remote.embedding_key() == local.embedding_key()
    ray_run = remote.search(QUERIES, 3)
    assert remote.corpus_encodings == 1
    local_run = local.search(QUERIES, 3)
    assert local.corpus_encodings == 0 and local.query_encodings == 0
    assert local.cache is not None and local.cache.hits == 1
    _same_run(local_run, ray_run)
    # ...and the embeddings the cluster stored are the ones the local path computes.
    fresh = DenseRetriever(CORPUS).corpus_embeddings()
    assert np.array_equal(local.corpus_embeddings(), fresh)
    assert local.corpus_encodings == 0


def test_too_many_actors_or_missing_gpus_fail_instead_of_waiting(ray_executor: RayExecutor) -> None:
    with pytest.raises(
        ConfigError,
        match=r"3 actors of 1 CPUs each do not fit the Ray cluster \(2 CPUs, 0 GPUs\); ask for "
        r"at most 2",
    ):
        DenseRetriever(CORPUS, executor=RayExecutor(actors=3)).corpus_embeddings()
    with pytest.raises(ConfigError, match="gpus_per_actor=1 but the Ray cluster has 0 GPUs"):
        DenseRetriever(CORPUS, executor=RayExecutor(gpus_per_actor=1)).corpus_embeddings()


def test_a_model_that_cannot_load_on_the_actors_is_our_error(
    ray_executor: RayExecutor, tmp_path: Path
) -> None:
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    retriever = DenseRetriever(CORPUS, folder, executor=ray_executor)
    with pytest.raises(Exception) as info:
        retriever.corpus_embeddings()
    assert type(info.value).__name__ == "RetrieverError"
    assert f"cannot load model {str(folder)!r}" in str(info.value)


# -- the fan-out: local threads and Ray actors ---------------------------------------------------


# Ray workers import functions by module: these come from modules they can import.
_double = functools.partial(operator.mul, 2)
_text_only = functools.partial(check_text, what="item")  # JudgeError for a non-string


def test_local_map_keeps_order_and_its_limit() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def slow(x: int) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        return x * x

    assert LocalExecutor(3).map(slow, list(range(12))) == [x * x for x in range(12)]
    assert 1 < peak <= 3
    peak = 0
    assert LocalExecutor().map(slow, [1, 2, 3]) == [1, 4, 9]
    assert peak == 1
    with pytest.raises(JudgeError, match="item must be a string, got int"):
        LocalExecutor(4).map(_text_only, ["a", "b", 3, 4.5, "c"])


def test_ray_map_keeps_order_and_raises_the_first_failure_as_it_was(
    ray_executor: RayExecutor,
) -> None:
    assert ray_executor.map(_double, list(range(9)), concurrency=3) == [2 * x for x in range(9)]
    assert ray_executor.map(_double, []) == []
    with pytest.raises(JudgeError, match="item must be a string, got int"):
        ray_executor.map(_text_only, ["a", "b", 3, 4.5, "c"], concurrency=2)
    lock = threading.Lock()
    with pytest.raises(ExecutorError, match="cannot be pickled"):
        ray_executor.map(lambda x: lock, [1])


def test_assess_many_on_ray_gives_the_local_assessments(ray_executor: RayExecutor) -> None:
    from pytest_ragmetrics.judges.embedding import EmbeddingJudge

    answers = [
        (
            "why do cats purr",
            "Cats purr when content. The Moon is cheese.",
            ["Cats purr when they are content."],
        ),
        (
            "what is in coffee",
            "Coffee contains caffeine.",
            {"c1": "Coffee contains caffeine."},
            "q4",
        ),
        {
            "query": "rain",
            "answer": "Storms bring rain.",
            "contexts": ["Storms bring heavy rain."],
            "query_id": "q2",
        },
    ]
    local = assess_many(EmbeddingJudge(), answers)
    remote = assess_many(EmbeddingJudge(), answers, executor=ray_executor, concurrency=2)
    assert [a.query_id for a in remote] == [a.query_id for a in local]
    assert [[(c.text, c.supported) for c in a.claims] for a in remote] == [
        [(c.text, c.supported) for c in a.claims] for a in local
    ]
    assert [a.groundedness for a in remote] == [a.groundedness for a in local]


def test_answers_generated_on_ray_are_the_local_answers_and_cached(
    ray_executor: RayExecutor, tmp_path: Path
) -> None:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.generation import RetrieveThenGenerate, answer_all
    from pytest_ragmetrics.retrievers import from_function

    corpus = Corpus(["d1", "d2"], ["Cats", "Rain"], ["Cats purr.", "Storms bring rain."])
    queries = {"q1": "why do cats purr", "q2": "when does it rain", "q3": "cats and rain"}

    def pipeline() -> RetrieveThenGenerate:
        retriever = from_function(lambda text: ["d1", "d2"], corpus=corpus, name="fixed")
        return RetrieveThenGenerate(
            retriever, corpus, lambda q, c: f"{q.upper()} | {c[0]}", top_n=1
        )

    local = answer_all(pipeline(), queries)
    cache = Cache(tmp_path)
    remote = answer_all(pipeline(), queries, cache=cache, executor=ray_executor, concurrency=2)
    assert [(a.query_id, a.answer, a.contexts) for a in remote.answers] == [
        (a.query_id, a.answer, a.contexts) for a in local.answers
    ]
    assert remote.cost.calls == 3
    rerun = answer_all(pipeline(), queries, cache=cache)  # no Ray: all from the cache
    assert rerun.cost.calls == 0 and rerun.cost.cache_hits == 3


def test_assess_many_rejects_malformed_answers() -> None:
    with pytest.raises(JudgeError, match="answer 1 is str; give \\(query, answer, contexts\\)"):
        assess_many(object(), [("q", "a", ["c"]), "just text"])  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match="answer 0 has no contexts"):
        assess_many(object(), [{"query": "q", "answer": "a"}])  # type: ignore[arg-type]


# -- the CLI and the plugin ------------------------------------------------------------------------


def _write_dataset(root: Path) -> Path:
    data = root / "tiny"
    (data / "qrels").mkdir(parents=True, exist_ok=True)
    (data / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n" for i, t in enumerate(TEXTS)
        )
    )
    (data / "queries.jsonl").write_text(
        "".join(
            json.dumps({"_id": q, "text": t}) + "\n"
            for q, t in zip(QUERIES.query_ids.tolist(), QUERIES.texts, strict=True)
        )
    )
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td0\t1\nq2\td3\t1\nq3\td5\t1\nq4\td7\t1\n"
    )
    return data


def _computed(cache: Path, kind: str) -> int:
    """Entries of ``kind`` any process computed (not read) in the cache folder."""
    log = cache / kind / "computed.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_cli_retrieve_on_ray_then_locally_from_the_same_cache(
    ray_executor: RayExecutor, tmp_path: Path
) -> None:
    data = _write_dataset(tmp_path)
    common = ["retrieve", "--dataset", str(data), "--retriever", "dense", "--k", "3"]
    cache = ["--cache-dir", str(tmp_path / "cache")]
    code, output = _cli(
        *common, *cache, "--out", str(tmp_path / "ray.trec"), "--ray", "--actors", "2"
    )
    assert code == 0
    assert "Ray: " in output and "2 CPUs" in output
    code, output = _cli(*common, *cache, "--out", str(tmp_path / "local.trec"))
    assert code == 0
    assert (tmp_path / "local.trec").read_bytes() == (tmp_path / "ray.trec").read_bytes()
    assert _computed(tmp_path / "cache", "embeddings") == 1
    # With the cache warm, --ray has nothing to do on the cluster.
    code, output = _cli(*common, *cache, "--out", str(tmp_path / "again.trec"), "--ray")
    assert code == 0 and "Ray: nothing to do: cache hit" in output


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ray", "--actors", "0"], "--actors must be a positive integer, got 0"),
        (["--actors", "2"], "--actors and --gpus-per-actor: only with --ray"),
        (["--ray", "--gpus-per-actor", "-1"], "--gpus-per-actor must be a number >= 0"),
        (["--ray", "--retriever", "bm25"], "--ray: only for --retriever dense"),
        (["--ray", "nonsense"], "Ray address 'nonsense' is not host:port"),
    ],
)
def test_cli_ray_flag_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    data = _write_dataset(tmp_path)
    argv = [
        "retrieve",
        "--dataset",
        str(data),
        "--retriever",
        "dense",
        "--no-cache",
        "--out",
        str(tmp_path / "r.trec"),
    ]
    if "--retriever" in flags:  # a second --retriever is refused, not the last one kept
        del argv[3:5]
    code, _ = _cli(*argv, *flags)
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def _plugin_project(pytester: pytest.Pytester, executor: str, retriever: str = "dense") -> None:
    _write_dataset(pytester.path)
    pytester.makepyprojecttoml(
        textwrap.dedent(
            f"""
            [tool.pytest.ini_options]
            ragmetrics_dataset = "tiny"
            ragmetrics_retriever = "{retriever}"
            ragmetrics_executor = "{executor}"
            ragmetrics_k = "3"
            ragmetrics_metrics = "ndcg_at_3 recall_at_3"
            """
        )
    )
    pytester.makepyfile(
        test_rag="""
        def test_search(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
        """
    )


def test_plugin_ini_key_runs_the_dense_retriever_on_ray(
    ray_executor: RayExecutor, pytester: pytest.Pytester
) -> None:
    # In subprocesses: an in-process run would import parts of Ray Data for the first time
    # and pytester would drop them from sys.modules afterwards, leaving this process with two
    # copies of Ray Data's classes for later tests (an AssertionError deep inside Ray).
    _plugin_project(pytester, "ray")
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--ragmetrics-json=ray.json"
    ).assert_outcomes(passed=1)
    cache = pytester.path / ".ragmetrics" / "cache"
    assert _computed(cache, "embeddings") == 1
    _plugin_project(pytester, "local")
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--ragmetrics-json=local.json"
    ).assert_outcomes(passed=1)
    assert _computed(cache, "embeddings") == 1  # the local run read what Ray stored

    def evaluations(name: str) -> Any:
        report = json.loads((pytester.path / name).read_text())
        return [(e["identity"], e["metrics"], e["per_query"]) for e in report["evaluations"]]

    assert evaluations("ray.json") == evaluations("local.json")


@pytest.mark.parametrize(
    ("executor", "retriever", "message"),
    [
        ("spark", "dense", "ragmetrics_executor: 'spark' must be one of local, ray"),
        ("ray", "bm25", "ragmetrics_executor = ray is for the built-in dense retriever"),
    ],
)
def test_plugin_bad_executor_stops_at_start_up(
    pytester: pytest.Pytester, executor: str, retriever: str, message: str
) -> None:
    _plugin_project(pytester, executor, retriever)
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_loopback_mode_is_restored_for_later_clusters(monkeypatch: pytest.MonkeyPatch) -> None:
    from ray._private import ray_constants

    from pytest_ragmetrics.executors.ray_cluster import _loopback_only

    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)
    before = _loopback_only(True)
    assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
    assert ray_constants.ENABLE_RAY_CLUSTER is False
    _loopback_only(False, before)
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ
    assert ray_constants.ENABLE_RAY_CLUSTER is True
