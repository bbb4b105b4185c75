"""The attention explorer in headless Chromium, with the network cut off.

On the built site (``_build/html``, from ``make book``): Chapters 2, 3 and (once built) 4 each
show at least one explorer, and on every page that has explorers each one comes alive, and
hovering a token or moving the keyboard focus between tokens changes the highlighted links, the
shown weights and the read-out; the menus change what is shown; no console errors, no request
leaves the machine; light and dark themes both give readable token text.

On a small generated test page: the Transformer case (2 layers x 4 heads, encoder self-,
decoder self- and cross-attention), two explorers with identical content on one page that do not
interfere, and the static heat map that shows when JavaScript is off.

Same skip logic as tests/test_browser.py: without Chromium or playwright the module is skipped,
unless REQUIRE_BROWSER=1, which makes that a failure. Screenshots go to _build/screenshots/.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from browser_support import ROOT, SITE, Watch, require_browser, screenshot, serve

sync_playwright = require_browser()

from coursekit.lessons import lesson_notebooks  # noqa: E402

EXPLORER_CHAPTERS = ("02_", "03_", "04_")   # the issue: the explorer is used in Chapters 2-4
REQUIRED_CHAPTERS = ("02_", "03_")          # Chapter 4 is checked as soon as it is built


def _chapter_pages() -> list[str]:
    if not (SITE / "chapters").is_dir():
        return []
    return sorted(p.relative_to(SITE).as_posix() for p in (SITE / "chapters").glob("*.html"))


def _explorer_pages() -> list[str]:
    return [rel for rel in _chapter_pages() if 'class="ace-explorer' in (SITE / rel).read_text(encoding="utf-8")]


EXPLORER_PAGES = _explorer_pages()

# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def site_url():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE / 'index.html'} is missing: run `make book` first", pytrace=False)
    with serve(SITE) as url:
        yield url


@pytest.fixture(scope="module")
def test_page_url(tmp_path_factory):
    from attention_course.viz import attention_explorer, transformer_explorer

    rng = np.random.default_rng(0)

    def soft(shape):
        x = 2 * rng.normal(size=shape)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    src, tgt = ["the", "cat", "sat", "on", "the", "mat", "."], ["<s>", "le", "chat", "est", "assis"]
    causal = np.tril(np.ones((len(tgt), len(tgt))))
    dec = soft((2, 4, len(tgt), len(tgt))) * causal
    dec /= dec.sum(-1, keepdims=True)
    parts = dict(encoder_self=soft((2, 4, len(src), len(src))), decoder_self=dec,
                 cross=soft((2, 4, len(tgt), len(src))), layer_names=["layer 1", "layer 2"],
                 head_names=[f"head {h + 1}" for h in range(4)])
    first = transformer_explorer(src, tgt, title="A small Transformer", **parts).data
    twin = transformer_explorer(src, tgt, title="A small Transformer", **parts).data   # same content
    cross = attention_explorer(soft((len(tgt), len(src))), src, tgt, title="One head").data
    folder = tmp_path_factory.mktemp("viz_page")
    (folder / "index.html").write_text(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>explorers</title></head>'
        f'<body style="font-family: sans-serif">{first}<p>between</p>{twin}{cross}</body></html>',
        encoding="utf-8")
    with serve(folder) as url:
        yield url + "index.html"


def _open(browser, url: str, **context_args):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, **context_args)
    page = context.new_page()
    page.set_default_timeout(30_000)
    watch = Watch(page, url)
    page.goto(url, wait_until="load")
    return context, page, watch


def _wait_live(page) -> int:
    page.wait_for_function("""() => {
        const all = document.querySelectorAll('.ace-explorer');
        return all.length > 0 && document.querySelectorAll('.ace-explorer.ace-live').length === all.length;
    }""", timeout=15_000)
    return page.locator(".ace-explorer").count()


# --------------------------------------------------------------------------- helpers

_STATE = """(k) => {
  const root = document.querySelectorAll('.ace-explorer')[k];
  const texts = sel => Array.from(root.querySelectorAll(sel)).map(e => e.textContent);
  const lines = Array.from(root.querySelectorAll('svg.ace-links line'));
  const a = document.activeElement;
  const fallback = root.querySelector('.ace-fallback');
  return {
    live: root.classList.contains('ace-live'),
    fallbackShown: !!fallback && fallback.getClientRects().length > 0,
    on: lines.map((l, n) => l.classList.contains('ace-on') ? n : -1).filter(n => n >= 0),
    opacity: lines.map(l => l.getAttribute('stroke-opacity')).join(','),
    q: texts('.ace-left .ace-w'), k: texts('.ace-right .ace-w'),
    qTok: texts('.ace-left .ace-t'), kTok: texts('.ace-right .ace-t'),
    readout: root.querySelector('.ace-readout').textContent,
    active: a && root.contains(a) && a.dataset.side ? a.dataset.side + a.dataset.i : null,
    pressed: Array.from(root.querySelectorAll('button.ace-tok[aria-pressed="true"]')).length,
    tabStops: root.querySelectorAll('button.ace-tok[tabindex="0"]').length,
  };
}"""


def _state(page, k: int) -> dict:
    return page.evaluate(_STATE, k)


def _shown(labels: list[str]) -> bool:
    return any(labels)


def _park_mouse(page) -> None:
    page.mouse.move(1, 1)


def _exercise(page, k: int, where: str) -> None:
    """Hover, keyboard and pinning on explorer ``k`` of the page; assert every change shows."""
    root = page.locator(".ace-explorer").nth(k)
    root.scroll_into_view_if_needed()
    s0 = _state(page, k)
    assert s0["live"] and not s0["fallbackShown"], f"{where}: explorer {k} not live, or its fallback still shown"
    assert not _shown(s0["q"]) and not _shown(s0["k"]), f"{where}: weights shown before any interaction"
    assert s0["tabStops"] == 2, f"{where}: expected one tab stop per column, got {s0['tabStops']}"
    queries = root.locator(".ace-left button.ace-tok")
    keys = root.locator(".ace-right button.ace-tok")

    # Hover a query: its links light up and its row of weights appears next to the keys.
    queries.nth(0).hover()
    s1 = _state(page, k)
    assert _shown(s1["k"]) and not _shown(s1["q"]), f"{where}: hovering query 0 shows no key weights: {s1}"
    assert s1["readout"] != s0["readout"] and s1["readout"].startswith(("query", "Layer", "Head", "layer", "head")), \
        f"{where}: read-out did not change on hover: {s1['readout']!r}"
    assert s1["opacity"] != s0["opacity"], f"{where}: links did not change on hover"
    n_queries = queries.count()     # one query only: a learned query (chapter 4's reader); its menus must change it
    if n_queries > 1:
        for i in range(1, n_queries):                # another query with a different row of weights
            queries.nth(i).hover()
            s2 = _state(page, k)
            if s2["k"] != s1["k"]:
                break
        else:
            pytest.fail(f"{where}: every query shows the same weights")
        assert s2["on"] != s1["on"] or s2["opacity"] != s1["opacity"], f"{where}: highlighted links did not move"

    # Hover a key: the weights it receives appear next to the queries.
    keys.nth(keys.count() - 1).hover()
    s3 = _state(page, k)
    assert _shown(s3["q"]) and not _shown(s3["k"]), f"{where}: hovering a key shows no query weights"
    _park_mouse(page)
    assert not _shown(_state(page, k)["q"]), f"{where}: weights stay after the mouse left"

    # Keyboard: focus a query, move with the arrows; the shown weights follow the focus.
    queries.nth(0).focus()
    f0 = _state(page, k)
    assert f0["active"] == "q0" and f0["k"] == s1["k"], f"{where}: focusing query 0 did not show its weights"
    moved = None
    for _ in range(1, n_queries):
        page.keyboard.press("ArrowDown")
        f1 = _state(page, k)
        assert f1["active"] and f1["active"].startswith("q"), f"{where}: ArrowDown left the query column"
        if f1["k"] != f0["k"]:
            moved = f1
            break
    if n_queries > 1:
        assert moved, f"{where}: ArrowDown never changed the shown weights"
        assert moved["readout"] != f0["readout"], f"{where}: read-out did not follow the keyboard focus"
    page.keyboard.press("ArrowRight")
    f2 = _state(page, k)
    assert f2["active"] and f2["active"].startswith("k") and _shown(f2["q"]), \
        f"{where}: ArrowRight did not move the focus to a key: {f2['active']}"
    page.keyboard.press("ArrowLeft")
    assert _state(page, k)["active"].startswith("q"), f"{where}: ArrowLeft did not come back to the queries"
    page.keyboard.press("Home")
    assert _state(page, k)["active"] == "q0", f"{where}: Home did not go to the first query"
    page.keyboard.press("Tab")                       # one tab stop per column: Tab goes to the keys
    assert (_state(page, k)["active"] or "").startswith("k"), f"{where}: Tab did not reach the key column"
    page.keyboard.press("Shift+Tab")
    assert _state(page, k)["active"] == "q0", f"{where}: Shift+Tab did not come back to the query"

    # Enter pins the focused token: its weights stay after the focus leaves; Escape unpins.
    page.keyboard.press("Enter")
    page.evaluate("document.activeElement.blur()")
    p1 = _state(page, k)
    assert p1["pressed"] == 1 and p1["k"] == f0["k"], f"{where}: the pinned token's weights did not stay"
    queries.nth(0).focus()
    page.keyboard.press("Escape")
    page.evaluate("document.activeElement.blur()")
    p2 = _state(page, k)
    assert p2["pressed"] == 0 and not _shown(p2["k"]), f"{where}: Escape did not unpin"

    # Menus: the view changes the tokens; a layer or a head changes the pinned token's weights.
    menus = [m for m in ("ace-layer", "ace-head", "ace-view") if root.locator(f".{m} select").count()]
    assert n_queries > 1 or menus, f"{where}: one query and no menu: nothing the reader can change"
    for menu in ("ace-layer", "ace-head"):
        select = root.locator(f".{menu} select")
        if select.count():
            queries.nth(0).click()
            _park_mouse(page)
            before = _state(page, k)
            select.select_option(index=1)
            after = _state(page, k)
            assert after["k"] != before["k"], f"{where}: changing {menu[4:]} did not change the weights"
            select.select_option(index=0)
            queries.nth(0).click()                   # unpin
            _park_mouse(page)
    view = root.locator(".ace-view select")
    if view.count():
        before = _state(page, k)
        view.select_option(index=1)
        after = _state(page, k)
        shown = ("qTok", "kTok", "opacity")
        assert [after[x] for x in shown] != [before[x] for x in shown], f"{where}: another view changed nothing"
        view.select_option(index=0)


def _rgb(css: str) -> tuple[float, ...]:
    return tuple(float(x) for x in re.findall(r"[\d.]+", css)[:3])


def _contrast(a: str, b: str) -> float:
    def lum(c):
        ch = [v / 255 for v in _rgb(c)]
        ch = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in ch]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


_COLOURS = """(k) => {
  const root = document.querySelectorAll('.ace-explorer')[k];
  let el = root, bg = null;
  while (el) {
    const c = getComputedStyle(el).backgroundColor;
    if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') { bg = c; break; }
    el = el.parentElement;
  }
  return {fg: getComputedStyle(root.querySelector('button.ace-tok .ace-t')).color,
          bg: bg || 'rgb(255, 255, 255)',
          stroke: getComputedStyle(root.querySelector('svg.ace-links line')).stroke,
          theme: document.documentElement.dataset.theme || ''};
}"""

# --------------------------------------------------------------------------- the built site


def test_chapters_2_to_4_show_an_explorer():
    pages = _chapter_pages()
    assert pages, f"no chapter pages under {SITE}: run `make book` first"
    for prefix in REQUIRED_CHAPTERS:
        assert any(p.startswith(f"chapters/{prefix}") for p in pages), f"no built chapter {prefix}*"
    # The lessons carry the explorer; their evidence pages and the redirects of renamed pages need not.
    for nb in lesson_notebooks(ROOT / "chapters"):
        rel = f"chapters/{nb.stem}.html"
        if nb.stem.startswith(EXPLORER_CHAPTERS):
            assert rel in pages, f"{rel} was not built"
            assert rel in EXPLORER_PAGES, f"{rel} has no attention explorer"


@pytest.mark.parametrize("rel", EXPLORER_PAGES)
def test_explorers_on_the_built_page_respond_to_hover_and_keyboard(browser, site_url, rel):
    context, page, watch = _open(browser, site_url + rel)
    try:
        n = _wait_live(page)
        for k in range(n):
            _exercise(page, k, f"{rel} explorer {k}")
        first = page.locator(".ace-explorer").first
        first.locator(".ace-left button.ace-tok").first.hover()
        screenshot(first, f"viz_{rel}_hover")
        assert not watch.problems(), f"{rel}:\n  " + "\n  ".join(watch.problems())
    finally:
        context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("rel", EXPLORER_PAGES)
def test_explorer_is_readable_in_both_themes(browser, site_url, rel, scheme):
    context, page, watch = _open(browser, site_url + rel, color_scheme=scheme)
    try:
        n = _wait_live(page)
        page.wait_for_function(f"document.documentElement.dataset.theme === '{scheme}'", timeout=10_000)
        strokes = set()
        for k in range(n):
            c = page.evaluate(_COLOURS, k)
            ratio = _contrast(c["fg"], c["bg"])
            assert ratio >= 4.5, f"{rel} ({scheme}): token text {c['fg']} on {c['bg']} has contrast {ratio:.2f}"
            strokes.add(c["stroke"])
        expected = "rgb(96, 165, 250)" if scheme == "dark" else "rgb(37, 99, 235)"
        assert strokes == {expected}, f"{rel} ({scheme}): link colours {strokes}, expected {expected}"
        first = page.locator(".ace-explorer").first
        first.scroll_into_view_if_needed()
        tokens = first.locator(".ace-left button.ace-tok")
        tokens.nth(min(1, tokens.count() - 1)).focus()
        screenshot(first, f"viz_{rel}_{scheme}")
        assert not watch.problems(), f"{rel} ({scheme}):\n  " + "\n  ".join(watch.problems())
    finally:
        context.close()


# --------------------------------------------------------------------------- the generated test page


def test_transformer_views_layers_heads_and_twins(browser, test_page_url):
    context, page, watch = _open(browser, test_page_url)
    try:
        assert _wait_live(page) == 3
        ids = page.evaluate("Array.from(document.querySelectorAll('.ace-explorer')).map(e => e.id)")
        assert len(set(ids)) == 3, f"explorer ids clash: {ids}"
        views = page.locator(".ace-explorer").first.locator(".ace-view select option").all_text_contents()
        assert views == ["encoder self-attention", "decoder self-attention", "cross-attention"]
        for k in range(3):
            _exercise(page, k, f"test page explorer {k}")

        # The twins do not interfere: hovering in one leaves the other untouched.
        page.locator(".ace-explorer").nth(1).locator(".ace-left button.ace-tok").nth(2).hover()
        assert _shown(_state(page, 1)["k"]) and not _shown(_state(page, 0)["k"]), "the twin explorers interfere"
        _park_mouse(page)

        # The three views carry their own tokens; the decoder's causal mask shows as missing links.
        first = page.locator(".ace-explorer").first
        select = first.locator(".ace-view select")
        expected = {0: (["the", "cat", "sat", "on", "the", "mat", "."],) * 2,
                    1: (["<s>", "le", "chat", "est", "assis"],) * 2,
                    2: (["<s>", "le", "chat", "est", "assis"], ["the", "cat", "sat", "on", "the", "mat", "."])}
        for index, (q_tokens, k_tokens) in expected.items():
            select.select_option(index=index)
            s = _state(page, 0)
            assert (s["qTok"], s["kTok"]) == (q_tokens, k_tokens), f"view {index}: tokens {s['qTok']} / {s['kTok']}"
        select.select_option(index=1)
        first.locator(".ace-left button.ace-tok").nth(0).hover()
        s = _state(page, 0)
        assert s["k"][0] == "1.00" and s["k"][1:] == ["0.00"] * 4 and len(s["on"]) == 1, \
            f"the first decoder position should see only itself: {s['k']}"
        # Positions count from 0, as in Python (and in the chapters' exercises that ask for an index).
        readout = "query \u201c<s>\u201d at index 0 of 0\u20134 attends most to \u201c<s>\u201d at 0 (1.00)"
        assert readout in s["readout"], f"the read-out should number positions from 0: {s['readout']!r}"
        screenshot(page, "viz_test_page")
        assert not watch.problems(), "test page:\n  " + "\n  ".join(watch.problems())
    finally:
        context.close()


def test_static_heat_map_shows_without_javascript(browser, test_page_url):
    context, page, watch = _open(browser, test_page_url, java_script_enabled=False)
    try:
        assert page.locator(".ace-ui").count() == 0
        tables = page.locator("table.ace-table")
        assert tables.count() == 3 + 3 + 1                  # one table per view
        assert all(tables.nth(i).is_visible() for i in range(tables.count()))
        assert page.locator(".ace-note").first.is_visible()
        screenshot(page, "viz_test_page_nojs")
        assert not watch.problems(), "test page without JS:\n  " + "\n  ".join(watch.problems())
    finally:
        context.close()
