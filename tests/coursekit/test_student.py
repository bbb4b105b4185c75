"""The student edition (``make student``): no solution leaks, self-checks stay, notebooks still run.

The no-leak and structure checks run on every chapter. Executing a student notebook up to its
first exercise re-runs the chapter's experiments, so by default only the chapters listed in
EXECUTED_CHAPTERS (the fastest one) are executed; set STUDENT_EXECUTE_ALL=1 to execute all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from coursekit.lessons import evidence_notebooks, lesson_notebooks, markdown_images
from coursekit.student import (
    DIAGRAMS,
    PLACEHOLDER_CODE,
    PLACEHOLDER_MARKDOWN,
    PLACEHOLDERS,
    main,
    solution_cells,
    student_notebook,
    write_student_edition,
)

ROOT = Path(__file__).resolve().parents[2]
ALL_NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
CHAPTERS = lesson_notebooks(ROOT / "chapters")              # the lessons: they hold the exercises
EVIDENCE = evidence_notebooks(ROOT / "chapters")
EXECUTED_CHAPTERS = ["06_attention_cca"]  # about 10 s up to its first exercise on one core
EXERCISE = re.compile(r"^\s*(?:`{3,}|:{3,})\s*\{exercise\}")


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _is_trivial(line: str) -> bool:
    """Lines too generic to count as leaked solution code: blank, fences, directive options."""
    s = line.strip()
    return len(s) < 4 or re.fullmatch(r"[`:~\-#*()\[\]{}]*", s) is not None or s.startswith(":class:")


def _lines(cells) -> set[str]:
    return {line.strip() for cell in cells for line in cell.source.splitlines()}


@pytest.fixture(scope="module")
def student_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    write_student_edition(ROOT / "chapters", out)
    return out


def test_chapters_found():
    assert CHAPTERS, "no chapter notebooks in chapters/"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_line_leaks(path, student_dir):
    nb = _read(path)
    solutions = solution_cells(nb, path.name)
    assert solutions, f"{path.name} has no gated solutions"
    in_solution = {i for _, cells in solutions for i in cells}
    outside = _lines(c for i, c in enumerate(nb.cells) if i not in in_solution)
    secret = {line for line in _lines(nb.cells[i] for i in in_solution)
              if not _is_trivial(line) and line not in outside}
    assert secret, f"{path.name}: the solutions contain no code or prose of their own?"
    student = _read(student_dir / path.name)
    leaked = secret & _lines(student.cells)
    assert not leaked, f"{path.name}: solution lines in the student edition: {sorted(leaked)[:5]}"
    assert not any("{solution" in c.source for c in student.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_self_checks_and_exercises_kept(path, student_dir):
    nb, student = _read(path), _read(student_dir / path.name)
    solutions = solution_cells(nb, path.name)
    sources = [c.source for c in student.cells]
    for label, cells in solutions:
        after = nb.cells[cells[-1] + 1]
        assert after.cell_type == "code" and "check" in after.source, \
            f"{path.name}: no self-check cell right after solution {label!r}"
        assert after.source in sources, f"{path.name}: the self-check after {label!r} was dropped"
        i = sources.index(after.source)
        assert sources[i - 1].startswith(PLACEHOLDER_CODE) and sources[i - 2] == PLACEHOLDER_MARKDOWN
    exercises = [c.source for c in nb.cells if EXERCISE.match(c.source)]
    assert len(exercises) == len(solutions)
    assert all(e in sources for e in exercises)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_outputs_cleared(path, student_dir):
    student = _read(student_dir / path.name)
    for cell in student.cells:
        assert "execution" not in cell.metadata
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    nbformat.validate(student)


def test_deterministic(tmp_path, student_dir):
    write_student_edition(ROOT / "chapters", tmp_path)
    for path in ALL_NOTEBOOKS:
        assert (tmp_path / path.name).read_bytes() == (student_dir / path.name).read_bytes()


@pytest.mark.parametrize("path", EVIDENCE, ids=lambda p: p.stem)
def test_evidence_handed_out_as_it_is(path, student_dir):
    nb, student = _read(path), _read(student_dir / path.name)
    assert not solution_cells(nb, path.name)
    assert [c.cell_type for c in student.cells] == [c.cell_type for c in nb.cells]
    assert [c.get("outputs") for c in student.cells] == [c.get("outputs") for c in nb.cells]


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_every_image_of_the_student_edition_is_there(path, student_dir):
    """Each image a student notebook shows resolves, from the notebook's folder, to a file that exists."""
    student = _read(student_dir / path.name)
    for i, cell in enumerate(student.cells):
        for _, target in markdown_images(cell.source) if cell.cell_type == "markdown" else []:
            if not re.match(r"[a-z]+:|/", target):
                assert (student_dir / target).is_file(), f"{path.name} cell {i}: {target} is missing"
                assert target.startswith(f"{DIAGRAMS}/"), f"{path.name} cell {i}: {target} not relinked"


# ---------------------------------------------------------------- synthetic notebooks

def _nb(*cells):
    made = []
    for kind, src, *tags in cells:
        cell = nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src)
        if tags:
            cell.metadata["tags"] = tags
        made.append(cell)
    return nbformat.v4.new_notebook(cells=made)


def test_gated_one_cell_and_tagged_solutions_removed():
    nb = _nb(("md", "```{exercise}\n:label: ex-a\nDo it.\n```"),
             ("md", "```{solution-start} ex-a\n:class: dropdown\n```\nThe secret idea."),
             ("code", "answer = 42"),
             ("md", "```{solution-end}\n```"),
             ("code", "check(answer)"),
             ("md", "```{solution} ex-b\nOne-cell secret.\n```"),
             ("code", "tagged_secret = 1", "solution"))
    out = student_notebook(nb)
    text = "\n".join(c.source for c in out.cells)
    for secret in ("The secret idea", "answer = 42", "One-cell secret", "tagged_secret"):
        assert secret not in text
    assert "check(answer)" in text and text.count(PLACEHOLDER_CODE) == 3
    assert [c.id for c in out.cells if c.source.startswith(PLACEHOLDER_CODE)] == \
        ["your-ex-a-code", "your-ex-b-code", "your-cell-6-code"]
    # the name the check reads is set to None, so an unanswered check fails with its own message
    assert out.cells[2].source == PLACEHOLDER_CODE + " (replace each None)\nanswer = None"
    assert out.cells[-1].source == PLACEHOLDER_CODE


def test_a_korean_lesson_gets_korean_placeholders():
    """The Korean student edition (make student, from the Korean lessons, whose metadata says
    course_language: ko) asks for the answer in Korean; the names the check reads are still set to None."""
    nb = _nb(("md", "```{solution-start} ex-a\n:class: dropdown\n```\n비밀."),
             ("code", "answer = 42"),
             ("md", "```{solution-end}\n```"),
             ("code", "check(answer)"))
    nb.metadata["course_language"] = "ko"
    out = student_notebook(nb)
    prose, comment, replace = PLACEHOLDERS["ko"]
    assert out.cells[0].source == prose and out.cells[1].source == f"{comment}{replace}\nanswer = None"
    assert "비밀" not in "\n".join(c.source for c in out.cells)


SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><text>x</text></svg>'


def _course(tmp_path):
    chapters, diagrams = tmp_path / "chapters", tmp_path / "book" / "diagrams"
    chapters.mkdir()
    diagrams.mkdir(parents=True)
    (diagrams / "ch09_a.svg").write_text(SVG)
    (diagrams / "ch09_unused.svg").write_text(SVG)
    lesson = _nb(("md", "# 9. Demo\n\n![A drawing of a.](../book/diagrams/ch09_a.svg)\n\n*Diagram.* A."),
                 ("code", "x = 1"),
                 ("md", "```{exercise}\n:label: ex-a\nDo it.\n```"),
                 ("md", "```{solution-start} ex-a\n:class: dropdown\n```\nSecret."),
                 ("md", "```{solution-end}\n```"),
                 ("code", "check(x)"),
                 ("md", '<img alt="b" src="../book/diagrams/ch09_a.svg"> and a [link](../book/setup.md)'))
    lesson.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    evidence = _nb(("md", "# 9. Demo: the evidence\n\n![Again a.](../book/diagrams/ch09_a.svg)"), ("code", "y = 2"))
    evidence.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="checked: y (y = 2)\n")]
    evidence.cells[1].execution_count = 3
    evidence.metadata["course"] = {"evidence_for": "09_demo"}
    nbformat.write(lesson, chapters / "09_demo.ipynb")
    nbformat.write(evidence, chapters / "09_demo_evidence.ipynb")
    return chapters


def test_evidence_as_it_is_lessons_without_solutions_and_diagrams_beside_them(tmp_path):
    chapters = _course(tmp_path)
    out = tmp_path / "student"
    written = write_student_edition(chapters, out)
    assert sorted(p.relative_to(out).as_posix() for p in written) == \
        ["09_demo.ipynb", "09_demo_evidence.ipynb", "diagrams/ch09_a.svg"]       # only what is shown
    assert (out / "diagrams" / "ch09_a.svg").read_text() == SVG
    lesson = _read(out / "09_demo.ipynb")
    text = "\n".join(c.source for c in lesson.cells)
    assert "![A drawing of a.](diagrams/ch09_a.svg)" in text and 'src="diagrams/ch09_a.svg"' in text
    assert "[link](../book/setup.md)" in text                                     # links are not images
    assert "Secret." not in text and lesson.cells[1].outputs == []
    evidence = _read(out / "09_demo_evidence.ipynb")
    original = _read(chapters / "09_demo_evidence.ipynb")
    assert evidence.cells[0].source == "# 9. Demo: the evidence\n\n![Again a.](diagrams/ch09_a.svg)"
    assert evidence.cells[1] == original.cells[1] and evidence.metadata == original.metadata   # outputs kept


def test_a_missing_diagram_and_a_solution_in_the_evidence_are_named(tmp_path):
    chapters = _course(tmp_path)
    (tmp_path / "book" / "diagrams" / "ch09_a.svg").unlink()
    with pytest.raises(ValueError, match=r"09_demo.ipynb: cell 0 \(.*\) shows the image '../book/diagrams/ch09_a.svg'"):
        write_student_edition(chapters, tmp_path / "student")
    (tmp_path / "book" / "diagrams" / "ch09_a.svg").write_text(SVG)
    evidence = _read(chapters / "09_demo_evidence.ipynb")
    evidence.cells.append(nbformat.v4.new_markdown_cell("```{solution} ex-z\nA leak.\n```"))
    nbformat.write(evidence, chapters / "09_demo_evidence.ipynb")
    with pytest.raises(ValueError, match=r"09_demo_evidence.ipynb: an evidence notebook .* \['ex-z'\]"):
        write_student_edition(chapters, tmp_path / "student")


@pytest.mark.parametrize("cells, message", [
    ([("md", "```{solution-start} ex-a\n```"), ("code", "x = 1")], "never closed"),
    ([("md", "```{solution-end}\n```")], "never opened"),
    ([("md", "```{solution-start} a\n```"), ("md", "```{solution-start} b\n```")], "inside solution 'a'"),
])
def test_malformed_solutions_raise(cells, message):
    with pytest.raises(ValueError, match=message):
        solution_cells(_nb(*cells), "bad.ipynb")


def test_main_writes_every_chapter(tmp_path, capsys):
    assert main(["--chapters", str(ROOT / "chapters"), "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.ipynb")) == [p.name for p in ALL_NOTEBOOKS]
    assert main(["--chapters", str(tmp_path / "none"), "--out", str(tmp_path)]) == 1
    assert "no notebooks" in capsys.readouterr().err


# ---------------------------------------------------------------- the student edition runs

def _executed():
    if os.environ.get("STUDENT_EXECUTE_ALL") == "1":
        return CHAPTERS
    return [p for p in CHAPTERS if p.stem in EXECUTED_CHAPTERS]


@pytest.mark.parametrize("path", _executed(), ids=lambda p: p.stem)
def test_student_notebook_runs_up_to_first_exercise(path, student_dir):
    from nbclient import NotebookClient

    student = _read(student_dir / path.name)
    first = next(i for i, c in enumerate(student.cells) if c.cell_type == "markdown" and EXERCISE.match(c.source))
    student.cells = student.cells[:first]
    client = NotebookClient(student, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "chapters")}})
    client.execute()   # raises CellExecutionError on the first failing cell
    errors = [o for c in student.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
