"""The student edition, run as a student runs it.

Each lesson's student notebook (:func:`coursekit.student.student_notebook`) is executed top to bottom in
a fresh kernel, in the folder the student edition is written to. At every exercise the test does what a
student does twice:

* runs the empty answer cell, then the self-check after it: the check must fail with its own message
  (a ``CheckFailed`` that says what is wrong), never with a NameError, a TypeError or any other crash;
* pastes the reference solution (the lesson's own solution cells) back in, runs it, then the self-check
  again: the check must pass and say ``Correct``.

So every lesson is executed once and each check is seen failing helpfully and passing. Evidence pages
have no exercises and are not run here (nbval runs them).
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from coursekit.lessons import lesson_notebooks
from coursekit.student import PLACEHOLDER_CODE, solution_cells, student_notebook
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
LESSONS = [p for p in lesson_notebooks(ROOT / "chapters")
           if solution_cells(nbformat.read(p, as_version=4), p.name)]


def _error(cell) -> tuple[str, str] | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out["ename"], out["evalue"]
    return None


def _text(cell) -> str:
    return "".join(out.get("text", "") for out in cell.get("outputs", []) if out.get("output_type") == "stream")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_each_check_fails_helpfully_when_empty_and_passes_with_the_solution(path, tmp_path):
    original = nbformat.read(path, as_version=4)
    solutions = {label: [original.cells[i] for i in cells if original.cells[i].cell_type == "code"]
                 for label, cells in solution_cells(original, path.name)}
    student = student_notebook(original, path.name)
    client = NotebookClient(student, timeout=900, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    problems, seen = [], 0
    with client.setup_kernel():
        cells = student.cells
        i = 0
        while i < len(cells):
            cell = cells[i]
            if cell.cell_type != "code":
                i += 1
                continue
            if not cell.source.startswith(PLACEHOLDER_CODE):
                client.execute_cell(cell, i)
                if (err := _error(cell)) is not None:
                    pytest.fail(f"{path.name}: cell {i} raised {err[0]}: {err[1]}\n{cell.source[:300]}")
                i += 1
                continue
            label = cell.id.removeprefix("your-").removesuffix("-code")
            check_index = next(j for j in range(i + 1, len(cells)) if cells[j].cell_type == "code")
            check = cells[check_index]
            seen += 1
            # 1. the empty answer, then its check: a helpful failure
            client.execute_cell(cell, i)
            client.execute_cell(check, check_index)
            err = _error(check)
            if err is None:
                problems.append(f"{label}: the check passed an empty answer")
            elif err[0] != "CheckFailed" or not err[1].strip():
                problems.append(f"{label}: an empty answer made the check crash with {err[0]}: {err[1][:200]}")
            # 2. the reference solution pasted back, then its check: a pass
            for k, solution in enumerate(solutions[next(lb for lb in solutions if lb.startswith(label))]):
                pasted = nbformat.v4.new_code_cell(solution.source)
                client.execute_cell(pasted, i)
                if (err := _error(pasted)) is not None:
                    pytest.fail(f"{path.name}: the reference solution of {label} (cell {k}) raised {err[0]}: {err[1]}")
            check.outputs = []
            client.execute_cell(check, check_index)
            if (err := _error(check)) is not None:
                problems.append(f"{label}: the reference solution failed its check: {err[0]}: {err[1][:200]}")
            elif "Correct" not in _text(check):
                problems.append(f"{label}: the check printed no 'Correct' for the reference solution")
            i = check_index + 1
    assert seen == len(solutions), f"{path.name}: {seen} placeholders run, {len(solutions)} solutions"
    assert not problems, f"{path.name}:\n" + "\n".join(problems)
