"""Self-checks for Chapter 8, beyond: convolution as attention, sets, forecasting."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...models.conv_attention import grid_positions, quadratic_scores
from ...tasks.series import seasonal_naive
from ._base import FLOAT32_EPS, CheckFailed, as_float, call, ok

__all__ = ["check_offset_scores", "check_attention_pool", "check_attention_max", "check_horizon_queries",
           "check_seasonal_naive"]


# Exercise 8.1: one head's positional scores, peaked at a kernel offset ----------------------------

def check_offset_scores(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float], torch.Tensor]) -> None:
    """``fn(query_positions (N_q, D), key_positions (N_k, D), offset (D,), alpha) -> scores (N_q, N_k)``:
    one head's scores, whose softmax over the keys must equal that of -alpha ||key - query - offset||^2
    (a constant per query is allowed: the softmax ignores it)."""
    queries = grid_positions((3, 3))                         # a 3 x 3 image
    keys = grid_positions((5, 5), start=-1)                  # the same image padded by one pixel
    offset = torch.tensor([1, -1])
    # Scores up to ~40 in float32 are off by ~1e-5 after rounding: the softmax weights by about as much.
    atol = 1e-5
    for alpha in (0.7, 3.0):
        want = torch.softmax(quadratic_scores(queries, keys, offset[None], alpha)[0], -1)
        got = as_float(call(fn, queries.clone(), keys.clone(), offset.clone(), alpha), "the scores")
        if got.shape != want.shape:
            raise CheckFailed(f"expected scores of shape (N_q, N_k) = {tuple(want.shape)}, got {tuple(got.shape)}")
        got = torch.softmax(got, -1)
        if torch.allclose(got, want, rtol=0, atol=atol):
            continue
        mirrored = torch.softmax(quadratic_scores(queries, keys, -offset[None], alpha)[0], -1)
        if torch.allclose(got, mirrored, rtol=0, atol=atol):
            raise CheckFailed("your head looks at query - offset instead of query + offset: the relative position "
                              "is delta = key - query, and the score peaks where delta equals the offset")
        if torch.allclose(got, torch.softmax(-torch.log(want), -1), rtol=0, atol=atol):
            raise CheckFailed("your scores grow with the distance from the offset: the parabola must open "
                              "downwards, -alpha ||delta - offset||^2")
        first = torch.softmax(quadratic_scores(queries, keys, offset[None], 0.7)[0], -1)
        if alpha != 0.7 and torch.allclose(got, first, rtol=0, atol=atol):
            raise CheckFailed("your scores do not change with alpha: alpha multiplies the whole score and sets "
                              "how sharp the head is")
        i = 4                                                 # the centre pixel (1, 1)
        raise CheckFailed(f"for alpha={alpha}, query {queries[i].tolist()}: your head's largest weight is on key "
                          f"{keys[got[i].argmax()].tolist()}, expected key {keys[want[i].argmax()].tolist()} with "
                          f"weight {want[i].max().item():.4f} (yours {got[i].max().item():.4f})")
    ok("the head's weights peak at key = query + offset and sharpen as alpha grows.")


# Exercise: pooling a padded batch of sets by attention from learned seeds (PMA, one head) --------

def _pool(Z: torch.Tensor, S: torch.Tensor, lengths: torch.Tensor | None, scaled: bool = True,
          dim: int = -1, fill: float = float("-inf")) -> torch.Tensor:
    scores = torch.einsum("kd,bnd->bkn", S, Z) / (Z.shape[-1] ** 0.5 if scaled else 1.0)     # (B, k, n)
    if lengths is not None:
        real = torch.arange(Z.shape[1])[None, None, :] < lengths[:, None, None]            # (B, 1, n)
        scores = scores.masked_fill(~real, fill)
    return torch.softmax(scores, dim) @ Z


def check_attention_pool(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(Z (B, n, d), S (k, d), lengths (B,)) -> (B, k, d)``: set b is the first ``lengths[b]`` rows of
    ``Z[b]``, the rest is padding. Each seed vector of S is a query over the elements of each set; the
    result is softmax(S Z^T / sqrt(d)) Z with the padding's weights exactly 0, one row per seed: the
    same as pooling each set alone, whatever the padding holds."""
    g = torch.Generator().manual_seed(11)
    S = torch.randn(2, 4, generator=g, dtype=torch.float64)
    rtol = 64 * FLOAT32_EPS
    lengths = torch.tensor([5, 2, 4])
    for n in (5, 7):
        Z = 2 * torch.randn(3, n, 4, generator=g, dtype=torch.float64)
        Z[1, 2:] = 5.0                                             # padding that would draw the weights to it
        want = _pool(Z, S, lengths)
        got = as_float(call(fn, Z.clone(), S.clone(), lengths.clone()), "the pooled sets")
        if got.shape != want.shape:
            shape = tuple(got.shape)
            hint = ""
            if shape == (3, 2, n):
                hint = " (those are the weights: multiply them by Z)"
            elif shape == (3, n, 4):
                hint = " (one row per element: the seeds, not the elements, must be the queries)"
            raise CheckFailed(f"for sets padded to {n} elements expected shape (B, k, d) = {tuple(want.shape)}, "
                              f"got {shape}{hint}")
        if torch.allclose(got, want, rtol=rtol, atol=rtol):
            continue
        if torch.allclose(got, _pool(Z, S, None), rtol=rtol, atol=rtol):
            raise CheckFailed("the padding gets weight in your pooling: give the scores of the rows at or after "
                              "lengths[b] the value -inf before the softmax, so that their weights are exactly 0")
        if torch.allclose(got, _pool(Z, S, lengths, scaled=False), rtol=rtol, atol=rtol):
            raise CheckFailed("the scores must be divided by sqrt(d), the width of a vector, before the softmax")
        if got.isnan().any():
            raise CheckFailed("your result holds NaN: a softmax over scores that are all -inf; the softmax must run "
                              "over the elements of each set, the last axis of the (B, k, n) scores")
        if any(torch.allclose(got, _pool(Z, S, n_, dim=1, fill=-1e9), rtol=rtol, atol=rtol) for n_ in (lengths, None)):
            raise CheckFailed("your softmax runs over the seeds; it must run over the elements of each set")
        weights = torch.softmax(torch.einsum("kd,bnd->bkn", S, Z) / 2.0, -1)
        real = (torch.arange(n)[None, None, :] < lengths[:, None, None]).double()
        if torch.allclose(got, (weights * real) @ Z, rtol=rtol, atol=rtol):
            raise CheckFailed("you zero the padding's weights after the softmax, so the real elements' weights no "
                              "longer sum to one: mask the scores before the softmax instead")
        b = int(((got - want).abs().amax((1, 2)) > rtol).nonzero()[0])
        raise CheckFailed(f"set {b} (length {int(lengths[b])}, padded to {n}), first seed: got "
                          f"{[round(v, 4) for v in got[b, 0].tolist()]}, expected "
                          f"{[round(v, 4) for v in want[b, 0].tolist()]}")
    junk = Z.clone()
    junk[0, 5:] = -3.0
    junk[2, 4:] = 7.0
    again = as_float(call(fn, junk, S.clone(), lengths.clone()), "the pooled sets")
    if not torch.allclose(again, want, rtol=rtol, atol=rtol):
        raise CheckFailed("changing what the padding holds changes your result: the padding must get weight 0")
    perm = torch.cat([torch.randperm(4, generator=g), torch.arange(4, 7)])   # reorder set 2's real elements
    shuffled = Z.clone()
    shuffled[2] = Z[2, perm]
    again = as_float(call(fn, shuffled, S.clone(), lengths.clone()), "the pooled sets")
    if not torch.allclose(again, want, rtol=rtol, atol=rtol):
        raise CheckFailed("listing the elements of a set in another order changes your result: pooling must be "
                          "permutation-invariant")
    ok("one output row per seed, the padding gets no weight whatever it holds, the real elements' weights are a "
       "softmax over them, and reordering a set changes nothing.")


# Exercise 8.2: attention pooling that approaches the max --------------------------------------

def check_attention_max(fn: Callable[[torch.Tensor, float], torch.Tensor]) -> None:
    """``fn(x (B, n), alpha) -> (B,)``: the softmax(alpha x)-weighted average of each set's elements."""
    g = torch.Generator().manual_seed(7)
    x = 10 * torch.rand(4, 6, generator=g, dtype=torch.float64)
    rtol = 16 * FLOAT32_EPS                    # values up to 10, summed over 6 elements in float32

    def near(a, b) -> bool:
        return a.shape == b.shape and torch.allclose(a, b, rtol=rtol, atol=rtol)

    for alpha in (0.5, 2.0):
        want = (torch.softmax(alpha * x, -1) * x).sum(-1)
        got = as_float(call(fn, x.clone(), alpha), "the pooled values")
        if got.shape != want.shape:
            shape = tuple(got.shape)
            hint = " (the weights alone? multiply them by x and sum over the set)" if shape == tuple(x.shape) else ""
            raise CheckFailed(f"expected one number per set, shape {tuple(want.shape)}, got {shape}{hint}")
        if near(got, want):
            continue
        if torch.allclose(got, x.amax(-1)):
            raise CheckFailed("that is the hard max; the exercise asks for the soft, differentiable version: "
                              "softmax(alpha x) weights, which approach the max as alpha grows")
        if near(got, (torch.softmax(alpha * x, 0) * x).sum(-1)):
            raise CheckFailed("your softmax runs over the batch (dim 0); it must run over the elements of each "
                              "set (dim -1)")
        if near(got, (torch.softmax(x, -1) * x).sum(-1)):
            raise CheckFailed(f"your result does not depend on alpha (tried alpha={alpha}): the scores are alpha * x")
        if near(got, x.mean(-1)):
            raise CheckFailed("that is the mean (alpha = 0); the scores must be alpha * x")
        raise CheckFailed(f"for alpha={alpha} and the set {[round(v, 3) for v in x[0].tolist()]}: got "
                          f"{got[0].item():.6f}, expected {want[0].item():.6f}")
    perm = torch.randperm(6, generator=g)
    shuffled = as_float(call(fn, x[:, perm].clone(), 2.0), "the pooled values")
    if not near(shuffled, (torch.softmax(2 * x, -1) * x).sum(-1)):
        raise CheckFailed("reordering the elements of a set changes your result: a pooling must not depend on order")
    ok("your pooling is the softmax-weighted mean for every alpha tried and ignores the order of the set.")


# Exercise: the forecaster's horizon queries ----------------------------------------------------

def _horizon(horizon_query, event_vector, future_events, memory, with_events=True, scaled=True, dim=-1):
    queries = horizon_query + (future_events[..., None] * event_vector if with_events else 0)   # (B, H, d)
    scores = queries @ memory.transpose(1, 2) / (memory.shape[-1] ** 0.5 if scaled else 1.0)   # (B, H, L)
    weights = torch.softmax(scores, dim)
    return weights @ memory, weights


def check_horizon_queries(fn: Callable[..., tuple]) -> None:
    """``fn(horizon_query (n_f, d), event_vector (d,), future_events (B, n_f), memory (B, L, d))`` returns
    ``(context (B, n_f, d), weights (B, n_f, L))``: horizon h's query is ``horizon_query[h]`` plus
    ``event_vector`` where an event is scheduled at t + h; one head of scaled dot-product attention over
    the encoded history ``memory`` (keys and values alike)."""
    g = torch.Generator().manual_seed(5)
    Hh, d, B, L = 4, 6, 3, 7
    hq = torch.randn(Hh, d, generator=g, dtype=torch.float64)
    u = 2 * torch.randn(d, generator=g, dtype=torch.float64)
    ev = torch.zeros(B, Hh, dtype=torch.float64)
    ev[0, 1] = ev[2, 3] = ev[1, 0] = 1.0
    mem = torch.randn(B, L, d, generator=g, dtype=torch.float64)
    rtol = 64 * FLOAT32_EPS
    answer = call(fn, hq.clone(), u.clone(), ev.clone(), mem.clone())
    if not isinstance(answer, (tuple, list)) or len(answer) != 2:
        raise CheckFailed("return two things, (context, weights), as the package's attention does")
    context, weights = as_float(answer[0], "the context"), as_float(answer[1], "the weights")
    want_c, want_w = _horizon(hq, u, ev, mem)
    for got, want, name, dims in ((context, want_c, "context", "(B, n_f, d)"),
                                  (weights, want_w, "weights", "(B, n_f, L)")):
        if got.shape != want.shape:
            raise CheckFailed(f"expected the {name} of shape {dims} = {tuple(want.shape)}, got {tuple(got.shape)}")

    def near(a, b):
        return torch.allclose(a, b, rtol=rtol, atol=rtol)

    if near(weights, want_w) and near(context, want_c):
        ok("each horizon's query is its own vector plus the event vector where an event is scheduled, and it "
           "reads the history with a softmax over the past steps.")
        return
    if near(weights, _horizon(hq, u, ev, mem, with_events=False)[1]):
        raise CheckFailed("your weights ignore the scheduled events: add event_vector to the query of every "
                          "horizon whose flag is 1")
    if near(weights, _horizon(hq, u, ev, mem, scaled=False)[1]):
        raise CheckFailed("divide the scores by sqrt(d) before the softmax")
    if near(weights, _horizon(hq, u, ev, mem, dim=1)[1]):
        raise CheckFailed("your softmax runs over the horizons; each horizon's weights must sum to one over the "
                          "past steps")
    if near(weights, want_w):
        raise CheckFailed("the weights are right but the context is not: it is the weights times the memory")
    wrong = ((weights - want_w).abs().amax(-1) > rtol).nonzero()
    b, h = (int(i) for i in wrong[0]) if len(wrong) else (0, 0)
    raise CheckFailed(f"series {b}, horizon index {h}: got weights {[round(v, 4) for v in weights[b, h].tolist()]}, "
                      f"expected {[round(v, 4) for v in want_w[b, h].tolist()]}")


# Exercise 8.3: seasonal naive beyond one period -----------------------------------------------

def check_seasonal_naive(fn: Callable[[torch.Tensor, int, int], torch.Tensor]) -> None:
    """``fn(history (B, L), period, horizon) -> (B, horizon)``: step t + h repeats y_{t + h - kP}, with the
    smallest k >= 1 that lands in the history, even when the horizon is longer than one period."""
    history = torch.arange(2 * 10, dtype=torch.float64).reshape(2, 10) * torch.tensor([[1.0], [10.0]])
    period, horizon = 4, 9
    want = seasonal_naive(history, period, horizon)
    try:
        got = call(fn, history.clone(), period, horizon)
    except CheckFailed as failure:
        if "raised IndexError" not in str(failure):
            raise
        raise CheckFailed(f"indexing failed: for h > period, y_(t+h-period) is still in the future; go back "
                          f"ceil(h / period) whole periods. {failure}") from None
    got = as_float(got, "the forecast")
    if got.shape != want.shape:
        raise CheckFailed(f"expected shape (batch, horizon) = {tuple(want.shape)}, got {tuple(got.shape)}")
    if torch.equal(got, want):
        ok("each future step repeats the last observed value of the same season.")
        return
    if torch.equal(got, history[:, -1:].expand_as(want)):
        raise CheckFailed("every horizon repeats the last value: that is the naive forecast, not the seasonal one")
    h = int((got != want).any(0).nonzero()[0]) + 1                  # the first wrong horizon
    if h > period:
        raise CheckFailed(f"horizons 1..{period} are right, horizon h = {h} is not: for h > period go back "
                          f"k = ceil(h / period) whole periods (got {got[0, h - 1].item():g}, expected "
                          f"{want[0, h - 1].item():g} for the history 0, 1, ..., 9)")
    one_step = history[0, 1] - history[0, 0]
    if torch.equal(got[:, :period] - want[:, :period], one_step * torch.tensor([[1.0], [10.0]]).expand(2, period)) or \
            torch.equal(want[:, :period] - got[:, :period], one_step * torch.tensor([[1.0], [10.0]]).expand(2, period)):
        raise CheckFailed("off by one: horizon h = 1 (the first forecast) repeats y at position L - period, "
                          "the step one period before t + 1")
    raise CheckFailed(f"horizon h = {h}: got {got[0, h - 1].item():g}, expected {want[0, h - 1].item():g} "
                      f"(history 0, 1, ..., 9; period {period})")
