"""Shared pieces of the browser tests: find Chromium, serve a folder, launch, watch a page.

Used by every browser test: Debian's Chromium at /usr/bin/chromium driven by
the playwright package (never ``playwright install``, which downloads a browser), a folder served
on 127.0.0.1 from a thread, and every request that would leave the machine aborted and recorded,
which proves the pages work offline. Without Chromium or playwright a browser test is skipped,
unless REQUIRE_BROWSER=1 (as in CI), which turns that into a failure.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The built site; BROWSER_TEST_SITE points the tests at another build (e.g. one made with --path-output).
SITE = Path(os.environ.get("BROWSER_TEST_SITE") or ROOT / "_build" / "html")
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
REQUIRE_BROWSER = os.environ.get("REQUIRE_BROWSER") == "1"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
IGNORED_PATHS = {"/favicon.ico"}  # the browser asks for it by itself; no page links it


def unavailable(reason: str) -> None:
    """Skip the calling test module, or fail it when REQUIRE_BROWSER=1."""
    if REQUIRE_BROWSER:
        pytest.fail(f"{reason}, and REQUIRE_BROWSER=1 requires the browser test to run "
                    f"(apt-get install chromium)", pytrace=False)
    pytest.skip(f"{reason}: browser test skipped (set REQUIRE_BROWSER=1 to fail instead)",
                allow_module_level=True)


def require_browser():
    """The playwright entry point, or a module-level skip (failure under REQUIRE_BROWSER=1)."""
    if not CHROMIUM.exists():
        unavailable(f"Chromium not found at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    return sync_playwright


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - signature fixed by the base class
        pass


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port) from a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def chromium(sync_playwright):
    """A headless Chromium; a launch failure is a test failure, not a skip."""
    pw = sync_playwright().start()
    try:
        try:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        except Exception as err:
            pytest.fail(f"could not launch {CHROMIUM}: {err}", pytrace=False)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        pw.stop()


class Watch:
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
        console = [c for c in self.console if not (self.blocked and "net::ERR_FAILED" in c)]
        if console:
            out.append("console errors:\n    " + "\n    ".join(console))
        return out


# Pages Sphinx generates that are not content: checked through the links that point at them.
SKIP_PAGES = {"genindex.html", "py-modindex.html", "search.html"}


def _is_redirect(path: Path) -> bool:
    return 'http-equiv="refresh"' in path.read_text(encoding="utf-8", errors="replace")[:2000]


def content_pages(site: Path = SITE) -> list[str]:
    """Every content page of a built site, as paths relative to it (``chapters/01_x.html``); the small
    pages that forward an old name to a renamed page (book/_ext/redirects.py) are not content."""
    if not site.is_dir():
        return []
    pages = []
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        parts = rel.split("/")
        if ({"_sources", "_static", "_images"} & set(parts[:-1]) or parts[-1] in SKIP_PAGES or _is_redirect(path)):
            continue
        pages.append(rel)
    return pages


def redirect_pages(site: Path = SITE) -> list[str]:
    """The pages that forward an old name to a renamed page, relative to the site."""
    if not site.is_dir():
        return []
    return [p.relative_to(site).as_posix() for p in sorted(site.rglob("*.html"))
            if not any(part.startswith("_") for part in p.relative_to(site).parts) and _is_redirect(p)]


def screenshot(target, name: str) -> Path:
    """Save a screenshot of a page (all of it) or of one element (a locator) to _build/screenshots/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name.replace('.html', '').replace('/', '_')}.png"
    if hasattr(target, "goto"):
        target.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    return path
