"""A small corpus for the test-set generator's tests: 24 documents with titles and sentences."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_ragmetrics.data.model import Corpus

TOPICS = [
    ("volcano", "lava", "eruption", "magma"),
    ("glacier", "ice", "melting", "snowfall"),
    ("coral", "reef", "bleaching", "ocean"),
    ("desert", "dune", "drought", "cactus"),
    ("forest", "canopy", "rainfall", "timber"),
    ("river", "delta", "sediment", "flooding"),
    ("comet", "tail", "orbit", "nucleus"),
    ("vaccine", "antibody", "immunity", "trial"),
]


def documents() -> list[dict[str, str]]:
    """Three documents per topic; each has a title and four sentences of its own words."""
    docs = []
    for t, (a, b, c, d) in enumerate(TOPICS):
        for v in range(3):
            text = (
                f"The {a} study number {v} measured {b} levels across {t + 2} regions over "
                "ten years. "
                f"Researchers found that {c} changed sharply when {d} conditions varied in "
                f"season {v}. "
                f"Further work on {a} and {d} is planned with larger {b} samples next decade. "
                f"Short note {v}."
            )
            docs.append(
                {"_id": f"d{t}-{v}", "title": f"{a.title()} {b} and {c} report {v}", "text": text}
            )
    return docs


def corpus() -> Corpus:
    return Corpus.from_dict(
        {d["_id"]: {"title": d["title"], "text": d["text"]} for d in documents()}
    )


def write_corpus(folder: Path) -> Path:
    """``folder/corpus.jsonl`` holding :func:`documents`; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in documents()), encoding="utf-8"
    )
    return folder
