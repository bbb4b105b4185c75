"""The Korean edition in a browser: its pages read in Hangul, from the font the site ships.

Serves the built site (``make book``: English in ``_build/html``, Korean in ``_build/html/ko``) and opens
every page ``book/translations.yml`` marks translated or partly translated, in both languages, in headless
Chromium with the network cut off. Per Korean page: the Hangul is drawn with the shipped NanumGothic
(Chromium reports the font each glyph came from; a machine without a Korean font would otherwise show
boxes), at least 70% of the letters of its prose are Hangul (a partly translated page says at its top
that its method prose is English), its diagrams are the Korean twins and loaded, and its header links to
the English twin, which links back. Screenshots of each Korean page land in _build/screenshots/.

The rest of what every page must do (offline, math typeset, links, nothing clipped) is checked for the
Korean pages by the same tests as the English ones (tests/test_browser*.py walk the whole site).
"""

from __future__ import annotations

import subprocess

import pytest
from browser_support import SITE, Watch, require_browser, screenshot, serve
from coursekit.i18n import toc_pages, translations

sync_playwright = require_browser()
ENTRY = translations()
PAGES = [*ENTRY["translated"], *ENTRY["partial"]]


@pytest.fixture(scope="module")
def base_url():
    if not (SITE / "ko" / "index.html").is_file():
        pytest.fail(f"{SITE / 'ko' / 'index.html'} is missing: run `make book` first", pytrace=False)
    with serve(SITE) as url:
        yield url


@pytest.fixture()
def page(browser, base_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    tab.watch = Watch(tab, base_url)
    yield tab
    context.close()


_PROSE = """async () => {
  await document.fonts.ready;
  const article = document.querySelector('article') || document.body;
  const clone = article.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, .highlight, .cell_output, mjx-container, .math, '
                         + 'mjx-assistive-mml, .headerlink')
       .forEach(e => e.remove());
  const text = clone.textContent;
  const images = Array.from(article.querySelectorAll('img'));
  await Promise.all(images.map(img => {
    img.loading = 'eager';
    return img.complete ? null : new Promise(r => { img.onload = img.onerror = r; });
  }));
  return {
    hangul: (text.match(/[\\uac00-\\ud7a3]/g) || []).length,
    latin: (text.match(/[A-Za-z]/g) || []).length,
    lang: document.documentElement.lang,
    diagrams: images.map(i => i.getAttribute('src')).filter(s => s.includes('diagrams/')),
    broken: images.filter(i => i.naturalWidth === 0).map(i => i.getAttribute('src')),
  };
}"""


def _fonts_of_first_korean_paragraph(page) -> list[dict]:
    """The fonts Chromium drew the first Hangul paragraph of the article with (DevTools' CSS domain)."""
    handle = page.evaluate_handle("""() => Array.from(document.querySelectorAll('article p, article h1'))
                                         .find(p => /[\\uac00-\\ud7a3]/.test(p.textContent))""")
    assert handle.as_element() is not None, "no paragraph in Hangul"
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    page.evaluate("(p) => p.setAttribute('data-font-probe', '1')", handle)
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": "[data-font-probe]"})["nodeId"]
    return cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]


def test_no_korean_font_on_this_machine_is_needed():
    """What the font test below proves: it holds on a machine with no Korean system font (fontconfig lists
    none on the CI machines); where one exists the shipped font must still be the one used."""
    listed = subprocess.run(["fc-list", ":lang=ko", "family"], capture_output=True, text=True).stdout
    print(f"Korean system fonts: {listed.strip() or 'none'}")


@pytest.mark.parametrize("docname", PAGES)
def test_korean_page_reads_in_hangul_from_the_shipped_font(page, base_url, docname):
    page.goto(f"{base_url}ko/{docname}.html", wait_until="load")
    found = page.evaluate(_PROSE)
    screenshot(page, f"ko/{docname}")
    assert found["lang"] == "ko"
    share = found["hangul"] / max(found["hangul"] + found["latin"], 1)
    if docname in ENTRY["translated"]:   # a partly translated page keeps its long method prose in English
        assert share >= 0.7, f"{docname}: {found['hangul']} Hangul and {found['latin']} Latin letters ({share:.0%})"
    else:
        assert "일부만 한국어로" in page.inner_text("article") or "영어 원문 그대로" in page.inner_text("article")
    assert not found["broken"], f"{docname}: images not loaded: {found['broken']}"
    for src in found["diagrams"]:
        assert "/ko/" in src or src.startswith("ko/") or "diagrams/ko" in src or "_images/" in src, src
    fonts = _fonts_of_first_korean_paragraph(page)
    custom = [f for f in fonts if f.get("isCustomFont")]
    assert any("Nanum" in f["familyName"] for f in custom), f"{docname}: Hangul drawn with {fonts}"
    assert not page.watch.problems(), "\n".join(page.watch.problems())


@pytest.mark.parametrize("docname", PAGES)
def test_english_and_korean_twins_link_to_each_other(page, base_url, docname):
    page.goto(f"{base_url}{docname}.html", wait_until="load")
    link = page.locator("a.language-twin[hreflang='ko']")
    assert link.count() == 1, f"{docname}: no link to its Korean twin in the header"
    link.first.click()
    page.wait_for_load_state("load")
    assert page.url == f"{base_url}ko/{docname}.html"
    back = page.locator("a.language-twin[hreflang='en']")
    assert back.count() == 1, f"ko/{docname}: no link back to the English"
    back.first.click()
    page.wait_for_load_state("load")
    assert page.url == f"{base_url}{docname}.html"


def test_english_intro_lists_the_korean_pages(page, base_url):
    page.goto(f"{base_url}book/intro.html", wait_until="load")
    hrefs = page.eval_on_selector_all("article a", "as => as.map(a => a.href)")
    for docname in PAGES:
        assert f"{base_url}ko/{docname}.html" in hrefs, docname


def test_a_page_not_yet_translated_says_so_in_korean(page, base_url):
    untranslated = [d for d in toc_pages() if d not in ENTRY["translated"] and d not in ENTRY["partial"]]
    if not untranslated:
        pytest.skip("every page of the book is in Korean")
    page.goto(f"{base_url}ko/{untranslated[0]}.html", wait_until="load")
    assert "아직 한국어로 옮기지 않아" in page.inner_text("article")
    assert page.locator("a.language-twin[hreflang='en']").count() == 1
