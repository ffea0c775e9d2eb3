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
list, dict or set: it may be a memo filled as the function runs), other objects (a model, an
index, a client count by their type only), and code in other modules or packages. Pass
``version=`` and bump it when one of those changes.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import types
from collections.abc import Callable, Iterator
from typing import Any

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
            yield f"method:{type(thing.__self__).__qualname__}"
            yield from self.parts(thing.__func__)
        elif isinstance(thing, types.FunctionType):
            yield from self.function(thing)
        elif isinstance(thing, type):
            yield from self.cls(thing)
        elif callable(thing) and not _is_builtin(thing):
            call = vars(type(thing)).get("__call__")
            yield f"object:{qualified_name(type(thing))}"
            if isinstance(call, types.FunctionType):
                yield from self.parts(call)
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


def _underlying(thing: Any) -> Any:
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
    described = _self_description(value)
    if described is not None:
        return described
    if inspect.isroutine(value) or isinstance(value, type):
        return f"<{qualified_name(value)}>"
    return f"<{type(value).__module__}.{type(value).__qualname__}>"
