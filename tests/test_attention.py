"""Unit tests of attention_course.layers.attention: values, torch parity, masks and clear errors."""

import math

import pytest
import torch
import torch.nn.functional as F
from attention_course import causal_mask, padding_mask, scaled_dot_product_attention


def qkv(*batch, T_q=4, T_k=6, d_k=8, d_v=5, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*batch, T_q, d_k, generator=g, dtype=dtype),
            torch.randn(*batch, T_k, d_k, generator=g, dtype=dtype),
            torch.randn(*batch, T_k, d_v, generator=g, dtype=dtype))


def test_hand_computed_example():
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    k = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    v = torch.tensor([[10.0], [20.0]], dtype=torch.float64)
    out, w = scaled_dot_product_attention(q, k, v)
    e = math.exp(1 / math.sqrt(2))
    assert torch.allclose(w, torch.tensor([[e / (e + 1), 1 / (e + 1)]], dtype=torch.float64))
    assert torch.allclose(out, w @ v)


@pytest.mark.parametrize("batch", [(), (3,), (2, 3)])
def test_matches_torch_sdpa(batch):
    q, k, v = qkv(*batch)
    out, _ = scaled_dot_product_attention(q, k, v)
    assert torch.allclose(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=0)


def test_matches_torch_with_masks_and_scale():
    q, k, v = qkv(2, T_q=5, T_k=5)
    mask = causal_mask(5) & padding_mask(torch.tensor([5, 3]), 5)
    out, _ = scaled_dot_product_attention(q, k, v, mask, scale=0.3)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3)
    assert torch.allclose(out, ref, atol=1e-6, rtol=0)


def test_fully_masked_row_gives_zeros_not_nan():
    q, k, v = qkv(T_q=3, T_k=4)
    mask = torch.tensor([[True, True, False, False], [False] * 4, [True] * 4])
    q.requires_grad_(True)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(w[1], torch.zeros(4, dtype=w.dtype))
    assert torch.equal(out[1], torch.zeros(5, dtype=out.dtype))
    assert torch.allclose(w[[0, 2]].sum(-1), torch.ones(2, dtype=w.dtype))
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


def test_masks():
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    m = padding_mask(torch.tensor([2, 0, 3]), 3)
    assert m.shape == (3, 1, 3)
    assert m[:, 0].tolist() == [[True, True, False], [False, False, False], [True, True, True]]


def test_default_scale_is_inverse_sqrt_dk():
    q, k, v = qkv()
    out_default, _ = scaled_dot_product_attention(q, k, v)
    out_explicit, _ = scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(8))
    assert torch.equal(out_default, out_explicit)


# --- bad input gets a clear error ------------------------------------------------------------

def test_feature_sizes_differ():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"query and key feature sizes differ.*d_k=8.*d_k=7"):
        scaled_dot_product_attention(q, k[..., :7], v)


def test_key_value_lengths_differ():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"key and value lengths differ.*T_k=6.*T_k=5"):
        scaled_dot_product_attention(q, k, v[:5])


def test_mask_not_broadcastable():
    q, k, v = qkv(2)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 6\) is not broadcastable.*\(2, 4, 6\)"):
        scaled_dot_product_attention(q, k, v, torch.ones(3, 6, dtype=torch.bool))


def test_mask_must_not_grow_the_batch():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="not broadcastable"):
        scaled_dot_product_attention(q, k, v, torch.ones(2, 4, 6, dtype=torch.bool))


def test_mask_not_boolean():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="mask must be a boolean tensor.*torch.float64"):
        scaled_dot_product_attention(q, k, v, torch.ones(4, 6, dtype=torch.float64))


def test_integer_tensors_rejected():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="query must be a floating-point tensor, got dtype torch.int64"):
        scaled_dot_product_attention(q.long(), k, v)


def test_mixed_dtypes_rejected():
    q, k, v = qkv()
    with pytest.raises(TypeError, match="share one dtype"):
        scaled_dot_product_attention(q.float(), k, v)


def test_batch_dims_must_broadcast():
    q, _, _ = qkv(2)
    _, k, v = qkv(3)
    with pytest.raises(ValueError, match="batch dimensions do not broadcast"):
        scaled_dot_product_attention(q, k, v)


def test_vector_input_rejected():
    with pytest.raises(ValueError, match=r"at least 2 dims.*\(8,\)"):
        scaled_dot_product_attention(torch.zeros(8), torch.zeros(3, 8), torch.zeros(3, 2))


def test_bad_mask_helpers():
    with pytest.raises(ValueError, match="positive int"):
        causal_mask(0)
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, max_len=3\].*max 4"):
        padding_mask(torch.tensor([1, 4]), 3)
    with pytest.raises(ValueError, match="1-D integer tensor"):
        padding_mask(torch.tensor([1.0, 2.0]), 3)
