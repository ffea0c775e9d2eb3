"""Supplementary qrels: judge (and person) labels of pooled pairs, read back, merged with the
human qrels (human judgments always win) and gated by each judge's calibrated κ.

The file is TREC qrels (``qid 0 docno grade``, 1 relevant, 0 not) after a header line
``# ragmetrics supplementary qrels; judge: {identity JSON}`` naming who labelled the rows
(``{"name": "person"}`` for a person), and one naming the dataset the labels were made for
(see :mod:`pytest_ragmetrics.provenance`). Labels of several labellers (a person's and a
judge's, or two judges') have the header ``{"name": "mixed", "judges": [...]}`` and come in
sections, each after a line ``# ragmetrics supplementary qrels; labels by: {identity JSON}``:
the κ gate decides per labeller, and a person's labels always count.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.data.model import Qrels, Run
from pytest_ragmetrics.data.textfile import read_lines, resolve
from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.fileio import unique_keys

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.metrics.evaluation import Evaluation, Supplemented

PathLike = str | os.PathLike[str]
HEADER_PREFIX = "# ragmetrics supplementary qrels; judge: "
LABELS_PREFIX = "# ragmetrics supplementary qrels; labels by: "
PERSON: dict[str, Any] = {"name": "person"}  # who labelled a pool row whose judge is null


def is_person(judge: Mapping[str, Any] | None) -> bool:
    """Whether labels of ``judge`` are a person's (they always count)."""
    return judge is not None and dict(judge) == PERSON


def _identity_line(prefix: str, judge: Mapping[str, Any]) -> str:
    return prefix + json.dumps(dict(judge), sort_keys=True, ensure_ascii=False) + "\n"


def labels_text(
    rows: Sequence[tuple[Mapping[str, Any] | None, str, str, bool]],
) -> tuple[dict[str, Any], str, str]:
    """(the header's judge, its header line, the qrels lines) of labelled rows, each
    ``(judge identity or None for a person, query id, doc id, relevant)``.

    One labeller: its identity in the header, the rows in their order. Several: the header is
    ``{"name": "mixed", "judges": [...]}`` and each labeller's rows follow a line naming it.
    """
    groups: dict[str, list[str]] = {}
    for judge, query_id, doc_id, relevant in rows:
        key = json.dumps(PERSON if judge is None else dict(judge), sort_keys=True)
        groups.setdefault(key, []).append(f"{query_id} 0 {doc_id} {1 if relevant else 0}\n")
    identities = {key: json.loads(key) for key in groups}
    if len(groups) == 1:
        (key,) = groups
        judge = identities[key]
        return judge, _identity_line(HEADER_PREFIX, judge), "".join(groups[key])
    judge = {"name": "mixed", "judges": [identities[k] for k in sorted(groups)]}
    body = "".join(
        _identity_line(LABELS_PREFIX, identities[k]) + "".join(groups[k]) for k in sorted(groups)
    )
    return judge, _identity_line(HEADER_PREFIX, judge), body


@dataclass(frozen=True)
class SupplementaryQrels:
    """Judge labels as qrels, with the identity of who made them (``{"name": "mixed", ...}``
    for several: ``parts`` then holds each labeller's labels)."""

    qrels: Qrels
    judge: Mapping[str, Any] | None
    path: str | None = None
    dataset: Mapping[str, str] | None = None  # what the labels were made for (None: unknown)
    sections: tuple[tuple[Mapping[str, Any], Qrels], ...] = ()  # per labeller, when recorded

    @property
    def judges(self) -> list[Mapping[str, Any]]:
        return [] if self.judge is None else [self.judge]

    @property
    def parts(self) -> tuple[tuple[Mapping[str, Any] | None, Qrels], ...]:
        """(labeller, its labels): the recorded sections, else the header's judge and all."""
        if self.sections:
            return self.sections
        return ((self.judge, self.qrels),)


def _identity(text: str, prefix: str, path: Path, line: int, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text[len(prefix) :], object_pairs_hook=unique_keys)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise DataFormatError(f"the {what} is not a JSON object", path, line)
    return value


def _sections(
    path: Path, numbered: list[tuple[int, str]], qrels: Qrels
) -> tuple[tuple[Mapping[str, Any], Qrels], ...]:
    """Each labeller's labels, from the ``labels by`` lines (none: ())."""
    if not any(text.startswith(LABELS_PREFIX) for _, text in numbered):
        return ()
    owner: dict[tuple[str, str], int] = {}
    judges: list[dict[str, Any]] = []
    for number, text in numbered:
        if text.startswith(LABELS_PREFIX):
            judges.append(_identity(text, LABELS_PREFIX, path, number, "labeller in the line"))
        elif text.strip() and not text.startswith("#"):
            if not judges:
                raise DataFormatError(
                    f"a label before the first '{LABELS_PREFIX}{{...}}' line: in a file with "
                    "such lines every label follows the one naming who made it (write the "
                    "file again with ragmetrics judge-pool)",
                    path,
                    number,
                )
            fields = text.split()
            owner[(fields[0], fields[2])] = len(judges) - 1
    split: list[dict[str, dict[str, int]]] = [{} for _ in judges]
    for query_id, docs in qrels.to_dict().items():
        for doc_id, grade in docs.items():
            split[owner[(query_id, doc_id)]].setdefault(query_id, {})[doc_id] = grade
    return tuple((judge, Qrels.from_dict(part)) for judge, part in zip(judges, split, strict=True))


def read_supplementary_qrels(path: PathLike) -> SupplementaryQrels:
    """Read supplementary qrels: the header line naming the judge, then TREC qrels lines
    (in sections after lines naming each labeller, when there are several).

    A missing or malformed header, or a malformed qrels line, is a DataFormatError naming the
    file and line.
    """
    from pytest_ragmetrics.data.trec import read_qrels
    from pytest_ragmetrics.provenance import read_dataset_line

    p = resolve(path)
    numbered = list(read_lines(p))
    first = numbered[0] if numbered else None
    if first is None or not first[1].startswith(HEADER_PREFIX):
        raise DataFormatError(
            f"supplementary qrels start with a line '{HEADER_PREFIX}{{...}}' naming the judge "
            "(ragmetrics judge-pool writes it)",
            p,
            first[0] if first else None,
        )
    judge = _identity(first[1], HEADER_PREFIX, p, first[0], "judge in the header")
    second = numbered[1] if len(numbered) > 1 else None
    dataset = None if second is None else read_dataset_line(second[1], p, second[0])
    qrels = read_qrels(p, layout="trec", comments=True)
    return SupplementaryQrels(qrels, judge, os.fspath(p), dataset, _sections(p, numbered, qrels))


def supplement(human: Qrels, extra: Qrels) -> tuple[Qrels, int]:
    """Human qrels plus the extra labels of pairs the humans did not judge (human judgments
    always win; a human -1, "pooled but not judged", gives way). Returns the merged qrels and
    how many extra labels were used."""
    merged = human.to_dict()
    used = 0
    for qid, docs in extra.to_dict().items():
        if qid not in merged or not merged[qid]:
            continue  # a query the humans did not judge is not evaluated: labels add nothing
        mine = merged[qid]
        for doc, grade in docs.items():
            if mine.get(doc, -1) < 0:
                mine[doc] = grade
                used += 1
    return Qrels.from_dict(merged), used


def _union(parts: Sequence[Qrels]) -> Qrels:
    merged: dict[str, dict[str, int]] = {}
    for part in parts:
        for qid, docs in part.to_dict().items():
            merged.setdefault(qid, {}).update(docs)
    return Qrels.from_dict(merged)


@dataclass(frozen=True)
class Supplement:
    """Supplementary qrels as an evaluation uses them: the labels, each labeller's calibrated
    kappa (``kappas``, one per part of the labels; None: not calibrated) and the bound they
    must reach (None: no bound set).

    A person's labels always count; a judge's count unless it is below the bound (or
    uncalibrated while a bound is set). The labels that count are used for pass/fail; when
    none does, all are shown beside the human-qrels metrics but not used.
    """

    labels: SupplementaryQrels
    kappas: tuple[float | None, ...] = ()
    min_kappa: float | None = None
    notes: tuple[str, ...] = ()  # on the dataset it was checked against (see load_supplement)

    def _kappa(self, index: int) -> float | None:
        return self.kappas[index] if index < len(self.kappas) else None

    def _reason(self, index: int) -> str:
        """Why the labels of part ``index`` do not count ('' when they do)."""
        judge = self.labels.parts[index][0]
        kappa = self._kappa(index)
        if is_person(judge) or self.min_kappa is None:
            return ""
        if kappa is not None and kappa >= self.min_kappa:
            return ""
        name = (judge or {}).get("name", "judge")
        from pytest_ragmetrics.judges.calibration.figures import TRUST_RULE
        from pytest_ragmetrics.judges.calibration.store import under_bound

        if kappa is not None:
            return f"judge {name!r} {under_bound(kappa, self.min_kappa)}"
        if name == "mixed" and not self.labels.sections:
            return (
                "the labels of several judges (or a judge and a person) with no record of who "
                "made each (an older ragmetrics judge-pool wrote the file: run it again on the "
                "pool to write one)"
            )
        return (
            f"judge {name!r} has no calibration on {TRUST_RULE} (run "
            "`ragmetrics calibrate --question relevance --save`) and "
            f"ragmetrics_min_judge_kappa = {self.min_kappa:g}"
        )

    @property
    def counted(self) -> list[int]:
        """The parts whose labels count for pass/fail."""
        return [i for i in range(len(self.labels.parts)) if not self._reason(i)]

    @property
    def used(self) -> bool:
        return bool(self.counted)

    @property
    def kappa(self) -> float | None:
        """The lowest kappa of the judges whose labels are used (of all, when none is)."""
        chosen = self.counted or range(len(self.labels.parts))
        known = [k for k in (self._kappa(i) for i in chosen) if k is not None]
        return min(known) if known else None

    @property
    def reason(self) -> str:
        """Why labels are only shown: all of them when none counts, else those left out
        ('' when every label counts)."""
        parts = self.labels.parts
        reasons = [(i, self._reason(i)) for i in range(len(parts)) if self._reason(i)]
        if not self.used or not reasons:
            return "; ".join(r for _, r in reasons)
        return "; ".join(
            f"{parts[i][1].num_judgments} labels left out: {reason}" for i, reason in reasons
        )

    def evaluate(
        self,
        qrels: Qrels,
        run: Run | Mapping[str, Mapping[str, float]],
        metrics: Sequence[str],
        **semantics: Any,
    ) -> Supplemented:
        """The metrics on human + supplementary qrels (human judgments win): with the labels
        that count, or all of them (shown only) when none does; what an evaluation keeps in
        ``supplemented``."""
        from pytest_ragmetrics.metrics.evaluation import Supplemented
        from pytest_ragmetrics.metrics.retrieval import evaluate

        parts = self.labels.parts
        counted = self.counted
        labels = self.labels.qrels
        if counted and len(counted) < len(parts):
            labels = _union([parts[i][1] for i in counted])
        merged, used = supplement(qrels, labels)
        evaluation = evaluate(merged, run, metrics, **semantics)
        return Supplemented(
            {m: _finite(v) for m, v in evaluation.mean.items()},
            None if self.labels.path is None else Path(self.labels.path).name,
            None if self.labels.judge is None else dict(self.labels.judge),
            used,
            self.labels.qrels.fingerprint,
            self.kappa,
            self.min_kappa,
            self.used,
            self.reason,
        )


def _finite(value: float) -> float | None:
    import math

    return None if math.isnan(value) else round(value, 6)


def load_supplement(
    path: PathLike,
    *,
    calibration: PathLike | None,
    min_kappa: float | None,
    corpus: Corpus | None = None,
) -> Supplement:
    """Read supplementary qrels and look each judge's kappa up in ``calibration``; with the
    ``corpus`` they are used on, check they were made for it (see
    :func:`~pytest_ragmetrics.provenance.checked_notes`: refused if made for another)."""
    labels = read_supplementary_qrels(path)
    notes: list[str] = []
    if corpus is not None:
        from pytest_ragmetrics.provenance import checked_notes

        notes = checked_notes(labels.path, labels.dataset, labels.qrels, corpus)
    kappas: list[float | None] = []
    for judge, _ in labels.parts:
        kappa = None
        if calibration is not None and not is_person(judge) and Path(calibration).exists():
            from pytest_ragmetrics.judges.calibration.store import trusted_kappa

            kappa = trusted_kappa(calibration, dict(judge or {}))
        kappas.append(kappa)
    return Supplement(labels, tuple(kappas), min_kappa, tuple(notes))


def supplemented_note(evaluation: Evaluation) -> str:
    """The note an evaluation with supplementary qrels shows: its metrics with the judge's
    labels beside the human-qrels ones, and whether the labels count for pass/fail."""
    sup = evaluation.supplemented
    if sup is None:
        return ""
    judge = (sup.judge or {}).get("name", "judge")
    values = ", ".join(
        f"{m} {_shown(v)} (human {_shown(evaluation.mean.get(m))})" for m, v in sup.metrics.items()
    )
    if sup.used:
        use = "used for pass/fail" + (f"; {sup.reason}" if sup.reason else "")
    else:
        use = f"shown only: {sup.reason}"
    if sup.kappa is not None:
        kappa = f"kappa {sup.kappa:.3f}"
    elif is_person(sup.judge) or (sup.used and sup.min_kappa is not None):
        kappa = "a person's labels"  # under a bound, uncalibrated labels that count are
    else:
        kappa = "kappa not calibrated"
    return (
        f"with {sup.labels_used} labels of judge {judge!r} from {sup.qrels} ({kappa}; {use}): "
        f"{values}"
    )


def _shown(value: Any) -> str:
    return "-" if value is None or value != value else f"{float(value):.4f}"
