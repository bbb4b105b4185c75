"""Every Chapter 3 exercise checker accepts the reference solution and rejects typical wrong answers."""

import math

import numpy as np
import pytest
import torch
from attention_course import causal_mask, padding_mask
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.self_attention import (
    check_decoder_mask,
    check_leak_detector,
    check_masked_softmax,
    check_score_scale,
    check_top_weight,
)


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


# --- Exercise 3.3: the largest weight without the scale ------------------------------------------

def reference_top_weight(d, scaled, n=1000, seed=0, divide_by=None):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, 1, d, generator=g, dtype=torch.float64)
    k = torch.randn(n, 64, d, generator=g, dtype=torch.float64)      # each query its own 64 keys
    scores = (q @ k.transpose(1, 2))[:, 0]                            # (n, 64)
    if scaled:
        scores = scores / (divide_by(d) if divide_by else math.sqrt(d))
    return torch.softmax(scores, -1).max(-1).values.mean().item()


def test_top_weight_accepts_reference(capsys):
    check_top_weight(reference_top_weight)
    check_top_weight(lambda d, s: reference_top_weight(d, s, n=1000, seed=5))
    check_top_weight(lambda d, s: reference_top_weight(d, s, n=3000, seed=9))
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("wrong, message", [
    (lambda d, s: 1 / 64, "mean weight of a row"),
    (lambda d, s: reference_top_weight(d, not s), "swapped"),
    (lambda d, s: reference_top_weight(d, True), "do not sharpen"),
    (lambda d, s: reference_top_weight(d, s, divide_by=lambda d: d), "dividing by d"),
    (lambda d, s: reference_top_weight(d, s, n=3), "at least 1000"),
])
def test_top_weight_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_top_weight(wrong)


# --- Exercise 3.4: a test that finds a leaking causal mask --------------------------------------

def reference_leak_detector(attend, T=6, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, d, generator=g, dtype=torch.float64)
    base = attend(x)
    for j in range(1, T):                                  # change token j, compare every output before it
        y = x.clone()
        y[0, j] = torch.randn(d, generator=g, dtype=torch.float64)
        if not torch.allclose(attend(y)[0, :j], base[0, :j], rtol=0, atol=1e-9):
            return True
    return False


def _last_token_first_output(attend, T=6):
    x = torch.randn(1, T, 8, dtype=torch.float64)
    y = x.clone()
    y[0, -1] += 1.0
    return not torch.allclose(attend(y)[0, 0], attend(x)[0, 0])     # only the first output watched


def _any_change(attend, T=6):
    x = torch.randn(1, T, 8, dtype=torch.float64)
    y = x.clone()
    y[0, 3] += 1.0
    return not torch.allclose(attend(y), attend(x))      # compares the changed position and later ones too


def test_leak_detector_accepts_reference(capsys):
    check_leak_detector(reference_leak_detector)
    check_leak_detector(lambda a: torch.tensor(reference_leak_detector(a)))
    check_leak_detector(lambda a: np.bool_(reference_leak_detector(a)))
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("wrong, message", [
    (lambda a: False, "misses the leak in 'masked after the softmax, rows not renormalised'"),
    (lambda a: True, "says 'the package's causal attention' leaks"),
    (_last_token_first_output, "misses the leak in 'a mask one step too wide"),
    (_any_change, "says 'the package's causal attention' leaks"),
    (lambda a: "yes", "expected True or False"),
])
def test_leak_detector_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_leak_detector(wrong)


def test_every_planted_variant_is_what_it_claims():
    from attention_course.teaching.checks.self_attention import _causal_variants
    truth = {name: leaks for name, (_, leaks) in _causal_variants().items()}
    found = {name: reference_leak_detector(attend) for name, (attend, _) in _causal_variants().items()}
    assert found == truth
    assert sum(truth.values()) >= 4 and sum(not v for v in truth.values()) >= 3
