"""The answer layer's speed (issue 13 item 7).

1. **HTTP concurrency**: generation (``answer_all`` with a ``ChatGenerator``) and HTTP judging
   (``HttpJudge.judge_contexts``) against a local OpenAI-compatible fake server that answers
   every request after 200 ms, serial (concurrency 1) vs concurrency 8; no cache. Target >= 6x.
2. **Batching across answers** (``--embedding``): the offline embedding judge on SciFact's
   annotated claim-abstract pairs (each claim an answer, its abstract's sentences the
   context), three ways, no cache: one ``assess`` per answer (what the example suite did),
   ``assess_batch`` over all answers (what ``assess_answers`` uses), and a raw
   ``SentenceTransformer.encode`` of the same distinct sentences in one call (the floor).
   Target: batched <= 1.1x raw.

Prints the times and ratios. Run:
    python benchmarks/bench_answers.py [--requests 40] [--embedding [--pairs N]]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

LATENCY = 0.2


@contextmanager
def slow_server(latency: float = LATENCY) -> Iterator[str]:
    """A chat-completions server on 127.0.0.1 answering "yes" after ``latency`` seconds."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(latency)
            body = json.dumps(
                {
                    "choices": [{"message": {"role": "assistant", "content": "yes"}}],
                    "usage": {"prompt_tokens": 20, "completion_tokens": 1},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def http_concurrency(requests: int) -> None:
    from pytest_ragmetrics.generation import ChatGenerator, answer_all
    from pytest_ragmetrics.judges import HttpJudge
    from pytest_ragmetrics.transport import Endpoint

    queries = {f"q{i}": f"question number {i}" for i in range(requests)}

    def pipeline_for(url: str, concurrency: int) -> Any:
        generator = ChatGenerator(Endpoint(url, "bench", concurrency=concurrency))

        class Pipeline:
            concurrency = generator.concurrency

            def identity(self) -> dict[str, Any]:
                return {"bench": True}

            def contexts_for(self, qs: dict[str, str]) -> dict[str, Any]:
                return dict.fromkeys(qs, (("d", "a context"),))

            def generate(self, query: str, contexts: Any) -> Any:
                return generator.generate(query, [t for _, t in contexts])

        return Pipeline()

    with slow_server() as url:
        times: dict[str, dict[int, float]] = {"generation": {}, "judging": {}}
        for concurrency in (1, 8):
            start = time.perf_counter()
            answers = answer_all(pipeline_for(url, concurrency), queries)
            times["generation"][concurrency] = time.perf_counter() - start
            assert answers.cost.calls == requests
            judge = HttpJudge(Endpoint(url, "bench", concurrency=concurrency))
            start = time.perf_counter()
            judge.judge_contexts([(q, [f"passage {q}"]) for q in queries.values()])
            times["judging"][concurrency] = time.perf_counter() - start
            assert judge.cost.calls == requests
    print(f"HTTP, {requests} requests, {LATENCY * 1000:.0f} ms latency each:")
    for what, by in times.items():
        print(
            f"  {what:<10} serial {by[1]:6.2f} s   concurrency 8 {by[8]:6.2f} s   "
            f"speed-up {by[1] / by[8]:.2f}x"
        )


def embedding_batching(pairs_wanted: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pytest_ragmetrics.encoders import load_sentence_transformer, resolve_model
    from pytest_ragmetrics.judges import EmbeddingJudge, read_claim_labels
    from pytest_ragmetrics.judges.base import split_sentences
    from tests.helpers.scifact_data import CLAIM_LABELS

    pairs = read_claim_labels(CLAIM_LABELS)[: pairs_wanted or None]
    items = [(p.id, p.claim, p.claim, list(p.contexts)) for p in pairs]
    texts = list(
        dict.fromkeys(
            t for _, _, claim, contexts in items
            for t in [*split_sentences(claim), *(s for c in contexts for s in split_sentences(c))]
        )
    )  # fmt: skip
    model = load_sentence_transformer(resolve_model(None))
    model.encode(texts[:8])  # warm up
    start = time.perf_counter()
    model.encode(texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True)
    raw = time.perf_counter() - start

    judge = EmbeddingJudge()
    judge.assess(*items[0][1:3], items[0][3])  # load the model outside the timings
    start = time.perf_counter()
    one_by_one = [judge.assess(q, a, c, query_id=i) for i, q, a, c in items]
    single = time.perf_counter() - start
    start = time.perf_counter()
    batched_result = judge.assess_batch(items)
    batched = time.perf_counter() - start
    print(f"embedding judge, {len(items)} SciFact pairs, {len(texts)} distinct sentences:")
    print(f"  raw encode {raw:6.1f} s")
    print(f"  one assess per answer {single:6.1f} s   ({single / raw:.2f}x raw)")
    print(f"  assess_batch across answers {batched:6.1f} s   ({batched / raw:.2f}x raw)")
    # Batches pad differently, so similarities may differ in the last digits.
    claims = [(c, d) for a, b in zip(batched_result, one_by_one, strict=True)
              for c, d in zip(a.claims, b.claims, strict=True)]  # fmt: skip
    differ = sum(c.supported != d.supported for c, d in claims)
    gap = max(abs((c.score or 0.0) - (d.score or 0.0)) for c, d in claims)
    print(f"  verdicts that differ: {differ} of {len(claims)}; largest score difference {gap:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--embedding", action="store_true")
    parser.add_argument("--pairs", type=int, default=0, help="first N pairs (default: all)")
    args = parser.parse_args()
    http_concurrency(args.requests)
    if args.embedding:
        embedding_batching(args.pairs)


if __name__ == "__main__":
    main()
