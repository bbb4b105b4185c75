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
def test_score_is_compare_of_projected_keys(score):
    """forward(q, k) = compare(q, project_keys(k)), bit for bit, also for one query at a time (a decoder step)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    s = make_score(score, 4)
    projected = s.project_keys(k)
    assert torch.equal(s(q, k), s.compare(q, projected))
    assert torch.equal(s.compare(q[:, :1], projected), s(q[:, :1], k))     # one query at a time: same scores


@pytest.mark.parametrize("decoder, options", [("bahdanau", {}), ("luong", {"input_feeding": True, "attentional": True}),
                                              ("luong", {})])
def test_decoders_project_the_keys_once_per_source(decoder, options):
    """The keys' projection (U_a h_j in Bahdanau et al.) is computed once per forward, not once per step."""
    torch.manual_seed(0)
    model = AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 8, 16, score="additive", decoder=decoder, **options)
    b = digit_batch(np.random.default_rng(0), 4, 2, 7)
    calls = []
    model.decoder.score.W_k.register_forward_hook(lambda *args: calls.append(1))
    model(b.src, b.lengths, b.decoder_input())                              # 8 output steps
    assert len(calls) == 1


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


# --- the published decoders: Luong et al. 2015 and Bahdanau et al. 2015 ----------------------------

DECODER_CONFIGS = {
    "seed posts (Luong, no attentional layer)": dict(),
    "Luong": dict(attentional=True),
    "Luong, general": dict(attentional=True, score="general"),
    "Luong, input feeding": dict(attentional=True, input_feeding=True),
    "Bahdanau": dict(decoder="bahdanau"),
    "Bahdanau, dot": dict(decoder="bahdanau", score="dot"),
}


@pytest.mark.parametrize("config", DECODER_CONFIGS, ids=list(DECODER_CONFIGS))
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_every_decoder_shapes_padding_and_step_interface(config, cell):
    torch.manual_seed(0)
    model = AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 8, 16, cell=cell, bidirectional=True,
                             **DECODER_CONFIGS[config]).eval()
    b = digit_batch(np.random.default_rng(0), 4, 2, 7)
    tgt_in = b.decoder_input()
    logits = model(b.src, b.lengths, tgt_in)
    assert logits.shape == (4, 8, len(DIGIT_VOCAB))
    # Teacher forcing and the step interface (start/step, which greedy and beam search use) agree.
    state, stepped, weights = model.start(b.src, b.lengths), [], []
    for t in range(tgt_in.shape[1]):
        step_logits, state, w = model.step(state, tgt_in[:, t])
        stepped.append(step_logits)
        weights.append(w)
    assert torch.allclose(torch.stack(stepped, 1), logits, atol=1e-5)
    w = torch.stack(weights, 1)                    # (B, T, S)
    assert torch.allclose(w.sum(-1), torch.ones(4, 8))
    for row, n in enumerate(b.lengths):
        assert (w[row, :, n:] == 0).all()          # padding never attended
    ids, gw = model.greedy_decode(b.src, b.lengths, 8, return_weights=True)
    assert ids.shape == (4, 8) and gw.shape == (4, 8, 7)


def _gru_step(rnn, x, h):
    """One GRU step written out from torch's weights (gates r, z, n), x (B, I), h (B, H) -> (B, H)."""
    gi = x @ rnn.weight_ih_l0.T + rnn.bias_ih_l0
    gh = h @ rnn.weight_hh_l0.T + rnn.bias_hh_l0
    (ir, iz, in_), (hr, hz, hn) = gi.chunk(3, -1), gh.chunk(3, -1)
    r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
    n = torch.tanh(in_ + r * hn)
    return (1 - z) * n + z * h


def _dot_attend(q, hs, n):
    """Dot-score context and weights of one query q (H,) over the first n rows of hs (S, H), by hand."""
    s = hs[:n] @ q
    w = torch.exp(s - s.max()) / torch.exp(s - s.max()).sum()
    return w @ hs[:n], torch.cat([w, torch.zeros(hs.shape[0] - n)])


def test_luong_decoder_by_hand():
    """h_t = GRU(h_{t-1}, y_{t-1}); c_t from the query h_t; h~_t = tanh(W_c [c_t; h_t]); logits = W_s h~_t;
    with input feeding h~_{t-1} joins y_{t-1} at the cell's input."""
    torch.manual_seed(1)
    for feeding in (False, True):
        model = AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 6, 8, attentional=True,
                                 input_feeding=feeding).double().eval()
        b = digit_batch(np.random.default_rng(1), 2, 3, 5)
        tgt_in = b.decoder_input()
        logits = model(b.src, b.lengths, tgt_in)
        hs, h0, _ = model.encode(b.src, b.lengths)
        dec = model.decoder
        for row in range(2):
            h, h_tilde, n = h0[0, row], torch.zeros(8, dtype=torch.float64), int(b.lengths[row])
            for t in range(tgt_in.shape[1]):
                y = dec.embed.weight[tgt_in[row, t]]
                h = _gru_step(dec.rnn, torch.cat([y, h_tilde]) if feeding else y, h)
                c, _ = _dot_attend(h, hs[row], n)
                h_tilde = torch.tanh(dec.W_c.weight @ torch.cat([c, h]))
                assert torch.allclose(logits[row, t], dec.out.weight @ h_tilde + dec.out.bias, atol=1e-10)


def test_bahdanau_decoder_by_hand():
    """c_t from the query s_{t-1} (additive score); s_t = GRU(s_{t-1}, [y_{t-1}; c_t]);
    logits = W_o [s_t; c_t; y_{t-1}]."""
    torch.manual_seed(2)
    model = AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 6, 8, decoder="bahdanau").double().eval()
    b = digit_batch(np.random.default_rng(2), 2, 3, 5)
    tgt_in = b.decoder_input()
    logits = model(b.src, b.lengths, tgt_in)
    _, _, weights = model.decoder(tgt_in, model.start(b.src, b.lengths).state, *model.encode(b.src, b.lengths)[::2])
    hs, s0, _ = model.encode(b.src, b.lengths)
    dec, score = model.decoder, model.decoder.score
    for row in range(2):
        s, n = s0[0, row], int(b.lengths[row])
        for t in range(tgt_in.shape[1]):
            e = torch.stack([score.v.weight[0] @ torch.tanh(score.W_q.weight @ s + score.W_k.weight @ hs[row, j]
                                                            + score.W_k.bias) for j in range(n)])
            a = torch.softmax(e, 0)                                        # query: the previous state
            c = a @ hs[row, :n]
            assert torch.allclose(weights[row, t, :n], a, atol=1e-10)
            y = dec.embed.weight[tgt_in[row, t]]
            s = _gru_step(dec.rnn, torch.cat([y, c]), s)                   # context into the cell
            want = dec.out.weight @ torch.cat([s, c, y]) + dec.out.bias
            assert torch.allclose(logits[row, t], want, atol=1e-10)


def test_the_two_decoders_ask_with_different_states():
    """Bahdanau's first weights come from s_0 alone (the first target token cannot change them);
    Luong's from h_1, which has read it."""
    torch.manual_seed(3)
    b = digit_batch(np.random.default_rng(3), 3, 4, 6)
    other = b.decoder_input().clone()
    other[:, 0] = (other[:, 0] + 1) % len(DIGIT_VOCAB)
    for decoder, changes in (("bahdanau", False), ("luong", True)):
        model = AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), 6, 8, decoder=decoder).eval()
        hs, state, mask = model.start(b.src, b.lengths)
        w1 = model.decoder(b.decoder_input(), state, hs, mask)[2][:, 0]
        w2 = model.decoder(other, state, hs, mask)[2][:, 0]
        assert (not torch.allclose(w1, w2)) == changes


def test_decoder_options_rejected_clearly():
    with pytest.raises(ValueError, match="decoder must be one of"):
        AttentionSeq2Seq(10, 10, 4, 8, decoder="transformer")
    with pytest.raises(ValueError, match="needs attentional=True"):
        AttentionSeq2Seq(10, 10, 4, 8, input_feeding=True)
    with pytest.raises(ValueError, match="options of the Luong decoder"):
        AttentionSeq2Seq(10, 10, 4, 8, decoder="bahdanau", attentional=True)
    with pytest.raises(ValueError, match="score must be one of"):
        AttentionSeq2Seq(10, 10, 4, 8, decoder="bahdanau", score="cosine")


def test_widths_for_equal_parameters():
    from attention_course.experiments.dates import translator_parameters, width_for_parameters
    luong = dict(attentional=True, bidirectional=False)
    target = translator_parameters(64, score="general", **luong)
    for score in ("dot", "general", "additive"):
        h = width_for_parameters(target, score=score, **luong)
        assert h % 2 == 0 and abs(translator_parameters(h, score=score, **luong) - target) / target < 0.03
    assert width_for_parameters(target, score="dot", **luong) > 64 > width_for_parameters(target, score="additive",
                                                                                          **luong)
    with pytest.raises(ValueError, match="target"):
        width_for_parameters(0)


def test_compare_on_dates_trains_every_variant_per_seed():
    from attention_course.experiments.dates import compare_on_dates
    variants = {"luong": dict(hidden_dim=8, bidirectional=False), "bahdanau": dict(hidden_dim=8, decoder="bahdanau")}
    out = compare_on_dates(variants, seeds=(0, 1), n_test=50, steps=2, batch_size=8)
    assert list(out) == ["luong", "bahdanau"]
    for r in out.values():
        assert len(r["exact"]) == len(r["models"]) == 2 and all(0 <= x <= 1 for x in r["exact"])
        assert r["parameters"] == sum(p.numel() for p in r["models"][0].parameters())
    # same seed, same variant: the same model
    again = compare_on_dates({"luong": variants["luong"]}, seeds=(1,), n_test=50, steps=2, batch_size=8)
    assert all(torch.equal(a, b) for a, b in zip(again["luong"]["models"][0].parameters(),
                                                 out["luong"]["models"][1].parameters()))
    with pytest.raises(ValueError, match="at least one seed"):
        compare_on_dates(variants, seeds=())


def test_token_probe_reads_the_current_token_not_the_past():
    from attention_course.analysis.probes import token_probe_accuracy
    g = torch.Generator().manual_seed(0)
    src = torch.randint(3, 9, (200, 6), generator=g)
    lengths = torch.randint(3, 7, (200,), generator=g)
    hs = torch.nn.functional.one_hot(src, 9).float() + 0.01 * torch.randn(200, 6, 9, generator=g)
    acc = token_probe_accuracy(hs, src, lengths)
    assert acc[0] > 0.99 and acc[1] < 0.4 and acc[2] < 0.4          # chance is 1/6
    shifted = torch.roll(hs, 1, dims=1)                               # row t holds token t-1
    assert token_probe_accuracy(shifted, src, lengths, offsets=(1,))[1] > 0.99
    with pytest.raises(ValueError, match="need hs"):
        token_probe_accuracy(hs[0], src, lengths)
    with pytest.raises(ValueError, match="offsets"):
        token_probe_accuracy(hs, src, lengths, offsets=(6,))
