"""Property tests (hypothesis) of scaled dot-product attention."""

import math

import torch
from attention_course import scaled_dot_product_attention
from hypothesis import given, settings
from hypothesis import strategies as st

dims = st.integers(1, 6)


@st.composite
def problems(draw, with_mask=True):
    B, T_q, T_k, d_k, d_v = (draw(dims) for _ in range(5))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T_q, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(B, T_k, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(B, T_k, d_v, generator=g, dtype=torch.float64)
    mask = torch.rand(B, T_q, T_k, generator=g) < 0.7 if with_mask else None
    return q, k, v, mask


@settings(max_examples=60, deadline=None)
@given(problems())
def test_rows_sum_to_one_and_masked_weights_are_zero(p):
    q, k, v, mask = p
    _, w = scaled_dot_product_attention(q, k, v, mask)
    sums = w.sum(-1)
    has_key = mask.any(-1)
    assert torch.allclose(sums[has_key], torch.ones_like(sums[has_key]))
    assert torch.equal(sums[~has_key], torch.zeros_like(sums[~has_key]))
    assert torch.equal(w[~mask], torch.zeros_like(w[~mask]))


@settings(max_examples=60, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_changes_nothing(p, random):
    q, k, v, mask = p
    perm = list(range(k.shape[1]))
    random.shuffle(perm)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out_p, _ = scaled_dot_product_attention(q, k[:, perm], v[:, perm], mask[..., perm])
    assert torch.allclose(out, out_p, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(problems(), st.randoms(use_true_random=False))
def test_permuting_queries_permutes_output(p, random):
    q, k, v, mask = p
    perm = list(range(q.shape[1]))
    random.shuffle(perm)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    out_p, w_p = scaled_dot_product_attention(q[:, perm], k, v, mask[:, perm])
    assert torch.allclose(out[:, perm], out_p, atol=1e-12)
    assert torch.allclose(w[:, perm], w_p, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(problems(), st.one_of(st.sampled_from([math.nan, math.inf, -math.inf]), st.floats()))   # NaN, inf, any float
def test_masked_values_cannot_influence_output(p, junk):
    q, k, v, mask = p
    mask = mask.clone()
    mask[:, :, -1] = False                                  # at least one key that no query may see
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    hidden = ~mask.any(1)                                   # (B, T_k) keys no query may see
    v2 = v.clone()
    v2[hidden] = junk
    k2 = k.clone()
    k2[hidden] = junk
    out2, _ = scaled_dot_product_attention(q, k2, v2, mask)
    assert torch.equal(out, out2) and torch.isfinite(out2).all()


@settings(max_examples=60, deadline=None)
@given(problems(with_mask=False), st.sampled_from([torch.float32, torch.float64]), st.floats(0.0, 1.0))
def test_stable_for_huge_logits(p, dtype, fraction):
    q, k, v, _ = p
    # |q|, |k| up to sqrt(largest float) / 2: |scores| up to a quarter of the largest finite float
    size = (torch.finfo(dtype).max ** 0.5 / 2) ** fraction
    q = (q / q.norm(dim=-1, keepdim=True)).to(dtype) * size
    k = (k / k.norm(dim=-1, keepdim=True)).to(dtype) * size
    out, w = scaled_dot_product_attention(q, k, v.to(dtype), scale=1.0)
    assert torch.isfinite(out).all() and torch.isfinite(w).all()
    assert torch.allclose(w.sum(-1), torch.ones_like(w.sum(-1)), atol=1e-5)
