"""The code digest: the same code gives the same digest in every process; an edit of the body,
of a helper it calls, of a constant or of a closure value gives another."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from pytest_ragmetrics.code_identity import code_digest, function_identity
from tests.helpers.paths import REPO

SOURCE = """
STOP = frozenset({"the", "a", "of"})
LIMIT = 10


def clean(word):
    return word.lower().strip(".,")


def search(text, k=LIMIT):
    words = [clean(w) for w in text.split()]
    return [w for w in words if w not in STOP][:k]


def make(prefix):
    def generate(query, contexts):
        return prefix + clean(query)
    return generate


square = lambda x: x * x


class Index:
    def lookup(self, text):
        return clean(text)
"""


def _digest(tmp_path: Path, source: str, expression: str, seed: str = "1") -> str:
    """The digest of ``expression`` (over module ``usermod`` holding ``source``), computed in a
    fresh interpreter with its own hash seed."""
    folder = tmp_path / f"src{abs(hash((source, expression, seed)))}"
    folder.mkdir(exist_ok=True)
    (folder / "usermod.py").write_text(textwrap.dedent(source))
    script = (
        "import usermod\nfrom pytest_ragmetrics.code_identity import code_digest\n"
        f"print(code_digest({expression}))"
    )
    root = REPO
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": f"{folder}{os.pathsep}{root}"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_the_same_function_has_the_same_digest_in_another_process(tmp_path: Path) -> None:
    first = _digest(tmp_path, SOURCE, "usermod.search", seed="1")
    assert first == _digest(tmp_path, SOURCE, "usermod.search", seed="2")
    assert len(first) == 64


def test_a_body_edit_changes_the_digest(tmp_path: Path) -> None:
    edited = SOURCE.replace("[:k]", "[: k + 1]")
    assert _digest(tmp_path, SOURCE, "usermod.search") != _digest(
        tmp_path, edited, "usermod.search"
    )


def test_an_edit_of_a_called_helper_changes_the_digest(tmp_path: Path) -> None:
    edited = SOURCE.replace('strip(".,")', 'strip(".,;")')
    for expression in ("usermod.search", "usermod.make('x')", "usermod.Index().lookup"):
        assert _digest(tmp_path, SOURCE, expression) != _digest(tmp_path, edited, expression)


def test_a_changed_constant_or_global_value_changes_the_digest(tmp_path: Path) -> None:
    base = _digest(tmp_path, SOURCE, "usermod.search")
    assert base != _digest(tmp_path, SOURCE.replace("LIMIT = 10", "LIMIT = 20"), "usermod.search")
    assert base != _digest(tmp_path, SOURCE.replace('"of"}', '"an"}'), "usermod.search")
    # A module-level list, dict or object counts by its content as first hashed: another
    # starting value is another function (what it fills as it runs is not: see below).
    memo = SOURCE.replace("LIMIT = 10", "LIMIT = 10\nMEMO = []").replace(
        "words = [", "MEMO.append(text)\n    words = ["
    )
    assert _digest(tmp_path, memo, "usermod.search") != _digest(
        tmp_path, memo.replace("MEMO = []", "MEMO = [1, 2]"), "usermod.search"
    )


def test_closure_values_count() -> None:
    def make(prefix: object):  # type: ignore[no-untyped-def]
        def generate(query: str, contexts: list[str]) -> str:
            return str(prefix) + query

        return generate

    assert code_digest(make("a")) == code_digest(make("a"))
    assert code_digest(make("a")) != code_digest(make("b"))
    assert code_digest(make(("x", 1))) != code_digest(make(("x", 2)))


def test_objects_that_describe_themselves_count_by_their_identity() -> None:
    from pytest_ragmetrics import Corpus
    from pytest_ragmetrics.retrievers import from_function

    def over(corpus: Corpus):  # type: ignore[no-untyped-def]
        retriever = from_function(lambda text: [], name="inner", parameters={"v": 1})

        def pipeline(query: str) -> tuple[str, list[str]]:
            return str(len(corpus)) + str(retriever), []

        return pipeline

    one = Corpus.from_dict({"d1": {"text": "a"}})
    two = Corpus.from_dict({"d1": {"text": "b"}})
    assert code_digest(over(one)) == code_digest(over(one))
    assert code_digest(over(one)) != code_digest(over(two))


def test_an_edit_elsewhere_in_the_module_changes_nothing(tmp_path: Path) -> None:
    edited = SOURCE + "\n\ndef unrelated():\n    return 42\n"
    assert _digest(tmp_path, SOURCE, "usermod.search") == _digest(
        tmp_path, edited, "usermod.search"
    )


def test_lambdas_builtins_methods_and_partials_have_digests() -> None:
    first = lambda text: text.split()  # noqa: E731
    second = lambda text: text.split(",")  # noqa: E731
    assert code_digest(first) != code_digest(second)
    for thing in (len, str.upper, "x".upper, sorted, functools.partial(sorted, reverse=True)):
        assert code_digest(thing) == code_digest(thing)
    assert code_digest(functools.partial(sorted, reverse=True)) != code_digest(
        functools.partial(sorted, reverse=False)
    )

    class Ranker:
        def __call__(self, text: str) -> list[str]:
            return [text]

    assert code_digest(Ranker()) == code_digest(Ranker())


def test_function_identity_names_the_function_and_its_version() -> None:
    def search(text: str) -> list[str]:
        return [text]

    identity = function_identity(search, version=3)
    assert identity["function"].endswith("search")
    assert identity["version"] == "3"
    assert len(identity["code"]) == 20
    assert "version" not in function_identity(search)


METHODS = """
import functools

GOOD = {"a": ["d1"]}


class Searcher:
    def __init__(self, depth):
        self.depth = depth

    def _pick(self, text):
        return GOOD.get(text, [])

    def search(self, text):
        return self._pick(text)[: self.depth]

    def __call__(self, text):
        return self._pick(text)


@functools.lru_cache(maxsize=None)
def cached(text):
    return GOOD.get(text, [])
"""


def test_methods_reached_through_self_and_the_instance_values_count(tmp_path: Path) -> None:
    # An edit of _pick left the digest of Searcher(2).search (and of Searcher(2)) unchanged:
    # a stale cached run was reused.
    edited = METHODS.replace(
        "return GOOD.get(text, [])\n\n    def search", 'return ["d6"]\n\n    def search'
    )
    assert edited != METHODS
    for expression in ("usermod.Searcher(2).search", "usermod.Searcher(2)"):
        assert _digest(tmp_path, METHODS, expression) != _digest(tmp_path, edited, expression)
    assert _digest(tmp_path, METHODS, "usermod.Searcher(2).search") != _digest(
        tmp_path, METHODS, "usermod.Searcher(3).search"
    )
    assert _digest(tmp_path, METHODS, "usermod.Searcher(2).search") == _digest(
        tmp_path, METHODS, "usermod.Searcher(2).search", seed="7"
    )


def test_an_lru_cache_wrapper_counts_by_the_function_it_wraps(tmp_path: Path) -> None:
    edited = METHODS.replace(
        "def cached(text):\n    return GOOD.get(text, [])", "def cached(text):\n    return []"
    )
    assert edited != METHODS
    assert _digest(tmp_path, METHODS, "usermod.cached") != _digest(
        tmp_path, edited, "usermod.cached"
    )


def test_numpy_arrays_count_by_their_content() -> None:
    import numpy as np

    def over(index: np.ndarray):  # type: ignore[no-untyped-def]
        def search(text: str) -> list[str]:
            return [str(int(index.argmax()))]

        return search

    a, b = np.array([0.1, 0.9]), np.array([0.9, 0.1])
    assert code_digest(over(a)) == code_digest(over(a.copy()))
    assert code_digest(over(a)) != code_digest(over(b))


def test_what_an_identity_cannot_hold_is_refused_when_it_is_given() -> None:
    import pytest

    from pytest_ragmetrics.code_identity import jsonable
    from pytest_ragmetrics.errors import ConfigError
    from pytest_ragmetrics.retrievers import from_function

    class Model:
        pass

    # A model object in parameters= was a bare TypeError from the cache key's JSON.
    with pytest.raises(ConfigError, match=r"from_function\('s'\): parameters\['model'\]: a Model"):
        from_function(lambda text: [], name="s", parameters={"model": Model()}, cache=True)
    with pytest.raises(ConfigError, match=r"parameters\['t'\]: nan is not a finite number"):
        from_function(lambda text: [], name="s", parameters={"t": float("nan")})
    with pytest.raises(ConfigError, match=r"key 1 is not a string"):
        jsonable({1: "a"}, "x")

    # A filter function is held by its name and code digest (LangChain search_kwargs).
    def keep(metadata: dict[str, str]) -> bool:
        return metadata.get("lang") == "en"

    held = jsonable({"filter": keep, "fetch_k": [20, 1.5]}, "search_kwargs")
    assert held["filter"]["function"].endswith("keep") and len(held["filter"]["code"]) == 20
    assert held["fetch_k"] == [20, 1.5]


INHERITED = """
import functools


class Base:
    def _pick(self, text):
        return [text]


class Searcher(Base):
    def __init__(self, table):
        self.table = table

    @property
    def depth(self):
        return 2

    @functools.lru_cache(maxsize=None)
    def _expand(self, text):
        return text.lower()

    def search(self, text):
        return self._pick(self._expand(text))[: self.depth]
"""


def test_methods_of_base_classes_properties_and_cached_methods_count(tmp_path: Path) -> None:
    # Only the class's own plain functions counted: an edit of an inherited helper, of a
    # property or of an lru-cached method left the digest (and a cached run) as it was.
    expression = "usermod.Searcher({'a': 1}).search"
    base = _digest(tmp_path, INHERITED, expression)
    for old, new in (
        ("return [text]", "return [text, text]"),
        ("return 2", "return 3"),
        ("text.lower()", "text.upper()"),
    ):
        edited = INHERITED.replace(old, new)
        assert edited != INHERITED
        assert base != _digest(tmp_path, edited, expression), old
    assert base == _digest(tmp_path, INHERITED, expression, seed="5")


OBJECTS = """
class Index:
    def __init__(self, table, tags):
        self.table = table
        self.tags = tags

    def query(self, text):
        return self.table.get(text, [])


def make_search(index):
    def search(text, k):
        return index.query(text)[:k]

    return search
"""


def test_objects_a_function_reaches_count_by_their_values(tmp_path: Path) -> None:
    # Two retrievers from one factory over different indexes shared one cache entry: the
    # index counted by its type only (c7_fn/collide.py).
    good = "usermod.make_search(usermod.Index({'q': ['d1', 'd8']}, {'x', 'y', 'z'}))"
    bad = "usermod.make_search(usermod.Index({}, {'x', 'y', 'z'}))"
    assert _digest(tmp_path, OBJECTS, good) != _digest(tmp_path, OBJECTS, bad)
    # The same in every process, whatever the order of a set or the hash seed.
    assert _digest(tmp_path, OBJECTS, good) == _digest(tmp_path, OBJECTS, good, seed="9")
    # The object's class is code: an edit of Index.query changes it too.
    edited = OBJECTS.replace(".get(text, [])", ".get(text.lower(), [])")
    assert _digest(tmp_path, OBJECTS, good) != _digest(tmp_path, edited, good)


def test_an_object_counts_by_its_values_when_first_hashed() -> None:
    import numpy as np

    class Index:
        def __init__(self, rows: list[list[float]]) -> None:
            self.vectors = np.array(rows)
            self.calls = 0

    def make(index: Index):  # type: ignore[no-untyped-def]
        def search(text: str) -> list[str]:
            index.calls += 1
            return [str(int(index.vectors.sum()))]

        return search

    one, two = Index([[1.0, 0.0]]), Index([[0.0, 2.0]])
    assert code_digest(make(one)) != code_digest(make(two))
    assert code_digest(make(one)) == code_digest(make(Index([[1.0, 0.0]])))
    # A list the search fills in place does not move a second function over the same object;
    # a number rebound does (it may be a setting: read again rather than served stale).
    one.seen = []  # type: ignore[attr-defined]
    before = code_digest(make(one))
    one.seen.append("q")  # type: ignore[attr-defined]
    assert code_digest(make(one)) == before
    make(one)("q")
    assert code_digest(make(one)) != before


def test_what_cannot_be_hashed_is_listed_and_not_cached_without_a_name(tmp_path: Path) -> None:
    import random

    import pytest

    from pytest_ragmetrics.code_identity import unidentified
    from pytest_ragmetrics.errors import ConfigError
    from pytest_ragmetrics.retrievers import from_function

    class Client:  # stands for a faiss index, a model: a generator's state is held in C
        def __init__(self) -> None:
            self.handle = random.Random(0)

    def make(client: Client):  # type: ignore[no-untyped-def]
        def search(text: str) -> list[str]:
            return [str(client.handle.random())]

        return search

    found = unidentified(make(Client()))
    assert len(found) == 1 and found[0].endswith(
        "make.<locals>.search: closure value 'client'.handle: a random.Random (it holds its "
        "data in C, out of the digest's reach)"
    )
    assert unidentified(make) == [] and unidentified(lambda: (1, [2], {"a": 3})) == []
    assert unidentified(lambda: list(range(200_000))) == []  # a constant in code, not a value
    big = list(range(200_000))
    assert unidentified(lambda: big)[0].endswith("a builtins.list (over 100000 values or 32 deep)")
    # Two retrievers over different clients would share a cached run: refused unless told apart.
    with pytest.raises(
        ConfigError,
        match=r"from_function\('.*make.<locals>.search'\): .*random\.Random.*Pass "
        r"parameters= that tell them apart \(the index or model in use\), or version=",
    ):
        from_function(make(Client()), cache=tmp_path)
    # A name is a label people keep when the index behind it changes: it tells nothing apart.
    with pytest.raises(ConfigError, match=r"name= is a label and tells nothing apart"):
        from_function(make(Client()), cache=tmp_path, name="client-a")
    from_function(make(Client()), cache=tmp_path, version="client-a")
    from_function(make(Client()), cache=tmp_path, parameters={"client": "b"})
    from_function(make(Client()))  # no cache: nothing to confuse


def test_handles_of_the_process_are_no_reason_to_refuse_a_cache() -> None:
    # A lock, a logger (with a handler), a stream, a thread: no data a search reads; each was
    # listed as unhashable (a lock, a handler's stream), refusing an ordinary retriever's cache.
    import logging
    import threading

    from pytest_ragmetrics.code_identity import unidentified

    logger = logging.getLogger("tests.code_identity.handles")
    logger.addHandler(logging.StreamHandler(sys.stderr))

    class Searcher:
        def __init__(self, table: dict[str, list[str]]) -> None:
            self.table = table
            self.lock, self.rlock = threading.Lock(), threading.RLock()
            self.log, self.out = logger, sys.stdout
            self.worker = threading.Thread(target=print)

        def search(self, text: str) -> list[str]:
            with self.lock:
                return self.table.get(text, [])

    assert unidentified(Searcher({"q": ["d1"]}).search) == []
    assert code_digest(Searcher({"q": ["d1"]}).search) != code_digest(Searcher({}).search)


def test_private_slots_count() -> None:
    # A slot named __table is stored as _Index__table: read as __table, it was not found and
    # two indexes over different tables had one digest.
    class Index:
        __slots__ = ("__table",)

        def __init__(self, table: dict[str, list[str]]) -> None:
            self.__table = table

        def search(self, text: str) -> list[str]:
            return self.__table.get(text, [])

    assert code_digest(Index({"q": ["d1"]}).search) != code_digest(Index({}).search)


def test_huge_ints_and_ranges_count_without_repr() -> None:
    # repr of an int over 4300 digits raises ValueError: as a dict key or a range bound it
    # stopped the digest.
    huge = 10**5000

    def make(table: dict[int, list[int]], span: range):  # type: ignore[no-untyped-def]
        return lambda text: (table, span)

    one = code_digest(make({huge: [huge]}, range(huge)))
    assert one == code_digest(make({huge: [huge]}, range(huge)))
    assert one != code_digest(make({huge + 1: [huge]}, range(huge)))
    assert one != code_digest(make({huge: [huge]}, range(huge + 1)))


def test_a_large_vocabulary_is_hashed_not_refused() -> None:
    # A bm25 index's token -> id dict counted key and value as two of MAX_ITEMS: a vocabulary
    # of 50,001 tokens was refused as too large.
    from pytest_ragmetrics.code_identity import MAX_ITEMS, unidentified

    vocabulary = {f"w{i}": i for i in range(MAX_ITEMS // 2 + 1)}
    assert unidentified(lambda: vocabulary) == []


SET_OF_OBJECTS = """
import dataclasses


@dataclasses.dataclass(frozen=True)
class Doc:
    text: str

    def norm(self):
        return self.text.lower()


def make(docs):
    def search(text, k):
        return sorted(d.norm() for d in docs)[:k]

    return search
"""


def test_a_set_of_objects_has_one_digest_whatever_its_order(tmp_path: Path) -> None:
    # The first object of a set to be hashed carried its class's code, the others "seen":
    # a set ordered by the hash seed gave another digest in another process.
    expression = "usermod.make({usermod.Doc(t) for t in 'abcdef'})"
    digests = {_digest(tmp_path, SET_OF_OBJECTS, expression, seed=s) for s in "1356"}
    assert len(digests) == 1


MEMO = """
def make(index):
    memo = {}

    def search(text, k):
        if text not in memo:
            memo[text] = index.get(text, [])
        return memo[text][:k]

    return search


def searched(text, k, _seen=[]):
    _seen.append(text)
    return [text][:k]
"""


def test_a_memo_the_function_fills_does_not_move_its_digest(tmp_path: Path) -> None:
    # A dict in a closure (or a default list) counted by its content each time: after one
    # search a second retriever over the same function had another cache key.
    import importlib.util

    from pytest_ragmetrics.data.model import Queries
    from pytest_ragmetrics.retrievers import from_function

    (tmp_path / "memo_module.py").write_text(MEMO)
    spec = importlib.util.spec_from_file_location("memo_module", tmp_path / "memo_module.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    search = module.make({"q": ["d1", "d2"]})
    fresh = _digest(tmp_path, MEMO, "usermod.make({'q': ['d1', 'd2']})")
    before = code_digest(search), code_digest(module.searched)
    assert before[0] == fresh
    queries = Queries.from_dict({"q": "q", "r": "r"})
    first = from_function(search, cache=tmp_path / "cache")
    first.search(queries, 2)
    module.searched("q", 1)
    assert (code_digest(search), code_digest(module.searched)) == before
    # A second retriever over the same function has the first one's key: it reads its run.
    second = from_function(search, cache=tmp_path / "cache")
    assert second.identity() == first.identity()


GLOBALS = """
import random

import numpy as np

SETTINGS = {"k1": 1.2, "b": 0.75}
EMBEDDINGS = np.arange(6, dtype=np.float32).reshape(2, 3)
SEEN = {}


class Model:
    def __init__(self, name):
        self.name = name


MODEL = Model("minilm")


def search(text, k):
    SEEN[text] = SEEN.get(text, 0) + 1
    scale = SETTINGS["k1"] * float(EMBEDDINGS.sum())
    return [MODEL.name, str(scale)][:k]


# Stands for a faiss index or a model's weights loaded at import: data held in C.
RNG = random.Random(0)


def remote(text, k):
    return [str(RNG.random())][:k]


CALLS = 0


def counted(text, k):
    global CALLS
    CALLS += 1
    return [text][:k]
"""


def test_module_level_values_count_by_their_content(tmp_path: Path) -> None:
    # A module-level dict, array or object did not count at all: a search over a global
    # model kept its cache key after the model changed.
    base = _digest(tmp_path, GLOBALS, "usermod.search")
    for old, new in (
        ('"k1": 1.2', '"k1": 0.9'),
        ("np.arange(6,", "np.arange(1, 7,"),
        ('Model("minilm")', 'Model("mpnet")'),
    ):
        assert _digest(tmp_path, GLOBALS.replace(old, new), "usermod.search") != base, new
    assert _digest(tmp_path, GLOBALS, "usermod.search", seed="7") == base


def _load(tmp_path: Path, source: str, name: str) -> object:
    import importlib.util

    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: the digest finds the module's file
    spec.loader.exec_module(module)
    return module


def test_a_global_the_function_fills_does_not_move_its_identity(tmp_path: Path) -> None:
    from pytest_ragmetrics.retrievers import from_function

    module: Any = _load(tmp_path, GLOBALS, "globals_memo_module")
    before = code_digest(module.search)
    for text in ("a", "b", "a"):
        module.search(text, 1)
    assert module.SEEN == {"a": 2, "b": 1}
    assert code_digest(module.search) == before
    first = from_function(module.search, cache=tmp_path / "cache")
    second = from_function(module.search, cache=tmp_path / "cache")
    assert first.identity() == second.identity()


def test_a_global_rebound_to_another_object_is_read_again(tmp_path: Path) -> None:
    """monkeypatch.setattr(module, "MODEL", other) in one test, the real model in the next:
    the function's values were read once per process, so both had one identity and the second
    retriever was served the first one's cached runs."""
    import pytest

    module: Any = _load(tmp_path, GLOBALS, "globals_rebound_module")
    real = code_digest(module.search)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "MODEL", module.Model("fake"))
        fake = code_digest(module.search)
        patch.setattr(module, "SETTINGS", {"k1": 0.9, "b": 0.75})
        assert code_digest(module.search) not in (fake, real)
    assert fake != real
    assert code_digest(module.search) == real  # the real model again: its identity again
    # A number rebound moves it too (a setting monkeypatched per test); a counter the function
    # keeps itself does not move a retriever's key between its searches (settle, tested in
    # test_a_value_changed_between_searches_is_searched_anew).
    module.CALLS = 0
    counted = code_digest(module.counted)
    module.counted("a", 1)
    assert module.CALLS == 1 and code_digest(module.counted) != counted


CHANGED = """
CONF = {"best": "d1"}
BEST = "d3"
BOOST = 1.0
CALLS = 0
MEMO = {}


def search(text):
    global CALLS
    CALLS += 1
    MEMO[text] = len(MEMO)
    return [CONF["best"], BEST, "d9" if BOOST > 1 else "d8"]
"""


def test_a_value_changed_between_searches_is_searched_anew(tmp_path: Path) -> None:
    """A function's values were read once per process: a setting edited in place or a number
    or text rebound (``monkeypatch.setattr(module, "BOOST", 2.0)`` in a parametrized test)
    was served the cached run of the old value, by the same retriever and by a new one, and
    that run was stored under the new value's key for later processes too."""
    from pytest_ragmetrics import Cache, Queries
    from pytest_ragmetrics.retrievers import from_function

    module: Any = _load(tmp_path, CHANGED, "changed_values_module")
    cache = Cache(tmp_path / "cache")
    queries = Queries.from_dict({"q": "q"})
    kept = from_function(module.search, cache=cache)

    def top() -> list[list[str]]:
        fresh = from_function(module.search, cache=cache)
        return [[d for d, _ in r.search(queries, 3).ranking("q")] for r in (kept, fresh)]

    assert top() == [["d1", "d3", "d8"]] * 2
    module.CONF["best"] = "d2"  # in place
    assert top() == [["d2", "d3", "d8"]] * 2
    module.BEST = "d4"  # a text rebound
    assert top() == [["d2", "d4", "d8"]] * 2
    module.BOOST = 2.0  # a number rebound
    assert top() == [["d2", "d4", "d9"]] * 2
    # Nothing changed since but what the function changes itself as it runs (its counter and
    # memo): the same key, so the runs come from the cache and the function is not called.
    calls = module.CALLS
    assert top() == [["d2", "d4", "d9"]] * 2
    assert module.CALLS == calls == 4 and len(module.MEMO) == 1


def test_a_global_the_digest_cannot_read_refuses_a_cache(tmp_path: Path) -> None:
    import pytest

    from pytest_ragmetrics.code_identity import unidentified
    from pytest_ragmetrics.errors import ConfigError
    from pytest_ragmetrics.retrievers import from_function

    module: Any = _load(tmp_path, GLOBALS, "globals_client_module")
    found = unidentified(module.remote)
    assert len(found) == 1 and found[0].startswith("remote: global 'RNG': a random.Random")
    assert unidentified(module.search) == []
    with pytest.raises(ConfigError, match=r"global 'RNG'.*random\.Random.*Pass parameters="):
        from_function(module.remote, cache=tmp_path / "cache")
    with pytest.raises(ConfigError, match=r"global 'RNG'"):
        from_function(module.remote, cache=tmp_path / "cache", name="client-0")
    from_function(module.remote, cache=tmp_path / "cache", parameters={"client": 0})


PATHS = """
from pathlib import Path

HERE = Path(__file__).parent
DATA = HERE / "data" / "corpus.jsonl"
NAMED = str(HERE / "index")
ELSEWHERE = Path("/opt/shared/index")


def search(text, k):
    return [str(DATA), NAMED, str(ELSEWHERE)][:k]
"""


def _checkout(tmp_path: Path, name: str, source: str) -> str:
    """The digest of ``search`` of module ``pathmod`` in a project checked out at ``name``."""
    project = tmp_path / name / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "src" / "pathmod.py").write_text(textwrap.dedent(source))
    script = (
        "import pathmod\nfrom pytest_ragmetrics.code_identity import code_digest\n"
        "print(code_digest(pathmod.search))"
    )
    env = {**os.environ, "PYTHONPATH": f"{project / 'src'}{os.pathsep}{REPO}"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_paths_inside_the_project_count_relative_to_it(tmp_path: Path) -> None:
    # A path of the checkout counted as its absolute text: every clone, CI machine or
    # worktree had another identity (other cache keys) for the same code and data.
    first = _checkout(tmp_path, "one", PATHS)
    assert _checkout(tmp_path, "two", PATHS) == first
    # What the path names still counts, and a path outside the project as written.
    moved = PATHS.replace('"corpus.jsonl"', '"corpus-v2.jsonl"')
    assert _checkout(tmp_path, "three", moved) != first
    other = PATHS.replace("/opt/shared/index", "/opt/shared/index-v2")
    assert _checkout(tmp_path, "four", other) != first
