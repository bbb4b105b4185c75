"""Chapter 3's shared measurements (attention_course.experiments.self_attention)."""

from __future__ import annotations

import math

import pytest
import torch
from attention_course.experiments.self_attention import (
    attention_multiply_adds,
    gru_multiply_adds,
    left_padded_causal_mask,
    recurrence_vs_attention,
    score_scale_statistics,
)
from attention_course.layers.attention import scaled_dot_product_attention


def test_scale_statistics_follow_the_variance_argument():
    stats = score_scale_statistics(dims=(4, 256), n_queries=256)
    assert stats["var"]["unscaled", 256] == pytest.approx(256, rel=0.15)     # Var(q . k) = d_k
    assert stats["var"]["scaled", 256] == pytest.approx(1, rel=0.15)
    assert stats["entropy"]["unscaled", 256] < 0.5 < 3 < stats["entropy"]["scaled", 256] <= math.log(64)
    assert stats["grad"]["unscaled", 256] < 0.1 * stats["grad"]["unscaled", 4] < stats["grad"]["scaled", 256]
    assert set(stats) == {"var", "entropy", "grad"} and len(stats["var"]) == 4


def test_scale_statistics_are_seeded():
    assert score_scale_statistics(dims=(8,), n_queries=16) == score_scale_statistics(dims=(8,), n_queries=16)


def test_multiply_adds_count_the_products():
    assert gru_multiply_adds(10, 4) == 6 * 10 * 16
    assert attention_multiply_adds(10, 4) == 3 * 10 * 16 + 2 * 100 * 4
    # doubling T doubles the recurrence's arithmetic; attention's T^2 terms quadruple
    assert gru_multiply_adds(20, 4) == 2 * gru_multiply_adds(10, 4)
    assert attention_multiply_adds(2000, 4) > 3.9 * attention_multiply_adds(1000, 4)


def test_recurrence_vs_attention_rows():
    rows = recurrence_vs_attention(lengths=(8, 32))
    assert [r["T"] for r in rows] == [8, 32]
    assert [r["steps_gru"] for r in rows] == [8, 32] and all(r["steps_attention"] == 1 for r in rows)
    assert [r["weight_bytes"] for r in rows] == [4 * 8 * 8, 4 * 32 * 32]
    assert rows[1]["ratio_gru"] < rows[0]["ratio_gru"] < 1
    assert all(0.1 < r["ratio_attention"] < 10 for r in rows)
    assert rows == recurrence_vs_attention(lengths=(8, 32))                 # seeded: the same numbers again


def test_left_padded_first_queries_see_nothing():
    mask = left_padded_causal_mask(torch.tensor([4, 2]), 4)
    assert mask.shape == (2, 4, 4) and mask.dtype == torch.bool
    assert torch.equal(mask[0], torch.ones(4, 4, dtype=torch.bool).tril())
    assert not mask[1, :2].any()                                            # the two padding queries: no key
    assert mask[1, 2].tolist() == [False, False, True, False]
    q = k = v = torch.randn(2, 4, 3, dtype=torch.float64)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isfinite(out).all() and (out[1, :2] == 0).all() and (w[1, :2] == 0).all()


@pytest.mark.parametrize("call, message", [
    (lambda: score_scale_statistics(dims=()), "at least one"),
    (lambda: score_scale_statistics(dims=(0,)), "positive int"),
    (lambda: recurrence_vs_attention(lengths=(8,), d=0), "positive int"),
    (lambda: left_padded_causal_mask(torch.tensor([5]), 4), "between 1 and T"),
    (lambda: left_padded_causal_mask(torch.tensor([1.0]), 4), "integer tensor"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
