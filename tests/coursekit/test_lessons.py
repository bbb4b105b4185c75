"""The lesson conventions (coursekit.lessons): lessons and evidence, hidden cells, bookkeeping, the
page measure; first on small notebooks built here, then on the real chapters."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from coursekit import lessons
from coursekit.lessons import (
    BOOKKEEPING,
    HIDDEN_TAGS,
    bookkeeping_lines,
    evidence_for,
    evidence_notebooks,
    evidence_of,
    hidden_cell_problems,
    hidden_cells_consistent,
    is_evidence,
    lesson_notebooks,
    prose_words,
    reading_minutes,
    rebuilt_lessons,
    toc_sections,
    visible_code_lines,
)

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
TOC = ROOT / "_toc.yml"
CODE_LINE_LIMIT = 76     # what a code cell shows unwrapped at a 1280 px viewport (measured in Chromium)


def _code(src, *tags, hidden=None):
    cell = nbformat.v4.new_code_cell(src)
    if tags:
        cell.metadata["tags"] = list(tags)
    if hidden is None:
        hidden = any(t in HIDDEN_TAGS for t in tags)
    if hidden:
        cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def _md(src, *tags):
    cell = nbformat.v4.new_markdown_cell(src)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def _nb(*cells, course=None):
    nb = nbformat.v4.new_notebook(cells=list(cells))
    if course is not None:
        nb.metadata["course"] = course
    return nb


# ------------------------------------------------------------------ lessons and evidence

def test_evidence_is_told_by_its_metadata(tmp_path):
    lesson = _nb(_md("# 9. Demo"), course={"objectives": ["a"], "prerequisites": [], "minutes": 90,
                                           "exercises": {}})
    evidence = _nb(_md("# 9. Demo: the evidence"), course={"evidence_for": "09_demo"})
    assert evidence_for(evidence) == "09_demo" and is_evidence(evidence)
    assert evidence_for(lesson) is None and not is_evidence(lesson)
    assert not is_evidence(_nb(_md("no metadata")))
    assert not is_evidence(_nb(_md("x"), course={"evidence_for": ""}))
    nbformat.write(lesson, tmp_path / "09_demo.ipynb")
    nbformat.write(evidence, tmp_path / "09_demo_evidence.ipynb")
    nbformat.write(_nb(_md("# 8. Plain")), tmp_path / "08_plain.ipynb")
    assert [p.name for p in lesson_notebooks(tmp_path)] == ["08_plain.ipynb", "09_demo.ipynb"]
    assert [p.name for p in evidence_notebooks(tmp_path)] == ["09_demo_evidence.ipynb"]
    assert evidence_of(tmp_path) == {"09_demo": tmp_path / "09_demo_evidence.ipynb"}
    assert [p.name for p in rebuilt_lessons(tmp_path)] == ["09_demo.ipynb"]
    assert is_evidence(tmp_path / "09_demo_evidence.ipynb")            # a path works as well


def test_toc_sections(tmp_path):
    toc = tmp_path / "_toc.yml"
    toc.write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: Course\n    chapters:\n"
                   "      - file: chapters/09_demo\n        sections:\n          - file: chapters/09_demo_evidence\n"
                   "      - file: chapters/10_next\n")
    assert toc_sections(toc) == {"chapters/09_demo": ["chapters/09_demo_evidence"], "chapters/10_next": [],
                                 "chapters/09_demo_evidence": []}


# ------------------------------------------------------------------ hidden cells and bookkeeping

def test_visible_code_lines_skip_hidden_cells_and_blank_lines():
    nb = _nb(_code("a = 1\n\n   \nb = 2"), _code("glue('x', 1)", "remove-input"),
             _code("plt.plot(x)\nplt.show()", "hide-input"), _code("import os", "remove-cell"),
             _code("c = 3", "nbval-ignore-output"), _md("```python\nnot_code_cell = 1\n```"))
    assert [(line.cell, line.text) for line in visible_code_lines(nb)] == [(0, "a = 1"), (0, "b = 2"), (4, "c = 3")]


@pytest.mark.parametrize("pattern", BOOKKEEPING)
def test_each_bookkeeping_pattern_is_caught_on_view_and_only_there(pattern):
    line = f"x = {pattern}" if pattern != "%matplotlib" else "%matplotlib inline"
    nb = _nb(_code(f"y = 1\n{line}"), _code(line, "remove-input"), _code(line, "hide-input"))
    assert bookkeeping_lines(nb) == [(0, line)]


def test_teaching_code_is_not_bookkeeping():
    nb = _nb(_code("weights = torch.softmax(scores, dim=-1)\nout = weights @ values\nplt.plot(out)\n"
                   "expected = 3  # expect nothing\nresults = [r for r in runs]"))
    assert bookkeeping_lines(nb) == []


def test_hidden_tags_and_source_hidden_go_together():
    good = _nb(_code("glue('a', 1)", "remove-input"), _code("plot()", "hide-input"), _code("x = 1"),
               _code("setup()", "remove-cell", "nbval-ignore-output"), _md("text"))
    assert hidden_cells_consistent(good) and hidden_cell_problems(good) == []
    tagged_only = _nb(_code("x = 1"), _code("glue('a', 1)", "remove-input", hidden=False))
    assert not hidden_cells_consistent(tagged_only)
    assert hidden_cell_problems(tagged_only) == [
        f"cell 1 ({tagged_only.cells[1].id}) is tagged ['remove-input'] but has no metadata "
        '"jupyter": {"source_hidden": true}']
    collapsed_only = _nb(_code("x = 1", "nbval-ignore-output", hidden=True))
    assert not hidden_cells_consistent(collapsed_only)
    assert "has jupyter.source_hidden but none of the tags" in hidden_cell_problems(collapsed_only)[0]
    false_flag = _nb(_code("x = 1"))
    false_flag.cells[0].metadata["jupyter"] = {"source_hidden": False}
    assert hidden_cells_consistent(false_flag)


# ------------------------------------------------------------------ the page measure

def test_prose_words_count_what_a_reader_sees():
    text = ("(sec-demo)=\n## 9.1 Two words\n\n<!-- an author's note, never shown -->\n"
            "The {term}`query` meets {term}`the keys <key>`: {glue:}`acc`% of $q_t = W x_t$ (see "
            "{cite}`vaswani2017attention,bahdanau2015neural` and {doc}`the setup <../book/setup>`).\n\n"
            "![A long alt text that nobody counts](../book/diagrams/ch09_x.svg)\n\n"
            "*Diagram.* One caption.\n\n"
            "```{admonition} Learning objectives\n:class: tip\nRead **this**, [a link](https://x.org).\n```\n\n"
            "$$\nh_t = f(h_{t-1}, x_t)\n$$\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    # 9.1 Two words | The query meets the keys : GLUE % of q_t = W x_t (see REF and the setup).
    # Diagram. One caption. | Learning objectives | Read this, a link. | h_t = f(h_{t-1}, x_t) | a b 1 2
    expected = 3 + (3 + 2 + 1 + 1 + 1 + 3 + 1 + 1 + 2) + 3 + 2 + 4 + 3 + 4
    assert prose_words(_nb(_md(text))) == expected


def test_exercise_fences_and_options_are_not_words():
    text = "```{exercise}\n:label: ex-demo\n\nDo it now.\n```\n```{solution-start} ex-demo\n:class: dropdown\n```"
    assert prose_words(_nb(_md(text))) == 3


def test_removed_markdown_cells_do_not_count():
    assert prose_words(_nb(_md("one two three"), _md("four five", "remove-cell"))) == 3


def test_reading_minutes_is_words_over_200_plus_lines_over_10():
    words = " ".join(["word"] * 400)
    nb = _nb(_md(words), _code("\n".join(f"x{i} = {i}" for i in range(30))),
             _code("\n".join(["hidden()"] * 50), "hide-input"))
    assert reading_minutes(nb) == pytest.approx(400 / 200 + 30 / 10)


def test_exercises_claims_and_check_cells_are_found():
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell("## 1.1 Idea"),
        v4.new_code_cell("expect('a claim', True)\nx = 1"),
        v4.new_code_cell("unexpected(3)\nsomething.expect(2)"),
        v4.new_markdown_cell("## Exercises\n\n```{exercise}\n:label: ex-one\nDo it.\n```\n\n"
                             "```{exercise}\nAgain.\n```"),
        v4.new_code_cell("from m import checks\nchecks.check_one(x)"),
        v4.new_code_cell("check_two(x)\nexpect('inside', True)"),
        v4.new_code_cell("recheck_three(x)"),
    ])
    assert lessons.exercise_labels(nb) == ["ex-one", "#3"]
    assert [c for c, _ in lessons.claim_lines(nb)] == [1, 5]
    assert [c for c, _ in lessons.claims_in_exercises(nb)] == [5]
    assert lessons.check_cells(nb) == [4, 5]


# ------------------------------------------------------------------ the real chapters

ALL = sorted(CHAPTERS.glob("*.ipynb"))
REBUILT = rebuilt_lessons(CHAPTERS)
EVIDENCE = evidence_notebooks(CHAPTERS)


def test_the_chapters_have_lessons():
    assert len(lesson_notebooks(CHAPTERS)) >= 7


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_hidden_tags_and_metadata_agree(path):
    assert hidden_cell_problems(path) == []


@pytest.mark.parametrize("path", REBUILT, ids=lambda p: p.stem)
def test_rebuilt_lesson_shows_no_bookkeeping(path):
    found = bookkeeping_lines(path)
    assert not found, f"{path.name}: {len(found)} visible bookkeeping line(s); hide them (remove-input, " \
                      f"hide-input or remove-cell) or move them into the package: " \
                      + "; ".join(f"cell {c}: {t.strip()}" for c, t in found[:10])


@pytest.mark.parametrize("path", REBUILT, ids=lambda p: p.stem)
def test_rebuilt_lesson_reads_within_its_budget(path):
    minutes = reading_minutes(path)
    assert minutes <= lessons.READING_MINUTES_BUDGET, (
        f"{path.name}: {minutes:.1f} reading minutes ({prose_words(path)} prose words, "
        f"{len(visible_code_lines(path))} visible code lines), more than {lessons.READING_MINUTES_BUDGET}")


@pytest.mark.parametrize("path", REBUILT, ids=lambda p: p.stem)
def test_rebuilt_lesson_has_at_most_six_exercises(path):
    found = lessons.exercise_labels(path)
    assert len(found) <= lessons.EXERCISES_BUDGET, (
        f"{path.name}: {len(found)} exercises ({', '.join(found)}), more than {lessons.EXERCISES_BUDGET}; "
        "move the others to the evidence page")


@pytest.mark.parametrize("path", REBUILT, ids=lambda p: p.stem)
def test_rebuilt_lesson_checks_at_most_eight_claims_none_in_its_exercises(path):
    found = lessons.claim_lines(path)
    assert len(found) <= lessons.CLAIM_LINES_BUDGET, (
        f"{path.name}: {len(found)} claim lines, more than {lessons.CLAIM_LINES_BUDGET}: "
        + "; ".join(f"cell {c}: {t.strip()[:50]}" for c, t in found))
    inside = lessons.claims_in_exercises(path)
    assert not inside, f"{path.name}: claim lines in the exercises: " + "; ".join(
        f"cell {c}: {t.strip()[:50]}" for c, t in inside)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_no_check_verdict_is_shown_before_the_student_runs_it(path):
    nb = nbformat.read(path, as_version=4)
    shown = [i for i in lessons.check_cells(nb) if "remove-output" not in nb.cells[i].metadata.get("tags", [])]
    assert not shown, f"{path.name}: check cells {shown} show their stored verdict on the site; tag them " \
                      "remove-output"


@pytest.mark.parametrize("path", REBUILT, ids=lambda p: p.stem)
def test_rebuilt_lesson_code_lines_fit_the_column(path):
    long = [(c, len(t), t.strip()[:60]) for c, t in visible_code_lines(path) if len(t) > CODE_LINE_LIMIT]
    assert not long, f"{path.name}: visible code lines longer than {CODE_LINE_LIMIT} characters " \
                     f"(cell, length, start): {long[:10]}"


@pytest.mark.parametrize("path", EVIDENCE, ids=lambda p: p.stem)
def test_evidence_points_at_its_lesson_and_sits_under_it_in_the_toc(path):
    lesson = evidence_for(path)
    assert (CHAPTERS / f"{lesson}.ipynb").is_file(), f"{path.name} supports {lesson!r}, which is not a chapter"
    assert not is_evidence(CHAPTERS / f"{lesson}.ipynb"), f"{path.name} points at another evidence notebook"
    assert path.stem == f"{lesson}{lessons.EVIDENCE_SUFFIX}", \
        f"{path.name}: an evidence notebook is named after its lesson, {lesson}{lessons.EVIDENCE_SUFFIX}.ipynb"
    course = nbformat.read(path, as_version=4).metadata["course"]
    assert set(course) == {"evidence_for"}, f"{path.name}: an evidence notebook has no objectives or " \
                                            f"exercises; its course metadata has {sorted(course)}"
    sections = toc_sections(TOC)
    assert f"chapters/{path.stem}" in sections.get(f"chapters/{lesson}", []), \
        f"_toc.yml does not list chapters/{path.stem} in the sections: of chapters/{lesson}"
