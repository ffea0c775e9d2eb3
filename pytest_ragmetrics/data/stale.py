"""Judged ids the dataset lacks: stale labels (judged documents not in the corpus) and judged
queries without text, named with examples and the ids they were probably meant to be."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

from pytest_ragmetrics.data.model import Corpus, Qrels
from pytest_ragmetrics.data.textfile import PathLike
from pytest_ragmetrics.errors import DataFormatError

_SHOWN = 3  # examples a message names
_LOOKED_UP = 1000  # missing ids whose near misses are looked for
# Known ids looked through (0.6 s a million): a mismatch in how ids are written is in the
# first ones too, and a corpus of millions with stale labels should not load seconds slower.
_SCANNED = 1_000_000
# White space, a byte order mark and zero-width characters: set aside when ids are compared
# loosely, with case and Unicode normalisation.
_INVISIBLE = re.compile(r"[\s\ufeff\u200b-\u200d\u2060]+")


def loose_id(text: str) -> str:
    """``text`` without case, white space or invisible characters, in Unicode form NFKC, a
    number without leading zeros: two ids equal this way but not as written are a near miss
    ("D1" and "d1 ", TREC's topic "051" and "51")."""
    loose = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).casefold()
    return (loose.lstrip("0") or "0") if loose.isascii() and loose.isdigit() else loose


def near_misses(missing: Sequence[str], known: Iterable[str]) -> list[tuple[str, str]]:
    """Up to three (missing id, known id) pairs that differ only in case, white space,
    leading zeros or Unicode normalisation (one known id for each missing id)."""
    wanted: dict[str, str] = {}
    for text in missing[:_LOOKED_UP]:
        wanted.setdefault(loose_id(text), text)
    pairs: list[tuple[str, str]] = []
    for text in itertools.islice(known, _SCANNED):
        match = wanted.pop(loose_id(text), None)
        if match is not None:
            pairs.append((match, text))
            if len(pairs) == _SHOWN:
                break
    return pairs


def near_miss_hint(missing: Sequence[str], known: Iterable[str], where: str) -> str:
    """``; <where> has 'D1' for 'd1', ...`` (ids that differ only in case, white space,
    leading zeros or Unicode normalisation), or '' when no missing id has such a twin."""
    pairs = near_misses(missing, known)
    if not pairs:
        return ""
    shown = ", ".join(
        f"{_shown(found, wanted)} for {_shown(wanted, found)}" for wanted, found in pairs
    )
    return (
        f"; {where} has {shown}, which differ only in case, white space, leading zeros or "
        "Unicode normalisation: ids are compared exactly as written"
    )


def _shown(text: str, other: str) -> str:
    """``text`` quoted, escaped to ASCII when it would look like ``other`` (NFC and NFD)."""
    same = unicodedata.normalize("NFC", text) == unicodedata.normalize("NFC", other)
    return ascii(text) if same else repr(text)


def examples(ids: Sequence[str]) -> str:
    """``'a', 'b', 'c'`` and `` ...`` when there are more."""
    more = " ..." if len(ids) > _SHOWN else ""
    return ", ".join(repr(i) for i in ids[:_SHOWN]) + more


def stale_note(name: str, qrels: Qrels, corpus: Corpus) -> str | None:
    """The note on judged documents missing from the corpus (how many, which, and the corpus
    ids they were probably meant to be), or None when there are none."""
    known = np.isin(qrels.doc_ids, corpus.doc_ids)
    if known.all():
        return None
    missing = qrels.doc_ids[~known].tolist()  # in order of first judgment
    count = int((~known[qrels.doc_codes]).sum())
    return (
        f"{name}: {count} judged documents are not in the corpus (stale labels); they count as "
        f"relevant but can never be retrieved (e.g. {examples(missing)})"
        + near_miss_hint(missing, corpus.doc_ids.tolist(), "the corpus")
    )


def check_relevant_in_corpus(qrels: Qrels, corpus: Corpus, path: PathLike) -> None:
    """A DataFormatError naming the qrels file when the corpus holds none of the documents
    they judge relevant: every metric would be 0, for qrels of another corpus (or ids written
    another way), not for a bad retriever."""
    relevant = qrels.grades > 0
    known = np.isin(qrels.doc_ids, corpus.doc_ids)[qrels.doc_codes]
    if not relevant.any() or (known & relevant).any():
        return
    missing = list(dict.fromkeys(qrels.doc_ids[qrels.doc_codes[relevant]].tolist()))
    raise DataFormatError(
        f"the corpus holds none of the {len(missing)} documents judged relevant (e.g. "
        f"{examples(missing)}; its ids are like {examples(corpus.doc_ids.tolist())})"
        + near_miss_hint(missing, corpus.doc_ids.tolist(), "the corpus")
        + "; every metric would be 0: are these qrels for another corpus?",
        path,
    )
