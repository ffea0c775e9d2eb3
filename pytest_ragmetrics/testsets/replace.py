"""Replace the files of a folder all together or not at all.

A test-set folder is several files that belong together (corpus, queries, qrels, dataset.json):
replacing them one by one, a failure between two of them would leave a folder that mixes two test
sets and loads without a word. :func:`replace_files` first writes every new text to a temporary
file beside its target (flushed to disk) and keeps a link to every old file; only then does it
rename the new files into place, and a failure there renames the old ones back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_ragmetrics.errors import OutputError
from pytest_ragmetrics.fileio import cannot_write, existing_mode, fsync_dir


@dataclass
class _Staged:
    """One file of the change: its target, the new text's temporary file (None: remove the
    target) and the old file's backup (None: there was no old file)."""

    target: Path
    new: Path | None = None
    backup: Path | None = None
    done: bool = False


def replace_files(
    folder: Path, files: Mapping[str, str | None], *, what: str = "", hint: str = ""
) -> None:
    """Give each file of ``files`` (a path in ``folder``: its new text, or None to remove it)
    its new content, in the mapping's order, so that a failure at any point (a refused or full
    folder, a read-only file) leaves every file as it was. A failure is :func:`cannot_write`'s
    OutputError naming the file; the temporary files and backups are removed either way."""
    staged: list[_Staged] = []
    current = folder
    try:
        for name, text in files.items():
            current = folder / name
            staged.append(_Staged(Path(os.path.realpath(current))))
            _stage(staged[-1], text)
        for item in staged:
            current = item.target
            _commit(item)
    except OSError as exc:
        _undo(staged, current)
        raise cannot_write(current, exc, what=what, hint=hint) from None
    except BaseException:
        _undo(staged, current)
        raise
    finally:
        _clean(staged)
    for parent in {item.target.parent for item in staged}:
        fsync_dir(parent)


def _stage(item: _Staged, text: str | None) -> None:
    """Write the new text beside the target, and link the old file to a backup."""
    target = item.target
    if text is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        item.new = new = _temporary(target, ".tmp")
        os.chmod(new, existing_mode(target))
        with open(new, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    if target.exists():
        item.backup = backup = _temporary(target, ".old")
        os.unlink(backup)
        try:
            os.link(target, backup)  # the old file, kept whole whatever happens to the name
        except OSError:
            shutil.copy2(target, backup)  # a file system without hard links


def _temporary(target: Path, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    return Path(name)


def _commit(item: _Staged) -> None:
    if item.new is not None:
        os.replace(item.new, item.target)
    elif item.backup is not None:
        os.unlink(item.target)
    item.done = True


def _undo(staged: list[_Staged], failed: Path) -> None:
    """Put back the old file of every target already changed; an OutputError if one cannot be
    (the folder then mixes two sets, and says so)."""
    stuck = []
    for item in reversed(staged):
        if not item.done:
            continue
        try:
            if item.backup is not None:
                os.replace(item.backup, item.target)
                item.backup = None
            else:
                item.target.unlink(missing_ok=True)
        except OSError as exc:
            stuck.append(f"{item.target} ({exc.strerror or exc})")
    if stuck:
        raise OutputError(
            f"{failed}: writing failed, and the old content of {', '.join(stuck)} could not be "
            "put back: the folder now mixes two test sets; delete it and write it again"
        )


def _clean(staged: list[_Staged]) -> None:
    for item in staged:
        for leftover in (item.new, item.backup):
            if leftover is not None:
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
