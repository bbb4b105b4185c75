"""Slides (``make slides``): cells chosen by slide metadata, MyST flattened, decks that work offline.

The browser part opens a deck from the file system in headless Chromium with every non-file
request aborted; it is skipped without Chromium unless REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from coursekit.slides import export_deck, glue_values, main, myst_to_markdown, slide_cells, write_slides

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_FILES = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
CHROMIUM = Path("/usr/bin/chromium")


def _kinds(nb):
    return [c.metadata["slideshow"]["slide_type"] for c in nb.cells]


def _md(src, kind=None, tags=None):
    cell = nbformat.v4.new_markdown_cell(src)
    if kind:
        cell.metadata["slideshow"] = {"slide_type": kind}
    if tags:
        cell.metadata["tags"] = tags
    return cell


def _code(src, kind=None, figure=False, outputs=()):
    cell = nbformat.v4.new_code_cell(src)
    cell.outputs = list(outputs)
    if kind:
        cell.metadata["slideshow"] = {"slide_type": kind}
    if figure:
        cell.metadata["mystnb"] = {"figure": {"name": "fig-x", "caption": "c"}, "image": {"alt": "a"}}
    return cell


def test_tagged_cells_only():
    nb = nbformat.v4.new_notebook(cells=[_md("# 1. T", "slide"), _md("prose"), _code("x = 1", "fragment"),
                                         _md("notes", "notes")])
    assert _kinds(slide_cells(nb)) == ["slide", "skip", "fragment", "notes"]
    assert "slideshow" not in nb.cells[1].metadata        # the input notebook is not modified


def test_outline_when_nothing_is_tagged():
    long_par = "word " * 80
    nb = nbformat.v4.new_notebook(cells=[
        _md("# 1. Title\n\nIntro."), _md("Plain prose."), _code("setup()"),
        _md(f"Lead-in.\n\n## 1.1 Section\n\n{long_par}\n\nSecond paragraph."), _code("plot()", figure=True)])
    deck = slide_cells(nb)
    assert _kinds(deck) == ["slide", "skip", "skip", "slide", "subslide"]
    assert deck.cells[3].source.startswith("## 1.1 Section") and "Second paragraph" not in deck.cells[3].source
    assert "remove-input" in deck.cells[4].metadata["tags"]


def test_unknown_slide_type_is_named():
    nb = nbformat.v4.new_notebook(cells=[_md("# 1. T", "slides")])
    with pytest.raises(ValueError, match="cell 0 has slide_type 'slides'"):
        slide_cells(nb, "demo.ipynb")


def test_myst_is_flattened():
    text = ("(sec-x)=\n## 1.1 Title\n\nAccuracy {glue:}`acc`%, ratio {glue:text}`ratio`, "
            "{cite}`vaswani2017attention,bahdanau2015neural`, a {term}`query`, {term}`keys <key>`, "
            "{doc}`the setup <../book/setup>`, {prf:ref}`thm-x`.\n\n"
            "```{admonition} Learning objectives\n:class: tip\nAfter this chapter\n```\n\n"
            "```{exercise}\n:label: ex-a\n\nDo $x^2$.\n```")
    out = myst_to_markdown(text, {"acc": "97.5", "ratio": "1.2e-05"},
                           {"vaswani2017attention": "Vaswani et al. 2017"})
    assert "(sec-x)=" not in out and "{" not in out.replace("$x^2$", "")
    for piece in ("Accuracy 97.5%", "ratio 1.2e-05", "(Vaswani et al. 2017; bahdanau2015neural)", "a query",
                  "keys,", "the setup,", "thm-x.", "**Learning objectives**\n\nAfter this chapter",
                  "**Exercise**\n\nDo $x^2$."):
        assert piece in out, piece


def test_glue_values_read_from_outputs():
    out = nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": "'12.5%'"},
                                 metadata={"scrapbook": {"mime_prefix": "application/papermill.record/",
                                                         "name": "share"}})
    nb = nbformat.v4.new_notebook(cells=[_code("glue('share', '12.5%')", outputs=[out])])
    assert glue_values(nb) == {"share": "12.5%"}


def test_deck_has_only_local_assets(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[_md("# 9. Demo\n\n$x^2$ and {glue:}`g`", "slide"),
                                         _code("print(1)", "subslide"), _md("UNTAGGED-PROSE")])
    html = export_deck(nb, "demo")
    assert "UNTAGGED-PROSE" not in html
    refs = re.findall(r'<(?:script|link|img)[^>]*(?:src|href)="([^"]+)"', html)
    assert refs and all(not re.match(r"[a-z]+://|//", r) for r in refs), refs
    assert {"mathjax/tex-svg-full.js", "reveal.js/dist/reveal.js", "reveal.js/dist/reveal.css"} <= set(refs)


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    write_slides(ROOT / "chapters", out, ROOT / "book" / "references.bib")
    return out


@pytest.mark.parametrize("path", CHAPTER_FILES, ids=lambda p: p.stem)
def test_every_chapter_has_a_deck_whose_assets_exist(path, decks):
    html = (decks / f"{path.stem}.slides.html").read_text(encoding="utf-8")
    refs = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html)
    for ref in refs:
        assert not re.match(r"[a-z]+://|//", ref), f"{path.stem}: {ref} is not local"
        assert (decks / ref).is_file(), f"{path.stem}: {ref} is missing from the slides folder"
    assert html.count("<section") > 2
    assert "{glue" not in html and "{cite}" not in html and "{term}" not in html


def test_main_reports_errors(tmp_path, capsys):
    assert main(["--chapters", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    assert "no notebooks" in capsys.readouterr().err


def test_deck_runs_offline_in_a_browser(decks):
    if not CHROMIUM.exists():
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"Chromium not found at {CHROMIUM} and REQUIRE_BROWSER=1")
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    deck = decks / f"{CHAPTER_FILES[0].stem}.slides.html"
    external, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page()

            def route(r):
                if r.request.url.startswith("file://"):
                    return r.continue_()
                external.append(r.request.url)
                return r.abort()

            page.route("**/*", route)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(deck.as_uri())
            page.wait_for_selector(".reveal.ready", timeout=30_000)
            page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
            page.evaluate("MathJax.startup.promise")
            slides = page.evaluate("Reveal.getTotalSlides()")
            typeset = page.evaluate("document.querySelectorAll('mjx-container').length")
        finally:
            browser.close()
    assert not external, f"the deck tried to reach the network: {external}"
    assert not errors, errors
    assert slides > 2 and typeset > 0
