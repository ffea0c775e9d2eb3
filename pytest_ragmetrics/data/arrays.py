"""Ids and CSR arrays: what every part of the data model is stored in, and its checks."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.errors import DataFormatError

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
StrArray: TypeAlias = npt.NDArray[np.str_]


class Entries(NamedTuple):
    """Per query, a segment of document entries, in CSR arrays: the entries of
    ``query_ids[i]`` are ``offsets[i]:offsets[i + 1]``, and ``doc_codes`` index ``doc_ids``
    (the vocabulary). What :class:`Qrels` and :class:`Run` are built from."""

    query_ids: StrArray
    offsets: IntArray
    doc_ids: StrArray
    doc_codes: IntArray


def as_str_array(values: Iterable[str]) -> StrArray:
    """Turn ids into a numpy unicode array (code-point order equals UTF-8 byte order)."""
    items = values if isinstance(values, (list, tuple)) else list(values)
    if len(items) == 0:
        return np.empty(0, dtype="<U1")
    array = np.asarray(items)
    if array.dtype.kind != "U":
        items = [str(item) for item in items]
        array = np.asarray(items)
    if "\x00" in "".join(items):
        # numpy drops trailing NUL characters: "d2\x00" would silently become "d2".
        bad = next(item for item in items if "\x00" in item)
        raise DataFormatError(f"id {bad!r} contains a NUL character; ids must be text")
    return array


def encode_ids(groups: Sequence[Iterable[str]]) -> tuple[StrArray, IntArray, IntArray]:
    """Map the ids of several groups to codes into one vocabulary.

    Returns (vocabulary, codes of all ids concatenated, group offsets). One pass in C through
    ``dict.fromkeys`` and ``map``: no Python-level loop per entry. Ids that are not strings
    are converted with ``str()``.
    """
    vocab, codes, offsets, _ = encode_ids_converted(groups)
    return vocab, codes, offsets


def encode_ids_converted(
    groups: Sequence[Iterable[object]],
) -> tuple[StrArray, IntArray, IntArray, bool]:
    """:func:`encode_ids`, also saying whether some ids had to be converted to strings.

    After a conversion two different keys (``5`` and ``"5"``) may share one id, so callers
    must then check for duplicates.
    """
    flat: list[object] = []
    offsets = np.zeros(len(groups) + 1, dtype=np.int64)
    for i, group in enumerate(groups):
        flat.extend(group)
        offsets[i + 1] = len(flat)
    unique = list(dict.fromkeys(flat))
    converted = not set(map(type, unique)) <= {str}
    if converted:
        flat = list(map(str, flat))
        unique = list(dict.fromkeys(flat))
    index = {doc: code for code, doc in enumerate(unique)}
    codes = np.fromiter(map(index.__getitem__, flat), dtype=np.int64, count=len(flat))
    return as_str_array(cast("list[str]", unique)), codes, offsets, converted


def segment_ids(offsets: IntArray) -> IntArray:
    """Index of the segment (query) of every entry, from CSR offsets."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def check_unique_ids(ids: StrArray, what: str, kind: str = "query") -> None:
    """A DataFormatError naming the first ``kind`` id (in sorted order) that appears twice."""
    if len(np.unique(ids)) != len(ids):
        values, counts = np.unique(ids, return_counts=True)
        raise DataFormatError(f"{what}: {kind} id {str(values[counts > 1][0])!r} appears twice")


def canonical_positions(vocab: StrArray, codes: IntArray) -> IntArray | None:
    """Map each position of ``vocab`` to the first position holding the same id, or None.

    None means the ids at the positions ``codes`` uses are all distinct (the usual case). When
    the run is smaller than the vocabulary only the used positions are checked, so the cost
    follows the smaller of the two.
    """
    if len(vocab) <= codes.size:
        positions = np.arange(len(vocab), dtype=np.int64)
    else:
        used = np.zeros(len(vocab), dtype=bool)
        used[codes] = True
        positions = np.flatnonzero(used)
    names = vocab[positions]
    # A stable sort is fastest on ids that come in order, as corpus ids often do.
    ordered = np.sort(names, kind="stable")
    if not (ordered[1:] == ordered[:-1]).any():
        return None
    _, first, inverse = np.unique(names, return_index=True, return_inverse=True)
    canonical = np.arange(len(vocab), dtype=np.int64)
    canonical[positions] = positions[first][inverse]
    return canonical


def check_no_duplicate_docs(entries: Entries, what: str) -> None:
    """Raise naming query and doc when a doc appears twice within one query."""
    query_ids, offsets, doc_ids, codes = entries
    if len(codes) < 2:
        return
    seg = segment_ids(offsets)
    keys = seg * max(len(doc_ids), 1) + codes
    order = np.argsort(keys, kind="stable")
    same = keys[order][1:] == keys[order][:-1]
    if same.any():
        where = order[1:][same][0]
        raise DataFormatError(
            f"{what}: document {str(doc_ids[codes[where]])!r} appears twice for query "
            f"{str(query_ids[seg[where]])!r}; each (query, document) pair may appear once"
        )


def sha256_lines(lines: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


def offsets_from_counts(counts: npt.ArrayLike) -> IntArray:
    """CSR offsets of segments holding ``counts`` entries each."""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def require_nested_mapping(value: object, what: str, shape: str) -> None:
    """Raise unless ``value`` is a mapping of mappings (``{query_id: {doc_id: ...}}``)."""
    if not isinstance(value, Mapping):
        raise DataFormatError(f"{what} must be a dict {shape}, got {type(value).__name__}")
    for qid, docs in value.items():
        if not isinstance(docs, Mapping):
            raise DataFormatError(
                f"{what}: the entry of query {str(qid)!r} must be a dict, got "
                f"{type(docs).__name__}; expected {shape}"
            )
