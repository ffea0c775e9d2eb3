"""A module of ours imported a second time, as pytester's in-process runs and reloaders leave it."""

from __future__ import annotations

import importlib.util
from types import ModuleType


def second_import(name: str) -> ModuleType:
    """The module ``name`` executed again as a new module object, beside the one in
    sys.modules (which is left as it is): its classes are twins of the ones in use."""
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
