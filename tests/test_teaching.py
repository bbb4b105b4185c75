"""The teaching guide (book/teaching.md) against itself and the chapters.

For each session ("### Session N: ..."), session N teaching lesson N (an evidence page has no session):

* it states its length ("Length: 90 minutes.") and the minutes of its timing table add up to it;
* it has a discussion prompt ("**Discussion.**") and at least two misconceptions
  ("**Misconceptions.**", a list), each naming where the chapter refutes it as
  "Section N.M, *heading*": the section must exist in chapter N with that number, and the heading
  must be that section's heading or one of its sub-headings (so renaming a section in a chapter
  without updating the guide fails here);
* every section number its timing table names ("Section 7.3", "Sections 7.1 and 7.2") exists;
* its timings give time to the lesson, the exercises and the discussion (rows "Lesson ...",
  "Exercises ...", "Discussion ...");
* each misconception links with ``{ref}`` to a target ``(label)=`` that the lesson sets on the cell
  refuting it, beside the code cell whose figure or checked claims refute it;
* it offers the lesson's evidence page, where the lesson has one.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "book" / "teaching.md"
CHAPTERS = {int(p.name[:2]): p for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")
            if not p.stem.endswith("_evidence")}   # the lessons; an evidence page has no session
REFUTED = re.compile(r"Section (\d+)\.(\d+), \*(.+?)\*")


def sessions(text: str) -> dict[int, str]:
    """The text of every "### Session N" part of the guide, by N."""
    parts = re.split(r"^### Session (\d+):.*$", text, flags=re.M)
    out = {}
    for number, body in zip(parts[1::2], parts[2::2]):
        out[int(number)] = re.split(r"^#{1,3} ", body, maxsplit=1, flags=re.M)[0]
    return out


def timing(body: str) -> tuple[int, list[int]]:
    """The stated length of a session and the minutes of its timing table."""
    length = re.search(r"Length: (\d+) minutes\.", body)
    if length is None:
        raise ValueError("no 'Length: N minutes.' line")
    minutes = [int(m) for m in re.findall(r"^\|\s*(\d+)\s*\|", body, re.M)]
    return int(length.group(1)), minutes


def misconceptions(body: str) -> list[str]:
    """The items of the session's "**Misconceptions.**" list."""
    part = body.split("**Misconceptions.**", 1)
    if len(part) < 2:
        return []
    items, current = [], None
    for line in part[1].strip().splitlines():
        if line.startswith("- "):
            current = [line[2:]]
            items.append(current)
        elif line.startswith("  ") and current is not None:
            current.append(line.strip())
        elif line.strip() and not line.startswith(" "):
            break
    return [" ".join(i) for i in items]


def chapter_sections(path: Path) -> dict[str, list[str]]:
    """Section number ("6.6") -> its heading and the headings of its sub-sections."""
    nb = nbformat.read(path, as_version=4)
    found: dict[str, list[str]] = {}
    current = None
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for line in cell.source.splitlines():
            top = re.match(r"^##\s+(\d+\.\d+)\s+(.*?)\s*$", line)
            if top:
                current = top.group(1)
                found[current] = [top.group(2)]
            elif re.match(r"^##\s", line):
                current = None
            elif current and (sub := re.match(r"^###\s+(.*?)\s*$", line)):
                found[current].append(sub.group(1))
    return found


SESSIONS = sessions(GUIDE.read_text(encoding="utf-8"))


def test_one_session_per_chapter():
    assert sorted(SESSIONS) == sorted(CHAPTERS)


@pytest.mark.parametrize("number", sorted(SESSIONS))
def test_timings_add_up(number):
    length, minutes = timing(SESSIONS[number])
    assert minutes, f"session {number} has no timing table"
    assert sum(minutes) == length, f"session {number}: {' + '.join(map(str, minutes))} = {sum(minutes)}, not {length}"


@pytest.mark.parametrize("number", sorted(SESSIONS))
def test_discussion_and_two_to_four_refuted_misconceptions(number):
    body = SESSIONS[number]
    assert "**Discussion.**" in body, f"session {number} has no discussion prompt"
    items = misconceptions(body)
    assert 2 <= len(items) <= 4, f"session {number} has {len(items)} misconception(s), not two to four"
    sections = chapter_sections(CHAPTERS[number])
    for item in items:
        refs = REFUTED.findall(item)
        assert refs, f"session {number}: no 'Section N.M, *heading*' in: {item[:80]}"
        for chapter, sub, heading in refs:
            key = f"{chapter}.{sub}"
            assert int(chapter) == number, f"session {number} refutes with chapter {chapter}'s Section {key}"
            assert key in sections, f"chapter {number} has no Section {key}"
            assert heading in sections[key], f"Section {key} is {sections[key][0]!r} (sub-headings "\
                                             f"{sections[key][1:]}), not {heading!r}"


@pytest.mark.parametrize("number", sorted(SESSIONS))
def test_lesson_exercises_and_discussion_each_get_time(number):
    parts = [part.strip() for _, part in re.findall(r"^\|\s*(\d+)\s*\|(.*)\|\s*$", SESSIONS[number], re.M)]
    assert any(p.startswith("Lesson") for p in parts), f"session {number}: no 'Lesson ...' row in its timings"
    assert any(p.startswith("Exercises") for p in parts), f"session {number}: no 'Exercises ...' row"
    assert any(p.startswith("Discussion") for p in parts), f"session {number}: no 'Discussion ...' row"


def targets(path: Path) -> dict[str, int]:
    """MyST targets ``(label)=`` of a notebook's markdown cells -> the index of their cell."""
    nb = nbformat.read(path, as_version=4)
    return {m: i for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
            for m in re.findall(r"^\(([\w-]+)\)=\s*$", cell.source, re.M)}


CELL_REF = re.compile(r"\{ref\}`[^`<]*<([\w-]+)>`")


@pytest.mark.parametrize("number", sorted(SESSIONS))
def test_each_misconception_points_at_the_cell_that_refutes_it(number):
    """Each misconception links ({ref}) to a target placed on the lesson's cell that refutes it: a
    markdown cell beside the code cell whose figure or checked claims do the refuting."""
    nb = nbformat.read(CHAPTERS[number], as_version=4)
    found = targets(CHAPTERS[number])
    for item in misconceptions(SESSIONS[number]):
        labels = CELL_REF.findall(item)
        assert labels, f"session {number}: no {{ref}} to the refuting cell in: {item[:80]}"
        for label in labels:
            assert label in found, f"session {number}: lesson {CHAPTERS[number].name} has no target ({label})="
            i = found[label]
            beside = [nb.cells[j].cell_type for j in (i - 1, i + 1) if 0 <= j < len(nb.cells)]
            assert "code" in beside, f"session {number}: ({label})= is not beside a code cell"


@pytest.mark.parametrize("number", sorted(SESSIONS))
def test_the_evidence_page_is_offered(number):
    evidence = CHAPTERS[number].with_name(CHAPTERS[number].stem + "_evidence.ipynb")
    if evidence.is_file():
        assert f"../chapters/{evidence.stem}" in SESSIONS[number], f"session {number} does not offer {evidence.name}"


@pytest.mark.parametrize("number", sorted(SESSIONS))
def test_sections_in_the_timings_exist(number):
    sections = chapter_sections(CHAPTERS[number])
    for group in re.findall(r"Sections? (\d+\.\d+(?:(?: and | to |, )\d+\.\d+)*)", SESSIONS[number]):
        for key in re.findall(r"\d+\.\d+", group):
            assert key in sections, f"session {number} names Section {key}, which chapter {number} lacks"


def test_session_seven_is_the_debate_on_multi_seed_evidence():
    body = SESSIONS[7]
    assert "debate" in body.lower() and "five" in body and "seed" in body
    _, minutes = timing(body)
    debate = sum(int(m) for m, part in re.findall(r"^\|\s*(\d+)\s*\|(.*)\|\s*$", body, re.M)
                 if re.search(r"debate|Team|Rebuttal|verdict", part))
    assert debate >= sum(minutes) / 2, f"the debate gets {debate} of {sum(minutes)} minutes"


def test_parsers_on_a_small_guide():
    text = ("### Session 1: x\n\nLength: 30 minutes.\n\n| Minutes | Part |\n|---:|---|\n| 10 | a |\n| 15 | b |\n\n"
            "**Misconceptions.**\n\n- \"One\". Refuted in Section 1.2, *Head*: because\n  more.\n- Two.\n\n"
            "### Session 2: y\n\nno length\n")
    parsed = sessions(text)
    assert timing(parsed[1]) == (30, [10, 15])
    assert misconceptions(parsed[1]) == ['"One". Refuted in Section 1.2, *Head*: because more.', "Two."]
    with pytest.raises(ValueError, match="no 'Length"):
        timing(parsed[2])
