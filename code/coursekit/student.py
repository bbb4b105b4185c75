"""The student edition: every chapter notebook with its solutions removed and its self-checks kept.

``python -m coursekit.student`` (``make student``) reads ``chapters/*.ipynb`` and writes
``_build/student/<same name>.ipynb``. In each notebook:

* every gated solution, from the markdown cell that opens it (```` ```{solution-start} label````)
  to the one that closes it (```` ```{solution-end}````), both included, becomes two cells: a
  markdown cell "Your solution here" and a code cell holding only ``# your code``;
* a one-cell solution (```` ```{solution} label````) and any cell tagged ``solution`` are
  replaced the same way;
* the self-check cell that follows each solution is kept, so students can test their answer;
* every output and execution count is cleared, and the per-cell execution timestamps dropped.

Nothing else changes: the exercises' text, the chapter's narrative and code stay as they are.
The written notebooks are deterministic (the new cells get ids derived from the exercise label),
so building twice gives identical files.
"""

from __future__ import annotations

import argparse
import copy
import re
from pathlib import Path

import nbformat

from ._cli import report_written

__all__ = ["student_notebook", "solution_cells", "write_student_edition", "main", "PLACEHOLDER_CODE",
           "PLACEHOLDER_MARKDOWN"]

PLACEHOLDER_MARKDOWN = "**Your solution here.** Write your answer in the code cell below, then run the check after it."
PLACEHOLDER_CODE = "# your code"
SOLUTION_TAG = "solution"

_FENCE = r"^\s*(?:`{3,}|:{3,})\s*"
_START = re.compile(_FENCE + r"\{solution-start\}\s*(\S+)")
_END = re.compile(_FENCE + r"\{solution-end\}")
_ONE_CELL = re.compile(_FENCE + r"\{solution\}\s*(\S*)")


def _markdown(cell) -> str:
    return cell.source if cell.cell_type == "markdown" else ""


def solution_cells(nb: nbformat.NotebookNode, name: str = "notebook") -> list[tuple[str, list[int]]]:
    """The solutions of ``nb``: a list of ``(label, [cell indices])`` in order.

    Raises ValueError for a solution that is opened and not closed, closed and not opened, or
    opened inside another one, naming the notebook and the cell.
    """
    solutions: list[tuple[str, list[int]]] = []
    open_label, open_cells = None, []
    for i, cell in enumerate(nb.cells):
        text = _markdown(cell)
        start, end, one = _START.match(text), _END.match(text), _ONE_CELL.match(text)
        if start:
            if open_label is not None:
                raise ValueError(f"{name}: cell {i} opens solution {start.group(1)!r} inside solution "
                                 f"{open_label!r}, which is not closed")
            open_label, open_cells = start.group(1), [i]
        elif end:
            if open_label is None:
                raise ValueError(f"{name}: cell {i} closes a solution that was never opened "
                                 f"(no {{solution-start}} before it)")
            solutions.append((open_label, [*open_cells, i]))
            open_label, open_cells = None, []
        elif open_label is not None:
            open_cells.append(i)
        elif one or SOLUTION_TAG in cell.get("metadata", {}).get("tags", []):
            label = one.group(1) if one and one.group(1) else f"cell-{i}"
            solutions.append((label, [i]))
    if open_label is not None:
        raise ValueError(f"{name}: solution {open_label!r} opened in cell {open_cells[0]} is never closed "
                         f"(no {{solution-end}} after it)")
    return solutions


def _clean(cell) -> nbformat.NotebookNode:
    cell = copy.deepcopy(cell)
    if cell.cell_type == "code":
        cell.outputs = []
        cell.execution_count = None
    cell.metadata.pop("execution", None)
    return cell


def _placeholders(label: str) -> list[nbformat.NotebookNode]:
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", label)[:48]
    md = nbformat.v4.new_markdown_cell(PLACEHOLDER_MARKDOWN, id=f"your-{safe}-md")
    code = nbformat.v4.new_code_cell(PLACEHOLDER_CODE, id=f"your-{safe}-code")
    return [md, code]


def student_notebook(nb: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with every solution replaced by placeholders and outputs cleared."""
    solutions = solution_cells(nb, name)
    first_of = {cells[0]: label for label, cells in solutions}
    removed = {i for _, cells in solutions for i in cells}
    out = copy.deepcopy(nb)
    out.cells = []
    for i, cell in enumerate(nb.cells):
        if i in first_of:
            out.cells.extend(_placeholders(first_of[i]))
        elif i not in removed:
            out.cells.append(_clean(cell))
    return out


def write_student_edition(chapters: Path, out_dir: Path) -> list[Path]:
    """Write the student edition of every ``chapters/*.ipynb`` into ``out_dir``; return the paths."""
    chapters, out_dir = Path(chapters), Path(out_dir)
    notebooks = sorted(chapters.glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"no notebooks found in {chapters}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        student = student_notebook(nb, path.name)
        nbformat.validate(student)
        target = out_dir / path.name
        nbformat.write(student, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.student", description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", type=Path, default=Path("chapters"), help="folder of chapter notebooks")
    parser.add_argument("--out", type=Path, default=Path("_build/student"), help="output folder")
    args = parser.parse_args(argv)
    return report_written(lambda: write_student_edition(args.chapters, args.out))


if __name__ == "__main__":
    raise SystemExit(main())
