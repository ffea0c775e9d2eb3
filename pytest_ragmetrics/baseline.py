"""The baseline file: load (with clear errors), update, save atomically; dataset digests.

Light on purpose (json only): the comparison itself lives in :mod:`pytest_ragmetrics.regression`.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ragmetrics.recorder import RecordedEvaluation

from pytest_ragmetrics.errors import BaselineError
from pytest_ragmetrics.fileio import atomic_write_bytes, atomic_write_text, read_json_file
from pytest_ragmetrics.schema import evaluation_problem, is_int

SCHEMA_VERSION = 1
DIGITS = 6  # per-query values are rounded so diffs in code review stay readable
UPDATE_HINT = "--ragmetrics-update-baseline"


def round_values(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, DIGITS)
    if isinstance(value, dict):
        return {k: round_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [round_values(v) for v in value]
    return value


def entry_from_recorded(recorded: RecordedEvaluation, plugin_version: str) -> dict[str, Any]:
    """The baseline entry of one evaluation (no thresholds/outcomes: those are per run)."""
    data = recorded.to_dict()
    entry: dict[str, Any] = round_values(
        {
            "layer": data["layer"],
            "identity": data["identity"],
            "dataset": data["dataset"],
            "k": data["k"],
            "semantics": data["semantics"],
            "metrics": data["metrics"],
            "num_queries": data["num_queries"],
            "per_query": data["per_query"],
            "details": data["details"],
            "plugin_version": plugin_version,
        }
    )
    return entry


class BaselineStore:
    """The entries of one baseline file: ``entries[test id][evaluation name] -> entry``."""

    def __init__(
        self,
        path: Path,
        entries: dict[str, dict[str, dict[str, Any]]] | None = None,
        *,
        exists: bool = False,
    ) -> None:
        self.path = path
        self.entries = entries or {}
        self.exists = exists

    @classmethod
    def load(cls, path: Path) -> BaselineStore:
        """Read ``path``; a missing file is an empty store, a broken one a BaselineError."""
        fix = (
            f"restore it from version control (git checkout -- {path.name}) or delete it "
            f"and run with {UPDATE_HINT}"
        )
        try:
            data = read_json_file(path, what="baseline file", error=BaselineError, hint=fix)
        except FileNotFoundError:
            return cls(path)
        if not isinstance(data, dict) or "schema_version" not in data:
            raise BaselineError(
                f"{path}: not a pytest-ragmetrics baseline (no schema_version); {fix}"
            )
        version = data["schema_version"]
        if not is_int(version):
            raise BaselineError(f"{path}: schema_version {version!r} is not an integer; {fix}")
        if version > SCHEMA_VERSION:
            raise BaselineError(
                f"{path}: written by a newer pytest-ragmetrics (baseline schema {version}, this "
                f"version reads up to {SCHEMA_VERSION}); upgrade pytest-ragmetrics"
            )
        entries = data.get("entries")
        if not isinstance(entries, dict):
            raise BaselineError(f"{path}: 'entries' must be an object; {fix}")
        for test, named in entries.items():
            if not isinstance(named, dict):
                raise BaselineError(f"{path}: entry {test!r} must be an object; {fix}")
            for name, entry in named.items():
                problem = evaluation_problem(entry)
                if problem:
                    raise BaselineError(f"{path}: entry {test!r} [{name}]: {problem}; {fix}")
        return cls(path, entries, exists=True)

    def get(self, test: str, name: str) -> dict[str, Any] | None:
        return self.entries.get(test, {}).get(name)

    def entry_keys(self) -> list[tuple[str, str]]:
        return [(t, n) for t, named in self.entries.items() for n in named]

    def updated(
        self,
        recorded: Iterable[RecordedEvaluation],
        ran_tests: Iterable[str],
        stale: Iterable[tuple[str, str]],
        plugin_version: str,
    ) -> tuple[BaselineStore, dict[str, int]]:
        """A new store with the recorded evaluations written in.

        Entries of tests that ran but no longer record that evaluation, and stale entries, are
        removed; everything else is untouched.
        """
        entries = {t: dict(named) for t, named in self.entries.items()}
        counts = {"updated": 0, "added": 0, "removed": 0, "unchanged": 0}
        seen: set[tuple[str, str]] = set()
        for item in recorded:
            entry = entry_from_recorded(item, plugin_version)
            seen.add(item.key)
            old = entries.get(item.test, {}).get(item.name)
            if old is None:
                counts["added"] += 1
            elif _strip_version(old) == _strip_version(entry):
                counts["unchanged"] += 1
            else:
                counts["updated"] += 1
            entries.setdefault(item.test, {})[item.name] = entry
        to_remove = set(stale)
        for test in set(ran_tests):
            for name in list(entries.get(test, {})):
                if (test, name) not in seen:
                    to_remove.add((test, name))
        for test, name in to_remove:
            if name in entries.get(test, {}):
                del entries[test][name]
                counts["removed"] += 1
                if not entries[test]:
                    del entries[test]
        return BaselineStore(self.path, entries, exists=True), counts

    def dumps(self) -> str:
        """The file content: sorted keys, two-space indent, trailing newline."""
        data = {"schema_version": SCHEMA_VERSION, "entries": self.entries}
        return (
            json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
        )

    def save(self) -> None:
        """Write atomically (temp file in the same folder + os.replace)."""
        try:
            atomic_write_text(self.path, self.dumps())
        except (OSError, UnicodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise BaselineError(f"{self.path}: cannot write the baseline ({reason})") from None


def _strip_version(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "plugin_version"}


# ---------------------------------------------------------------------------------------------
# Dataset digests: let "not comparable" say what changed (12 docs added, 3 changed).


def digests_path(baseline_path: Path, part: str, fingerprint: str) -> Path:
    return baseline_path.parent / "datasets" / f"{part}-{fingerprint[:16]}.json.gz"


def save_digests(
    baseline_path: Path, part: str, fingerprint: str, digests: Mapping[str, Any]
) -> None:
    """Store per-item digests of one dataset part beside the baseline (gzipped, idempotent)."""
    path = digests_path(baseline_path, part, fingerprint)
    if path.exists():
        return
    body = json.dumps(digests, sort_keys=True, separators=(",", ":")).encode()
    atomic_write_bytes(path, gzip.compress(body, mtime=0))


def load_digests(baseline_path: Path, part: str, fingerprint: str) -> dict[str, Any] | None:
    path = digests_path(baseline_path, part, fingerprint)
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError):
        return None
    return data if isinstance(data, dict) else None
