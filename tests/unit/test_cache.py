"""The content-addressed cache: hits, misses, corrupt entries, locking across processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.cache import Cache, identity_key
from pytest_ragmetrics.errors import CacheError, RagMetricsWarning

IDENTITY = {"model": "m", "digest": "abc", "k": 10}


def _entry(root: Path, kind: str, identity: dict[str, Any]) -> Path:
    return root / kind / identity_key(kind, identity)


def test_miss_then_hit_returns_the_same_arrays(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    calls = []

    def compute() -> dict[str, np.ndarray[Any, Any]]:
        calls.append(1)
        return {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "ids": np.array(["a", "bb"])}

    first = cache.arrays("embeddings", IDENTITY, compute)
    second = cache.arrays("embeddings", IDENTITY, compute)
    assert len(calls) == 1
    np.testing.assert_array_equal(first["x"], second["x"])
    assert second["ids"].tolist() == ["a", "bb"]
    assert (cache.hits, cache.misses, cache.computed) == (1, 1, 1)
    assert cache.computations("embeddings", IDENTITY) == 1


def test_a_different_identity_is_a_miss(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.put_arrays("embeddings", IDENTITY, {"x": np.ones(3)})
    assert cache.get_arrays("embeddings", {**IDENTITY, "k": 11}) is None
    assert cache.get_arrays("embeddings", IDENTITY) is not None


def test_manifest_with_another_identity_under_the_same_key_is_a_miss(tmp_path: Path) -> None:
    # Simulates a hash collision or a hand edit: the key matches, the stored identity does not.
    cache = Cache(tmp_path)
    cache.put_arrays("embeddings", IDENTITY, {"x": np.ones(3)})
    manifest = _entry(tmp_path, "embeddings", IDENTITY) / "manifest.json"
    data = json.loads(manifest.read_text())
    data["identity"]["digest"] = "something else"
    manifest.write_text(json.dumps(data))
    assert cache.get_arrays("embeddings", IDENTITY) is None


@pytest.mark.parametrize(
    "damage",
    [
        "truncate_npy",
        "garbage_npy",
        "garbage_manifest",
        "empty_manifest",
        "missing_npy",
        "edited_npy",  # still a valid .npy of the manifest's shape and dtype: other numbers
        "flipped_byte",  # damage inside the data that np.load cannot notice
    ],
)
def test_corrupt_entry_is_a_miss_with_a_warning_and_is_rewritten(
    tmp_path: Path, damage: str
) -> None:
    cache = Cache(tmp_path)
    good = np.arange(1000, dtype=np.float32)
    cache.arrays("embeddings", IDENTITY, lambda: {"x": good})
    entry = _entry(tmp_path, "embeddings", IDENTITY)
    npy, manifest = entry / "x.npy", entry / "manifest.json"
    if damage == "truncate_npy":
        npy.write_bytes(npy.read_bytes()[:200])
    elif damage == "garbage_npy":
        npy.write_bytes(b"\x00garbage" * 10)
    elif damage == "garbage_manifest":
        manifest.write_text("{not json")
    elif damage == "empty_manifest":
        manifest.write_text("")
    elif damage == "edited_npy":
        np.save(npy, good * 2)
    elif damage == "flipped_byte":
        data = bytearray(npy.read_bytes())
        data[-5] ^= 0x40
        npy.write_bytes(bytes(data))
    else:
        npy.unlink()
    computed = []

    def recompute() -> dict[str, np.ndarray[Any, Any]]:
        computed.append(1)
        return {"x": good}

    with pytest.warns(RagMetricsWarning, match="unreadable.*treating it as a miss"):
        again = Cache(tmp_path).arrays("embeddings", IDENTITY, recompute)
    assert computed == [1]
    np.testing.assert_array_equal(again["x"], good)
    # Rewritten: the next reader hits without a warning.
    fresh = Cache(tmp_path)
    np.testing.assert_array_equal(fresh.get_arrays("embeddings", IDENTITY)["x"], good)  # type: ignore[index]
    assert fresh.hits == 1


def test_pickled_object_arrays_are_never_loaded(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.put_arrays("embeddings", IDENTITY, {"x": np.ones(2)})
    entry = _entry(tmp_path, "embeddings", IDENTITY)
    np.save(entry / "x.npy", np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    with pytest.warns(RagMetricsWarning, match="unreadable"):
        assert cache.get_arrays("embeddings", IDENTITY) is None


def test_object_arrays_are_refused_on_write(tmp_path: Path) -> None:
    with pytest.raises(CacheError, match="dtype object"):
        Cache(tmp_path).put_arrays("run", IDENTITY, {"x": np.array([None, 1], dtype=object)})


def test_disabled_cache_always_computes_and_counts_nothing(tmp_path: Path) -> None:
    for cache in (Cache(None), Cache(tmp_path, enabled=False)):
        calls: list[int] = []

        def compute(calls: list[int] = calls) -> dict[str, np.ndarray[Any, Any]]:
            calls.append(1)
            return {"x": np.ones(1)}

        for _ in range(2):
            cache.arrays("run", IDENTITY, compute)
        assert len(calls) == 2
        assert (cache.hits, cache.misses, cache.computed) == (0, 0, 0)
    assert not any(tmp_path.iterdir())


def test_clear_removes_entries_and_the_compute_log(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.arrays("run", IDENTITY, lambda: {"x": np.ones(1)})
    cache.json("meta", IDENTITY, lambda: {"a": 1})
    assert cache.clear().total == 2
    assert cache.computations("run", IDENTITY) == 0
    assert cache.get_arrays("run", IDENTITY) is None


def _slow_compute_worker(root: str, ready: Any, start: Any, results: Any) -> None:
    cache = Cache(root)
    ready.put(os.getpid())
    start.wait()

    def compute() -> dict[str, np.ndarray[Any, Any]]:
        time.sleep(0.5)  # hold the lock long enough for the other process to queue behind it
        return {"x": np.full(4, os.getpid(), dtype=np.int64)}

    found = cache.arrays("embeddings", IDENTITY, compute)
    results.put((os.getpid(), cache.computed, found["x"].tolist()))


def test_two_processes_compute_once_and_read_the_same_entry(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, results = ctx.Queue(), ctx.Queue()
    start = ctx.Event()
    procs = [
        ctx.Process(target=_slow_compute_worker, args=(str(tmp_path), ready, start, results))
        for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.get(timeout=60)
    start.set()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    assert sum(computed for _, computed, _ in outcomes) == 1
    assert outcomes[0][2] == outcomes[1][2]
    assert Cache(tmp_path).computations("embeddings", IDENTITY) == 1


def test_a_json_value_edited_by_hand_is_a_miss_with_a_warning(tmp_path: Path) -> None:
    # A cached verdict turned from no to yes in the manifest: read as the judge's, silently.
    cache = Cache(tmp_path)
    verdict = {"verdict": False, "reply": "No."}
    cache.put_json("verdict", IDENTITY, verdict)
    manifest = _entry(tmp_path, "verdict", IDENTITY) / "manifest.json"
    data = json.loads(manifest.read_text())
    data["value"]["verdict"] = True
    manifest.write_text(json.dumps(data))
    with pytest.warns(RagMetricsWarning, match="its value is not what was written .*edited"):
        assert cache.get_json("verdict", IDENTITY) is None
    cache.put_json("verdict", IDENTITY, verdict)
    assert Cache(tmp_path).get_json("verdict", IDENTITY) == verdict


def test_entries_written_before_the_checksums_are_read_as_they_are(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    cache.put_arrays("embeddings", IDENTITY, {"x": np.ones(3)})
    cache.put_json("verdict", IDENTITY, [1, 2])
    for kind in ("embeddings", "verdict"):
        manifest = _entry(tmp_path, kind, IDENTITY) / "manifest.json"
        data = json.loads(manifest.read_text())
        data.pop("value_sha256", None)
        for meta in data.get("arrays", {}).values():
            del meta["sha256"]
        manifest.write_text(json.dumps(data))
    fresh = Cache(tmp_path)
    np.testing.assert_array_equal(fresh.get_arrays("embeddings", IDENTITY)["x"], np.ones(3))  # type: ignore[index]
    assert fresh.get_json("verdict", IDENTITY) == [1, 2]
