"""The notation page (book/notation.md) lists each symbol once per meaning.

Checked as: within one scope, a symbol is defined in at most one table row. A row defines the
symbols of its symbol column (the "Course" column, or "Symbol" in the chapter table): each
``$...$`` there, up to its first ``=`` and without an argument list, so ``$\\sigma(z) = ...$``
defines ``\\sigma`` and ``$Q = XW_Q$`` defines ``Q``; a subscript is part of the name (``W_Q`` is
not ``W``). Scopes:

* "course": the tables of the course-wide sections (sequences, attention, self-attention and
  multi-head attention), whose symbols mean the same in every chapter;
* "chapter N": the canonical correlation table (chapter 6) and the rows of "Symbols that belong to
  one chapter" for chapter N. A chapter may give a course-wide letter a meaning of its own (the
  page says so), but within the chapter that letter then means one thing.

The package-name table lists code names, not symbols, and is not checked. (Which symbols the
chapters use that the page lacks is checked in tests/test_glossary.py.)
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import nbformat
import pytest

NOTATION = Path(__file__).resolve().parents[1] / "book" / "notation.md"
CHAPTER_TABLE = "Symbols that belong to one chapter"
CHAPTER_SECTIONS = {"Canonical correlation analysis": 6}
UNCHECKED_SECTIONS = {"Package names at a glance"}


def defined_symbols(cell: str) -> list[str]:
    """The symbols a table cell defines (see the module docstring)."""
    out = []
    for span in re.findall(r"\$([^$]+)\$", cell):
        lhs = re.sub(r"\s+", "", span.split("=")[0])
        lhs = re.sub(r"(?<=.)[(\[].*$", "", lhs)          # f(z), E[.] name f and E
        if lhs:
            out.append(lhs)
    return out


def notation_rows(text: str) -> list[tuple[str, str, list[str]]]:
    """``(scope, row text, symbols)`` for every table row of the page that defines symbols."""
    rows, section, header = [], "", None
    for line in text.splitlines():
        heading = re.match(r"^##\s+(.*?)\s*$", line)
        if heading:
            section, header = heading.group(1), None
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = [c.lower() for c in cells]
            continue
        if all(re.fullmatch(r":?-+:?", c) for c in cells) or section in UNCHECKED_SECTIONS:
            continue
        if section == CHAPTER_TABLE:
            scope, symbol_cell = f"chapter {int(cells[0])}", cells[header.index("symbol")]
        else:
            scope = f"chapter {CHAPTER_SECTIONS[section]}" if section in CHAPTER_SECTIONS else "course"
            symbol_cell = cells[header.index("course")]
        rows.append((scope, line, defined_symbols(symbol_cell)))
    return rows


def duplicates(text: str) -> dict[tuple[str, str], list[str]]:
    """Symbols defined in more than one row of the same scope, with those rows."""
    seen = defaultdict(list)
    for scope, line, symbols in notation_rows(text):
        for sym in dict.fromkeys(symbols):
            seen[(scope, sym)].append(line)
    return {key: lines for key, lines in seen.items() if len(lines) > 1}


def test_each_symbol_once_per_meaning():
    dup = duplicates(NOTATION.read_text(encoding="utf-8"))
    assert not dup, "symbols defined in more than one row of one scope:\n" + "\n".join(
        f"  {sym} ({scope}):\n    " + "\n    ".join(lines) for (scope, sym), lines in dup.items())


def test_the_page_has_the_scopes_it_is_checked_in():
    rows = notation_rows(NOTATION.read_text(encoding="utf-8"))
    scopes = {scope for scope, _, _ in rows}
    lessons = {int(p.name[:2]) for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb")}
    assert "course" in scopes and {f"chapter {n}" for n in lessons} <= scopes, scopes
    assert sum(len(s) for _, _, s in rows) >= 60


def test_the_check_finds_a_duplicate_and_allows_a_chapter_meaning():
    page = ("## Attention\n\n| Course | Meaning |\n|---|---|\n| $K = [k_1]$ | keys |\n"
            "| $Q = XW_Q$, $K = XW_K$ | again |\n"
            "| $W_Q$ | a projection |\n| $W = \\mathrm{softmax}(S)$ | weights |\n\n"
            f"## {CHAPTER_TABLE}\n\n| Chapter | Symbol | Meaning |\n|---|---|---|\n"
            "| 2 | $\\tau$; $W$ | temperature; a score matrix |\n| 6 | $\\tau$ | Kendall's tau |\n"
            "| 6 | $\\sigma$, $\\tau(a, b)$ | sigmoid; tau again |\n")
    assert defined_symbols("$\\sigma(z) = 1/(1 + e^{-z})$, $E[\\cdot]$; $[\\ell_o, \\ell_h]$") == \
        ["\\sigma", "E", "[\\ell_o,\\ell_h]"]
    assert set(duplicates(page)) == {("course", "K"), ("chapter 6", "\\tau")}


# --------------------------------------------------------------------------- each lesson's notation box

CHAPTERS = NOTATION.parents[1] / "chapters"
BOX = re.compile(r"^```\{admonition\}[^\n]*\n:class: notation\n(.*?)^```", re.S | re.M)
MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$", re.S)


def rebuilt_lessons() -> list[Path]:
    """The lessons that have an evidence page beside them: they follow the lesson design."""
    return sorted(p for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb")
                  if not p.stem.endswith("_evidence") and (CHAPTERS / f"{p.stem}_evidence.ipynb").is_file())


def notation_box(markdown: str) -> tuple[list[str], str]:
    """The symbols of a lesson's notation box (each $...$ of its first column) and the markdown
    without the box. ValueError when there is no box."""
    match = BOX.search(markdown)
    if match is None:
        raise ValueError("no notation box (an admonition with ':class: notation')")
    symbols = []
    for line in match.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and not all(re.fullmatch(r":?-+:?", c) for c in cells) and cells[0] != "symbol":
            symbols += [s.strip() for s in re.findall(r"\$([^$]+)\$", cells[0])]
    return symbols, markdown[:match.start()] + markdown[match.end():]


def math_of(text: str) -> list[str]:
    return [a or b for a, b in MATH.findall(text)]


def uses(spans: list[str], symbol: str) -> bool:
    """True when some math span uses ``symbol`` as a whole token (``g`` is not found in ``\\gamma``)."""
    pattern = re.compile(r"(?<![A-Za-z\\])" + re.escape(symbol) + r"(?![A-Za-z])")
    return any(pattern.search(span) for span in spans)


@pytest.mark.parametrize("path", rebuilt_lessons(), ids=lambda p: p.stem)
def test_the_notation_box_agrees_with_the_page_and_the_lesson(path):
    nb = nbformat.read(path, as_version=4)
    markdown = "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    symbols, rest = notation_box(markdown)
    assert len(symbols) >= 3, f"{path.name}: the notation box lists only {symbols}"
    page = math_of(NOTATION.read_text(encoding="utf-8"))
    not_on_page = [s for s in symbols if not uses(page, s)]
    unused = [s for s in symbols if not uses(math_of(rest), s)]
    assert not not_on_page, f"{path.name}: symbols of the notation box missing from book/notation.md: {not_on_page}"
    assert not unused, f"{path.name}: symbols of the notation box the lesson never uses: {unused}"


def test_the_box_check_finds_what_it_should():
    text = ("intro\n```{admonition} Notation in this lesson\n:class: notation\n| symbol | meaning |\n|---|---|\n"
            "| $g$, $\\kappa$ | gradient; threshold |\n```\nWe clip $g$ at $\\kappa$ and use $\\gamma$.\n")
    symbols, rest = notation_box(text)
    assert symbols == ["g", "\\kappa"] and "admonition" not in rest
    assert uses(math_of(rest), "g") and not uses(["\\gamma"], "g") and not uses(["\\kappa"], "\\kap")
    with pytest.raises(ValueError, match="no notation box"):
        notation_box("no box here")
