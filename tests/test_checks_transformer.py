"""The Chapter 5 self-check of the search-error exercise (attention_course.teaching.checks.transformer)."""

import pytest
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.transformer import BEAM_TABLE, check_search_error, decode_table
from test_beam import SEARCH_ERROR_TABLE


def test_a_valid_case_passes(capsys):
    check_search_error(SEARCH_ERROR_TABLE)
    assert capsys.readouterr().out.startswith("Correct:")


def test_the_case_is_real():
    result = decode_table(SEARCH_ERROR_TABLE)
    assert result["beam"][1] < result["greedy"][1]
    assert decode_table(SEARCH_ERROR_TABLE, include_greedy=True)["beam"] == result["greedy"]


@pytest.mark.parametrize("table, message", [
    (BEAM_TABLE, "at least as likely"),
    ({"": {"a": 1.0}}, "the same output"),
    ({"": {"a": 0.5, "b": 0.4}}, "sum to"),
    ({"": {"c": 1.0}}, "unknown tokens"),
    ({"x": {"a": 1.0}}, "prefix 'x'"),
    ({"": {"a": -0.5, "b": 1.5}}, "is not a probability"),
    ([("", {"a": 1.0})], "expected a table"),
])
def test_invalid_or_non_cases_fail_with_a_reason(table, message):
    with pytest.raises(CheckFailed, match=message):
        check_search_error(table)


def test_probabilities_in_numpy_or_torch_are_accepted(capsys):
    import numpy as np
    import torch
    for convert in (np.float64, np.float32, lambda p: torch.tensor(p, dtype=torch.float32)):
        table = {prefix: {t: convert(p) for t, p in dist.items()} for prefix, dist in SEARCH_ERROR_TABLE.items()}
        check_search_error(table)
        assert capsys.readouterr().out.startswith("Correct:")


THREE = {"a": 0.34, "b": 0.33, "<eos>": 0.33}
# A search error for a beam of 3 (chapter 5's exercise): the greedy prefix survives step 2 and falls out at step 3.
WIDTH_THREE_TABLE = {"": {"a": 0.52, "b": 0.48}, "a": THREE, "b": {"a": 0.5, "b": 0.5}, "aa": THREE,
                     "ba": {"a": 0.5, "b": 0.5}, "bb": {"a": 0.6, "b": 0.4}, "bba": THREE, "baa": THREE,
                     "bab": THREE}


def test_a_wider_beam_has_its_own_cases(capsys):
    check_search_error(WIDTH_THREE_TABLE, beam_width=3)
    assert capsys.readouterr().out.startswith("Correct:")
    result = decode_table(WIDTH_THREE_TABLE, beam_width=3)
    assert result["beam"][1] < result["greedy"][1]


def test_a_case_for_one_width_need_not_be_one_for_another():
    """The width-2 case is no search error for a beam of 3, which keeps the greedy prefix."""
    with pytest.raises(CheckFailed, match="beam of 3"):
        check_search_error(SEARCH_ERROR_TABLE, beam_width=3)


@pytest.mark.parametrize("width", [1, 0, 2.0, True, "3"])
def test_a_bad_beam_width_is_named(width):
    with pytest.raises(CheckFailed, match="beam_width"):
        check_search_error(SEARCH_ERROR_TABLE, beam_width=width)
