"""The KV cache of the package Transformer: incremental decoding gives the tokens of full recomputation."""

import pytest
import torch
from attention_course.layers.attention import causal_mask, padding_mask
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.models.transformer import Transformer
from attention_course.tokens import BOS

VOCAB = 12


def _source(seed, batch=6, S=9):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, S + 1, (batch,), generator=g)
    lengths[0] = S                                                       # one full row, the rest padded
    src = torch.randint(3, VOCAB, (batch, S), generator=g)
    src[torch.arange(S)[None, :] >= lengths[:, None]] = 0
    return src, lengths


def _model(seed, dtype=torch.float64, **kwargs):
    torch.manual_seed(seed)
    sizes = {"d_model": 16, "num_heads": 4, "num_layers": 2, "d_ff": 32, **kwargs}
    return Transformer(VOCAB, VOCAB, **sizes, max_len=40).to(dtype).eval()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_len", [1, 5, 17, 39])
def test_cached_greedy_decoding_gives_the_tokens_of_full_recomputation(seed, max_len):
    model = _model(seed, num_layers=1 + seed % 3)
    src, lengths = _source(seed)
    cached = model.greedy_decode(src, lengths, max_len)
    model.kv_cache = False
    assert torch.equal(cached, model.greedy_decode(src, lengths, max_len))


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_each_cached_step_gives_the_logits_of_full_recomputation(dtype, tol):
    model = _model(1, dtype)
    src, lengths = _source(1)
    g = torch.Generator().manual_seed(5)
    tgt_in = torch.cat([torch.full((6, 1), BOS), torch.randint(3, VOCAB, (6, 15), generator=g)], dim=1)
    with torch.no_grad():
        full = model(src, lengths, tgt_in)                               # (B, 16, V), teacher-forced
        state = model.start(src, lengths)
        steps = []
        for t in range(tgt_in.shape[1]):
            logits, state, _ = model.step(state, tgt_in[:, t])
            steps.append(logits)
    assert state.self_kv[0][0].shape == (6, 4, 16, 4)                    # (B, H, t, d_head): one entry per step
    assert (torch.stack(steps, 1) - full).abs().max() < tol


def test_no_cache_state_has_no_cache():
    model = _model(0)
    model.kv_cache = False
    state = model.start(*_source(0))
    assert state.self_kv is None and state.cross_kv is None


def test_attend_to_cached_heads_equals_forward():
    torch.manual_seed(0)
    layer = MultiHeadAttention(16, 4).double()
    x, memory = torch.randn(3, 5, 16, dtype=torch.float64), torch.randn(3, 7, 16, dtype=torch.float64)
    for query, key, mask in ((x, memory, padding_mask(torch.tensor([7, 2, 4]), 7)), (x, x, causal_mask(5))):
        out, w = layer(query, key, key, mask)
        out2, w2 = layer.attend(query, layer.heads_kv(key, key), mask)
        assert torch.allclose(out, out2, rtol=0, atol=1e-12) and torch.allclose(w, w2, rtol=0, atol=1e-12)


def test_attend_rejects_a_wrong_cache():
    layer = MultiHeadAttention(16, 4)
    k = torch.zeros(2, 2, 5, 8)
    with pytest.raises(ValueError, match="heads=4"):
        layer.attend(torch.zeros(2, 1, 16), (k, k))
    k = torch.zeros(3, 4, 5, 4)
    with pytest.raises(ValueError, match="batch size"):
        layer.attend(torch.zeros(2, 1, 16), (k, k))


def test_decoding_past_max_len_is_a_clear_error():
    model = _model(0)
    with pytest.raises(ValueError, match="longer than max_len=40"):
        model.greedy_decode(*_source(0), 41)
