"""Shared test set-up."""

from __future__ import annotations

# pytester's in-process runs restore sys.modules afterwards, so modules first imported inside
# one are dropped and imported again later: numpy cannot be imported twice in one process, and
# multiprocessing's connection module, re-imported, makes a later spawn in this process fail to
# pickle ("not the same object as multiprocessing.connection.rebuild_connection"). Load them
# (and our modules that use numpy) once, up front.
import multiprocessing.connection  # noqa: F401
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy  # noqa: F401
import pytest

import pytest_ragmetrics.baseline.compare
import pytest_ragmetrics.metrics.retrieval
import pytest_ragmetrics.plugin.recording
import pytest_ragmetrics.records  # noqa: F401
from tests.helpers.plugin_project import UNRELATED_PLUGINS

# Nothing in the tests may reach the network: the embedding model is a local folder.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose runs (and any pytest a test starts meanwhile) skip the venv's unrelated
    plugins (``UNRELATED_PLUGINS``): a child pytest process would import them for 2.2 s.

    Set after pytester's own set-up, which clears ``PYTEST_ADDOPTS``.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", " ".join(UNRELATED_PLUGINS))
    return pytester


@pytest.fixture(scope="session")
def scifact_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for every slow SciFact test of the session, shared by xdist workers.

    Encoding the 5,183 abstracts takes minutes; the file lock of the cache makes the first test
    that needs the embeddings compute them while any other waits and reads.
    """
    root = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        root = root.parent  # the base folder all workers share
    return root / "scifact-cache"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long fuzzing profile runs only when asked for: ``pytest -m fuzz``."""
    if "fuzz" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="the long fuzzing profile: run it with -m fuzz")
    for item in items:
        if item.get_closest_marker("fuzz"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def ray_executor() -> Iterator[Any]:
    """A local Ray cluster for this test process, shut down when the session ends.

    Each xdist worker starts its own (2 CPUs, 127.0.0.1 only, its own temp folder, ports Ray picks
    free), so workers never share or clash. Its actors run torch on as many threads as this
    process does, so their embeddings are bit-identical to the local path's.
    """
    import torch

    from pytest_ragmetrics.executors import RayExecutor

    executor = RayExecutor("local", num_cpus=2, actors=2, threads_per_actor=torch.get_num_threads())
    executor.connect()
    yield executor
    executor.close()
