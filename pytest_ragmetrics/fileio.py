"""Atomic file writes (a reader sees the complete old file or the complete new one, never
half), exclusive locks that leave no file behind, and reading JSON files with clear errors."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from pytest_ragmetrics.errors import ConfigError, OutputError, RagMetricsError

# Lists and objects nested deeper than this in a JSON file we read are refused (too_deep).
MAX_JSON_DEPTH = 100

PathLike = str | os.PathLike[str]


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, a key given twice a ValueError: readers disagree on which
    of the two wins (Python's json keeps the last), so a file holding both means two things.
    Pass as ``json.loads(..., object_pairs_hook=unique_keys)``."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return out


def json_problem(exc: json.JSONDecodeError) -> str:
    """What is wrong at a JSON syntax error and where on its line: "Unterminated string starting
    at column 13" (Python's messages that end in "at" wait for the position)."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


@contextlib.contextmanager
def atomic_writer(path: PathLike, mode: str = "w") -> Iterator[IO[str] | IO[bytes]]:
    """Write to a temporary file in the target's folder, fsync, then ``os.replace`` it.

    On any error (or a crash) the target is untouched; the temporary file is removed when
    Python still can. A symlink is followed: the file it points to is replaced and the link
    stays. A stream (``/dev/stdout``, a pipe, anything under ``/dev`` or ``/proc``) cannot be
    replaced by a rename, and may be another program's open output: it is appended to in
    place.
    """
    if is_stream(path):
        with _stream(path, "b" in mode) as stream:
            yield stream
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would have.
        os.chmod(tmp, existing_mode(target))
        binary = "b" in mode
        with os.fdopen(
            fd,
            "wb" if binary else "w",
            encoding=None if binary else "utf-8",
            newline=None if binary else "\n",
        ) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def atomic_write_text(path: PathLike, text: str, *, what: str = "", hint: str = "") -> None:
    """Replace ``path`` with ``text`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"), what=what, hint=hint)


def atomic_write_bytes(path: PathLike, data: bytes, *, what: str = "", hint: str = "") -> None:
    """Replace ``path`` with ``data`` atomically. A refused write (read-only folder, full
    disk, ...) is :func:`cannot_write`'s OutputError naming the file (the ``what``) and what to
    do (``hint``: how to write elsewhere); the old file is then unchanged."""
    try:
        with atomic_writer(path, "wb") as handle:
            handle.write(data)  # type: ignore[arg-type]
    except OSError as exc:
        raise cannot_write(path, exc, what=what, hint=hint) from exc


# A folder that refuses writes (permissions, a read-only mount) and a full one (disk, quota).
_REFUSED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def cannot_write(path: PathLike, exc: OSError, *, what: str = "", hint: str = "") -> OutputError:
    """The one error for a write the file system refused: the path, the system's reason, and
    what to do (``hint``: how to write elsewhere, e.g. the option naming the path).

    e.g. ``.ragmetrics/baseline.json: cannot write the baseline (Read-only file system); make
    .ragmetrics writable, or pass --ragmetrics-baseline=FILE``. An OutputError is returned
    unchanged: it already says all this.
    """
    if isinstance(exc, OutputError):
        return exc
    reason = exc.strerror or str(exc) or type(exc).__name__
    subject = f" the {what}" if what else ""
    blocking = _file_in_the_way(path)
    if blocking is not None:
        fix = f"{blocking} is a file where a folder is needed: move it away"
    elif exc.errno in _REFUSED:
        # An existing file the process may not replace (read-only, immutable) is the file's
        # problem, not its folder's; on a read-only file system, every file is refused.
        refused = (
            exc.errno != errno.EROFS and os.path.lexists(path) and not os.access(path, os.W_OK)
        )
        fix = f"make {os.fspath(path) if refused else _nearest_folder(path)} writable"
    elif exc.errno in _FULL:
        fix = f"free space on the file system holding {_nearest_folder(path)}"
    else:
        fix = ""
    advice = " or ".join(part for part in (fix, hint) if part)
    error = OutputError(
        f"{os.fspath(path)}: cannot write{subject} ({reason})" + (f"; {advice}" if advice else "")
    )
    error.errno, error.strerror, error.filename = exc.errno, reason, os.fspath(path)
    return error


def _file_in_the_way(path: PathLike) -> str | None:
    """An ancestor of ``path`` that exists as something other than a folder (a file named
    like the folder to create), or None."""
    if is_stream(path):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    while os.path.dirname(folder) != folder:
        if os.path.lexists(folder) and not os.path.isdir(folder):
            return folder
        folder = os.path.dirname(folder)
    return None


def _nearest_folder(path: PathLike) -> str:
    """The folder whose permissions decide whether ``path`` can be written: its parent, or
    the nearest ancestor that exists (missing folders are created there)."""
    if is_stream(path):
        return os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


@contextlib.contextmanager
def writing(path: PathLike, *, what: str = "", hint: str = "") -> Iterator[None]:
    """Turn any OSError raised inside into :func:`cannot_write`'s error for ``path``."""
    try:
        yield
    except OSError as exc:
        raise cannot_write(path, exc, what=what, hint=hint) from None


def check_writable(path: PathLike, *, what: str = "", hint: str = "") -> None:
    """Fail now, with :func:`cannot_write`'s error, if ``path`` could not be written because
    its folder refuses new files: before work (judge calls, generation) whose result would be
    lost. Creates nothing that stays; a full disk is only found by the write itself."""
    if is_stream(path):
        return
    folder = _nearest_folder(path)
    with writing(path, what=what, hint=hint):
        fd, probe = tempfile.mkstemp(prefix=".ragmetrics-probe.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)


def atomic_append_text(path: PathLike, text: str, *, what: str = "", hint: str = "") -> None:
    """Append ``text`` by rewriting the file atomically: a crash leaves the old content whole.

    A stream (see :func:`atomic_writer`) is appended to in place.
    """
    if is_stream(path):
        try:
            with _stream(path, binary=True) as handle:
                handle.write(text.encode("utf-8"))  # type: ignore[arg-type]
        except OSError as exc:
            raise cannot_write(path, exc, what=what, hint=hint) from exc
        return
    target = Path(os.path.realpath(path))
    try:
        old = target.read_bytes()
    except FileNotFoundError:
        old = b""
    except OSError as exc:
        raise cannot_write(path, exc, what=what, hint=hint) from exc
    separator = b"" if not old or old.endswith(b"\n") else b"\n"
    atomic_write_bytes(path, old + separator + text.encode("utf-8"), what=what, hint=hint)


def existing_mode(target: Path) -> int:
    """The target's current permission bits, or 0666 minus the umask for a new file."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def fsync_dir(folder: Path) -> None:
    """Make the renames in ``folder`` durable (POSIX; not supported, nor needed, on Windows)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def path_inside(root: PathLike, configured: PathLike, *, option: str) -> Path:
    """Resolve a configured output path against ``root``; refuse one that escapes it.

    Absolute paths are the user's explicit choice and are allowed; relative ones must stay in
    the project, through ``..`` or through a symlink (a checked-out repository could carry a
    link to a folder elsewhere). A symlink to a stream (``out.md -> /dev/stdout``) is allowed:
    nothing is replaced there. The returned path keeps its symlinks, so that writers see the
    link to a stream for what it is.
    """
    raw = Path(configured)
    if raw.is_absolute():
        return raw
    base = Path(os.path.abspath(root))
    written = Path(os.path.normpath(base / raw))
    if not (written == base or base in written.parents) or not (
        is_within(written, base) or is_stream(written)
    ):
        raise ConfigError(
            f"{option}: {os.fspath(configured)!r} points outside the project ({base}); use a "
            "path inside it, or an absolute path if you really mean another place"
        )
    return written


@contextlib.contextmanager
def _stream(path: PathLike, binary: bool) -> Iterator[IO[str] | IO[bytes]]:
    """Append to a stream in place; our own stdout or stderr through its file descriptor.

    Writing ``/dev/stdout`` through a new open file would keep its own offset: when stdout is
    a file (``pytest > log``), what the process prints next would overwrite it.
    """
    fd = _own_descriptor(path)
    if fd is not None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        # The line printed last (pytest's progress line) may be unfinished: start a new one.
        os.write(fd, b"\n")
        handle = os.fdopen(
            os.dup(fd), "ab" if binary else "a", encoding=None if binary else "utf-8"
        )
    else:
        handle = open(path, "ab" if binary else "a", encoding=None if binary else "utf-8")  # noqa: SIM115
    with handle:
        yield handle


def _own_descriptor(path: PathLike) -> int | None:
    """1 or 2 when ``path`` is the file this process has open as stdout or stderr."""
    try:
        target = os.stat(path)
    except OSError:
        return None
    for fd in (1, 2):
        try:
            info = os.fstat(fd)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) == (target.st_dev, target.st_ino):
            return fd
    return None


def is_stream(path: PathLike) -> bool:
    """Whether writing ``path`` must append in place instead of replacing a file.

    True for a device, a pipe or a socket, and for any path that leads (symlink by symlink)
    into ``/dev`` or ``/proc``: ``/dev/stdout`` may be a regular file another program has
    open as its output, and replacing it would hide everything written after.
    """
    current = os.path.abspath(path)
    for _ in range(40):  # as many hops as the kernel follows
        if current.startswith(("/dev/", "/proc/")):
            return True
        if not os.path.islink(current):
            break
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    try:
        mode = os.stat(current).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: equal after resolving symlinks, or hard links of one."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def is_within(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies below it (symlinks resolved)."""
    inner, outer = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return inner == outer or outer in inner.parents


def lock_beside(path: PathLike, *, hidden: bool = True) -> Path:
    """The lock file of the file ``path`` names: ``.NAME.lock`` (``NAME.lock`` when not
    ``hidden``) beside it once symlinks are resolved, as the atomic writers resolve them, so a
    file reached through a symlink and through its real path is guarded by one lock."""
    real = Path(os.path.realpath(path))
    return real.with_name(f".{real.name}.lock" if hidden else f"{real.name}.lock")


@contextlib.contextmanager
def exclusive_lock(
    path: PathLike,
    *,
    timeout: float = 3600,
    what: str = "file",
    error: type[RagMetricsError] = RagMetricsError,
    hint: str = "",
) -> Iterator[None]:
    """Hold an exclusive lock named by ``path``, across processes; no lock file stays behind.

    POSIX: ``flock`` on ``path``, which is removed again on release. A process that opened the
    file before it was removed finds, once it holds the lock, that ``path`` no longer names
    the file it locked, and tries again, so two processes never both hold it. Elsewhere
    (Windows) filelock's lock file is used and left in place.

    A folder that refuses the lock file (read-only, no permission, full) is an OutputError
    from :func:`cannot_write` naming the folder, with ``hint``; errors raised by the caller's
    block pass through unchanged.
    """
    target = Path(path)

    def refused() -> contextlib.AbstractContextManager[None]:
        return writing(target, what=f"lock file of the {what}", hint=hint)

    with refused():
        target.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        from filelock import FileLock, Timeout

        try:
            with FileLock(str(target), timeout=timeout):
                yield
        except Timeout:
            raise _lock_timeout(target, timeout, what, error) from None
        return
    import fcntl

    while True:
        with refused():
            fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise _lock_timeout(target, timeout, what, error) from None
                    time.sleep(0.02)
            if not _still_named(fd, target):
                continue  # removed (or replaced) by the holder before us: lock the new file
            try:
                yield
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(target)
            return
        finally:
            os.close(fd)  # closing releases the flock


def _still_named(fd: int, target: Path) -> bool:
    """Whether ``target`` still names the file open as ``fd``."""
    held = os.fstat(fd)
    try:
        now = os.stat(target)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _lock_timeout(
    target: Path, timeout: float, what: str, error: type[RagMetricsError]
) -> RagMetricsError:
    return error(
        f"waited {timeout:.0f} s for the lock {target} of the {what}; another process holds "
        "it. If no other run is active, delete the lock file"
    )


# The streams read so far while :func:`streams_read_once` is active (None: not active).
_READ_STREAMS: dict[str, bytes] | None = None


@contextlib.contextmanager
def streams_read_once() -> Iterator[None]:
    """Within: an input that is a stream (a pipe such as ``<(zcat a.run.gz)``, ``/dev/stdin``)
    is read whole the first time it is opened by :func:`open_input`, and every later opening
    reads those bytes again. A command may then look at an input twice (what is it? then read
    it) as it does a file; a pipe can be read once only. The ``ragmetrics`` command runs in it.
    """
    global _READ_STREAMS
    outer = _READ_STREAMS
    if outer is None:
        _READ_STREAMS = {}
    try:
        yield
    finally:
        _READ_STREAMS = outer


def open_input(path: PathLike) -> IO[bytes]:
    """``open(path, "rb")``, but a stream's bytes kept for the next reader within
    :func:`streams_read_once`. Raises what ``open`` raises."""
    if _READ_STREAMS is None or not is_stream(path):
        return open(path, "rb")
    key = os.path.abspath(path)
    if key not in _READ_STREAMS:
        with open(path, "rb") as handle:
            _READ_STREAMS[key] = handle.read()
    return io.BytesIO(_READ_STREAMS[key])


# The first two bytes of every gzip stream (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"


def is_gzipped(path: PathLike, handle: IO[bytes]) -> bool:
    """Whether ``handle`` (just opened on ``path`` by :func:`open_input`) reads gzip data: a
    ``.gz`` name, or the gzip magic bytes for any other name — a pipe (``<(cat a.run.gz)``,
    ``/dev/stdin``) has no name to go by, nor has a gzipped file named without ``.gz``. The
    bytes are looked at, not consumed: a stream can be read once only."""
    if os.fspath(path).endswith(".gz"):
        return True
    if handle.seekable():  # a file, or a stream's bytes kept by streams_read_once
        start = handle.tell()
        head = handle.read(len(GZIP_MAGIC))
        handle.seek(start)
    else:  # a pipe opened by open(): its buffer is peeked at
        peek = getattr(handle, "peek", None)
        head = peek(len(GZIP_MAGIC))[: len(GZIP_MAGIC)] if peek is not None else b""
    return head == GZIP_MAGIC


def read_json_file(
    path: Path, *, what: str = "", error: type[RagMetricsError], hint: str = ""
) -> Any:
    """The JSON value of a whole file (a UTF-8 BOM is allowed); ``error`` names file and line,
    and what the file was meant to be (``what``), followed by ``hint`` (what to do).

    Raises FileNotFoundError unchanged, so callers can treat a missing file as they need.
    """
    tail = f"; {hint}" if hint else ""
    subject = f"the {what} is " if what else ""
    try:
        with open_input(path) as handle:
            data = handle.read()
    except FileNotFoundError:
        raise
    except OSError as exc:
        reason = exc.strerror or exc
        raise error(
            f"{path}: cannot read {f'the {what} ' if what else ''}({reason}){tail}"
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{path}:{line}: {subject}not valid UTF-8{tail}") from None
    if not text.strip():
        raise error(f"{path}: {subject}empty{tail}")
    try:
        value = json.loads(text, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise error(
            f"{path}:{exc.lineno}: {subject}not valid JSON ({json_problem(exc)}){tail}"
        ) from None
    except (ValueError, RecursionError) as exc:
        # Valid JSON that Python refuses: an integer of thousands of digits, deep nesting.
        raise error(f"{path}: cannot read {f'the {what} ' if what else ''}({exc}){tail}") from None
    where = too_deep(value)
    if where is not None:
        raise error(
            f"{path}: {subject}nested more than {MAX_JSON_DEPTH} levels deep (at {where}); "
            f"no file of ours nests like that{tail}"
        )
    return value


def too_deep(value: Any, limit: int | None = None) -> str | None:
    """Where ``value`` nests lists and objects more than ``limit`` (default
    :data:`MAX_JSON_DEPTH`) levels deep, as a short path; None when it does not.

    json reads nesting up to the interpreter's recursion limit, and every walk over the values
    (rounding, identities, the HTML page) recurses once per level on top of the caller's frames,
    so a file that json read could still end in a RecursionError far from where it was read.
    """
    limit = MAX_JSON_DEPTH if limit is None else limit
    # (container, its key, its parent's entry, its depth): a path is rebuilt only when found.
    Entry = tuple[Any, str, Any, int]
    stack: list[Entry] = [(value, "", None, 0)] if isinstance(value, (dict, list)) else []
    while stack:
        entry = stack.pop()
        item, _, _, depth = entry
        if depth >= limit:
            keys: list[str] = []
            node: Entry | None = entry
            while node is not None and node[2] is not None:
                keys.append(node[1])
                node = node[2]
            keys.reverse()
            shown = ".".join(keys[:4]).replace(".[", "[")
            return f"{shown}…" if len(keys) > 4 else shown
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            if isinstance(child, (dict, list)):
                name = f"[{key}]" if isinstance(item, list) else str(key)
                stack.append((child, name, entry, depth + 1))
    return None
