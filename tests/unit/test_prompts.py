"""Prompt templates and folders (prompts.py): check_template refuses, where a template is
accepted, what would fail inside .format() at the first request; read_prompts reads a folder of
prompt files; every class that takes a template checks it when it is built."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.errors import ConfigError, GeneratorError, JudgeError
from pytest_ragmetrics.generation import ChatGenerator
from pytest_ragmetrics.judges import HttpJudge, HttpRelevanceJudge, RelevancePair
from pytest_ragmetrics.prompts import (
    BUILTIN_FOLDER,
    GENERATOR_ROLES,
    JUDGE_ROLES,
    builtin_prompts,
    check_template,
    prompt_keywords,
    read_prompts,
)
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.fake_openai import serve

FIELDS = ("query", "contexts")
BRACES = "to write a literal brace, double it: {{ or }}"
NOWHERE = Endpoint("http://127.0.0.1:9", "m")  # never contacted: the templates are refused first


def refused(template: str) -> str:
    with pytest.raises(ConfigError) as info:
        check_template(template, FIELDS, FIELDS, "user.txt")
    return str(info.value)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{query}", "user.txt: the template lacks {contexts}; it must contain {query} and "
         "{contexts}"),
        ("{query} {contexts} {foo}", "user.txt, line 1: unknown field {foo}; the fields are "
         "{query} and {contexts}; " + BRACES),
        ("{query} {contexts}\nReply as JSON: {\"answer\": \"yes\"}",
         "user.txt, line 2: unknown field {\"answer\": \"yes\"}; the fields are"),
        ("{query} {contexts} {}", "user.txt, line 1: {} is a positional field; name a field: "
         "{query} or {contexts}; " + BRACES),
        ("{query} {0} {contexts}", "line 1: {0} is a positional field"),
        ("{query!r} {contexts}", "line 1: {query!r} has a conversion (!r); write {query}"),
        ("{query} {contexts:>20}", "{contexts:>20} has a format spec (:>20); write {contexts}"),
        ("{query.upper} {contexts}", "{query.upper} uses attribute or index access; write "
         "{query}"),
        ("{query} {contexts[0]}", "{contexts[0]} uses attribute or index access"),
        ("{query}\n{contexts}\n\nAnswer}", "user.txt, line 4: a '}' without its '{'; " + BRACES),
        ("{query}\n{contexts} {oops", "user.txt, line 2: a '{' that is never closed; " + BRACES),
        ("{query} {contexts} {x!}", "line 1: {x!} is not a field (unmatched '{' in format "
         "spec)"),
        ("{{query}} {contexts}", "the template lacks {query} ({{query}} is literal text, not "
         "the field)"),
    ],
)  # fmt: skip
def test_check_template_refuses_what_format_would_trip_on(template: str, message: str) -> None:
    assert message in refused(template)


def test_check_template_accepts_literal_braces_and_returns_the_template() -> None:
    template = 'Q: {query}\n{contexts}\nReply {{"answer": "yes"}} or {{"answer": "no"}}'
    assert check_template(template, FIELDS, FIELDS, "t") == template
    assert template.format(query="q", contexts="c").endswith('{"answer": "no"}')
    # optional fields: allowed but not required
    assert check_template("{answer} {reference}", ("answer", "reference"), ("query",), "t")
    with pytest.raises(JudgeError, match=r"^t: a template must be text, got int"):
        check_template(3, FIELDS, FIELDS, "t", error=JudgeError)


# -- the classes that take a template -----------------------------------------------------------


def generator(template: str) -> Any:
    return ChatGenerator(NOWHERE, prompts={"user": template})


def judge_with(role: str) -> Callable[[str], Any]:
    return lambda template: HttpJudge(NOWHERE, prompts={role: template})


@pytest.mark.parametrize(
    ("build", "template", "error", "message"),
    [
        (generator, "{query} {contexts} {foo}", GeneratorError,
         "generator: prompts['user'], line 1: unknown field {foo}; the fields are {query} and "
         "{contexts}"),
        (generator, "{query}", GeneratorError, "generator: prompts['user']: the template lacks "
         "{contexts}"),
        (judge_with("support"), "{claim} {context} }", JudgeError,
         "HTTP judge: prompts['support'], line 1: a '}' without its '{'"),
        (judge_with("relevance"), "{query} {answer} {reference}", JudgeError,
         "HTTP judge: prompts['relevance'], line 1: unknown field {reference}; the fields are "
         "{query} and {answer}"),
        (judge_with("agreement"), "{query} {answer} {referense}", JudgeError,
         "HTTP judge: prompts['agreement'], line 1: unknown field {referense}; the fields are "
         "{answer}, {reference} and {query}"),
        (judge_with("agreement"), "{query} {answer}", JudgeError,
         "HTTP judge: prompts['agreement']: the template lacks {reference}"),
        (judge_with("context"), "{query}\n{passage!s}", JudgeError,
         "HTTP judge: prompts['context'], line 2: {passage!s} has a conversion"),
        (lambda t: HttpRelevanceJudge(NOWHERE, prompts={"context": t}), "{query} {passage} {0}",
         JudgeError, "HTTP relevance judge: prompts['context'], line 1: {0} is a positional "
         "field"),
        (judge_with("system"), 3, JudgeError, "HTTP judge: prompts['system']: a prompt must be "
         "text, got int"),
    ],
)  # fmt: skip
def test_every_template_is_checked_when_it_is_accepted(
    build: Callable[[Any], Any], template: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        build(template)
    assert message in str(info.value)


def test_system_prompts_are_sent_verbatim_never_formatted() -> None:
    braces = 'Reply {yes} or {no}, as JSON {"v": 1}; {} {0} }'
    with serve() as server:
        endpoint = Endpoint(server.url, "m", backoff=0)
        generated = ChatGenerator(endpoint, prompts={"system": braces})
        generated.generate("q", ["c"])
        judge = HttpJudge(endpoint, prompts={"system": braces, "context_system": braces + "!"})
        judge.judge_agreement([("q", "a", "r")])
        judge.judge_contexts([("q", ["passage"])])
        relevance = HttpRelevanceJudge(endpoint, prompts={"context_system": braces + "?"})
        relevance.judge_relevance([RelevancePair("q", "p")])
        judge.assess("q", "An answer.", ["c"])
    systems = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert systems[:4] == [braces, braces, braces + "!", braces + "?"]
    assert set(systems[4:]) == {braces}


# -- prompt folders -----------------------------------------------------------------------------


def folder(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    root = tmp_path / "prompts"
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        (root / name).write_bytes(data)
    return root


def test_read_prompts_reads_each_role_and_drops_one_trailing_newline(tmp_path: Path) -> None:
    root = folder(
        tmp_path,
        {
            "system.txt": "  Be brief.  \n\n",
            "user.txt": "Q: {query}\r\n{contexts}\r\n",
            "README.md": "not a prompt",
            "notes.TXT.bak": "ignored too",
        },
    )
    found = read_prompts(root, GENERATOR_ROLES)
    # one newline dropped, nothing else changed
    assert found == {"system": "  Be brief.  \n", "user": "Q: {query}\r\n{contexts}"}
    assert prompt_keywords(found, GENERATOR_ROLES) == {
        "system_prompt": "  Be brief.  \n",
        "template": "Q: {query}\r\n{contexts}",
    }
    only = read_prompts(folder(tmp_path / "j", {"agreement.txt": "{answer} vs {reference}"}),
                        JUDGE_ROLES)  # fmt: skip
    assert only == {"agreement": "{answer} vs {reference}"}  # the other roles: built-in


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"user.txt": "{query} {contexts}", "usr.txt": "x"},
         "P/usr.txt: not a prompt file; the files are system.txt, user.txt (a missing file "
         "means the built-in prompt)"),
        ({"User.txt": "{query} {contexts}"}, "P/User.txt: not a prompt file"),
        ({"system.txt": "\n"}, "P/system.txt: is empty; write the prompt in it, or delete the "
         "file to use the built-in one"),
        ({"system.txt": "  \n \n"}, "P/system.txt: is empty"),
        ({"user.txt": "{query}\n{contexts}\n{foo}\n"},
         "P/user.txt, line 3: unknown field {foo}; the fields are {query} and {contexts}; "
         + BRACES),
        ({"user.txt": "{query}\n\n{contexts} {\n"}, "P/user.txt, line 3: a '{' that is never "
         "closed"),
        ({"user.txt": "{contexts}"}, "P/user.txt: the template lacks {query}"),
        ({"system.txt": b"fine\nbad \xff byte"}, "P/system.txt, line 2: not UTF-8 text (byte "
         "9); save the file as UTF-8"),
        ({"README.md": "x"}, "P: holds none of the prompt files (system.txt, user.txt); add at "
         "least one, or leave the setting out to use the built-in prompts"),
    ],
)  # fmt: skip
def test_read_prompts_errors_name_the_file(
    tmp_path: Path, files: dict[str, bytes | str], message: str
) -> None:
    root = folder(tmp_path, files)
    with pytest.raises(ConfigError) as info:
        read_prompts(root, GENERATOR_ROLES, label="P")
    assert str(info.value) == message or message in str(info.value)


def test_read_prompts_folder_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nowhere: no such folder; give a folder holding "
                       r"prompt files \(system.txt, user.txt\)"):  # fmt: skip
        read_prompts(tmp_path / "nowhere", GENERATOR_ROLES, label="nowhere")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="file: is not a folder"):
        read_prompts(tmp_path / "file", GENERATOR_ROLES, label="file")
    root = folder(tmp_path, {})
    (root / "support.txt").mkdir()
    with pytest.raises(ConfigError, match=r"support\.txt: is a folder; a prompt is a text file"):
        read_prompts(root, JUDGE_ROLES)
    with pytest.raises(ConfigError, match="'user' is not a role"):
        prompt_keywords({"user": "x"}, JUDGE_ROLES)


# -- the built-in prompts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "roles"), [("judge", JUDGE_ROLES), ("generator", GENERATOR_ROLES)]
)
def test_the_built_in_prompts_are_a_prompt_folder_read_like_a_users(
    kind: str, roles: tuple[Any, ...]
) -> None:
    folder = BUILTIN_FOLDER / kind
    # Every role has its file, and the folder reads as a user's --prompts folder does.
    assert sorted(p.name for p in folder.iterdir()) == sorted(role.file for role in roles)
    assert builtin_prompts(kind) == read_prompts(folder, roles)
    for path in folder.iterdir():  # one trailing newline, LF only: the text is the identity
        data = path.read_bytes()
        assert data.endswith(b"\n") and not data.endswith(b"\n\n") and b"\r" not in data


def test_a_copy_of_the_built_in_folder_gives_the_same_identities() -> None:
    judge = HttpJudge(NOWHERE, prompts=read_prompts(BUILTIN_FOLDER / "judge", JUDGE_ROLES))
    assert judge.identity() == HttpJudge(NOWHERE).identity()
    assert judge.context_judge.identity() == HttpRelevanceJudge(NOWHERE).identity()
    generator = ChatGenerator(
        NOWHERE, prompts=read_prompts(BUILTIN_FOLDER / "generator", GENERATOR_ROLES)
    )
    assert generator.identity() == ChatGenerator(NOWHERE).identity()


def test_a_prompt_given_replaces_only_its_role() -> None:
    judge = HttpJudge(NOWHERE, prompts={"agreement": "{answer} vs {reference}"})
    defaults = builtin_prompts("judge")
    assert judge.prompts == {**defaults, "agreement": "{answer} vs {reference}"}
    assert judge.identity() == HttpJudge(NOWHERE).identity()  # agreement is not in the rubric
    assert judge.question_identity("agreement") != HttpJudge(NOWHERE).question_identity("agreement")
