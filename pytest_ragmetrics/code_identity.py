"""A digest of a function's code, so that editing a function changes its identity.

The identity of a function retriever, generator, pipeline or judge includes
:func:`code_digest`: a sha256 over the function's bytecode, its constants (nested functions and
lambdas included), the names it uses, its defaults, the values of its closure cells and, through
the names it uses, the functions and classes of its own module that it calls (recursively).
Built-ins, C functions and functions of other modules (libraries) count by their qualified
name only. The digest is the same in every process (no ``id()``, no addresses, no hash of a
``str``, no set order), for one Python version: a new Python may compile the same source
differently.

A bound method counts with its class: the methods of the class and of its bases in the same
module (those it calls through ``self``/``cls``: properties, cached and lru-cached methods
included), and the instance's own values (``self.a``), as a callable object does. A wrapper
that is no Python function (``functools.lru_cache``, ``functools.cache``) counts by the
function it wraps, at any depth; a ``functools.partial`` by its function, arguments and
keywords.

Values it reaches through a closure, a default, a partial, an instance or a global count by
their content: numbers, strings, bytes; lists, tuples, dicts and sets of values (item by item,
a set's and a dict's sorted, so their order in memory does not count); a numpy array by its
bytes (up to :data:`MAX_ARRAY_BYTES`); a path, an enum member, a date by its value; another
object by its class (its code, when it is of the same module) and its own values
(``__dict__``, slots), recursively (cycles end, at most :data:`MAX_ITEMS` values and
:data:`MAX_DEPTH` levels per value; a dict's pair is one value). A path inside the project
(below the nearest folder above the function's module holding ``pyproject.toml``,
``setup.cfg``, ``setup.py``, ``pytest.ini``, ``tox.ini`` or ``.git``), or a string naming one,
counts by its path relative to the project, so a checkout elsewhere has the same identity.
An object's values and a function's defaults, closure values and globals are read once per
process, when first hashed, and again when a name was rebound since (to another object, number
or text: a model swapped or a setting changed by ``monkeypatch.setattr``); a memo filled in
place is not seen by :func:`code_digest`. A function retriever, generator or pipeline, and an
embedding judge's encoder, go further (:func:`current_digest`): each search, batch of answers
or judging reads every value again, in place changes included, and what the function changed
itself while it ran (its counter, its memo) is forgiven by :func:`settle`, so it keeps the
key of its last call. A global
counts by what its name held then: a module by its name, code of the module by its parts, a
library's function or class by its name, any other value (a model, an index, an array or a
dict loaded at import) by its content. Objects that describe themselves count by that
description: a retriever, generator or judge by its ``identity()``, a corpus or queries by
their ``fingerprint``.

What it cannot see it never takes for the same thing silently. A value whose data Python
cannot read (a faiss index, a tensor, a model's weights, a random generator: data held in C),
or beyond those bounds, counts by its type and is listed by :func:`unidentified` (handles of
the process, a lock, a logger, a stream, a thread, count by their type and are not);
:func:`refuse_uncacheable` makes caching a function that reaches one an error unless
``parameters=`` or ``version=`` tell its retrievers apart (a ``name=`` is a label: it does
not). Nor can it see data the function reads (files, the network, a database), code in other
modules or packages, or (outside those calls) an object changed in place
after it was first hashed: pass ``version=`` when one of those changes.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import types
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pytest_ragmetrics.code_values import (
    NEUTRAL,
    PLAIN,
    attributes_of,
    compact,
    in_project,
    is_array,
    key_text,
    opaque_class,
    plain_repr,
    project_root,
    qualified_name,
    simple_repr,
    stable_repr,
)
from pytest_ragmetrics.errors import ConfigError

#: Of one value a function reaches (a closure cell, a default, an attribute), the digest reads
#: this many items at most (hashing a whole corpus for every identity would be slow); a larger
#: value counts by its type and is listed by :func:`unidentified`.
MAX_ITEMS = 100_000

#: How deep the digest reads into nested values (an object's object's list ...).
MAX_DEPTH = 32

#: A numpy array up to this many bytes counts by its content (an index, the embeddings a
#: search reads); a larger one by its dtype and shape, and is listed by :func:`unidentified`.
MAX_ARRAY_BYTES = 256 * 1024 * 1024


def code_digest(function: Callable[..., Any]) -> str:
    """sha256 hex digest of ``function``'s code as described in the module docstring."""
    walker = _Walker(function)
    hasher = hashlib.sha256()
    for part in walker.parts(function):
        hasher.update(part.encode("utf-8", "surrogatepass"))
        hasher.update(b"\x00")
    return hasher.hexdigest()


def fresh_digest(function: Callable[..., Any]) -> str:
    """:func:`code_digest` with every value read as it is now, none from a snapshot: what
    changed in place since (a config dict edited, a document added to a list) counts too."""
    walker = _Walker(function)
    walker.inline_functions = walker.inline_objects = True
    hasher = hashlib.sha256()
    for part in walker.parts(function):
        hasher.update(part.encode("utf-8", "surrogatepass"))
        hasher.update(b"\x00")
    return hasher.hexdigest()


#: (id of the function, id of its object for a bound method) -> (weak reference, the
#: :func:`fresh_digest` its last search left it in, the digest that search ran under).
_SETTLED: dict[tuple[int, int], tuple[Callable[[], Any], str, str]] = {}
#: The same key -> (weak reference, the digest :func:`current_digest` gave last).
_LAST: dict[tuple[int, int], tuple[Callable[[], Any], str]] = {}


def _settle_key(function: Callable[..., Any]) -> tuple[tuple[int, int], Any]:
    """The key of a function (a bound method by its function and object: each attribute access
    makes a new method object) and what a weak reference should follow."""
    if isinstance(function, types.MethodType):
        return (id(function.__func__), id(function.__self__)), function.__self__
    return (id(function), 0), function


def current_digest(function: Callable[..., Any]) -> str:
    """The digest a call of ``function`` (a search, a batch of answers) runs under now:
    :func:`fresh_digest`, unless its values are as the last call in this process left them
    (:func:`settle`), in which case the digest that call ran under. So a memo or counter the
    function fills as it runs does not move its identity, while a value anyone else changed
    or rebound since, in place or not (``monkeypatch.setattr``, a setting edited between two
    searches), does."""
    now = fresh_digest(function)
    key, target = _settle_key(function)
    found = _SETTLED.get(key)
    digest = found[2] if found is not None and found[0]() is target and found[1] == now else now
    try:
        reference = weakref.ref(target, lambda _: (_SETTLED.pop(key, None), _LAST.pop(key, None)))
    except TypeError:
        return digest  # an object that takes no weak reference: each call reads it anew
    _LAST[key] = (reference, digest)
    return digest


def settle(function: Callable[..., Any]) -> None:
    """Note the state ``function`` is in after a call that ran under the digest
    :func:`current_digest` gave last: what it changed itself keeps that digest."""
    key, target = _settle_key(function)
    last = _LAST.get(key)
    if last is not None and last[0]() is target:
        _SETTLED[key] = (last[0], fresh_digest(function), last[1])


def function_identity(
    function: Callable[..., Any], version: str | int | None = None, digest: str | None = None
) -> dict[str, Any]:
    """``{"function": module.qualname, "code": digest}`` plus ``version`` when given; the
    digest is :func:`code_digest`'s unless given."""
    identity: dict[str, Any] = {
        "function": qualified_name(function),
        "code": (code_digest(function) if digest is None else digest)[:20],
    }
    if version is not None:
        identity["version"] = str(version)
    return identity


def unidentified(function: Callable[..., Any]) -> list[str]:
    """What :func:`code_digest` of ``function`` reaches but counts by its type only (a C
    object, a value too large to hash), each as ``"<where>: a <module.Type> (<why>)"``."""
    walker = _Walker(function)
    for _ in walker.parts(function):
        pass
    return walker.unidentified


def refuse_uncacheable(function: Callable[..., Any], where: str) -> None:
    """A ConfigError naming ``where`` when ``function`` reaches a value its digest cannot
    identify (:func:`unidentified`): two retrievers over different ones (another faiss index,
    another model) would share one cached run. The caller skips this when ``parameters=`` or
    ``version=`` was given to tell them apart."""
    found = unidentified(function)
    if found:
        shown = "; ".join(found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
        raise ConfigError(
            f"{where}: cache= keys runs by the function's code and the values it reaches, but "
            f"it reaches values whose content cannot be hashed ({shown}), so retrievers built "
            "over different ones would share cached runs. Pass parameters= that tell them apart "
            "(the index or model in use), or version=, or leave cache= off (name= is a label "
            "and tells nothing apart)"
        )


def jsonable(value: Any, where: str) -> Any:
    """``value`` as an identity holds it: JSON values as they are (mappings with string keys,
    lists, finite numbers), a function or callable by :func:`function_identity`; anything
    else (a model object, NaN) a ConfigError naming ``where`` and the key, at construction
    rather than as a bare TypeError when a baseline or cache key is written."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"{where}: {value!r} is not a finite number")
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{where}: key {key!r} is not a string")
            out[key] = jsonable(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [jsonable(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if callable(value) and not isinstance(value, type):
        return function_identity(value)
    raise ConfigError(
        f"{where}: a {type(value).__name__} cannot go into an identity (JSON values "
        "only); describe it instead, e.g. its name and version as strings"
    )


_MISSING = object()


class _TooLarge(Exception):
    """A value over :data:`MAX_ITEMS` items or :data:`MAX_DEPTH` levels deep."""


class _Walker:
    """One digest's walk: remembers what it visited, so recursion and cycles end, and what it
    reached but could not identify by its content (:func:`unidentified`)."""

    def __init__(self, root: Any, module: str | None = None) -> None:
        self.module = module if root is None else getattr(_underlying(root), "__module__", None)
        self.project = project_root(self.module)  # paths inside it count relative to it
        self.seen: dict[int, None] = {}  # ids only mark visits (in order); never in the digest
        self.active: set[int] = set()  # the values being hashed, a guard against cycles
        # Within a snapshot (see :meth:`snapshot`): read functions' and objects' values inline.
        self.inline_functions = self.inline_objects = False
        self.budget = MAX_ITEMS
        self.depth = 0
        self.unidentified: list[str] = []

    def parts(self, thing: Any) -> Iterator[str]:
        if id(thing) in self.seen:
            yield f"seen:{qualified_name(thing)}"
            return
        self.seen[id(thing)] = None
        if isinstance(thing, functools.partial):
            yield "partial"
            yield from self.parts(thing.func)
            yield from self.values(thing.args, f"{qualified_name(thing)}: partial argument")
            yield from self.values(sorted(thing.keywords.items()), "partial keyword")
        elif isinstance(thing, types.MethodType):
            # The method, the class it reaches other methods through (self._helper()), and
            # the instance's own values (self.a), as for a callable object.
            yield f"method:{type(thing.__self__).__qualname__}"
            yield from self.parts(thing.__func__)
            if not isinstance(thing.__self__, type):
                yield from self.parts(type(thing.__self__))
                yield from self.attributes(thing.__self__, f"{qualified_name(thing)}: self")
        elif isinstance(thing, types.FunctionType):
            yield from self.function(thing)
        elif isinstance(thing, type):
            yield from self.cls(thing)
        elif _wrapped(thing) is not None:
            # A wrapper that is no Python function (functools.lru_cache, functools.cache):
            # the function it wraps (at any depth) is the code.
            yield f"wrapper:{qualified_name(type(thing))}"
            yield from self.parts(_wrapped(thing))
        elif callable(thing) and not _is_builtin(thing):
            yield f"object:{qualified_name(type(thing))}"
            yield from self.parts(type(thing))  # __call__ and the methods it calls
            yield from self.attributes(thing, f"{qualified_name(thing)}: self")
        else:
            yield f"name:{qualified_name(thing)}"
            bound = getattr(thing, "__self__", None)  # a built-in method of an array, a dict
            if bound is not None and not isinstance(bound, (types.ModuleType, type)):
                yield from self.values((bound,), f"{qualified_name(thing)}: its object")

    def function(self, function: types.FunctionType) -> Iterator[str]:
        yield f"function:{function.__qualname__}"
        if not self._ours(function):
            return  # a library's function: its name is enough
        where = function.__qualname__
        yield from self.code(function.__code__)
        yield from self.snapshot(
            function, lambda w: w.bound(function, where), whole=False, stamp=_bindings(function)
        )

    def bound(self, function: types.FunctionType, where: str) -> Iterator[str]:
        """The values a function holds or names: its defaults, its closure cells and the
        globals of its module it names (a module by its name, code by its parts, any other
        value by its content), read once per process (see :meth:`snapshot`)."""
        yield from self.values(function.__defaults__ or (), f"{where}: a default")
        yield from self.values(
            sorted((function.__kwdefaults__ or {}).items()), f"{where}: a default"
        )
        for name, cell in zip(
            function.__code__.co_freevars, function.__closure__ or (), strict=True
        ):
            yield f"cell:{name}"
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell (a name bound later)
                yield "empty"
                continue
            yield from self.reference(value, f"{where}: closure value {name!r}")
        namespace = function.__globals__
        for name in _global_names(function.__code__):
            value = namespace.get(name, _MISSING)
            if value is not _MISSING and not self._library_name(value):
                yield f"global:{name}"
                yield from self.reference(value, f"{where}: global {name!r}")

    def _library_name(self, value: Any) -> bool:
        """A module, or a function or class of another module: a global a digest leaves out
        (its name alone says nothing of the data a search reads, and leaving it out keeps the
        identities of functions that call a library as they were)."""
        if isinstance(value, types.ModuleType):
            return True
        routine = isinstance(value, (types.FunctionType, type)) or _is_builtin(value)
        return routine and not self._ours(value)

    def code(self, code: types.CodeType) -> Iterator[str]:
        yield code.co_code.hex()
        yield ",".join(code.co_names)
        yield ",".join(code.co_varnames)
        yield ",".join(code.co_freevars)
        yield str(code.co_argcount) + "/" + str(code.co_kwonlyargcount) + "/" + str(code.co_flags)
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                yield "code"
                yield from self.code(constant)
            else:
                yield stable_repr(constant)

    def cls(self, cls: type) -> Iterator[str]:
        """A class of ours by its methods (properties, cached and lru-cached ones included),
        its plain class attributes and its bases of ours; another's by its name."""
        yield f"class:{cls.__qualname__}"
        if not self._ours(cls):
            return
        for name, member in sorted(vars(cls).items()):
            code = _member_code(member)
            if code:
                yield f"member:{name}"
                for function in code:
                    yield from self.parts(function)
            elif isinstance(member, PLAIN):
                yield f"member:{name}={member!r}"
        for base in cls.__bases__:
            if base is not object:
                yield f"base:{base.__qualname__}"
                yield from self.parts(base)

    def reference(self, value: Any, where: str) -> Iterator[str]:
        """A value a function reaches: code we can read, a module, or a value by content."""
        if isinstance(value, (types.FunctionType, types.MethodType, functools.partial, type)):
            yield from self.parts(value)
        elif isinstance(value, types.ModuleType):
            yield f"module:{value.__name__}"
        else:
            yield from self.values((value,), where)

    def values(self, values: Any, where: str) -> Iterator[str]:
        """Values (or ``(name, value)`` pairs): code of ours by its parts, any other by
        :meth:`state`, each with its own :data:`MAX_ITEMS` budget."""
        for value in values:
            label = where
            if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
                yield value[0]
                label = f"{where}.{value[0]}"
                value = value[1]
            if callable(value) and not isinstance(value, type) and self._ours(value):
                yield from self.parts(value)
                continue
            saved = self.budget, self.depth, set(self.active)
            self.budget, self.depth = MAX_ITEMS, 0
            try:
                text = self.state(value, label)
            except _TooLarge:
                text = self.unknown(value, label, f"over {MAX_ITEMS} values or {MAX_DEPTH} deep")
            finally:
                self.budget, self.depth, self.active = saved
            yield text

    def state(self, value: Any, where: str) -> str:
        """One value by its content, as one string (see the module docstring)."""
        self.budget -= 1
        if self.budget < 0 or self.depth > MAX_DEPTH:
            raise _TooLarge  # the whole value counts by its type (see values)
        if isinstance(value, (str, os.PathLike)):
            local = in_project(value, self.project)
            if local is not None:
                return local
        if isinstance(value, PLAIN):
            return plain_repr(value)
        if isinstance(value, (types.FunctionType, types.MethodType, functools.partial, type)) or (
            callable(value) and self._ours(value)
        ):
            return "{" + "\x01".join(self.parts(value)) + "}"
        simple = simple_repr(value)
        if simple is not None:
            return simple
        if id(value) in self.active:
            return "<cycle>"
        self.active.add(id(value))
        self.depth += 1
        try:
            return self.content(value, where)
        finally:
            self.active.discard(id(value))
            self.depth -= 1

    def content(self, value: Any, where: str) -> str:
        """A container item by item (a set's and a dict's sorted), an array by its bytes, an
        object by :meth:`attributes`; what holds its data out of Python's reach is unknown."""
        kind = type(value).__qualname__
        if isinstance(value, (tuple, list, collections.deque)):
            items = ",".join(self.state(item, f"{where}[{i}]") for i, item in enumerate(value))
            return compact(f"{kind}[{items}]")
        if isinstance(value, (frozenset, set)):
            members = sorted(self.apart(self.state(item, where) for item in value))
            return compact(f"{kind}{{{','.join(members)}}}")
        if isinstance(value, (dict, types.MappingProxyType)):
            self.budget += sum(1 for key in value if isinstance(key, PLAIN))  # pairs as one
            pairs = self.apart(
                f"{self.state(key, where)}:{self.state(item, f'{where}[{key_text(key)}]')}"
                for key, item in value.items()
            )
            return compact(f"{kind}{{{','.join(sorted(pairs))}}}")
        if isinstance(value, (range, slice)):
            return f"{kind}{self.state((value.start, value.stop, value.step), where)}"
        if is_array(value):
            return self.array(value, where)
        if isinstance(value, NEUTRAL):
            return f"<{type(value).__module__}.{kind}>"  # no data a search reads
        if opaque_class(type(value)) or attributes_of(value) is None:
            return self.unknown(value, where, "it holds its data in C, out of the digest's reach")
        code = "\x01".join(self.parts(type(value)))
        return f"<object {code} {chr(1).join(self.attributes(value, where))}>"

    def array(self, value: Any, where: str) -> str:
        """A numpy array by dtype, shape and its bytes (an object array by its items)."""
        head = f"ndarray[{value.dtype.str},{'x'.join(map(str, value.shape))}]"
        if value.dtype.hasobject:
            return f"<{head} {self.state(value.tolist(), where)}>"
        if value.nbytes > MAX_ARRAY_BYTES:
            return self.unknown(value, where, f"more than {MAX_ARRAY_BYTES} bytes")
        import numpy as np

        digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        return f"<{head} sha256={digest}>"

    def attributes(self, thing: Any, where: str) -> Iterator[str]:
        """An object's own values (``self.a``: its ``__dict__`` and slots), read once per
        process (:meth:`snapshot`)."""
        attributes = attributes_of(thing) or []
        yield from self.snapshot(
            thing,
            lambda w: w.values(attributes, where),
            whole=True,
            stamp=_stamp(value for _, value in attributes),
        )

    def snapshot(
        self,
        thing: Any,
        read: Callable[[_Walker], Iterable[str]],
        whole: bool,
        stamp: tuple[object, ...] = (),
    ) -> Iterator[str]:
        """``read(walker)``: the values an object or a function holds, as they were when this
        process first hashed it: a counter or memo the function fills as it runs (a dict in a
        closure, a default, ``self.memo``) does not move the identity of a second retriever
        over the same one. A name rebound to another object since (``stamp``, see
        :func:`_stamp`: a model swapped by ``monkeypatch.setattr``) is read again. Read by a
        walker of its own, so the text depends on ``thing`` alone, not on what was hashed
        before: an object's (``whole``) reads all it reaches inline, a function's reads other
        functions inline and objects by their snapshots."""
        if self.inline_objects if whole else self.inline_functions:
            yield from read(self)
            return
        key = id(thing)  # only to find the snapshot; checked against a weak reference
        found = _SNAPSHOTS.get(key)
        if found is None or found[0]() is not thing or found[1:3] != (self.module, stamp):
            walker = _Walker(None, self.module)
            walker.inline_functions, walker.inline_objects = True, whole
            walker.active.add(key)
            walker.seen[key] = None
            parts = tuple(read(walker))
            found = (_weak(thing, key), self.module, stamp, parts, tuple(walker.unidentified))
            if found[0]() is thing:
                _SNAPSHOTS[key] = found
        self.unidentified.extend(n for n in found[4] if n not in self.unidentified)
        yield from found[3]

    def apart(self, texts: Iterable[str]) -> list[str]:
        """``texts`` (the items of a set or dict, computed as they are iterated), each as if
        it came first: code one item visits must not shorten another's to ``seen:``, or the
        digest would follow an order that changes from process to process."""
        mark = len(self.seen)
        added: list[int] = []
        out: list[str] = []
        for text in texts:
            out.append(text)
            while len(self.seen) > mark:
                added.append(self.seen.popitem()[0])
        self.seen.update(dict.fromkeys(added))
        return out

    def unknown(self, value: Any, where: str, why: str) -> str:
        """A value whose content the digest cannot read: its type, and a note of it."""
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        note = f"{where}: a {kind} ({why})"
        if note not in self.unidentified:
            self.unidentified.append(note)
        return f"<{kind}>"

    def _ours(self, thing: Any) -> bool:
        """Defined in the same module as the function the digest is of (the user's code)."""
        target = _underlying(thing)
        module = getattr(target, "__module__", None)
        return module is not None and module == self.module and not _is_builtin(target)


def _wrapped(thing: Any) -> Any:
    """What a wrapper that is not a Python function wraps (``__wrapped__``), else None."""
    if isinstance(thing, (types.FunctionType, types.MethodType, type, functools.partial)):
        return None
    inner = getattr(thing, "__wrapped__", None)
    return inner if callable(inner) else None


def _underlying(thing: Any) -> Any:
    for _ in range(100):  # a wrapper of a wrapper ...: the innermost function's module
        inner = _wrapped(thing)
        if inner is None:
            break
        thing = inner
    while isinstance(thing, functools.partial):
        thing = thing.func
    if isinstance(thing, types.MethodType):
        thing = thing.__func__
    plain_function = isinstance(thing, (types.FunctionType, type))
    if not plain_function and callable(thing) and not _is_builtin(thing):
        return type(thing)
    return thing


def _is_builtin(thing: Any) -> bool:
    return isinstance(
        thing,
        (
            types.BuiltinFunctionType,
            types.BuiltinMethodType,
            types.WrapperDescriptorType,
            types.MethodWrapperType,
            types.MethodDescriptorType,
            types.ClassMethodDescriptorType,
        ),
    ) or (isinstance(thing, type) and thing.__module__ == "builtins")


def _global_names(code: types.CodeType) -> Iterator[str]:
    """The names a code object (and the code nested in it) looks up, each once, in order."""
    seen: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop(0)
        for name in current.co_names:
            if name not in seen:
                seen.add(name)
                yield name
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))


def _member_code(member: Any) -> list[Any]:
    """The code a class attribute holds: a method (static, class, lru-cached: any wrapper), a
    property's accessors, a cached property's or a partial method's function."""
    if isinstance(member, (staticmethod, classmethod)):
        member = member.__func__
    if isinstance(member, property):
        return [f for f in (member.fget, member.fset, member.fdel) if f is not None]
    if isinstance(member, (functools.cached_property, functools.partialmethod)):
        return [member.func]
    if isinstance(member, types.FunctionType) or _wrapped(member) is not None:
        return [member]
    return []


#: One snapshot per object this process has hashed the values of (see _Walker.attributes):
#: id -> (weak reference, module, stamp, parts, what could not be identified). Never in a
#: digest.
_SNAPSHOTS: dict[
    int,
    tuple[Callable[[], Any], str | None, tuple[object, ...], tuple[str, ...], tuple[str, ...]],
] = {}
#: Values a stamp holds by their value: a name rebound to another of these is read again too.
_SCALARS = (int, float, complex, str, bytes, type(None))


def _stamp(values: Iterable[Any]) -> tuple[object, ...]:
    """What a snapshot remembers of the values it read, to see a name rebound since: a number
    or a text by its type and value (a float by its repr, so that NaN equals NaN), any other
    value by its id. A model, index, dict or object swapped for another, or a setting rebound
    to another number (by ``monkeypatch.setattr``, or a conftest), is read again. A memo filled
    in place is not; a function retriever's own counters and memos are told from changes made
    by others through :func:`settle`."""
    return tuple(
        (type(value), repr(value) if isinstance(value, (float, complex)) else value)
        if isinstance(value, _SCALARS)
        else id(value)
        for value in values
    )


def _bindings(function: types.FunctionType) -> tuple[object, ...]:
    """:func:`_stamp` of the values a function's closure cells and named globals hold now."""
    cells = []
    for cell in function.__closure__ or ():
        try:
            cells.append(cell.cell_contents)
        except ValueError:  # an empty cell
            cells.append(None)
    namespace = function.__globals__
    named = (namespace.get(name) for name in _global_names(function.__code__))
    return _stamp([*cells, *named])


def _weak(thing: Any, key: int) -> Callable[[], Any]:
    """A weak reference to ``thing`` that drops its snapshot when it goes; for an object that
    takes none, a function returning None (its values are hashed every time)."""
    try:
        return weakref.ref(thing, lambda _: _SNAPSHOTS.pop(key, None))
    except TypeError:
        return lambda: None
