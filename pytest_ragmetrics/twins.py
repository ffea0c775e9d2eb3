"""Our records made by another import of our modules.

pytester's in-process runs, reloaders and notebooks' autoreload can import a module of ours a
second time while objects made from the first import live on: an answer built by a generator
module loaded before is then not an instance of the class the judge module sees, and was
refused as "a GeneratedAnswer, not a GeneratedAnswer". A class of the same module and name is
the same record; its fields are read into ours.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeGuard, TypeVar

T = TypeVar("T")


def same_class(obj: object, cls: type[T]) -> TypeGuard[T]:
    """Whether ``obj`` is a ``cls``, or one of the class of that module and name from another
    import of the module (typed as a ``cls``: the one source gives both classes the same
    attributes)."""
    kind = type(obj)
    return isinstance(obj, cls) or (
        kind.__qualname__ == cls.__qualname__ and kind.__module__ == cls.__module__
    )


def as_own(obj: object, cls: type[T]) -> T | None:
    """``obj`` as a ``cls`` (a dataclass): itself, the same fields read into ours when it comes
    from another import of the module, or None when it is something else."""
    if isinstance(obj, cls):
        return obj
    if not same_class(obj, cls) or not dataclasses.is_dataclass(obj):
        return None
    # The twin's own fields: the two classes are one source, so they have the same ones.
    values: dict[str, Any] = {
        f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init
    }
    return cls(**values)


def class_name(obj: object, cls: type) -> str:
    """The name of ``obj``'s class for a message saying it is not a ``cls``: qualified by its
    module when the bare names are the same ("a GeneratedAnswer, not a GeneratedAnswer")."""
    kind = type(obj)
    if kind.__name__ != cls.__name__:
        return kind.__name__
    return f"{kind.__module__}.{kind.__qualname__}"
