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

import functools
import json
import os
import threading
import urllib.error
import urllib.request
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
REQUIRE_BROWSER = os.environ.get("REQUIRE_BROWSER") == "1"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
# Pages Sphinx generates that are not content: checked through the links that point at them.
SKIP_PAGES = {"genindex.html", "py-modindex.html", "search.html"}
IGNORED_PATHS = {"/favicon.ico"}  # the browser asks for it by itself; the site does not link it


def _unavailable(reason: str) -> None:
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason}, and REQUIRE_BROWSER=1 requires the browser test to run "
                    f"(apt-get install chromium)", pytrace=False)
    pytest.skip(f"{reason}: browser test skipped (set REQUIRE_BROWSER=1 to fail instead)",
                allow_module_level=True)


if not CHROMIUM.exists():
    _unavailable(f"Chromium not found at {CHROMIUM}")
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    _unavailable("the playwright package is not installed")


def _pages() -> list[str]:
    if not SITE.is_dir():
        return []
    pages = []
    for path in sorted(SITE.rglob("*.html")):
        rel = path.relative_to(SITE).as_posix()
        if rel.startswith(("_sources/", "_static/", "_images/")) or rel in SKIP_PAGES:
            continue
        pages.append(rel)
    return pages


PAGES = _pages()


# --------------------------------------------------------------------------- fixtures


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass


@pytest.fixture(scope="module")
def base_url():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE / 'index.html'} is missing: run `make book` first", pytrace=False)
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    pw = sync_playwright().start()
    try:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
    except Exception as err:  # a broken install is a failure, not a skip
        pw.stop()
        pytest.fail(f"could not launch {CHROMIUM}: {err}", pytrace=False)
    yield b
    b.close()
    pw.stop()


class _Watch:
    """Everything a page did that it should not: console errors, off-machine requests, failures."""

    def __init__(self, page, base_url: str):
        self.console: list[str] = []
        self.blocked: list[str] = []
        self.failed: list[str] = []
        host = urlsplit(base_url).netloc

        def route(r):
            parts = urlsplit(r.request.url)
            if parts.scheme in ("data", "blob") or parts.netloc == host:
                r.continue_()
            else:
                self.blocked.append(r.request.url)
                r.abort()

        def on_response(resp):
            if resp.status >= 400 and urlsplit(resp.url).path not in IGNORED_PATHS:
                self.failed.append(f"{resp.status} {resp.url}")

        page.route("**/*", route)
        page.on("console", lambda m: m.type == "error" and self.console.append(m.text))
        page.on("pageerror", lambda e: self.console.append(f"uncaught: {e}"))
        page.on("response", on_response)

    def problems(self) -> list[str]:
        out = []
        if self.blocked:
            out.append("tried to reach the network (blocked):\n    " + "\n    ".join(self.blocked))
        if self.failed:
            out.append("failed requests:\n    " + "\n    ".join(self.failed))
        # A blocked request also logs a console error; report it once, above.
        console = [c for c in self.console if not (self.blocked and "net::ERR_FAILED" in c)]
        if console:
            out.append("console errors:\n    " + "\n    ".join(console))
        return out


class _Tab:
    def __init__(self, page, watch: _Watch):
        self.page, self.watch = page, watch


@pytest.fixture()
def tab(browser, base_url):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    yield _Tab(page, _Watch(page, base_url))
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
    if rel == "index.html":
        # The root page is a meta-refresh redirect to the real first page.
        page.wait_for_url(lambda u: not u.endswith("/index.html") and u != base_url, timeout=15_000)
        page.wait_for_load_state("load")


def _screenshot(page, rel: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / (rel.replace("/", "_").removesuffix(".html") + ".png")),
                    full_page=True)


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
    _screenshot(page, rel)

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


def test_search_works_offline(tab, base_url):
    page = tab.page
    _open(page, base_url, "search.html?q=attention")
    results = page.locator("#search-results li")
    results.first.wait_for(state="attached", timeout=20_000)
    n = results.count()
    _screenshot(page, "search.html")
    problems = tab.watch.problems()
    assert n > 0, "search for 'attention' returned no results"
    assert not problems, "search.html:\n  " + "\n  ".join(problems)
