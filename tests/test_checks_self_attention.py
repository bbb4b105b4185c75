"""Every Chapter 3 exercise checker accepts the reference solution and rejects typical wrong answers."""

import math

import pytest
import torch
from attention_course import causal_mask, padding_mask
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.self_attention import check_decoder_mask, check_masked_softmax, check_score_scale


def test_scale_accepts_reference(capsys):
    check_score_scale(lambda d, sq, sk: 1 / (math.sqrt(d) * sq * sk))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda d, sq, sk: 1 / (d * sq * sk), "divide by d, the variance"),
    (lambda d, sq, sk: 1 / math.sqrt(d), "right only for unit variances"),
    (lambda d, sq, sk: 1 / (math.sqrt(d) * sq**2 * sk**2), "divide by the variances"),
    (lambda d, sq, sk: 1.0, "expected"),
])
def test_scale_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_score_scale(wrong)


def test_decoder_mask_accepts_reference(capsys):
    check_decoder_mask(lambda lengths, T: causal_mask(T) & padding_mask(lengths, T))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda l, T: ~(causal_mask(T) & padding_mask(l, T)), "inverted"),
    (lambda l, T: causal_mask(T).T & padding_mask(l, T), "later positions"),
    (lambda l, T: causal_mask(T).expand(len(l), T, T), "attend to padding"),
    (lambda l, T: padding_mask(l, T).expand(len(l), T, T), "not causal"),
    (lambda l, T: (causal_mask(T) & padding_mask(l, T)).int(), "boolean tensor"),
    (lambda l, T: torch.ones(2, T, T, dtype=torch.bool), r"shape \(batch, T, T\)"),
    (lambda l, T: causal_mask(T) & padding_mask(l.clamp(max=2), T), "row 0 .* query 2, key 2"),
])
def test_decoder_mask_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_decoder_mask(wrong)


def reference_masked_softmax(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), -1).masked_fill(~mask, 0.0)


def test_masked_softmax_accepts_reference(capsys):
    check_masked_softmax(reference_masked_softmax)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), -1), "row 2.* is NaN"),
    (lambda s, m: torch.softmax(s.masked_fill(~m, torch.finfo(s.dtype).min), -1), "uniform weights"),
    (lambda s, m: torch.softmax(s, -1), "exactly 0"),
    (lambda s, m: reference_masked_softmax(2 * s, m), "rows sum to 1 but the weights are wrong"),
    (lambda s, m: torch.exp(s).masked_fill(~m, 0.0), "must sum to 1"),
    (lambda s, m: reference_masked_softmax(s, m)[:, :3], "shape"),
])
def test_masked_softmax_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_masked_softmax(wrong)
