"""The dataset digests beside a baseline: written once, and again when they no longer read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from pytest_ragmetrics.baseline.changes import digests_path, load_digests, save_digests

DIGESTS = {"d1": "aa", "d2": "bb"}


def test_digests_are_written_once(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    save_digests(baseline, "corpus", "0123456789abcdef99", DIGESTS)
    path = digests_path(baseline, "corpus", "0123456789abcdef99")
    written = path.stat().st_mtime_ns
    save_digests(baseline, "corpus", "0123456789abcdef99", {"other": "x"})
    assert path.stat().st_mtime_ns == written
    assert load_digests(baseline, "corpus", "0123456789abcdef99") == DIGESTS


@pytest.mark.parametrize(
    "damage",
    [b"garbage", gzip.compress(b"{not json"), gzip.compress(b"[1, 2]"), b""],
    ids=["not-gzip", "not-json", "not-an-object", "empty"],
)
def test_digests_that_no_longer_read_are_written_again(tmp_path: Path, damage: bytes) -> None:
    # Left as they were, they made a later 'not comparable' say only "contents differ" where
    # it could name the documents that changed.
    baseline = tmp_path / "baseline.json"
    path = digests_path(baseline, "corpus", "0123456789abcdef")
    path.parent.mkdir(parents=True)
    path.write_bytes(damage)
    save_digests(baseline, "corpus", "0123456789abcdef", DIGESTS)
    assert json.loads(gzip.decompress(path.read_bytes())) == DIGESTS
