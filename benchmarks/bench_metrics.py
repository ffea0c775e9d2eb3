"""Metric engine vs pytrec_eval and ranx on one synthetic run (ratios measured in one process).

5,000 queries x 1,000 retrieved docs, 1-5 graded relevant docs per query, metrics
ndcg_at_10, recall_at_100, precision_at_5, map_at_100, mrr. Run: python benchmarks/bench_metrics.py

With --holes: the same run, the qrels extended with 25 judged non-relevant and 5 grade -1 documents
per query taken from its ranking, and the metrics that tolerate holes (bpref, infap, judged-only
forms) against pytrec_eval (judged_docs_only_flag for the judged-only ones).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_ragmetrics import Qrels, Run, evaluate

METRICS = ["ndcg_at_10", "recall_at_100", "precision_at_5", "map_at_100", "mrr"]
TREC_MEASURES = {"ndcg_cut.10", "recall.100", "P.5", "map_cut.100", "recip_rank"}
# --holes: ours -> (pytrec_eval measure key, judged_docs_only_flag)
HOLES_METRICS = {
    "bpref": ("bpref", False),
    "infap": ("infAP", False),
    "map_judged": ("map", True),
    "ndcg_at_10_judged": ("ndcg_cut_10", True),
    "precision_at_5_judged": ("P_5", True),
}


def synthetic(n_queries: int, depth: int, n_docs: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    doc_ids = np.asarray([f"doc{i}" for i in range(n_docs)])
    query_ids = [f"q{i}" for i in range(n_queries)]
    indices = np.stack([rng.choice(n_docs, depth, replace=False) for _ in range(n_queries)])
    scores = -np.sort(-rng.random((n_queries, depth)), axis=1)
    qrels: dict[str, dict[str, int]] = {}
    for i, qid in enumerate(query_ids):
        n_rel = int(rng.integers(1, 6))
        # Half of the relevant docs come from the run so the metrics are not all zero.
        from_run = rng.choice(depth, n_rel, replace=False)[: max(1, n_rel // 2)]
        docs = {str(doc_ids[indices[i, j]]) for j in from_run}
        while len(docs) < n_rel:
            docs.add(str(doc_ids[rng.integers(n_docs)]))
        qrels[qid] = {d: int(rng.integers(1, 4)) for d in docs}
    run_dict = {
        qid: dict(zip(doc_ids[indices[i]].tolist(), scores[i].tolist(), strict=True))
        for i, qid in enumerate(query_ids)
    }
    return {
        "query_ids": query_ids,
        "doc_ids": doc_ids,
        "indices": indices,
        "scores": scores,
        "qrels": qrels,
        "run": run_dict,
    }


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def add_holes_judgments(data: dict[str, Any], seed: int = 1) -> None:
    """Judge 30 more retrieved docs per query: 25 non-relevant (0), 5 pooled but unjudged (-1)."""
    rng = np.random.default_rng(seed)
    depth = data["indices"].shape[1]
    for i, qid in enumerate(data["query_ids"]):
        picks = rng.choice(depth, 30, replace=False)
        for n, column in enumerate(picks.tolist()):
            doc = str(data["doc_ids"][data["indices"][i, column]])
            data["qrels"][qid].setdefault(doc, 0 if n < 25 else -1)


def main_holes(data: dict[str, Any], repeat: int) -> None:
    add_holes_judgments(data)
    metrics = list(HOLES_METRICS)
    print(f"--holes: metrics {', '.join(metrics)}; best of {repeat}")

    import pytrec_eval

    def run_pytrec() -> dict[str, float]:
        means = {}
        for judged in (False, True):
            wanted = {m: key for m, (key, j) in HOLES_METRICS.items() if j == judged}
            measures = {
                ".".join(k.rsplit("_", 1)) if k[-1].isdigit() else k for k in wanted.values()
            }
            per_query = pytrec_eval.RelevanceEvaluator(
                data["qrels"], measures, judged_docs_only_flag=judged
            ).evaluate(data["run"])
            for ours, key in wanted.items():
                means[ours] = float(np.mean([v[key] for v in per_query.values()]))
        return means

    qrels_obj = Qrels.from_dict(data["qrels"])

    def ours_dict() -> dict[str, float]:
        return evaluate(data["qrels"], data["run"], metrics).mean

    def ours_arrays() -> dict[str, float]:
        run = Run.from_arrays(data["query_ids"], data["indices"], data["scores"], data["doc_ids"])
        return evaluate(qrels_obj, run, metrics).mean

    t_trec, ref = timed(run_pytrec, repeat)
    t_dict, got_dict = timed(ours_dict, repeat)
    t_arr, got_arr = timed(ours_arrays, repeat)
    for name in metrics:
        assert abs(got_dict[name] - ref[name]) < 1e-9, name
        assert abs(got_arr[name] - ref[name]) < 1e-9, name
    print("means agree with pytrec_eval within 1e-9")
    rows = [
        ("pytrec_eval (dict input, two evaluators)", t_trec, 1.0),
        ("pytest-ragmetrics, dict input", t_dict, t_dict / t_trec),
        ("pytest-ragmetrics, array input (faiss shape)", t_arr, t_arr / t_trec),
    ]
    width = max(len(r[0]) for r in rows)
    for name, seconds, ratio in rows:
        print(f"{name:<{width}}  {seconds:8.3f} s  {ratio:6.3f}x pytrec_eval")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--holes", action="store_true", help="bpref, infap and judged-only metrics instead"
    )
    args = parser.parse_args()
    data = synthetic(args.queries, args.depth, args.docs)
    if args.holes:
        main_holes(data, args.repeat)
        return
    print(
        f"{args.queries} queries x {args.depth} docs, metrics {', '.join(METRICS)}; "
        f"best of {args.repeat}"
    )

    import pytrec_eval

    def run_pytrec() -> dict[str, float]:
        evaluator = pytrec_eval.RelevanceEvaluator(data["qrels"], TREC_MEASURES)
        per_query = evaluator.evaluate(data["run"])
        return {
            m: float(np.mean([v[m] for v in per_query.values()]))
            for m in ["ndcg_cut_10", "recall_100", "P_5", "map_cut_100", "recip_rank"]
        }

    def ours_dict() -> dict[str, float]:
        return evaluate(data["qrels"], data["run"], METRICS).mean

    qrels_obj = Qrels.from_dict(data["qrels"])

    def ours_arrays() -> dict[str, float]:
        run = Run.from_arrays(data["query_ids"], data["indices"], data["scores"], data["doc_ids"])
        return evaluate(qrels_obj, run, METRICS).mean

    t_trec, ref = timed(run_pytrec, args.repeat)
    t_dict, got_dict = timed(ours_dict, args.repeat)
    t_arr, got_arr = timed(ours_arrays, args.repeat)
    for ours_name, trec_name in zip(METRICS, ref, strict=True):
        assert abs(got_dict[ours_name] - ref[trec_name]) < 1e-9, (ours_name, trec_name)
        assert abs(got_arr[ours_name] - ref[trec_name]) < 1e-9, (ours_name, trec_name)
    rows = [
        ("pytrec_eval (dict input)", t_trec, 1.0),
        ("pytest-ragmetrics, dict input", t_dict, t_dict / t_trec),
        ("pytest-ragmetrics, array input (faiss shape)", t_arr, t_arr / t_trec),
    ]
    try:
        import ranx

        def run_ranx() -> dict[str, float]:
            result = ranx.evaluate(
                ranx.Qrels(data["qrels"]),
                ranx.Run(data["run"]),
                ["ndcg@10", "recall@100", "precision@5", "map@100", "mrr"],
            )
            return dict(result)

        start = time.perf_counter()
        run_ranx()
        t_ranx_cold = time.perf_counter() - start
        t_ranx_warm, _ = timed(run_ranx, args.repeat)
        rows.append(("ranx, cold (includes numba compilation)", t_ranx_cold, t_ranx_cold / t_trec))
        rows.append(("ranx, warm", t_ranx_warm, t_ranx_warm / t_trec))
    except ImportError:
        print("ranx not installed; skipped")
    print("means agree with pytrec_eval within 1e-9")
    width = max(len(r[0]) for r in rows)
    for name, seconds, ratio in rows:
        print(f"{name:<{width}}  {seconds:8.3f} s  {ratio:6.3f}x pytrec_eval")


if __name__ == "__main__":
    main()
