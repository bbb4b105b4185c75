"""Tests of the RNN attention decoder, the score functions, the translator and the probe."""

import numpy as np
import pytest
import torch
from attention_course import scaled_dot_product_attention, seed_everything
from attention_course.analysis.probes import linear_probe_accuracy
from attention_course.experiments.dates import HELD_OUT_SEED, date_exact_match, train_date_translator, translate
from attention_course.layers.attention import masked_softmax
from attention_course.layers.scores import AdditiveScore, DotScore, GeneralScore, make_score
from attention_course.models.rnn_attention import AttentionSeq2Seq
from attention_course.tasks.dates import SOURCE_VOCAB, TARGET_VOCAB, date_batch
from attention_course.tasks.digits import DIGIT_VOCAB, digit_batch


def test_dot_score_attention_equals_core_with_scale_one():
    g = torch.Generator().manual_seed(0)
    q, hs = torch.randn(2, 3, 8, generator=g), torch.randn(2, 5, 8, generator=g)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, :]
    w = masked_softmax(DotScore()(q, hs), mask)
    out, w_core = scaled_dot_product_attention(q, hs, hs, mask, scale=1.0)
    assert torch.allclose(w, w_core) and torch.allclose(w @ hs, out)


def test_scores_shapes_and_definitions():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    general = GeneralScore(4)
    assert torch.allclose(general(q, k), torch.einsum("btd,de,bse->bts", q, general.W.weight, k), atol=1e-6)
    additive = AdditiveScore(4, 6)
    s = additive(q, k)
    assert s.shape == (2, 3, 5)
    manual = torch.stack([torch.stack([additive.v(torch.tanh(additive.W_q(q[b, t]) + additive.W_k(k[b, j])))[0]
                                       for j in range(5)]) for b in range(2) for t in range(3)]).reshape(2, 3, 5)
    assert torch.allclose(s, manual, atol=1e-6)
    with pytest.raises(ValueError, match="score must be one of"):
        make_score("cosine", 4)


@pytest.mark.parametrize("score", ["dot", "general", "additive"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_attention_seq2seq_shapes_and_padding(score, bidirectional):
    torch.manual_seed(0)
    model = AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 8, 16, score=score, bidirectional=bidirectional)
    b = digit_batch(np.random.default_rng(0), 4, 2, 7)
    logits = model(b.src, b.lengths, b.decoder_input())
    assert logits.shape == (4, 8, len(DIGIT_VOCAB))
    ids, w = model.greedy_decode(b.src, b.lengths, 8, return_weights=True)
    assert ids.shape == (4, 8) and w.shape == (4, 8, 7)
    assert torch.allclose(w.sum(-1), torch.ones(4, 8))
    for row, n in enumerate(b.lengths):
        assert (w[row, :, n:] == 0).all()          # no weight on padding


def test_bidirectional_row_sees_the_future():
    torch.manual_seed(0)
    src = torch.tensor([[3, 4, 5, 6]])
    changed = torch.tensor([[3, 4, 5, 7]])
    for bidirectional, expect_change in ((False, False), (True, True)):
        model = AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 8, 16, bidirectional=bidirectional)
        hs1, _, _ = model.encode(src, torch.tensor([4]))
        hs2, _, _ = model.encode(changed, torch.tensor([4]))
        assert (not torch.allclose(hs1[0, 0], hs2[0, 0])) == expect_change


def test_odd_hidden_dim_rejected_for_bidirectional():
    with pytest.raises(ValueError, match="odd hidden_dim=15"):
        AttentionSeq2Seq(10, 10, 8, 15, bidirectional=True)


def test_bad_src():
    model = AttentionSeq2Seq(10, 10, 8, 16)
    with pytest.raises(ValueError, match="token ids"):
        model.encode(torch.zeros(1, 3), torch.tensor([3]))


def test_short_training_learns_dates_and_translate_validates():
    seed_everything(0)
    model, history = train_date_translator(steps=150, hidden_dim=64)
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert date_exact_match(model, n=300) > 0.2
    out = translate(model, ["3.8.1995", "August 3, 1995"])
    assert len(out) == 2 and all(isinstance(o, str) for o in out)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        translate(model, ["3 août 1995"])
    with pytest.raises(ValueError, match="reserved"):
        train_date_translator(steps=1, seed=HELD_OUT_SEED)
    assert len(SOURCE_VOCAB) > len(TARGET_VOCAB)


def test_training_callback_stops_early():
    seed_everything(0)
    calls = []
    model, history = train_date_translator(steps=100, hidden_dim=16, callback=lambda s, m: calls.append(s) or s >= 20,
                                           every=10)
    assert calls == [10, 20] and len(history["loss"]) == 20


def test_linear_probe():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(400, 5, generator=g)
    readable = (x[:, 2] > 0).long()
    hidden = torch.randint(0, 2, (400,), generator=g)
    assert linear_probe_accuracy(x, readable) > 0.95
    assert linear_probe_accuracy(x, hidden) < 0.65
    with pytest.raises(ValueError, match="need features"):
        linear_probe_accuracy(x, readable[:10])


def test_date_batch_feeds_the_model():
    torch.manual_seed(0)
    model = AttentionSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), 8, 16)
    b = date_batch(np.random.default_rng(0), 3, split="train")
    assert model(b.src, b.lengths, b.decoder_input()).shape == (3, 11, len(TARGET_VOCAB))
