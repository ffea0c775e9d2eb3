"""Atomic writes and the project-path guard."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from pytest_ragmetrics.data.manifest import read_manifest
from pytest_ragmetrics.data.textfile import read_jsonl
from pytest_ragmetrics.errors import ConfigError, DataFormatError, OutputError
from pytest_ragmetrics.fileio import (
    atomic_append_text,
    atomic_write_text,
    cannot_write,
    path_inside,
    read_json_file,
)


def test_new_file_gets_umask_mode_and_existing_mode_is_kept(tmp_path: Path) -> None:
    target = tmp_path / "baseline.json"
    umask = os.umask(0o022)
    try:
        atomic_write_text(target, "one")
        assert target.stat().st_mode & 0o777 == 0o644
        target.chmod(0o640)
        atomic_write_text(target, "two")
        assert target.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(umask)
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]


def test_append_adds_a_newline_only_when_missing(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    atomic_append_text(target, "first")
    atomic_append_text(target, "second\n")
    atomic_append_text(target, "third\n")
    assert target.read_text() == "first\nsecond\nthird\n"


def test_failed_write_leaves_target_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(target, "\udcff")  # a lone surrogate cannot be encoded
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.parametrize("value", ["../out.json", "a/../../out.json", "sub/../../../x"])
def test_relative_paths_may_not_leave_the_project(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError, match="points outside the project"):
        path_inside(tmp_path, value, option="ragmetrics_json")


def test_paths_inside_and_absolute_paths_are_allowed(tmp_path: Path) -> None:
    assert (
        path_inside(tmp_path, "a/../b/report.json", option="x")
        == tmp_path.resolve() / "b" / "report.json"
    )
    assert path_inside(tmp_path, "/elsewhere/summary.md", option="x") == Path(
        "/elsewhere/summary.md"
    )


def test_a_file_where_a_folder_is_needed_is_named(tmp_path: Path) -> None:
    (tmp_path / "datasets").write_text("not a folder")
    for target in ("datasets/x.json.gz", "datasets/sub/x.json.gz"):
        with pytest.raises(OutputError) as info:
            atomic_write_text(tmp_path / target, "{}", what="dataset digests")
        assert str(info.value).startswith(f"{tmp_path / target}: cannot write the dataset digests")
        assert f"{tmp_path / 'datasets'} is a file where a folder is needed" in str(info.value)


def test_a_file_that_may_not_be_replaced_is_named_not_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root ignores permission bits, so the refusal (an immutable file: EPERM) is simulated.
    target = tmp_path / "baseline.json"
    target.write_text("{}")
    refused = OSError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(os, "access", lambda path, mode: os.fspath(path) != os.fspath(target))
    message = str(cannot_write(target, refused, what="baseline"))
    assert message == (
        f"{target}: cannot write the baseline (Operation not permitted); make {target} writable"
    )
    assert f"make {tmp_path} writable" in str(cannot_write(tmp_path / "new.json", refused))


BROKEN_JSON = [
    ('{"_id": "d1", "te', "Unterminated string starting at column 15"),
    ('{"_id": "d1\x01"}', "Invalid control character at column 12"),
    ('{"_id": "d1",}', "Expecting property name enclosed in double quotes at column 14"),
    ('{"_id": "d1"} x', "Extra data at column 15"),
]


@pytest.mark.parametrize(("text", "problem"), BROKEN_JSON)
def test_a_json_syntax_error_reads_as_a_sentence_in_every_reader(
    tmp_path: Path, text: str, problem: str
) -> None:
    """Python's messages ending in "at" wait for a position: "starting at at column" was shown."""
    target = tmp_path / "x.json"
    target.write_text("\n" + text)
    with pytest.raises(DataFormatError, match=rf"x\.json:2: not valid JSON \({problem}\)"):
        list(read_jsonl(target))
    with pytest.raises(DataFormatError, match=rf"x\.json:2: not valid JSON \({problem}\)$"):
        read_manifest(target)
    with pytest.raises(ConfigError, match=rf"x\.json:2: not valid JSON \({problem}\)$"):
        read_json_file(target, error=ConfigError)
