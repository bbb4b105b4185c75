"""The small Transformer: positions, masks, layer properties, decoding and a short training run."""

import math

import numpy as np
import pytest
import torch
from attention_course.experiments.dates import HELD_OUT_SEED, train_date_transformer, translate
from attention_course.models.transformer import EncoderLayer, PositionalEncoding, Transformer, sinusoidal_positions
from attention_course.tasks.dates import SOURCE_VOCAB, TARGET_LEN, TARGET_VOCAB, date_batch, encode_sources
from attention_course.tokens import BOS, EOS, PAD
from hypothesis import given, settings
from hypothesis import strategies as st


def _model(seed=0, **kwargs):
    torch.manual_seed(seed)
    return Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), **kwargs).eval()


def test_sinusoidal_positions_values():
    pe = sinusoidal_positions(20, 8)
    assert pe.shape == (20, 8)
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * 4))
    assert math.isclose(pe[5, 0].item(), math.sin(5), abs_tol=1e-6)
    assert math.isclose(pe[5, 3].item(), math.cos(5 * 10000 ** (-2 / 8)), abs_tol=1e-6)
    assert pe.abs().max() <= 1.0
    assert len({tuple(row.tolist()) for row in pe}) == 20                # every position is distinct


@pytest.mark.parametrize("max_len, d", [(0, 8), (10, 7), (10, 0)])
def test_sinusoidal_positions_rejects_bad_sizes(max_len, d):
    with pytest.raises(ValueError, match="even d_model"):
        sinusoidal_positions(max_len, d)


def test_positional_encoding_errors():
    pos = PositionalEncoding(8, max_len=10)
    assert torch.equal(pos(torch.zeros(2, 4, 8))[1], sinusoidal_positions(10, 8)[:4])
    with pytest.raises(ValueError, match="length 11 is longer than max_len=10"):
        pos(torch.zeros(1, 11, 8))
    with pytest.raises(ValueError, match=r"d_model=8\), got \(1, 4, 6\)"):
        pos(torch.zeros(1, 4, 6))


def test_shapes_and_attention_maps():
    model = _model(num_heads=2, num_layers=3)
    batch = date_batch(np.random.default_rng(0), 5, split="train")
    tgt_in = batch.decoder_input()
    S, T = batch.src.shape[1], tgt_in.shape[1]
    assert model(batch.src, batch.lengths, tgt_in).shape == (5, T, len(TARGET_VOCAB))
    maps = model.attention_maps(batch.src, batch.lengths, tgt_in)
    assert [len(maps[k]) for k in ("encoder", "decoder", "cross")] == [3, 3, 3]
    assert maps["encoder"][0].shape == (5, 2, S, S)
    assert maps["decoder"][0].shape == (5, 2, T, T)
    assert maps["cross"][0].shape == (5, 2, T, S)
    assert torch.allclose(maps["cross"][-1].sum(-1), torch.ones(5, 2, T))
    assert maps["decoder"][1].triu(1).abs().max() == 0                  # causal: nothing above the diagonal
    pad = torch.arange(S)[None, :] >= batch.lengths[:, None]             # (B, S) padded source positions
    assert maps["cross"][0].permute(0, 3, 1, 2)[pad].abs().max() == 0    # padded keys get no weight


def test_decoder_cannot_see_the_future_nor_padding():
    model = _model()
    batch = date_batch(np.random.default_rng(1), 4, split="train")
    tgt_in = batch.decoder_input()
    logits = model(batch.src, batch.lengths, tgt_in)
    changed = tgt_in.clone()
    changed[:, 6:] = TARGET_VOCAB.index("-")
    logits_changed = model(batch.src, batch.lengths, changed)
    assert torch.equal(logits[:, :6], logits_changed[:, :6])
    assert (logits[:, 6:] != logits_changed[:, 6:]).any(-1).all()      # every later position moves
    junk = batch.src.clone()
    junk[torch.arange(junk.shape[1])[None, :] >= batch.lengths[:, None]] = 5
    assert torch.allclose(model(junk, batch.lengths, tgt_in), logits, atol=1e-6)


def test_greedy_decode_agrees_with_teacher_forcing_on_its_own_output():
    model = _model(seed=3)
    batch = date_batch(np.random.default_rng(2), 6, split="train")
    ids = model.greedy_decode(batch.src, batch.lengths, TARGET_LEN + 1)
    assert ids.shape == (6, TARGET_LEN + 1)
    tgt_in = torch.cat([torch.full((6, 1), BOS), ids[:, :-1]], dim=1)
    again = model(batch.src, batch.lengths, tgt_in).argmax(-1)
    for row_ids, row_again in zip(ids, again):
        end = (row_ids == EOS).nonzero()
        n = int(end[0]) + 1 if len(end) else len(row_ids)
        assert torch.equal(row_ids[:n], row_again[:n])
        assert (row_ids[n:] == PAD).all()


def test_decoding_in_chunks_gives_the_same_ids():
    model = _model(seed=4)
    batch = date_batch(np.random.default_rng(3), 7, split="train")
    whole = model.greedy_decode(batch.src, batch.lengths, TARGET_LEN + 1)
    assert torch.equal(model.greedy_decode(batch.src, batch.lengths, TARGET_LEN + 1, chunk=3), whole)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(1, 7), st.sampled_from([1, 2, 4]), st.integers(0, 2**31 - 1),
       st.randoms(use_true_random=False))
def test_encoder_layer_without_positions_is_permutation_equivariant(B, T, H, seed, random):
    torch.manual_seed(seed)
    layer = EncoderLayer(8, H, 16).double()
    x = torch.randn(B, T, 8, dtype=torch.float64)
    perm = list(range(T))
    random.shuffle(perm)
    out, w = layer(x)
    out_p, w_p = layer(x[:, perm])
    assert torch.allclose(out[:, perm], out_p, atol=1e-10)
    assert torch.allclose(w[:, :, perm][..., perm], w_p, atol=1e-10)


def test_positions_break_permutation_equivariance():
    torch.manual_seed(0)
    layer, pos = EncoderLayer(8, 2, 16).double(), PositionalEncoding(8).double()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    perm = [4, 2, 0, 1, 3]
    out, _ = layer(pos(x))
    out_p, _ = layer(pos(x[:, perm]))
    assert not torch.allclose(out[:, perm], out_p, atol=1e-3)


def test_bad_source_is_rejected():
    model = _model()
    with pytest.raises(ValueError, match="token ids"):
        model.encode(torch.zeros(2, 3), torch.tensor([3, 3]))
    with pytest.raises(ValueError, match=r"lengths must have shape \(2,\)"):
        model.encode(torch.zeros(2, 3, dtype=torch.long), torch.tensor([3]))


def test_short_training_run_and_translate():
    model, history = train_date_transformer(steps=10, batch_size=8)
    assert len(history["loss"]) == 10 and history["loss"][-1] < history["loss"][0]
    texts = ["Thursday, August 3, 1995", "3.8.1995"]
    out = translate(model, texts)
    assert len(out) == 2 and all(isinstance(t, str) for t in out)
    src, lengths = encode_sources(texts)
    assert model.greedy_decode(src, lengths, TARGET_LEN + 1).shape == (2, TARGET_LEN + 1)
    with pytest.raises(ValueError, match="reserved"):
        train_date_transformer(steps=1, seed=HELD_OUT_SEED)
