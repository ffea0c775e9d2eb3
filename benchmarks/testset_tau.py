"""Does a generated test set rank systems the way human judgments do? (issue 28, item 5)

Evaluates several retrieval systems over one corpus on the human qrels and on each generated
test set (folders that ``ragmetrics generate`` wrote from the same corpus), and prints per
system nDCG@10 and recall@100 on every set, then Kendall's tau-b between the system ordering
on the human qrels and on each generated set, per metric. ``--json`` writes all figures.

Systems (``--systems``, comma list; default all): ``bm25`` (k1 1.5, b 0.75), ``bm25-k0.9-b0.4``,
``bm25-nostem`` (no stemming, no stopwords), ``bm25-title`` (titles only), ``dense`` (MiniLM),
``dense-32`` (MiniLM reading 32 tokens), ``rrf`` (reciprocal rank fusion of bm25 and dense,
k = 60). Dense encodings are cached (``--cache-dir``): SciFact costs about 11 CPU-minutes per
dense setting cold, nothing warm.

A generated set whose folder carries its own corpus copy (``--remove-query``: each query's
sentence cut from its source document) is evaluated on that copy, as its dataset.json says;
the dense systems re-encode only the documents the copy changed.

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/testset_tau.py \\
        --human example_suite/data/scifact --generated offline=/tmp/scifact-offline \\
        --cache-dir .ragmetrics/cache --json docs/tau-scifact.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_ragmetrics.data.layouts import load_dataset  # noqa: E402
from pytest_ragmetrics.data.model import Corpus, Dataset, Queries, Run  # noqa: E402
from pytest_ragmetrics.metrics.retrieval import evaluate  # noqa: E402

METRICS = ("ndcg_at_10", "recall_at_100")
LEXICAL = ("bm25", "bm25-k0.9-b0.4", "bm25-nostem", "bm25-title")
DENSE = ("dense", "dense-32", "rrf")
SYSTEMS = LEXICAL + DENSE
# Orderings tau is also computed over (when every system of one was run): the six systems
# issue 28 names, the same without the titles-only index (which a cut-title set scores 0 by
# construction), and all seven without it.
SUBSETS = {
    "issue-six": ("bm25", "bm25-k0.9-b0.4", "bm25-title", "dense", "dense-32", "rrf"),
    "issue-five": ("bm25", "bm25-k0.9-b0.4", "dense", "dense-32", "rrf"),
    "no-title": ("bm25", "bm25-k0.9-b0.4", "bm25-nostem", "dense", "dense-32", "rrf"),
}
DEPTH = 100
BOOTSTRAP = 1000
Search = Callable[[Queries], Run]


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of two score lists over the same systems (ties counted as in tau-b)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("tau needs two lists of the same length, at least 2")
    concordant = discordant = ties_a = ties_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_a) * (concordant + discordant + ties_b)) ** 0.5
    return (concordant - discordant) / denominator if denominator else float("nan")


def rrf(runs: Sequence[Run], k: int = 60, depth: int = DEPTH) -> Run:
    """Reciprocal rank fusion: each document scores the sum of 1 / (k + rank) over the runs."""
    fused: dict[str, dict[str, float]] = {}
    for run in runs:
        for qid in run:
            scores = fused.setdefault(qid, {})
            for rank, (doc, _) in enumerate(run.ranking(qid), start=1):
                scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    top = {
        q: dict(sorted(s.items(), key=lambda item: (-item[1], item[0]))[:depth])
        for q, s in fused.items()
    }
    return Run.from_dict(top)


def dense_retriever(
    corpus: Corpus, base: Corpus, cache: str | None, max_seq_length: int | None, name: str
) -> Any:
    """MiniLM over ``corpus``; when ``corpus`` is a copy of ``base`` with some texts changed,
    the unchanged documents' embeddings are ``base``'s (cached) and only the changed ones are
    encoded."""
    from pytest_ragmetrics.retrievers.dense import DenseRetriever

    options: dict[str, Any] = {"cache": cache, "max_seq_length": max_seq_length, "name": name}
    if corpus is base:
        return DenseRetriever(corpus, **options)
    changed = [d for d, digest in corpus.doc_digests.items() if base.doc_digests[d] != digest]
    whole = DenseRetriever(base, **options)
    part = DenseRetriever(corpus.subset(changed), **options) if changed else None

    class Patched(DenseRetriever):
        patched: Any = None

        def corpus_embeddings(self) -> Any:
            if self.patched is None:
                matrix = whole.corpus_embeddings().copy()
                if part is not None:
                    matrix[[corpus.position[d] for d in changed]] = part.corpus_embeddings()
                self.patched = matrix
            return self.patched

    return Patched(corpus, **options)


def build_systems(
    corpus: Corpus, names: Sequence[str], cache: str | None, base: Corpus | None = None
) -> dict[str, Search]:
    """Search functions by system name, over ``corpus`` (a copy of ``base`` with some texts
    changed, when ``base`` is given: see :func:`dense_retriever`)."""
    from pytest_ragmetrics.retrievers.bm25 import BM25Retriever

    found: dict[str, Search] = {}

    def searcher(retriever: Any) -> Search:
        return lambda queries: Run.from_dict(retriever.search(queries, DEPTH))

    if "bm25" in names or "rrf" in names:
        found["bm25"] = searcher(BM25Retriever(corpus))
    if "bm25-k0.9-b0.4" in names:
        found["bm25-k0.9-b0.4"] = searcher(BM25Retriever(corpus, k1=0.9, b=0.4))
    if "bm25-nostem" in names:
        found["bm25-nostem"] = searcher(BM25Retriever(corpus, stopwords=None, stemmer=None))
    if "bm25-title" in names:
        titles = Corpus(corpus.doc_ids, corpus.titles, [""] * len(corpus))
        found["bm25-title"] = searcher(BM25Retriever(titles, name="bm25-title"))
    if any(n in names for n in DENSE):
        origin = corpus if base is None else base
        found["dense"] = searcher(dense_retriever(corpus, origin, cache, None, "dense"))
        if "dense-32" in names:
            short = dense_retriever(corpus, origin, cache, 32, "dense-32")
            found["dense-32"] = searcher(short)
    if "rrf" in names:
        bm25, dense_search = found["bm25"], found["dense"]
        found["rrf"] = lambda queries: rrf([bm25(queries), dense_search(queries)])
    return {n: found[n] for n in names}


# metric -> (queries x systems) values, the systems in the study's order
PerQuery = dict[str, Any]


def scores_on(
    dataset: Dataset, systems: dict[str, Search]
) -> tuple[dict[str, dict[str, float]], PerQuery]:
    """system -> metric -> mean over the dataset's queries, and the per-query values."""
    import numpy as np

    out: dict[str, dict[str, float]] = {}
    columns: dict[str, list[Any]] = {m: [] for m in METRICS}
    for name, search in systems.items():
        started = time.perf_counter()
        run = search(dataset.queries)
        evaluation = evaluate(dataset.qrels, run, list(METRICS))
        out[name] = {m: round(float(evaluation.mean[m]), 4) for m in METRICS}
        for m in METRICS:
            columns[m].append(evaluation.column(m))
        seconds = time.perf_counter() - started
        print(f"  {dataset.name:<12} {name:<16} {out[name]}  ({seconds:.1f} s)", file=sys.stderr)
    return out, {m: np.stack(c, axis=1) for m, c in columns.items()}


def bootstrap_taus(
    values: Any, reference: Sequence[float], rounds: int = BOOTSTRAP, seed: int = 0
) -> list[float]:
    """Kendall's tau between ``reference`` and the system means over ``rounds`` resamples of
    the queries (rows of ``values``, drawn with replacement; seeded). Over a set's own
    reference, the spread is its ordering's noise: the human set's is the ceiling a generated
    set can be expected to reach."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = values.shape[0]
    taus = []
    for _ in range(rounds):
        means = np.nanmean(values[rng.integers(0, n, n)], axis=0)
        tau = kendall_tau(list(reference), [round(float(x), 4) for x in means])
        if tau == tau:  # NaN when every system ties
            taus.append(tau)
    return taus


def spread(taus: Sequence[float]) -> dict[str, float]:
    """Mean and the 5th and 95th percentiles of bootstrap taus."""
    ordered = sorted(taus)
    if not ordered:
        return {"mean": float("nan"), "p05": float("nan"), "p95": float("nan")}

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 4)

    return {"mean": round(sum(ordered) / len(ordered), 4), "p05": at(0.05), "p95": at(0.95)}


def wording(data: Dataset) -> dict[str, float]:
    """How a set's queries word their relevant documents (as the set's corpus holds them), mean
    over (query, relevant document) pairs: ``overlap``, the share of the query's content words,
    weighed by idf, that the document holds; ``other_forms``, the share of the content words
    whose stem the document holds (English Snowball) that it holds in no same form."""
    import Stemmer

    from pytest_ragmetrics.testsets.model import words
    from pytest_ragmetrics.testsets.sampling import CorpusText, is_content

    stem = Stemmer.Stemmer("english").stemWord
    corpus, stats = data.corpus, CorpusText(data.corpus)
    overlaps, others = [], []
    for qid in data.qrels:
        if qid not in data.queries:
            continue
        query = [t for t in words(data.queries[qid]) if is_content(t)]
        for doc, grade in data.qrels.judgments(qid).items():
            if grade <= 0 or doc not in corpus.position:
                continue
            row = corpus.position[doc]
            text = f"{corpus.titles[row]} {corpus.texts[row]}"
            overlaps.append(stats.overlap(data.queries[qid], text))
            held = set(words(text))
            stems = {stem(t) for t in held}
            matched = [t for t in query if stem(t) in stems]
            if matched:
                others.append(sum(t not in held for t in matched) / len(matched))
    return {"overlap": _mean(overlaps), "other_forms": _mean(others)}


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else float("nan")


def source_fingerprint(data: Dataset, provenance: dict[str, Any] | None) -> str:
    """The text fingerprint of the corpus a set was generated from: its own corpus's, or, for a
    folder carrying a copy without the removed sentences, the source's its provenance names
    (checked against the copy it holds)."""
    corpus = (provenance or {}).get("corpus") or {}
    copy = corpus.get("copy")
    if copy is None:
        return data.corpus.text_fingerprint
    if copy.get("text_fingerprint") != data.corpus.text_fingerprint:
        raise SystemExit(f"{data.name}: corpus.jsonl is not the copy its dataset.json describes")
    return str(corpus.get("text_fingerprint"))


def study(
    human: Dataset,
    generated: dict[str, Dataset],
    names: Sequence[str],
    cache: str | None,
    provenance: dict[str, dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """Every system on every set (a set with its own corpus copy on that copy), and tau of each
    generated set's ordering with the human's."""
    provenance = provenance or {}
    for label, data in generated.items():
        if source_fingerprint(data, provenance.get(label)) != human.corpus.text_fingerprint:
            raise SystemExit(f"{label}: generated from another corpus than {human.name}'s")
    systems = build_systems(human.corpus, names, cache)
    table, values = {}, {}
    table["human"], values["human"] = scores_on(human, systems)
    for label, data in generated.items():
        own = data.corpus.text_fingerprint != human.corpus.text_fingerprint
        searches = build_systems(data.corpus, names, cache, human.corpus) if own else systems
        table[label], values[label] = scores_on(data, searches)
    sets = {"human": human, **generated}
    tau, intervals = taus_over(names, list(names), table, values)
    over = {}
    for subset, members in SUBSETS.items():
        if set(members) <= set(names) and set(members) != set(names):
            found, spreads = taus_over(names, members, table, values)
            over[subset] = {
                "tau": found,
                "bootstrap": spreads,
                "pooled": pooled_by_style(table, members),
            }
    sizes = {label: len(data.queries) for label, data in sets.items()}
    return {
        "wording": {label: wording(data) for label, data in sets.items()},
        "systems": list(names),
        "queries": sizes,
        "scores": table,
        "tau": tau,
        "bootstrap": intervals,
        "pooled": pooled_by_style(table, names),
        "subsets": over,
    }


def taus_over(
    names: Sequence[str],
    members: Sequence[str],
    table: dict[str, dict[str, dict[str, float]]],
    values: dict[str, PerQuery],
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, dict[str, float]]]]:
    """Tau of each generated set's ordering of ``members`` with the human ordering, and the
    bootstrap spread of every set's (the human's own: its ceiling)."""
    columns = [list(names).index(s) for s in members]
    reference = {m: [table["human"][s][m] for s in members] for m in METRICS}
    tau = {
        label: {
            m: round(kendall_tau(reference[m], [table[label][s][m] for s in members]), 4)
            for m in METRICS
        }
        for label in table
        if label != "human"
    }
    intervals = {
        label: {
            m: spread(bootstrap_taus(values[label][m][:, columns], reference[m])) for m in METRICS
        }
        for label in table
    }
    return tau, intervals


def by_style(tau: dict[str, dict[str, float]]) -> dict[str, dict[str, dict[str, float]]]:
    """Mean and least tau per metric over the seeds of each style: sets labelled
    ``STYLE-SEED`` (``title-cut-0`` ... ``title-cut-4``), two seeds or more."""
    return {
        style: {
            m: {
                "mean": round(sum(tau[label][m] for label in labels) / len(labels), 4),
                "least": min(tau[label][m] for label in labels),
                "seeds": len(labels),
            }
            for m in METRICS
        }
        for style, labels in style_seeds(tau).items()
    }


def style_seeds(labels: Iterable[str]) -> dict[str, list[str]]:
    """The labels ``STYLE-SEED`` grouped by style, for styles with two seeds or more."""
    groups: dict[str, list[str]] = {}
    for label in labels:
        style, _, seed = label.rpartition("-")
        if style and seed.isdigit():
            groups.setdefault(style, []).append(label)
    return {style: found for style, found in groups.items() if len(found) > 1}


def pooled_by_style(
    table: dict[str, dict[str, dict[str, float]]], members: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Per style (sets labelled ``STYLE-SEED``, two seeds or more), tau of the ordering of
    ``members`` by their scores averaged over the style's seeds with the human ordering.

    A seed's tau mixes what the style does to the ordering with the draw of its queries; the
    mean score over equal-sized seeds is the score on all their queries, so what stays wrong
    here is the style's own bias, not one draw's noise."""
    return {
        style: {
            m: round(
                kendall_tau(
                    [table["human"][s][m] for s in members],
                    [sum(table[label][s][m] for label in labels) / len(labels) for s in members],
                ),
                4,
            )
            for m in METRICS
        }
        for style, labels in style_seeds(table).items()
    }


def render(result: dict[str, Any]) -> str:
    """The per-system table and the tau lines, as Markdown."""
    labels = list(result["scores"])
    head = "| system | " + " | ".join(f"{lab} nDCG@10 | {lab} R@100" for lab in labels) + " |"
    lines = [head, "|---" * (1 + 2 * len(labels)) + "|"]
    for system in result["systems"]:
        cells = [f"{result['scores'][lab][system][m]:.4f}" for lab in labels for m in METRICS]
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    lines.append("")
    boot = result.get("bootstrap") or {}

    def interval(label: str, metric: str) -> str:
        found = (boot.get(label) or {}).get(metric)
        return f" ({found['p05']:.2f} to {found['p95']:.2f})" if found else ""

    if "human" in boot:
        ceiling = [f"{m} {boot['human'][m]['mean']:.3f}{interval('human', m)}" for m in METRICS]
        lines.append(
            "Human ceiling: tau of the human set's bootstrap resamples with its own ordering, "
            "mean (5th to 95th percentile): " + ", ".join(ceiling)
        )
    for label, by_metric in result["tau"].items():
        lines.append(
            f"Kendall's tau vs human ({result['queries'][label]} queries): "
            + ", ".join(f"{m} {v:.3f}{interval(label, m)}" for m, v in by_metric.items())
            + f"  [{label}]"
        )
    for label, found in (result.get("wording") or {}).items():
        lines.append(
            f"Wording [{label}]: idf-weighted overlap with the relevant document "
            f"{found['overlap']:.3f}, other forms of its words {found['other_forms']:.3f}"
        )
    orderings = {"all": result["tau"]} | {
        name: found["tau"] for name, found in (result.get("subsets") or {}).items()
    }
    for name, tau in orderings.items():
        members = result["systems"] if name == "all" else SUBSETS[name]
        if name != "all":
            lines.append(
                f"Over {name} ({', '.join(members)}): "
                + "; ".join(
                    f"{label} " + " ".join(f"{v:.3f}" for v in by_metric.values())
                    for label, by_metric in tau.items()
                )
            )
        for style, by_metric in by_style(tau).items():
            lines.append(
                f"Over {name}, style {style}, mean (least) of {by_metric[METRICS[0]]['seeds']} "
                "seeds: "
                + ", ".join(f"{m} {v['mean']:.3f} ({v['least']:.3f})" for m, v in by_metric.items())
            )
        for style, pooled in pooled_by_style(result["scores"], members).items():
            lines.append(
                f"Over {name}, style {style}, tau of the scores averaged over its seeds: "
                + ", ".join(f"{m} {v:.3f}" for m, v in pooled.items())
            )
    return "\n".join(lines) + "\n"


def merge(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several runs' ``--json`` results as one: the same systems and human scores, each label
    from one run only; the pooled taus are computed again over every set."""
    first = results[0]
    human = first["scores"]["human"]
    merged: dict[str, Any] = {"systems": first["systems"], "subsets": {}}
    keys = ("wording", "queries", "scores", "tau", "bootstrap")
    for key in keys:
        merged[key] = {}
    for result in results:
        if result["systems"] != first["systems"] or result["scores"]["human"] != human:
            raise SystemExit("--merge: the runs differ in their systems or human scores")
        again = set(result["tau"]) & set(merged["tau"])
        if again:
            raise SystemExit(f"--merge: {', '.join(sorted(again))} in two runs")
        for key in keys:
            merged[key].update(result[key])
        for name, found in result["subsets"].items():
            into = merged["subsets"].setdefault(name, {"tau": {}, "bootstrap": {}})
            into["tau"].update(found["tau"])
            into["bootstrap"].update(found["bootstrap"])
    merged["pooled"] = pooled_by_style(merged["scores"], merged["systems"])
    for name, found in merged["subsets"].items():
        found["pooled"] = pooled_by_style(merged["scores"], SUBSETS[name])
    return merged


def read_provenance(folder: Path) -> dict[str, Any] | None:
    """The provenance in a folder's dataset.json (None without one)."""
    manifest = folder / "dataset.json"
    if not manifest.is_file():
        return None
    found = json.loads(manifest.read_text(encoding="utf-8")).get("provenance")
    return found if isinstance(found, dict) else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--human", help="dataset folder with human qrels")
    parser.add_argument("--split", default="test")
    parser.add_argument(
        "--generated", action="append", default=[], metavar="LABEL=DIR", help="repeatable"
    )
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--cache-dir", default=str(REPO / ".ragmetrics" / "cache"))
    parser.add_argument("--json", metavar="FILE", help="write every figure here")
    parser.add_argument(
        "--merge",
        action="append",
        default=[],
        metavar="FILE",
        help="instead of a study: earlier runs' --json files, reported as one (repeatable)",
    )
    args = parser.parse_args(argv)
    if args.merge:
        if args.human or args.generated:
            raise SystemExit("--merge reports earlier runs: give no --human or --generated")
        runs = [json.loads(Path(f).read_text(encoding="utf-8")) for f in args.merge]
        return report(merge(runs), args.json)
    if not args.human:
        raise SystemExit("--human: give the dataset folder with human qrels (or --merge)")
    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = [n for n in names if n not in SYSTEMS]
    if unknown or len(names) < 2:
        raise SystemExit(f"--systems: give at least two of {', '.join(SYSTEMS)}")
    human = load_dataset(args.human, args.split, warn=False)
    generated, provenance = {}, {}
    for item in args.generated:
        label, _, folder = item.partition("=")
        generated[label] = load_dataset(folder, args.split, warn=False, name=label)
        provenance[label] = read_provenance(Path(folder))
    return report(study(human, generated, names, args.cache_dir, provenance), args.json)


def report(result: dict[str, Any], json_path: str | None) -> int:
    """Print the result and write it to ``json_path`` when one is given."""
    sys.stdout.write(render(result))
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
