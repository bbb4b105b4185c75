"""Tests of the data generator, the plain encoder-decoder, training loop and gradient tools."""

import numpy as np
import pytest
import torch
from attention_course import seed_everything
from attention_course.analysis.gradients import input_gradient_norms, one_unit_rnn, set_recurrent_gain
from attention_course.experiments.length import LengthProtocol, run_length_experiment
from attention_course.models.seq2seq import Seq2Seq, reverse_padded
from attention_course.tasks.digits import DIGIT_VOCAB, decode_digits, digit_batch
from attention_course.tokens import BOS, EOS, PAD
from attention_course.train.seq2seq import accuracy


def test_digit_batch_layout():
    b = digit_batch(np.random.default_rng(0), 16, 2, 7)
    assert b.src.shape == (16, 7) and b.target.shape == (16, 8)
    for src, n, tgt in zip(b.src, b.lengths, b.target):
        assert (src[:n] >= 3).all() and (src[n:] == PAD).all()
        assert torch.equal(tgt[:n], src[:n]) and tgt[n] == EOS and (tgt[n + 1:] == PAD).all()
    assert (b.decoder_input()[:, 0] == BOS).all()


def test_decode_digits_stops_at_eos():
    b = digit_batch(np.random.default_rng(1), 4, 3, 5)
    for src, n, tgt in zip(b.src, b.lengths, b.target):
        assert decode_digits(tgt) == decode_digits(src)
        assert len(decode_digits(tgt)) == n


def test_digit_batch_is_seeded():
    a = digit_batch(np.random.default_rng(5), 8, 1, 9)
    b = digit_batch(np.random.default_rng(5), 8, 1, 9)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("kwargs, message", [({"min_len": 0}, "min_len"), ({"min_len": 9}, "min_len")])
def test_digit_batch_bad_input(kwargs, message):
    args = {"batch_size": 2, "min_len": 1, "max_len": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        digit_batch(np.random.default_rng(0), **args)


def test_reverse_padded_keeps_padding():
    src = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    assert reverse_padded(src, torch.tensor([3, 2])).tolist() == [[5, 4, 3, 0], [7, 6, 0, 0]]


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_context_size_does_not_depend_on_length(cell):
    torch.manual_seed(0)
    model = Seq2Seq(len(DIGIT_VOCAB), 8, 16, cell)
    for n in (3, 40):
        b = digit_batch(np.random.default_rng(n), 2, n, n)
        hs, context, _ = model.encode(b.src, b.lengths)
        h = context[0] if cell == "lstm" else context
        assert hs.shape == (2, n, 16) and h.shape == (1, 2, 16)
        logits = model(b.src, b.lengths, b.decoder_input())
        assert logits.shape == (2, n + 1, len(DIGIT_VOCAB))


def test_encoder_ignores_padding():
    torch.manual_seed(0)
    model = Seq2Seq(len(DIGIT_VOCAB), 8, 16, "gru")
    src = torch.tensor([[3, 4, 5, 0, 0]])
    _, c1, _ = model.encode(src, torch.tensor([3]))
    _, c2, _ = model.encode(src[:, :3], torch.tensor([3]))
    assert torch.allclose(c1, c2)


def test_seq2seq_bad_input():
    model = Seq2Seq(len(DIGIT_VOCAB), 8, 16)
    with pytest.raises(ValueError, match="token ids"):
        model.encode(torch.zeros(2, 3), torch.tensor([3, 3]))
    with pytest.raises(ValueError, match=r"lengths must have shape \(2,\)"):
        model.encode(torch.zeros(2, 3, dtype=torch.long), torch.tensor([3]))
    with pytest.raises(ValueError, match="cell must be one of"):
        Seq2Seq(len(DIGIT_VOCAB), 8, 16, cell="transformer")


def test_accuracy_counts_eos_not_padding():
    target = torch.tensor([[3, 4, EOS, PAD], [5, EOS, PAD, PAD]])
    predicted = torch.tensor([[3, 9, EOS, 7], [5, EOS, PAD, PAD]])
    token, exact = accuracy(predicted, target)
    assert torch.allclose(token, torch.tensor([2 / 3, 1.0]))
    assert exact.tolist() == [0.0, 1.0]
    token_short, _ = accuracy(predicted[:, :1], target)
    assert torch.allclose(token_short, torch.tensor([1 / 3, 1 / 2]))


def test_training_learns_short_copy():
    """A small budget must take a GRU well above chance on 3-digit strings."""
    seed_everything(0)
    torch.manual_seed(0)
    model = Seq2Seq(len(DIGIT_VOCAB), 16, 32, "gru")
    protocol = LengthProtocol(min_len=1, max_len=3, steps=150, eval_lengths=(3,), eval_batch_size=128)
    history, result = run_length_experiment(model, protocol)
    assert history["loss"][-1] < history["loss"][0]
    assert result["token_accuracy"][0] > 0.6
    assert len(history["grad_norm"]) == 150


def test_gradient_norms_vanish_and_explode_with_gain():
    b = digit_batch(np.random.default_rng(3), 32, 20, 20)
    ratios = {}
    for gain in (0.5, 2.0):
        torch.manual_seed(0)
        model = Seq2Seq(len(DIGIT_VOCAB), 8, 32, "rnn")
        set_recurrent_gain(model.encoder.rnn, gain)
        g = input_gradient_norms(model, b)
        assert g.shape == (20,)
        ratios[gain] = g[0] / g[-1]
    assert ratios[0.5] < 1e-3 < 1 < ratios[2.0]


def test_one_unit_rnn_has_a_cliff():
    w = torch.linspace(4.0, 6.0, 2001, dtype=torch.float64, requires_grad=True)
    one_unit_rnn(w).sum().backward()
    g = w.grad.abs()
    assert g.max() > 1e3 * g.median()
    assert abs(w[g.argmax()].item() - 5.0) < 0.01


def test_seed_everything_is_reproducible():
    seed_everything(3)
    a = torch.randn(4)
    seed_everything(3)
    assert torch.equal(a, torch.randn(4))
    assert torch.get_num_threads() == 1
    with pytest.raises(ValueError, match="threads"):
        seed_everything(0, threads=0)
