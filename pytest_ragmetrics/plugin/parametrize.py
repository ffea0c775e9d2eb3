"""Which instances of a test run: once per configured (dataset, split) pair for tests that use
a dataset (``rag_dataset`` and everything built on it), once per query for ``rag_query`` tests.

With one dataset nothing changes from a plain session: no pair in the test ids, ``rag_query``
ids are the query ids. With several, ids carry the pair (``test_x[scifact-test]``,
``test_q[scifact-test-1049]``), so ``-k cranfield`` selects by dataset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import ConfigError, RagMetricsError

if TYPE_CHECKING:
    import pytest

    from pytest_ragmetrics.data.selection import DatasetSelection
    from pytest_ragmetrics.plugin.session import RagSession


def parametrize_datasets(metafunc: pytest.Metafunc, session: RagSession) -> None:
    test = metafunc.definition.nodeid
    check_query_markers(metafunc, test)
    uses_dataset = "rag_dataset" in metafunc.fixturenames
    marked = list(metafunc.definition.iter_markers("rag_dataset"))
    if not uses_dataset and not marked:
        return
    pairs = chosen_datasets(session, marked, test) if (marked or uses_dataset) else []
    several = session.settings.several_datasets
    if several and uses_dataset and len(pairs) > 1:
        check_built_per_pair(metafunc, pairs, test)
    if "rag_query" in metafunc.fixturenames:
        _parametrize_queries(metafunc, session, pairs, several, test)
    elif several and uses_dataset:
        keys = [pair.key for pair in pairs]
        metafunc.parametrize("rag_dataset", keys, ids=keys, indirect=True, scope="session")
    elif several and len(pairs) > 1:
        raise ConfigError(
            f"{test}: @pytest.mark.rag_dataset names {len(pairs)} (dataset, split) pairs but the "
            "test uses no dataset fixture to run once per pair; use rag_dataset (or rag_run, "
            "rag_queries, ...) in the test, or name one pair"
        )


def check_query_markers(metafunc: pytest.Metafunc, test: str) -> None:
    """A ``rag_queries`` marker that would select nothing: one with no ids (an empty list
    spread into it would widen the test to every query), or one on a function that does not
    use ``rag_query`` (it runs once, over every query). A class's or module's marker may
    cover tests of both kinds, so only the function's own are checked for the second."""
    definition = metafunc.definition
    for node, marker in definition.iter_markers_with_node("rag_queries"):
        if not marker.args:
            raise ConfigError(
                f"{test}: rag_queries() names no query; name at least one (with none the "
                "test would run for every query)"
            )
        if node is definition and "rag_query" not in metafunc.fixturenames:
            raise ConfigError(
                f"{test}: @pytest.mark.rag_queries picks the queries of a rag_query test, and "
                "this test does not use rag_query, so it would evaluate every query; add the "
                "rag_query parameter, or drop the marker"
            )


# The fixtures whose value depends on the (dataset, split) pair: the built-in ones request
# rag_dataset; an override that requests none of them is one object for every pair.
DATASET_BOUND = (
    "rag_corpus",
    "rag_queries",
    "rag_qrels",
    "rag_retriever",
    "rag_run",
    "rag_pipeline",
    "rag_answers",
    "rag_references",
)


def check_built_per_pair(
    metafunc: pytest.Metafunc, pairs: list[DatasetSelection], test: str
) -> None:
    """Refuse a test whose dataset-bound fixture (an override of rag_pipeline, rag_retriever,
    ...) does not depend on the dataset: with several pairs it would be one object for all of
    them, e.g. one pipeline answering every pair's queries from one corpus. Seen in the
    fixture definitions' parameters, so it holds in every xdist worker alike."""
    defs = getattr(metafunc, "_arg2fixturedefs", None)  # pytest's own table of definitions
    if not isinstance(defs, dict):
        return
    for name in DATASET_BOUND:
        if name in metafunc.fixturenames and not _depends_on_dataset(defs, name, -1, set()):
            where = _definition_site(defs[name][-1])
            raise ConfigError(
                f"{test}: the fixture {name}{where} does not depend on the dataset: with "
                f"{len(pairs)} (dataset, split) pairs configured "
                f"({', '.join(p.key for p in pairs)}) it is one object for all of them (e.g. "
                "one pipeline answering every pair's queries from one corpus). Give it the "
                "parameter rag_dataset (or rag_corpus, rag_retriever, ...) so that it is built "
                "per pair, e.g. def " + name + "(rag_dataset): ..."
            )


def _depends_on_dataset(defs: dict[str, Any], name: str, index: int, seen: set[str]) -> bool:
    """Whether fixture ``name`` (its definition ``index`` from the closest) requests
    rag_dataset, directly or through the fixtures it requests."""
    if name == "rag_dataset":
        return True
    found = defs.get(name) or ()
    key = f"{name}#{index}"
    if key in seen or not found or -index > len(found):
        return False
    seen.add(key)
    argnames = getattr(found[index], "argnames", ())
    return any(
        _depends_on_dataset(defs, arg, index - 1 if arg == name else -1, seen) for arg in argnames
    )


def _definition_site(fixturedef: Any) -> str:
    """' (conftest.py:12)' for a fixture defined in Python code, '' when unknown."""
    code = getattr(getattr(fixturedef, "func", None), "__code__", None)
    if code is None:
        return ""
    import os

    return f" ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def chosen_datasets(session: RagSession, marked: list[Any], test: str) -> list[DatasetSelection]:
    """The pairs a test runs on: those its ``rag_dataset`` markers name, else all."""
    pairs = list(session.settings.datasets)
    if not pairs:
        if marked:
            raise ConfigError(f"{test}: @pytest.mark.rag_dataset but no dataset is configured")
        return []
    for marker in marked:
        names = [str(a) for a in marker.args]
        split = marker.kwargs.get("split")
        if not names and split is None:
            configured = ", ".join(map(repr, dict.fromkeys(p.name for p in pairs)))
            raise ConfigError(
                f"{test}: @pytest.mark.rag_dataset() names no dataset; name at least one "
                f"(configured: {configured}), e.g. rag_dataset({configured.split(', ')[0]}), "
                "or a split with rag_dataset(split=...); drop the marker to run on every one"
            )
        unknown = [n for n in names if all(p.name != n for p in session.settings.datasets)]
        if unknown:
            configured = ", ".join(dict.fromkeys(p.name for p in session.settings.datasets))
            raise ConfigError(
                f"{test}: @pytest.mark.rag_dataset({', '.join(map(repr, unknown))}): no such "
                f"dataset; the configured ones are {configured}"
            )
        pairs = [p for p in pairs if (not names or p.name in names) and split in (None, p.split)]
        if not pairs:
            raise ConfigError(
                f"{test}: @pytest.mark.rag_dataset(..., split={split!r}) leaves no configured "
                "(dataset, split) pair"
            )
    return pairs


def _parametrize_queries(
    metafunc: pytest.Metafunc,
    session: RagSession,
    pairs: list[DatasetSelection],
    several: bool,
    test: str,
) -> None:
    chosen = [a for m in metafunc.definition.iter_markers("rag_queries") for a in m.args]
    keys: list[str | None] = [pair.key for pair in pairs] if several else [None]
    by_pair: dict[str | None, list[str]] = {}
    for key in keys:
        try:
            by_pair[key] = session.dataset(key).queries.query_ids.tolist()
        except RagMetricsError as exc:
            raise ConfigError(f"rag_query: {exc}") from None
    if chosen:
        by_pair = _chosen_queries(test, chosen, by_pair)
    if not several:
        query_ids = by_pair[None]
        metafunc.parametrize("rag_query", query_ids, ids=query_ids, indirect=True)
        return
    values = [(key, qid) for key, ids in by_pair.items() for qid in ids]
    metafunc.parametrize(
        ["rag_dataset", "rag_query"],
        values,
        ids=_query_ids(test, values),
        indirect=True,
        scope="session",
    )


def _chosen_queries(
    test: str, chosen: list[Any], by_pair: dict[str | None, list[str]]
) -> dict[str | None, list[str]]:
    """The ids of a ``rag_queries`` marker in each pair, checked against the datasets."""
    wrong = [q for q in chosen if not isinstance(q, str)]
    if wrong:
        given = wrong[0]
        # A list or tuple of ids is spread into the marker's arguments, one id each.
        ids: list[Any] = [given]
        if isinstance(given, (list, tuple)):
            ids = list(given)
        elif isinstance(given, (set, frozenset)):
            ids = sorted(given, key=str)
        fix = ", ".join(repr(q if isinstance(q, str) else str(q)) for q in ids)
        each = ", each its own argument" if ids != [given] else ""
        raise ConfigError(
            f"{test}: rag_queries({given!r}): query ids are strings{each}; write rag_queries({fix})"
        )
    wanted = list(dict.fromkeys(chosen))
    known = {q for ids in by_pair.values() for q in ids}
    unknown = [q for q in wanted if q not in known]
    if unknown:
        some = next(iter(by_pair.values()))
        raise ConfigError(
            f"{test}: rag_queries: query ids not in the dataset: "
            f"{', '.join(unknown[:10])}{' ...' if len(unknown) > 10 else ''} "
            f"(it has {len(some)} queries, e.g. {', '.join(map(repr, some[:3]))})"
        )
    out = {}
    for key, ids in by_pair.items():
        present = set(ids)
        out[key] = [q for q in wanted if q in present]
    return {key: ids for key, ids in out.items() if ids}


def _query_ids(test: str, values: list[tuple[str | None, str]]) -> list[str]:
    """``pair-query`` ids; two (pair, query) values that would share one are an error (a
    split ``test-x`` with query ``q`` and a split ``test`` with query ``x-q``), so that no
    test id, hence no baseline entry, stands for two instances."""
    ids: dict[str, tuple[str | None, str]] = {}
    for key, qid in values:
        name = f"{key}-{qid}"
        if name in ids:
            raise ConfigError(
                f"{test}: query {ids[name][1]!r} of {ids[name][0]} and query {qid!r} of {key} "
                f"would both be the test id {name!r}; rename a split or a dataset"
            )
        ids[name] = (key, qid)
    return list(ids)
