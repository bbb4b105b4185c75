"""The steps of Chapter 3's progression (attention_course.layers.progression) against the package's
layers: no weights, masking after vs before the softmax, dropout on the weights, the heads wrapper
against the split-heads layer with shared weights."""

import pytest
import torch
from attention_course import causal_mask, scaled_dot_product_attention
from attention_course.layers.attention import masked_softmax
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.layers.progression import (
    HeadsWrapper,
    attention_without_weights,
    heads_to_multihead,
    renormalised_causal_weights,
)
from attention_course.layers.self_attention import SelfAttention
from hypothesis import given, settings
from hypothesis import strategies as st


def test_attention_without_weights_is_sdpa_with_x_as_query_key_value_and_scale_1():
    x = torch.randn(2, 5, 3, dtype=torch.float64)
    context, weights = attention_without_weights(x)
    ref, ref_w = scaled_dot_product_attention(x, x, x, scale=1.0)
    assert torch.allclose(context, ref, atol=1e-12) and torch.allclose(weights, ref_w, atol=1e-12)
    # token 0's context, one term at a time
    w0 = torch.softmax(torch.stack([x[0, 0] @ x[0, t] for t in range(5)]), 0)
    assert torch.allclose(context[0, 0], sum(w0[t] * x[0, t] for t in range(5)), atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 9), st.floats(0.1, 10.0))
def test_masking_after_the_softmax_equals_masking_before(T, spread):
    scores = spread * torch.randn(3, T, T, dtype=torch.float64)
    after = renormalised_causal_weights(scores)
    before = masked_softmax(scores, causal_mask(T))
    assert torch.allclose(after, before, rtol=0, atol=1e-12)
    assert torch.equal(after.triu(1), torch.zeros_like(after))


@pytest.mark.parametrize("fn, arg, message", [
    (renormalised_causal_weights, torch.randn(3, 4), "square scores"),
    (renormalised_causal_weights, torch.tensor([[0.0, float("inf")], [0.0, 0.0]]), "NaN or inf"),
    (renormalised_causal_weights, torch.ones(2, 2, dtype=torch.long), "floating-point"),
    (attention_without_weights, torch.tensor([[float("nan"), 1.0]]), "NaN or inf"),
    (attention_without_weights, torch.ones(3), "at least 2 dims"),
])
def test_bad_inputs(fn, arg, message):
    with pytest.raises((ValueError, TypeError), match=message):
        fn(arg)


def test_dropout_in_training_scales_survivors_and_is_off_in_eval():
    torch.manual_seed(0)
    layer = SelfAttention(8, dropout=0.5).double()
    x = torch.randn(4, 16, 8, dtype=torch.float64)
    layer.eval()
    out_eval, w_eval = layer(x)
    plain = SelfAttention(8).double()
    plain.load_state_dict(layer.state_dict())
    out_plain, w_plain = plain(x)
    assert torch.equal(out_eval, out_plain) and torch.equal(w_eval, w_plain)
    layer.train()
    out_train, w_train = layer(x)
    kept = w_train != 0
    assert 0.4 < kept.double().mean().item() < 0.6                         # about half survive
    assert torch.allclose(w_train[kept], 2.0 * w_eval[kept], atol=1e-12)     # survivors scaled by 1 / (1 - p)
    assert not torch.allclose(w_train.sum(-1), torch.ones(4, 16, dtype=torch.float64))
    assert torch.allclose(out_train, w_train @ layer.W_V(x), atol=1e-12)     # the output uses the dropped weights
    # on average over many draws the dropped weights are the weights
    mean = torch.stack([layer(x)[1] for _ in range(400)]).mean(0)
    assert (mean - w_eval).abs().max() < 0.15


def test_dropout_zero_is_the_old_layer():
    torch.manual_seed(0)
    layer = SelfAttention(6).train()
    x = torch.randn(2, 5, 6)
    assert torch.equal(layer(x)[0], scaled_dot_product_attention(layer.W_Q(x), layer.W_K(x), layer.W_V(x))[0])


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5, float("nan"), True, "0.1", None])
def test_bad_dropout_is_named(p):
    with pytest.raises(ValueError, match=r"dropout must be a probability in \[0, 1\)"):
        SelfAttention(4, dropout=p)
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match=r"dropout_p must be a probability in \[0, 1\)"):
        scaled_dot_product_attention(q, q, q, dropout_p=p)


@pytest.mark.parametrize("num_heads", [1, 2, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_wrapper_equals_split_heads_with_shared_weights(num_heads, causal):
    torch.manual_seed(0)
    wrapper = HeadsWrapper(8, num_heads).double().eval()
    mha = heads_to_multihead(wrapper)
    assert isinstance(mha, MultiHeadAttention) and mha.W_Q.weight.dtype == torch.float64
    x = torch.randn(3, 6, 8, dtype=torch.float64)
    mask = causal_mask(6) if causal else None
    out_w, w_w = wrapper(x, mask)
    out_m, w_m = mha(x, x, x, mask)
    assert out_w.shape == (3, 6, 8) and w_w.shape == (3, num_heads, 6, 6)
    assert torch.allclose(out_w, out_m, rtol=0, atol=1e-12) and torch.allclose(w_w, w_m, rtol=0, atol=1e-12)
    # head h of the wrapper is head h of the split layer
    for h, head in enumerate(wrapper.heads):
        assert torch.allclose(head(x, mask)[1], w_m[:, h], atol=1e-12)


def test_wrapper_bad_sizes():
    with pytest.raises(ValueError, match="not divisible"):
        HeadsWrapper(6, 4)
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        HeadsWrapper(6, 0)
    with pytest.raises(TypeError, match="expected a HeadsWrapper"):
        heads_to_multihead(SelfAttention(4))
