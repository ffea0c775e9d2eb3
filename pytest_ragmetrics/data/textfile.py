"""Reading text files line by line, gzip-transparent (by name or by the gzip magic bytes,
which is all a pipe has), with file:line in every error."""

from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.fileio import is_gzipped, json_problem, open_input, unique_keys

PathLike = str | os.PathLike[str]

# Fields of TREC-style files are separated by ASCII spaces and tabs, as trec_eval reads them;
# str.split() would also split at a no-break space or other Unicode spaces inside an id.
_FIELD_SEPARATOR = re.compile(r"[ \t\f\v]+")


def split_fields(text: str) -> list[str]:
    """The whitespace-separated fields of a line (ASCII whitespace only)."""
    return [field for field in _FIELD_SEPARATOR.split(text.strip(" \t\f\v\r\n")) if field]


def resolve(path: PathLike) -> Path:
    """``path`` itself, or ``path.gz`` when only the gzipped file exists."""
    p = Path(path)
    if not p.exists() and p.suffix != ".gz" and p.with_name(p.name + ".gz").exists():
        return p.with_name(p.name + ".gz")
    return p


def read_lines(path: PathLike, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield (line number, text without newline) for every non-blank line.

    Decoding happens per line so that a bad byte is reported with its line number.
    """
    p = resolve(path)
    try:
        source = open_input(p)
        handle = (
            cast("IO[bytes]", gzip.GzipFile(fileobj=source, mode="rb"))
            if is_gzipped(p, source)
            else source
        )
    except FileNotFoundError:
        raise DataFormatError("file not found", p) from None
    except OSError as exc:
        raise DataFormatError(f"cannot open: {exc.strerror or exc}", p) from None
    lineno = 0
    try:
        with source, handle:
            for lineno, raw in enumerate(handle, start=1):
                try:
                    text = raw.decode(encoding)
                except UnicodeDecodeError as exc:
                    name = "UTF-8" if encoding == "utf-8" else encoding
                    raise DataFormatError(
                        f"not valid {name} (byte {raw[exc.start]:#04x} at column {exc.start + 1})",
                        p,
                        lineno,
                    ) from None
                if "\x00" in text:
                    raise DataFormatError(
                        f"a NUL character at column {text.index(chr(0)) + 1}; the file is binary "
                        "or damaged",
                        p,
                        lineno,
                    )
                if lineno == 1 and text.startswith("\ufeff"):
                    text = text[1:]  # a UTF-8 byte order mark, as some editors write
                text = text.rstrip("\r\n")
                if text.strip():
                    yield lineno, text
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataFormatError(
            f"corrupt gzip data after line {lineno}: {exc}", p, lineno + 1
        ) from None


def read_jsonl(path: PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for every JSON-object line."""
    p = resolve(path)
    for lineno, text in read_lines(p):
        try:
            value = json.loads(text, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as exc:
            raise DataFormatError(
                f"not valid JSON ({json_problem(exc)}); each line must be one JSON object",
                p,
                lineno,
            ) from None
        except (ValueError, RecursionError) as exc:
            # Valid JSON that Python refuses: an integer of thousands of digits, nesting
            # deeper than the recursion limit, a key given twice in one object.
            raise DataFormatError(f"cannot read this JSON line ({exc})", p, lineno) from None
        if not isinstance(value, dict):
            raise DataFormatError(f"expected a JSON object, got {type(value).__name__}", p, lineno)
        if _SURROGATE_ESCAPE.search(text):
            _refuse_lone_surrogates(value, p, lineno)
        yield lineno, value


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def repaired_text(text: str) -> str:
    """``text`` with every lone surrogate (JSON's "\\ud800", which is not Unicode and cannot be
    written as UTF-8) replaced by U+FFFD: for text from outside (a generator's answer, a
    model's reply), so that it can be cached, recorded and reported."""
    return _LONE_SURROGATE.sub("\ufffd", text)


# A \uD800-\uDFFF escape: valid in pairs (an astral character), not alone.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def _refuse_lone_surrogates(value: Any, path: Path, line: int) -> None:
    """Strings with a lone surrogate are not Unicode text: they cannot be written back out."""
    strings = [value] if isinstance(value, str) else []
    if isinstance(value, dict):
        for key, item in value.items():
            strings.append(key)
            _refuse_lone_surrogates(item, path, line)
    elif isinstance(value, list):
        for item in value:
            _refuse_lone_surrogates(item, path, line)
    for text in strings:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DataFormatError(
                f"the escape \\u{ord(text[exc.start]):04x} is half of a surrogate pair, not a "
                "character; fix the text that wrote this line",
                path,
                line,
            ) from None


def require_str(
    record: dict[str, Any], keys: tuple[str, ...], path: PathLike, line: int, *, what: str
) -> str:
    """The first of ``keys`` present in ``record``, as a non-empty string."""
    for key in keys:
        if key in record:
            value = record[key]
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise DataFormatError(
                    f"{what} {key!r} must be a string, got {type(value).__name__}", path, line
                )
            text = str(value)
            if not text:
                raise DataFormatError(f"{what} {key!r} is empty", path, line)
            if "\x00" in text:  # numpy drops a trailing NUL: "d2\x00" would become "d2"
                raise DataFormatError(
                    f"{what} {text!r} holds a NUL character (\\u0000); ids must be text",
                    path,
                    line,
                )
            return text
    names = " or ".join(repr(k) for k in keys)
    raise DataFormatError(f"missing {names} ({what})", path, line)


def optional_text(record: dict[str, Any], key: str, path: PathLike, line: int) -> str:
    """``record[key]`` as text; missing or null is ''."""
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataFormatError(f"{key!r} must be a string, got {type(value).__name__}", path, line)
    return value
