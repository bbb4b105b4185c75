"""Property tests, one per public function family: whatever sits in a masked (padded) position,
NaN, inf or any float, it cannot change the output; and finite scores of any magnitude give finite
weights (issue 15, item 7)."""

import math

import numpy as np
import pytest
import torch
from attention_course.analysis.adversarial import adversarial_attention, permutation_output_change
from attention_course.analysis.importance import kendall_tau, precision_at_k
from attention_course.layers.attention import masked_softmax, padding_mask, scaled_dot_product_attention
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.layers.self_attention import CrossAttention, SelfAttention
from attention_course.models.rnn_attention import BahdanauDecoder, LuongDecoder
from attention_course.models.set_transformer import ISAB, MAB, PMA, SAB, PooledSetModel, SetTransformerModel
from hypothesis import given, settings
from hypothesis import strategies as st

# What padding may hold: NaN and the infinities (drawn often, they are where masking by multiplying
# fails) or any float64 at all.
junk = st.one_of(st.sampled_from([math.nan, math.inf, -math.inf]), st.floats())
seeds = st.integers(0, 2**31 - 1)


def _lengths(seed: int, B: int, T: int) -> torch.Tensor:
    """B lengths in [1, T], at least one of them < T (so some position is padding)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    lengths[0] = max(1, T - 1) if T > 1 else 1
    return lengths


def _fill_padding(x: torch.Tensor, lengths: torch.Tensor, value: float) -> torch.Tensor:
    """x (B, T, ...) with every position t >= lengths[b] set to ``value``."""
    pad = ~padding_mask(lengths, x.shape[1])[:, 0]                       # (B, T)
    x = x.clone()
    x[pad] = torch.tensor(value, dtype=torch.float64).to(x.dtype)       # rounded (or overflowed) to x's dtype
    return x


# --- the attention core ---------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(seed=seeds, value=junk, dtype=st.sampled_from([torch.float32, torch.float64]))
def test_attention_masked_scores_keys_and_values_cannot_influence_the_output(seed, value, dtype):
    g = torch.Generator().manual_seed(seed)
    B, T_q, T_k, d = 2, 3, 5, 4
    q, k, v = (torch.randn(B, n, d, generator=g).to(dtype) for n in (T_q, T_k, T_k))
    mask = torch.rand(B, T_q, T_k, generator=g) < 0.6
    mask[:, :, -1] = False                                              # one key no query may see
    hidden = ~mask.any(1)                                               # (B, T_k)
    value = torch.tensor(value, dtype=torch.float64).to(dtype).item()  # rounded (or overflowed) to dtype
    out, w = scaled_dot_product_attention(q, k, v, mask)
    k2, v2 = k.clone(), v.clone()
    k2[hidden], v2[hidden] = value, value
    out2, w2 = scaled_dot_product_attention(q, k2, v2, mask)
    assert torch.equal(out, out2) and torch.equal(w, w2) and torch.isfinite(out2).all()
    scores = torch.randn(B, T_q, T_k, generator=g).to(dtype)
    assert torch.equal(masked_softmax(scores, mask), masked_softmax(scores.masked_fill(~mask, value), mask))


def _finite(dtype, width):
    """Any finite float of the dtype, the extremes drawn often: rows of huge negative scores are where
    filling masked scores with the most negative float instead of -inf goes wrong."""
    f = torch.finfo(dtype)
    return st.one_of(st.sampled_from([f.min, f.max, -f.tiny]), st.floats(width=width, allow_nan=False,
                                                                          allow_infinity=False))


finite32, finite64 = _finite(torch.float32, 32), _finite(torch.float64, 64)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.tuples(st.just(torch.float32), st.lists(finite32, min_size=12, max_size=12)),
                 st.tuples(st.just(torch.float64), st.lists(finite64, min_size=12, max_size=12))),
       seeds)
def test_finite_scores_of_any_magnitude_give_finite_weights_that_sum_to_one(case, seed):
    dtype, values = case
    scores = torch.tensor(values, dtype=dtype).reshape(3, 4)
    mask = torch.rand(3, 4, generator=torch.Generator().manual_seed(seed)) < 0.7
    w = masked_softmax(scores, mask)
    assert torch.isfinite(w).all() and (w >= 0).all()
    assert torch.equal(w[~mask], torch.zeros_like(w[~mask]))
    sums = w.sum(-1)
    assert torch.allclose(sums[mask.any(-1)], torch.ones_like(sums[mask.any(-1)]), atol=1e-5)
    assert torch.equal(sums[~mask.any(-1)], torch.zeros_like(sums[~mask.any(-1)]))
    # the largest allowed score always gets the largest weight
    best = scores.masked_fill(~mask, -math.inf).argmax(-1)
    rows = mask.any(-1)
    assert torch.equal(w[rows].max(-1).values, w[rows].gather(-1, best[rows, None])[:, 0])


@settings(max_examples=60, deadline=None)
@given(st.lists(finite32, min_size=8, max_size=8), st.lists(finite32, min_size=8, max_size=8))
def test_attention_over_the_full_float_range_is_finite_or_a_clear_error(qs, ks):
    q = torch.tensor(qs).reshape(1, 2, 4)
    k = torch.tensor(ks).reshape(1, 2, 4)
    try:
        out, w = scaled_dot_product_attention(q, k, torch.ones(1, 2, 3))
    except ValueError as error:                                          # q . k overflowed to inf or NaN
        assert "NaN" in str(error)
        assert not torch.isfinite(q @ k.transpose(-2, -1) / 2).all()
        return
    assert torch.isfinite(w).all() and torch.allclose(out, torch.ones(1, 2, 3))


# --- multi-head, self- and cross-attention ----------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(seed=seeds, value=junk)
def test_multihead_and_cross_attention_ignore_padded_keys(seed, value):
    torch.manual_seed(seed)
    B, T_q, T_k, E = 3, 4, 6, 8
    lengths = _lengths(seed, B, T_k)
    x = torch.randn(B, T_q, E, dtype=torch.float64)
    memory = torch.randn(B, T_k, E, dtype=torch.float64)
    junk_memory = _fill_padding(memory, lengths, value)
    mask = padding_mask(lengths, T_k)
    for layer in (MultiHeadAttention(E, 2).double(), CrossAttention(E, E).double()):
        args = (x, memory, memory) if isinstance(layer, MultiHeadAttention) else (x, memory)
        junk_args = (x, junk_memory, junk_memory) if isinstance(layer, MultiHeadAttention) else (x, junk_memory)
        out, w = layer(*args, mask)
        out2, w2 = layer(*junk_args, mask)
        assert torch.equal(out, out2) and torch.equal(w, w2)


@settings(max_examples=30, deadline=None)
@given(seed=seeds, value=junk)
def test_self_attention_with_a_square_padding_mask_ignores_padding(seed, value):
    torch.manual_seed(seed)
    B, T, E = 3, 5, 8
    lengths = _lengths(seed, B, T)
    real = padding_mask(lengths, T)                                      # (B, 1, T)
    mask = real & real.transpose(1, 2)                                   # padded queries see nothing
    x = torch.randn(B, T, E, dtype=torch.float64)
    layer = SelfAttention(E).double()
    out, w = layer(x, mask)
    out2, w2 = layer(_fill_padding(x, lengths, value), mask)
    assert torch.equal(out, out2) and torch.equal(w, w2)


@settings(max_examples=30, deadline=None)
@given(seed=seeds, value=junk)
def test_rnn_attention_decoder_ignores_padded_encoder_states(seed, value):
    torch.manual_seed(seed)
    B, S, H = 3, 5, 8
    lengths = _lengths(seed, B, S)
    hs = torch.randn(B, S, H)
    decoders = [LuongDecoder(10, 4, H, score=score, attentional=attentional)
                for score in ("dot", "general", "additive") for attentional in (False, True)]
    decoders += [LuongDecoder(10, 4, H, input_feeding=True), BahdanauDecoder(10, 4, H)]
    for decoder in decoders:
        tgt_in, state = torch.randint(0, 10, (B, 2)), decoder.initial_state(torch.zeros(1, B, H), hs)
        logits, _, w = decoder(tgt_in, state, hs, padding_mask(lengths, S))
        logits2, _, w2 = decoder(tgt_in, state, _fill_padding(hs, lengths, value), padding_mask(lengths, S))
        assert torch.equal(logits, logits2) and torch.equal(w, w2)


# --- set models ------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None)
@given(seed=seeds, value=junk)
def test_set_models_ignore_masked_elements(seed, value):
    torch.manual_seed(seed)
    B, n, D = 3, 5, 8
    lengths = _lengths(seed, B, n)
    mask = padding_mask(lengths, n)[:, 0]                                # (B, n)
    x = torch.rand(B, n, 1, dtype=torch.float64)
    x2 = _fill_padding(x, lengths, value)
    models = [PooledSetModel(pool, D).double() for pool in ("mean", "sum", "max")]
    models.append(SetTransformerModel(D, 2, num_blocks=2, layer_norm=True).double())
    for model in models:
        assert torch.equal(model(x, mask), model(x2, mask))
    h = torch.randn(B, n, D, dtype=torch.float64)
    h2 = _fill_padding(h, lengths, value)
    for block in (SAB(D, 2).double(), ISAB(D, 2, num_inducing=3).double()):
        out, out2 = block(h, mask), block(h2, mask)
        assert torch.equal(out[mask], out2[mask]) and torch.isfinite(out2).all()
    for block in (PMA(D, 2, num_seeds=2).double(),):
        assert torch.equal(block(h, mask), block(h2, mask))
    queries = torch.randn(B, 2, D, dtype=torch.float64)
    mab = MAB(D, 2).double()
    assert torch.equal(mab(queries, h, mask), mab(queries, h2, mask))


# --- rankings and adversaries over padded rows -------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(seed=seeds, value=junk)
def test_rankings_and_adversaries_ignore_padding(seed, value):
    g = torch.Generator().manual_seed(seed)
    N, T = 4, 7
    lengths = _lengths(seed, N, T)
    real = padding_mask(lengths, T)[:, 0]
    scores = torch.randn(N, T, generator=g, dtype=torch.float64)
    evidence = (torch.rand(N, T, generator=g) < 0.4) & real
    weights = torch.softmax(torch.randn(N, T, generator=g, dtype=torch.float64).masked_fill(~real, -math.inf), -1)
    junk_scores = scores.masked_fill(~real, value)
    junk_weights = weights.masked_fill(~real, abs(value) if not math.isnan(value) else value)
    p, p2 = precision_at_k(scores, evidence, lengths), precision_at_k(junk_scores, evidence, lengths)
    assert torch.equal(p.isnan(), p2.isnan()) and torch.equal(p.nan_to_num(), p2.nan_to_num())
    t, t2 = kendall_tau(scores, weights, lengths), kendall_tau(junk_scores, junk_weights, lengths)
    assert np.array_equal(t, t2, equal_nan=True)
    change = permutation_output_change(scores, 0.1, weights, lengths, 20, torch.Generator().manual_seed(1))
    change2 = permutation_output_change(junk_scores, 0.1, junk_weights, lengths, 20, torch.Generator().manual_seed(1))
    assert torch.equal(change, change2)
    adv, jsd = adversarial_attention(scores, 0.1, weights, lengths)
    adv2, jsd2 = adversarial_attention(junk_scores, 0.1, junk_weights, lengths)
    assert torch.equal(adv, adv2) and torch.equal(jsd, jsd2)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 1e300])
def test_pooled_max_of_a_set_with_junk_padding_is_the_max_of_its_elements(value):
    torch.manual_seed(0)
    model = PooledSetModel("max", 4).double()
    x = torch.tensor([[[1.0], [3.0], [value]]], dtype=torch.float64)
    mask = torch.tensor([[True, True, False]])
    assert torch.equal(model(x, mask), model(x[:, :2], mask[:, :2]))
