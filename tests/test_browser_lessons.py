"""Every content page of the built site read as a student reads it, in Chromium at 1280 x 900.

Per page (``_build/html``, or BROWSER_TEST_SITE), each check is its own test, ``test_page[<page>-<check>]``:

overflow     no code or output block is wider than its column: for every visible ``pre``, output block
             (``.cell_output`` children, ``div.output``) and claim, ``scrollWidth > clientWidth + 1``
             on the element or on its nearest scrolling container, or a right edge past the
             article's, is an offender (listed once per cell with its first 60 characters). Measured
             with every solution and every hide-input toggle opened, so what a student opens fits too.
answers      no answer readable before its solution is opened: with the solutions closed, no visible
             output from a line starting "Correct" on holds a digit (DESIGN: a success message
             confirms without values); no solution's content is visible (its geometry and CSS
             visibility, opacity included) before its title is clicked; and after the click each
             solution's content is visible (the toggle works).
diagrams     every image under ``_images/`` ending in ``.svg`` loaded (``naturalWidth > 0``) with a
             non-empty alt text, and shown legibly: rendered at >= 99% of the SVG's ``width``
             attribute, or else its smallest font size (parsed from the SVG, fetched over HTTP, in px
             at the rendered size) >= 12 px.
claims       no claim (``details.claim``) clipped: its summary's ``scrollWidth <= clientWidth + 1``,
             its right edge within the column, and its scrolling container not overflowing.
math         no stray ``$`` in the visible text outside code after MathJax has run (test_browser.py
             checks that every math element is typeset and no ``$$``, ``\\(``, ``\\[`` is left).
equations    no display equation wider than the column: its typeset formula (``svg`` or ``mjx-math``) runs past
             the column or past its container, or a scrolling container holds more than it shows (a
             formula cut at the column edge).
labels       no raw label in the visible text outside code: a label the sources define (``(name)=``
             targets, ``:label:`` options of chapters/ and book/) shown as text, as a reference whose
             text was not resolved renders it.
bookkeeping  (rebuilt lessons) no visible code line matches coursekit.lessons.BOOKKEEPING: cell
             inputs that are not removed and not inside a hide-input toggle (solutions included).
figures      (rebuilt lessons) every PNG figure rendered at >= 75% of its natural width.

A rebuilt lesson is a chapter with an evidence notebook (coursekit.lessons); the lesson and evidence
pages are screenshotted, solutions closed, into _build/screenshots/lesson_<stem>.png and
evidence_<stem>.png. The detectors themselves are tested first on a small book built here with one
defect of each kind on one page and none on another (``test_the_checks_*``).
"""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest
import yaml
from browser_support import ROOT, SHOTS, SITE, Watch, content_pages, require_browser, screenshot, serve

sync_playwright = require_browser()

from coursekit.lessons import BOOKKEEPING, evidence_notebooks, rebuilt_lessons  # noqa: E402

VIEWPORT = {"width": 1280, "height": 900}
MIN_DIAGRAM_FONT_PX = 12
MIN_FIGURE_SHARE = 0.75
CHECKS = ("overflow", "answers", "diagrams", "claims", "math", "equations", "labels")
LESSON_CHECKS = ("bookkeeping", "figures")
WHAT = {"overflow": "block(s) wider than the column", "answers": "answer(s) readable before the solution is opened",
        "diagrams": "diagram problem(s)", "claims": "clipped claim(s)", "math": "stray $ in the text",
        "bookkeeping": "visible bookkeeping line(s)", "figures": "figure(s) shown below 75% of their width",
        "equations": "display equation(s) wider than the column", "labels": "raw label(s) in the text"}


def source_labels(*folders: Path) -> list[str]:
    """Every label the sources define: ``(name)=`` targets and ``:label: name`` options (notebooks, .md)."""
    found = set()
    for folder in folders:
        for path in [*folder.glob("*.ipynb"), *folder.glob("*.md")]:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".ipynb":
                text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
            found.update(re.findall(r"^\((\w[\w.-]*)\)=\s*$", text, re.M))
            found.update(re.findall(r"^:label:\s*(\S+)\s*$", text, re.M))
    return sorted(label for label in found if "-" in label)      # a one-word label could be any word


LABELS = source_labels(ROOT / "chapters", ROOT / "book")


def label_pattern(labels: list[str]) -> str:
    """A JavaScript regular expression (source) for any of ``labels`` as a whole word; group 2 is it."""
    if not labels:
        return ""
    return r"(^|[^\w-])(" + "|".join(re.sub(r"([.-])", r"\\\1", label) for label in labels) + r")(?![\w-])"


def page_kinds(chapters: Path) -> dict[str, str]:
    """``{"chapters/<stem>.html": "lesson" | "evidence"}`` for the rebuilt lessons and their evidence."""
    kinds = {f"chapters/{p.stem}.html": "lesson" for p in rebuilt_lessons(chapters)}
    kinds.update({f"chapters/{p.stem}.html": "evidence" for p in evidence_notebooks(chapters)})
    return kinds


PAGES = content_pages(SITE)
KINDS = page_kinds(ROOT / "chapters")
CASES = [(rel, check) for rel in PAGES for check in CHECKS + (LESSON_CHECKS if KINDS.get(rel) == "lesson" else ())]


# --------------------------------------------------------------------------- in the page

_VISIBLE = """const vis = el => {
  if (!el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
};
const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const snippet = el => (el.innerText || el.textContent || '').trim().replace(/\\s+/g, ' ').slice(0, 60);"""

_READY = """async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  const images = Array.from(document.images);
  await Promise.all(images.map(img => {
    img.loading = 'eager';
    return img.complete ? null : new Promise(r => { img.onload = img.onerror = r; });
  }));
}"""

_CLOSED = """() => {
/*VISIBLE*/
  const exercises = [...article.querySelectorAll('.exercise')];
  const follows = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  const exerciseOf = el => {
    let found = null;
    for (const ex of exercises) if (follows(ex, el)) found = ex;
    return found ? (found.id || snippet(found)) : '(before any exercise)';
  };
  const answers = [];
  for (const out of article.querySelectorAll('.cell_output')) {
    if (!vis(out)) continue;
    const text = out.innerText;
    const at = text.search(/^\\s*Correct/m);
    if (at >= 0 && /\\d/.test(text.slice(at)))
      answers.push(`after ${exerciseOf(out)}: ${text.slice(at).trim().replace(/\\s+/g, ' ').slice(0, 120)}`);
  }
  const open = [];
  for (const sol of article.querySelectorAll('.solution')) {
    const content = [...sol.children].filter(c => !c.matches('.admonition-title, summary'));
    const shown = content.filter(vis);
    if (shown.length) open.push(`${sol.id || 'solution'}: ${snippet(shown[0])}`);
  }
  return {answers, open};
}""".replace("/*VISIBLE*/", _VISIBLE)

_OPEN_SOLUTIONS = """async () => {
/*VISIBLE*/
  const solutions = [...article.querySelectorAll('.solution')];
  for (const sol of solutions) {
    if (sol.tagName === 'DETAILS') { sol.open = true; continue; }
    const title = sol.querySelector(':scope > .admonition-title');
    if (sol.classList.contains('toggle-hidden') && title) title.click();
  }
  await new Promise(r => setTimeout(r, 500));          // the toggle's 0.3 s transition
  const shut = [];
  for (const sol of solutions) {
    const content = [...sol.children].filter(c => !c.matches('.admonition-title, summary'));
    if (content.length && !content.some(vis)) shut.push(sol.id || snippet(sol));
  }
  return {count: solutions.length, shut};
}""".replace("/*VISIBLE*/", _VISIBLE)

_MEASURE = """([bookkeeping, labels]) => {
/*VISIBLE*/
  const column = article.getBoundingClientRect();
  const scroller = el => {
    for (let p = el.parentElement; p && p !== article; p = p.parentElement) {
      const ox = getComputedStyle(p).overflowX;
      if (ox !== 'visible') return p;
    }
    return null;
  };
  const tooWide = el => {
    const r = el.getBoundingClientRect(), sc = scroller(el);
    if (el.scrollWidth > el.clientWidth + 1) return `${el.scrollWidth} px of content in ${el.clientWidth} px`;
    if (sc && sc.scrollWidth > sc.clientWidth + 1)
      return `its scrolling container holds ${sc.scrollWidth} px in ${sc.clientWidth} px`;
    if (r.right > column.right + 1) return `runs ${Math.round(r.right - column.right)} px past the column`;
    return null;
  };
  const overflow = [], seen = new Set();
  for (const el of article.querySelectorAll('pre, .cell_output > *, div.output, details.claim')) {
    if (!vis(el)) continue;
    const why = tooWide(el);
    const key = el.closest('.cell') || el;
    if (why && !seen.has(key)) { seen.add(key); overflow.push(`${why}: ${snippet(el)}`); }
  }
  const claims = [];
  for (const summary of article.querySelectorAll('details.claim > summary')) {
    const r = summary.getBoundingClientRect(), sc = scroller(summary.parentElement);
    if (summary.scrollWidth > summary.clientWidth + 1 || r.right > column.right + 1
        || (sc && sc.scrollWidth > sc.clientWidth + 1))
      claims.push(`${summary.scrollWidth} px in ${summary.clientWidth} px: ${snippet(summary)}`);
  }
  const kept = [];
  for (const input of article.querySelectorAll('.cell_input')) {
    if (input.closest('.tag_hide-input, details.hide, details.above-input')) continue;
    for (const line of input.textContent.split('\\n'))
      if (bookkeeping.some(b => line.includes(b))) kept.push(line.trim().slice(0, 100));
  }
  const images = [...article.querySelectorAll('img')].map(img => ({
    src: img.currentSrc || img.src, path: new URL(img.currentSrc || img.src, location.href).pathname,
    alt: (img.getAttribute('alt') || '').trim(), natural: img.naturalWidth,
    rendered: img.getBoundingClientRect().width, loaded: img.complete && img.naturalWidth > 0}));
  const dollars = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const at = n.nodeValue.indexOf('$');
    if (at < 0) continue;
    const parent = n.parentElement;
    if (!parent || parent.closest('pre, code, kbd, samp, script, style, textarea, mjx-container, .highlight')) continue;
    if (!vis(parent)) continue;
    dollars.push(n.nodeValue.slice(Math.max(0, at - 40), at + 40).replace(/\\s+/g, ' '));
  }
  const equations = [];
  for (const el of article.querySelectorAll('mjx-container[display="true"]')) {
    if (!vis(el)) continue;
    const formula = el.querySelector('mjx-math, svg') || el, r = formula.getBoundingClientRect();
    const box = el.getBoundingClientRect(), sc = scroller(el);
    let why = null;
    if (r.right > column.right + 1) why = `runs ${Math.round(r.right - column.right)} px past the column`;
    else if (r.width > box.width + 1) why = `${Math.round(r.width)} px of formula in ${Math.round(box.width)} px`;
    else if (el.scrollWidth > el.clientWidth + 1) why = `${el.scrollWidth} px of formula in ${el.clientWidth} px`;
    else if (sc && sc.scrollWidth > sc.clientWidth + 1)
      why = `its scrolling container holds ${sc.scrollWidth} px in ${sc.clientWidth} px`;
    if (why) equations.push(`${why}: ${(el.getAttribute('aria-label') || snippet(el)).slice(0, 60)}`);
  }
  const raw = [];
  if (labels) {
    const pattern = new RegExp(labels);
    const texts = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
    for (let n = texts.nextNode(); n; n = texts.nextNode()) {
      const parent = n.parentElement;
      if (!parent || parent.closest('pre, code, kbd, samp, script, style, textarea, mjx-container, .highlight, '
                                    + '.cell_output')) continue;
      const hit = n.nodeValue.match(pattern);
      if (hit && vis(parent)) raw.push(`${hit[2]}: ${n.nodeValue.trim().replace(/\\s+/g, ' ').slice(0, 80)}`);
    }
  }
  return {overflow, claims, kept, images, dollars, equations, raw};
}""".replace("/*VISIBLE*/", _VISIBLE)


# --------------------------------------------------------------------------- SVG sizes

_LENGTH = re.compile(r"^\s*([\d.]+)\s*(px|pt)?\s*$")
_FONT_SIZE = re.compile(r"font-size\s*[:=]\s*[\"']?\s*([\d.]+)\s*(px|pt)?", re.I)
_FONT = re.compile(r"\bfont\s*:\s*(?:(?:normal|italic|oblique|bold|bolder|lighter|small-caps|\d00)\s+)*"
                   r"([\d.]+)\s*(px|pt)?", re.I)


def svg_metrics(svg: str) -> dict:
    """The SVG's ``width`` attribute in CSS px (pt converted), and its smallest font size in px at that
    width (font sizes are in user units, scaled by width / viewBox width); None where absent."""
    root = re.search(r"<svg\b[^>]*>", svg)
    attrs = dict(re.findall(r'([\w:-]+)\s*=\s*"([^"]*)"', root.group(0))) if root else {}
    m = _LENGTH.match(attrs.get("width", ""))
    width = float(m.group(1)) * (4 / 3 if m.group(2) == "pt" else 1) if m else None
    box = [float(v) for v in re.split(r"[\s,]+", attrs.get("viewBox", "").strip()) if v] or None
    unit = width / box[2] if width and box and len(box) == 4 and box[2] > 0 else 1.0
    sizes = [float(v) * (4 / 3 if u and u.lower() == "pt" else 1)
             for v, u in _FONT_SIZE.findall(svg) + _FONT.findall(svg)]
    return {"width": width, "min_font": min(sizes) * unit if sizes else None, "texts": svg.count("<text")}


def diagram_problems(images: list[dict], base_url: str) -> list[str]:
    problems = []
    for img in images:
        if not re.search(r"/_images/[^/]+\.svg$", img["path"]):
            continue
        name = img["path"].rsplit("/", 1)[-1]
        if not img["loaded"]:
            problems.append(f"{name}: did not load")
            continue
        if not img["alt"]:
            problems.append(f"{name}: no alt text")
        url = img["src"] if urlsplit(img["src"]).netloc else base_url.rstrip("/") + img["path"]
        with urllib.request.urlopen(url, timeout=10) as resp:
            svg = resp.read().decode("utf-8", "replace")
        metrics = svg_metrics(svg)
        natural = metrics["width"] or img["natural"]
        if img["rendered"] >= 0.99 * natural:
            continue
        scale = img["rendered"] / natural
        if metrics["min_font"] is None:
            problems.append(f"{name}: shown at {scale:.0%} of its width ({img['rendered']:.0f} of {natural:.0f} px) "
                            f"and has no font size to judge its text by")
        elif metrics["min_font"] * scale < MIN_DIAGRAM_FONT_PX:
            problems.append(f"{name}: shown at {scale:.0%} of its width ({img['rendered']:.0f} of {natural:.0f} px), "
                            f"its smallest text {metrics['min_font']:.1f} px becomes {metrics['min_font'] * scale:.1f}"
                            f" px (< {MIN_DIAGRAM_FONT_PX})")
    return problems


def figure_problems(images: list[dict]) -> list[str]:
    problems = []
    for img in images:
        if not img["path"].endswith(".png") and not img["src"].startswith("data:image/png"):
            continue
        if not img["loaded"]:
            problems.append(f"{img['path'].rsplit('/', 1)[-1]}: did not load")
        elif img["rendered"] < MIN_FIGURE_SHARE * img["natural"]:
            problems.append(f"{img['path'].rsplit('/', 1)[-1]}: shown at {img['rendered'] / img['natural']:.0%} "
                            f"({img['rendered']:.0f} of {img['natural']} px)")
    return problems


def inspect(page, base_url: str, rel: str, shot: str | None = None, labels: list[str] = LABELS) -> dict[str, list[str]]:
    """Open one page and run every check on it; ``shot`` names a screenshot taken with solutions closed."""
    page.goto(base_url + rel, wait_until="load")
    if rel.split("/")[-1] == "index.html":   # a meta-refresh redirect to the first page: check where it lands
        page.wait_for_url(lambda u: not u.endswith("/index.html") and u != base_url, timeout=15_000)
        page.wait_for_load_state("load")
    page.evaluate(_READY)
    closed = page.evaluate(_CLOSED)
    if shot:
        screenshot(page, shot)
    opened = page.evaluate(_OPEN_SOLUTIONS)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_timeout(100)
    m = page.evaluate(_MEASURE, [list(BOOKKEEPING), label_pattern(labels)])
    return {
        "overflow": m["overflow"],
        "answers": closed["answers"] + [f"solution readable before it is opened: {s}" for s in closed["open"]]
        + [f"solution does not open: {s}" for s in opened["shut"]],
        "diagrams": diagram_problems(m["images"], base_url),
        "claims": m["claims"],
        "math": [f"...{s}..." for s in m["dollars"]],
        "bookkeeping": m["kept"],
        "figures": figure_problems(m["images"]),
        "equations": m["equations"],
        "labels": m["raw"],
    }


# --------------------------------------------------------------------------- the site


class _Site:
    def __init__(self, browser, base_url: str, labels: list[str] = LABELS):
        self.base_url, self.labels = base_url, labels
        self.context = browser.new_context(viewport=VIEWPORT)
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.watch = Watch(self.page, base_url)             # blocks and records every off-machine request
        self.found: dict[str, dict[str, list[str]]] = {}

    def findings(self, rel: str, kinds: dict[str, str] = KINDS) -> dict[str, list[str]]:
        if rel not in self.found:
            kind = kinds.get(rel)
            shot = f"{kind}_{Path(rel).stem}" if kind else None
            self.found[rel] = inspect(self.page, self.base_url, rel, shot, self.labels)
        return self.found[rel]


@pytest.fixture(scope="module")
def site(browser):
    if not (SITE / "index.html").is_file():
        pytest.fail(f"{SITE / 'index.html'} is missing: run `make book` first", pytrace=False)
    with serve(SITE) as url:
        s = _Site(browser, url)
        yield s
        s.context.close()


def test_rebuilt_lessons_and_their_evidence_are_on_the_site():
    assert PAGES, f"no pages found under {SITE}: run `make book` first"
    missing = [rel for rel in KINDS if rel not in PAGES]
    assert not missing, f"pages of rebuilt lessons or evidence missing from the site: {missing}"


@pytest.mark.parametrize("rel, check", CASES, ids=[f"{rel}-{check}" for rel, check in CASES])
def test_page(site, rel, check):
    found = site.findings(rel)[check]
    assert not found, f"{rel}: {len(found)} {WHAT[check]}:\n  " + "\n  ".join(found)


@pytest.mark.parametrize("rel", sorted(KINDS), ids=lambda r: r)
def test_lesson_and_evidence_screenshots(site, rel):
    site.findings(rel)
    path = SHOTS / f"{KINDS[rel]}_{Path(rel).stem}.png"
    assert path.is_file() and path.stat().st_size > 10_000, f"no screenshot of {rel} at {path}"


# --------------------------------------------------------------------------- the checks, on a small book

SVG_GOOD = ('<svg xmlns="http://www.w3.org/2000/svg" width="600px" height="160px" viewBox="0 0 600 160">'
            '<rect width="600" height="160" fill="#fafafa"/>'
            '<text x="20" y="80" style="font: 14px \'DejaVu Sans\'">encoder</text></svg>')
SVG_SHRUNK = ('<svg xmlns="http://www.w3.org/2000/svg" width="1400pt" height="300pt" viewBox="0 0 1400 300">'
              '<rect width="1400" height="300" fill="#fafafa"/>'
              '<text x="20" y="80" style="font-size: 10px">too small once shrunk</text></svg>')


def _png(width: int, height: int) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _cell(kind: str, source: str, *tags: str, outputs=()):
    cell = nbformat.v4.new_markdown_cell(source) if kind == "md" else nbformat.v4.new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
        if any(t in ("remove-input", "hide-input", "remove-cell") for t in tags):
            cell.metadata["jupyter"] = {"source_hidden": True}
    if kind == "code":
        cell.outputs = list(outputs)
    return cell


def _stream(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _html(text, html):
    return nbformat.v4.new_output("display_data", data={"text/plain": text, "text/html": html})


def _figure(width, height):
    return nbformat.v4.new_output("display_data", data={"image/png": _png(width, height), "text/plain": "<Figure>"})


def _claim(claim, values, summary_style=""):
    style = f' style="{summary_style}"' if summary_style else ""
    return _html(f"checked: {claim} ({values})",
                 f'<details class="claim"><summary{style}>\u2713 {claim}</summary>'
                 f'<div class="claim-values">{values}</div></details>')


def _notebook(*cells, evidence_for=None):
    nb = nbformat.v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if evidence_for:
        nb.metadata["course"] = {"evidence_for": evidence_for}
    return nb


def _solution(label, dropdown=True):
    return [_cell("md", f"```{{exercise}}\n:label: {label}\n\nFind the answer.\n```"),
            _cell("md", f"```{{solution-start}} {label}\n" + (":class: dropdown\n" if dropdown else "")
                  + "```\nThe answer is what the code computes."),
            _cell("code", "answer = 6 * 7"),
            _cell("md", "```{solution-end}\n```")]


def _demo_book(root: Path) -> Path:
    """A small book: 08_good (a rebuilt lesson with nothing wrong) and 09_bad (one defect per check)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = "Demo"
    config["sphinx"]["config"]["course_redirects"] = {}   # the course's renamed pages are not in the demo
    (root / "_config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (root / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: Course\n    chapters:\n"
        "      - file: chapters/08_good\n        sections:\n          - file: chapters/08_good_evidence\n"
        "      - file: chapters/09_bad\n        sections:\n          - file: chapters/09_bad_evidence\n",
        encoding="utf-8")
    for folder in ("book/_ext", "book/_static", "book/_templates"):
        shutil.copytree(ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "book/references.bib", root / "book/references.bib")
    (root / "book/intro.md").write_text("# Demo\n\nA small book for the browser checks.\n", encoding="utf-8")
    (root / "book/diagrams").mkdir(parents=True)
    (root / "book/diagrams/good.svg").write_text(SVG_GOOD, encoding="utf-8")
    (root / "book/diagrams/shrunk.svg").write_text(SVG_SHRUNK, encoding="utf-8")
    chapters = root / "chapters"
    chapters.mkdir()
    good = _notebook(
        _cell("md", "# 8. Good\n\nProse with $x^2$ and a drawing.\n\n"
                    "![Three boxes in a row, the middle one shaded.](../book/diagrams/good.svg)\n\n*Diagram.* Boxes."),
        _cell("code", "glue('x', 1)\nseed_everything(0)", "remove-cell"),
        _cell("code", "plt.rcParams['font.size'] = 9\nfig = plot()", "hide-input", outputs=[_figure(400, 200)]),
        _cell("code", "expect('short claim', True, a=1)", "remove-input",
              outputs=[_claim("a short claim that wraps " + "and wraps " * 30, "a = 1")]),
        _cell("code", "y = 1 + 1\nprint(y)", outputs=[_stream("2\n")]),
        *_solution("ex-good"),
        _cell("code", "check(answer)", outputs=[_stream("Correct: the answer matches the computation.\n")]))
    bad = _notebook(
        _cell("md", "# 9. Bad\n\nThis costs \\$5 today.\n\n![](../book/diagrams/good.svg)\n\n"
                    "![A drawing too wide for the column.](../book/diagrams/shrunk.svg)\n\n"
                    "$$\n" + " + ".join(f"x_{{{i}}} y_{{{i}}}" for i in range(60)) + "\n$$\n\n"
                    "As ex-bad shows, and as ex-badly does not."),
        _cell("code", "glue('x', 1)\nresult = 1"),
        _cell("code", "show()", outputs=[_html("wide", '<pre style="white-space: pre !important; '
                                                      'overflow-wrap: normal !important; overflow-x: auto">'
                                                      + "wide " * 80 + "</pre>")]),
        _cell("code", "expect('clipped', True)", "remove-input",
              outputs=[_claim("a claim cut off " + "on the right " * 20, "b = 2",
                              "white-space: nowrap !important; overflow: hidden !important")]),
        _cell("code", "plot()", outputs=[_figure(2000, 200)]),
        *_solution("ex-bad", dropdown=False),
        _cell("code", "check(answer)", outputs=[_stream("Correct: the answer is 42.\n")]))
    nbformat.write(good, chapters / "08_good.ipynb")
    nbformat.write(_notebook(_cell("md", "# Evidence for 8"), _cell("code", "glue('z', 3)", outputs=[_stream("3\n")]),
                             evidence_for="08_good"), chapters / "08_good_evidence.ipynb")
    nbformat.write(bad, chapters / "09_bad.ipynb")
    nbformat.write(_notebook(_cell("md", "# Evidence for 9"), evidence_for="09_bad"),
                   chapters / "09_bad_evidence.ipynb")
    jb = Path(sys.executable).with_name("jupyter-book")
    build = subprocess.run([str(jb), "build", str(root), "--all", "--builder", "html", "-q"], cwd=root,
                           capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, (build.stdout + build.stderr)[-3000:]
    return root / "_build" / "html"


@pytest.fixture(scope="module")
def demo(browser, tmp_path_factory):
    root = tmp_path_factory.mktemp("demo_book")
    html = _demo_book(root)
    kinds = page_kinds(root / "chapters")
    with serve(html) as url:
        s = _Site(browser, url, labels=source_labels(root / "chapters", root / "book"))
        yield s, kinds
        s.context.close()


def test_the_checks_pass_a_clean_lesson_and_its_evidence(demo):
    site, kinds = demo
    assert kinds == {"chapters/08_good.html": "lesson", "chapters/08_good_evidence.html": "evidence",
                     "chapters/09_bad.html": "lesson", "chapters/09_bad_evidence.html": "evidence"}
    for rel in ("chapters/08_good.html", "chapters/08_good_evidence.html"):
        checks = CHECKS + (LESSON_CHECKS if kinds[rel] == "lesson" else ())
        found = {check: items for check, items in site.findings(rel, {}).items() if items and check in checks}
        assert not found, f"{rel}: {json.dumps(found, indent=1)}"
    assert site.findings("chapters/08_good_evidence.html", {})["bookkeeping"] == ["glue('z', 3)"]  # seen, allowed


def test_the_checks_catch_one_defect_of_each_kind(demo):
    site, _ = demo
    found = site.findings("chapters/09_bad.html", {})
    assert len(found["overflow"]) == 1 and "wide wide" in found["overflow"][0], found["overflow"]
    assert found["bookkeeping"] == ["glue('x', 1)"]
    assert len(found["answers"]) == 2, found["answers"]
    assert found["answers"][0] == "after ex-bad: Correct: the answer is 42."
    assert found["answers"][1].startswith("solution readable before it is opened: ")
    assert len(found["diagrams"]) == 2, found["diagrams"]
    assert found["diagrams"][0] == "good.svg: no alt text"
    assert found["diagrams"][1].startswith("shrunk.svg: shown at ") and "< 12" in found["diagrams"][1]
    assert len(found["claims"]) == 1 and "a claim cut off" in found["claims"][0]
    assert found["math"] == ["...This costs $5 today...."], found["math"]
    assert len(found["figures"]) == 1 and "of 2000 px" in found["figures"][0]
    assert len(found["equations"]) == 1 and "x" in found["equations"][0], found["equations"]
    assert found["labels"] == ["ex-bad: As ex-bad shows, and as ex-badly does not."], found["labels"]
