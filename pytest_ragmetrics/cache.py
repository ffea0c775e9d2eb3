"""Content-addressed on-disk cache: keyed by what determines the content, written atomically.

Layout: ``<root>/<kind>/<key>/manifest.json`` plus ``<name>.npy`` (arrays) or ``value.json``.
``key`` is the sha256 of the canonical JSON of the entry's identity, and the manifest repeats
the identity: an entry whose identity differs from the one asked for is a miss, never a stale
hit. An entry is built in a temporary folder and renamed into place, so readers see a complete
entry or none; it is written once (a later put of a published identity keeps the published
entry) and removed by renaming it away first, so a reader that loses a race sees a plain miss,
never a torn entry. Arrays are ``.npy`` read with ``allow_pickle=False``: nothing read executes
code. The manifest holds the sha256 of each array's data and of a JSON value: an entry edited by
hand or damaged on disk so that it still parses is unreadable (a warning, a miss), never a
silently different hit (entries written before the checksums are read as they are). A file
lock per key lets one process compute while others (xdist workers) wait and then read.
Each computation is also appended to ``<root>/<kind>/computed.log`` (key, pid, time), so tests
can count how often concurrent processes computed an entry (:meth:`Cache.computations`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.default_cache import DEFAULT_FOLDER as DEFAULT_FOLDER
from pytest_ragmetrics.default_cache import default_cache_provider
from pytest_ragmetrics.default_cache import use_default_cache as use_default_cache
from pytest_ragmetrics.errors import CacheError, CacheWarning, OutputError, how_to_silence
from pytest_ragmetrics.fileio import atomic_write_text, cannot_write, exclusive_lock

SCHEMA = 1
COMPUTE_LOG = "computed.log"
Arrays = dict[str, npt.NDArray[Any]]
FileId = tuple[int, int]


def _names(path: Path, file_id: FileId) -> bool:
    """Whether ``path`` still names the file ``file_id`` (device, inode).

    The caller keeps that file open, so its inode cannot be reused by a newer file meanwhile.
    """
    try:
        info = os.stat(path)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == file_id


def identity_of(thing: Any) -> dict[str, Any]:
    """What identifies a retriever, judge, generator or pipeline in cache keys and records: its
    ``identity()``; lacking one, its name, and for a function the digest of its code."""
    get = getattr(thing, "identity", None)
    if callable(get):
        return dict(get())
    if inspect.isroutine(thing) or isinstance(thing, functools.partial):
        from pytest_ragmetrics.code_identity import function_identity

        name = getattr(thing, "__qualname__", None) or type(thing).__name__
        return {"name": name, **function_identity(thing)}
    return {"name": getattr(thing, "name", None) or type(thing).__name__}


def canonical_json(value: Any) -> str:
    """Deterministic JSON (sorted keys, no spaces) of an identity."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default
    )


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    raise TypeError(f"cache identity value {value!r} is not JSON-serialisable")


_NOT_WRITTEN = "is not what was written (its sha256 differs from the manifest's: edited or damaged)"


def _array_sha256(array: npt.NDArray[Any]) -> str:
    """sha256 hex of an array's data in C order (dtype and shape are the manifest's too)."""
    return hashlib.sha256(np.ascontiguousarray(array).data).hexdigest()


def _json_sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def identity_key(kind: str, identity: Mapping[str, Any]) -> str:
    """sha256 hex of the kind plus the canonical identity."""
    return hashlib.sha256(f"{kind}\n{canonical_json(identity)}".encode()).hexdigest()


class Cache:
    """A cache folder; ``Cache(None)`` or ``enabled=False`` is a cache that never hits."""

    def __init__(self, root: str | os.PathLike[str] | None, *, enabled: bool = True) -> None:
        self.root = None if root is None else Path(root)
        self.enabled = enabled and root is not None
        self.hits = 0
        self.misses = 0
        # Entries this object computed (and stored) through arrays()/json(), in this process.
        self.computed = 0
        # Why the last value could not be stored ('' while every write worked).
        self.unwritable = ""
        self._warned_unwritable = False

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"Cache({str(self.root)!r}, {state})"

    def _entry(self, kind: str, identity: Mapping[str, Any]) -> Path:
        assert self.root is not None
        return self.root / kind / identity_key(kind, identity)

    @contextlib.contextmanager
    def lock(self, kind: str, identity: Mapping[str, Any], timeout: float = 3600) -> Iterator[None]:
        """Hold the per-entry lock (a no-op when the cache is disabled); no lock file stays."""
        if not self.enabled:
            yield
            return
        entry = self._entry(kind, identity)
        lock = Path(str(entry) + ".lock")
        with exclusive_lock(
            lock, timeout=timeout, what="cache entry", error=CacheError, hint=CACHE_HINT
        ):
            yield

    def _read_manifest(
        self, entry: Path, identity: Mapping[str, Any], pinned: contextlib.ExitStack
    ) -> tuple[dict[str, Any], FileId] | None:
        """The entry's manifest and the id of the manifest file, held open in ``pinned``.

        None on a miss. A manifest that cannot be read is an unreadable entry (warning,
        discarded) unless another process removed or replaced the entry meanwhile: that is a
        plain miss.
        """
        manifest_path = entry / "manifest.json"
        try:
            handle = pinned.enter_context(open(manifest_path, "rb"))  # noqa: SIM115
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._unreadable(entry, f"manifest unreadable ({exc})")
            return None
        info = os.fstat(handle.fileno())
        file_id = (info.st_dev, info.st_ino)
        try:
            manifest = json.loads(handle.read().decode("utf-8"))
            if not isinstance(manifest, dict):
                raise ValueError("manifest is not an object")
        except (OSError, ValueError) as exc:
            if _names(manifest_path, file_id):
                self._unreadable(entry, f"manifest unreadable ({exc})")
            return None
        if manifest.get("schema") != SCHEMA or canonical_json(
            manifest.get("identity")
        ) != canonical_json(identity):
            # Same key, different identity: a hash collision or a hand edit. Never reuse it.
            return None
        return manifest, file_id

    def _holds(self, entry: Path, identity: Mapping[str, Any]) -> bool:
        """Whether ``entry`` is already published for ``identity`` (read quietly)."""
        try:
            manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return (
            isinstance(manifest, dict)
            and manifest.get("schema") == SCHEMA
            and canonical_json(manifest.get("identity")) == canonical_json(identity)
        )

    def _unreadable(self, entry: Path, why: str) -> None:
        warnings.warn(
            f"cache entry {entry} is unreadable ({why}); treating it as a miss and rewriting it "
            f"(copy cache folders only from finished jobs); {how_to_silence(CacheWarning)}",
            CacheWarning,
            stacklevel=4,
        )
        self._discard(entry)

    def _discard(self, entry: Path) -> str:
        """Remove ``entry`` (renamed away first); '' when it is gone, else why it is not."""
        trash = entry.with_name(f".{entry.name}.trash.{os.getpid()}.{time.monotonic_ns()}")
        try:
            os.replace(entry, trash)
        except FileNotFoundError:
            return ""  # removed by another process meanwhile
        except OSError as exc:
            return exc.strerror or str(exc)
        return _remove_tree(trash)

    def get_arrays(self, kind: str, identity: Mapping[str, Any]) -> Arrays | None:
        """The cached arrays for ``identity``, or None (miss, disabled, or unreadable)."""
        if not self.enabled:
            return None
        entry = self._entry(kind, identity)
        with contextlib.ExitStack() as pinned:
            found = self._read_manifest(entry, identity, pinned)
            if found is None:
                self.misses += 1
                return None
            manifest, file_id = found
            arrays = self._load_arrays(entry, manifest, file_id)
        if arrays is None:
            self.misses += 1
            return None
        self.hits += 1
        return arrays

    def _load_arrays(
        self, entry: Path, manifest: Mapping[str, Any], file_id: FileId
    ) -> Arrays | None:
        arrays: Arrays = {}
        try:
            listed = manifest.get("arrays", {})
            if not isinstance(listed, dict):
                raise ValueError("manifest 'arrays' is not an object")
            for name, meta in listed.items():
                if not name or name.startswith(".") or "/" in name or "\\" in name:
                    raise ValueError(f"manifest names an array {name!r} outside the entry")
                array = np.load(entry / f"{name}.npy", allow_pickle=False)
                if not isinstance(array, np.ndarray):  # a zip archive loads as an NpzFile
                    array.close()
                    raise ValueError(f"{name}.npy is not a .npy array file")
                if list(array.shape) != meta["shape"] or str(array.dtype) != meta["dtype"]:
                    raise ValueError(
                        f"{name}.npy has shape {array.shape} / {array.dtype}, "
                        f"manifest says {meta['shape']} / {meta['dtype']}"
                    )
                if "sha256" in meta and _array_sha256(array) != meta["sha256"]:
                    raise ValueError(f"{name}.npy {_NOT_WRITTEN}")
                arrays[name] = array
        except (OSError, ValueError, KeyError, TypeError) as exc:
            if _names(entry / "manifest.json", file_id):
                self._unreadable(entry, str(exc))
            return None
        if not _names(entry / "manifest.json", file_id):
            # Removed or replaced while we read (clear(), a discarded entry being rewritten):
            # the arrays may come from two versions, so this is a plain miss.
            return None
        return arrays

    def get_json(
        self,
        kind: str,
        identity: Mapping[str, Any],
        *,
        valid: Callable[[Any], bool] | None = None,
    ) -> Any | None:
        """The cached JSON value for ``identity``, or None.

        ``valid(value)`` False (say, a hand-edited value of the wrong shape) makes the entry
        unreadable: a miss with a warning, and it is rewritten.
        """
        if not self.enabled:
            return None
        entry = self._entry(kind, identity)
        with contextlib.ExitStack() as pinned:
            found = self._read_manifest(entry, identity, pinned)
        if found is None or "value" not in found[0]:
            self.misses += 1
            return None
        value = found[0]["value"]
        written = found[0].get("value_sha256")
        if written is not None and _json_sha256(value) != written:
            self._unreadable(entry, f"its value {_NOT_WRITTEN}")
            self.misses += 1
            return None
        if valid is not None and not valid(value):
            self._unreadable(entry, "its value does not have the shape its reader expects")
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put_arrays(
        self,
        kind: str,
        identity: Mapping[str, Any],
        arrays: Mapping[str, Any],
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Store arrays for ``identity`` (object arrays are refused: they would need pickle)."""
        if not self.enabled:
            return
        prepared = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
        for name, array in prepared.items():
            if array.dtype.hasobject:
                raise CacheError(
                    f"cache: array {name!r} has dtype object; it cannot be stored without pickle"
                )

        def write(folder: Path) -> dict[str, Any]:
            for name, array in prepared.items():
                with open(folder / f"{name}.npy", "wb") as handle:
                    np.save(handle, array, allow_pickle=False)
                    handle.flush()
                    os.fsync(handle.fileno())
            return {
                "arrays": {
                    n: {"shape": list(a.shape), "dtype": str(a.dtype), "sha256": _array_sha256(a)}
                    for n, a in prepared.items()
                }
            }

        self._store(lambda: self._publish(kind, identity, write, meta))

    def put_json(
        self,
        kind: str,
        identity: Mapping[str, Any],
        value: Any,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Store a JSON-serialisable value for ``identity``."""
        if not self.enabled:
            return
        canonical_json(value)  # fail early on values JSON cannot hold
        body = {"value": value, "value_sha256": _json_sha256(value)}
        self._store(lambda: self._publish(kind, identity, lambda folder: body, meta))

    def _publish(
        self,
        kind: str,
        identity: Mapping[str, Any],
        write: Callable[[Path], dict[str, Any]],
        meta: Mapping[str, Any] | None,
    ) -> None:
        entry = self._entry(kind, identity)
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(
                tempfile.mkdtemp(prefix=f".{entry.name}.", suffix=".tmp", dir=entry.parent)
            )
        except OSError as exc:
            raise _refused(entry, exc) from None
        try:
            body = write(staging)
            manifest = {
                "schema": SCHEMA,
                "kind": kind,
                "identity": identity,
                "meta": dict(meta or {}),
                **body,
            }
            atomic_write_text(staging / "manifest.json", canonical_json(manifest))
            if entry.exists():
                if self._holds(entry, identity):
                    # Published by another process first. Same identity, same content: keep
                    # theirs, so readers never see a valid entry disappear.
                    return
                self._discard(entry)
            try:
                os.replace(staging, entry)
            except OSError:
                # Another process published the same entry first; theirs is equally valid.
                if not (entry / "manifest.json").exists():
                    raise
        except OSError as exc:
            raise _refused(entry, exc) from None
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    def arrays(
        self,
        kind: str,
        identity: Mapping[str, Any],
        compute: Callable[[], Arrays],
        meta: Mapping[str, Any] | None = None,
    ) -> Arrays:
        """Get the arrays, computing and storing them under the lock on a miss.

        Under xdist the first worker computes; the others wait on the lock and then read.
        """
        if not self.enabled:
            return compute()
        found = self.get_arrays(kind, identity)
        if found is not None:
            return found
        with contextlib.ExitStack() as held:
            if not self._hold_lock(held, kind, identity):
                return compute()  # a cache that cannot be written: computed, not stored
            found = self.get_arrays(kind, identity)
            self.misses -= 1  # the first look-up already counted this miss
            if found is not None:
                return found
            value = compute()
            self.put_arrays(kind, identity, value, meta)
            self._record_computation(kind, identity)
            return value
        raise AssertionError("unreachable")  # pragma: no cover - the block always returns

    def json(
        self,
        kind: str,
        identity: Mapping[str, Any],
        compute: Callable[[], Any],
        meta: Mapping[str, Any] | None = None,
        *,
        valid: Callable[[Any], bool] | None = None,
    ) -> Any:
        """Get the JSON value, computing and storing it under the lock on a miss.

        A computed value that fails ``valid`` is returned but not stored: what the cache
        would not read back (a reply that did not parse into a verdict or an answer) is never
        written, so the next run asks again instead of replaying a failure."""
        if not self.enabled:
            return compute()
        found = self.get_json(kind, identity, valid=valid)
        if found is not None:
            return found
        with contextlib.ExitStack() as held:
            if not self._hold_lock(held, kind, identity):
                return compute()  # a cache that cannot be written: computed, not stored
            found = self.get_json(kind, identity, valid=valid)
            self.misses -= 1  # the first look-up already counted this miss
            if found is not None:
                return found
            value = compute()
            self._record_computation(kind, identity)
            if valid is None or valid(value):
                self.put_json(kind, identity, value, meta)
            return value
        raise AssertionError("unreachable")  # pragma: no cover - the block always returns

    # -- a cache that cannot be written --------------------------------------------------------
    # A cache only saves time: when its folder refuses writes (read-only, no permission, full
    # disk), the value is computed and returned as without a cache (put_arrays and put_json
    # store nothing), and one CacheWarning per Cache object says so; ``unwritable`` says why.

    def _hold_lock(
        self, held: contextlib.ExitStack, kind: str, identity: Mapping[str, Any]
    ) -> bool:
        """Take the entry's lock into ``held``; False (and a warning) if the folder refuses it."""
        try:
            held.enter_context(self.lock(kind, identity))
        except OutputError as exc:
            self._not_stored(str(exc))
            return False
        return True

    def _store(self, put: Callable[[], None]) -> None:
        try:
            put()
        except CacheWriteError as exc:
            self._not_stored(str(exc))

    def _not_stored(self, why: str) -> None:
        self.unwritable = why
        if self._warned_unwritable:
            return
        self._warned_unwritable = True
        warnings.warn(
            f"the cache cannot be written: {why}; results are computed but not cached "
            f"(every run computes them again); {how_to_silence(CacheWarning)}",
            CacheWarning,
            stacklevel=4,
        )

    def _record_computation(self, kind: str, identity: Mapping[str, Any]) -> None:
        """Count a computation here and in ``<kind>/computed.log`` (shared by all processes).

        The log lets a test prove that concurrent processes computed an entry once. Lines are
        short and appended with O_APPEND, so concurrent writers never interleave within one.
        """
        self.computed += 1
        assert self.root is not None
        line = f"{identity_key(kind, identity)}\t{os.getpid()}\t{time.time():.3f}\n"
        with contextlib.suppress(OSError):
            fd = os.open(self.root / kind / COMPUTE_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, line.encode("ascii"))
            finally:
                os.close(fd)

    def computations(self, kind: str, identity: Mapping[str, Any]) -> int:
        """How many times any process computed this entry since the cache was last cleared."""
        if self.root is None:
            return 0
        key = identity_key(kind, identity)
        try:
            text = (self.root / kind / COMPUTE_LOG).read_text(encoding="ascii", errors="replace")
        except OSError:
            return 0
        return sum(1 for line in text.splitlines() if line.split("\t", 1)[0] == key)

    def clear(self) -> ClearReport:
        """Remove every entry this cache made, and nothing else; say what was removed.

        Only folders that are recognisably cache entries are removed: a folder named by a
        sha256 key inside a kind folder, holding a ``manifest.json`` and ``.npy`` files only
        (and the leftovers of an earlier discard, ``.<key>.trash.*``). Everything else under the
        root (a project's files when the cache folder was pointed at one, the dataset digests
        beside a baseline, folders being built by another process right now) is left alone
        and counted in :attr:`ClearReport.kept`.
        """
        report = ClearReport()
        if self.root is None or not self.root.is_dir():
            return report
        for kind_dir in sorted(self.root.iterdir()):
            if not kind_dir.is_dir() or kind_dir.is_symlink():
                report.kept += 1
                continue
            removed_here = 0
            for entry in sorted(kind_dir.iterdir()):
                if _is_entry(entry):
                    # Renamed away first: readers see it whole or not at all. Counted only
                    # once it is really gone; one the folder refuses to let go is named.
                    why = self._discard(entry)
                    if why:
                        report.failed.append((str(entry), why))
                    else:
                        removed_here += 1
                elif _TRASH.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
                    _remove_tree(entry)
                elif entry.name == COMPUTE_LOG or _LOCK.fullmatch(entry.name):
                    continue  # bookkeeping of entries; removed with the kind folder below
                elif _STAGING.fullmatch(entry.name):
                    continue  # another process is building this entry right now
                else:
                    report.kept += 1
            if removed_here:
                report.removed[kind_dir.name] = removed_here
                with contextlib.suppress(OSError):
                    (kind_dir / COMPUTE_LOG).unlink()
        return report


def default_cache() -> Cache:
    """The cache ``cache=True`` means: the pytest session's (ragmetrics_cache_dir, off with
    --ragmetrics-no-cache) while one runs, else ``.ragmetrics/cache`` in the current folder."""
    provider = default_cache_provider()
    if provider is None:
        return Cache(DEFAULT_FOLDER)
    cache = provider()
    if not isinstance(cache, Cache):
        raise TypeError(
            f"the provider given to use_default_cache returned a {type(cache).__name__}, "
            "not a pytest_ragmetrics.cache.Cache"
        )
    return cache


class CacheWriteError(CacheError, OutputError):
    """The cache folder refused a write (read-only, no permission, full disk)."""


CACHE_HINT = "pass --ragmetrics-cache-dir=DIR (or set ragmetrics_cache_dir) to cache elsewhere"


def _refused(entry: Path, exc: OSError) -> CacheWriteError:
    return CacheWriteError(str(cannot_write(entry, exc, what="cache entry", hint=CACHE_HINT)))


def _remove_tree(folder: Path) -> str:
    """Delete ``folder`` and all in it; '' when it is gone, else the first reason it is not."""
    failures: list[str] = []

    def failed(function: Any, path: str, exc: BaseException) -> None:
        failures.append(getattr(exc, "strerror", None) or str(exc))

    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=failed)
    else:  # pragma: no cover - Python 3.11
        shutil.rmtree(folder, onerror=lambda f, p, info: failed(f, p, info[1]))
    if not os.path.lexists(folder):
        return ""
    return failures[0] if failures else "still there"


_KEY = "[0-9a-f]{64}"
_TRASH = re.compile(rf"\.{_KEY}\.trash\.\d+\.\d+")
_STAGING = re.compile(rf"\.{_KEY}\.[^/]*\.tmp")
_LOCK = re.compile(rf"{_KEY}\.lock")


def _is_entry(path: Path) -> bool:
    """Whether ``path`` is a published cache entry: a key-named folder (not a symlink)
    holding ``manifest.json`` and nothing but ``.npy`` files besides."""
    if not re.fullmatch(_KEY, path.name) or path.is_symlink() or not path.is_dir():
        return False
    try:
        names = [child.name for child in path.iterdir()]
    except OSError:
        return False
    return "manifest.json" in names and all(
        name == "manifest.json" or name.endswith(".npy") for name in names
    )


@dataclass
class ClearReport:
    """What :meth:`Cache.clear` removed (entries per kind), the entries it could not remove
    (path, why) and how many other items it kept."""

    removed: dict[str, int] = field(default_factory=dict)
    kept: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.removed.values())

    def describe(self, folder: str) -> str:
        """e.g. 'cleared 3 cache entries (2 embeddings, 1 run) in .ragmetrics/cache'."""
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.removed.items()))
        text = f"cleared {self.total} cache entries{f' ({kinds})' if kinds else ''} in {folder}"
        if self.kept:
            text += f"; left {self.kept} other files and folders there (not cache entries)"
        if self.failed:
            text += "; " + self.failure()
        return text

    def failure(self) -> str:
        """The entries that could not be removed, e.g. 'could not remove 4 cache entries
        (.../embeddings/3f2a...: Read-only file system, ...): make ... writable ...'."""
        if not self.failed:
            return ""
        shown = ", ".join(f"{path}: {why}" for path, why in self.failed[:3])
        more = f", and {len(self.failed) - 3} more" if len(self.failed) > 3 else ""
        folder = os.path.dirname(os.path.dirname(self.failed[0][0]))
        return (
            f"could not remove {len(self.failed)} cache "
            f"{'entry' if len(self.failed) == 1 else 'entries'} ({shown}{more}): make {folder} "
            "and the folders in it writable and clear again, or delete them by hand"
        )


def inside_cache_entries(path: Path, cache: Path) -> bool:
    """Whether ``path`` is the cache folder or lies in one of its kind folders (where entries
    live): an output there could overwrite an entry or be deleted by a clear."""
    from pytest_ragmetrics.fileio import is_within

    if not is_within(path, cache):
        return False
    relative = Path(os.path.realpath(path)).relative_to(os.path.realpath(cache))
    return len(relative.parts) != 1
