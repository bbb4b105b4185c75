"""Slides: every chapter as a reveal.js deck that works offline (``make slides``).

``python -m coursekit.slides`` writes ``_build/slides/<chapter>.slides.html`` for every
``chapters/*.ipynb``, next to a local copy of reveal.js and MathJax, so the decks open from the
file system with no network:

    _build/slides/
        01_seq2seq_bottleneck.slides.html ...
        reveal.js/   dist/ and plugin/notes/, from the PyPI package sphinx-revealjs
        mathjax/     tex-svg-full.js, from the PyPI package django-static-mathjax (as the book)

Which cells become slides
    A chapter whose cells carry Jupyter's slide metadata (``"slideshow": {"slide_type": ...}``,
    set from Jupyter's property inspector or by hand) gets exactly those cells: ``slide``,
    ``subslide``, ``fragment``, ``-`` (continue the current slide) and ``notes`` (speaker notes,
    key ``s``). Cells without the metadata are left out. A cell tagged ``remove-input`` shows its
    output only (a figure without its plotting code). A chapter with no slide metadata at all gets
    an outline deck: the title cell, each numbered section heading with its opening paragraph, and
    each figure (output only) as a sub-slide.

The notebooks' MyST markup is turned into plain Markdown for the deck: glue roles show their
stored values, citations show author and year, other roles show their text, and directives
(admonitions, exercises, theorems) become a bold title followed by their body.
"""

from __future__ import annotations

import argparse
import copy
import re
import shutil
from pathlib import Path

import nbformat

from ._cli import report_written

__all__ = ["slide_cells", "myst_to_markdown", "glue_values", "export_deck", "write_slides", "main",
           "reveal_source", "mathjax_source"]

SLIDE_TYPES = {"slide", "subslide", "fragment", "-", "notes", "skip"}
REMOVE_INPUT = "remove-input"

# Extends nbconvert's reveal template: every script and style from the slides' own folder, none
# from a CDN (the stock template loads jQuery, RequireJS, Mermaid, MathJax 2 and reveal.js from
# the network).
_TEMPLATE = r"""{%- extends 'reveal/index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}
<script>
window.MathJax = {
  tex: {inlineMath: [['$', '$'], ['\\(', '\\)']], displayMath: [['$$', '$$'], ['\\[', '\\]']],
        processEscapes: true, processEnvironments: true, tags: 'ams'},
  svg: {fontCache: 'global'},
  startup: {typeset: true}
};
</script>
<script src="mathjax/tex-svg-full.js"></script>
{%- endblock html_head_js_mathjax -%}
{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/dist/reveal.js"></script>
<script src="{{ resources.reveal.url_prefix }}/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, history: true, hash: true,
  transition: "{{ resources.reveal.transition | default('slide', true) }}",
  slideNumber: "{{ resources.reveal.number | default('', true) }}",
  width: {{ resources.reveal.width | default('960', true) }},
  height: {{ resources.reveal.height | default('700', true) }},
  plugins: [RevealNotes]
});
</script>
{% endblock footer_js %}
"""
_TEMPLATE_NAME = "course_reveal.html.j2"


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
    reveal = reveal_source()
    target = out_dir / "reveal.js"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(reveal / "dist", target / "dist", ignore=shutil.ignore_patterns("*.map", "*.esm.js"))
    shutil.copytree(reveal / "plugin" / "notes", target / "plugin" / "notes",
                    ignore=shutil.ignore_patterns("*.esm.js"))
    if (reveal / "LICENSE").is_file():
        shutil.copyfile(reveal / "LICENSE", target / "LICENSE")
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


def myst_to_markdown(text: str, glue: dict[str, str] | None = None, cites: dict[str, str] | None = None) -> str:
    """Plain Markdown for a MyST cell: roles resolved, directives flattened, targets dropped."""
    glue, cites = glue or {}, cites or {}

    def glue_role(m):
        return glue.get(m.group(2).split("::")[-1], m.group(2))

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


# ------------------------------------------------------------------ choosing the cells

def _has_slide_metadata(nb) -> bool:
    return any("slide_type" in c.metadata.get("slideshow", {}) for c in nb.cells)


def _outline(nb) -> None:
    """Give a chapter without slide metadata an outline deck (see the module docstring)."""
    first = True
    for cell in nb.cells:
        kind = "skip"
        if cell.cell_type == "markdown" and first:
            kind, first = "slide", False
        elif cell.cell_type == "markdown" and re.search(r"^##\s+\d", cell.source, re.M):
            start = re.search(r"^##\s+\d", cell.source, re.M).start()
            blocks, kept = cell.source[start:].split("\n\n"), []
            for block in blocks:                      # the heading, then about one paragraph
                kept.append(block)
                if len(kept) == 4 or sum(len(b) for b in kept[1:]) >= 250:
                    break
            cell.source = "\n\n".join(kept)
            kind = "slide"
        elif cell.cell_type == "code" and "figure" in cell.metadata.get("mystnb", {}):
            kind = "subslide"
            cell.metadata.setdefault("tags", []).append(REMOVE_INPUT)
        cell.metadata["slideshow"] = {"slide_type": kind}


def slide_cells(nb: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """A copy of ``nb`` ready for nbconvert: slide types set on every cell, MyST flattened."""
    nb = copy.deepcopy(nb)
    for i, cell in enumerate(nb.cells):
        kind = cell.metadata.get("slideshow", {}).get("slide_type")
        if kind is not None and kind not in SLIDE_TYPES:
            raise ValueError(f"{name}: cell {i} has slide_type {kind!r}; expected one of {sorted(SLIDE_TYPES)}")
    if _has_slide_metadata(nb):
        for cell in nb.cells:
            cell.metadata.setdefault("slideshow", {}).setdefault("slide_type", "skip")
    else:
        _outline(nb)
    return nb


def export_deck(nb: nbformat.NotebookNode, name: str, bib: Path | None = None) -> str:
    """The HTML of one deck (assets referenced relative to the HTML file)."""
    from jinja2 import DictLoader
    from nbconvert.exporters import SlidesExporter
    from nbconvert.preprocessors import TagRemovePreprocessor
    from traitlets.config import Config

    deck = slide_cells(nb, name)
    glue, cites = glue_values(nb), _citations(bib)
    for cell in deck.cells:
        if cell.cell_type == "markdown" and cell.metadata["slideshow"]["slide_type"] != "skip":
            cell.source = myst_to_markdown(cell.source, glue, cites)
    # Skipped cells are dropped here rather than left to the template, so nothing of them ships.
    deck.cells = [c for c in deck.cells if c.metadata["slideshow"]["slide_type"] != "skip"]
    config = Config()
    config.SlidesExporter.reveal_url_prefix = "reveal.js"
    config.SlidesExporter.reveal_theme = "white"
    config.SlidesExporter.reveal_scroll = True
    exporter = SlidesExporter(config=config, extra_loaders=[DictLoader({_TEMPLATE_NAME: _TEMPLATE})],
                              template_file=_TEMPLATE_NAME)
    remove = TagRemovePreprocessor(remove_input_tags={REMOVE_INPUT}, enabled=True)
    exporter.register_preprocessor(remove, enabled=True)
    title = next((re.sub(r"^#\s+", "", c.source.splitlines()[0]) for c in deck.cells
                  if c.cell_type == "markdown" and c.source.startswith("# ")), name)
    deck.metadata["title"] = title
    html, _ = exporter.from_notebook_node(deck, resources={"metadata": {"name": name}})
    return html


def write_slides(chapters: Path, out_dir: Path, bib: Path | None = None) -> list[Path]:
    """Write a deck for every ``chapters/*.ipynb`` plus the local reveal.js and MathJax."""
    notebooks = sorted(Path(chapters).glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"no notebooks found in {chapters}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _copy_assets(out_dir)
    written = []
    for path in notebooks:
        html = export_deck(nbformat.read(path, as_version=4), path.stem, bib)
        target = out_dir / f"{path.stem}.slides.html"
        target.write_text(html, encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.slides",
                                     description="Export every chapter to offline reveal.js slides.")
    parser.add_argument("--chapters", type=Path, default=Path("chapters"))
    parser.add_argument("--out", type=Path, default=Path("_build/slides"))
    parser.add_argument("--bib", type=Path, default=Path("book/references.bib"))
    args = parser.parse_args(argv)
    return report_written(lambda: write_slides(args.chapters, args.out, args.bib), (ValueError, RuntimeError))


if __name__ == "__main__":
    raise SystemExit(main())
