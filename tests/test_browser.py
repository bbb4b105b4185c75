"""The built website, page by page, in headless Chromium with the network cut off.

Serves ``_build/html`` on 127.0.0.1 and opens every page with all other requests blocked, which
proves the site works offline. Per page it checks: no console errors, no request that tried to
leave the machine, no failed local request, the math typeset by MathJax (no raw TeX left), every
image loaded, every internal link answering 200, and for chapters a working notebook download.
Search is checked separately. A full-page screenshot of each page lands in _build/screenshots/.

Needs ``make book`` first and Debian's Chromium at /usr/bin/chromium. Without Chromium the test
is skipped, unless REQUIRE_BROWSER=1 (as in CI), which turns that into a failure.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit, urlunsplit

import pytest
from browser_support import SITE, Watch, content_pages, redirect_pages, require_browser, screenshot, serve

sync_playwright = require_browser()

PAGES = content_pages(SITE)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def base_url():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE / 'index.html'} is missing: run `make book` first", pytrace=False)
    with serve(SITE) as url:
        yield url


class _Tab:
    def __init__(self, page, watch: Watch):
        self.page, self.watch = page, watch


@pytest.fixture()
def tab(browser, base_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield _Tab(page, Watch(page, base_url))
    context.close()


# --------------------------------------------------------------------------- helpers

_WAIT_FOR_MATHJAX = """async () => {
  if (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) return false;
  await MathJax.startup.promise;
  return true;
}"""

_INSPECT = """async () => {
  const main = document.querySelector('main') || document.body;
  // Text a reader sees, without code (which may legitimately contain $ or backslashes).
  const clone = main.cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, .highlight, mjx-container, mjx-assistive-mml')
       .forEach(e => e.remove());
  const text = clone.textContent;
  const math = Array.from(document.querySelectorAll('.math'));
  const raw = math.filter(m => !m.querySelector('mjx-container'))
                  .map(m => m.textContent.trim().slice(0, 80));
  const images = Array.from(document.images);
  await Promise.all(images.map(img => {
    img.loading = 'eager';
    return img.complete ? null : new Promise(r => { img.onload = img.onerror = r; });
  }));
  const broken = images.filter(i => i.naturalWidth === 0).map(i => i.currentSrc || i.src);
  const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.href);
  return {text, nmath: math.length, raw, broken, links,
          rendered: document.querySelectorAll('mjx-container').length};
}"""

_link_status: dict[str, str] = {}


def _status(url: str) -> str:
    """'200' or a description of the failure, for one local URL (each checked once)."""
    if url not in _link_status:
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                resp.read()
                _link_status[url] = str(resp.status)
        except urllib.error.HTTPError as err:
            _link_status[url] = str(err.code)
        except Exception as err:  # pragma: no cover - reported, not raised
            _link_status[url] = repr(err)
    return _link_status[url]


def _internal(url: str, base_url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.netloc != urlsplit(base_url).netloc:
        return None
    return urlunsplit((parts.scheme, parts.netloc, parts.path, parts.query, ""))


def _open(page, base_url: str, rel: str) -> None:
    page.goto(base_url + rel, wait_until="load")
    if rel.split("/")[-1] == "index.html":
        # The root page (of each language) is a meta-refresh redirect to the real first page.
        page.wait_for_url(lambda u: not u.endswith("/index.html") and u != base_url, timeout=15_000)
        page.wait_for_load_state("load")


# --------------------------------------------------------------------------- tests


def test_site_has_the_expected_pages():
    assert PAGES, f"no pages found under {SITE}: run `make book` first"
    for rel in ("index.html", "book/intro.html", "book/setup.html", "book/notation.html",
                "book/bibliography.html"):
        assert rel in PAGES, f"{rel} missing from the built site ({len(PAGES)} pages found)"
    assert any(p.startswith("chapters/") for p in PAGES), "no chapter page was built"


@pytest.mark.parametrize("rel", PAGES)
def test_page(tab, base_url, rel):
    page = tab.page
    _open(page, base_url, rel)
    has_mathjax = page.evaluate(_WAIT_FOR_MATHJAX)
    info = page.evaluate(_INSPECT)
    screenshot(page, rel)

    problems = tab.watch.problems()
    if info["nmath"] and not has_mathjax:
        problems.append(f"{info['nmath']} math elements but MathJax did not load")
    if info["raw"]:
        problems.append(f"{len(info['raw'])} of {info['nmath']} math elements not typeset, e.g. "
                        + "; ".join(info["raw"][:5]))
    for marker in ("$$", "\\(", "\\[", "$\\"):
        if marker in info["text"]:
            at = info["text"].index(marker)
            snippet = info["text"][max(0, at - 40):at + 40].replace("\n", " ")
            problems.append(f"unrendered math marker {marker!r} in the page text: ...{snippet}...")
    if info["broken"]:
        problems.append("images that did not load:\n    " + "\n    ".join(info["broken"]))

    links = sorted({u for u in map(lambda h: _internal(h, base_url), info["links"]) if u})
    bad = [f"{_status(u)} {u}" for u in links if _status(u) != "200"]
    if bad:
        problems.append("broken internal links:\n    " + "\n    ".join(bad))

    if rel.startswith("chapters/"):
        notebooks = sorted({u for u in links if u.endswith(".ipynb")})
        if not notebooks:
            problems.append("no download link for the chapter's .ipynb")
        for url in notebooks:
            try:
                with urllib.request.urlopen(url, timeout=10) as resp:
                    nb = json.loads(resp.read())
                if not nb.get("cells"):
                    problems.append(f"downloaded notebook has no cells: {url}")
            except Exception as err:
                problems.append(f"notebook download {url} failed: {err!r}")

    if rel == "book/notation.html" and info["rendered"] < 20:
        problems.append(f"the notation page shows only {info['rendered']} typeset formulas")

    assert not problems, f"{rel}:\n  " + "\n  ".join(problems)


def _renames() -> dict[str, str]:
    import yaml
    config = yaml.safe_load((SITE.parents[1] / "_config.yml").read_text(encoding="utf-8"))
    return config["sphinx"]["config"].get("course_redirects", {})


def test_every_rename_has_a_redirect_page():
    """In both editions: the Korean site (ko/) forwards the old names too."""
    assert sorted(redirect_pages(SITE)) == sorted(f"{prefix}{old}.html" for old in _renames() for prefix in ("", "ko/"))


@pytest.mark.parametrize("old", sorted(_renames()))
def test_an_old_link_lands_on_the_renamed_page(tab, base_url, old):
    page = tab.page
    page.goto(f"{base_url}{old}.html")
    new = _renames()[old]
    page.wait_for_url(lambda u: u.endswith(f"{new}.html"), timeout=15_000)
    page.wait_for_load_state("load")
    assert page.locator("main h1").count() >= 1, f"{old}.html forwarded to {page.url}, which shows no page"
    problems = tab.watch.problems()
    assert not problems, f"{old}.html:\n  " + "\n  ".join(problems)


def test_search_works_offline(tab, base_url):
    page = tab.page
    _open(page, base_url, "search.html?q=attention")
    results = page.locator("#search-results li")
    results.first.wait_for(state="attached", timeout=20_000)
    n = results.count()
    screenshot(page, "search.html")
    problems = tab.watch.problems()
    assert n > 0, "search for 'attention' returned no results"
    assert not problems, "search.html:\n  " + "\n  ".join(problems)
