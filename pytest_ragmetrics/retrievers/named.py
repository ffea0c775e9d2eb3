"""The read-only name and options of the built-in retrievers and adapters."""

from __future__ import annotations

from typing import ClassVar

from pytest_ragmetrics.errors import ReadOnlyOptionError


class Named:
    """The read-only ``name`` of the built-in retrievers and adapters (kept as ``_name``), and
    their read-only options: those named in :attr:`fixed`, what ``identity()`` reads.

    An option is set once, when the retriever is built: its identity is the key its runs are
    cached, recorded and compared under, and what it built from the option (an index, corpus
    embeddings, a loaded model) cannot follow a later change, so a run computed with the old
    value would be stored under the new one (and read back by another process). Setting or
    deleting one afterwards is a :class:`~pytest_ragmetrics.errors.ReadOnlyOptionError`
    saying to build another retriever. Internal state (counters, loaded models) stays writable.
    """

    _name: str
    #: The attributes that make the identity; a subclass adds its own to its base's.
    fixed: ClassVar[frozenset[str]] = frozenset({"_name"})

    @property
    def name(self) -> str:
        return self._name

    def __setattr__(self, attribute: str, value: object) -> None:
        if attribute == "name" or (attribute in self.fixed and attribute in self.__dict__):
            raise ReadOnlyOptionError(self._read_only(attribute, "set"))
        super().__setattr__(attribute, value)

    def __delattr__(self, attribute: str) -> None:
        if attribute == "name" or attribute in self.fixed:
            raise ReadOnlyOptionError(self._read_only(attribute, "deleted"))
        super().__delattr__(attribute)

    def _read_only(self, attribute: str, done: str) -> str:
        option = attribute.lstrip("_")
        kind = type(self).__name__
        return (
            f"{kind} {self.__dict__.get('_name', '?')!r}: {option} cannot be {done} once the "
            f"retriever is built: it is part of its identity (the key its runs are cached and "
            f"compared under), and what it built from the old value would not change with it; "
            f"build another retriever with the {option} you want instead"
        )
