"""Unit and property tests of attention_course.layers.self_attention, and the float64 agreement of the
package's attention with torch's fused function that the Chapter 3 benchmark relies on."""

import pytest
import torch
import torch.nn.functional as F
from attention_course import causal_mask, padding_mask, scaled_dot_product_attention
from attention_course.layers.self_attention import CrossAttention, SelfAttention
from coursekit.benchmarks.self_attention import BATCH, D, T
from hypothesis import given, settings
from hypothesis import strategies as st


def test_self_attention_is_sdpa_of_the_three_projections():
    torch.manual_seed(0)
    layer = SelfAttention(8, d_k=4, d_v=6).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    out, w = layer(x)
    ref_out, ref_w = scaled_dot_product_attention(x @ layer.W_Q.weight.T, x @ layer.W_K.weight.T,
                                                  x @ layer.W_V.weight.T)
    assert out.shape == (2, 5, 6) and w.shape == (2, 5, 5)
    assert torch.allclose(out, ref_out, atol=1e-12) and torch.allclose(w, ref_w, atol=1e-12)


def test_self_attention_equals_cross_attention_with_itself():
    torch.manual_seed(0)
    selfa = SelfAttention(8).double()
    cross = CrossAttention(8, 8).double()
    cross.load_state_dict(selfa.state_dict())
    x = torch.randn(3, 4, 8, dtype=torch.float64)
    assert torch.allclose(selfa(x)[0], cross(x, x)[0], atol=1e-12)


def test_cross_attention_shapes_and_padding():
    torch.manual_seed(0)
    cross = CrossAttention(d_query=5, d_memory=7, d_k=3, d_v=2)
    x, memory = torch.randn(2, 4, 5), torch.randn(2, 6, 7)
    mask = padding_mask(torch.tensor([6, 2]), 6)
    out, w = cross(x, memory, mask)
    assert out.shape == (2, 4, 2) and w.shape == (2, 4, 6)
    assert torch.equal(w[1, :, 2:], torch.zeros(4, 4))
    junk = memory.clone()
    junk[1, 2:] = 1e3
    assert torch.equal(cross(x, junk, mask)[0], out)


def test_causal_mask_hides_the_future():
    torch.manual_seed(0)
    layer = SelfAttention(4).double()
    x = torch.randn(1, 6, 4, dtype=torch.float64)
    y = x.clone()
    y[0, 3:] = torch.randn(3, 4, dtype=torch.float64)
    a, w = layer(x, causal_mask(6))
    b, _ = layer(y, causal_mask(6))
    assert torch.equal(a[0, :3], b[0, :3])
    assert not torch.allclose(a[0, 3:], b[0, 3:])
    assert torch.equal(w[0].triu(1), torch.zeros(6, 6, dtype=torch.float64))


def test_bias_option_and_defaults():
    layer = SelfAttention(8, bias=True)
    assert layer.W_Q.bias is not None and layer.W_V.out_features == 8
    cross = CrossAttention(4, 6)
    assert cross.W_Q.out_features == 4 and cross.W_K.out_features == 4 and cross.W_V.out_features == 6


@pytest.mark.parametrize("kwargs, message", [
    ({"d_model": 0}, "d_model must be a positive int"),
    ({"d_model": 4, "d_k": -1}, "d_k must be a positive int"),
    ({"d_model": 4, "d_v": 2.5}, "d_v must be a positive int"),
])
def test_bad_sizes(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SelfAttention(**kwargs)


def test_bad_inputs_name_the_shapes():
    layer = SelfAttention(8)
    with pytest.raises(ValueError, match=r"x must have shape \(batch, T, 8\), got \(5, 8\)"):
        layer(torch.randn(5, 8))
    with pytest.raises(ValueError, match=r"got \(2, 5, 7\)"):
        layer(torch.randn(2, 5, 7))
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        layer([[1.0] * 8])
    cross = CrossAttention(4, 6)
    with pytest.raises(ValueError, match=r"memory .* must have shape \(batch, T, 6\), got \(2, 3, 4\)"):
        cross(torch.randn(2, 3, 4), torch.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"share the batch size.*\(2, 3, 4\).*\(3, 3, 6\)"):
        cross(torch.randn(2, 3, 4), torch.randn(3, 3, 6))
    with pytest.raises(ValueError, match="not broadcastable"):
        layer(torch.randn(2, 5, 8), torch.ones(4, 4, dtype=torch.bool))


def test_benchmark_shape_agrees_with_torch_in_float64():
    """The inputs of ``sdpa.time_ratio_vs_torch`` (batch 8, T = 256, d = 64), in float64: outputs
    and gradients of the package's attention and torch's fused one agree within 1e-6."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(BATCH, T, D, generator=g, dtype=torch.float64).requires_grad_() for _ in range(3))
    grad_out = torch.randn(BATCH, T, D, generator=g, dtype=torch.float64)
    ours, _ = scaled_dot_product_attention(q, k, v)
    theirs = F.scaled_dot_product_attention(q, k, v)
    assert (ours - theirs).abs().max().item() < 1e-6
    g_ours = torch.autograd.grad(ours, (q, k, v), grad_out)
    g_theirs = torch.autograd.grad(theirs, (q, k, v), grad_out)
    for a, b in zip(g_ours, g_theirs):
        assert (a - b).abs().max().item() < 1e-6


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 6), st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_permuting_positions_permutes_self_attention(B, T_, d, d_k, seed):
    """Without position information self-attention is permutation-equivariant."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    layer = SelfAttention(d, d_k=d_k).double()
    x = torch.randn(B, T_, d, generator=g, dtype=torch.float64)
    perm = torch.randperm(T_, generator=g)
    out, w = layer(x)
    out_p, w_p = layer(x[:, perm])
    assert torch.allclose(out[:, perm], out_p, atol=1e-10)
    assert torch.allclose(w[:, perm][:, :, perm], w_p, atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 7), st.integers(0, 2**31 - 1))
def test_cross_attention_rows_are_convex_combinations(B, T_q, T_k, seed):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    cross = CrossAttention(3, 4, d_v=4).double()
    with torch.no_grad():
        cross.W_V.weight.copy_(torch.eye(4, dtype=torch.float64))      # values = memory itself
    memory = torch.randn(B, T_k, 4, generator=g, dtype=torch.float64)
    out, w = cross(torch.randn(B, T_q, 3, generator=g, dtype=torch.float64), memory)
    assert torch.allclose(w.sum(-1), torch.ones(B, T_q, dtype=torch.float64))
    lo, hi = memory.min(1, keepdim=True).values, memory.max(1, keepdim=True).values
    assert (out >= lo - 1e-12).all() and (out <= hi + 1e-12).all()


def test_benchmark_reports_both_medians():
    """Only the plumbing: one untimed-assertion pass of the benchmark's timer."""
    from coursekit.benchmarks.self_attention import time_forward_backward

    med = time_forward_backward(repeats=1, warmup=0)
    assert set(med) == {"package", "torch"} and all(t > 0 for t in med.values())
