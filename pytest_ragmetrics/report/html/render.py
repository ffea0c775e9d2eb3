"""Drawing the page: the Jinja2 environment over the package's templates
(``pytest_ragmetrics/report/templates/*.html.j2``) and static files (``report/static/``).

Jinja2 is imported here only, when a page is drawn: importing the plugin or the CLI never
imports it. Autoescaping is on, and every value a template prints goes through
:func:`~pytest_ragmetrics.report.escaping.for_html` (the environment's ``finalize``): the
one escaping function of the HTML sink. Markup the templates build themselves (a macro's
output, a filter's) is already escaped; it only has what a page cannot hold replaced
(:func:`~pytest_ragmetrics.report.escaping.html_writable`, the first half of ``for_html``).

The style sheet and the script are inlined; the Content-Security-Policy admits exactly them,
by their sha256 computed from the files, and nothing else.

Templates are written for reading: a line break with the indentation around it is dropped
next to a tag (``>`` before it or ``<`` after it, or a Jinja block or comment), and is one
space elsewhere (inside a sentence), so the page carries no whitespace between elements.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.report.escaping import for_html, html_writable, unwritable
from pytest_ragmetrics.report.html.shown import fixed, signed

if TYPE_CHECKING:
    import jinja2

_PACKAGE = "pytest_ragmetrics.report"
_BREAK = re.compile(r"[ \t]*\n\s*")
_BEFORE = (">", "%}", "#}")
_AFTER = ("<", "{%", "{#")


@functools.cache
def static(name: str) -> str:
    """A static file of the page (``report/static/NAME``)."""
    return resources.files(_PACKAGE).joinpath("static", name).read_text(encoding="utf-8")


def csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy() -> str:
    """Nothing but the page's own style sheet and script."""
    return (
        f"default-src 'none'; style-src {csp_hash(static('report.css'))}; "
        f"script-src {csp_hash(static('report.js'))}; img-src 'none'; base-uri 'none'; "
        "form-action 'none'"
    )


def compact(source: str) -> str:
    """A template's source without the line breaks between tags (see the module docstring)."""

    def join(match: re.Match[str]) -> str:
        start, end = match.start(), match.end()
        if start == 0 or end == len(source):
            return ""
        if source.endswith(_BEFORE, 0, start) or source.startswith(_AFTER, end):
            return ""
        return " "

    return _BREAK.sub(join, source)


def finalizer() -> Callable[[Any], Any]:
    """The environment's ``finalize``: every printed value through ``for_html``."""
    from markupsafe import Markup

    escaped: dict[str, Markup] = {}  # the same words and numbers recur thousands of times

    def finalize(value: Any) -> Any:
        kind = type(value)
        if kind is int or kind is float:
            return value  # digits, '.', '-', '+', 'e', 'inf', 'nan': nothing to escape
        if kind is Markup:
            # Built by our templates from values that came through here (or our static
            # files): escaped already; what a page cannot hold, if any, still replaced.
            return value if unwritable(value) is None else Markup(html_writable(value))
        text = str(value)
        found = escaped.get(text)
        if found is None:
            found = Markup(for_html(text))
            if len(escaped) < 100_000:
                escaped[text] = found
        return found

    return finalize


@functools.cache
def environment() -> jinja2.Environment:
    import jinja2
    import jinja2.ext

    class Compact(jinja2.ext.Extension):
        def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
            return compact(source)

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(_PACKAGE, "templates"),
        autoescape=True,
        finalize=finalizer(),
        undefined=jinja2.StrictUndefined,
        extensions=[Compact],
        auto_reload=False,
    )
    env.filters.update(
        fixed=fixed,
        signed=signed,
        count=lambda n: f"{n:,}",
        g=lambda x: f"{x:g}",
        f1=lambda x: f"{x:.1f}",
    )
    return env


# The first line after the doctype of every page: how `ragmetrics` recognises a page it wrote,
# which its outputs may replace (outputs.py).
PAGE_MARKER = "<!-- an HTML report of pytest-ragmetrics -->"


def render(template: str, **context: Any) -> str:
    """The page drawn by ``template`` with ``context``, its style sheet, script and policy."""
    from markupsafe import Markup

    page = environment().get_template(template)
    return page.render(
        css=Markup(static("report.css")),  # ours, inlined as written (its hash is the policy's)
        js=Markup(static("report.js")),
        policy=content_security_policy(),
        marker=Markup(PAGE_MARKER),
        **context,
    )
