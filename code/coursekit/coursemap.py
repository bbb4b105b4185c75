"""The course map: each chapter's objectives, prerequisites, time and exercises, on one page.

Every chapter notebook carries its teaching metadata under the notebook-level key ``course``
(Jupyter keeps it; nbval ignores it)::

    "course": {
      "objectives":    ["describe the plain RNN encoder-decoder ...", ...],   # the admonition's list
      "prerequisites": ["Python and numpy", "Chapter 1"],                      # may be empty
      "minutes":       90,                                                     # time to teach it
      "exercises":     {"ex-reverse": [1], "ex-token-accuracy": [2], ...}      # label -> objectives
    }

``objectives`` repeats, item by item, the numbered list of the chapter's "Learning objectives"
admonition (the check compares them, so the two cannot drift apart). ``exercises`` maps every
``{exercise}`` label of the notebook to the objectives (numbered from 1) that it practises.

An evidence notebook (see :mod:`coursekit.lessons`) has no objectives: its ``course`` metadata is
only ``{"evidence_for": "<lesson stem>"}``. It gets no row of its own; the map mentions it, with
a link, in its lesson's section.

``python -m coursekit.coursemap`` writes ``book/course_map.md`` from the chapters that
carry the metadata; ``--check`` only compares and exits 1 when the page is out of date.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from .lessons import evidence_for

__all__ = ["KEY", "validate_course_metadata", "admonition_objectives", "exercise_labels", "exercise_texts",
           "chapter_title", "render_course_map", "main"]

KEY = "course"
FIELDS = {"objectives", "prerequisites", "minutes", "exercises"}
# An {exercise} directive: its fence (group 1), its :label: (group 2) and its text up to the closing fence (group 3).
_EXERCISE = re.compile(r"(`{3,}|:{3,})\s*\{exercise\}.*?\n\s*:label:\s*(\S+)(.*?)^\1\s*$", re.S | re.M)
_OBJECTIVES = re.compile(r"(?:`{3,}|:{3,})\s*\{admonition\}\s*Learning objectives\s*\n(.*?)^(?:`{3,}|:{3,})\s*$",
                         re.S | re.M)


def _exercise_matches(nb: nbformat.NotebookNode):
    return [m for c in nb.cells if c.cell_type == "markdown" for m in _EXERCISE.finditer(c.source)]


def exercise_labels(nb: nbformat.NotebookNode) -> list[str]:
    """The ``:label:`` of every ``{exercise}`` directive, in notebook order."""
    return [m.group(2) for m in _exercise_matches(nb)]


def exercise_texts(nb: nbformat.NotebookNode) -> dict[str, str]:
    """The text of every ``{exercise}`` directive (after its ``:label:``, up to its closing fence), by label."""
    return {m.group(2): m.group(3) for m in _exercise_matches(nb)}


def admonition_objectives(nb: nbformat.NotebookNode) -> list[str]:
    """The numbered items of the "Learning objectives" admonition, one string per item."""
    for cell in nb.cells:
        m = _OBJECTIVES.search(cell.source) if cell.cell_type == "markdown" else None
        if m:
            items, current = [], None
            for line in m.group(1).splitlines():
                start = re.match(r"^\s*\d+\.\s+(.*)$", line)
                if start:
                    current = [start.group(1)]
                    items.append(current)
                elif current is not None and line.strip() and line[:1].isspace():
                    current.append(line.strip())
                else:
                    current = None
            return [" ".join(parts) for parts in items]
    return []


def chapter_title(nb: nbformat.NotebookNode) -> str:
    """The ``# N. Title`` heading of the first markdown cell, without the ``#``."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    raise ValueError("no '# N. Title' heading in the notebook")


def _normalise(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip().lower()
    text = re.sub(r"[;.,]$", "", text)
    return re.sub(r"[;,]?\s+and$", "", text)


def validate_course_metadata(nb: nbformat.NotebookNode, name: str = "notebook") -> dict:
    """Return ``nb.metadata["course"]`` after checking it against the schema and the notebook.

    Raises ValueError naming the notebook and the offending field.
    """
    meta = nb.metadata.get(KEY)
    if not isinstance(meta, dict):
        raise ValueError(f"{name}: no notebook metadata {KEY!r} (a dict with {sorted(FIELDS)})")
    if set(meta) != FIELDS:
        raise ValueError(f"{name}: course metadata must have exactly the fields {sorted(FIELDS)}, "
                         f"got {sorted(meta)}")
    objectives, prerequisites = meta["objectives"], meta["prerequisites"]
    for field, value, allow_empty in (("objectives", objectives, False), ("prerequisites", prerequisites, True)):
        if not isinstance(value, list) or not all(isinstance(s, str) and s.strip() for s in value) \
                or (not value and not allow_empty):
            raise ValueError(f"{name}: {field} must be a list of non-empty strings"
                             f"{'' if allow_empty else ' (at least one)'}, got {value!r}")
    minutes = meta["minutes"]
    if not isinstance(minutes, int) or isinstance(minutes, bool) or not 10 <= minutes <= 240:
        raise ValueError(f"{name}: minutes must be an int between 10 and 240, got {minutes!r}")
    stated = admonition_objectives(nb)
    if [_normalise(s) for s in stated] != [_normalise(s) for s in objectives]:
        raise ValueError(f"{name}: objectives differ from the 'Learning objectives' admonition: metadata "
                         f"{objectives!r}, admonition {stated!r}")
    exercises = meta["exercises"]
    labels = exercise_labels(nb)
    if not isinstance(exercises, dict) or set(exercises) != set(labels):
        got = sorted(exercises) if isinstance(exercises, dict) else exercises
        raise ValueError(f"{name}: exercises must map every exercise label of the notebook {labels} to "
                         f"objective numbers, got keys {got!r}")
    for label, serves in exercises.items():
        if not isinstance(serves, list) or not serves or not all(
                isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= len(objectives) for i in serves):
            raise ValueError(f"{name}: exercise {label!r} must list objective numbers in 1..{len(objectives)}, "
                             f"got {serves!r}")
    return meta


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _evidence_pages(found: dict[str, tuple[Path, nbformat.NotebookNode]], lessons: set[str]) -> dict[str, str]:
    """``{lesson stem: "{doc}`title <path>`"}`` for the evidence notebooks; ValueError for a bad one."""
    pages = {}
    for lesson, (path, nb) in found.items():
        if set(nb.metadata[KEY]) != {"evidence_for"}:
            raise ValueError(f"{path.name}: an evidence notebook's course metadata holds only 'evidence_for', "
                             f"got {sorted(nb.metadata[KEY])}")
        if lesson not in lessons:
            raise ValueError(f"{path.name}: evidence_for names {lesson!r}, which is not a chapter with course "
                             f"metadata")
        pages[lesson] = f"{{doc}}`{_cell(chapter_title(nb))} <../chapters/{path.stem}>`"
    return pages


def render_course_map(notebooks: list[Path]) -> str:
    """The Markdown of the course-map page for the notebooks that carry ``course`` metadata: a row
    and a section per lesson, its evidence notebook (if any) linked from the section."""
    chapters, evidence = [], {}
    for path in sorted(notebooks):
        nb = nbformat.read(path, as_version=4)
        if evidence_for(nb) is not None:
            if evidence_for(nb) in evidence:
                raise ValueError(f"{path.name}: {evidence[evidence_for(nb)][0].name} is already the evidence "
                                 f"for {evidence_for(nb)!r}")
            evidence[evidence_for(nb)] = (path, nb)
        elif KEY in nb.metadata:
            chapters.append((path, nb, validate_course_metadata(nb, path.name)))
    evidence_page = _evidence_pages(evidence, {path.stem for path, _, _ in chapters})
    lines = ["# Course map", "",
             "What each chapter teaches, what it assumes, how long it takes in class, and which exercise",
             "practises which objective. This page is generated from the `course` metadata of the chapter",
             "notebooks by `python -m coursekit.coursemap`; edit the notebooks, not this page.", ""]
    if not chapters:
        lines += ["No chapter carries course metadata yet.", ""]
        return "\n".join(lines)
    total = sum(meta["minutes"] for _, _, meta in chapters)
    lines += ["| Chapter | Minutes | Objectives | Exercises | Prerequisites |", "|---|---:|---:|---:|---|"]
    for path, nb, meta in chapters:
        prereq = "; ".join(meta["prerequisites"]) or "none"
        lines.append(f"| {{doc}}`{_cell(chapter_title(nb))} <../chapters/{path.stem}>` | {meta['minutes']} | "
                     f"{len(meta['objectives'])} | {len(meta['exercises'])} | {_cell(prereq)} |")
    lines += [f"| **Total** | **{total}** | | | |", ""]
    for path, nb, meta in chapters:
        lines += [f"## {chapter_title(nb)}", "",
                  f"{{doc}}`Read the chapter <../chapters/{path.stem}>`. About {meta['minutes']} minutes. "
                  f"Prerequisites: {'; '.join(meta['prerequisites']) or 'none'}.", ""]
        if path.stem in evidence_page:
            lines += [f"The evidence behind its claims (every sweep, control and check): {evidence_page[path.stem]}.",
                      ""]
        lines += ["| # | Objective | Practised by |", "|---:|---|---|"]
        for i, objective in enumerate(meta["objectives"], start=1):
            serving = [label for label, serves in meta["exercises"].items() if i in serves]
            refs = ", ".join(f"{{numref}}`{label}`" for label in serving) or "(no exercise)"
            lines.append(f"| {i} | {_cell(objective)} | {refs} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.coursemap",
                                     description="Write the course-map page from the chapters' metadata.")
    parser.add_argument("--chapters", type=Path, default=Path("chapters"))
    parser.add_argument("--out", type=Path, default=Path("book/course_map.md"))
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if the page is out of date")
    args = parser.parse_args(argv)
    try:
        text = render_course_map(sorted(args.chapters.glob("*.ipynb")))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out} is out of date: run python -m coursekit.coursemap", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
