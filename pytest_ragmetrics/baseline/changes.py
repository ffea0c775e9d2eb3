"""What changed in a dataset since the baseline: per-item digests stored beside the baseline
(``.ragmetrics/datasets/<part>-<fingerprint>.json.gz``) let a "not comparable" verdict say
``corpus: 12 docs added, 3 changed (e.g. d17, d4, ...)`` instead of just "differs"."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.fileio import atomic_write_bytes

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Dataset

PARTS = ("corpus", "queries", "qrels")
_COUNTED = {"corpus": "documents", "queries": "queries"}


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def current_digests(dataset: Dataset, part: str) -> dict[str, str]:
    """Item id -> short digest of one part of ``dataset`` (documents, queries, a query's
    judgments)."""
    if part == "corpus":
        return dict(dataset.corpus.doc_digests)
    if part == "queries":
        return {q: _digest(t) for q, t in dataset.queries.items()}
    qrels = dataset.qrels
    return {q: _digest(json.dumps(sorted(qrels.judgments(q).items()))) for q in qrels}


def save_dataset_digests(baseline_path: Path, dataset: Dataset, *, hint: str = "") -> None:
    """Write the digest sidecars of every part of ``dataset`` beside the baseline (a refused
    write is an OutputError naming the file, with ``hint``)."""
    for part, fingerprint in dataset.fingerprints.items():
        save_digests(baseline_path, part, fingerprint, current_digests(dataset, part), hint=hint)


def explain_dataset_change(
    baseline_path: Path,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    dataset: Dataset | None,
) -> dict[str, str]:
    """Part -> how it changed, for each dataset part whose fingerprint differs between the
    baseline entry's dataset identity (``before``) and the current one (``after``).

    ``dataset`` is the dataset loaded in this run, if any: its digests are used when it is the
    one ``after`` describes.
    """
    before, after = before or {}, after or {}
    fp_before = before.get("fingerprints") or {}
    fp_after = after.get("fingerprints") or {}
    out: dict[str, str] = {}
    for part in PARTS:
        if part not in fp_before or part not in fp_after or fp_before[part] == fp_after[part]:
            continue
        old = load_digests(baseline_path, part, fp_before[part])
        loaded = dataset is not None and dataset.fingerprints.get(part) == fp_after[part]
        new = current_digests(dataset, part) if loaded and dataset is not None else None
        key = _COUNTED.get(part, "")
        out[part] = describe_change(part, old, new, before.get(key), after.get(key))
    return out


def describe_change(
    part: str,
    before: Mapping[str, str] | None,
    after: Mapping[str, str] | None,
    count_before: int | None,
    count_after: int | None,
) -> str:
    """e.g. 'corpus: 12 docs added, 3 changed, 1 removed (e.g. d17, d4, ...)'."""
    singular, plural = {
        "corpus": ("doc", "docs"),
        "queries": ("query", "queries"),
        "qrels": ("query's judgments", "queries' judgments"),
    }.get(part, ("", ""))
    if before is not None and after is not None:
        added = [k for k in after if k not in before]
        removed = [k for k in before if k not in after]
        changed = [k for k in after if k in before and before[k] != after[k]]
        bits = [
            f"{len(ids)} {kind}"
            for ids, kind in ((added, "added"), (changed, "changed"), (removed, "removed"))
            if ids
        ]
        if not bits:
            return f"{part}: same items, different order"
        total = len(added) + len(changed) + len(removed)
        first = bits[0].split(" ", 1)
        bits[0] = f"{first[0]} {singular if first[0] == '1' else plural} {first[1]}"
        examples = (added + changed + removed)[:5]
        more = ", ..." if total > 5 else ""
        return f"{part}: {', '.join(bits)} (e.g. {', '.join(examples)}{more})"
    if count_before is not None and count_after is not None and count_before != count_after:
        return (
            f"{part}: {count_before} → {count_after} {plural} "
            f"({count_after - count_before:+d}), contents differ"
        )
    if count_before is None or count_after is None:  # no counts recorded: say no more
        return f"{part}: contents differ"
    return f"{part}: contents differ (same number of {plural or 'items'})"


def digests_path(baseline_path: Path, part: str, fingerprint: str) -> Path:
    return baseline_path.parent / "datasets" / f"{part}-{fingerprint[:16]}.json.gz"


def save_digests(
    baseline_path: Path,
    part: str,
    fingerprint: str,
    digests: Mapping[str, Any],
    *,
    hint: str = "",
) -> None:
    """Store per-item digests of one dataset part beside the baseline (gzipped, idempotent):
    a file already there is kept when it reads back, and replaced when it does not (cut short,
    edited, a merge conflict), so an update always leaves digests that explain changes."""
    path = digests_path(baseline_path, part, fingerprint)
    if path.exists() and load_digests(baseline_path, part, fingerprint) is not None:
        return
    body = json.dumps(digests, sort_keys=True, separators=(",", ":")).encode()
    atomic_write_bytes(
        path, gzip.compress(body, mtime=0), what="dataset digests of the baseline", hint=hint
    )


def load_digests(baseline_path: Path, part: str, fingerprint: str) -> dict[str, Any] | None:
    path = digests_path(baseline_path, part, fingerprint)
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError):
        return None
    return data if isinstance(data, dict) else None
