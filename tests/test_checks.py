"""Every exercise checker accepts the reference solution and rejects typical wrong answers."""

import pytest
import torch
from attention_course.models.seq2seq import reverse_padded
from attention_course.teaching.checks import (
    CheckFailed,
    check_linear_rnn_gradient,
    check_reverse_padded,
    check_token_accuracy,
)
from attention_course.tokens import PAD
from attention_course.train.seq2seq import accuracy


def test_reverse_accepts_reference(capsys):
    check_reverse_padded(reverse_padded)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda s, l: s.flip(1), "padding included"),
    (lambda s, l: s, "nothing was reversed"),
    (lambda s, l: s[:, :-1], "expected a tensor of shape"),
    (lambda s, l: reverse_padded(s, l.clamp(max=3)), "row .* is wrong"),
])
def test_reverse_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_reverse_padded(wrong)


def test_token_accuracy_accepts_reference(capsys):
    check_token_accuracy(lambda p, t: accuracy(p, t)[0])
    assert "Correct" in capsys.readouterr().out


def _with_padding(p, t):
    return (p == t).double().mean(1)


def _without_eos(p, t):
    real = (t != PAD) & (t != 2)
    return ((p == t) & real).sum(1) / real.sum(1)


def _no_short_handling(p, t):
    T = min(p.shape[1], t.shape[1])
    real = t[:, :T] != PAD
    return ((p[:, :T] == t[:, :T]) & real).sum(1) / real.sum(1)


@pytest.mark.parametrize("wrong, message", [
    (_with_padding, "counts padding"),
    (_without_eos, "ignores EOS"),
    (_no_short_handling, "shorter than the target"),
    (lambda p, t: torch.zeros(2), "one accuracy per example"),
])
def test_token_accuracy_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_token_accuracy(wrong)


def test_linear_gradient_accepts_reference(capsys):
    check_linear_rnn_gradient(0.9 ** 49, 1.1 ** 49)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("small, large, message", [
    (0.9 ** 50, 1.1 ** 50, "off by one"),
    (0.9 * 50, 1.1 ** 49, "multiplies"),
    (0.9 ** 49, 2.0, "expected a number near"),
])
def test_linear_gradient_rejects_wrong(small, large, message):
    with pytest.raises(CheckFailed, match=message):
        check_linear_rnn_gradient(small, large)
