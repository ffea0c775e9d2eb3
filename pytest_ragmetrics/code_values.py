"""How the code digest (:mod:`pytest_ragmetrics.code_identity`) reads one value: the values
whose text is the same in every process (plain values, a path, an enum member, a date), objects
that describe themselves, the objects that keep their data out of Python's reach, the handles of
the process that hold no data a search reads, and a path inside the project as a path relative
to it, so that an identity does not depend on where the project is checked out."""

from __future__ import annotations

import contextlib
import datetime
import decimal
import enum
import functools
import hashlib
import inspect
import io
import json
import logging
import os
import re
import struct
import sys
import threading
import types
import weakref
from typing import Any

PLAIN = (type(None), bool, int, float, complex, str, bytes)


def qualified_name(function: Any) -> str:
    """``module.qualname`` of a function, method, partial or callable object."""
    target = function.func if isinstance(function, functools.partial) else function
    if not hasattr(target, "__qualname__") and not isinstance(target, type):
        target = type(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"{module}.{name}" if module else name


def attributes_of(value: Any) -> list[tuple[str, Any]] | None:
    """An object's own values by name (its ``__dict__`` and its slots), sorted; None for an
    object that has neither (a C object)."""
    own = getattr(value, "__dict__", None)
    found: dict[str, Any] = dict(own) if isinstance(own, dict) else {}
    slots = slot_names(type(value))
    for slot in slots:
        if slot not in found:
            with contextlib.suppress(AttributeError):  # a slot not set
                found[slot] = object.__getattribute__(value, slot)
    if not isinstance(own, dict) and not slots:
        return None
    return sorted(found.items())


def slot_names(kind: type) -> list[str]:
    """The slots of ``kind`` and its bases as attribute names (``__x`` of class ``C`` is
    ``_C__x``), as :func:`copyreg._slotnames` names them; ``__dict__``/``__weakref__`` left out."""
    names: list[str] = []
    for cls in kind.__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            stripped = cls.__name__.lstrip("_")
            if slot.startswith("__") and not slot.endswith("__") and stripped:
                slot = f"_{stripped}{slot}"
            if slot not in names:
                names.append(slot)
    return names


_POINTER = struct.calcsize("P")


def opaque_class(kind: type) -> bool:
    """A class whose instances keep data in C (a faiss index, a tensor, a random generator's
    state), where no ``__dict__`` or slot reaches: its instances are larger than an
    ``object`` with its dict, weak reference and slots (pickle's own test of the same)."""
    if kind.__itemsize__:
        return True
    pointers = len(slot_names(kind)) + (kind.__dictoffset__ > 0) + (kind.__weakrefoffset__ > 0)
    return kind.__basicsize__ > object.__basicsize__ + _POINTER * pointers


#: Objects that hold no data a search reads, but handles of the process (a lock, a logger,
#: a stream, a thread): they count by their type and are no reason to refuse a cache.
NEUTRAL = (
    type(threading.Lock()),
    type(threading.RLock()),
    threading.Condition,
    threading.Event,
    threading.Semaphore,
    threading.Thread,
    logging.Logger,
    logging.Handler,
    logging.Manager,
    io.IOBase,
    weakref.ref,
)


_SIMPLE_VALUES = (
    bytearray,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.tzinfo,
    decimal.Decimal,
    re.Pattern,
)


def simple_repr(value: Any) -> str | None:
    """A value with a repr that is the same in every process, or that describes itself; a
    routine or class by its name; None for anything else."""
    if isinstance(value, types.CodeType):
        return f"<code {value.co_name}>"
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, enum.Enum):
        return f"<{type(value).__module__}.{type(value).__qualname__}.{value.name}>"
    if isinstance(value, _SIMPLE_VALUES):
        return repr(value)
    if isinstance(value, os.PathLike):
        return f"path:{os.fspath(value)!r}"
    kind = type(value)
    if kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return f"numpy.{kind.__qualname__}({value.item()!r})"
    described = _self_description(value)
    if described is not None:
        return described
    if inspect.isroutine(value) or isinstance(value, type):
        return f"<{qualified_name(value)}>"
    return None


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
    except Exception:  # an object that cannot describe itself counts by its content
        return None
    return None


def is_array(value: Any) -> bool:
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__qualname__ == "ndarray"


def is_container(value: Any) -> bool:
    return isinstance(value, (tuple, frozenset))


def stable_repr(value: Any) -> str:
    """A code object's constant as the same text in every process: plain values by repr,
    tuples and frozensets (sorted) of them item by item, nested code by its name."""
    if isinstance(value, tuple):
        return f"tuple[{','.join(stable_repr(v) for v in value)}]"
    if isinstance(value, frozenset):
        return f"frozenset{{{','.join(sorted(stable_repr(v) for v in value))}}}"
    if isinstance(value, types.CodeType):
        return f"<code {value.co_name}>"
    if isinstance(value, PLAIN):
        return plain_repr(value)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def plain_repr(value: Any) -> str:
    """``repr``, but an int too long for ``repr`` (over 4300 digits) in hex, and a long string
    or bytes by its length and sha256 (not a copy of a corpus kept for every digest)."""
    if isinstance(value, int) and value.bit_length() > 4096:
        return f"int:{value:x}"
    if isinstance(value, (str, bytes)) and len(value) > LONG:
        data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
        return f"{type(value).__name__}:{len(value)}:{hashlib.sha256(data).hexdigest()}"
    return repr(value)


#: A value's text longer than this many characters is kept as its sha256.
LONG = 4096


def compact(text: str) -> str:
    """``text``, or its length and sha256 when it is over :data:`LONG` characters: a large
    list or dict nested in another is not copied into each level's text."""
    if len(text) <= LONG:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"#{len(text)}:{digest}"


def key_text(key: Any) -> str:
    """A dict key as an error message names it (an int too long for ``repr`` included)."""
    text = plain_repr(key) if isinstance(key, PLAIN) else f"<{type(key).__qualname__}>"
    return text if len(text) <= 80 else text[:77] + "..."


#: Files that mark a project's root folder (the first ancestor of a module's file holding one).
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", "tox.ini", ".git")


def project_root(module: str | None) -> str | None:
    """The root of the project a module's file lies in: its nearest ancestor folder holding
    one of :data:`PROJECT_MARKERS`, else the module's own folder; None for a module without a
    file (``__main__`` of ``python -c``, a built-in module)."""
    found = sys.modules.get(module or "")
    file = getattr(found, "__file__", None)
    if not isinstance(file, str):
        return None
    return _root_of(os.path.dirname(os.path.abspath(file)))


@functools.lru_cache(maxsize=256)
def _root_of(folder: str) -> str:
    current = folder
    while True:
        if any(os.path.exists(os.path.join(current, m)) for m in PROJECT_MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return folder
        current = parent


def in_project(value: str | os.PathLike[Any], root: str | None) -> str | None:
    """A path (or a string naming one) inside the project ``root`` as the text of its path
    relative to it: the same in every checkout of the project. None for anything else (a
    relative path, a path elsewhere, a string that names no path under the root), which
    counts as it is."""
    text = os.fspath(value)
    if root is None or not isinstance(text, str):
        return None
    if text != root and not text.startswith(root.rstrip(os.sep) + os.sep):
        return None
    relative = text[len(root) :].lstrip(os.sep).replace(os.sep, "/")
    kind = "str" if isinstance(value, str) else "path"
    return f"{kind}:<project>/{relative}"
