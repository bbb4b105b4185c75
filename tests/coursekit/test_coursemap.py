"""Chapter metadata and the course map (coursekit.coursemap).

The checks on real chapters are parametrised over the chapters that carry ``course`` metadata;
the same functions are exercised on a synthetic notebook below, so they are tested before any
chapter has metadata.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat
import pytest
from coursekit.coursemap import (
    KEY,
    admonition_objectives,
    exercise_labels,
    main,
    render_course_map,
    validate_course_metadata,
)
from coursekit.lessons import is_evidence

ROOT = Path(__file__).resolve().parents[2]
CHAPTER_FILES = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
WITH_METADATA = [p for p in CHAPTER_FILES if KEY in nbformat.read(p, as_version=4).metadata and not is_evidence(p)]
EVIDENCE = [p for p in CHAPTER_FILES if is_evidence(p)]
PAGE = ROOT / "book" / "course_map.md"


# ------------------------------------------------------------------ real chapters

@pytest.mark.parametrize("path", WITH_METADATA, ids=lambda p: p.stem)
def test_chapter_metadata_schema(path):
    validate_course_metadata(nbformat.read(path, as_version=4), path.name)


@pytest.mark.parametrize("path", WITH_METADATA, ids=lambda p: p.stem)
def test_chapter_is_on_the_course_map(path):
    nb = nbformat.read(path, as_version=4)
    assert f"<../chapters/{path.stem}>" in PAGE.read_text(encoding="utf-8")
    for label in exercise_labels(nb):
        assert f"{{numref}}`{label}`" in PAGE.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", EVIDENCE, ids=lambda p: p.stem)
def test_evidence_page_is_linked_from_its_chapter(path):
    assert f"<../chapters/{path.stem}>" in PAGE.read_text(encoding="utf-8")


def test_course_map_page_is_up_to_date():
    assert PAGE.read_text(encoding="utf-8") == render_course_map(CHAPTER_FILES), \
        "book/course_map.md is out of date: run  .venv/bin/python -m coursekit.coursemap"


# ------------------------------------------------------------------ a synthetic chapter

def _chapter(**overrides) -> nbformat.NotebookNode:
    cells = [
        nbformat.v4.new_markdown_cell(
            "# 9. Demo chapter\n\nIntro.\n\n```{admonition} Learning objectives\n:class: tip\n"
            "After this chapter you can\n1. compute a softmax by hand;\n2. explain why rows sum to 1,\n"
            "   and why it matters; and\n3. mask a key.\n```\n"),
        nbformat.v4.new_markdown_cell("```{exercise}\n:label: ex-demo-a\n\nDo a.\n```"),
        nbformat.v4.new_markdown_cell("```{exercise}\n:label: ex-demo-b\n\nDo b.\n```"),
    ]
    meta = {"objectives": ["compute a softmax by hand", "explain why rows sum to 1, and why it matters",
                           "mask a key"],
            "prerequisites": ["Chapter 3"], "minutes": 90,
            "exercises": {"ex-demo-a": [1, 2], "ex-demo-b": [3]}}
    meta.update(overrides)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata[KEY] = meta
    return nb


def test_synthetic_chapter_parses_and_validates():
    nb = _chapter()
    assert exercise_labels(nb) == ["ex-demo-a", "ex-demo-b"]
    assert admonition_objectives(nb) == ["compute a softmax by hand;", "explain why rows sum to 1, and why it "
                                         "matters; and", "mask a key."]
    assert validate_course_metadata(nb)["minutes"] == 90


@pytest.mark.parametrize("change, message", [
    (lambda m: m.pop("minutes"), "exactly the fields"),
    (lambda m: m.update(extra=1), "exactly the fields"),
    (lambda m: m.update(objectives=[]), "objectives must be a list"),
    (lambda m: m.update(prerequisites="Chapter 3"), "prerequisites must be a list"),
    (lambda m: m.update(minutes=5), "minutes must be an int"),
    (lambda m: m.update(minutes=90.0), "minutes must be an int"),
    (lambda m: m["objectives"].__setitem__(2, "mask a query"), "differ from the 'Learning objectives'"),
    (lambda m: m["exercises"].pop("ex-demo-b"), "every exercise label"),
    (lambda m: m["exercises"].update({"ex-demo-b": [4]}), r"objective numbers in 1\.\.3"),
    (lambda m: m["exercises"].update({"ex-demo-b": []}), "objective numbers"),
])
def test_schema_violations_are_named(change, message):
    nb = _chapter()
    change(nb.metadata[KEY])
    with pytest.raises(ValueError, match=message):
        validate_course_metadata(nb, "demo.ipynb")


def test_missing_metadata_is_named():
    nb = _chapter()
    del nb.metadata[KEY]
    with pytest.raises(ValueError, match="no notebook metadata 'course'"):
        validate_course_metadata(nb, "demo.ipynb")


def test_render_and_check_round_trip(tmp_path, capsys):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    nbformat.write(_chapter(), chapters / "09_demo.ipynb")
    plain = copy.deepcopy(_chapter())
    del plain.metadata[KEY]
    nbformat.write(plain, chapters / "08_plain.ipynb")          # no metadata: left off the map
    page = tmp_path / "course_map.md"
    args = ["--chapters", str(chapters), "--out", str(page)]
    assert main([*args, "--check"]) == 1                        # no page yet
    assert main(args) == 0
    assert main([*args, "--check"]) == 0
    text = page.read_text(encoding="utf-8")
    assert "08_plain" not in text
    assert "| {doc}`9. Demo chapter <../chapters/09_demo>` | 90 | 3 | 2 | Chapter 3 |" in text
    assert "| 1 | compute a softmax by hand | {numref}`ex-demo-a` |" in text
    assert re.search(r"\| 3 \| mask a key \| \{numref\}`ex-demo-b` \|", text)
    nb = _chapter(minutes=60)
    nbformat.write(nb, chapters / "09_demo.ipynb")
    assert main([*args, "--check"]) == 1                        # the notebook changed
    assert "out of date" in capsys.readouterr().err
    nb.metadata[KEY]["minutes"] = 1
    nbformat.write(nb, chapters / "09_demo.ipynb")
    assert main(args) == 1 and "minutes" in capsys.readouterr().err


def _evidence(lesson="09_demo", **extra) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# 9. Demo: the evidence\n\nEvery seed.")])
    nb.metadata[KEY] = {"evidence_for": lesson, **extra}
    return nb


def test_evidence_is_mentioned_under_its_lesson_and_has_no_row(tmp_path):
    chapters = tmp_path / "chapters"
    chapters.mkdir()
    nbformat.write(_chapter(), chapters / "09_demo.ipynb")
    nbformat.write(_evidence(), chapters / "09_demo_evidence.ipynb")
    text = render_course_map(sorted(chapters.glob("*.ipynb")))
    assert "The evidence behind its claims (every sweep, control and check): " \
           "{doc}`9. Demo: the evidence <../chapters/09_demo_evidence>`." in text
    assert text.count("<../chapters/09_demo_evidence>") == 1                      # no row, no section
    assert text.index("## 9. Demo chapter") < text.index("09_demo_evidence") < text.index("| # | Objective")
    assert "| **Total** | **90** |" in text


@pytest.mark.parametrize("evidence, message", [
    (_evidence(objectives=["x"]), "holds only 'evidence_for'"),
    (_evidence("08_missing"), "evidence_for names '08_missing', which is not a chapter"),
])
def test_bad_evidence_metadata_is_named(tmp_path, evidence, message):
    nbformat.write(_chapter(), tmp_path / "09_demo.ipynb")
    nbformat.write(evidence, tmp_path / "09_demo_evidence.ipynb")
    with pytest.raises(ValueError, match=rf"09_demo_evidence.ipynb: .*{message}"):
        render_course_map(sorted(tmp_path.glob("*.ipynb")))


def test_empty_course_map_says_so():
    assert "No chapter carries course metadata yet." in render_course_map([])


# ------------------------------------------------------------------ the teaching guide

TEACHING = ROOT / "book" / "teaching.md"


def _sessions() -> dict[str, list[int]]:
    sessions, current = {}, None
    for line in TEACHING.read_text(encoding="utf-8").splitlines():
        if line.startswith("### Session"):
            current = line
            sessions[current] = []
        elif line.startswith("#"):
            current = None
        elif current and (m := re.match(r"^\|\s*(\d+)\s*\|", line)):
            sessions[current].append(int(m.group(1)))
    return sessions


def test_eight_sessions_of_ninety_minutes():
    sessions = _sessions()
    assert len(sessions) == 8
    for title, minutes in sessions.items():
        assert sum(minutes) == 90, f"{title}: parts add up to {sum(minutes)} minutes, not 90"


def test_teaching_guide_names_real_debugging_code_and_exercises():
    import attention_course.teaching.debugging as debugging

    text = TEACHING.read_text(encoding="utf-8")
    for name in re.findall(r"`((?:attention|split|merge|key|check|diagnose)_\w+)`", text):
        assert hasattr(debugging, name), f"teaching.md names {name}, which attention_course.teaching.debugging lacks"
    labels = {label for p in CHAPTER_FILES for label in exercise_labels(nbformat.read(p, as_version=4))}
    for label in re.findall(r"\{ref\}`(ex-[\w-]+) <", text):
        assert label in labels, f"teaching.md assigns {label}, which no chapter defines"
