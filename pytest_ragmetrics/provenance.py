"""Which dataset supplementary qrels were made for, and the checks before they are used.

A pool built with ``--dataset`` records the corpus fingerprint on each row; ``ragmetrics
judge-pool`` writes it in the supplementary qrels as a second header line::

    # ragmetrics supplementary qrels; judge: {...}
    # ragmetrics supplementary qrels; dataset: {"corpus": "<sha256>"}

Labels made for another corpus are refused (same query ids, other documents: they would
decide pass/fail for documents this corpus does not have). A file without the line (written
before it existed, or from a pool built without ``--dataset``) is read with a note that it
cannot be checked. Labels naming documents the corpus lacks get the note human qrels get.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.fileio import unique_keys

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Corpus, Qrels

DATASET_PREFIX = "# ragmetrics supplementary qrels; dataset: "
SHOWN = 16  # fingerprint characters shown in messages


def made_for(corpus: Corpus) -> dict[str, str]:
    """What a pool row (and the supplementary qrels) record of the dataset they come from."""
    return {"corpus": corpus.fingerprint}


def dataset_line(dataset: Mapping[str, str]) -> str:
    return DATASET_PREFIX + json.dumps(dict(dataset), sort_keys=True) + "\n"


def read_dataset_line(text: str, path: Path, line: int) -> dict[str, str] | None:
    """The recorded dataset of a header line (None: the line is not one)."""
    if not text.startswith(DATASET_PREFIX):
        return None
    try:
        value = json.loads(text[len(DATASET_PREFIX) :], object_pairs_hook=unique_keys)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict) or not isinstance(value.get("corpus"), str):
        raise DataFormatError(
            'the dataset in the header must be {"corpus": "<fingerprint>"}', path, line
        )
    return {str(k): str(v) for k, v in value.items()}


def one_dataset(rows: list[Mapping[str, str] | None], where: str) -> dict[str, str] | None:
    """The dataset every labelled row of a pool was built from (None: not recorded)."""
    distinct = {json.dumps(dict(r), sort_keys=True) for r in rows if r is not None}
    if len(distinct) > 1:
        raise DataFormatError(
            f"{where}: its rows were built from {len(distinct)} different datasets (corpus "
            "fingerprints); build one pool per dataset"
        )
    if not distinct or any(r is None for r in rows):
        return None
    result: dict[str, str] = json.loads(distinct.pop())
    return result


def checked_notes(
    path: str | None, recorded: Mapping[str, str] | None, labels: Qrels, corpus: Corpus
) -> list[str]:
    """The notes supplementary labels get on this corpus; labels made for another corpus
    are a DataFormatError naming the file and both fingerprints."""
    name = path or "supplementary qrels"
    notes: list[str] = []
    if recorded is None:
        notes.append(
            f"{name}: the file does not say which dataset its labels were made for (written "
            "before ragmetrics recorded it, or from a pool built without --dataset), so they "
            "cannot be checked against this one; rebuild it with ragmetrics pool --dataset "
            "and judge-pool"
        )
    elif recorded["corpus"] != corpus.fingerprint:
        raise DataFormatError(
            f"the labels were made for a dataset whose corpus fingerprint is "
            f"{recorded['corpus'][:SHOWN]}, but this dataset's corpus is "
            f"{corpus.fingerprint[:SHOWN]}; judge a pool of this dataset (ragmetrics pool "
            "--dataset, then judge-pool) or point ragmetrics_supplementary_qrels at its file",
            path,
        )
    from pytest_ragmetrics.data.stale import stale_note  # numpy, once labels are read

    stale = stale_note(name, labels, corpus)
    if stale is not None:
        notes.append(stale)
    return notes


def query_notes(path: str | None, labels: Qrels, human: Qrels) -> list[str]:
    """A note when none of the labels is for a query the human qrels judge: they were made
    for other qrels and add nothing (a check that needs no corpus)."""
    judged = {qid for qid, docs in human.to_dict().items() if docs}
    queries = sorted(labels.to_dict())
    if not queries or judged.intersection(queries):
        return []
    return [
        f"{path or 'supplementary qrels'}: none of its labels is for a query these qrels judge "
        f"({len(queries)} queries, e.g. {queries[0]}): they were made for other qrels and add "
        "nothing"
    ]
