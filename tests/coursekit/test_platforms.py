"""The platform table's machinery (the resolution itself runs in `make platforms`, which needs the index)."""

import pytest
from coursekit.platforms import PLATFORMS, PYTHONS, TABLE, Result, resolve, table


def test_table_has_a_row_per_platform_and_numbers_each_distinct_reason_once():
    results = [Result("3.12", "A", True, ""), Result("3.13", "A", False, "no wheel for x"),
               Result("3.12", "B", False, "no wheel for x"), Result("3.13", "B", False, "needs Python>=3.14")]
    text = table(results)
    assert "| A | installs | no (1) |" in text
    assert "| B | no (1) | no (2) |" in text
    assert "1. no wheel for x" in text and "2. needs Python>=3.14" in text
    assert "| platform | Python 3.12 | Python 3.13 |" in text


def test_a_patch_release_is_named_in_the_heading():
    assert "Python 3.11 (3.11.5 on)" in table([Result("3.11.5", "A", True, "")])


def test_an_unknown_platform_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown platform 'Plan 9'"):
        resolve("3.12", "Plan 9")


def test_the_committed_table_covers_every_python_and_platform():
    text = TABLE.read_text(encoding="utf-8")
    for platform in PLATFORMS:
        assert f"| {platform} |" in text, platform
    header = next(line for line in text.splitlines() if line.startswith("| platform |"))
    assert header.count("Python") == len(PYTHONS)
