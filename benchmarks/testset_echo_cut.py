"""A tried idea for issue 28, kept to rerun: cut more than the query from its document.

A cut title's document still restates the title's words in its text (SciFact's abstracts do),
so every full-text system finds it in the top 100 and recall@100 ties them. This script copies a
generated folder that carries its own corpus copy (``ragmetrics generate --remove-query 1``) and,
for a seeded share of its queries, also cuts from the source document the sentence sharing the
most content words with the query (idf-weighted, :meth:`CorpusText.overlap`); the copy's
fingerprint in ``dataset.json`` is updated. Then ``testset_tau.py --generated LABEL=OUT``.

    python benchmarks/testset_echo_cut.py /tmp/tau/sci-title-0 /tmp/echo/sci-0 --share 0.4

docs/measurements/testsets-tau.md reports what it did to τ.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from collections.abc import Sequence
from pathlib import Path

from pytest_ragmetrics.data.layouts import load_dataset
from pytest_ragmetrics.testsets.sampling import CorpusText, prose_sentences, without_sentence


def cut_echoes(source: Path, out: Path, share: float, seed: int = 0) -> int:
    """Copy ``source`` to ``out`` with the echo sentence of a ``share`` of the queries cut;
    the number of sentences cut."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out)
    data = load_dataset(out)
    corpus = data.corpus
    texts: dict[int, str] = {}  # the rows changed
    stats = CorpusText(corpus)
    relevant = data.qrels.to_dict()
    draw = random.Random(f"echo:{seed}")
    cut = 0
    for query_id, query in data.queries.items():
        if draw.random() >= share:
            continue
        for doc_id in relevant.get(query_id, {}):
            row = corpus.position[doc_id]
            text = texts.get(row, corpus.texts[row])
            sentences = prose_sentences(text)
            if not sentences:
                continue
            echo = max(sentences, key=lambda s: stats.overlap(query, s))
            rest = without_sentence(text, echo)
            if rest and rest.split():
                texts[row] = rest
                cut += 1
    # Rows are in the corpus's order; unchanged lines are kept as they are.
    lines = (out / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    if len(lines) != len(corpus):
        raise SystemExit(f"{out}/corpus.jsonl: expected one document a line, {len(corpus)} lines")
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as file:
        for number, line in enumerate(lines):
            if number in texts:
                record = json.loads(line)
                record["text"] = texts[number]
                line = json.dumps(record)
            file.write(line + "\n")
    manifest = json.loads((out / "dataset.json").read_text(encoding="utf-8"))
    copy = manifest["provenance"]["corpus"]["copy"]
    copy["text_fingerprint"] = load_dataset(out).corpus.text_fingerprint
    copy["echo_cut"] = {"share": share, "seed": seed, "sentences_cut": cut}
    (out / "dataset.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return cut


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="a generated folder with its own corpus copy")
    parser.add_argument("out", type=Path)
    parser.add_argument("--share", type=float, default=1.0, help="of the queries (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not (args.source / "corpus.jsonl").is_file():
        parser.error(f"{args.source} carries no corpus copy (generate with --remove-query)")
    print(f"{args.out}: {cut_echoes(args.source, args.out, args.share, args.seed)} sentences cut")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
