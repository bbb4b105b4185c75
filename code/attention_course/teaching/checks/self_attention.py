"""Self-checks for Chapter 3, self-attention."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ...layers.attention import causal_mask, padding_mask, scaled_dot_product_attention
from ._base import FLOAT32_EPS, CheckFailed, as_float, as_number, as_tensor, call, ok

__all__ = ["check_score_scale", "check_decoder_mask", "check_masked_softmax"]


# Exercise 3.1: the scale that keeps the scores' variance at 1 ---------------------------------

def check_score_scale(fn: Callable[[int, float, float], float]) -> None:
    """``fn(d, sigma_q, sigma_k)`` must return the factor that gives q.k a variance of 1 when q and
    k have d independent zero-mean entries of standard deviations sigma_q and sigma_k."""
    cases = [(64, 1.0, 1.0), (256, 1.0, 1.0), (16, 2.0, 0.5), (100, 3.0, 1.0)]
    rel_tol = 8 * FLOAT32_EPS                   # a few float32 roundings; the wrong scales are off by far more

    def near(a: float, b: float) -> bool:
        return math.isclose(a, b, rel_tol=rel_tol)

    for d, sq, sk in cases:
        got = as_number(call(fn, d, sq, sk), f"the scale for d={d}")
        want = 1.0 / (math.sqrt(d) * sq * sk)
        if near(got, want):
            continue
        if near(got, 1.0 / (d * sq * sk)) or near(got, 1.0 / (d * sq**2 * sk**2)):
            raise CheckFailed(f"for d={d}: you divide by d, the variance; dividing the scores by c divides their "
                              f"variance by c^2, so c must be the standard deviation sqrt(d)")
        if near(got, 1.0 / math.sqrt(d)) and (sq, sk) != (1.0, 1.0):
            raise CheckFailed(f"for d={d}, sigma_q={sq}, sigma_k={sk}: 1/sqrt(d) is right only for unit "
                              f"variances; each product q_i k_i has variance sigma_q^2 sigma_k^2")
        if near(got, 1.0 / (math.sqrt(d) * sq**2 * sk**2)):
            raise CheckFailed(f"for sigma_q={sq}, sigma_k={sk}: you divide by the variances sigma^2; the "
                              f"scale must divide by the standard deviation of q.k")
        raise CheckFailed(f"for d={d}, sigma_q={sq}, sigma_k={sk}: got {got:.9g}, expected {want:.9g}")
    ok("Var(q.k) = d sigma_q^2 sigma_k^2, so the scale is 1 / (sqrt(d) sigma_q sigma_k).")


# Exercise 3.2: a decoder's mask: causal and padding together ----------------------------------

def check_decoder_mask(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``fn(lengths (B,), T) -> (B, T, T)`` boolean, True = may attend: position i of row b may see
    positions t <= i that are real tokens (t < lengths[b])."""
    lengths, T = torch.tensor([5, 3, 1]), 5
    want = causal_mask(T) & padding_mask(lengths, T)                 # (B, T, T)
    got = as_tensor(call(fn, lengths.clone(), T), "the mask")
    if got.dtype != torch.bool:
        raise CheckFailed(f"expected a boolean tensor (True = may attend), got {got.dtype}")
    try:
        got = got.expand(want.shape)
    except RuntimeError:
        raise CheckFailed(f"expected shape (batch, T, T) = {tuple(want.shape)} or broadcastable to it, "
                          f"got {tuple(got.shape)}") from None
    if torch.equal(got, want):
        ok("each position sees itself, the past, and no padding.")
        return
    if torch.equal(got, ~want):
        raise CheckFailed("your mask is inverted: in this package True means 'may attend', as in torch")
    if torch.equal(got, causal_mask(T).expand(want.shape)):
        raise CheckFailed("the mask is causal but lets queries attend to padding keys (t >= lengths[b])")
    if torch.equal(got, padding_mask(lengths, T).expand(want.shape)):
        raise CheckFailed("the mask hides padding but is not causal: position i still sees t > i")
    if torch.equal(got, want.transpose(-2, -1)) or got[0, 0, 1:].any():
        raise CheckFailed("position 0 may look at later positions: that is the future; keep the lower "
                          "triangle (t <= i), not the upper one")
    b, i, t = (got != want).nonzero()[0].tolist()
    raise CheckFailed(f"row {b} (length {int(lengths[b])}), query {i}, key {t}: got {bool(got[b, i, t])}, "
                      f"expected {bool(want[b, i, t])}")


# Exercise 3.3: a softmax that survives a fully masked row --------------------------------------

def check_masked_softmax(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(scores (T_q, T_k), mask (T_q, T_k) bool) -> weights (T_q, T_k)``: softmax over the
    allowed keys of each row, exactly 0 elsewhere, and a row of zeros when nothing is allowed."""
    g = torch.Generator().manual_seed(3)
    scores = 3 * torch.randn(4, 5, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 1], [0, 0, 0, 0, 0], [0, 0, 0, 1, 0]], dtype=torch.bool)
    # The package's attention with identity keys and scale 1 turns `scores` into exactly these weights.
    eye = torch.eye(5, dtype=torch.float64)
    _, want = scaled_dot_product_attention(scores, eye, eye, mask, scale=1.0)
    got = as_float(call(fn, scores.clone(), mask.clone()), "the weights")
    if got.shape != want.shape:
        raise CheckFailed(f"expected weights of shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if torch.isnan(got[2]).any():
        raise CheckFailed("the fully masked row (row 2) is NaN: exp(-inf) / sum of exp(-inf) is 0/0; fill with a "
                          "large finite negative number, or zero the row afterwards")
    if torch.isnan(got).any():
        raise CheckFailed("some weights are NaN")
    if torch.allclose(got[2], torch.full((5,), 0.2, dtype=torch.float64)):
        raise CheckFailed("the fully masked row got uniform weights 1/T_k: it must attend to nothing (all zeros)")
    if got[~mask].abs().max() > 0:
        raise CheckFailed("masked positions must get weight exactly 0, got up to "
                          f"{got[~mask].abs().max().item():.3g}")
    atol = 16 * FLOAT32_EPS                     # weights lie in [0, 1]: a float32 softmax is this close
    if torch.allclose(got, want, rtol=0, atol=atol):
        ok("allowed keys share weight 1, masked keys get 0, and a fully masked row stays zero, not NaN.")
        return
    if torch.allclose(got[[0, 1, 3]].sum(-1), torch.ones(3, dtype=torch.float64), atol=atol):
        row = int((got - want).abs().amax(-1).argmax())
        raise CheckFailed(f"rows sum to 1 but the weights are wrong: got {[round(w, 6) for w in got[row].tolist()]} "
                          f"for row {row}, expected {[round(w, 6) for w in want[row].tolist()]}")
    raise CheckFailed(f"each row with an allowed key must sum to 1; yours sum to {got.sum(-1).tolist()}")
