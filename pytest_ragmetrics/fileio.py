"""Atomic file writes: a reader sees the complete old file or the complete new one, never half."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pytest_ragmetrics.errors import ConfigError, OutputError

PathLike = str | os.PathLike[str]


@contextlib.contextmanager
def atomic_writer(path: PathLike, mode: str = "w") -> Iterator[IO[str] | IO[bytes]]:
    """Write to a temporary file in the target's folder, fsync, then ``os.replace`` it.

    On any error (or a crash) the target is untouched; the temporary file is removed when
    Python still can.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would have.
        os.chmod(tmp, _existing_mode(target))
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
    _fsync_dir(target.parent)


def atomic_write_text(path: PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically; an OutputError names the file on failure."""
    try:
        with atomic_writer(path, "wb") as handle:
            handle.write(data)  # type: ignore[arg-type]
    except OSError as exc:
        raise _output_error(path, exc) from exc


def _output_error(path: PathLike, exc: OSError) -> OutputError:
    if isinstance(exc, OutputError):
        return exc
    reason = exc.strerror or str(exc)
    error = OutputError(f"{os.fspath(path)}: cannot write ({reason})")
    error.strerror = reason  # what callers that add their own context show
    return error


def atomic_append_text(path: PathLike, text: str) -> None:
    """Append ``text`` by rewriting the file atomically: a crash leaves the old content whole."""
    target = Path(path)
    try:
        old = target.read_bytes()
    except FileNotFoundError:
        old = b""
    except OSError as exc:
        raise _output_error(path, exc) from exc
    separator = b"" if not old or old.endswith(b"\n") else b"\n"
    atomic_write_bytes(target, old + separator + text.encode("utf-8"))


def _existing_mode(target: Path) -> int:
    """The target's current permission bits, or 0666 minus the umask for a new file."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _fsync_dir(folder: Path) -> None:
    # Makes the rename durable on POSIX; not supported (nor needed) on Windows.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def path_inside(root: PathLike, configured: PathLike, *, option: str) -> Path:
    """Resolve a configured output path against ``root``; refuse one that escapes it with ``..``.

    Absolute paths are the user's explicit choice and are allowed; relative ones must stay in
    the project.
    """
    raw = Path(configured)
    if raw.is_absolute():
        return raw
    base = Path(root).resolve()
    resolved = (base / raw).resolve()
    if resolved != base and base not in resolved.parents:
        raise ConfigError(
            f"{option}: {os.fspath(configured)!r} points outside the project ({base}); use a "
            "path inside it, or an absolute path if you really mean another place"
        )
    return resolved
