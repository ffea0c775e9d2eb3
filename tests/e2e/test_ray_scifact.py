"""2,000 SciFact abstracts encoded and searched on a local Ray cluster and locally: the same
embeddings and the same run, and the cluster's cache entries serve the local path (slow)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pathlib import Path

import numpy as np
import pytest

from pytest_ragmetrics.data.layouts import load_dataset
from pytest_ragmetrics.data.model import Corpus, Run
from pytest_ragmetrics.executors import RayExecutor
from pytest_ragmetrics.retrievers.dense import DenseRetriever
from tests.helpers.scifact_data import SCIFACT

SAMPLE = 2000
K = 100


def _entries(run: Run) -> tuple[list[str], list[str], list[float]]:
    docs = run.doc_ids[run.doc_codes].tolist()
    return run.query_ids.tolist(), docs, run.scores.tolist()


@pytest.mark.slow
@pytest.mark.skipif(
    not SCIFACT.is_dir(), reason="needs the SciFact data (example_suite/data or ../shared/data)"
)
def test_scifact_sample_on_ray_equals_local(ray_executor: RayExecutor, tmp_path: Path) -> None:
    dataset = load_dataset(SCIFACT, "test")
    corpus = dataset.corpus
    sample = Corpus(corpus.doc_ids[:SAMPLE], corpus.titles[:SAMPLE], corpus.texts[:SAMPLE])
    queries = dataset.queries

    on_ray = DenseRetriever(sample, cache=tmp_path, executor=ray_executor)
    ray_run = on_ray.search(queries, K)
    assert on_ray.corpus_encodings == 1

    local = DenseRetriever(sample)  # no cache: encodes and searches here
    local_run = local.search(queries, K)
    ray_embeddings = on_ray.corpus_embeddings()
    local_embeddings = local.corpus_embeddings()
    assert float(np.abs(ray_embeddings - local_embeddings).max()) <= 1e-6
    # Same chunks, same encode calls, same torch thread count: bit for bit, in fact.
    assert np.array_equal(ray_embeddings, local_embeddings)
    assert _entries(ray_run) == _entries(local_run)
    assert ray_run.fingerprint == local_run.fingerprint
    assert len(ray_run) == len(queries) and (ray_run.depths() == K).all()

    # No two documents tie at the cut here, so this is also faiss's own top 100.
    scores, indices = local.faiss_index().search(local.encode_queries(queries.texts), K)
    plain = Run.from_arrays(queries.query_ids, indices, scores, sample.doc_ids)
    assert _entries(plain) == _entries(local_run)

    # A laptop or CI job with the cluster's cache: hits, no encoding, the same run.
    laptop = DenseRetriever(sample, cache=tmp_path)
    assert _entries(laptop.search(queries, K)) == _entries(local_run)
    assert laptop.corpus_encodings == 0 and laptop.query_encodings == 0
