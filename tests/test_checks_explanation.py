"""Chapter 6's exercise checkers accept the reference solutions and reject typical wrong answers."""

import math

import pytest
import torch
from attention_course.analysis.adversarial import js_divergence
from attention_course.analysis.importance import precision_at_k
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.explanation import (
    check_js_divergence,
    check_one_token_adversary,
    check_precision_at_k,
)


def reference_jsd(p, q):
    m = (p + q) / 2
    return 0.5 * (torch.xlogy(p, p) - torch.xlogy(p, m)).sum(-1) + 0.5 * (torch.xlogy(q, q) - torch.xlogy(q, m)).sum(-1)


def test_jsd_accepts_reference(capsys):
    check_js_divergence(reference_jsd)
    check_js_divergence(js_divergence)
    assert "Correct" in capsys.readouterr().out


def _naive_log(p, q):
    m = (p + q) / 2
    return 0.5 * (p * (p / m).log()).sum(-1) + 0.5 * (q * (q / m).log()).sum(-1)


@pytest.mark.parametrize("wrong, message", [
    (lambda p, q: reference_jsd(p, q) / math.log(2), "bits"),
    (lambda p, q: (torch.xlogy(p, p) - torch.xlogy(p, q)).sum(-1), "KL"),
    (_naive_log, "NaN"),
    (lambda p, q: reference_jsd(p, q)[:-1], "one divergence per row"),
    (lambda p, q: reference_jsd(p, q) + p[:, 0] * 0.01, "symmetric"),
    (lambda p, q: reference_jsd(p, q) + 0.01, "expected"),
])
def test_jsd_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_js_divergence(wrong)


def reference_precision(scores, evidence, lengths, fixed_k=None):
    out = []
    for s, e, L in zip(scores, evidence, lengths):
        k = fixed_k or int(e[:L].sum())
        top = torch.argsort(s[:L], descending=True, stable=True)[:k]
        out.append(float(e[top].sum()) / k)
    return torch.tensor(out, dtype=scores.dtype)


def test_precision_accepts_reference(capsys):
    check_precision_at_k(reference_precision)
    check_precision_at_k(precision_at_k)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda s, e, l: precision_at_k(s, e, torch.full_like(l, s.shape[1])), "padding"),
    (lambda s, e, l: torch.ones(2), "one precision per review"),
    (lambda s, e, l: reference_precision(-s, e, l), "expected"),
])
def test_precision_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_precision_at_k(wrong)


def reference_one_token(s, bias, a, epsilon):
    base = torch.sigmoid((a * s).sum() + bias)
    best, best_jsd = None, -1.0
    for i in range(len(a)):
        if abs(float(torch.sigmoid(s[i] + bias) - base)) <= epsilon:
            jsd = float(js_divergence(torch.eye(len(a), dtype=a.dtype)[i], a))
            if jsd > best_jsd:
                best, best_jsd = i, jsd
    return best


def test_one_token_accepts_reference(capsys):
    check_one_token_adversary(reference_one_token)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda s, b, a, eps: int(a.argmin()), "moves P\\(positive\\)"),
    (lambda s, b, a, eps: int(a.argmax()), "another feasible token is farther"),
    (lambda s, b, a, eps: None, "expected a token index"),
])
def test_one_token_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_one_token_adversary(wrong)
