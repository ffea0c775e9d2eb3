"""``foreign_files``: a baseline none of whose entries can be a test of this project."""

from __future__ import annotations

from pathlib import Path

from pytest_ragmetrics.baseline.store import foreign_files

OLD = [("tests/test_old.py::test_a", "toy"), ("tests/test_old.py::test_b", "toy")]
NEW = [("tests/test_new.py::test_a", "toy")]


def test_entries_of_files_gone_and_none_matching_are_named(tmp_path: Path) -> None:
    assert foreign_files(OLD, NEW, tmp_path) == ["tests/test_old.py"]


def test_a_match_an_existing_file_or_nothing_evaluated_is_no_fault(tmp_path: Path) -> None:
    assert foreign_files([*OLD, *NEW], NEW, tmp_path) == []  # one entry matches
    assert foreign_files(OLD, [], tmp_path) == []  # nothing to compare
    assert foreign_files([], NEW, tmp_path) == []  # an empty baseline
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_old.py").write_text("")
    assert foreign_files(OLD, NEW, tmp_path) == []  # a selection that left test_old.py out


def test_what_cannot_be_looked_up_counts_as_there(tmp_path: Path) -> None:
    assert foreign_files(OLD, NEW, None) == []  # no rootdir known
    assert foreign_files([("spec.yaml::case", "toy")], NEW, tmp_path) == []  # not a .py test
