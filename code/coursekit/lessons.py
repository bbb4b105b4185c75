"""The lesson conventions in one place: lessons and their evidence, hidden cells, bookkeeping, the page measure.

A chapter is a *lesson*, ``chapters/NN_slug.ipynb``, with the notebook metadata ``course`` holding its
objectives and exercises (see :mod:`coursekit.coursemap`). A rebuilt chapter also has an *evidence*
notebook, ``chapters/NN_slug_evidence.ipynb``, whose metadata says which lesson it supports and
nothing else::

    "course": {"evidence_for": "NN_slug"}

A chapter "is rebuilt" exactly when such an evidence notebook exists. In ``_toc.yml`` the evidence
page is a ``sections:`` entry under its lesson.

Hidden cells
    Bookkeeping cells carry one of the Jupyter Book tags in :data:`HIDDEN_TAGS` (``remove-input``:
    input removed from the site, output kept; ``hide-input``: input collapsed behind a toggle;
    ``remove-cell``: the whole cell removed) *and* the cell metadata
    ``"jupyter": {"source_hidden": true}``, so that JupyterLab collapses the same cells, and only
    those (:func:`hidden_cells_consistent`).

Bookkeeping
    :data:`BOOKKEEPING` lists the code fragments that mark a line as bookkeeping (glue, parallel
    runs and their futures, reseeding, claim checks, plotting boilerplate, provenance). A line
    matches when it contains one of them as a plain substring (case-sensitive), the same test
    in Python (:func:`is_bookkeeping`) and in the browser test. No visible code line of a rebuilt
    lesson may match (:func:`bookkeeping_lines`).

The page measure (:func:`reading_minutes`)
    ``reading_minutes = prose_words / 200 + visible code lines / 10``, counted on the notebook:

    * visible code lines (:func:`visible_code_lines`): the non-blank source lines of every code
      cell that carries none of :data:`HIDDEN_TAGS` (a ``hide-input`` cell counts 0: its code is
      collapsed). Code inside a gated solution counts (the student reads it after trying); the
      outputs of a cell never count, not even a printed source listing.
    * prose words (:func:`prose_words`): the words of every markdown cell not tagged
      ``remove-cell``, after stripping what a reader does not see as words: HTML comments and
      tags, ``(label)=`` targets, directive fence lines (```` ```{name} ```` and the closing
      fence; only an ``{admonition}``'s title is kept), directive option lines (``:label: x``),
      image lines (``![alt](path)``, alt text included) and the ``$``/``$$`` math delimiters (the
      formula's symbols stay). A glue role (``{glue:}`key```) counts as one word; a role with
      explicit text (``{term}`keys <key>```, ``{doc}`the setup <../book/setup>```) counts its text;
      ``{term}``, ``{abbr}`` and ``{math}`` roles count their content; any other role without
      explicit text (``{cite}``, ``{ref}``, ``{numref}``, ``{eq}``, ...) counts as one word. A Markdown
      link counts its text. Prose inside a gated solution counts, like its code.
      A word is then any whitespace-separated piece holding at least one letter or digit
      (``h_t`` is one word, ``=`` none).

The limits of a lesson (one class session)
    at most :data:`READING_MINUTES_BUDGET` page-minutes, exercises included; at most
    :data:`EXERCISES_BUDGET` ``{exercise}`` directives (:func:`exercise_labels`); at most
    :data:`CLAIM_LINES_BUDGET` checked claims (``expect(`` calls, :func:`claim_lines`), none of them in
    the exercises section (:func:`claims_in_exercises`); and every cell that calls an exercise check
    (:func:`check_cells`) carries ``remove-output``, so that the site shows no verdict before the student
    runs it. What does not fit goes to the evidence page, linked from the lesson.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import nbformat

__all__ = ["BOOKKEEPING", "HIDDEN_TAGS", "EVIDENCE_SUFFIX", "WORDS_PER_MINUTE", "CODE_LINES_PER_MINUTE",
           "READING_MINUTES_BUDGET", "EXERCISES_BUDGET", "CLAIM_LINES_BUDGET", "CodeLine", "read", "is_evidence",
           "evidence_for", "lesson_notebooks",
           "evidence_notebooks", "evidence_of", "rebuilt_lessons", "is_hidden", "is_bookkeeping",
           "visible_code_lines", "prose_text", "prose_words", "reading_minutes", "bookkeeping_lines",
           "hidden_cell_problems", "hidden_cells_consistent", "toc_sections", "MARKDOWN_IMAGE", "markdown_images",
           "exercise_labels", "claim_lines", "claims_in_exercises", "check_cells"]

BOOKKEEPING = ("glue(", "run_parallel(", "start_parallel(", ".result()", "seed_everything(", "expect(",
               "plt.rcParams", "provenance(", "%matplotlib")
HIDDEN_TAGS = ("remove-input", "hide-input", "remove-cell")
EVIDENCE_SUFFIX = "_evidence"
WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 10
READING_MINUTES_BUDGET = 24
EXERCISES_BUDGET = 6
CLAIM_LINES_BUDGET = 8

NotebookLike = nbformat.NotebookNode | str | Path


class CodeLine(NamedTuple):
    """One source line of a code cell: the cell's index in the notebook and the line's text."""

    cell: int
    text: str


def read(nb: NotebookLike) -> nbformat.NotebookNode:
    """``nb`` itself, or the notebook read from the path ``nb``."""
    if isinstance(nb, (str, Path)):
        return nbformat.read(Path(nb), as_version=4)
    return nb


# ------------------------------------------------------------------ lessons and evidence

def evidence_for(nb: NotebookLike) -> str | None:
    """The stem of the lesson an evidence notebook supports (``course.evidence_for``), else None."""
    course = read(nb).metadata.get("course")
    target = course.get("evidence_for") if isinstance(course, dict) else None
    return target if isinstance(target, str) and target else None


def is_evidence(nb: NotebookLike) -> bool:
    """Whether the notebook is an evidence notebook (its metadata names the lesson it supports)."""
    return evidence_for(nb) is not None


def _notebooks(chapters_dir: str | Path) -> list[Path]:
    return sorted(Path(chapters_dir).glob("*.ipynb"))


def lesson_notebooks(chapters_dir: str | Path) -> list[Path]:
    """Every notebook of ``chapters_dir`` that is not an evidence notebook, sorted by name."""
    return [p for p in _notebooks(chapters_dir) if not is_evidence(p)]


def evidence_notebooks(chapters_dir: str | Path) -> list[Path]:
    """Every evidence notebook of ``chapters_dir``, sorted by name."""
    return [p for p in _notebooks(chapters_dir) if is_evidence(p)]


def evidence_of(chapters_dir: str | Path) -> dict[str, Path]:
    """``{lesson stem: evidence notebook path}`` for the evidence notebooks of ``chapters_dir``."""
    return {evidence_for(p): p for p in evidence_notebooks(chapters_dir)}


def rebuilt_lessons(chapters_dir: str | Path) -> list[Path]:
    """The lessons that have an evidence notebook (the rebuilt chapters), sorted by name."""
    supported = evidence_of(chapters_dir)
    return [p for p in lesson_notebooks(chapters_dir) if p.stem in supported]


# ------------------------------------------------------------------ hidden cells and code lines

def _tags(cell) -> list[str]:
    tags = cell.get("metadata", {}).get("tags", [])
    return tags if isinstance(tags, list) else []


def is_hidden(cell) -> bool:
    """Whether the cell's input is hidden on the site (it carries one of :data:`HIDDEN_TAGS`)."""
    return any(tag in HIDDEN_TAGS for tag in _tags(cell))


def is_bookkeeping(line: str) -> bool:
    """Whether a code line contains one of the :data:`BOOKKEEPING` fragments."""
    return any(pattern in line for pattern in BOOKKEEPING)


def visible_code_lines(nb: NotebookLike) -> list[CodeLine]:
    """The non-blank source lines of the code cells that are not hidden, in notebook order."""
    return [CodeLine(i, line) for i, cell in enumerate(read(nb).cells)
            if cell.cell_type == "code" and not is_hidden(cell)
            for line in cell.source.splitlines() if line.strip()]


def bookkeeping_lines(nb: NotebookLike) -> list[CodeLine]:
    """The visible code lines that match :data:`BOOKKEEPING`."""
    return [line for line in visible_code_lines(nb) if is_bookkeeping(line.text)]


def _source_hidden(cell) -> bool:
    jupyter = cell.get("metadata", {}).get("jupyter", {})
    return isinstance(jupyter, dict) and jupyter.get("source_hidden") is True


def hidden_cell_problems(nb: NotebookLike) -> list[str]:
    """Cells whose hidden tag and ``jupyter.source_hidden`` disagree, one message per cell."""
    problems = []
    for i, cell in enumerate(read(nb).cells):
        tagged, collapsed = is_hidden(cell), _source_hidden(cell)
        where = f"cell {i} ({cell.get('id', '?')})"
        if tagged and not collapsed:
            problems.append(f"{where} is tagged {[t for t in _tags(cell) if t in HIDDEN_TAGS]} but has no "
                            f'metadata "jupyter": {{"source_hidden": true}}')
        elif collapsed and not tagged:
            problems.append(f"{where} has jupyter.source_hidden but none of the tags {list(HIDDEN_TAGS)}")
    return problems


def hidden_cells_consistent(nb: NotebookLike) -> bool:
    """Every cell with a hidden tag has ``jupyter.source_hidden`` true, and no other cell has it."""
    return not hidden_cell_problems(nb)


# ------------------------------------------------------------------ images in Markdown

# ![alt](path) or ![alt](path "title"); the path may be written <path>.
MARKDOWN_IMAGE = re.compile(r"!\[([^\]]*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def markdown_images(text: str) -> list[tuple[str, str]]:
    """``(alt, path)`` of every Markdown image in a text (how a notebook shows a diagram), in order."""
    return [(m.group(1).strip(), m.group(2)) for m in MARKDOWN_IMAGE.finditer(text)]


# ------------------------------------------------------------------ prose words and reading time

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TARGET = re.compile(r"^\s*\([^()\s]+\)=\s*$", re.M)
_FENCE = re.compile(r"^\s*(`{3,}|:{3,}|~{3,})\s*(\{([\w:-]+)\})?(.*)$")
_OPTION = re.compile(r"^\s*:[\w-]+:(\s.*)?$")
_GLUE = re.compile(r"\{glue(?::[\w-]*)?\}`[^`]*`")
_ROLE_WITH_TEXT = re.compile(r"\{[\w:-]+\}`([^`<]*?)\s*<[^>`]*>`")
_CONTENT_ROLE = re.compile(r"\{(?:term|abbr|math|sub|sup|kbd|code)\}`([^`]*)`")
_OTHER_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`")
_LINK = re.compile(r"(?<!!)\[([^\]]*)\]\([^)]*\)")
_HTML_TAG = re.compile(r"<[^>\n]+>")
_WORD = re.compile(r"[^\W_]")


def prose_text(source: str) -> str:
    """A markdown cell's text as the page measure counts it (see the module docstring)."""
    text = _COMMENT.sub(" ", source)
    text = _TARGET.sub("", text)
    lines = []
    for line in text.splitlines():
        fence = _FENCE.match(line)
        if fence:
            if fence.group(3) == "admonition":
                lines.append(fence.group(4))            # the admonition's title is shown
            continue
        if _OPTION.match(line):
            continue
        lines.append(line)
    text = "\n".join(lines)
    text = MARKDOWN_IMAGE.sub(" ", text)
    text = _GLUE.sub(" GLUE ", text)
    text = _ROLE_WITH_TEXT.sub(r" \1 ", text)
    text = _CONTENT_ROLE.sub(r" \1 ", text)
    text = _OTHER_ROLE.sub(" REF ", text)
    text = _LINK.sub(r" \1 ", text)
    text = _HTML_TAG.sub(" ", text)
    return text.replace("$", " ")


def prose_words(nb: NotebookLike) -> int:
    """The words of the notebook's markdown cells as a reader sees them (see the module docstring)."""
    return sum(len([w for w in prose_text(cell.source).split() if _WORD.search(w)])
               for cell in read(nb).cells
               if cell.cell_type == "markdown" and "remove-cell" not in _tags(cell))


def reading_minutes(nb: NotebookLike) -> float:
    """The page measure: ``prose_words / 200 + visible_code_lines / 10`` (minutes, not rounded)."""
    nb = read(nb)
    return prose_words(nb) / WORDS_PER_MINUTE + len(visible_code_lines(nb)) / CODE_LINES_PER_MINUTE


# ------------------------------------------------------------------ exercises and claims

_EXERCISE = re.compile(r"^```\{exercise\}")
_EXERCISE_LABEL = re.compile(r"^:label:\s*(\S+)", re.M)
_CLAIM_CALL = re.compile(r"(?<![\w.])expect\(")
_CHECK_CALL = re.compile(r"^(?:\w+\.)?check_\w+\(", re.M)
_H2 = re.compile(r"^##\s+(.*?)\s*$", re.M)


def exercise_labels(nb: NotebookLike) -> list[str]:
    """The label (or, without one, ``"#<cell>"``) of every ``{exercise}`` directive of the notebook."""
    out = []
    for i, cell in enumerate(read(nb).cells):
        if cell.cell_type != "markdown":
            continue
        for block in re.split(r"(?m)(?=^```\{exercise\})", cell.source):
            if _EXERCISE.match(block):
                label = _EXERCISE_LABEL.search(block)
                out.append(label.group(1) if label else f"#{i}")
    return out


def claim_lines(nb: NotebookLike) -> list[CodeLine]:
    """The ``expect(`` calls of the notebook's code cells: each puts one checked-claim line on the page."""
    return [CodeLine(i, line) for i, cell in enumerate(read(nb).cells) if cell.cell_type == "code"
            for line in cell.source.splitlines() if _CLAIM_CALL.search(line)]


def claims_in_exercises(nb: NotebookLike) -> list[CodeLine]:
    """The claim lines that sit in a section whose ``##`` heading starts with "Exercises"."""
    section, out = "", []
    for i, cell in enumerate(read(nb).cells):
        if cell.cell_type == "markdown":
            headings = _H2.findall(cell.source)
            if headings:
                section = headings[-1]
        elif section.lower().startswith("exercises"):
            out += [CodeLine(i, line) for line in cell.source.splitlines() if _CLAIM_CALL.search(line)]
    return out


def check_cells(nb: NotebookLike) -> list[int]:
    """The code cells that call an exercise check (a line starting ``check_...(`` or ``module.check_...(``)."""
    return [i for i, cell in enumerate(read(nb).cells)
            if cell.cell_type == "code" and _CHECK_CALL.search(cell.source)]


# ------------------------------------------------------------------ the table of contents

def toc_sections(toc_path: str | Path) -> dict[str, list[str]]:
    """``{file: [files of its sections]}`` for every entry of a Jupyter Book ``_toc.yml``."""
    import yaml

    found: dict[str, list[str]] = {}

    def walk(node) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if "file" in node:
                found[str(node["file"])] = [str(s["file"]) for s in node.get("sections", []) or []
                                            if isinstance(s, dict) and "file" in s]
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key))

    walk(yaml.safe_load(Path(toc_path).read_text(encoding="utf-8")))
    return found
