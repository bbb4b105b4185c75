"""The English and Korean editions side by side: each page links to its twin, Hangul renders offline.

* Every page of a language that has a twin in the other (``book/translations.yml``, the one list of
  translated pages) gets a link to it in the page header (the ``language-twin.html`` template in
  ``book/_templates``). The English site is ``_build/html/``, the Korean one ``_build/html/ko/``
  (``make book``; ``coursekit.i18n`` makes the Korean source), so a twin is the same page name one
  folder down or up.
* ``{translated-pages}`` lists the pages that exist in another language, with links to both versions
  (the intro uses it, so the list is never typed twice).
* NanumGothic (SIL Open Font License, from the pinned ``koreanize-matplotlib`` wheel) is written into
  ``_static/fonts/`` of every HTML build, as WOFF; ``custom.css`` gives it to Hangul only (``unicode-range``), so a
  browser without a Korean font shows Hangul, not boxes, and no page fetches a font from a network.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from coursekit.fonts import korean_font, write_web_font
from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective

SOURCE_LANGUAGE = "en"


def _translations(app: Sphinx) -> dict:
    path = Path(app.srcdir) / "book" / "translations.yml"
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _language(app: Sphinx) -> str:
    return app.config.language or SOURCE_LANGUAGE


def twins(app: Sphinx, pagename: str) -> list[dict]:
    """The other-language versions of ``pagename``: ``{"lang", "name", "href"}`` each (href relative to the page)."""
    up = "../" * pagename.count("/")
    language = _language(app)
    if language != SOURCE_LANGUAGE:
        return [{"lang": SOURCE_LANGUAGE, "name": "English", "href": f"../{up}{pagename}.html"}]
    found = []
    for lang, entry in _translations(app).items():
        if pagename in [*(entry.get("translated") or []), *(entry.get("partial") or [])]:
            found.append({"lang": lang, "name": entry.get("name", lang), "href": f"{up}{lang}/{pagename}.html"})
    return found


def _context(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    context["language_twins"] = twins(app, pagename)


class TranslatedPages(SphinxDirective):
    """A list of the pages that exist in another language: each page's title, linked, and its twins."""

    def run(self) -> list[nodes.Node]:
        items = nodes.bullet_list()
        language = _language(self.env.app)
        for lang, entry in _translations(self.env.app).items():
            pages = [*(entry.get("translated") or []), *(entry.get("partial") or [])]
            for docname in pages:
                paragraph = nodes.paragraph()
                xref = pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{docname}",
                                    refexplicit=False, refdoc=self.env.docname)
                xref += nodes.literal(docname, docname)
                paragraph += xref
                up = "../" * self.env.docname.count("/")
                href = f"{up}{lang}/{docname}.html" if language == SOURCE_LANGUAGE else f"../{up}{docname}.html"
                label = entry.get("name", lang) if language == SOURCE_LANGUAGE else "English"
                paragraph += nodes.Text(" · ")
                paragraph += nodes.reference("", label, refuri=href)
                if docname in (entry.get("partial") or []):
                    paragraph += nodes.Text(" (partly)" if language == SOURCE_LANGUAGE else " (일부)")
                items += nodes.list_item("", paragraph)
        return [items]


def _copy_fonts(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "fonts"
    write_web_font(target / "NanumGothic.woff")
    write_web_font(target / "NanumGothicBold.woff", bold=True)


def setup(app: Sphinx) -> dict:
    try:
        korean_font()   # fail early, naming the package, if the font is missing
    except ValueError as err:
        raise ExtensionError(f"language_twins: {err}") from None
    # early: the theme drops header templates that render empty, so the twins must be known by then
    app.connect("html-page-context", _context, priority=100)
    app.connect("build-finished", _copy_fonts)
    app.add_directive("translated-pages", TranslatedPages)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
