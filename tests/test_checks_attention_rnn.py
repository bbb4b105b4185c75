"""Chapter 2's exercise checkers accept the reference and reject typical wrong answers."""

import pytest
import torch
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.attention_rnn import (
    EXERCISE_HS,
    EXERCISE_QUERY,
    check_additive_scores,
    check_context_vector,
    check_temperature,
)

SCORES = EXERCISE_HS @ EXERCISE_QUERY


def test_context_accepts_reference(capsys):
    check_context_vector(torch.softmax(SCORES, 0) @ EXERCISE_HS)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (SCORES @ EXERCISE_HS, "raw scores"),
    (EXERCISE_HS[SCORES.argmax()], "hard argmax"),
    (EXERCISE_HS.mean(0), "plain average"),
    (torch.zeros(4), "expected shape"),
    (torch.softmax(SCORES, 0) @ EXERCISE_HS + 0.1, "not the softmax-weighted average"),
])
def test_context_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_context_vector(wrong)


def reference_additive(q, k, W_q, W_k, b_k, v):
    return torch.tanh((q @ W_q.T)[:, None, :] + (k @ W_k.T + b_k)[None]) @ v


def test_additive_accepts_reference(capsys):
    check_additive_scores(reference_additive)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda q, k, W_q, W_k, b_k, v: ((q @ W_q.T)[:, None, :] + (k @ W_k.T + b_k)[None]) @ v, "left out the tanh"),
    (lambda q, k, W_q, W_k, b_k, v: torch.tanh((q @ W_k.T)[:, None, :] + (k @ W_q.T + b_k)[None]) @ v,
     "which matrix multiplies"),
    (lambda q, k, W_q, W_k, b_k, v: reference_additive(q, k, W_q, W_k, b_k, v).T, "one score per"),
])
def test_additive_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_additive_scores(wrong)


def test_temperature():
    check_temperature(0.21)
    with pytest.raises(CheckFailed, match="must be lower"):
        check_temperature(0.5)
    with pytest.raises(CheckFailed, match="higher temperature"):
        check_temperature(0.1)
