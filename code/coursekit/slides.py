"""Slides: every lesson as a reveal.js deck a teacher can present, offline (``make slides``).

``python -m coursekit.slides`` writes ``_build/slides/<chapter>.slides.html`` for every lesson of
``chapters/`` (evidence notebooks, see :mod:`coursekit.lessons`, get no deck: their numbers reach the
slides through the lesson's glue), next to a local copy of reveal.js and MathJax, so the decks open
from the file system (or any static server) with no network:

    _build/slides/
        01_seq2seq_bottleneck.slides.html ...
        reveal.js/   dist/ and plugin/notes/, from the PyPI package sphinx-revealjs
        mathjax/     tex-svg-full.js, from the PyPI package django-static-mathjax (as the book)
        fonts/       NanumGothic for Hangul (coursekit.fonts), so a Korean deck reads anywhere
        ko/          the Korean decks, made the same way from the Korean lessons (make slides)

A slide is short: a claim, a formula or a figure, with at most ``WORD_LIMIT`` (40) words of text.
The longer prose goes into the speaker notes (press ``s`` in the deck). Figures are embedded in
the HTML (PNG data URIs; the drawn diagrams as SVG data URIs, which stay sharp at any size), so a
deck is one file plus the shared reveal.js and MathJax folders.

Which cells become slides: Jupyter's slide metadata
    A cell is on a slide when its metadata has Jupyter's standard
    ``"slideshow": {"slide_type": T}`` (set from Jupyter's property inspector or by a script):

    ``slide`` / ``subslide``   start a new slide (both are flat, left to right)
    ``fragment``               add the cell to the current slide, revealed on the next key press
    ``-``                      add the cell to the current slide
    ``notes``                  add the cell's prose to the current slide's speaker notes
    ``skip`` (or no metadata)  leave the cell out

    The title slide is made from the chapter's ``# N. Title`` heading unless the first cell is
    itself marked. A chapter with no slide metadata at all still gets a deck: the title slide and
    every figure and diagram, each under its section heading, with its caption as notes.

What a slide shows: the cell, or the course's ``slide`` metadata
    An optional second key, ``"slide"``, holds what the cell shows when its own text is too long
    for a slide. All of its fields are optional:

    .. code-block:: json

        "metadata": {
          "slideshow": {"slide_type": "slide"},
          "slide": {"title": "Selection has no gradient",
                    "text": "A hard choice is piecewise constant: its gradient is zero almost everywhere.",
                    "notes": "Extra words for the teacher only.",
                    "checks": [0, 2]}
        }

    ``title``   the slide's heading. Default: the cell's own first heading, else the heading of the
                section the cell is in.
    ``text``    the slide's text (MyST Markdown: math, ``{glue:text}`` roles and citations work).
                When it is given, the cell's own prose (a Markdown cell's text without its
                heading) becomes the speaker notes. Without it a Markdown cell shows its own prose,
                which must then fit the word limit.
    ``notes``   more speaker notes, added after the ones above.
    ``checks``  for a code cell: which of its ``checked:`` lines to show (0-based, in the order the
                cell prints them). Default: all.

    A code cell shows its outputs, never its source: every PNG figure it displays and every claim
    it checks, each claim with a tick and its measured values in small type. A claim is read from
    the rich output of ``attention_course.claims.expect`` (a display whose ``text/plain`` is
    ``checked: <claim> (<values>)``) or from the same line printed to a stream (older outputs).
    Its notes default to the figure's caption and the prose of the Markdown cell before it.

    A Markdown cell shows its prose and every image it references with Markdown image syntax
    (``![alt](../book/diagrams/ch01_encoder_decoder.svg)``, a path relative to the notebook),
    embedded with its alt text: an SVG diagram as an ``image/svg+xml`` data URI, scaled as a
    vector to fill the slide. A caption paragraph (one starting ``*Diagram.*`` or ``*Figure.*``, in Korean ``*도식.*``)
    goes to the speaker notes, so a cell that is only a diagram and its caption makes a slide of
    its own. The images and captions do not count towards the word limit.

The word limit
    Counted on what the slide shows, title included: words and numbers of the title, text and
    claims. Formulas (``$...$``, ``$$...$$``) and the measured values printed after a claim do not
    count. A slide over the limit stops the build with a message naming the chapter, the cell (its
    id and index) and the word count.

Moving the slide metadata to another version of the chapters
    The metadata lives on cells, found by their cell id. ``python -m coursekit.slides --copy-from
    DIR --chapters chapters`` copies ``slideshow`` and ``slide`` from ``DIR/*.ipynb`` onto the
    chapters of the same name, cell by cell id, and names the ids it could not find. It touches
    nothing but those two metadata keys.

The MyST markup of the notebooks becomes plain Markdown (``myst_to_markdown``): glue roles show
their stored values (``{glue:}`key```, ``{glue:text}`key:.1f``` formatted, and
``{glue:}`other_notebook::key``` from the lesson's evidence notebook), citations show author and
year, other roles show their text, and directives (admonitions, exercises) become a bold title
followed by their body.
"""

from __future__ import annotations

import argparse
import base64
import copy
import html
import mimetypes
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ._cli import report_written
from .fonts import font_face, write_web_font
from .lessons import MARKDOWN_IMAGE, evidence_of, lesson_notebooks, markdown_images

__all__ = ["WORD_LIMIT", "SLIDE_TYPES", "Slide", "SlideError", "build_slides", "render_deck", "count_words",
           "myst_to_markdown", "glue_values", "export_deck", "write_slides", "main", "reveal_source",
           "mathjax_source", "copy_slide_metadata", "checked_claims", "markdown_html", "markdown_images",
           "svg_size"]

WORD_LIMIT = 40
SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "notes", "skip"}
META = "slide"
META_FIELDS = {"title", "text", "notes", "checks"}
WIDTH, HEIGHT = 1280, 720


class SlideError(ValueError):
    """A slide the builder refuses: too many words, unknown metadata, a check that does not exist."""


# ------------------------------------------------------------------ local assets

def reveal_source() -> Path:
    """The reveal.js folder (with ``dist/`` and ``plugin/``) shipped by the sphinx-revealjs package."""
    try:
        import sphinx_revealjs
    except ImportError as err:
        raise RuntimeError("slides need the 'sphinx-revealjs' package, which ships reveal.js "
                           "(pip install -r requirements.txt -c constraints.txt)") from err
    root = Path(sphinx_revealjs.__file__).parent / "_static" / "revealjs"
    if not (root / "dist" / "reveal.js").is_file():
        raise RuntimeError(f"reveal.js not found in {root}")
    return root


def mathjax_source() -> Path:
    """MathJax 3's single-file bundle shipped by the django-static-mathjax package."""
    try:
        import mathjax
    except ImportError as err:
        raise RuntimeError("slides need the 'django-static-mathjax' package") from err
    bundle = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-svg-full.js"
    if not bundle.is_file():
        raise RuntimeError(f"{bundle} not found")
    return bundle


def _copy_assets(out_dir: Path) -> None:
    """reveal.js, MathJax and the Korean font beside the decks (everything a deck loads)."""
    reveal = reveal_source()
    target = out_dir / "reveal.js"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(reveal / "dist", target / "dist", ignore=shutil.ignore_patterns("*.map", "*.esm.js"))
    shutil.copytree(reveal / "plugin" / "notes", target / "plugin" / "notes",
                    ignore=shutil.ignore_patterns("*.esm.js"))
    if (reveal / "LICENSE").is_file():
        shutil.copyfile(reveal / "LICENSE", target / "LICENSE")
    write_web_font(out_dir / "fonts" / "NanumGothic.woff")          # Hangul, for the Korean decks
    write_web_font(out_dir / "fonts" / "NanumGothicBold.woff", bold=True)
    (out_dir / "mathjax").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(mathjax_source(), out_dir / "mathjax" / "tex-svg-full.js")


# ------------------------------------------------------------------ MyST to plain Markdown

def glue_values(nb: nbformat.NotebookNode) -> dict[str, str]:
    """The ``text/plain`` value of every myst-nb ``glue`` stored in the notebook's outputs."""
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            record = out.get("metadata", {}).get("scrapbook")
            if record:
                text = out.get("data", {}).get(record.get("mime_prefix", "") + "text/plain", "")
                values[record["name"]] = text[1:-1] if re.fullmatch(r"'.*'|\".*\"", text) else text
    return values


def _citations(bib: Path | None) -> dict[str, str]:
    if bib is None or not bib.is_file():
        return {}
    from pybtex.database import parse_file

    short = {}
    for key, entry in parse_file(str(bib)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [" ".join(p.last_names) for p in people]
        who = names[0] + (" et al." if len(names) > 2 else f" and {names[1]}" if len(names) == 2 else "") \
            if names else key
        short[key] = f"{who} {entry.fields.get('year', '')}".strip()
    return short


def _glue_text(ref: str, is_text: bool, glue: dict[str, str]) -> str:
    """The value a glue role shows: ``key``, ``doc::key`` (another notebook's glue, stored as
    ``<doc stem>::key``) and, for ``{glue:text}``, ``key:<format spec>``."""
    spec = None
    if is_text:
        head, _, tail = ref.rpartition(":")
        if head and not head.endswith(":") and re.fullmatch(r"[^:]*[bcdeEfFgGnosxX%]", tail):
            ref, spec = head, tail
    doc, _, key = ref.rpartition("::")
    if doc:
        stem = doc.rstrip("/").rsplit("/", 1)[-1].removesuffix(".ipynb").removesuffix(".md")
        value = glue.get(f"{stem}::{key}", glue.get(key))
    else:
        value = glue.get(key)
    if value is None:
        return ref
    if spec:
        kind = spec[-1]
        try:
            return format(value if kind == "s" else int(value) if kind in "bcdoxX" else float(value), spec)
        except ValueError:
            return value
    return value


def myst_to_markdown(text: str, glue: dict[str, str] | None = None, cites: dict[str, str] | None = None) -> str:
    """Plain Markdown for a MyST cell: roles resolved, directives flattened, targets dropped."""
    glue, cites = glue or {}, cites or {}

    def glue_role(m):
        return _glue_text(m.group(2), m.group(1) == ":text", glue)

    def cite_role(m):
        return "(" + "; ".join(cites.get(k.strip(), k.strip()) for k in m.group(1).split(",")) + ")"

    text = re.sub(r"^\(\S+\)=\s*$\n?", "", text, flags=re.M)
    text = re.sub(r"\{glue(:\w*)?\}`([^`]+)`", glue_role, text)
    text = re.sub(r"\{cite(?::\w+)?\}`([^`]+)`", cite_role, text)
    text = re.sub(r"\{[\w:-]+\}`([^`<]*?)\s*<[^>]*>`", r"\1", text)      # {role}`text <target>`
    text = re.sub(r"\{[\w:-]+\}`([^`]*)`", r"\1", text)                  # {role}`target`

    def directive(m):
        name, arg, body = m.group(2), m.group(3).strip(), m.group(4)
        body = re.sub(r"^:[\w-]+:.*\n?", "", body, flags=re.M).strip()
        title = name.split(":")[-1].replace("-", " ").capitalize()
        if name == "admonition" and arg:
            title, arg = arg, ""
        head = f"**{title}{': ' + arg if arg else ''}**"
        return f"{head}\n\n{body}\n"

    pattern = re.compile(r"^(`{3,}|:{3,})\{([\w:-]+)\}([^\n]*)\n(.*?)^\1\s*$", re.S | re.M)
    previous = None
    while previous != text:
        previous, text = text, pattern.sub(directive, text)
    return text


# ------------------------------------------------------------------ words and Markdown

_DISPLAY_MATH = re.compile(r"\$\$.+?\$\$", re.S)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)[^$\n]+?(?<![\s\\])\$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def count_words(text: str) -> int:
    """Words and numbers in Markdown text; formulas (``$...$``, ``$$...$$``) and markup do not count."""
    text = _INLINE_MATH.sub(" ", _DISPLAY_MATH.sub(" ", text))
    text = re.sub(r"<[^>]+>|`", " ", text)
    return len(re.findall(r"[^\W_](?:[\w'’.,:%/-]*[^\W_])?", text))


def _md_renderer():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def _protect_math(text: str) -> tuple[str, list[str]]:
    maths: list[str] = []

    def keep(m):
        maths.append(m.group(0))
        return f"MATHSPAN{len(maths) - 1}END"

    return _INLINE_MATH.sub(keep, _DISPLAY_MATH.sub(keep, text)), maths


def _restore_math(rendered: str, maths: list[str]) -> str:
    return re.sub(r"MATHSPAN(\d+)END", lambda m: html.escape(maths[int(m.group(1))], quote=False), rendered)


def markdown_html(text: str, inline: bool = False) -> str:
    """HTML for Markdown with TeX math left for MathJax (``$`` delimiters, underscores untouched)."""
    protected, maths = _protect_math(text)
    md = _md_renderer()
    rendered = md.renderInline(protected) if inline else md.render(protected)
    return _restore_math(rendered, maths)


# ------------------------------------------------------------------ building the slides

@dataclass
class Slide:
    """One slide: what it shows (HTML blocks), its speaker notes (Markdown) and where it came from."""

    title: str
    cells: list[str]                                   # "id (cell i)" of every cell on it
    blocks: list[tuple[str, bool]] = field(default_factory=list)   # (html, is_fragment)
    notes: list[str] = field(default_factory=list)
    words: int = 0
    images: int = 0

    def add(self, block: str, fragment: bool = False) -> None:
        self.blocks.append((block, fragment))


_CHECKED = re.compile(r"^checked: (.*?)\s*$", re.M)
_MEASURED = re.compile(r"^(.*\S)\s+\(([^()]*=[^()]*)\)$")


def _joined(text) -> str:
    return text if isinstance(text, str) else "".join(text)


def checked_claims(cell) -> list[tuple[str, str]]:
    """``(claim, measured values)`` for every claim a code cell checked, in output order: each rich
    output of ``expect`` (``text/plain`` starting ``checked: ``) and each ``checked:`` line printed."""
    claims = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            text = _joined(out.get("text", ""))
        elif kind in ("display_data", "execute_result"):
            text = _joined(out.get("data", {}).get("text/plain", ""))
            text = text if text.startswith("checked: ") else ""
        else:
            text = ""
        for m in _CHECKED.finditer(text):
            line = m.group(1)
            measured = _MEASURED.match(line)
            claims.append((measured.group(1), measured.group(2)) if measured else (line, ""))
    return claims


def _images(cell) -> list[str]:
    out = []
    for o in cell.get("outputs", []):
        png = o.get("data", {}).get("image/png") if o.get("output_type") in ("display_data", "execute_result") \
            else None
        if png and not o.get("metadata", {}).get("scrapbook"):
            out.append(png if isinstance(png, str) else "".join(png))
    return out


_CAPTION = re.compile(r"^\s*[*_](?:Diagram|Figure|도식|그림)\.[*_]")   # English, or as the Korean lessons say it
_SVG_LENGTH = re.compile(r"^\s*([\d.]+)\s*(px|pt)?\s*$")
DIAGRAM_BOX = {"tall": (1180, 540), "medium": (1180, 440), "short": (1180, 330)}
DIAGRAM_MAX_SCALE = 2.0


def svg_size(svg: str) -> tuple[float, float] | None:
    """The natural size of an SVG in CSS px (its ``width``/``height``, pt converted; else the viewBox)."""
    root = re.search(r"<svg\b[^>]*>", svg)
    if root is None:
        return None
    attrs = dict(re.findall(r'([\w:-]+)\s*=\s*"([^"]*)"', root.group(0)))
    size = []
    for name in ("width", "height"):
        m = _SVG_LENGTH.match(attrs.get(name, ""))
        size.append(float(m.group(1)) * (4 / 3 if m.group(2) == "pt" else 1) if m else None)
    if None in size and "viewBox" in attrs:
        size = [float(v) for v in re.split(r"[\s,]+", attrs["viewBox"].strip())[2:4]]
    return (size[0], size[1]) if None not in size and len(size) == 2 and size[0] > 0 and size[1] > 0 else None


def _split_images(text: str) -> tuple[str, list[tuple[str, str]], list[str]]:
    """A Markdown text without its images and their caption paragraphs: the rest, the images
    ``(alt, src)`` and the captions."""
    images = markdown_images(text)
    if not images:
        return text, [], []
    rest, captions = [], []
    for para in re.split(r"\n\s*\n", MARKDOWN_IMAGE.sub("", text)):
        if _CAPTION.match(para):
            captions.append(para.strip())
        elif para.strip():
            rest.append(para.strip("\n"))
    return "\n\n".join(rest), images, captions


def _embed_image(alt: str, src: str, base: Path | None, size: str, where: str) -> str:
    """An ``<img>`` with the picture at ``src`` (relative to ``base``) embedded as a data URI."""
    if re.match(r"[a-z][a-z0-9+.-]*:|//", src, re.I):
        raise SlideError(f"{where}: the image {src!r} is not a local file; a deck embeds its pictures")
    path = (base or Path(".")) / src
    if not path.is_file():
        raise SlideError(f"{where}: the image {src!r} ({path}) does not exist")
    mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    data = base64.b64encode(path.read_bytes()).decode()
    dims = ""
    if mime == "image/svg+xml":
        natural = svg_size(path.read_text(encoding="utf-8"))
        if natural:
            box_w, box_h = DIAGRAM_BOX[size]
            scale = min(box_w / natural[0], box_h / natural[1], DIAGRAM_MAX_SCALE)
            dims = f' width="{round(natural[0] * scale)}" height="{round(natural[1] * scale)}"'
    return (f'<img class="figure diagram {size}" alt="{html.escape(alt)}"{dims} '
            f'src="data:{mime};base64,{data}">')


def _split_heading(text: str) -> tuple[str | None, str]:
    """The first heading of a Markdown text, and the prose of its section within the text.

    With a heading, the prose runs from it to the next heading of the same or a higher level (the
    sentences before it close the previous section); without one, it is the whole text.
    """
    first = _HEADING.search(text)
    if first is None:
        return None, text.strip()
    level = len(text[first.start():].split(None, 1)[0])
    end = len(text)
    for m in _HEADING.finditer(text, first.end()):
        if len(text[m.start():].split(None, 1)[0]) <= level:
            end = m.start()
            break
    body = _HEADING.sub("", text[first.end():end]).strip()
    return first.group(1).strip(), body


def _meta(cell, where: str) -> dict:
    meta = cell.metadata.get(META, {})
    if not isinstance(meta, dict):
        raise SlideError(f"{where}: metadata {META!r} must be a mapping, got {type(meta).__name__}")
    unknown = set(meta) - META_FIELDS
    if unknown:
        raise SlideError(f"{where}: unknown field(s) {sorted(unknown)} in metadata {META!r}; "
                         f"expected some of {sorted(META_FIELDS)}")
    return meta


def _slide_type(cell, where: str) -> str | None:
    kind = cell.metadata.get("slideshow", {}).get("slide_type")
    if kind is not None and kind not in SLIDE_TYPES:
        raise SlideError(f"{where} has slide_type {kind!r}; expected one of {sorted(SLIDE_TYPES)}")
    return kind


def _fallback_types(nb) -> list[str]:
    """No slide metadata at all: every figure and diagram (the title slide is added as always)."""
    kinds = []
    for i, cell in enumerate(nb.cells):
        if (cell.cell_type == "code" and _images(cell)) or \
                (i > 0 and cell.cell_type == "markdown" and markdown_images(cell.source)):
            kinds.append("slide")
        else:
            kinds.append("skip")
    return kinds


def build_slides(nb: nbformat.NotebookNode, name: str = "notebook", glue: dict[str, str] | None = None,
                 cites: dict[str, str] | None = None, limit: int = WORD_LIMIT,
                 base: Path | None = None) -> list[Slide]:
    """The slides of one chapter (see the module docstring); raises SlideError naming the cell.

    ``base`` is the notebook's folder, against which the images of its Markdown cells are found
    (default: the current directory).
    """
    glue = glue_values(nb) if glue is None else glue

    def flat(text: str) -> str:
        return myst_to_markdown(text, glue, cites).strip()

    places = [f"{name}: cell {c.get('id', '?')} (index {i})" for i, c in enumerate(nb.cells)]
    kinds = [_slide_type(c, places[i]) for i, c in enumerate(nb.cells)]
    fallback = not any(k not in (None, "skip") for k in kinds)
    if fallback:
        kinds = _fallback_types(nb)
    slides: list[Slide] = []
    section, last_prose = name, ""
    for i, cell in enumerate(nb.cells):
        where, kind = places[i], kinds[i] or "skip"
        meta = _meta(cell, where)
        heading, prose, last_heading, tail, images, captions = None, "", None, "", [], []
        if cell.cell_type == "markdown":
            text_md, images, captions = _split_images(flat(cell.source))
            heading, prose = _split_heading(text_md)
            heads = list(_HEADING.finditer(text_md))
            last_heading = heads[-1].group(1).strip() if heads else None
            tail = _split_heading(text_md[heads[-1].start():])[1] if heads else prose
        auto_title = i == 0 and kind == "skip" and cell.cell_type == "markdown" and heading is not None
        if auto_title:                                      # the chapter's title slide: heading only
            kind, meta, images = "slide", {**meta, "text": meta.get("text", "")}, []
        elif fallback and images:                           # an unmarked diagram: the picture, prose in notes
            meta = {**meta, "text": meta.get("text", "")}
        if kind == "skip":
            section = last_heading or section
            last_prose = tail or last_prose
            continue
        if kind == "notes":
            if not slides:
                raise SlideError(f"{where}: a 'notes' cell before any slide")
            slides[-1].notes.append(prose or flat(cell.source))
            continue
        if kind in ("slide", "subslide") or not slides:
            title = meta.get("title") or heading or section
            slides.append(Slide(title=flat(title), cells=[]))
            slides[-1].words += count_words(slides[-1].title)
        slide = slides[-1]
        slide.cells.append(where.split(": ", 1)[1])
        fragment = kind == "fragment"
        text = flat(meta["text"]) if "text" in meta else None
        if cell.cell_type == "markdown":
            shown = text if text is not None else prose
            if shown:
                slide.add(f'<div class="text">{markdown_html(shown)}</div>', fragment)
                slide.words += count_words(shown)
            if images:
                size = "tall" if slide.words <= 12 else "medium" if slide.words <= 24 else "short"
                figs = "".join(_embed_image(alt, src, base, size, where) for alt, src in images)
                slide.add(f'<div class="figures n{len(images)}">{figs}</div>', fragment)
                slide.images += len(images)
                slide.notes.extend(captions)
            if text is not None and prose:
                slide.notes.append(prose)
            section = last_heading or section
            last_prose = tail or last_prose
        else:
            _code_slide(cell, slide, meta, text, fragment, last_prose, where, flat)
        if meta.get("notes"):
            slide.notes.append(flat(meta["notes"]))
        if slide.words > limit:
            raise SlideError(f"{where}: the slide {slide.title!r} has {slide.words} words, more than the "
                             f"{limit} a slide may show; shorten it, or give the cell a short "
                             f"metadata['{META}']['text'] (its prose then becomes the speaker notes)")
    return slides


def _code_slide(cell, slide: Slide, meta: dict, text: str | None, fragment: bool, last_prose: str,
                where: str, flat) -> None:
    images, claims = _images(cell), checked_claims(cell)
    if "checks" in meta:
        chosen = meta["checks"]
        if not isinstance(chosen, list) or not all(isinstance(k, int) and 0 <= k < len(claims) for k in chosen):
            raise SlideError(f"{where}: metadata['{META}']['checks'] = {chosen!r} must list indices of the "
                             f"cell's {len(claims)} checked claim(s)")
        claims = [claims[k] for k in chosen]
    if not images and not claims and text is None:
        raise SlideError(f"{where}: a code cell on a slide must show a figure, a checked claim or a "
                         f"metadata['{META}']['text']; this one has none")
    if text:
        slide.add(f'<div class="text">{markdown_html(text)}</div>', fragment)
        slide.words += count_words(text)
    words = slide.words + sum(count_words(c) for c, _ in claims)
    if images:
        alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt") or slide.title
        size = "tall" if words <= 12 and not claims else "medium" if words <= 24 else "short"
        figs = "".join(f'<img class="figure {size}" alt="{html.escape(alt)}" '
                       f'src="data:image/png;base64,{png.strip()}">' for png in images)
        slide.add(f'<div class="figures n{len(images)}">{figs}</div>', fragment)
        slide.images += len(images)
    if claims:
        items = "".join(f'<li><span class="claim">{markdown_html(c, inline=True)}</span>'
                        + (f' <span class="measured">({html.escape(m)})</span>' if m else "") + "</li>"
                        for c, m in claims)
        slide.add(f'<ul class="checks">{items}</ul>', fragment)
        slide.words = words
    caption = cell.metadata.get("mystnb", {}).get("figure", {}).get("caption")
    if caption:
        slide.notes.append(flat(caption))
    if last_prose and last_prose not in slide.notes:
        slide.notes.append(last_prose)


# ------------------------------------------------------------------ HTML

_STYLE = font_face("fonts/NanumGothic.woff") + "\n" + font_face("fonts/NanumGothicBold.woff", 700) + """
:root { --r-main-font-size: 30px; --r-heading-text-transform: none; --r-heading2-size: 1.45em;
        --r-main-font: "Course Hangul", "Source Sans Pro", Helvetica, sans-serif;
        --r-heading-font: "Course Hangul", "Source Sans Pro", Helvetica, sans-serif; }
.reveal .slides section { text-align: left; }
html[lang="ko"] .reveal { word-break: keep-all; overflow-wrap: anywhere; }   /* Korean wraps between words */
.reveal .slides section.title-slide { text-align: center; }
.reveal h1 { font-size: 1.9em; }
.reveal h2 { margin-bottom: 0.4em; }
.reveal .text p { margin: 0.3em 0; line-height: 1.3; }
.reveal .text ul, .reveal .text ol { display: block; margin-left: 1.2em; }
.reveal .figures { display: flex; justify-content: center; gap: 12px; margin: 0.3em 0; }
.reveal .figures img.figure { margin: 0; max-width: 100%; object-fit: contain; background: white; }
.reveal .figures.n2 img.figure { max-width: 49%; }
.reveal .figures.n3 img.figure { max-width: 32%; }
.reveal img.figure.tall { max-height: 540px; }
.reveal img.figure.medium { max-height: 440px; }
.reveal img.figure.short { max-height: 330px; }
.reveal img.figure.diagram { height: auto; }
.reveal ul.checks { list-style: none; margin: 0.3em 0 0 0; font-size: 0.8em; }
.reveal ul.checks li { margin: 0.2em 0; line-height: 1.25; }
.reveal ul.checks li::before { content: "\\2713\\00a0"; color: #1a7f37; font-weight: bold; }
.reveal .measured { font-family: monospace; font-size: 0.62em; color: #555; overflow-wrap: anywhere; }
.reveal .chapter { color: #666; font-size: 0.7em; }
"""

_PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="reveal.js/dist/reset.css">
<link rel="stylesheet" href="reveal.js/dist/reveal.css">
<link rel="stylesheet" href="reveal.js/dist/theme/white.css">
<style>{style}</style>
<script>
window.MathJax = {{
  tex: {{inlineMath: [['$', '$'], ['\\\\(', '\\\\)']], displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']],
        processEscapes: true}},
  svg: {{fontCache: 'global'}}
}};
</script>
<script src="mathjax/tex-svg-full.js"></script>
</head>
<body>
<div class="reveal"><div class="slides">
{sections}
</div></div>
<script src="reveal.js/dist/reveal.js"></script>
<script src="reveal.js/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({{hash: true, controls: true, progress: true, slideNumber: "c/t", center: true,
                   width: {width}, height: {height}, margin: 0.04, transition: "none",
                   plugins: [RevealNotes]}});
</script>
</body>
</html>
"""


def render_deck(slides: list[Slide], title: str, lang: str = "en") -> str:
    """The HTML of a deck: one ``<section>`` per slide, notes in ``<aside class="notes">``; ``lang`` is its
    language (a Korean lesson's notebook says ``course_language: ko``)."""
    sections = []
    for k, slide in enumerate(slides):
        level = "h1" if k == 0 else "h2"
        body = "".join(f'<div class="fragment">{b}</div>' if frag else b for b, frag in slide.blocks)
        notes = "".join(markdown_html(n) for n in slide.notes if n)
        aside = f'<aside class="notes">{notes}</aside>' if notes else ""
        cls = ' class="title-slide"' if k == 0 else ""
        sections.append(f'<section{cls} data-cells="{html.escape(", ".join(slide.cells))}">'
                        f"<{level}>{markdown_html(slide.title, inline=True)}</{level}>{body}{aside}</section>")
    return _PAGE.format(title=html.escape(title), style=_STYLE, sections="\n".join(sections),
                        width=WIDTH, height=HEIGHT, lang=lang)


def export_deck(nb: nbformat.NotebookNode, name: str, bib: Path | None = None, base: Path | None = None,
                evidence: dict[str, nbformat.NotebookNode] | None = None) -> str:
    """The HTML of one chapter's deck (assets referenced relative to the HTML file).

    ``base`` is the notebook's folder (its images are found from there); ``evidence`` maps the stem
    of each notebook the lesson pastes glue from (``{glue:}`stem::key```) to that notebook.
    """
    glue = {f"{stem}::{key}": value for stem, other in (evidence or {}).items()
            for key, value in glue_values(other).items()}
    glue.update(glue_values(nb))
    slides = build_slides(nb, name, glue, _citations(bib), base=base)
    title = re.sub(r"\$[^$]*\$", "", slides[0].title) if slides else name
    return render_deck(slides, title, nb.metadata.get("course_language", "en"))


def write_slides(chapters: Path, out_dir: Path, bib: Path | None = None) -> list[Path]:
    """Write a deck for every lesson of ``chapters`` (not the evidence notebooks) plus the local
    reveal.js and MathJax."""
    notebooks = lesson_notebooks(chapters)
    if not notebooks:
        raise ValueError(f"no notebooks found in {chapters}")
    evidence = evidence_of(chapters)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _copy_assets(out_dir)
    written = []
    for path in notebooks:
        supporting = {p.stem: nbformat.read(p, as_version=4) for p in [evidence.get(path.stem)] if p}
        html_text = export_deck(nbformat.read(path, as_version=4), path.stem, bib, base=path.parent,
                                evidence=supporting)
        target = out_dir / f"{path.stem}.slides.html"
        target.write_text(html_text, encoding="utf-8")
        written.append(target)
    return written


def copy_slide_metadata(source: nbformat.NotebookNode, target: nbformat.NotebookNode) -> tuple[int, list[str]]:
    """Copy the slide metadata (``slideshow`` and ``slide``) of ``source``'s cells onto the cells of
    ``target`` with the same cell id, replacing what ``target`` had. Returns how many cells were
    marked and the ids marked in ``source`` that ``target`` lacks (those slides are dropped)."""
    marked = {c.get("id"): c.metadata for c in source.cells
              if "slideshow" in c.metadata or META in c.metadata}
    cells = {c.get("id"): c for c in target.cells}
    for cell in target.cells:
        cell.metadata.pop("slideshow", None)
        cell.metadata.pop(META, None)
    copied = 0
    for cid, meta in marked.items():
        if cid in cells:
            for key in ("slideshow", META):
                if key in meta:
                    cells[cid].metadata[key] = copy.deepcopy(meta[key])
            copied += 1
    return copied, [cid for cid in marked if cid not in cells]


def _copy_all(source_dir: Path, chapters: Path) -> list[Path]:
    written = []
    for src in sorted(Path(source_dir).glob("*.ipynb")):
        dst = Path(chapters) / src.name
        if not dst.is_file():
            print(f"skipped {src.name}: no {dst}")
            continue
        target = nbformat.read(dst, as_version=nbformat.NO_CONVERT)
        copied, missing = copy_slide_metadata(nbformat.read(src, as_version=nbformat.NO_CONVERT), target)
        nbformat.write(target, dst)
        print(f"{dst}: slide metadata on {copied} cells" + (f"; not found: {', '.join(missing)}" if missing else ""))
        written.append(dst)
    if not written:
        raise ValueError(f"no notebooks in {source_dir} match {chapters}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.slides",
                                     description="Export every chapter to offline reveal.js slides.")
    parser.add_argument("--chapters", type=Path, default=Path("chapters"))
    parser.add_argument("--out", type=Path, default=Path("_build/slides"))
    parser.add_argument("--bib", type=Path, default=Path("book/references.bib"))
    parser.add_argument("--copy-from", type=Path, metavar="DIR",
                        help="instead of exporting: copy the slide metadata of DIR/*.ipynb onto the "
                             "--chapters notebooks of the same name, cell by cell id")
    args = parser.parse_args(argv)
    if args.copy_from is not None:
        return report_written(lambda: _copy_all(args.copy_from, args.chapters))
    return report_written(lambda: write_slides(args.chapters, args.out, args.bib), (ValueError, RuntimeError))


if __name__ == "__main__":
    raise SystemExit(main())
