"""attention_course.analysis.cost: slopes recover exponents,
the gradient norms see the recurrence's path length."""

import numpy as np
import pytest
import torch
from attention_course.analysis.cost import (
    cache_sizes,
    last_output_gradient_norms,
    loglog_slope,
)
from attention_course.layers.self_attention import SelfAttention


def test_slope_recovers_a_power_law_and_ignores_small_lengths():
    T = np.array([8, 16, 32, 64, 128, 256])
    t = np.where(T >= 64, 3e-9 * T**2.0, 1e-3)                 # flat overhead, then quadratic
    assert loglog_slope(T, t, min_length=64) == pytest.approx(2.0, abs=1e-9)
    assert loglog_slope(T, 5 * T, min_length=0) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("lengths, seconds, message", [
    ([1, 2], [1.0], "of one length"), ([1, 2, 3], [1, 1, 1], "at least two points"),
    ([1, 2], [0.0, 1.0], "positive and finite")])
def test_slope_bad_input(lengths, seconds, message):
    with pytest.raises(ValueError, match=message):
        loglog_slope(lengths, seconds, min_length=3 if message == "at least two points" else 0)


def test_gradient_norms_recurrence_decays_attention_does_not():
    torch.manual_seed(0)
    gru = torch.nn.GRU(8, 8, batch_first=True).double()
    attn = SelfAttention(8).double()
    x = torch.randn(1, 40, 8, dtype=torch.float64)
    g = last_output_gradient_norms(lambda z: gru(z)[0], x)
    a = last_output_gradient_norms(lambda z: attn(z)[0], x)
    assert g.shape == a.shape == (40,)
    assert g[0] / g[-2] < 1e-4                                   # 38 recurrent steps away
    assert 0.05 < a[0] / a[-2] < 20                              # one step, whatever the distance
    # a layer where y_T ignores x_1 gives exactly 0
    z = last_output_gradient_norms(lambda z: z * 2.0, x)
    assert z[0] == 0 and z[-1] > 0


def test_gradient_norms_bad_input():
    with pytest.raises(ValueError, match=r"one sequence of shape \(1, T, d\)"):
        last_output_gradient_norms(lambda z: z, torch.randn(2, 3, 4))


def test_cache_sizes_are_positive_bytes():
    sizes = cache_sizes()
    assert all(k.startswith("L") and v > 0 for k, v in sizes.items())
    assert cache_sizes(cpu=10**6) == {}
