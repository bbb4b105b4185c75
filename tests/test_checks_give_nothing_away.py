"""A passing self-check gives nothing away (issue 33, item 6).

Every check is printed right below its exercise, where the solution is still collapsed, so a check
that passes confirms without any value the student was asked to find: no numbers, shapes, indices
or formulas that are the answer. Here every ``check_*`` of the package (the chapters' checks and the
debugging checks) runs on a correct answer, the reference answers of the per-chapter tests, and its
success message must hold no digit and none of the answer's values. ``ok`` itself refuses a message
with a digit, so that a future check cannot print one.
"""

import importlib
import math
import pkgutil
import re
from pathlib import Path

import attention_course.teaching.checks as checks_pkg
import nbformat
import numpy as np
import pytest
import torch
from attention_course import scaled_dot_product_attention
from attention_course.layers.multihead import split_heads
from attention_course.models.seq2seq import reverse_padded
from attention_course.tasks.series import seasonal_naive
from attention_course.teaching import debugging
from attention_course.teaching.checks._base import ok
from attention_course.teaching.checks.attention_rnn import CURVE_SHAPES, EXERCISE_HS, EXERCISE_QUERY
from attention_course.teaching.checks.explanation import COUNTER_TEST_STATEMENTS
from attention_course.teaching.checks.multihead import CANDIDATE_SPLITS, KV_SETUP
from attention_course.teaching.checks.self_attention import ORDER_STEPS
from attention_course.train.seq2seq import accuracy
from test_beam import SEARCH_ERROR_TABLE
from test_checks_attention_rnn import ATTENTION, PLAIN, READING, StandInTranslator, later_rule, reference_additive
from test_checks_beyond import reference_horizon, reference_offset_scores, reference_pool, reference_soft_max
from test_checks_bottleneck import last_real_state
from test_checks_cca import _correlation_score, _product, reference_angles, reference_cca, reference_pmi
from test_checks_explanation import (
    ADVERSARY,
    PAIRS,
    TRUE_ANSWER,
    _tables,
    reference_jsd,
    reference_one_token,
    reference_precision,
)
from test_checks_fair import ref_decoder_mask, ref_positions
from test_checks_multihead import PARTITIONS, _reference_detector, _reference_three_lookup, _to_torch
from test_checks_self_attention import (
    NEXT_ENTRY_W_Q,
    RIGHT_ORDER,
    RIGHT_SHAPES,
    reference_leak_detector,
    reference_masked_softmax,
    reference_row_case,
    reference_top_weight,
)

ROOT = Path(__file__).resolve().parents[1]


def _kv_answer():
    B, S, T, H = (KV_SETUP[k] for k in ("batch", "source_len", "steps", "num_heads"))
    return (B, H, T, KV_SETUP["d_model"] // H), B * T, B * T * (T + 1) // 2, B * T * S


# Every check: (its arguments for a correct answer, words of the answer its success message must not hold).
# A message with a digit fails whatever the words; the words catch answers written without digits.
CORRECT = {
    # Chapter 1
    "check_reverse_padded": (lambda: (reverse_padded,), []),
    "check_token_accuracy": (lambda: (lambda p, t: accuracy(p, t)[0],), []),
    "check_linear_rnn_gradient": (lambda: (0.9 ** 49, 1.1 ** 49), ["^", "**"]),
    "check_last_state": (lambda: (last_real_state,), ["hs[", "lengths["]),
    # Chapter 2
    "check_context_vector": (lambda: (torch.softmax(EXERCISE_HS @ EXERCISE_QUERY, 0) @ EXERCISE_HS,), ["["]),
    "check_additive_scores": (lambda: (reference_additive,), []),
    "check_temperature": (lambda: (0.21,), ["tau ="]),
    "check_later_input": (lambda: (later_rule, 0.75), ["hs[:,"]),
    "check_alignment_reading": (lambda: (StandInTranslator(READING), dict(READING)), ["'4'", "'6'", "index"]),
    "check_length_curves": (lambda: ({"plain": "C", "attention": "A"}, "above", PLAIN, ATTENTION),
                            ["above", "below", *CURVE_SHAPES.values()]),
    # Chapter 3
    "check_score_scale": (lambda: (lambda d, sq, sk: 1 / (math.sqrt(d) * sq * sk),), ["sqrt", "/"]),
    "check_decoder_mask": (lambda: (ref_decoder_mask,), []),
    "check_masked_softmax": (lambda: (reference_masked_softmax,), []),
    "check_top_weight": (lambda: (reference_top_weight,), []),
    "check_leak_detector": (lambda: (reference_leak_detector,), []),
    "check_doubling": (lambda: (4, 2, 1), ["quadratic", "memory by"]),
    "check_sharp_lookup": (lambda: ([2, 5, 7, 3.5, 6.25],), ["largest dot product", "mean of"]),
    "check_next_entry": (lambda: (NEXT_ENTRY_W_Q,), []),
    "check_row_bug_case": (lambda: reference_row_case(), ["d_v = d_k", "missed"]),
    "check_query_shapes": (lambda: (RIGHT_SHAPES,), ["(", "calls with"]),
    "check_order_blind": (lambda: (RIGHT_ORDER,), list(ORDER_STEPS)),
    # Chapter 4
    "check_split_heads": (lambda: (split_heads,), ["transpose", "reshape", "view("]),
    "check_split_heads_time_first": (lambda: (lambda x, H: split_heads(x.transpose(0, 1), H),),
                                     ["transpose", "permute", "reshape"]),
    "check_to_torch": (lambda: (_to_torch,), ["in_proj", "cat("]),
    "check_positions": (lambda: (lambda n, d: ref_positions(n, d),), ["sine", "cosine", "wavelength"]),
    "check_merge_detector": (lambda: (_reference_detector,), []),
    "check_three_lookup": (lambda: (_reference_three_lookup,), []),
    "check_split_identity": (lambda: (set(PARTITIONS),), list(CANDIDATE_SPLITS)),
    "check_beam_prediction": (lambda: ("aaa", "b", "ab"), ["'aaa'", "'b'", "'ab'", "log p"]),
    "check_kv_cache_prediction": (_kv_answer, ["T(T", "rows with"]),
    # Chapter 5
    "check_search_error": (lambda: (SEARCH_ERROR_TABLE,), ["'a", "'b", "0."]),
    # Chapter 6
    "check_canonical_correlations": (lambda: (reference_cca,), ["["]),
    "check_principal_angles": (lambda: (reference_angles,), ["[", "degrees"]),
    "check_pmi_cross_matrix": (lambda: (reference_pmi,), ["precision", "inverse", "rho", "singular"]),
    "check_correlation_score": (lambda: (_correlation_score,), ["W =", "std("]),
    "check_blind_spot": (lambda: (_product,), ["R^"]),
    "check_competition": (lambda: (math.floor(math.exp(3.0)) + 2,), []),
    # Chapter 7
    "check_js_divergence": (lambda: (reference_jsd,), ["ln ", "log"]),
    "check_precision_at_k": (lambda: (reference_precision,), ["["]),
    "check_one_token_adversary": (lambda: (reference_one_token,), []),
    "check_counter_tests": (lambda: (dict(TRUE_ANSWER), *_tables(), PAIRS, ADVERSARY),
                            ["True", "False", *COUNTER_TEST_STATEMENTS]),
    # Chapter 8
    "check_offset_scores": (lambda: (reference_offset_scores,), []),
    "check_attention_pool": (lambda: (reference_pool,), ["sqrt", "S Z"]),
    "check_attention_max": (lambda: (reference_soft_max,), ["softmax(alpha x) ."]),
    "check_horizon_queries": (lambda: (reference_horizon,), ["sqrt", "@"]),
    "check_seasonal_naive": (lambda: (seasonal_naive,), ["ceil"]),
    # The debugging exercises
    "check_attention": (lambda: (scaled_dot_product_attention,), ["sqrt"]),
    "check_heads": (lambda: (debugging.split_heads, debugging.merge_heads), ["transpose", "reshape"]),
    "check_key_padding_mask": (lambda: (debugging.key_padding_mask,), ["[:, None]", "(B, 1, 1"]),
}


def _every_check() -> dict:
    """Every ``check_*`` function of the teaching package, by name."""
    found = {n: getattr(debugging, n) for n in debugging.__all__ if n.startswith("check_")}
    for info in pkgutil.iter_modules(checks_pkg.__path__):
        module = importlib.import_module(f"{checks_pkg.__name__}.{info.name}")
        found |= {n: f for n, f in vars(module).items() if n.startswith("check_") and callable(f)
                  and f.__module__ == module.__name__}
    return found


CHECKS = _every_check()


def test_every_check_is_run_here():
    assert set(CHECKS) == set(CORRECT), (f"checks without a correct answer here: {sorted(set(CHECKS) - set(CORRECT))}; "
                                         f"names here that are no check: {sorted(set(CORRECT) - set(CHECKS))}")


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_passing_check_gives_nothing_away(name, capsys):
    arguments, answer_words = CORRECT[name]
    CHECKS[name](*arguments())
    out = capsys.readouterr().out
    assert out.startswith("Correct: ") and out.count("\n") == 1, f"{name} printed {out!r}"
    assert not re.search(r"\d", out), f"{name}'s success message holds a digit: {out!r}"
    shown = [word for word in answer_words if word in out]
    assert not shown, f"{name}'s success message shows {shown} of the answer: {out!r}"


def test_ok_refuses_a_message_with_a_digit(capsys):
    with pytest.raises(ValueError, match=r"must not contain a digit.*'weights \[0\.355, 0\.011\]'"):
        ok("weights [0.355, 0.011]")
    with pytest.raises(ValueError, match="digit"):
        ok("tau ≈ ０.２")                                        # any Unicode digit, not only 0-9
    assert capsys.readouterr().out == ""
    ok("both derivatives match autograd.")
    assert capsys.readouterr().out == "Correct: both derivatives match autograd.\n"


@pytest.mark.parametrize("path", sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_no_stored_success_message_gives_anything_away(path):
    """What the site shows below each exercise: the stored outputs hold no "Correct:" line with a digit
    (nbval compares most check cells exactly; this also covers the cells whose output it ignores)."""
    shown = []
    for cell in nbformat.read(path, as_version=4).cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.get("output_type") == "stream" else \
                out.get("data", {}).get("text/plain", "")
            shown += [line for line in "".join(text).splitlines()
                      if line.startswith("Correct:") and re.search(r"\d", line)]
    assert not shown, f"{path.name}: {shown}"


def test_the_answers_here_are_correct_ones():
    """A sanity check of the table itself: a wrong answer to a few of the checks does fail them."""
    from attention_course.teaching.checks import CheckFailed
    for name, wrong in [("check_temperature", (0.5,)), ("check_beam_prediction", ("b", "b", "ab")),
                        ("check_doubling", (2, 2, 1)), ("check_competition", (np.int64(21),))]:
        with pytest.raises(CheckFailed):
            CHECKS[name](*wrong)
