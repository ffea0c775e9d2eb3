"""Atomic writes and the project-path guard."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.fileio import atomic_append_text, atomic_write_text, path_inside


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
