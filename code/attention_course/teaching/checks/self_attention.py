"""Self-checks for Chapter 3, self-attention."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import torch

from ...layers.attention import causal_mask, padding_mask, scaled_dot_product_attention
from ._base import FLOAT32_EPS, CheckFailed, as_float, as_number, as_tensor, call, ok

__all__ = ["check_score_scale", "check_decoder_mask", "check_masked_softmax", "check_top_weight",
           "check_leak_detector"]


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


# Exercise 3.3: predict, then measure, the largest weight without the scale ----------------------

TOP_WEIGHT_KEYS = 64          # keys per query in the exercise


TOP_WEIGHT_DIMS = (4, 32, 256)


@functools.cache
def _reference_top_weight(d: int, scaled: bool, chunks: int = 4, seed: int = 12345) -> float:
    """The mean largest weight over ``chunks`` x 1000 queries, each with its own 64 keys."""
    g = torch.Generator().manual_seed(seed + d)
    tops = []
    for _ in range(chunks):
        q = torch.randn(1000, 1, d, generator=g, dtype=torch.float64)
        k = torch.randn(1000, TOP_WEIGHT_KEYS, d, generator=g, dtype=torch.float64)  # each query its own keys
        _, w = scaled_dot_product_attention(q, k, k, scale=None if scaled else 1.0)    # (1000, 1, keys)
        tops.append(w.amax(-1))
    return torch.cat(tops).mean().item()


def check_top_weight(fn: Callable[[int, bool], float]) -> None:
    """``fn(d, scaled)`` must return the mean, over at least 1000 random queries (each with its own 64
    random keys), of the largest of a query's 64 attention weights, for q and k with d independent
    N(0, 1) entries; scores divided by sqrt(d) when ``scaled`` is True, not divided when it is False."""
    tol = 0.03                 # Monte Carlo error of a 1000-query mean is below 0.01; wrong answers are far off
    got, want = {}, {}
    small, big = TOP_WEIGHT_DIMS[0], TOP_WEIGHT_DIMS[-1]
    for d in TOP_WEIGHT_DIMS:
        for scaled in (False, True):
            got[d, scaled] = as_number(call(fn, d, scaled), f"the top weight for d={d}, scaled={scaled}")
            want[d, scaled] = _reference_top_weight(d, scaled)
    if all(abs(got[c] - want[c]) < tol for c in want):
        ok(f"unscaled, the largest weight grows from {want[small, False]:.2f} (d={small}) to {want[big, False]:.2f} "
           f"(d={big}): one key takes most of the weight; scaled, it stays near {want[big, True]:.2f} for every d.")
        return
    uniform = 1.0 / TOP_WEIGHT_KEYS
    if all(abs(v - uniform) < 1e-3 for v in got.values()):
        raise CheckFailed(f"every value is 1/{TOP_WEIGHT_KEYS}: that is the mean weight of a row (the weights sum to "
                          f"1); the question is about the largest weight of each row (max over the keys)")
    if all(abs(got[d, s] - want[d, not s]) < tol for d, s in want):
        raise CheckFailed("your scaled and unscaled values are swapped: scaled=True must divide the scores by sqrt(d)")
    if all(abs(got[d, False] - want[d, True]) < tol for d in TOP_WEIGHT_DIMS):
        raise CheckFailed(f"your unscaled weights do not sharpen with d (d={big}: got {got[big, False]:.3f}, "
                          f"expected about {want[big, False]:.3f}): scaled=False must not divide the scores")
    if got[big, True] < want[big, True] - tol and got[big, True] < got[small, True]:
        raise CheckFailed(f"your scaled weights flatten as d grows (d={big}: {got[big, True]:.3f}): dividing by d "
                          f"instead of sqrt(d) shrinks the scores' variance to 1/d")
    d, s = next(c for c in want if abs(got[c] - want[c]) >= tol)
    raise CheckFailed(f"for d={d}, scaled={s}: got {got[d, s]:.4f}, expected about {want[d, s]:.4f} (within {tol}); "
                      f"average the largest weight of each row over at least 1000 random queries")


# Exercise 3.4: a test that finds a leaking causal mask ------------------------------------------

def _strictly_past(T: int) -> torch.Tensor:
    """Keys t < i only (query 0 keeps key 0, so that no row is empty)."""
    mask = causal_mask(T).tril(-1)
    mask[0, 0] = True
    return mask


def _causal_variants() -> dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], bool]]:
    """Causal self-attentions over x (1, T, 8), float64, each with whether it lets the future leak."""
    g = torch.Generator().manual_seed(7)
    W_Q, W_K, W_V = (torch.randn(8, 8, generator=g, dtype=torch.float64) / math.sqrt(8) for _ in range(3))

    def attend(mask_of: Callable[[int], torch.Tensor], after: bool = False, additive: bool = False,
               renormalise: bool = False):
        def fn(x: torch.Tensor) -> torch.Tensor:
            x = torch.as_tensor(x, dtype=torch.float64)
            T = x.shape[-2]
            q, k, v = x @ W_Q, x @ W_K, x @ W_V
            scores = q @ k.transpose(-2, -1) / math.sqrt(8)
            mask = mask_of(T)
            if additive:                                   # adds 0/1 instead of hiding: the future still counts
                w = torch.softmax(scores + mask.double(), dim=-1)
            elif after:                                    # zeroed after the softmax: the normaliser saw the future
                w = torch.softmax(scores, dim=-1) * mask
                if renormalise:                            # ... unless the rows are renormalised, which removes it
                    w = w / w.sum(-1, keepdim=True)
            else:
                w = scaled_dot_product_attention(q, k, v, mask)[1]
            return w @ v
        return fn

    return {
        "the package's causal attention": (attend(causal_mask), False),
        "masked after the softmax, rows renormalised": (attend(causal_mask, after=True, renormalise=True), False),
        "a mask that also hides the current token": (attend(_strictly_past), False),
        "masked after the softmax, rows not renormalised": (attend(causal_mask, after=True), True),
        "no mask at all": (attend(lambda T: torch.ones(T, T, dtype=torch.bool)), True),
        "the upper triangle instead of the lower": (attend(lambda T: causal_mask(T).T), True),
        "a mask one step too wide (t <= i + 1)": (attend(lambda T: torch.ones(T, T, dtype=torch.bool).tril(1)), True),
        "a 0/1 mask added to the scores": (attend(causal_mask, additive=True), True),
    }


def check_leak_detector(fn: Callable[[Callable[[torch.Tensor], torch.Tensor]], bool]) -> None:
    """``fn(attend)`` must return True exactly when the causal self-attention ``attend`` (a function of
    x (1, T, 8) float64 returning (1, T, 8)) lets some output at position i depend on a token after i."""
    for name, (attend, leaks) in _causal_variants().items():
        answer = call(fn, attend)
        if isinstance(answer, torch.Tensor) and answer.numel() == 1:
            answer = answer.item()
        if not isinstance(answer, (bool, np.bool_)):
            raise CheckFailed(f"expected True or False, got {type(answer).__name__} {answer!r}")
        if bool(answer) != leaks:
            if leaks:
                raise CheckFailed(f"your test misses the leak in '{name}': change each later token in turn (not "
                                  f"only the last one) and compare every earlier output")
            raise CheckFailed(f"your test says '{name}' leaks, but no output depends on a later token there: compare "
                              f"outputs *before* the changed token only, and with a tolerance, not exact equality "
                              f"after arithmetic that differs")
    ok("your test tells every leaking mask from every causal one, including the one that leaks one step ahead.")
