"""Every learning objective of every chapter is practised by an exercise with a tested self-check.

For each chapter notebook:

* every objective (numbered from 1 in the ``course`` metadata) is listed by at least one exercise;
* every ``{exercise}`` names, in its text, the self-check the student runs: a ``check_*`` function
  that exists in :mod:`attention_course.teaching.checks` (some module of it);
* every such self-check is exercised by the unit tests (``tests/test_checks*.py`` name it), where it
  is run on the reference answer and on wrong ones.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import attention_course.teaching.checks as checks_pkg
import nbformat
import pytest
from coursekit.coursemap import exercise_texts, validate_course_metadata

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p for p in (ROOT / "chapters").glob("[0-9][0-9]_*.ipynb") if not p.stem.endswith("_evidence"))
_CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(")


def _checks() -> set[str]:
    """Names of every ``check_*`` function in the package's teaching checks."""
    names = set()
    for info in pkgutil.iter_modules(checks_pkg.__path__):
        module = importlib.import_module(f"{checks_pkg.__name__}.{info.name}")
        names |= {n for n in dir(module) if n.startswith("check_") and callable(getattr(module, n))}
    return names


def _tested_names() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("test_checks*.py"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_objective_has_an_exercise(path):
    meta = validate_course_metadata(nbformat.read(path, as_version=4), path.name)
    served = {i for objectives in meta["exercises"].values() for i in objectives}
    missing = [f"{i}. {text}" for i, text in enumerate(meta["objectives"], start=1) if i not in served]
    assert not missing, f"{path.name}: objectives that no exercise practises: {missing}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_has_a_tested_self_check(path):
    known, tested = _checks(), _tested_names()
    found = exercise_texts(nbformat.read(path, as_version=4))
    assert found, f"{path.name}: no exercises found"
    for label, text in found.items():
        named = set(_CHECK_CALL.findall(text))
        assert named, f"{path.name}: exercise {label} names no self-check (a check_* call in its text)"
        unknown = named - known
        assert not unknown, f"{path.name}: exercise {label} names checks the package lacks: {sorted(unknown)}"
        untested = [n for n in named if not re.search(rf"\b{n}\b", tested)]
        assert not untested, f"{path.name}: exercise {label}: no unit test runs {untested}"


def test_the_parser_sees_a_self_check_and_its_absence():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "```{exercise}\n:label: ex-a\n\nDo it, then run `check_softmax(f)`.\n```\n\n"
        "```{exercise}\n:label: ex-b\n\nNo check here.\n```")])
    found = exercise_texts(nb)
    assert set(found) == {"ex-a", "ex-b"}
    assert _CHECK_CALL.findall(found["ex-a"]) == ["check_softmax"] and not _CHECK_CALL.findall(found["ex-b"])
