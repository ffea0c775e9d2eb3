"""A digest of a function's code, so that editing a function changes its identity.

The identity of a function retriever, generator, pipeline or judge includes
:func:`code_digest`: a sha256 over the function's bytecode, its constants (nested functions and
lambdas included), the names it uses, its defaults, the values of its closure cells and, through
the names it uses, the functions and classes of its own module that it calls (recursively).
Built-ins, C functions and functions of other modules (libraries) count by their qualified
name only. The digest is the same in every process (no ``id()``, no addresses, no hash of a
``str``), for one Python version: a new Python may compile the same source differently.

Values it reaches through a closure, a default or a global count when they cannot change:
numbers, strings, bytes, and tuples and frozensets of them (their first :data:`MAX_ITEMS`
items). Objects that describe themselves count by that description: a retriever, generator or
judge by its ``identity()``, a corpus or queries by their ``fingerprint``. What it cannot see:
data the function reads (files, the network, a database), mutable values (the content of a
list, dict or set: it may be a memo filled as the function runs), other objects (a model, a
faiss index, a client count by their type only), and code in other modules or packages. Pass
``version=`` (or ``name=``/``parameters=`` that tell them apart) when one of those changes.

A bound method counts with its class's methods (those it calls through ``self``) and the
instance's values, as a callable object does; a wrapper that is no Python function
(``functools.lru_cache``) by the function it wraps; a numpy array by its content.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pytest_ragmetrics.errors import ConfigError

#: Of a tuple or frozenset in a closure cell, default or global, the items beyond this many
#: count by their type only (hashing a whole corpus for every identity would be slow).
MAX_ITEMS = 10_000

_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def code_digest(function: Callable[..., Any]) -> str:
    """sha256 hex digest of ``function``'s code as described in the module docstring."""
    walker = _Walker(function)
    hasher = hashlib.sha256()
    for part in walker.parts(function):
        hasher.update(part.encode("utf-8", "surrogatepass"))
        hasher.update(b"\x00")
    return hasher.hexdigest()


def qualified_name(function: Any) -> str:
    """``module.qualname`` of a function, method, partial or callable object."""
    target = function.func if isinstance(function, functools.partial) else function
    if not hasattr(target, "__qualname__") and not isinstance(target, type):
        target = type(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}.{name}" if module else name


def function_identity(
    function: Callable[..., Any], version: str | int | None = None
) -> dict[str, Any]:
    """``{"function": module.qualname, "code": digest}`` plus ``version`` when given."""
    identity: dict[str, Any] = {
        "function": qualified_name(function),
        "code": code_digest(function)[:20],
    }
    if version is not None:
        identity["version"] = str(version)
    return identity


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


class _Walker:
    """One digest's walk: remembers what it visited, so recursion and cycles end."""

    def __init__(self, root: Any) -> None:
        root_function = _underlying(root)
        self.module = getattr(root_function, "__module__", None)
        self.seen: set[int] = set()  # ids only mark visits; they never reach the digest

    def parts(self, thing: Any) -> Iterator[str]:
        if id(thing) in self.seen:
            yield f"seen:{qualified_name(thing)}"
            return
        self.seen.add(id(thing))
        if isinstance(thing, functools.partial):
            yield "partial"
            yield from self.parts(thing.func)
            yield from self.values(thing.args)
            yield from self.values(sorted(thing.keywords.items()))
        elif isinstance(thing, types.MethodType):
            # The method, the class it reaches other methods through (self._helper()), and
            # the instance's own values (self.a), as for a callable object.
            yield f"method:{type(thing.__self__).__qualname__}"
            yield from self.parts(thing.__func__)
            if not isinstance(thing.__self__, type):
                yield from self.parts(type(thing.__self__))
                yield from self.values(sorted(getattr(thing.__self__, "__dict__", {}).items()))
        elif isinstance(thing, types.FunctionType):
            yield from self.function(thing)
        elif isinstance(thing, type):
            yield from self.cls(thing)
        elif _wrapped(thing) is not None:
            # A wrapper that is no Python function (functools.lru_cache, functools.cache):
            # the function it wraps is the code.
            yield f"wrapper:{qualified_name(type(thing))}"
            yield from self.parts(_wrapped(thing))
        elif callable(thing) and not _is_builtin(thing):
            yield f"object:{qualified_name(type(thing))}"
            yield from self.parts(type(thing))  # __call__ and the methods it calls
            yield from self.values(sorted(getattr(thing, "__dict__", {}).items()))
        else:
            yield f"name:{qualified_name(thing)}"

    def function(self, function: types.FunctionType) -> Iterator[str]:
        yield f"function:{function.__qualname__}"
        if not self._ours(function):
            return  # a library's function: its name is enough
        yield from self.code(function.__code__)
        yield from self.values(function.__defaults__ or ())
        yield from self.values(sorted((function.__kwdefaults__ or {}).items()))
        for name, cell in zip(
            function.__code__.co_freevars, function.__closure__ or (), strict=True
        ):
            yield f"cell:{name}"
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell (a name bound later)
                yield "empty"
                continue
            yield from self.reference(value)
        namespace = function.__globals__
        for name in _global_names(function.__code__):
            if name in namespace:
                value = namespace[name]
                if self._ours(value) or isinstance(value, _PLAIN) or _is_container(value):
                    yield f"global:{name}"
                    yield from self.reference(value)

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
                yield _stable_repr(constant)

    def cls(self, cls: type) -> Iterator[str]:
        yield f"class:{cls.__qualname__}"
        if not self._ours(cls):
            return
        for name, member in sorted(vars(cls).items()):
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if isinstance(member, types.FunctionType):
                yield f"member:{name}"
                yield from self.parts(member)
            elif isinstance(member, _PLAIN):
                yield f"member:{name}={member!r}"

    def reference(self, value: Any) -> Iterator[str]:
        """A value a function reaches: code we can read, a plain value, or just its type."""
        if isinstance(value, (types.FunctionType, types.MethodType, functools.partial, type)):
            yield from self.parts(value)
        elif isinstance(value, types.ModuleType):
            yield f"module:{value.__name__}"
        else:
            yield from self.values((value,))

    def values(self, values: Any) -> Iterator[str]:
        for value in values:
            if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
                yield value[0]
                value = value[1]
            if callable(value) and not isinstance(value, type) and self._ours(value):
                yield from self.parts(value)
            else:
                yield _stable_repr(value)

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


def _self_description(value: Any) -> str | None:
    """An object that describes itself: a retriever, generator or judge by its ``identity()``,
    a corpus or queries by their ``fingerprint``; None for any other object."""
    if isinstance(value, type):
        return None
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    try:
        get = getattr(value, "identity", None)
        if callable(get):
            described = json.dumps(get(), sort_keys=True, default=str)
            return f"<{kind} identity={described}>"
        fingerprint = getattr(value, "fingerprint", None)
        if isinstance(fingerprint, str):
            return f"<{kind} fingerprint={fingerprint}>"
    except Exception:  # an object that cannot describe itself counts by its type
        return None
    return None


#: A numpy array up to this many bytes counts by its content (an index, the embeddings a
#: search reads); a larger one by its dtype and shape.
MAX_ARRAY_BYTES = 256 * 1024 * 1024


def _is_array(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__qualname__ == "ndarray"


def _array_repr(value: Any) -> str:
    """A numpy array by dtype, shape and (up to :data:`MAX_ARRAY_BYTES`) a digest of its
    bytes: two retrievers over different arrays never share an identity."""
    head = f"ndarray[{value.dtype.str},{'x'.join(map(str, value.shape))}]"
    if value.dtype.hasobject or value.nbytes > MAX_ARRAY_BYTES:
        return f"<{head}>"
    import numpy as np

    return f"<{head} sha256={hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}>"


def _is_container(value: Any) -> bool:
    return isinstance(value, (tuple, frozenset))


def _stable_repr(value: Any, budget: list[int] | None = None) -> str:
    """A repr that is the same in every process: plain values as repr, tuples and frozensets
    (sorted) of them item by item (up to :data:`MAX_ITEMS` items), objects that describe
    themselves by that; anything else by its type only: a list, dict or set may be filled
    while the function runs (a memo), so its content would make the identity drift."""
    budget = [MAX_ITEMS] if budget is None else budget
    budget[0] -= 1
    if budget[0] < 0:
        return f"<{type(value).__qualname__}>"
    if isinstance(value, _PLAIN):
        return repr(value)
    if isinstance(value, tuple):
        return f"tuple[{','.join(_stable_repr(v, budget) for v in value)}]"
    if isinstance(value, frozenset):
        return f"frozenset{{{','.join(sorted(_stable_repr(v, budget) for v in value))}}}"
    if isinstance(value, types.CodeType):
        return f"<code {value.co_name}>"
    if _is_array(value):
        return _array_repr(value)
    described = _self_description(value)
    if described is not None:
        return described
    if inspect.isroutine(value) or isinstance(value, type):
        return f"<{qualified_name(value)}>"
    return f"<{type(value).__module__}.{type(value).__qualname__}>"
