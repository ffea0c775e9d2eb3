"""The test-set generator's speed (issue 28, item 6).

1. **Offline**: ``ragmetrics generate --generator offline`` on SciFact's 5,183 abstracts, 300
   queries, in-process: reading the corpus, generating, filtering, writing the folder; then the
   same with ``--styles sentence --remove-query 1`` (the corpus copy without the queries), with
   ``--sentence-pick hard``, with cut titles ``--reinflect 0.15``, and with the two settings the
   held-out test chose (cut titles ``--cut-echo 1``; cut conclusions ``--reinflect 0.3
   --cut-echo 0.5``). Target < 30 s.
2. **HTTP concurrency**: the HTTP generator against a local OpenAI-compatible server answering
   every request after 200 ms, serial vs concurrency 8, no cache. Target >= 6x.

Prints the times and the ratio. Run:
    python benchmarks/bench_testsets.py [--queries 300] [--requests 40]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_answers import LATENCY, slow_server  # noqa: E402
from scifact_data import scifact  # noqa: E402


def offline(queries: int, *extra: str) -> None:
    from pytest_ragmetrics.cli import main

    with tempfile.TemporaryDirectory() as folder:
        out = io.StringIO()
        start = time.perf_counter()
        code = main(
            ["generate", "--corpus", str(scifact()), "--out", f"{folder}/set",
             "--queries", str(queries), "--seed", "0", *extra],
            out=out,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        assert code == 0, out.getvalue()
    how = f" ({' '.join(extra)})" if extra else ""
    print(f"offline{how}: {queries} queries from SciFact's 5,183 abstracts in {seconds:.1f} s")


def http_concurrency(requests: int) -> None:
    from pytest_ragmetrics.data.layouts import read_corpus
    from pytest_ragmetrics.testsets.http import HttpTestsetGenerator
    from pytest_ragmetrics.transport import Endpoint

    corpus = read_corpus(scifact() / "corpus.jsonl")
    times: dict[int, float] = {}
    with slow_server() as url:
        for concurrency in (1, 8):
            generator = HttpTestsetGenerator(
                Endpoint(url, "bench", concurrency=concurrency), answers=False, styles=["fact"]
            )
            start = time.perf_counter()
            outcome = generator.generate(corpus, requests)
            times[concurrency] = time.perf_counter() - start
            assert outcome.cost.calls == requests, outcome.cost
    print(
        f"HTTP generator, {requests} requests, {LATENCY * 1000:.0f} ms latency each: serial "
        f"{times[1]:.2f} s, concurrency 8 {times[8]:.2f} s, speed-up {times[1] / times[8]:.2f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    offline(args.queries)
    # Inverse cloze with the sentence cut: the folder also carries its own corpus copy.
    offline(args.queries, "--styles", "sentence", "--remove-query", "1")
    # The hardest sentence (an overlap per sentence) and reinflected titles (every corpus word
    # stemmed once): the two knobs of docs/measurements/testsets-tau.md's five-seed study.
    offline(args.queries, "--styles", "sentence", "--sentence-pick", "hard", "--remove-query", "1")
    offline(args.queries, "--styles", "title", "--remove-query", "1", "--reinflect", "0.15")
    # The settings the held-out test chose (testsets-tau.md): cut titles with every echo cut,
    # and cut, reinflected conclusions with half their echoes cut.
    offline(args.queries, "--styles", "title", "--remove-query", "1", "--cut-echo", "1")
    conclusion = ("--styles", "sentence", "--sentence-pick", "conclusion", "--remove-query", "1")
    offline(args.queries, *conclusion, "--reinflect", "0.3", "--cut-echo", "0.5")
    http_concurrency(args.requests)


if __name__ == "__main__":
    main()
