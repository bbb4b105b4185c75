"""Self-checks for Chapter 3, self-attention."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import torch

from ...layers.attention import causal_mask, padding_mask, scaled_dot_product_attention
from ...layers.self_attention import SelfAttention
from ._base import FLOAT32_EPS, CheckFailed, as_float, as_number, as_tensor, call, ok

__all__ = ["check_score_scale", "check_decoder_mask", "check_masked_softmax", "check_top_weight",
           "check_leak_detector", "check_doubling", "longest_chain", "check_sharp_lookup", "check_next_entry",
           "LOOKUP_NEXT", "LOOKUP_KEYS", "LOOKUP_VALUES", "LOOKUP_QUERIES", "LOOKUP_SCALE", "check_row_bug_case",
           "ROW_LOOP_BUGS",
           "check_query_shapes", "SHAPES_SETTING", "SHAPE_KINDS", "check_order_blind", "ORDER_STEPS", "ORDER_SWAP"]


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
    ok("your scale gives q.k unit variance for every d, sigma_q and sigma_k tried.")


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
        ok("the allowed keys share all the weight, masked keys get exactly zero, and a fully masked row stays zero, "
           "not NaN.")
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
        ok("your measurements agree with the reference, within the error of a mean over random queries, for every "
           "d, scaled and unscaled.")
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


# Exercise 3.5: predict what doubling T costs ------------------------------------------------------

DOUBLING_T = 64               # the check doubles T from 64 to 128


def longest_chain(output: torch.Tensor) -> int:
    """The number of operations on the longest chain of autograd's graph that ends in ``output``: how
    many operations must run one after another to compute it (leaves, the inputs and weights, count 1)."""
    if not isinstance(output, torch.Tensor) or output.grad_fn is None:
        raise ValueError("longest_chain needs a tensor computed from inputs that require grad (it has no grad_fn)")
    depth: dict = {}
    stack = [(output.grad_fn, False)]
    while stack:                               # iterative depth-first search: a GRU's graph is thousands deep
        node, expanded = stack.pop()
        if node in depth:
            continue
        children = [n for n, _ in node.next_functions if n is not None]
        if expanded:
            depth[node] = 1 + max((depth[c] for c in children), default=0)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if c not in depth)
    return depth[output.grad_fn]


@functools.cache
def _doubling_measurements(T: int = DOUBLING_T) -> dict[str, tuple[int, int]]:
    """(value at T, value at 2T): bytes of self-attention's weights, and the longest chain of operations
    from the inputs to the outputs of a GRU and of a self-attention layer (width 16, float64)."""
    found: dict[str, list[int]] = {"weights_memory": [], "gru_chain": [], "attention_chain": []}
    with torch.random.fork_rng():                          # leaves the caller's random state alone
        torch.manual_seed(0)
        gru = torch.nn.GRU(16, 16, batch_first=True).double()
        attention = SelfAttention(16).double()
        for length in (T, 2 * T):
            x = torch.randn(1, length, 16, dtype=torch.float64, requires_grad=True)
            out, weights = attention(x)
            found["weights_memory"].append(weights.element_size() * weights.nelement())
            found["attention_chain"].append(longest_chain(out))
            found["gru_chain"].append(longest_chain(gru(x)[0]))
    return {k: (v[0], v[1]) for k, v in found.items()}


def check_doubling(weights_memory: float, gru_chain: float, attention_chain: float) -> None:
    """Predictions of the factors by which three costs grow when the sequence length T doubles: the memory
    of self-attention's weights, and the longest chain of operations (the sequential steps) of a GRU
    layer and of a self-attention layer. Compared with the package's layers, measured at T = 64 and 128."""
    measured = {k: b / a for k, (a, b) in _doubling_measurements().items()}
    chains = _doubling_measurements()
    T = DOUBLING_T
    got = {"weights_memory": as_number(weights_memory, "the factor for the weights' memory"),
           "gru_chain": as_number(gru_chain, "the factor for the GRU's chain"),
           "attention_chain": as_number(attention_chain, "the factor for self-attention's chain")}
    m = measured["weights_memory"]
    if abs(got["weights_memory"] - m) > 0.05:
        if abs(got["weights_memory"] - 2) < 0.05:
            raise CheckFailed(f"the weights' memory grows by {m:.1f}, not 2: they form a T x T matrix per sequence, "
                              f"and doubling T doubles both its rows and its columns")
        raise CheckFailed(f"the weights' memory grows by {m:.1f} (measured: {chains['weights_memory'][0]:,} bytes at "
                          f"T = {T}, {chains['weights_memory'][1]:,} at T = {2 * T}), got {got['weights_memory']:g}: "
                          f"the weights are (B, T, T), B T^2 numbers")
    g = measured["gru_chain"]
    if abs(got["gru_chain"] - g) > 0.15:
        if got["gru_chain"] < 1.5:
            raise CheckFailed(f"the GRU's chain does grow: h_t needs h_(t-1), so every token adds steps that must "
                              f"wait for the one before (measured: {chains['gru_chain'][0]} operations in a row at "
                              f"T = {T}, {chains['gru_chain'][1]} at T = {2 * T})")
        raise CheckFailed(f"the GRU's chain grows by {g:.2f}, got {got['gru_chain']:g}: each step costs the same "
                          f"fixed number of operations, so the chain is linear in T, not quadratic")
    a = measured["attention_chain"]
    if abs(got["attention_chain"] - a) > 0.05:
        raise CheckFailed(f"self-attention's chain does not grow (measured: {chains['attention_chain'][0]} operations "
                          f"in a row at T = {T} and {chains['attention_chain'][1]} at T = {2 * T}): every position is "
                          f"computed by the same few matrix products; doubling T makes each product larger, not the "
                          f"chain longer")
    ok("all three factors match the costs measured on the package's layers.")


# Exercise 3.6: predict a sharp soft lookup ---------------------------------------------------------

LOOKUP_KEYS = {"cat": (1.0, 0.0, 0.0), "dog": (0.0, 1.0, 0.0), "bird": (0.0, 0.0, 1.0), "fish": (0.0, 2.0, 2.0)}
LOOKUP_VALUES = {"cat": 2.0, "dog": 5.0, "bird": 11.0, "fish": 7.0}
LOOKUP_QUERIES = ((3.0, 0.0, 0.0), (0.0, 1.0, -1.0), (0.0, 1.0, 0.0), (1.0, 1.0, -1.0), (0.0, 0.0, 0.0))
LOOKUP_SCALE = 20.0           # a sharp lookup: a score gap of 1 leaves the loser a weight of e^-20


def _sharp_lookup() -> tuple[torch.Tensor, torch.Tensor]:
    """The package's attention for LOOKUP_QUERIES at scale LOOKUP_SCALE: (outputs (5,), scores (5, 4))."""
    K = torch.tensor(list(LOOKUP_KEYS.values()), dtype=torch.float64)
    V = torch.tensor([[v] for v in LOOKUP_VALUES.values()], dtype=torch.float64)
    Q = torch.tensor(LOOKUP_QUERIES, dtype=torch.float64)
    out, _ = scaled_dot_product_attention(Q, K, V, scale=LOOKUP_SCALE)
    return out[:, 0], Q @ K.T


def check_sharp_lookup(predictions) -> None:
    """``predictions``: the output of the package's attention, with scale ``LOOKUP_SCALE``, for each of the
    five ``LOOKUP_QUERIES`` over the keys ``LOOKUP_KEYS`` and the values ``LOOKUP_VALUES``."""
    got = as_float(predictions, "your five predictions").reshape(-1)
    if got.numel() != len(LOOKUP_QUERIES):
        raise CheckFailed(f"expected {len(LOOKUP_QUERIES)} predictions, one per query, got {got.numel()}")
    want, scores = _sharp_lookup()
    names, values = list(LOOKUP_KEYS), list(LOOKUP_VALUES.values())
    for i, (g, w) in enumerate(zip(got.tolist(), want.tolist())):
        if abs(g - w) <= 0.05:
            continue
        row = scores[i].tolist()
        said = ", ".join(f"{n} {s:g}" for n, s in zip(names, row))
        if tuple(LOOKUP_QUERIES[i]) in LOOKUP_KEYS.values() and abs(g - values[row.index(1.0)]) <= 0.05:
            raise CheckFailed(f"query {i + 1} {LOOKUP_QUERIES[i]} is exactly the key of "
                              f"'{names[row.index(1.0)]}', but the score is a dot product (scores: {said}): a longer "
                              f"key pointing partly the same way scores higher, and it takes the weight")
        top = [n for n, s in zip(names, row) if s == max(row)]
        if len(top) == len(names):
            raise CheckFailed(f"query {i + 1} {LOOKUP_QUERIES[i]} scores every key the same ({said}): the weights are "
                              f"uniform, whatever the scale, and the output is the mean of all the values. A soft "
                              f"lookup has an answer even for a query that matches nothing")
        if len(top) > 1:
            raise CheckFailed(f"query {i + 1} {LOOKUP_QUERIES[i]} scores {' and '.join(top)} equally ({said}): "
                              f"the weight is shared between them evenly, so the output is the mean of their values")
        raise CheckFailed(f"query {i + 1} {LOOKUP_QUERIES[i]}: got {g:g}, the package gives {w:.3f} (scores: {said}); "
                          f"at scale {LOOKUP_SCALE:g} nearly all the weight goes to the largest score")
    ok("every prediction matches the output of the package's attention.")


LOOKUP_NEXT = {"cat": "dog", "dog": "bird", "bird": "fish", "fish": "cat"}   # the entry each entry must look up


def check_next_entry(W_Q) -> None:
    """``W_Q`` (d_model, d_k) = (4, 3): the query projection of a self-attention layer over the four table entries
    as tokens, X the (4, 4) one-hot embeddings, K = X W_K with W_K the keys of ``LOOKUP_KEYS`` (4, 3) and
    V = X W_V the values; with Q = X W_Q and scale ``LOOKUP_SCALE``, each entry's output must be the value of the
    entry ``LOOKUP_NEXT`` names."""
    names = list(LOOKUP_KEYS)
    W_K = torch.tensor(list(LOOKUP_KEYS.values()), dtype=torch.float64)            # (d_model, d_k) = (4, 3)
    got = as_float(W_Q, "W_Q")
    if got.shape == W_K.T.shape:
        raise CheckFailed(f"W_Q has shape {tuple(got.shape)}, nn.Linear's layout (d_k, d_model); in Q = X W_Q it "
                          f"maps the d_model = 4 features of a token to d_k = 3: shape (4, 3)")
    if got.shape != W_K.shape:
        raise CheckFailed(f"W_Q must have shape (d_model, d_k) = {tuple(W_K.shape)}, got {tuple(got.shape)}")
    if not torch.isfinite(got).all():
        raise CheckFailed("W_Q must be finite")
    X = torch.eye(len(names), dtype=torch.float64)                                  # one token per entry
    W_V = torch.tensor([[v] for v in LOOKUP_VALUES.values()], dtype=torch.float64)  # (d_model, 1)
    Q, K, V = X @ got, X @ W_K, X @ W_V                                             # (4, 3), (4, 3), (4, 1)
    out, _ = scaled_dot_product_attention(Q, K, V, scale=LOOKUP_SCALE)
    want = torch.tensor([LOOKUP_VALUES[LOOKUP_NEXT[n]] for n in names], dtype=torch.float64)
    if torch.allclose(out[:, 0], want, rtol=0, atol=0.05):
        ok("each entry's query now asks for the next entry: W_Q lets a token look for something other than what "
           "it offers (its key).")
        return
    if torch.allclose(got, W_K):
        raise CheckFailed("with W_Q = W_K every token asks for what it offers itself, as in Section 3.1; the query of "
                          "entry i (row i of Q = X W_Q, here row i of W_Q) must score the next entry's key highest")
    scores = Q @ K.T
    for i, name in enumerate(names):
        if abs(out[i, 0].item() - want[i].item()) <= 0.05:
            continue
        said = ", ".join(f"{n} {v:.3g}" for n, v in zip(names, scores[i].tolist()))
        row = scores[i].tolist()
        tops = [n for n, v in zip(names, row) if v == max(row)]
        top = tops[0]
        if len(tops) > 1:
            why = f"{' and '.join(tops)} tie for the largest score, so they share the weight"
        elif top == name:
            why = "it scores its own key highest"
        elif top != LOOKUP_NEXT[name]:
            why = f"it scores {top}'s key highest (a long key wins dot products)"
        else:
            why = f"{LOOKUP_NEXT[name]} wins by too little: make its score lead by at least 1"
        raise CheckFailed(f"{name}'s query {[round(v, 3) for v in Q[i].tolist()]} (row {i} of W_Q) gives "
                          f"{out[i, 0].item():.3f}, not {LOOKUP_NEXT[name]}'s value {want[i].item():g}: {why} "
                          f"(scores: {said})")
    raise CheckFailed("some output is off")          # pragma: no cover - some row above differs


# Going further (evidence page): build a case that shows three row-by-row bugs -------------------

def _loop_a(Q, K, V):
    S = Q @ K.T / math.sqrt(Q.shape[-1])         # (T_q, T_k)
    rows = []
    for i in range(Q.shape[0]):
        w = torch.softmax(S[:, i], dim=0)        # the weights of query i
        rows.append(w @ V)
    return torch.stack(rows)                     # (T_q, d_v)


def _loop_b(Q, K, V):
    rows = []
    for i in range(Q.shape[0]):
        s = K @ Q[i] / math.sqrt(V.shape[-1])    # the scores of query i
        rows.append(torch.softmax(s, dim=0) @ V)
    return torch.stack(rows)


def _loop_c(Q, K, V):
    rows = []
    for i in range(Q.shape[0]):
        s = K @ Q[i] / math.sqrt(Q.shape[-1])    # the scores of query i
        e = torch.exp(s)
        rows.append((e / e.sum()) @ V)           # softmax, written out
    return torch.stack(rows)


ROW_LOOP_BUGS = {"loop A": _loop_a, "loop B": _loop_b, "loop C": _loop_c}   # neutral names: finding the bug is the task


def check_row_bug_case(Q, K, V) -> None:
    """``Q (T_q, d_k), K (T_k, d_k), V (T_k, d_v)``: one input on which each row-by-row loop of
    ``ROW_LOOP_BUGS`` disagrees with ``torch.nn.functional.scaled_dot_product_attention`` (or fails),
    while the package's ``scaled_dot_product_attention`` agrees with it."""
    tensors = []
    for name, t in (("Q", Q), ("K", K), ("V", V)):
        t = as_tensor(t, name)
        if not t.is_floating_point():
            t = t.to(torch.float64)
        if t.dim() != 2:
            raise CheckFailed(f"{name} must be a matrix (2 axes), got shape {tuple(t.shape)}")
        tensors.append(t)
    Q, K, V = tensors
    if not (Q.dtype == K.dtype == V.dtype) or Q.dtype not in (torch.float32, torch.float64):
        raise CheckFailed(f"Q, K and V must share one dtype, float32 or float64, got {Q.dtype}, {K.dtype}, {V.dtype}")
    if not all(torch.isfinite(t).all() for t in tensors):
        raise CheckFailed("Q, K and V must be finite: no NaN or inf")
    try:
        ours, _ = scaled_dot_product_attention(Q, K, V)
    except ValueError as error:
        raise CheckFailed(f"the package rejects these inputs: {error}") from None
    theirs = torch.nn.functional.scaled_dot_product_attention(Q[None], K[None], V[None])[0]
    tol = dict(rtol=1e-4, atol=1e-4 * max(1.0, V.abs().max().item()))
    if not torch.allclose(ours, theirs, **tol):       # pragma: no cover - the package matches torch
        raise CheckFailed("on your input the package and torch disagree: please report it")
    d_k, d_v = Q.shape[-1], V.shape[-1]
    S = Q @ K.T / math.sqrt(d_k)
    for name, loop in ROW_LOOP_BUGS.items():
        try:
            out = loop(Q, K, V)
        except (RuntimeError, IndexError):
            continue                                        # it fails on your input: visible
        if out.shape != theirs.shape or not torch.isfinite(out).all() or not torch.allclose(out, theirs, **tol):
            continue
        if loop is _loop_a:
            why = ("your scores Q K^T / sqrt(d_k) are symmetric (Q = K, as in Section 3.1, makes them so): "
                   "column i then holds the same numbers as row i. Use different queries and keys"
                   if torch.allclose(S, S.T) else
                   "column i of your scores gives the same outputs as row i; use random, different Q and K")
        elif loop is _loop_b:
            why = (f"V has as many features as Q and K (d_v = d_k = {d_k}), so sqrt(d_v) = sqrt(d_k); "
                   f"give V another width" if d_v == d_k else
                   "each query scores all its keys alike, so no scale changes its (uniform) weights")
        else:
            limit = 88 if Q.dtype == torch.float32 else 709
            why = (f"your largest score is {S.max().item():.3g}: exp overflows only above about {limit} in "
                   f"{str(Q.dtype).removeprefix('torch.')}, so without the shift nothing goes wrong; make one "
                   f"query-key product very large")
        raise CheckFailed(f"{name} agrees with torch on your input: {why}")
    ok("every bug shows on your input, where the package and torch agree.")


# Exercise 3.8: predict the shapes of one query vector per step and of a query matrix ----------------

SHAPES_SETTING = {"batch": 2, "T_in": 11, "T_out": 7, "hidden": 16}
SHAPE_KINDS = ("seq2seq", "self-attention", "cross-attention")


def _counting(fn, record: list, scores=lambda out: out[1]):
    """``fn``, recording the shape of ``scores(its output)`` at every call (default: the weights of an
    attention function's ``(output, weights)``)."""
    def counted(*args, **kwargs):
        out = fn(*args, **kwargs)
        record.append(tuple(scores(out).shape))            # one entry per call
        return out
    return counted


@functools.cache
@torch.random.fork_rng()
def _measured_shapes() -> dict[str, tuple[int, tuple[int, ...]]]:
    """(number of attention calls, shape of the scores of one call) for the package's Bahdanau decoder over
    T_in encoder states for T_out steps, its self-attention over T_out positions and its cross-attention
    from T_out decoder positions to T_in encoder states."""
    from unittest import mock

    from ...layers import self_attention as sa_module
    from ...models.rnn_attention import BahdanauDecoder

    B, S, T, H = (SHAPES_SETTING[k] for k in ("batch", "T_in", "T_out", "hidden"))
    found: dict[str, tuple[int, tuple[int, ...]]] = {}
    decoder = BahdanauDecoder(vocab_size=10, embed_dim=8, hidden_dim=H)
    calls: list = []
    counted = _counting(decoder.score.compare, calls, scores=lambda out: out)    # one step's scores per call
    with mock.patch.object(decoder.score, "compare", counted), torch.no_grad():
        hs = torch.randn(B, S, H)
        decoder(torch.randint(1, 10, (B, T)), torch.zeros(1, B, H), hs, torch.ones(B, 1, S, dtype=torch.bool))
    found["seq2seq"] = (len(calls), calls[0])
    x, memory = torch.randn(B, T, H), torch.randn(B, S, H)
    for kind, run in (("self-attention", lambda: sa_module.SelfAttention(H)(x)),
                      ("cross-attention", lambda: sa_module.CrossAttention(H, H)(x, memory))):
        calls = []
        with mock.patch.object(sa_module, "scaled_dot_product_attention",
                               _counting(sa_module.scaled_dot_product_attention, calls)), torch.no_grad():
            run()
        found[kind] = (len(calls), calls[0])
    return found


def check_query_shapes(predictions: dict) -> None:
    """``predictions``: for each of ``SHAPE_KINDS``, ``(number of calls of the attention, shape of the scores of
    one call)`` in the setting ``SHAPES_SETTING``: a seq2seq decoder with attention (the package's
    ``BahdanauDecoder``) producing T_out outputs from T_in encoder states; self-attention over the T_out
    decoder positions; cross-attention from the T_out decoder positions to the T_in encoder states."""
    if not isinstance(predictions, dict) or set(predictions) != set(SHAPE_KINDS):
        got = sorted(predictions) if isinstance(predictions, dict) else type(predictions).__name__
        raise CheckFailed(f"expected a dict with the keys {list(SHAPE_KINDS)}, got {got}")
    B, S, T = (SHAPES_SETTING[k] for k in ("batch", "T_in", "T_out"))
    measured = _measured_shapes()
    for kind in SHAPE_KINDS:
        answer = predictions[kind]
        try:
            calls, shape = answer
            calls, shape = int(as_number(calls, f"the number of calls for {kind}")), tuple(int(n) for n in shape)
        except (TypeError, ValueError):
            raise CheckFailed(f"{kind}: expected (number of calls, shape), e.g. (3, (2, 4, 5)), "
                              f"got {answer!r}") from None
        want_calls, want_shape = measured[kind]
        if kind == "seq2seq":
            if calls != want_calls:
                raise CheckFailed(f"seq2seq: the package's decoder asks {want_calls} times, not {calls}: its query at "
                                  f"step t is its state after step t - 1, which depends on the context read at step "
                                  f"t - 1, so the {T} queries exist only one after another")
            if shape == (B, T, S):
                raise CheckFailed(f"seq2seq: {shape} is all {T} steps' weights stacked after the loop; one call holds "
                                  f"one query vector per example, so its scores have one row: {want_shape}")
        else:
            if calls != want_calls:
                raise CheckFailed(f"{kind}: one call, not {calls}: all {T} queries are rows of Q = X W_Q, computed "
                                  f"from the input before any attention runs")
            if kind == "self-attention" and shape == (B, T, S):
                raise CheckFailed(f"self-attention: its keys come from the same {T} positions as its queries, "
                                  f"not from the encoder: the scores are (batch, T, T)")
            if kind == "cross-attention" and shape == (B, S, T):
                raise CheckFailed(f"cross-attention: rows are queries (the {T} decoder positions) and columns keys "
                                  f"(the {S} encoder states): (batch, T_q, T_k)")
        if shape != want_shape:
            raise CheckFailed(f"{kind}: the scores of one call have shape {want_shape}, got {shape}; the package keeps "
                              f"the axes (batch, queries, keys)")
    ok("the number of calls and the shape of one call's scores match those measured on the package's layers, for "
       "all three kinds of attention.")


# Exercise 3.9: predict which steps of the build-up can see word order --------------------------------

ORDER_STEPS = ("no weights", "learned projections", "causal mask", "dropout, eval mode", "several heads",
               "positions added")
ORDER_SWAP = (1, 4)                                    # the two tokens swapped, of six


def _order_layers() -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
    """Each step of Chapter 3's build-up as a function of x (1, 6, 8) float64 -> outputs (1, 6, d)."""
    from ...layers.progression import HeadsWrapper, attention_without_weights
    from ...models.transformer import sinusoidal_positions

    layer = SelfAttention(8).double().eval()
    dropped = SelfAttention(8, dropout=0.5).double().eval()
    heads = HeadsWrapper(8, 2).double().eval()
    return {"no weights": lambda x: attention_without_weights(x)[0],
            "learned projections": lambda x: layer(x)[0],
            "causal mask": lambda x: layer(x, causal_mask(x.shape[1]))[0],
            "dropout, eval mode": lambda x: dropped(x)[0],
            "several heads": lambda x: heads(x)[0],
            "positions added": lambda x: layer(x + sinusoidal_positions(x.shape[1], 8).double())[0]}


@functools.cache
@torch.random.fork_rng()
def _order_blind() -> dict[str, bool]:
    """For each step: is its output, after swapping two input tokens, the old output with the same swap?"""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(1, 6, 8, generator=g, dtype=torch.float64)
    perm = list(range(6))
    i, j = ORDER_SWAP
    perm[i], perm[j] = j, i
    torch.manual_seed(0)
    with torch.no_grad():
        return {name: bool(torch.allclose(fn(x[:, perm]), fn(x)[:, perm], rtol=0, atol=1e-10))
                for name, fn in _order_layers().items()}


_ORDER_WHY = {
    "no weights": "the scores x_i . x_t only reorder with the tokens, and a softmax does not care in which order "
                  "a row's entries come",
    "learned projections": "W_Q, W_K and W_V act on each token alone, so P X W = P (X W): the scores become "
                           "P S P^T and the outputs P times the old ones",
    "causal mask": "the mask stays put while the tokens move: after the swap the token now at position 1 sees "
                   "two tokens, where at position 4 it saw five, so its output changes, not only its place; a "
                   "causal layer is not permutation equivariant, even without positions",
    "dropout, eval mode": "in eval mode dropout is off, so this is the layer with learned projections again",
    "several heads": "each head is equivariant, and concatenating their outputs token by token keeps that",
    "positions added": "a position vector belongs to a place, not to a token: the swapped tokens get each other's "
                       "positions, so their inputs change",
}


def check_order_blind(predictions: dict) -> None:
    """``predictions``: for each of ``ORDER_STEPS``, True if swapping two input tokens only swaps the two
    outputs (the layer cannot see the order), False if some output changes. Measured on the package's layers."""
    if not isinstance(predictions, dict) or set(predictions) != set(ORDER_STEPS):
        got = sorted(predictions) if isinstance(predictions, dict) else type(predictions).__name__
        raise CheckFailed(f"expected a dict with the keys {list(ORDER_STEPS)}, got {got}")
    measured = _order_blind()
    for step in ORDER_STEPS:
        answer = predictions[step]
        if isinstance(answer, torch.Tensor) and answer.numel() == 1:
            answer = answer.item()
        if not isinstance(answer, (bool, np.bool_)):
            raise CheckFailed(f"{step}: expected True or False, got {type(answer).__name__} {answer!r}")
        if bool(answer) != measured[step]:
            verdict = "only swaps the outputs" if measured[step] else "changes an output, not only its place"
            raise CheckFailed(f"{step}: swapping two tokens {verdict}: {_ORDER_WHY[step]}")
    ok("every prediction matches what swapping two tokens does to the package's layers.")
