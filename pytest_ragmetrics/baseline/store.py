"""The baseline file: load (every field checked), update under a lock, save atomically.

Knows nothing of pytest: the plugin and the ``ragmetrics`` command both use it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import BaselineError
from pytest_ragmetrics.fileio import atomic_write_text
from pytest_ragmetrics.schema import BASELINE_VERSION, read_document

if TYPE_CHECKING:
    from pytest_ragmetrics.records import EvaluationRecord

SCHEMA_VERSION = BASELINE_VERSION
UPDATE_HINT = "--ragmetrics-update-baseline"


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
        if not path.exists():
            return cls(path)
        entries = read_document(path, "baseline", hint=fix).data["entries"]
        return cls(path, entries, exists=True)

    def get(self, test: str, name: str) -> dict[str, Any] | None:
        return self.entries.get(test, {}).get(name)

    def entry_keys(self) -> list[tuple[str, str]]:
        return [(t, n) for t, named in self.entries.items() for n in named]

    def updated(
        self,
        recorded: Iterable[EvaluationRecord],
        ran_tests: Iterable[str],
        stale: Iterable[tuple[str, str]],
        plugin_version: str,
    ) -> tuple[BaselineStore, dict[str, int], dict[tuple[str, str], str]]:
        """A new store with the recorded evaluations written in, the counts of what changed,
        and per recorded evaluation (test, name) whether it was ``added``, ``updated`` or
        ``unchanged``.

        Entries of tests that ran but no longer record that evaluation, and stale entries, are
        removed; everything else is untouched.
        """
        entries = {t: dict(named) for t, named in self.entries.items()}
        counts = {"updated": 0, "added": 0, "removed": 0, "unchanged": 0}
        changes: dict[tuple[str, str], str] = {}
        seen: set[tuple[str, str]] = set()
        for item in recorded:
            entry = item.baseline_entry(plugin_version)
            seen.add(item.key)
            old = entries.get(item.test, {}).get(item.name)
            if old is None:
                change = "added"
            elif _strip_version(old) == _strip_version(entry):
                change = "unchanged"
            else:
                change = "updated"
            counts[change] += 1
            changes[item.key] = change
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
        return BaselineStore(self.path, entries, exists=True), counts, changes

    def dumps(self) -> str:
        """The file content: sorted keys, two-space indent, trailing newline."""
        data = {"schema_version": SCHEMA_VERSION, "entries": self.entries}
        return (
            json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
        )

    def save(self, *, hint: str = "") -> None:
        """Write atomically (temp file in the same folder + os.replace); a refused write is a
        BaselineError naming the file, why, and what to do (``hint``: how to write elsewhere).
        The old file is then unchanged."""
        try:
            atomic_write_text(self.path, self.dumps(), what="baseline", hint=hint)
        except OSError as exc:  # cannot_write's OutputError: path, reason, what to do
            raise BaselineError(str(exc)) from None
        except UnicodeError as exc:
            raise BaselineError(f"{self.path}: cannot write the baseline ({exc})") from None


def _strip_version(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "plugin_version"}


def stale_entries(
    keys: Iterable[tuple[str, str]],
    collected: set[str],
    *,
    complete: bool,
    whole_suite: bool,
    rootpath: Path | None,
) -> list[tuple[str, str]]:
    """Entries whose test no longer exists (RELIABILITY.md, "When a baseline entry is removed").

    ``collected`` holds every test pytest collected in the run, whatever happened to it
    afterwards (deselected by -k/-m, dropped by a plugin or conftest). An entry is stale when
    its file was collected whole (``complete``: no node ids given, every xdist worker
    reported) and its test was not collected, or, in a run of the ``whole_suite``, when its
    test file no longer exists under ``rootpath``. Other files are never judged.
    """
    if not complete or not collected:
        return []
    files = {nodeid.split("::", 1)[0] for nodeid in collected}
    stale = []
    for test, name in keys:
        if test in collected:
            continue
        file = test.split("::", 1)[0]
        if file in files or (whole_suite and _file_is_gone(rootpath, file)):
            stale.append((test, name))
    return sorted(stale)


def _file_is_gone(rootpath: Path | None, file: str) -> bool:
    """Whether a test file named in a node id is missing from the project (rootdir-relative)."""
    if rootpath is None or not file.endswith(".py"):
        return False
    try:
        return not (rootpath / file).exists()
    except OSError:
        return False


def _shorter_ids(test: str) -> list[str]:
    """The node ids of ``test`` with its file's leading folders cut one by one:
    ``a/b/test_x.py::t`` gives ``b/test_x.py::t`` and ``test_x.py::t``."""
    file, sep, rest = test.partition("::")
    parts = file.split("/")
    return ["/".join(parts[i:]) + sep + rest for i in range(1, len(parts))]


def moved_entries(
    keys: Iterable[tuple[str, str]],
    missing: Iterable[tuple[str, str]],
    rootpath: Path | None,
) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Evaluations of this run with no baseline entry whose test the baseline holds under
    another path: (this run's key, the baseline's key), the baseline's test id this run's
    with leading folders added or cut and its file not there under ``rootpath``.

    That is what a run from another rootdir sees (node ids are relative to it): every entry
    misses and none is stale, so without this the run would pass, all of it "new". A test
    file that moved shows the same way until its old entries are removed.
    """
    held = set(keys)
    longer: dict[tuple[str, str], tuple[str, str]] = {}
    for test, name in held:
        for shorter in _shorter_ids(test):
            longer.setdefault((shorter, name), (test, name))
    found = []
    for test, name in missing:
        candidates = [longer.get((test, name))]
        candidates += [(s, name) for s in _shorter_ids(test) if (s, name) in held]
        for other in candidates:
            if other is not None and _file_is_gone(rootpath, other[0].split("::", 1)[0]):
                found.append(((test, name), other))
                break
    return sorted(found)


def foreign_files(
    keys: Iterable[tuple[str, str]],
    evaluated: Iterable[tuple[str, str]],
    rootpath: Path | None,
) -> list[str]:
    """The test files a baseline's entries name, when none of its entries is an evaluation of
    this run and none of those files is in the project under ``rootpath``: a baseline of no
    test here (test files renamed or moved, a baseline from another project), which would let
    every evaluation pass as new. Empty when an entry matches, when nothing was evaluated, or
    when one of its files is still there: a selection (paths, -k, -m, --lf) that leaves the
    baselined tests out is not told from one that runs new tests only. A file of a non-Python
    test (not ``.py``) counts as there."""
    held = set(keys)
    ran = set(evaluated)
    if not held or not ran or held & ran:
        return []
    files = sorted({test.split("::", 1)[0] for test, _ in held})
    return files if all(_file_is_gone(rootpath, file) for file in files) else []
