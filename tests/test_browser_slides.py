"""Every lesson's slide deck, English and Korean, in headless Chromium, slide by slide, with the network cut off.

The decks are built here, from the chapters as they are, into _build/slides/ (the folder
``make slides`` writes; the Korean decks, from the Korean lessons coursekit.i18n makes, into
_build/slides/ko/), so the test never looks at stale decks. Each deck is served on
127.0.0.1 and every request that would leave the machine is aborted. The test steps through
every slide and fails on:

* text that overflows: a slide whose content is taller or wider than the slide (the deck's
  1280 x 720 viewport, which reveal.js scales to the window);
* a missing image: an ``<img>`` that did not load (``naturalWidth`` 0), figures and SVG diagrams alike;
* a console error, an uncaught exception, a failed or an off-machine request;
* raw TeX left on a slide (MathJax did not typeset it) or a slide without speaker notes;
* for a Korean deck: a deck not marked Korean, a title slide without Hangul, or Hangul not drawn with
  the font the decks ship (a machine without a Korean font would show boxes).

A screenshot of each slide lands in _build/slides/screenshots/<deck>/<n>.png (n from 1).
"""

from __future__ import annotations

import base64
import re
import shutil
from pathlib import Path

import pytest
from browser_support import ROOT, Watch, require_browser, serve

sync_playwright = require_browser()

from coursekit.i18n import build_tree, translations  # noqa: E402
from coursekit.lessons import lesson_notebooks  # noqa: E402
from coursekit.slides import HEIGHT, WIDTH, Slide, _copy_assets, render_deck, write_slides  # noqa: E402

OUT = ROOT / "_build" / "slides"
SHOTS = OUT / "screenshots"
CHAPTERS = lesson_notebooks(ROOT / "chapters")           # a deck per lesson; evidence notebooks have none
KOREAN = [c for c in CHAPTERS if f"chapters/{c.stem}" in translations(ROOT)["translated"]]
DECKS = [("", c) for c in CHAPTERS] + [("ko/", c) for c in KOREAN]

_MEASURE = """() => {
  const slide = Reveal.getCurrentSlide();
  const imgs = [...slide.querySelectorAll('img')];
  const raw = [...slide.querySelectorAll('p, li, h1, h2, span')]
      .filter(e => e.children.length === 0 && /\\$[^$]+\\$/.test(e.textContent)).map(e => e.textContent);
  return {height: slide.scrollHeight, width: slide.scrollWidth,
          broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.alt),
          images: imgs.length, raw: raw,
          notes: (slide.querySelector('aside.notes') || {textContent: ''}).textContent.trim().length,
          title: (slide.querySelector('h1, h2') || {textContent: ''}).textContent};
}"""


@pytest.fixture(scope="module")
def served():
    """_build/slides/ with the local reveal.js and MathJax, served; the decks are written by ``decks``."""
    if SHOTS.exists():
        shutil.rmtree(SHOTS)
    _copy_assets(OUT)
    with serve(OUT) as url:
        yield url


@pytest.fixture(scope="module")
def decks(served):
    write_slides(ROOT / "chapters", OUT, ROOT / "book" / "references.bib")
    tree = ROOT / "_build" / "ko"
    problems = build_tree(ROOT, tree)
    assert not problems, "\n".join(problems)
    write_slides(tree / "chapters", OUT / "ko", ROOT / "book" / "references.bib")
    return served


def step_through(page, url: str, shots) -> tuple[int, list[str]]:
    """Open a deck, visit every slide (all fragments shown), screenshot it; the slides and the problems."""
    page.goto(url)
    page.wait_for_selector(".reveal.ready")
    page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("async () => { await MathJax.startup.promise; }")
    page.evaluate("Reveal.layout()")
    total = page.evaluate("Reveal.getTotalSlides()")
    shots.mkdir(parents=True, exist_ok=True)
    deck, problems = url.rsplit("/", 1)[-1], []
    page.evaluate("Reveal.slide(0)")
    for n in range(1, total + 1):
        page.evaluate("() => { while (Reveal.availableFragments().next) Reveal.nextFragment(); }")
        page.wait_for_timeout(50)
        m = page.evaluate(_MEASURE)
        page.screenshot(path=str(shots / f"{n}.png"))
        where = f"{deck} slide {n} ({m['title'][:60]!r})"
        if m["height"] > HEIGHT or m["width"] > WIDTH:
            problems.append(f"{where}: content {m['width']} x {m['height']} overflows the "
                            f"{WIDTH} x {HEIGHT} slide")
        if m["broken"]:
            problems.append(f"{where}: image(s) did not load: {m['broken']}")
        if m["raw"]:
            problems.append(f"{where}: raw TeX left: {m['raw']}")
        if n > 1 and not m["notes"]:
            problems.append(f"{where}: no speaker notes")
        if n < total:
            page.evaluate("Reveal.next()")
            page.wait_for_function(f"Reveal.getIndices().h >= {n}")
    return total, problems


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield page
    context.close()


@pytest.mark.parametrize(("language", "chapter"), DECKS, ids=lambda v: v.stem if isinstance(v, Path) else v or "en")
def test_every_slide_fits_loads_and_has_notes(language, chapter, decks, page):
    watch = Watch(page, decks)
    shots = SHOTS / f"{language}{chapter.stem}"
    total, problems = step_through(page, decks + f"{language}{chapter.stem}.slides.html", shots)
    assert total >= 8, f"{chapter.stem}: only {total} slides; has the chapter lost its slide metadata?"
    assert len(list(shots.glob("*.png"))) == total
    if language:
        page.evaluate("Reveal.slide(0)")
        found = page.evaluate("""async () => { await document.fonts.ready;
            return {lang: document.documentElement.lang,
                    title: document.querySelector('.reveal section h1').textContent,
                    font: Array.from(document.fonts).filter(f => f.family === 'Course Hangul')
                                                     .map(f => f.status)}; }""")
        assert found["lang"] == "ko" and re.search("[\uac00-\ud7a3]", found["title"]), found
        assert "loaded" in found["font"], f"Hangul not drawn with the shipped font: {found['font']}"
    problems += watch.problems()
    assert not problems, "\n".join(problems)


def test_the_checks_catch_overflow_a_missing_image_and_missing_notes(served, page, tmp_path):
    """The detector itself: a deck with a slide too tall, a broken image and no notes is flagged; a
    slide with an embedded SVG diagram is not."""
    svg = base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg" width="640" height="240">'
                           b'<rect width="640" height="240" fill="#eee"/><text x="20" y="60" font-size="20">box'
                           b'</text></svg>').decode()
    slides = [Slide(title="Title", cells=[]),
              Slide(title="Too tall", cells=[], blocks=[("<p>line</p>" * 40, False)], notes=["n"]),
              Slide(title="Broken", cells=[], blocks=[('<img alt="gone" src="missing.png">', False)],
                    notes=["n"]),
              Slide(title="Silent", cells=[], blocks=[("<p>short</p>", False)]),
              Slide(title="Drawn", cells=[], blocks=[(f'<img class="figure diagram tall" alt="a box" width="1180" '
                                                      f'height="442" src="data:image/svg+xml;base64,{svg}">', False)],
                    notes=["n"])]
    (OUT / "_selftest.slides.html").write_text(render_deck(slides, "self test"), encoding="utf-8")
    try:
        total, problems = step_through(page, served + "_selftest.slides.html", tmp_path)
    finally:
        (OUT / "_selftest.slides.html").unlink()
    assert total == 5
    text = "\n".join(problems)
    assert "slide 5" not in text, text                     # an embedded SVG diagram loads and fits
    assert "slide 2 ('Too tall')" in text and "overflows" in text, text
    assert "slide 3 ('Broken'): image(s) did not load: ['gone']" in text, text
    assert "slide 4 ('Silent'): no speaker notes" in text, text
