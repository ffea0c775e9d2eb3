"""Prompt templates and prompt folders.

A *template* is text with ``{field}`` placeholders that :meth:`str.format` fills in (the
generator's user message, the HTTP judge's questions); :func:`check_template` refuses, when the
template is accepted, everything that would otherwise fail inside ``.format()`` at the first
request or quietly send the wrong text: a missing or unknown field, a positional ``{}`` or
``{0}``, attribute or index access, a conversion or format spec, an unbalanced brace. A
*system prompt* is sent as written and is never formatted, so it needs no check.

A *prompt folder* holds one UTF-8 text file per role (:data:`GENERATOR_ROLES`,
:data:`JUDGE_ROLES`); :func:`read_prompts` reads and checks it. A missing file means the
built-in prompt of that role. The built-in prompts are such folders too, shipped with the
package (``default_prompts/judge/``, ``default_prompts/generator/``) and read the same way
(:func:`builtin_prompts`); :func:`prompt_set` lays what a user gives over them.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from pytest_ragmetrics.errors import ConfigError, RagMetricsError

BRACES = "to write a literal brace, double it: {{ or }}"
_FORMATTER = string.Formatter()


@dataclass(frozen=True)
class Role:
    """One prompt of a generator or judge: the file ``{name}.txt`` of a prompt folder and the
    constructor argument ``keyword`` it sets. A template has ``allowed`` fields, of which
    ``required`` must appear; a role without fields is a system prompt (sent verbatim)."""

    name: str
    keyword: str
    required: tuple[str, ...] = ()
    allowed: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        return f"{self.name}.txt"

    @property
    def is_template(self) -> bool:
        return bool(self.required or self.allowed)

    def check(self, template: object, what: str, error: type[RagMetricsError]) -> str:
        """:func:`check_template` with this role's fields."""
        return check_template(template, self.required, self.allowed, what, error=error)


GENERATOR_SYSTEM = Role("system", "system_prompt")
GENERATOR_USER = Role("user", "template", ("query", "contexts"), ("query", "contexts"))
GENERATOR_ROLES: tuple[Role, ...] = (GENERATOR_SYSTEM, GENERATOR_USER)

JUDGE_SYSTEM = Role("system", "system_prompt")
JUDGE_SUPPORT = Role("support", "support_template", ("claim", "context"), ("claim", "context"))
JUDGE_RELEVANCE = Role("relevance", "relevance_template", ("query", "answer"), ("query", "answer"))
# The agreement question may leave the question out; it must show the answer and reference.
JUDGE_AGREEMENT = Role(
    "agreement", "agreement_template", ("answer", "reference"), ("query", "answer", "reference")
)
# The context question is the relevance judge's (HttpRelevanceJudge's template and system
# prompt): is this passage relevant to this question?
JUDGE_CONTEXT = Role("context", "context_template", ("query", "passage"), ("query", "passage"))
JUDGE_CONTEXT_SYSTEM = Role("context_system", "context_system_prompt")
JUDGE_ROLES: tuple[Role, ...] = (
    JUDGE_SYSTEM,
    JUDGE_SUPPORT,
    JUDGE_RELEVANCE,
    JUDGE_AGREEMENT,
    JUDGE_CONTEXT,
    JUDGE_CONTEXT_SYSTEM,
)
# The built-in prompt folders, one per kind of user: "judge" (JUDGE_ROLES: the HTTP judge's, and
# the HTTP relevance judge's context and context_system) and "generator" (GENERATOR_ROLES).
BUILTIN_FOLDER = Path(__file__).parent / "default_prompts"
BUILTIN_ROLES: Mapping[str, tuple[Role, ...]] = MappingProxyType(
    {"judge": JUDGE_ROLES, "generator": GENERATOR_ROLES}
)


def _listed(fields: Sequence[str], conjunction: str = "and") -> str:
    shown = [f"{{{f}}}" for f in fields]
    if len(shown) <= 2:
        return f" {conjunction} ".join(shown)
    return ", ".join(shown[:-1]) + f" {conjunction} " + shown[-1]


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _fields(template: str, what: str, error: type[RagMetricsError]) -> Iterator[tuple[int, str]]:
    """(offset, raw text) of each ``{...}`` field of ``template``, as :meth:`str.format` reads
    them (nested braces belong to a field's format spec); an unbalanced brace is ``error``
    naming its line."""
    i, n = 0, len(template)
    while i < n:
        c = template[i]
        if c in "{}" and template[i + 1 : i + 2] == c:
            i += 2
            continue
        if c == "}":
            raise error(f"{what}, line {_line(template, i)}: a '}}' without its '{{'; {BRACES}")
        if c == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                if template[j] == "{":
                    depth += 1
                elif template[j] == "}":
                    depth -= 1
                j += 1
            if depth:
                raise error(
                    f"{what}, line {_line(template, i)}: a '{{' that is never closed; {BRACES}"
                )
            yield i, template[i:j]
            i = j
            continue
        i += 1


def check_template(
    template: object,
    required: Iterable[str],
    allowed: Iterable[str],
    what: str,
    *,
    error: type[RagMetricsError] = ConfigError,
) -> str:
    """``template`` if :meth:`str.format` can fill it with the ``allowed`` fields (the
    ``required`` ones always allowed) and it uses each ``required`` field; else ``error``
    whose message starts with ``what`` (e.g. the file), names the line and the field, and
    says how to write a literal brace.

    Refused: a missing required field, an unknown field (``{foo}``, also ``{"key": 1}`` meant
    as literal JSON), a positional ``{}`` or ``{0}``, attribute or index access
    (``{query.upper}``, ``{contexts[0]}``), a conversion (``{query!r}``) or format spec
    (``{query:>10}``), and an unbalanced ``{`` or ``}``.
    """
    if not isinstance(template, str):
        raise error(f"{what}: a template must be text, got {type(template).__name__}")
    needed = tuple(dict.fromkeys(required))
    fields = tuple(dict.fromkeys([*needed, *allowed]))
    listed = _listed(fields)
    seen: set[str] = set()
    for offset, raw in _fields(template, what, error):
        where = f"{what}, line {_line(template, offset)}"
        try:
            ((_, name, spec, conversion),) = _FORMATTER.parse(raw)
        except ValueError as exc:
            raise error(f"{where}: {raw} is not a field ({exc}); use {listed}; {BRACES}") from None
        name = name or ""
        base = re.split(r"[.\[]", name, maxsplit=1)[0]
        if name == "" or name.isdigit():
            problem = f"{raw} is a positional field; name a field: {_listed(fields, 'or')}"
        elif name not in fields and base in fields:
            problem = f"{raw} uses attribute or index access; write {{{base}}}"
        elif name not in fields:
            problem = f"unknown field {raw}; the fields are {listed}"
        elif conversion:
            problem = f"{raw} has a conversion (!{conversion}); write {{{name}}}"
        elif spec:
            problem = f"{raw} has a format spec (:{spec}); write {{{name}}}"
        else:
            seen.add(name)
            continue
        raise error(f"{where}: {problem}; {BRACES}")
    try:  # what .format() itself reads: the scan above is meant to find the same fields
        list(_FORMATTER.parse(template))
    except ValueError as exc:  # pragma: no cover - the scan raises first
        raise error(f"{what}: {exc}; {BRACES}") from None
    missing = [f for f in needed if f not in seen]
    if missing:
        doubled = [f"{{{{{f}}}}}" for f in missing if f"{{{{{f}}}}}" in template]
        note = f" ({doubled[0]} is literal text, not the field)" if doubled else ""
        raise error(
            f"{what}: the template lacks {_listed(missing)}{note}; it must contain "
            f"{_listed(needed)}"
        )
    return template


def read_prompts(
    folder: str | Path, roles: Sequence[Role], *, label: str | None = None
) -> dict[str, str]:
    """The prompts of ``folder``: role name -> text, for the roles whose file ``{name}.txt``
    is there (a missing file means the built-in prompt). Each file is UTF-8 text; one trailing
    newline is dropped and nothing else is changed; templates are checked
    (:func:`check_template`). A ConfigError names the file (``label`` names the folder in
    messages, default its path) for a missing folder, a ``.txt`` file that is no role's, an
    empty file, text that is not UTF-8, a bad template, or a folder with none of the files.
    Other files (a README, say) are ignored.
    """
    path = Path(folder)
    shown = label if label is not None else str(path)
    names = ", ".join(role.file for role in roles)
    if not path.is_dir():
        problem = "is not a folder" if path.exists() else "no such folder"
        raise ConfigError(f"{shown}: {problem}; give a folder holding prompt files ({names})")
    by_file = {role.file: role for role in roles}
    try:
        entries = sorted(path.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot list the folder ({exc.strerror or exc})") from None
    found: dict[str, str] = {}
    for entry in entries:
        if entry.suffix.lower() != ".txt":
            continue
        where = f"{shown.rstrip('/')}/{entry.name}"
        role = by_file.get(entry.name)
        if role is None:
            raise ConfigError(
                f"{where}: not a prompt file; the files are {names} (a missing file means "
                "the built-in prompt)"
            )
        found[role.name] = _read_prompt(entry, role, where)
    if not found:
        raise ConfigError(
            f"{shown}: holds none of the prompt files ({names}); add at least one, or leave "
            "the setting out to use the built-in prompts"
        )
    return found


def _read_prompt(path: Path, role: Role, where: str) -> str:
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise ConfigError(f"{where}: is a folder; a prompt is a text file") from None
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{where}, line {line}: not UTF-8 text (byte {exc.start}); save the file as UTF-8"
        ) from None
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    if not text.strip():
        raise ConfigError(
            f"{where}: is empty; write the prompt in it, or delete the file to use the built-in one"
        )
    if role.is_template:
        role.check(text, where, ConfigError)
    return text


def prompt_keywords(prompts: Mapping[str, str], roles: Sequence[Role]) -> dict[str, str]:
    """``prompts`` (role name -> text, as :func:`read_prompts` returns them) as the keyword
    arguments of the constructor the ``roles`` belong to; an unknown role is a ConfigError."""
    keyword = {role.name: role.keyword for role in roles}
    unknown = sorted(set(prompts) - set(keyword))
    if unknown:
        raise ConfigError(
            f"prompts: {', '.join(map(repr, unknown))} is not a role; the roles are "
            f"{', '.join(keyword)}"
        )
    return {keyword[name]: text for name, text in prompts.items()}


@functools.cache
def builtin_prompts(kind: str) -> Mapping[str, str]:
    """The built-in prompts of ``kind`` ("judge" or "generator"): role name -> text, read from
    the package's folder as :func:`read_prompts` reads a user's (once per process)."""
    folder = BUILTIN_FOLDER / kind
    found = read_prompts(folder, BUILTIN_ROLES[kind], label=f"built-in {kind} prompts")
    missing = [role.name for role in BUILTIN_ROLES[kind] if role.name not in found]
    if missing:  # pragma: no cover - a broken installation
        raise ConfigError(f"{folder}: the built-in prompts lack {', '.join(missing)}; reinstall")
    return MappingProxyType(found)


def prompt_set(
    kind: str,
    given: Mapping[str, str] | None,
    *,
    what: str,
    error: type[RagMetricsError] = ConfigError,
) -> dict[str, str]:
    """Every prompt of a ``kind`` user (role name -> text): ``given`` (as :func:`read_prompts`
    returns a folder's) over the built-in ones. An unknown role, a prompt that is not text or a
    template that :func:`check_template` refuses is ``error`` starting with ``what``."""
    roles = {role.name: role for role in BUILTIN_ROLES[kind]}
    texts = dict(builtin_prompts(kind))
    for name, text in (given or {}).items():
        role = roles.get(name)
        if role is None:
            raise error(
                f"{what}: prompts[{name!r}] is not a role; the roles are {', '.join(roles)}"
            )
        where = f"{what}: prompts[{name!r}]"
        if role.is_template:
            role.check(text, where, error)
        elif not isinstance(text, str):
            raise error(f"{where}: a prompt must be text, got {type(text).__name__}")
        texts[name] = text
    return texts


__all__ = [
    "BUILTIN_FOLDER",
    "GENERATOR_ROLES",
    "JUDGE_ROLES",
    "Role",
    "builtin_prompts",
    "check_template",
    "prompt_keywords",
    "prompt_set",
    "read_prompts",
]
