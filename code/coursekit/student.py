"""The student edition: every lesson with its solutions removed and its self-checks kept.

``python -m coursekit.student`` (``make student``) reads ``chapters/*.ipynb`` and writes
``_build/student/<same name>.ipynb``, with the drawn diagrams the notebooks show beside them::

    _build/student/
        01_seq2seq_bottleneck.ipynb            the lesson, solutions removed, outputs cleared
        01_seq2seq_bottleneck_evidence.ipynb   its evidence notebook, as it is (outputs kept)
        diagrams/ch01_encoder_decoder.svg ...  every diagram a notebook references

In each lesson (see :mod:`coursekit.lessons`):

* every gated solution, from the markdown cell that opens it (```` ```{solution-start} label````)
  to the one that closes it (```` ```{solution-end}````), both included, becomes two cells: a
  markdown cell "Your solution here" and a code cell with ``# your code`` that sets to ``None`` each
  name the solution defined and the self-check after it reads (``my_reverse = None``), so that
  running the check before writing anything gives the check's own message ("expected a function,
  got NoneType"), never a NameError;
* a one-cell solution (```` ```{solution} label````) and any cell tagged ``solution`` are
  replaced the same way;
* the self-check cell that follows each solution is kept, so students can test their answer;
* every output and execution count is cleared, and the per-cell execution timestamps dropped.

Nothing else changes: the exercises' text, the chapter's narrative and code stay as they are.
An evidence notebook has no exercises and is copied as it is, outputs included (it is the record
of the runs behind the lesson; a student reads it without a four-minute run). A solution found in
an evidence notebook is an error, since it would be handed out.

Diagrams: a notebook shows a diagram with Markdown image syntax and a path relative to
``chapters/`` (``![alt](../book/diagrams/ch01_x.svg)``). Every image path that points into the
diagrams folder (``book/diagrams`` beside ``chapters/``) is rewritten to ``diagrams/ch01_x.svg``
and the file copied to ``_build/student/diagrams/``, so the student edition is one folder that
works wherever it is unpacked. An image path that points at a missing file is an error naming the
notebook and the cell.

The Korean lessons (``make student`` also writes ``_build/student/ko/`` from the Korean notebooks
``coursekit.i18n`` makes) get the placeholders in Korean: a notebook's ``course_language`` metadata picks
them (:data:`PLACEHOLDERS`).

The written notebooks are deterministic (the new cells get ids derived from the exercise label),
so building twice gives identical files.
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import re
import shutil
from pathlib import Path

import nbformat

from ._cli import report_written
from .lessons import is_evidence

__all__ = ["student_notebook", "solution_cells", "answer_names", "write_student_edition", "relink_diagrams", "main",
           "PLACEHOLDER_CODE", "PLACEHOLDER_MARKDOWN", "PLACEHOLDERS", "DIAGRAMS"]

PLACEHOLDER_MARKDOWN = "**Your solution here.** Write your answer in the code cell below, then run the check after it."
PLACEHOLDER_CODE = "# your code"
# The same in the language a notebook says it is in (metadata course_language; the Korean lessons of
# coursekit.i18n say "ko"): the placeholder's text, its code comment and the note on the None names.
PLACEHOLDERS = {
    "en": (PLACEHOLDER_MARKDOWN, PLACEHOLDER_CODE, " (replace each None)"),
    "ko": ("**여기에 풀이를 쓰십시오.** 아래 코드 셀에 답을 쓴 다음, 그 뒤의 검사 셀을 실행하십시오.",
           "# 여기에 코드를 쓰십시오", " (None을 모두 바꾸십시오)"),
}
SOLUTION_TAG = "solution"
DIAGRAMS = "diagrams"            # the folder of the student edition that holds the diagrams

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


def _bound(source: str) -> list[str]:
    """Top-level names a code cell binds (functions, classes, assignment targets), in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return list(dict.fromkeys(names))


def _read(source: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    except SyntaxError:
        return set()


def answer_names(nb: nbformat.NotebookNode, cells: list[int]) -> list[str]:
    """The names a solution (its cell indices in ``nb``) defines that the code cell after it reads."""
    after = next((c for c in nb.cells[cells[-1] + 1:] if c.cell_type == "code"), None)
    if after is None:
        return []
    read = _read(after.source)
    bound = [n for i in cells if nb.cells[i].cell_type == "code" for n in _bound(nb.cells[i].source)]
    return [n for n in dict.fromkeys(bound) if n in read]


def _placeholders(label: str, names: list[str] = (), language: str = "en") -> list[nbformat.NotebookNode]:
    safe = re.sub(r"[^A-Za-z0-9_-]", "-", label)[:48]
    prose, comment, replace = PLACEHOLDERS.get(language, PLACEHOLDERS["en"])
    md = nbformat.v4.new_markdown_cell(prose, id=f"your-{safe}-md")
    code = "\n".join([comment + (replace if names else ""), *(f"{n} = None" for n in names)])
    return [md, nbformat.v4.new_code_cell(code, id=f"your-{safe}-code")]


def student_notebook(nb: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """Return a copy of ``nb`` with every solution replaced by placeholders and outputs cleared."""
    solutions = solution_cells(nb, name)
    first_of = {cells[0]: (label, cells) for label, cells in solutions}
    removed = {i for _, cells in solutions for i in cells}
    out = copy.deepcopy(nb)
    out.cells = []
    for i, cell in enumerate(nb.cells):
        if i in first_of:
            label, cells = first_of[i]
            out.cells.extend(_placeholders(label, answer_names(nb, cells), nb.metadata.get("course_language", "en")))
        elif i not in removed:
            out.cells.append(_clean(cell))
    return out


# A Markdown image target, ![alt](path) or ![alt](path "title"), or an HTML src="path".
_IMAGE_TARGET = re.compile(r"(!\[[^\]]*\]\(\s*<?)([^)\s>]+)|(\bsrc=[\"'])([^\"']+)")


def relink_diagrams(nb: nbformat.NotebookNode, chapters: Path, diagrams: Path,
                    name: str = "notebook") -> tuple[nbformat.NotebookNode, dict[str, Path]]:
    """A copy of ``nb`` whose image paths into ``diagrams`` read ``diagrams/<file>``, and the files
    they name (``{new path: source file}``). Paths are relative to ``chapters``, as in the book.

    Raises ValueError, naming the notebook and the cell, for an image path into ``diagrams`` whose
    file does not exist.
    """
    diagrams = Path(os.path.abspath(diagrams))
    out, files = copy.deepcopy(nb), {}
    for i, cell in enumerate(out.cells):
        if cell.cell_type != "markdown":
            continue

        def relink(m, i=i, cell=cell):
            target = m.group(2) or m.group(4)
            if re.match(r"[a-z][a-z0-9+.-]*:|//|/|#", target, re.I):
                return m.group(0)
            path = Path(os.path.abspath(Path(chapters) / target))
            if diagrams not in path.parents:
                return m.group(0)
            if not path.is_file():
                raise ValueError(f"{name}: cell {i} ({cell.get('id', '?')}) shows the image {target!r}, "
                                 f"but {path} does not exist")
            new = f"{DIAGRAMS}/{path.relative_to(diagrams).as_posix()}"
            files[new] = path
            return (m.group(1) or m.group(3)) + new

        cell.source = _IMAGE_TARGET.sub(relink, cell.source)
    return out, files


def write_student_edition(chapters: Path, out_dir: Path, diagrams: Path | None = None) -> list[Path]:
    """Write the student edition of every ``chapters/*.ipynb`` into ``out_dir``, with the diagrams
    they show in ``out_dir/diagrams``; return the paths written. ``diagrams`` defaults to
    ``book/diagrams`` beside ``chapters``."""
    chapters, out_dir = Path(chapters), Path(out_dir)
    diagrams = Path(diagrams) if diagrams is not None else chapters.parent / "book" / "diagrams"
    notebooks = sorted(chapters.glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"no notebooks found in {chapters}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written, pictures = [], {}
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        if is_evidence(nb):
            found = solution_cells(nb, path.name)
            if found:
                raise ValueError(f"{path.name}: an evidence notebook is handed out as it is, but it holds "
                                 f"the solution(s) {[label for label, _ in found]}; move them to the lesson")
            student = nb
        else:
            student = student_notebook(nb, path.name)
        student, files = relink_diagrams(student, chapters, diagrams, path.name)
        pictures.update(files)
        nbformat.validate(student)
        target = out_dir / path.name
        nbformat.write(student, target)
        written.append(target)
    if (out_dir / DIAGRAMS).exists():
        shutil.rmtree(out_dir / DIAGRAMS)
    for rel, source in sorted(pictures.items()):
        target = out_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.student", description=__doc__.split("\n")[0])
    parser.add_argument("--chapters", type=Path, default=Path("chapters"), help="folder of chapter notebooks")
    parser.add_argument("--out", type=Path, default=Path("_build/student"), help="output folder")
    parser.add_argument("--diagrams", type=Path, default=None,
                        help="folder of the drawn diagrams (default: book/diagrams beside --chapters)")
    args = parser.parse_args(argv)
    return report_written(lambda: write_student_edition(args.chapters, args.out, args.diagrams))


if __name__ == "__main__":
    raise SystemExit(main())
