"""Classic collections: SMART files, TREC SGML documents and topics, the qrels options they need
(relevant pairs, grade mappings, query numbering), and ``dataset.json`` folders read by
``load_dataset``. Each reader's malformed inputs give a DataFormatError naming file and line."""

from __future__ import annotations

import gzip
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics import ConfigError, DataFormatError, evaluate, load_dataset, read_qrels
from pytest_ragmetrics.data.documents import read_documents
from pytest_ragmetrics.data.layouts import available_splits
from pytest_ragmetrics.data.sgml import (
    parse_trec_topics,
    read_trec_topics,
)
from pytest_ragmetrics.data.smart import read_smart_queries


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = textwrap.dedent(content).encode() if isinstance(content, str) else content
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def fails(call: Callable[[], object], path: Path, line: int | None, reason: str) -> str:
    """``call()`` raises a DataFormatError at ``path``:``line`` whose reason contains ``reason``."""
    with pytest.raises(DataFormatError) as info:
        call()
    error = info.value
    assert (error.path, error.line) == (str(path), line), str(error)
    assert reason in error.reason, error.reason
    return error.reason


# --- SMART ------------------------------------------------------------------------------------

SMART_DOCS = """\
.I 1
.T
experimental investigation of the
aerodynamics of a wing .
.A
brenckman,m.
.B
j. ae. scs. 25, 1958, 324.
.W
experimental investigation of the aerodynamics of a wing .
  an experimental study of a wing in a propeller slipstream .
.I 2
.T
simple shear flow past a flat plate .
.W
simple shear flow past a flat plate .
.W
a second abstract, as Cranfield's document 576 has .
.I 3
.T
.A
.B
.W
"""


def test_smart_documents(tmp_path: Path) -> None:
    corpus = read_documents(write(tmp_path / "docs.all", SMART_DOCS), "smart")
    assert list(corpus.doc_ids) == ["1", "2", "3"]
    first = corpus["1"]
    assert first.title == "experimental investigation of the aerodynamics of a wing ."
    assert first.text == (
        "experimental investigation of the aerodynamics of a wing .\n"
        "an experimental study of a wing in a propeller slipstream ."
    )
    # A repeated field keeps both parts; an empty record stays, empty (Cranfield 471, 995).
    assert corpus["2"].text.endswith(
        "flat plate .\na second abstract, as Cranfield's document 576 has ."
    )
    assert (corpus["3"].title, corpus["3"].text) == ("", "")


def test_smart_documents_with_other_fields(tmp_path: Path) -> None:
    corpus = read_documents(
        write(tmp_path / "docs.all", SMART_DOCS),
        "smart",
        title_fields=["T"],
        text_fields=["A", "W"],
    )
    assert corpus["1"].text.startswith("brenckman,m.\nexperimental investigation")


def test_smart_gzip_and_crlf(tmp_path: Path) -> None:
    # cran.qry ships with CRLF line ends; markers may carry trailing blanks.
    path = write(tmp_path / "q.qry.gz", b".I 001 \r\n.W  \r\nwhat similarity laws .\r\n")
    queries = read_smart_queries(tmp_path / "q.qry")  # the .gz is found on its own
    assert path.exists()
    assert list(queries.items()) == [("001", "what similarity laws .")]


def test_smart_documents_from_several_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a.all", ".I 1\n.W\none\n")
    b = write(tmp_path / "b.all", ".I 2\n.W\ntwo\n")
    assert list(read_documents([a, b], "smart").doc_ids) == ["1", "2"]
    c = write(tmp_path / "c.all", ".I 3\n.W\nthree\n.I 1\n.W\nagain\n")
    fails(lambda: read_documents([a, c], "smart"), c, 4, f"appears twice (first at {a}:1)")


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        ("some text\n.I 1\n.W\nx\n", 1, "text before the first '.I <id>' line ('some text')"),
        (".W\nx\n", 1, "field marker .W before the first '.I <id>' line"),
        (".I\n.W\nx\n", 1, "expected '.I <id>' (one id), got '.I'"),
        (".I 1 2\n.W\nx\n", 1, "expected '.I <id>' (one id), got '.I 1 2'"),
        (
            ".I 1\n.W\nx\n.I 2\n.W\ny\n.I 1\n.W\nz\n",
            7,
            "document id '1' appears twice (first at line 1)",
        ),
        (".I 1\nno marker yet\n", 2, "text after '.I 1' (line 1) before any field marker"),
        (".I 1\n.W\ncaf\xe9\n".encode("latin-1"), 3, "not valid UTF-8 (byte 0xe9 at column 4)"),
    ],
    ids=["text-first", "marker-first", "no-id", "two-ids", "duplicate", "no-marker", "bad-utf8"],
)
def test_smart_malformed(tmp_path: Path, content: str | bytes, line: int, reason: str) -> None:
    path = write(tmp_path / "docs.all", content)
    fails(lambda: read_documents(path, "smart"), path, line, reason)


def test_smart_empty_file(tmp_path: Path) -> None:
    path = write(tmp_path / "docs.all", "\n\n")
    fails(lambda: read_documents(path, "smart"), path, None, "no '.I <id>' document records")


def test_smart_query_without_text(tmp_path: Path) -> None:
    path = write(tmp_path / "q.qry", ".I 1\n.W\nfine\n.I 2\n.T\nonly a title\n")
    fails(
        lambda: read_smart_queries(path),
        path,
        4,
        "query '2' has no text in its W field (fields present: T)",
    )
    assert read_smart_queries(path, fields=["W", "T"])["2"] == "only a title"


# --- TREC SGML documents ----------------------------------------------------------------------

TREC_DOCS = """\
<?xml version="1.0"?>
<DOC>
<DOCNO> AP880212-0001 </DOCNO>
<FILEID>AP-NR-02-12-88 2344EST</FILEID>
<HEAD>Reports Former Saigon Prisoners Liberated</HEAD>
<HEAD>Eds: Also in Monday AMs</HEAD>
<TEXT>
   Hundreds of Soviet &amp; Vietnamese <F P=105>prisoners</F> were
   liberated.
</TEXT>
<TEXT>A second text block.</TEXT>
</DOC >
<doc id="la-1"><docno>LA010189-0001</docno><headline><P>Title
on two lines</P></headline><text type="body"><p>one</p> line</text></doc>

<DOC>
<DOCNO>FR-1</DOCNO>
<BYLINE>ignored</BYLINE>
</DOC>
"""


def test_trec_documents(tmp_path: Path) -> None:
    corpus = read_documents(write(tmp_path / "ap.txt.gz", TREC_DOCS), "trec")
    assert list(corpus.doc_ids) == ["AP880212-0001", "LA010189-0001", "FR-1"]
    ap = corpus["AP880212-0001"]
    assert ap.title == "Reports Former Saigon Prisoners Liberated Eds: Also in Monday AMs"
    assert ap.text == (
        "Hundreds of Soviet & Vietnamese prisoners were\nliberated.\nA second text block."
    )
    la = corpus["LA010189-0001"]
    assert (la.title, la.text) == ("Title on two lines", "one line")
    assert (corpus["FR-1"].title, corpus["FR-1"].text) == ("", "")


def test_trec_documents_choose_elements(tmp_path: Path) -> None:
    path = write(tmp_path / "ap.txt", TREC_DOCS)
    corpus = read_documents(path, "trec", title_fields=["fileid"], text_fields=["TEXT", "BYLINE"])
    assert corpus["AP880212-0001"].title == "AP-NR-02-12-88 2344EST"
    assert corpus["FR-1"].text == "ignored"


def test_trec_documents_inside_a_wrapper_and_across_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a", "<DOCS>\n<DOC><DOCNO>a1</DOCNO><TEXT>x</TEXT></DOC>\n</DOCS>\n")
    b = write(tmp_path / "b", "<DOC>\n<DOCNO>a1</DOCNO>\n</DOC>\n")
    assert list(read_documents(a, "trec").doc_ids) == ["a1"]
    fails(
        lambda: read_documents([a, b], "trec"), b, 2, f"DOCNO 'a1' appears twice (first at {a}:2)"
    )


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        (
            "<DOC>\n<DOCNO>1</DOCNO>\n<DOC>\n<DOCNO>2</DOCNO>\n</DOC>\n",
            3,
            "<DOC> inside the <DOC> opened at line 1; is a </DOC> missing?",
        ),
        ("<DOC>\n<DOCNO>1</DOCNO>\n<TEXT>x</TEXT>\n", 1, "<DOC> is never closed"),
        ("<DOC><DOCNO>1</DOCNO></DOC>\n</DOC>\n", 2, "</DOC> without an opening <DOC>"),
        (
            "<DOC>\n<TEXT>no number</TEXT>\n</DOC>\n",
            1,
            "document without a <DOCNO> (it ends at line 3)",
        ),
        (
            "<DOC>\n<DOCNO>1</DOCNO>\n<DOCNO>2</DOCNO>\n</DOC>\n",
            3,
            "second <DOCNO> in one document (the first, '1', at line 2)",
        ),
        ("<DOC>\n<DOCNO>  </DOCNO>\n</DOC>\n", 2, "empty <DOCNO>"),
        ("<DOC>\n<DOCNO>AP 1</DOCNO>\n</DOC>\n", 2, "DOCNO 'AP 1' contains whitespace"),
        (
            "<DOC><DOCNO>1</DOCNO></DOC>\n<DOC>\n<DOCNO>1</DOCNO>\n</DOC>\n",
            3,
            "DOCNO '1' appears twice (first at line 1)",
        ),
        (
            "<DOC>\n<DOCNO>1</DOCNO>\n<TEXT>\nnever closed\n</DOC>\n",
            5,
            "<TEXT> opened at line 3 is not closed before </DOC>",
        ),
        (
            "<DOC><DOCNO>1</DOCNO></DOC>\nstray words\n",
            2,
            "text outside <DOC>...</DOC>: 'stray words'",
        ),
        (
            "<DOC><DOCNO>1</DOCNO></DOC>\n<!-- to the end\n<DOC><DOCNO>2</DOCNO></DOC>\n",
            2,
            "a comment '<!--' is not closed by '-->'",
        ),
        (
            "<!-- one\n--> <!-- two\n<DOC><DOCNO>2</DOCNO></DOC>\n",
            2,
            "a comment '<!--' is not closed by '-->'",
        ),
        (
            "<DOC><DOCNO>1</DOCNO><TEXT><![CDATA[a\nb</TEXT></DOC>\n",
            1,
            "a CDATA section '<![CDATA[' is not closed by ']]>'",
        ),
    ],
    ids=[
        "nested",
        "unclosed",
        "close-without-open",
        "no-docno",
        "two-docnos",
        "empty-docno",
        "docno-with-space",
        "duplicate-docno",
        "text-unclosed",
        "text-outside",
        "comment-unclosed",
        "comment-reopened",
        "cdata-unclosed",
    ],
)
def test_trec_documents_malformed(tmp_path: Path, content: str, line: int, reason: str) -> None:
    path = write(tmp_path / "docs.sgml", content)
    fails(lambda: read_documents(path, "trec"), path, line, reason)


def test_what_a_comment_holds_is_not_read(tmp_path: Path) -> None:
    """Tags and text inside a comment were read as the document's: "<!-- <TEXT>old</TEXT> -->"
    added "old" to its text, over one line or several."""
    path = write(
        tmp_path / "docs.sgml",
        "<DOC><DOCNO>1</DOCNO><!-- <TEXT>old</TEXT> --><TEXT>new</TEXT></DOC>\n"
        "<DOC>\n<DOCNO>2</DOCNO>\n<TEXT>kept <!-- a\n<TEXT>old</TEXT>\n--> too</TEXT>\n"
        "<!-- <DOC><DOCNO>3</DOCNO></DOC> -->\n</DOC>\n"
        "<!-- PJG FTAG 4700 --><DOC><DOCNO>4</DOCNO><TEXT>a <![CDATA[x < y]]> b</TEXT></DOC>\n",
    )
    corpus = read_documents(path, "trec")
    assert list(corpus.doc_ids) == ["1", "2", "4"]
    assert [corpus[d].text for d in ("1", "2", "4")] == ["new", "kept\ntoo", "a x < y b"]


def test_a_cdata_section_is_text_over_any_number_of_lines(tmp_path: Path) -> None:
    """A CDATA section over several lines was read as markup: '<b>' a tag, '&amp;' an entity."""
    path = write(
        tmp_path / "docs.sgml",
        "<DOC><DOCNO>1</DOCNO><TEXT>before <![CDATA[x < y &amp;\n<b>bold</b>\n]]> after"
        "</TEXT></DOC>\n",
    )
    assert read_documents(path, "trec")["1"].text == "before x < y &amp;\n<b>bold</b>\nafter"


def test_trec_documents_none_in_file(tmp_path: Path) -> None:
    path = write(tmp_path / "docs.sgml", "<DOCS>\n</DOCS>\n")
    fails(lambda: read_documents(path, "trec"), path, None, "no <DOC> elements in this file")


# --- TREC topics ------------------------------------------------------------------------------

TOPICS = """\
<top>
<num> Number: 301
<title> International Organized Crime

<desc> Description:
Identify organizations that participate in international
criminal activity.

<narr> Narrative:
A relevant document must as a minimum identify the organization.
</top>

<TOP>
<num> Number: 051 </num>
<dom> Domain: International Economics
<title> Topic: Airbus &amp; Subsidies
<desc> Description: Government assistance to Airbus.
</TOP>
"""


def test_trec_topics_title_by_default(tmp_path: Path) -> None:
    queries = read_trec_topics(write(tmp_path / "topics.txt", TOPICS))
    assert list(queries.items()) == [
        ("301", "International Organized Crime"),
        ("051", "Airbus & Subsidies"),
    ]


def test_trec_topics_chosen_fields(tmp_path: Path) -> None:
    path = write(tmp_path / "topics.txt", TOPICS)
    queries = read_trec_topics(path, fields=["title", "desc"])
    assert queries["301"] == (
        "International Organized Crime Identify organizations that participate in "
        "international criminal activity."
    )
    assert read_trec_topics(path, fields=["desc"])["051"] == "Government assistance to Airbus."
    records = parse_trec_topics(path)
    assert records[0].fields["NARR"] == [
        "A relevant document must as a minimum identify the organization."
    ]
    assert records[1].fields["DOM"] == ["International Economics"]
    # 301 has no <dom>: asking for it names the topic and what it has.
    fails(
        lambda: read_trec_topics(path, fields=["dom"]),
        path,
        1,
        "query '301' has no text in its dom field (fields present: NUM, TITLE, DESC, NARR)",
    )


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        ("<top>\n<num> 1\n<top>\n<num> 2\n</top>\n", 3, "<top> inside the <top> opened at line 1"),
        ("<top>\n<num> 1\n<title> x\n", 1, "<top> is never closed"),
        ("</top>\n", 1, "</top> without an opening <top>"),
        ("<top>\n<title> no number\n</top>\n", 1, "topic without a <num>"),
        (
            "<top>\n<num> Number: 3 4\n<title> x\n</top>\n",
            1,
            "topic number '3 4' contains whitespace",
        ),
        (
            "<top><num> 7 <title> a </top>\n<top>\n<num> 7 <title> b\n</top>\n",
            2,
            "topic '7' appears twice (first at line 1)",
        ),
        (
            "<top>\n<num> 1\n<title> a\n<num> 2\n<title> b\n</top>\n",
            4,
            "second <num> in one topic (first at line 2); is a </top> missing?",
        ),
        ("<top><num> 1 <title> a </top>\nstray\n", 2, "text outside <top>...</top>: 'stray'"),
    ],
    ids=[
        "nested",
        "unclosed",
        "close-without-open",
        "no-num",
        "num-with-space",
        "duplicate-num",
        "field-twice",
        "text-outside",
    ],
)
def test_trec_topics_malformed(tmp_path: Path, content: str, line: int, reason: str) -> None:
    path = write(tmp_path / "topics.txt", content)
    fails(lambda: read_trec_topics(path), path, line, reason)


def test_trec_topics_empty_title_and_no_topics(tmp_path: Path) -> None:
    path = write(tmp_path / "topics.txt", "<top>\n<num> 9\n<title>\n<desc> d\n</top>\n")
    fails(lambda: read_trec_topics(path), path, 1, "query '9' has no text in its title field")
    empty = write(tmp_path / "empty.txt", "\n")
    fails(lambda: read_trec_topics(empty), empty, None, "no <top> topics in this file")


# --- qrels options ----------------------------------------------------------------------------


def test_qrels_pairs(tmp_path: Path) -> None:
    # CISI.REL / CACM qrels.text: 'query doc 0 0.000000' lists relevant pairs.
    path = write(tmp_path / "CISI.REL", "1 28 0 0.000000\n1 35\t0\t0.000000\n2 29 0 0.000000\n")
    assert read_qrels(path, columns="pairs").to_dict() == {"1": {"28": 1, "35": 1}, "2": {"29": 1}}
    bad = write(tmp_path / "bad.REL", "1 28\n7\n")
    fails(lambda: read_qrels(bad, columns="pairs"), bad, 2, "expected 'qid docno' (relevant pairs)")


def test_qrels_default_rule_misreads_pairs(tmp_path: Path) -> None:
    # Why the option exists: read as TREC, every pair becomes document '0' with grade 0.
    path = write(tmp_path / "CISI.REL", "1 28 0 0.000000\n2 29 0 0.000000\n")
    assert read_qrels(path).to_dict() == {"1": {"0": 0}, "2": {"0": 0}}


CRAN_GRADES: dict[int, int | None] = {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}


def test_qrels_grade_mapping(tmp_path: Path) -> None:
    path = write(tmp_path / "cranqrel", "1 184 2 \n1 29 1\n1 486 -1\n2 12 4\n")
    assert read_qrels(path, grades=CRAN_GRADES).to_dict() == {
        "1": {"184": 3, "29": 4, "486": 0},
        "2": {"12": 1},
    }
    dropped = read_qrels(path, grades={**CRAN_GRADES, -1: None})
    assert dropped.to_dict() == {"1": {"184": 3, "29": 4}, "2": {"12": 1}}
    fails(
        lambda: read_qrels(path, grades={1: 4, 2: 3, -1: 0}),
        path,
        4,
        "grade 4 has no entry in the grade mapping (it maps 1, 2, -1)",
    )
    fails(
        lambda: read_qrels(path, grades={1: None, 2: None, 4: None, -1: None}),
        path,
        None,
        "the grade mapping dropped every judgment of this file",
    )


def test_qrels_duplicate_is_found_before_a_drop(tmp_path: Path) -> None:
    path = write(tmp_path / "q", "1 5 -1\n1 5 2\n")
    fails(
        lambda: read_qrels(path, grades=CRAN_GRADES | {-1: None}),
        path,
        2,
        "document '5' is judged twice for query '1' (first at line 1)",
    )


def test_qrels_query_id_translation(tmp_path: Path) -> None:
    path = write(tmp_path / "q", "1 5 1\n3 6 1\n")
    names = {"1": "001", "2": "002"}

    def translate(token: str) -> str:
        if token not in names:
            raise LookupError(f"query {token} is not in the queries file")
        return names[token]

    fails(
        lambda: read_qrels(path, query_ids=translate), path, 2, "query 3 is not in the queries file"
    )
    names["3"] = "004"
    assert read_qrels(path, query_ids=translate).to_dict() == {"001": {"5": 1}, "004": {"6": 1}}


# --- dataset.json -----------------------------------------------------------------------------

SMART_QUERIES = ".I 001\n.W\nwing aerodynamics ?\n.I 004\n.W\nshear flow past a plate\n"
SMART_QRELS = "1 1 1\n1 2 4\n2 2 2\n2 3 -1\n"
MANIFEST: dict[str, Any] = {
    "format": "smart",
    "documents": "docs.all",
    "queries": "queries.qry",
    "qrels": {"test": "qrels.txt"},
    "query_ids": "ordinal",
    "grades": {"1": 4, "2": 3, "3": 2, "4": 1, "-1": 0},
}


def smart_folder(root: Path, manifest: dict[str, Any] | None = None, *, gz: bool = False) -> Path:
    suffix = ".gz" if gz else ""
    write(root / f"docs.all{suffix}", SMART_DOCS)
    write(root / f"queries.qry{suffix}", SMART_QUERIES)
    write(root / f"qrels.txt{suffix}", SMART_QRELS)
    write(root / "dataset.json", json.dumps(MANIFEST if manifest is None else manifest))
    return root


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_manifest_smart_folder(tmp_path: Path, gz: bool) -> None:
    dataset = load_dataset(smart_folder(tmp_path / "mini", gz=gz))
    assert dataset.name == "mini"
    assert list(dataset.corpus.doc_ids) == ["1", "2", "3"]
    # qrels query 2 is the second query of the file, '004'; codes run the other way.
    assert dataset.qrels.to_dict() == {"001": {"1": 4, "2": 1}, "004": {"2": 3, "3": 0}}
    assert list(dataset.queries.items()) == [
        ("001", "wing aerodynamics ?"),
        ("004", "shear flow past a plate"),
    ]
    assert available_splits(tmp_path / "mini") == ["test"]


@pytest.mark.parametrize(
    ("qrels", "codes", "example", "first"),
    [
        (SMART_QRELS, "1, 2, 4", '{"-1": -1, "1": 1, "2": 2, "4": 4}', {"1": 1, "2": 4}),
        ("1 1 3\n1 2 2\n", "2, 3", '{"2": 2, "3": 3}', {"1": 3, "2": 2}),  # no -1: a scale still
    ],
)
def test_a_smart_scale_must_be_declared(
    tmp_path: Path, qrels: str, codes: str, example: str, first: dict[str, int]
) -> None:
    # Cranfield's codes taken as grades rank a "minimal interest" document (4) above a
    # "complete answer" (1): nDCG computed on an inverted scale, silently.
    manifest = {key: value for key, value in MANIFEST.items() if key != "grades"}
    root = smart_folder(tmp_path, manifest)
    write(root / "qrels.txt", qrels)
    reason = fails(lambda: load_dataset(root), root / "qrels.txt", None, f"codes {codes}, and")
    assert f'dataset.json\'s "grades", e.g. {example} to take the codes as grades' in reason
    # The codes declared as they are, they load as written; relevant-or-not qrels need nothing.
    write(root / "dataset.json", json.dumps({**manifest, "grades": json.loads(example)}))
    assert load_dataset(root).qrels.to_dict()["001"] == first
    write(root / "dataset.json", json.dumps(manifest))
    write(root / "qrels.txt", "1 1 1\n1 2 0\n2 3 -1\n")
    assert load_dataset(root).qrels.to_dict()["001"] == {"1": 1, "2": 0}


def test_manifest_options(tmp_path: Path) -> None:
    manifest = {
        **MANIFEST,
        "name": "tiny-cranfield",
        "about": "free text for people",
        "title_fields": "A",
        "text_fields": ["t", "W"],
        "query_ids": "number",
        "qrels": {"test": "qrels.txt", "dev": "dev.txt"},
    }
    root = smart_folder(tmp_path, manifest)
    write(root / "qrels.txt", "1 1 1\n4 3 2\n")
    write(root / "dev.txt", "0004 2 1\n")
    dataset = load_dataset(root)
    assert dataset.name == "tiny-cranfield"
    assert dataset.corpus["1"].title == "brenckman,m."
    assert dataset.corpus["1"].text.startswith("experimental investigation of the\naerodynamics")
    assert dataset.qrels.to_dict() == {"001": {"1": 4}, "004": {"3": 3}}
    assert load_dataset(root, "dev").qrels.to_dict() == {"004": {"2": 4}}
    assert available_splits(root) == ["test", "dev"]


TREC_QRELS = "301 0 AP880212-0001 1\n301 0 FR-1 0\n51 0 LA010189-0001 2\n"


def test_manifest_trec_folder(tmp_path: Path) -> None:
    write(tmp_path / "disk" / "ap" / "ap1.gz", TREC_DOCS)
    write(tmp_path / "disk" / "fr" / "fr1", "<DOC><DOCNO>FR-2</DOCNO><TEXT>x</TEXT></DOC>\n")
    write(tmp_path / "topics.301", TOPICS)
    write(tmp_path / "qrels.301", TREC_QRELS)
    manifest = {
        "format": "trec",
        "documents": ["disk/*/*"],
        "queries": "topics.301",
        "qrels": {"test": "qrels.301"},
        "query_ids": "number",  # TREC-1 topics write 051, their qrels 51
        "query_fields": ["title", "desc"],
        "encoding": "latin-1",
    }
    write(tmp_path / "dataset.json", json.dumps(manifest))
    dataset = load_dataset(tmp_path)
    assert list(dataset.corpus.doc_ids) == ["AP880212-0001", "LA010189-0001", "FR-1", "FR-2"]
    assert dataset.qrels.to_dict() == {
        "301": {"AP880212-0001": 1, "FR-1": 0},
        "051": {"LA010189-0001": 2},
    }
    assert dataset.queries["051"] == "Airbus & Subsidies Government assistance to Airbus."


def test_manifest_absolute_paths(tmp_path: Path) -> None:
    # Licensed collections (the TREC disks) stay where they are; the manifest points at them.
    store = tmp_path / "elsewhere"
    smart_folder(store)
    manifest = {
        **MANIFEST,
        "documents": [str(store / "docs.*")],
        "queries": str(store / "queries.qry"),
        "qrels": {"test": str(store / "qrels.txt")},
    }
    write(tmp_path / "project" / "dataset.json", json.dumps(manifest))
    assert list(load_dataset(tmp_path / "project").corpus.doc_ids) == ["1", "2", "3"]


def test_manifest_pairs_qrels(tmp_path: Path) -> None:
    manifest = {**MANIFEST, "qrels_columns": "pairs", "query_ids": "id"}
    del manifest["grades"]
    root = smart_folder(tmp_path, manifest)
    write(root / "qrels.txt", "001 1 0 0.000000\n004 3 0 0.000000\n")
    assert load_dataset(root).qrels.to_dict() == {"001": {"1": 1}, "004": {"3": 1}}


def test_minus_one_as_zero_or_dropped_changes_only_judged_share(tmp_path: Path) -> None:
    root = smart_folder(tmp_path / "zero")
    kept = load_dataset(root)
    dropped = load_dataset(
        smart_folder(tmp_path / "drop", {**MANIFEST, "grades": {**MANIFEST["grades"], "-1": None}})
    )
    assert kept.qrels.num_judgments == dropped.qrels.num_judgments + 1
    run = {"001": {"2": 3.0, "3": 2.0, "1": 1.0}, "004": {"3": 3.0, "2": 2.0, "1": 1.0}}
    metrics = ["ndcg_at_2", "map", "mrr", "recall_at_2", "judged_at_2"]
    a, b = evaluate(kept.qrels, run, metrics), evaluate(dropped.qrels, run, metrics)
    assert {m: a.mean[m] for m in metrics[:-1]} == {m: b.mean[m] for m in metrics[:-1]}
    # 001's top 2 is {2: judged, 3: unjudged}; 004's is {3: the -1 document, 2: judged}.
    assert (a.mean["judged_at_2"], b.mean["judged_at_2"]) == (0.75, 0.5)


def manifest_case(edit: dict[str, Any], reason: str, *, drop: str | None = None) -> Any:
    return pytest.param(edit, reason, drop, id=reason[:40])


@pytest.mark.parametrize(
    ("edit", "reason", "drop"),
    [
        manifest_case({"colour": "blue"}, "unknown key 'colour'; the keys are format, documents"),
        manifest_case({}, "missing 'queries'", drop="queries"),
        manifest_case({"format": "xml"}, "'format': must be one of smart, trec, beir, got 'xml'"),
        manifest_case({"documents": "cran.all"}, "'documents': cran.all not found in"),
        manifest_case({"documents": []}, "'documents': must be a file name or a list of them"),
        manifest_case(
            {"documents": ["d/*.txt"]}, "'documents': the pattern d/*.txt matches no file"
        ),
        manifest_case({"documents": ["docs.all", "./docs.all"]}, "docs.all is listed twice (as"),
        manifest_case({"documents": ["docs.all", "docs.*"]}, "docs.all is listed twice (as"),
        manifest_case({"queries": 7}, "'queries': must be a file name, got 7"),
        manifest_case({"qrels": "qrels.txt"}, "'qrels' must be an object {split: file}"),
        manifest_case({"qrels": {}}, "'qrels' must be an object {split: file}"),
        manifest_case({"qrels": {"test": "nope"}}, "'qrels.test': nope not found in"),
        manifest_case({"query_ids": "position"}, "'query_ids': must be one of id, number, ordinal"),
        manifest_case({"qrels_columns": 3}, "'qrels_columns': must be one of auto, pairs, got 3"),
        manifest_case({"grades": {"one": 4}}, "'grades': code 'one' is not an integer"),
        # The same number twice: the later code replaced the earlier one's grade.
        manifest_case({"grades": {"3": 2, "03": 0}}, "'grades': codes '3' and '03' are the same"),
        manifest_case({"grades": {"-1": 0, " -1": 1}}, "codes '-1' and ' -1' are the same number"),
        manifest_case({"grades": {"1_0": 4}}, "'grades': code '1_0' is not an integer"),
        manifest_case(
            {"grades": {"1": 4.5}}, "'grades': the grade of code 1 must be an integer or null"
        ),
        manifest_case(
            {"grades": {"1": True}}, "'grades': the grade of code 1 must be an integer or null"
        ),
        manifest_case({"grades": []}, "'grades': must be an object {code: grade or null}"),
        manifest_case({"text_fields": []}, "'text_fields': must be a list of field names"),
        manifest_case(
            {"title_fields": ["t", "w"]}, "'text_fields': names W, which title_fields names too"
        ),
        manifest_case({"query_fields": [1]}, "'query_fields': must be a list of field names"),
        manifest_case({"encoding": "klingon"}, "'encoding': unknown text encoding 'klingon'"),
        manifest_case(
            {"encoding": "utf-16"}, "'encoding': utf-16 is not line-compatible with ASCII"
        ),
        manifest_case({"name": ""}, "'name': must be a non-empty string"),
        manifest_case({"encoding": "uu_codec"}, "'encoding': 'uu_codec' is not a text encoding"),
        manifest_case({"encoding": "bz2"}, "'encoding': 'bz2' is not a text encoding"),
    ],
)
def test_manifest_malformed(
    tmp_path: Path, edit: dict[str, Any], reason: str, drop: str | None
) -> None:
    manifest = {**MANIFEST, **edit}
    if drop:
        del manifest[drop]
    root = smart_folder(tmp_path, manifest)
    fails(lambda: load_dataset(root), root / "dataset.json", None, reason)


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        ('{"format": "smart",\n "documents": }', 2, "not valid JSON (Expecting value at column"),
        ('["format", "smart"]', None, "expected a JSON object, got list"),
        (b'{"name": "caf\xe9"}', 1, "not valid UTF-8 (byte 0xe9 at column 14)"),
        ('{"format": "smart", "name": "a", "format": "trec"}', None, "the key 'format' appears"),
        ("[" * 50_000 + "]" * 50_000, None, "cannot read this JSON"),
        ('{"provenance": {"n": ' + "9" * 5000 + "}}", None, "cannot read this JSON"),
    ],
    ids=["syntax", "not-an-object", "bad-utf8", "key-twice", "deep", "huge-integer"],
)
def test_manifest_not_json(
    tmp_path: Path, content: str | bytes, line: int | None, reason: str
) -> None:
    root = smart_folder(tmp_path)
    write(root / "dataset.json", content)
    fails(lambda: load_dataset(root), root / "dataset.json", line, reason)


def test_a_field_named_that_no_document_holds_is_an_error(tmp_path: Path) -> None:
    """A typo in a field name made every document's text (or title) empty, silently."""
    smart = write(tmp_path / "docs.all", SMART_DOCS)
    fails(
        lambda: read_documents(smart, "smart", text_fields=["X"]),
        smart,
        None,
        "no document holds .X (named as a text field); the documents hold .A, .B, .T, .W",
    )
    fails(
        lambda: read_documents(smart, "smart", title_fields=["T", "K"]),
        smart,
        None,
        "no document holds .K (named as a title field)",
    )
    trec = write(tmp_path / "ap.txt", TREC_DOCS)
    fails(
        lambda: read_documents(trec, "trec", title_fields=["HEAD", "TTL"]),
        trec,
        None,
        "no document holds <TTL> (named as a title field); of the fields named, the "
        "documents hold <HEAD>, <TEXT>",
    )
    fails(lambda: read_documents(trec, "trec", text_fields=["txt"]), trec, None, "holds <TXT>")


def test_the_default_fields_are_alternatives_but_some_text_must_be_there(tmp_path: Path) -> None:
    # MED has no titles; FR has none of the default title elements: both read as before.
    med = write(tmp_path / "med.all", ".I 1\n.W\ncorrelation of blood\n")
    assert read_documents(med, "smart")["1"].text == "correlation of blood"
    fr = write(tmp_path / "fr", "<DOC><DOCNO>FR-1</DOCNO><TEXT>rule</TEXT></DOC>\n")
    assert read_documents(fr, "trec")["FR-1"].title == ""
    # No document with any text element: every text would be empty.
    bare = write(tmp_path / "bare.all", ".I 1\n.T\nonly a title\n")
    fails(
        lambda: read_documents(bare, "smart"), bare, None, "no document holds .W (named as a text"
    )
    wsj = write(tmp_path / "wsj", "<DOC><DOCNO>W-1</DOCNO><LP>lead</LP></DOC>\n")
    fails(
        lambda: read_documents(wsj, "trec"), wsj, None, "no document holds <TEXT> (named as a text"
    )


def test_a_field_both_title_and_text_is_refused(tmp_path: Path) -> None:
    smart = write(tmp_path / "docs.all", SMART_DOCS)
    with pytest.raises(ConfigError, match=r"\.W is named both as a title field and as a text"):
        read_documents(smart, "smart", title_fields=["T", "w"])
    with pytest.raises(ConfigError, match="<TEXT> is named both as a title field and as a text"):
        read_documents(write(tmp_path / "ap.txt", TREC_DOCS), "trec", title_fields=["text"])


def test_a_query_field_no_query_holds_is_an_error(tmp_path: Path) -> None:
    topics = write(tmp_path / "topics.txt", TOPICS)
    fails(
        lambda: read_trec_topics(topics, fields=["title", "nrrative"]),
        topics,
        None,
        "no query has a nrrative field; the queries hold DESC, DOM, NARR, NUM, TITLE",
    )
    queries = write(tmp_path / "q.qry", SMART_QUERIES)
    fails(lambda: read_smart_queries(queries, fields=["W", "K"]), queries, None, "no query has a K")


def test_manifest_unknown_split(tmp_path: Path) -> None:
    root = smart_folder(tmp_path)
    fails(
        lambda: load_dataset(root, "dev"),
        root,
        None,
        "split 'dev' not found in dataset.json's 'qrels'; available splits: test",
    )


@pytest.mark.parametrize(
    ("scheme", "qrels", "line", "reason"),
    [
        (
            "ordinal",
            "1 1 1\n3 2 1\n",
            2,
            "query 3: queries.qry has 2 queries, and with query_ids = ordinal",
        ),
        ("ordinal", "1 1 1\n0 2 1\n", 2, "query 0: queries.qry has 2 queries"),
        ("ordinal", "first 1 1\n", 1, "query id 'first' is not a number (query_ids = ordinal)"),
        ("number", "1 1 1\n2 2 1\n", 2, "query 2 is not in queries.qry"),
        ("number", "x1 1 1\n", 1, "query id 'x1' is not a number (query_ids = number)"),
        ("number", "1_0 1 1\n", 1, "query id '1_0' is not a number (query_ids = number)"),
        ("ordinal", "\u0661 1 1\n", 1, "query id '\u0661' is not a number (query_ids = ordinal)"),
        ("id", "001 1 1\n1 2 1\n", 2, "query '1' is not in queries.qry (query_ids = id;"),
    ],
)
def test_manifest_query_ids_in_qrels(
    tmp_path: Path, scheme: str, qrels: str, line: int, reason: str
) -> None:
    root = smart_folder(tmp_path, {**MANIFEST, "query_ids": scheme})
    write(root / "qrels.txt", qrels)
    fails(lambda: load_dataset(root), root / "qrels.txt", line, reason)


@pytest.mark.parametrize(
    ("queries", "line", "reason"),
    [
        (".I 001\n.W\na\n.I 4b\n.W\nb\n", 4, "query id '4b' is not a number (query_ids = number)"),
        (".I 001\n.W\na\n.I 1\n.W\nb\n", 4, "query ids '001' and '1' are the same number"),
    ],
    ids=["not-a-number", "same-number"],
)
def test_manifest_number_scheme_in_queries(
    tmp_path: Path, queries: str, line: int, reason: str
) -> None:
    root = smart_folder(tmp_path, {**MANIFEST, "query_ids": "number"})
    write(root / "queries.qry", queries)
    fails(lambda: load_dataset(root), root / "queries.qry", line, reason)


def test_manifest_errors_in_the_named_files_keep_their_lines(tmp_path: Path) -> None:
    root = smart_folder(tmp_path)
    write(root / "docs.all", ".I 1\n.W\nx\n.I 1\n.W\ny\n")
    fails(lambda: load_dataset(root), root / "docs.all", 4, "document id '1' appears twice")
    root = smart_folder(tmp_path / "two")
    write(root / "qrels.txt", "1 1 1\n1 2 5\n")
    fails(
        lambda: load_dataset(root),
        root / "qrels.txt",
        2,
        "grade 5 has no entry in the grade mapping",
    )


def test_the_manifest_takes_precedence_over_beir_files(tmp_path: Path) -> None:
    root = smart_folder(tmp_path)
    write(root / "corpus.jsonl", '{"_id": "b1", "text": "beir"}\n')
    write(root / "queries.jsonl", '{"_id": "q", "text": "beir"}\n')
    write(root / "qrels" / "test.tsv", "q\tb1\t1\n")
    assert list(load_dataset(root).corpus.doc_ids) == ["1", "2", "3"]


def test_a_folder_without_a_layout_mentions_dataset_json(tmp_path: Path) -> None:
    fails(
        lambda: load_dataset(tmp_path), tmp_path, None, "or a dataset.json describing other files"
    )


def test_an_unknown_document_format_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "corpus.jsonl", '{"_id": "d1", "text": "x"}\n')
    with pytest.raises(ConfigError, match="document format 'beir' is not one of smart, trec"):
        read_documents(path, "beir")


def test_an_empty_list_of_title_fields_means_no_title(tmp_path: Path) -> None:
    # None takes the format's defaults; an empty list is a choice of none.
    corpus = read_documents(write(tmp_path / "docs.all", SMART_DOCS), "smart", title_fields=[])
    assert corpus["1"].title == ""
    assert read_documents(tmp_path / "docs.all", "smart")["1"].title != ""
