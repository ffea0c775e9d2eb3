"""Shared test set-up."""

from __future__ import annotations

# pytester's in-process runs restore sys.modules afterwards; numpy cannot be imported twice in
# one process, so load it (and our modules that use it) once, up front.
import numpy  # noqa: F401

import pytest_ragmetrics.metrics.retrieval
import pytest_ragmetrics.regression  # noqa: F401
