"""The one greedy loop (attention_course.decoding) against the three loops it replaced.

The references below are the loops each encoder-decoder had before decoding was written once:
the shared loop must give exactly the same tokens (and attention weights) on fixed seeds, with
rows that end early (EOS, then PAD) among them.
"""

from __future__ import annotations

import pytest
import torch
from attention_course.decoding import greedy_decode
from attention_course.models.rnn_attention import AttentionSeq2Seq
from attention_course.models.seq2seq import Encoded, Seq2Seq
from attention_course.models.transformer import Transformer
from attention_course.tokens import BOS, EOS, PAD

VOCAB, MAX_LEN = 6, 9          # a small vocabulary: untrained models write EOS early and often


@torch.no_grad()
def reference_rnn(model, src, lengths, max_len, attention):
    hs, state, src_mask = model.encode(src, lengths)
    token = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    out, weights = [], []
    for _ in range(max_len):
        if attention:
            logits, state, w = model.decoder(token, state, hs, src_mask)
            weights.append(w)
        else:
            logits, state = model.decoder(token, state)
        token = logits.argmax(-1)
        out.append(token.masked_fill(done[:, None], PAD))
        done |= token[:, 0] == EOS
    return torch.cat(out, dim=1), (torch.cat(weights, dim=1) if attention else None)


@torch.no_grad()
def reference_transformer(model, src, lengths, max_len):
    memory, src_mask, _ = model.encode(src, lengths)
    ids = torch.full((src.shape[0], 1), BOS, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits, _, _ = model.decode(ids, memory, src_mask)
        token = logits[:, -1].argmax(-1).masked_fill(done, PAD)
        ids = torch.cat([ids, token[:, None]], dim=1)
        done |= token == EOS
    return ids[:, 1:]


def source(seed, batch=16, S=7):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, S + 1, (batch,), generator=g)
    src = torch.randint(3, VOCAB, (batch, S), generator=g)
    return src.masked_fill(torch.arange(S)[None] >= lengths[:, None], PAD), lengths


def ends_early(ids):
    return bool((ids[:, -1] == PAD).any())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_seq2seq_decodes_as_before(seed, cell):
    torch.manual_seed(seed)
    model = Seq2Seq(VOCAB, 8, 16, cell=cell, reverse_input=bool(seed % 2)).eval()
    src, lengths = source(seed)
    expected, _ = reference_rnn(model, src, lengths, MAX_LEN, attention=False)
    assert torch.equal(model.greedy_decode(src, lengths, MAX_LEN), expected)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("score", ["dot", "general", "additive"])
def test_attention_seq2seq_decodes_as_before(seed, score):
    torch.manual_seed(seed)
    model = AttentionSeq2Seq(VOCAB, VOCAB, 8, 16, score=score, bidirectional=bool(seed % 2)).eval()
    src, lengths = source(seed)
    expected, expected_weights = reference_rnn(model, src, lengths, MAX_LEN, attention=True)
    ids, weights = model.greedy_decode(src, lengths, MAX_LEN, return_weights=True)
    assert torch.equal(ids, expected) and torch.equal(weights, expected_weights)
    assert torch.equal(model.greedy_decode(src, lengths, MAX_LEN), expected)


@pytest.mark.parametrize("seed", range(4))
def test_transformer_decodes_as_before(seed):
    torch.manual_seed(seed)
    model = Transformer(VOCAB, VOCAB, d_model=16, num_heads=2, num_layers=2, d_ff=32).eval()
    src, lengths = source(seed)
    expected = reference_transformer(model, src, lengths, MAX_LEN)
    assert torch.equal(model.greedy_decode(src, lengths, MAX_LEN), expected)
    assert torch.equal(model.greedy_decode(src, lengths, MAX_LEN, chunk=5), expected)


def test_the_references_exercise_rows_that_end_early():
    torch.manual_seed(0)
    src, lengths = source(0)
    models = [Seq2Seq(VOCAB, 8, 16), AttentionSeq2Seq(VOCAB, VOCAB, 8, 16),
              Transformer(VOCAB, VOCAB, d_model=16, num_heads=2, num_layers=2, d_ff=32)]
    assert all(ends_early(greedy_decode(m.eval(), src, lengths, MAX_LEN)) for m in models)


def test_both_rnn_encoders_return_the_same_structure():
    src, lengths = source(1)
    for model in (Seq2Seq(VOCAB, 8, 16), AttentionSeq2Seq(VOCAB, VOCAB, 8, 16)):
        encoded = model.encode(src, lengths)
        assert isinstance(encoded, Encoded)
        assert encoded.hs.shape == (16, 7, 16) and encoded.mask.shape == (16, 1, 7)
        assert torch.equal(encoded.mask[:, 0].sum(1), lengths)


def test_chunked_decoding_matches_whole_batch():
    torch.manual_seed(2)
    model = AttentionSeq2Seq(VOCAB, VOCAB, 8, 16).eval()
    src, lengths = source(2)
    whole = greedy_decode(model, src, lengths, MAX_LEN, return_weights=True)
    parts = greedy_decode(model, src, lengths, MAX_LEN, return_weights=True, chunk=3)
    assert torch.equal(whole[0], parts[0])
    torch.testing.assert_close(whole[1], parts[1])      # other batch sizes: other last bits in the GRU


def test_weights_need_a_model_that_returns_them():
    model = Seq2Seq(VOCAB, 8, 16).eval()
    src, lengths = source(3)
    with pytest.raises(ValueError, match="returns no attention weights"):
        greedy_decode(model, src, lengths, MAX_LEN, return_weights=True)
