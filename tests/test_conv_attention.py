"""Unit and property tests of attention_course.models.conv_attention: attention with one head per kernel offset
approaches torch's conv1d / conv2d as the sharpness alpha grows."""

import pytest
import torch
import torch.nn.functional as F
from attention_course.models.conv_attention import (
    conv_as_attention,
    grid_positions,
    kernel_offsets,
    positional_queries,
    quadratic_scores,
    relative_encoding,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def test_kernel_offsets_are_centred_and_row_major():
    assert kernel_offsets(3, 1).tolist() == [[-1], [0], [1]]
    offsets = kernel_offsets(3, 2)
    assert offsets.shape == (9, 2)
    assert offsets[0].tolist() == [-1, -1] and offsets[1].tolist() == [-1, 0] and offsets[4].tolist() == [0, 0]
    assert kernel_offsets(1, 2).tolist() == [[0, 0]]


def test_grid_positions_follow_flatten_order():
    pos = grid_positions((2, 3))
    assert pos.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    img = torch.arange(6).reshape(1, 1, 2, 3)
    assert img.flatten(2)[0, 0].tolist() == [3 * i + j for i, j in pos.tolist()]
    assert grid_positions((3,), start=-1).flatten().tolist() == [-1, 0, 1]


def test_relative_encoding_has_dimension_d_plus_one():
    q, k = grid_positions((2, 2)), grid_positions((4, 4), start=-1)
    r = relative_encoding(q, k)
    assert r.shape == (4, 16, 3)                      # 2-D: (||delta||^2, delta_1, delta_2), the theorem's D_p = 3
    delta = (k[None] - q[:, None]).double()
    assert torch.equal(r[..., 0], (delta**2).sum(-1)) and torch.equal(r[..., 1:], delta)


def test_quadratic_scores_are_a_parabola_centred_on_the_offset():
    q, k = grid_positions((3, 3)), grid_positions((5, 5), start=-1)
    offsets = kernel_offsets(3, 2)
    alpha = 1.7
    scores = quadratic_scores(q, k, offsets, alpha)
    delta = (k[None] - q[:, None]).double()                                          # (N_q, N_k, 2)
    for h, off in enumerate(offsets.double()):
        want = -alpha * (((delta - off) ** 2).sum(-1) - (off**2).sum())
        assert torch.allclose(scores[h], want, atol=1e-12)
    assert torch.equal(positional_queries(offsets[:1], 2.0)[0], torch.tensor([-2.0, -4.0, -4.0], dtype=torch.float64))


def test_large_alpha_selects_the_shifted_key():
    x = torch.randn(1, 1, 4, 5, dtype=torch.float64)
    _, w = conv_as_attention(x, torch.randn(2, 1, 3, 3, dtype=torch.float64), alpha=60.0)
    q, k, offsets = grid_positions((4, 5)), grid_positions((6, 7), start=-1), kernel_offsets(3, 2)
    for h in range(9):
        chosen = k[w[h].argmax(-1)]
        assert torch.equal(chosen, q + offsets[h])
        assert w[h].max(-1).values.min() > 1 - 1e-12


def test_error_falls_exponentially_with_alpha():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 6, dtype=torch.float64)
    weight, bias = torch.randn(4, 3, 3, 3, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    ref = F.conv2d(x, weight, bias, padding=1)
    errors = [(conv_as_attention(x, weight, bias, alpha=a)[0] - ref).abs().max().item() for a in (2, 5, 10, 20)]
    assert all(a > b for a, b in zip(errors, errors[1:]))
    assert errors[-1] < 1e-5 < errors[0]


@settings(max_examples=25, deadline=None)
@given(B=st.integers(1, 2), C_in=st.integers(1, 3), C_out=st.integers(1, 3), L=st.integers(1, 9),
       K=st.sampled_from([1, 3, 5]), seed=st.integers(0, 2**16), bias=st.booleans())
def test_matches_conv1d(B, C_in, C_out, L, K, seed, bias):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, C_in, L, generator=g, dtype=torch.float64)
    w = torch.randn(C_out, C_in, K, generator=g, dtype=torch.float64)
    b = torch.randn(C_out, generator=g, dtype=torch.float64) if bias else None
    out, weights = conv_as_attention(x, w, b, alpha=50.0)
    assert weights.shape == (K, L, L + 2 * (K // 2))
    assert torch.allclose(out, F.conv1d(x, w, b, padding=K // 2), atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(C_in=st.integers(1, 3), C_out=st.integers(1, 3), H=st.integers(1, 6), W=st.integers(1, 6),
       K=st.sampled_from([1, 3, 5]), seed=st.integers(0, 2**16))
def test_matches_conv2d(C_in, C_out, H, W, K, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, C_in, H, W, generator=g, dtype=torch.float64)
    w = torch.randn(C_out, C_in, K, K, generator=g, dtype=torch.float64)
    b = torch.randn(C_out, generator=g, dtype=torch.float64)
    out, weights = conv_as_attention(x, w, b, alpha=50.0)
    assert weights.shape == (K * K, H * W, (H + K - 1) * (W + K - 1))
    assert torch.allclose(out, F.conv2d(x, w, b, padding=K // 2), atol=1e-9)


def test_float32_reaches_the_target_too():
    torch.manual_seed(0)
    x, w = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)
    out, _ = conv_as_attention(x, w, alpha=30.0)
    assert out.dtype == torch.float32 and (out - F.conv2d(x, w, padding=1)).abs().max() < 1e-5


@pytest.mark.parametrize("x, w, b, alpha, error, match", [
    (torch.randn(1, 2, 5), torch.randn(3, 2, 4), None, 5.0, ValueError, "odd kernel size"),
    (torch.randn(1, 2, 5), torch.randn(3, 1, 3), None, 5.0, ValueError, r"C_in=2"),
    (torch.randn(1, 2, 5), torch.randn(3, 2, 3, 3), None, 5.0, ValueError, "1-D input"),
    (torch.randn(2, 5), torch.randn(3, 2, 3), None, 5.0, ValueError, r"\(B, C_in, L\)"),
    (torch.randn(1, 2, 5).double(), torch.randn(3, 2, 3), None, 5.0, TypeError, "share one dtype"),
    (torch.randn(1, 2, 5), torch.randn(3, 2, 3), torch.randn(2), 5.0, ValueError, r"bias must be None or a \(C_out=3"),
    (torch.randn(1, 2, 5), torch.randn(3, 2, 3), None, 0.0, ValueError, "alpha"),
    (torch.randint(0, 3, (1, 2, 5)), torch.randn(3, 2, 3), None, 5.0, ValueError, "floating-point"),
])
def test_bad_inputs_raise(x, w, b, alpha, error, match):
    with pytest.raises(error, match=match):
        conv_as_attention(x, w, b, alpha=alpha)


def test_bad_offsets_and_positions_raise():
    with pytest.raises(ValueError, match="positive odd int"):
        kernel_offsets(2, 1)
    with pytest.raises(ValueError, match="dims must be 1 or 2"):
        kernel_offsets(3, 3)
    with pytest.raises(ValueError, match="same number of coordinates"):
        relative_encoding(grid_positions((2,)), grid_positions((2, 2)))
    with pytest.raises(ValueError, match="positive ints"):
        grid_positions((0, 2))
