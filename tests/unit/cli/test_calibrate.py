"""What ``ragmetrics calibrate`` (and ``judge-pool``) print of a judge and its figures: no
``None`` where a value belongs, the count of labels of each class behind the kappa with a note
when they are too few to support it, and a threshold that could not be tuned said so instead
of printed as tuned."""

from __future__ import annotations

import io
import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.judges import EmbeddingJudge
from tests.helpers.jsonl import write_jsonl


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def _relevance_labels(tmp_path: Path, human: list[bool]) -> tuple[Path, Path]:
    """An answer-relevance labels file and the recorded judge's verdicts (it agrees)."""
    rows = [
        {"id": f"i{k}", "question": f"q {k}", "answer": f"a {k}", "label": h}
        for k, h in enumerate(human)
    ]
    labels = write_jsonl(tmp_path / "labels.jsonl", rows)
    verdicts = write_jsonl(
        tmp_path / "verdicts.jsonl",
        [
            {"query_id": r["id"], "answer": r["answer"], "claims": [], "addresses_question": h}
            for r, h in zip(rows, human, strict=True)
        ],
    )
    return labels, verdicts


def _calibrate_recorded(tmp_path: Path, human: list[bool], *extra: str) -> tuple[int, str]:
    labels, verdicts = _relevance_labels(tmp_path, human)
    return run("calibrate", "--question", "answer-relevance", "--judge", "recorded", "--labels",
               str(labels), "--verdicts", str(verdicts), "--no-cache", *extra)  # fmt: skip


def _row(table: str, name: str) -> str:
    """The value of a two-column table's row ``name``."""
    line = next(line for line in table.splitlines() if line.split("  ")[0].strip() == name)
    return line[len(name) :].strip()


def test_a_judge_without_a_model_is_named_without_none(tmp_path: Path) -> None:
    """`ragmetrics calibrate` printed "recorded-answer-relevance (None)"."""
    code, table = _calibrate_recorded(tmp_path, [True, False] * 20)
    assert code == 0, table
    assert _row(table, "judge") == "recorded-answer-relevance"
    assert "None" not in table


def test_judge_pool_names_a_judge_without_a_model_without_none(tmp_path: Path) -> None:
    pool = write_jsonl(
        tmp_path / "pool.jsonl",
        [{"query_id": "q1", "doc_id": "d3", "query": "q", "text": "t", "relevant": None}],
    )
    verdicts = write_jsonl(
        tmp_path / "v.jsonl", [{"query_id": "q1", "doc_id": "d3", "relevant": True}]
    )
    code, table = run("judge-pool", "--pool", str(pool), "--judge", "recorded", "--verdicts",
                      str(verdicts), "--qrels-out", str(tmp_path / "s.qrels"), "--out",
                      str(tmp_path / "judged.jsonl"), "--no-cache")  # fmt: skip
    assert code == 0, table
    assert _row(table, "judge") == "recorded-relevance"
    assert "None" not in table


def test_a_kappa_from_a_handful_of_labels_says_how_few(tmp_path: Path) -> None:
    """Three labels, all agreed on: kappa 1.000, printed as if it meant something."""
    code, table = _calibrate_recorded(tmp_path, [True, True, False])
    assert code == 0, table
    assert _row(table, "kappa") == "1.0000"
    assert _row(table, "n") == "3 (2 relevant, 1 not relevant)"
    assert "too few labels" in table
    assert "at least 20 labelled items, 5 of each class" in table
    code, text = _calibrate_recorded(tmp_path, [True, True, False], "--format", "json")
    assert code == 0
    data = json.loads(text)
    assert data["too_few_labels"].startswith("measured on 3 labelled items")
    # 20 items but one of a class: the count is enough, the class is not.
    code, table = _calibrate_recorded(tmp_path, [True] * 19 + [False])
    assert _row(table, "n") == "20 (19 relevant, 1 not relevant)"
    assert "only 1 of them not relevant" in table
    # Enough of each: no note.
    code, table = _calibrate_recorded(tmp_path, [True] * 15 + [False] * 5)
    assert code == 0 and "too few labels" not in table
    code, text = _calibrate_recorded(tmp_path, [True] * 15 + [False] * 5, "--format", "json")
    assert json.loads(text)["too_few_labels"] is None


def _toy_encoder(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 32))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, zlib.crc32(word.encode()) % 32] += 1.0
    return out


def test_a_threshold_tuned_on_one_class_is_not_printed_as_tuned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every label RELEVANT: every threshold agrees with the tuning half alike, and the output
    printed the middle one as the "best kappa" threshold."""
    from pytest_ragmetrics.judges import factory

    def toy(kind: str, **options: Any) -> EmbeddingJudge:
        options.pop("cache", None)
        return EmbeddingJudge(encoder=_toy_encoder, model_name="toy", **options)

    monkeypatch.setattr(factory, "build_judge", toy)
    labels, _ = _relevance_labels(tmp_path, [True] * 10)
    save = tmp_path / "calibration.json"
    code, out = run("calibrate", "--question", "answer-relevance", "--judge", "embedding",
                    "--labels", str(labels), "--save", str(save))  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "best kappa" not in out
    assert "could not be tuned" in err and "one class" in err
    assert "labels of both classes" in err
    assert not save.exists()  # nothing a gate could read as tuned
