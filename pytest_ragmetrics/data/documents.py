"""The documents of a classic test collection, read into a :class:`Corpus`: SMART files
(Cranfield, CISI, MED, ...) or TREC SGML (the TREC disks), by one reader whose options are the
keys of a dataset manifest (``format``, ``title_fields``, ``text_fields``, ``encoding``)."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_ragmetrics.data import sgml, smart
from pytest_ragmetrics.data.fields import FieldNames, TextRecord, corpus_from_records, path_list
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.data.textfile import PathLike
from pytest_ragmetrics.errors import ConfigError

DOCUMENT_FORMATS = ("smart", "trec")


def read_documents(
    paths: PathLike | Sequence[PathLike],
    format: str,
    *,
    title_fields: Sequence[str] | None = None,
    text_fields: Sequence[str] | None = None,
    encoding: str = "utf-8",
) -> Corpus:
    """Read the documents of one file or several (an id must be unique across all files).

    ``format="smart"`` (Cranfield's ``cran.all.1400``): a record per ``.I <id>``, the title
    its ``.T`` field, the text ``.W``; other fields (``.A`` authors, ``.B`` bibliography) are
    left out unless named. ``format="trec"``: a ``<DOC>`` per document, its id the
    ``<DOCNO>``; the title joins the title elements (``<HEAD>``, ``<HEADLINE>``, ``<TITLE>``,
    ``<HL>``), the text the text elements (``<TEXT>``); repeated elements are all kept.

    ``title_fields`` and ``text_fields`` name other fields (elements, for TREC). The default
    ones are alternatives (a collection may have no title); each field named must be held by
    some document, and none may be both a title and a text field.
    """
    names = _field_names(format, title_fields, text_fields)
    names.check_distinct()
    files = path_list(paths)
    seen: dict[str, tuple[str, int]] = {}
    records: list[TextRecord] = []
    for file in files:
        if format == "smart":
            records += smart.parse_smart(file, encoding=encoding, first_seen=seen)
        else:
            records += sgml.parse_trec_documents(
                file,
                title_tags=names.title,
                text_tags=names.text,
                encoding=encoding,
                first_seen=seen,
            )
    return corpus_from_records(records, names, files[0])


def _field_names(
    format: str, title: Sequence[str] | None, text: Sequence[str] | None
) -> FieldNames:
    """The fields ``read_documents`` takes, the format's defaults where none are named."""
    default_title: Sequence[str]
    default_text: Sequence[str]
    if format == "smart":
        default_title, default_text = smart.DOCUMENT_TITLE_FIELDS, smart.DOCUMENT_TEXT_FIELDS
        mark, records_hold_all = ".{}", True
    elif format == "trec":
        default_title, default_text = sgml.DOCUMENT_TITLE_TAGS, sgml.DOCUMENT_TEXT_TAGS
        mark, records_hold_all = "<{}>", False
    else:
        raise ConfigError(
            f"document format {format!r} is not one of {', '.join(DOCUMENT_FORMATS)} (a BEIR "
            "corpus.jsonl is read by read_corpus)"
        )
    return FieldNames(
        default_title if title is None else title,
        default_text if text is None else text,
        default_title,
        default_text,
        mark=mark,
        records_hold_all=records_hold_all,
    )
