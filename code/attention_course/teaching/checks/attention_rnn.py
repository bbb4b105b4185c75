"""Self-checks for Chapter 2, attention in the RNN encoder-decoder."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ...layers.scores import AdditiveScore
from ._base import CheckFailed, as_float, as_number, call, ok

__all__ = ["EXERCISE_HS", "EXERCISE_QUERY", "check_context_vector", "check_additive_scores",
           "check_temperature"]

# Exercise 2.1: four encoder states (rows) and one decoder state.
EXERCISE_HS = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 3.0]])
EXERCISE_QUERY = torch.tensor([0.5, -1.0, 1.0])


def check_context_vector(context) -> None:
    """The dot-score context vector of ``EXERCISE_QUERY`` over ``EXERCISE_HS``, shape (3,)."""
    context = as_float(context, "the context vector").flatten()
    hs, query = EXERCISE_HS.double(), EXERCISE_QUERY.double()
    scores = hs @ query
    weights = torch.softmax(scores, 0)
    want = weights @ hs
    if context.shape != want.shape:
        raise CheckFailed(f"the context vector has one entry per feature of hs: expected shape "
                          f"{tuple(want.shape)}, got {tuple(context.shape)}")
    if torch.allclose(context, want, atol=1e-4):
        ok(f"weights {[round(w, 3) for w in weights.tolist()]}, "
           f"context {[round(c, 3) for c in want.tolist()]}.")
        return
    if torch.allclose(context, scores @ hs, atol=1e-4):
        raise CheckFailed("you weighted the rows by the raw scores: apply the softmax first so the weights are "
                          "positive and sum to 1")
    if torch.allclose(context, hs[scores.argmax()], atol=1e-4):
        raise CheckFailed("you picked the single best row (a hard argmax): attention averages all rows with "
                          "softmax weights")
    if torch.allclose(context, hs.mean(0), atol=1e-4):
        raise CheckFailed("that is the plain average of the rows (uniform weights); the scores should decide "
                          "the weights")
    raise CheckFailed(f"got {[round(c, 6) for c in context.tolist()]}, which is not the softmax-weighted "
                      f"average of the rows, {[round(c, 6) for c in want.tolist()]}")


def check_additive_scores(fn: Callable[..., torch.Tensor]) -> None:
    """``fn(query (T, H), keys (S, H), W_q (A, H), W_k (A, H), b_k (A,), v (A,)) -> (T, S)`` additive scores."""
    g = torch.Generator().manual_seed(3)
    H, A, T, S = 4, 5, 2, 6
    score = AdditiveScore(H, A)
    with torch.no_grad():
        for p in score.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    query, keys = torch.randn(T, H, generator=g), torch.randn(S, H, generator=g)
    want = score.double()(query[None].double(), keys[None].double())[0].detach()
    args = (query, keys, score.W_q.weight.detach(), score.W_k.weight.detach(), score.W_k.bias.detach(),
            score.v.weight.detach()[0])
    got = as_float(call(fn, *(a.float().clone() for a in args)), "the scores")
    if got.shape != want.shape:
        raise CheckFailed(f"expected one score per (query, key) pair, shape {tuple(want.shape)}, "
                          f"got {tuple(got.shape)}")
    if torch.allclose(got, want, atol=1e-5):
        ok("your additive scores match the package's AdditiveScore.")
        return
    query, keys, W_q, W_k, b_k, v = (a.double() for a in args)
    no_tanh = (query @ W_q.T)[:, None, :] + (keys @ W_k.T + b_k)[None, :, :]
    if torch.allclose(got, no_tanh @ v, atol=1e-5):
        raise CheckFailed("you left out the tanh: without it the additive score is linear and reduces to "
                          "q-part + k-part, so every query ranks the keys the same way")
    i, j = divmod(int((got - want).abs().argmax()), want.shape[1])
    raise CheckFailed(f"the scores differ from v^T tanh(W_q q + W_k k + b_k), most at query {i}, key {j}: got "
                      f"{got[i, j].item():.6f}, expected {want[i, j].item():.6f}; check which matrix multiplies "
                      f"which vector")


_TEMPERATURE_SCORES = torch.tensor([2.0, 1.0, 0.5, 0.0], dtype=torch.float64)


def _top_weight(tau: float) -> float:
    return torch.softmax(_TEMPERATURE_SCORES / tau, 0)[0].item()


def _largest_temperature(target: float = 0.99) -> float:
    """The exact tau where the top weight falls to ``target`` (it falls as tau grows): bisection."""
    lo, hi = 1e-3, 10.0
    for _ in range(80):
        lo, hi = ((lo + hi) / 2, hi) if _top_weight((lo + hi) / 2) >= target else (lo, (lo + hi) / 2)
    return lo


def check_temperature(tau: float) -> None:
    """The largest temperature (to 2 decimals) at which softmax(s / tau) puts at least 0.99 on the
    largest of the scores s = [2.0, 1.0, 0.5, 0.0].

    Accepted: any tau that rounds to that answer and still gives a top weight >= 0.99, that is
    [0.205, 0.21300...] (0.214 rounds to 0.21 too, but its top weight is below 0.99)."""
    tau = as_number(tau, "the temperature")
    exact = _largest_temperature()                        # 0.21300...
    want = math.floor(exact * 100) / 100                  # the largest on the 0.01 grid
    if not tau > 0:
        raise CheckFailed(f"got tau={tau}: a temperature must be positive")
    top_at = _top_weight(tau)
    if top_at >= 0.99 and abs(tau - want) <= 0.005:
        ok(f"tau = {want:.2f}: below it the softmax is within 1% of a hard argmax.")
        return
    if top_at < 0.99:
        raise CheckFailed(f"at tau={tau:g} the top weight is only {top_at:.6f} < 0.99: the temperature must be "
                          f"lower")
    raise CheckFailed(f"at tau={tau:g} the top weight is {top_at:.6f} >= 0.99, but a higher temperature "
                      f"still reaches 0.99")
