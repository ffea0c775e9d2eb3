"""Which datasets and splits a session (or a ``ragmetrics`` command) evaluates.

``ragmetrics_dataset = "scifact=data/scifact cranfield=data/cranfield"`` names several dataset
folders (a bare path is named after its folder); ``ragmetrics_split = "test"`` applies to all,
``"scifact=test cranfield=dev,test"`` per dataset. Every (dataset, split) pair is one
:class:`DatasetSelection`; its :attr:`~DatasetSelection.key` (``scifact-test``) is what test
ids, reports and summaries call it (one key per pair: see :func:`pair_key`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_ragmetrics.errors import ConfigError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9._-]+")  # in a folder's name, written _ in its dataset's


@dataclass(frozen=True)
class DatasetSelection:
    """One dataset folder and one of its splits, under a name."""

    name: str
    path: Path
    split: str = "test"
    ignore_identical_ids: bool = False

    @property
    def key(self) -> str:
        """``name-split``: the id of this pair in test ids and reports (see :func:`pair_key`)."""
        return pair_key(self.name, self.split)


def pair_key(name: str, split: str) -> str:
    """The id of a (dataset, split) pair: ``name-split``, each ``-`` of the name doubled.

    Injective: names and splits start with a letter or digit, so the separator is the end of
    the first odd run of ``-`` (``("a-b", "c")`` is ``a--b-c``, ``("a", "b-c")`` is
    ``a-b-c``). Two distinct pairs never share a key, hence never a test id, a baseline entry,
    a recording or a report column. Names without ``-`` keep their plain ``name-split``.
    """
    return f"{name.replace('-', '--')}-{split}"


def parse_named_paths(text: str | Sequence[str], where: str) -> list[tuple[str, str]]:
    """``"a=path/one path/two"`` -> ``[("a", "path/one"), ("two", "path/two")]``.

    A text is split at white space; a sequence (repeated command-line values, an ini value
    pytest split as in a shell or a list) is taken item by item, so a folder may have spaces
    in its name there. A bare path is named after its last folder, each run of other
    characters than letters, digits, ``.``, ``_`` and ``-`` written ``_`` (``my data`` is
    ``my_data``); names must be unique and plain, since they become part of test ids.
    """
    out: list[tuple[str, str]] = []
    for item in text.split() if isinstance(text, str) else text:
        name, sep, path = item.partition("=")
        if not sep:
            path = item
            name = _NOT_IN_NAMES.sub("_", Path(item.rstrip("/\\")).name)
            if name in ("", ".", ".."):
                raise ConfigError(
                    f"{where}: {item!r} has no folder name to name the dataset after; write "
                    f"NAME={item}"
                )
        if not path:
            raise ConfigError(f"{where}: {item!r} names no folder; write name=path/to/folder")
        if not _NAME.fullmatch(name):
            raise ConfigError(
                f"{where}: dataset name {name!r} must be letters, digits, '.', '_' or '-' "
                "(it becomes part of test ids); write name=path"
            )
        if any(name == seen for seen, _ in out):
            raise ConfigError(
                f"{where}: two datasets are named {name!r}; give one a name of its own (name=path)"
            )
        out.append((name, path))
    if not out:
        raise ConfigError(f"{where}: no dataset folder given")
    return out


def parse_splits(text: str, names: Sequence[str], where: str) -> dict[str, tuple[str, ...]]:
    """Splits per dataset name: ``"test"`` or ``"test,dev"`` for all, ``"a=test b=dev,test"``
    per dataset (datasets not named get the bare splits, or ``test``)."""
    default: list[str] = []
    per_name: dict[str, tuple[str, ...]] = {}
    for item in text.split():
        name, sep, splits = item.partition("=")
        if not sep:
            default += _splits(item, where)
            continue
        if name not in names:
            raise ConfigError(
                f"{where}: {item!r} names no configured dataset; the datasets are "
                f"{', '.join(names)}"
            )
        # Named twice ("a=test a=dev", or --split given twice): the splits add up.
        per_name[name] = tuple(dict.fromkeys([*per_name.get(name, ()), *_splits(splits, where)]))
    fallback = tuple(dict.fromkeys(default)) or ("test",)
    return {name: per_name.get(name, fallback) for name in names}


def check_split_name(split: str, where: str) -> str:
    """``split`` if it can name a split: letters, digits, '.', '_' or '-', not starting with
    '.' or '-' — it becomes part of file names (``qrels/<split>.tsv``), so a path such as
    ``../other/qrels/test`` would read or write another dataset's files."""
    if not isinstance(split, str) or not _NAME.fullmatch(split):
        raise ConfigError(
            f"{where}: split {split!r} must be letters, digits, '.', '_' or '-' (starting with a "
            "letter or digit)"
        )
    return split


def _splits(text: str, where: str) -> list[str]:
    splits = [check_split_name(s, where) for s in text.split(",") if s]
    if not splits:
        raise ConfigError(f"{where}: {text!r} names no split")
    return splits


def select_datasets(
    folders: Sequence[tuple[str, Path]],
    splits: dict[str, tuple[str, ...]],
    ignore_identical_ids: Callable[[str], bool] = lambda name: False,
    where: str = "ragmetrics_dataset",
) -> tuple[DatasetSelection, ...]:
    """Every (dataset, split) pair, in the order given.

    A dataset name that is also another pair's key (a dataset ``x-test`` beside the pair
    ``x``/``test``) is refused: a marker or ``--dataset`` naming it would mean two things.
    """
    pairs = tuple(
        DatasetSelection(name, path, split, ignore_identical_ids(name))
        for name, path in folders
        for split in splits[name]
    )
    for pair in pairs:
        if any(pair.key == name and pair.name != name for name, _ in folders):
            raise ConfigError(
                f"{where}: the dataset name {pair.key!r} is also the id of dataset "
                f"{pair.name!r}, split {pair.split!r}; rename one of the datasets (name=path)"
            )
    _refuse_same_pair_twice(pairs, where)
    return pairs


def _refuse_same_pair_twice(pairs: Sequence[DatasetSelection], where: str) -> None:
    """Two names for one folder and split (a copied ``name=path`` left unedited) would
    evaluate its queries twice, and count them twice in the summary's mean across datasets."""
    seen: dict[tuple[Path, str], DatasetSelection] = {}
    for pair in pairs:
        first = seen.setdefault((pair.path.resolve(), pair.split), pair)
        if first is not pair:
            raise ConfigError(
                f"{where}: datasets {first.name!r} and {pair.name!r} are the same "
                f"folder ({pair.path}), split {pair.split!r}: its queries would be evaluated "
                "and counted twice; name each dataset folder once"
            )
