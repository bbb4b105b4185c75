"""``show_source``: a function's source as a Markdown code block, whole or only its core lines."""

from __future__ import annotations

import pytest
from attention_course.show import show_source


def _sample(x):
    """A docstring a lesson does not need to show."""
    if x < 0:
        raise ValueError("x must be non-negative")
    y = x + 1          # the core, line 1
    z = 2 * y          # the core, line 2
    return z


def test_whole_source_in_a_python_block():
    text = show_source(_sample).data
    assert text.startswith("```python\ndef _sample(x):") and text.endswith("return z\n```")


def test_core_lines_from_a_start_dedented():
    assert show_source(_sample, start="y = x + 1", lines=2).data == \
        "```python\ny = x + 1          # the core, line 1\nz = 2 * y          # the core, line 2\n```"
    assert show_source(_sample, start="z = 2").data.endswith("z = 2 * y          # the core, line 2\nreturn z\n```")


def test_a_start_that_is_not_there_is_named():
    with pytest.raises(ValueError, match="no line of '_sample' contains 'missing'"):
        show_source(_sample, start="missing")
