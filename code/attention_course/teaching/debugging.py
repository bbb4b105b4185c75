"""Debug this attention: implementations with one planted bug each, and the checks that find them.

Attention code fails quietly. A softmax over the wrong axis, a missing ``1/sqrt(d)`` or a mask
that broadcasts over the wrong dimension still returns tensors of the right shape, and training
still lowers the loss a little. Each bug below has shipped in real tutorials. The ``diagnose_*``
functions run the properties that correct attention must have and say which one breaks, with a
hint that points at the usual cause:

=======================================  =====================================================
planted bug                              property that catches it
=======================================  =====================================================
``attention_softmax_wrong_axis``         every row of weights sums to 1 over the keys
``attention_missing_scale``              agrees with ``scaled_dot_product_attention`` (1/sqrt(d))
``attention_neg_inf_mask``               a query with every key masked gets zeros, not NaN
``split_heads_permute_first``            split-then-merge is the identity; heads keep time steps
``merge_heads_permute_first`` (paired)   head h holds features h*d_head..; time steps not mixed
``key_padding_mask_wrong_axis``          a padding mask on (B, H, T_q, T_k) scores hides exactly
                                         the padded keys of its own batch element
=======================================  =====================================================

Usage, in a notebook or a shell::

    from .debugging import BUGS, check_attention, attention_missing_scale
    check_attention(attention_missing_scale)   # raises CheckFailed: "... missing 1/sqrt(d_k)? ..."

``check_*`` raise :class:`~attention_course.teaching.checks.CheckFailed` with the first broken property;
``diagnose_*`` return the list of every broken property (empty when all hold). They follow the rule of
every self-check (:mod:`attention_course.teaching.checks._base`): a result may be a torch tensor of any
float dtype, a numpy array or nested lists; tolerances are sized to float32; an exception raised by
the function under test is reported as a ``CheckFailed`` that quotes its line. Attention
functions have the signature of :func:`~attention_course.layers.attention.scaled_dot_product_attention`:
``fn(query (..., T_q, d_k), key (..., T_k, d_k), value (..., T_k, d_v), mask=None)`` returning
``(output (..., T_q, d_v), weights (..., T_q, T_k))``, with boolean masks, True = may attend.
Head functions follow :mod:`attention_course.layers.multihead`: ``split(x (B, T, E), num_heads) ->
(B, H, T, E/H)`` and ``merge(x (B, H, T, d_head)) -> (B, T, H*d_head)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..layers.attention import padding_mask, scaled_dot_product_attention
from .checks._base import FLOAT32_EPS, CheckFailed, as_float, as_tensor, call, ok

__all__ = [
    "BUGS", "PlantedBug",
    "attention_softmax_wrong_axis", "attention_missing_scale", "attention_neg_inf_mask",
    "split_heads", "merge_heads", "split_heads_permute_first", "merge_heads_permute_first",
    "split_heads_plain_reshape", "merge_heads_plain_reshape", "heads_before_output",
    "key_padding_mask", "key_padding_mask_wrong_axis",
    "diagnose_attention", "diagnose_heads", "diagnose_key_padding_mask",
    "check_attention", "check_heads", "check_key_padding_mask",
]

AttentionFn = Callable[..., tuple[torch.Tensor, torch.Tensor]]


# ---------------------------------------------------------------------------- planted bugs
# Each is the correct code with one line changed; the comment marks the line.

def attention_softmax_wrong_axis(query, key, value, mask=None):
    """Scaled dot-product attention whose softmax normalises over the queries (dim=-2)."""
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])      # (..., T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-2)                                   # BUG: dim=-1
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ value, weights


def attention_missing_scale(query, key, value, mask=None):
    """Dot-product attention that forgets to divide the scores by sqrt(d_k)."""
    scores = query @ key.transpose(-2, -1)                                    # BUG: / sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ value, weights


def attention_neg_inf_mask(query, key, value, mask=None):
    """Scaled dot-product attention that masks with -inf: a fully masked row becomes 0/0 = NaN."""
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))                    # BUG: finfo.min, then zero
    weights = torch.softmax(scores, dim=-1)
    return weights @ value, weights


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Correct: (B, T, E) -> (B, H, T, E/H); reshape the feature axis, then move heads before time."""
    B, T, E = x.shape
    return x.reshape(B, T, num_heads, E // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Correct: (B, H, T, d_head) -> (B, T, H * d_head), the inverse of :func:`split_heads`."""
    B, H, T, d_head = x.shape
    return x.transpose(1, 2).reshape(B, T, H * d_head)


def split_heads_permute_first(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, E) -> (B, H, T, E/H) with the transpose done *before* the reshape."""
    B, T, E = x.shape
    return x.transpose(1, 2).reshape(B, num_heads, T, E // num_heads)        # BUG: reshape, then transpose


def merge_heads_permute_first(x: torch.Tensor) -> torch.Tensor:
    """The exact inverse of :func:`split_heads_permute_first`: the pair round-trips, yet is wrong."""
    B, H, T, d_head = x.shape
    return x.reshape(B, H * d_head, T).transpose(1, 2)                       # BUG (matches the split)


def split_heads_plain_reshape(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, E) -> (B, H, T, E/H) by one reshape: head 0 gets whole positions, not a block of features."""
    B, T, E = x.shape
    return x.reshape(B, num_heads, T, E // num_heads)                        # BUG: no transpose at all


def merge_heads_plain_reshape(x: torch.Tensor) -> torch.Tensor:
    """The exact inverse of :func:`split_heads_plain_reshape`: the pair round-trips, yet is wrong."""
    B, H, T, d_head = x.shape
    return x.reshape(B, T, H * d_head)                                       # BUG (matches the split)


@torch.no_grad()
def heads_before_output(layer, x: torch.Tensor, split=split_heads, merge=merge_heads) -> torch.Tensor:
    """The heads' outputs side by side, (B, T, E): the input of ``layer.W_O`` in self-attention over
    ``x`` (B, T, E), for a :class:`~attention_course.layers.multihead.MultiHeadAttention` ``layer``,
    with ``split`` and ``merge`` cutting and joining the heads (the correct pair by default)."""
    H = layer.num_heads
    q, k, v = (split(lin(x), H) for lin in (layer.W_Q, layer.W_K, layer.W_V))     # (B, H, T, d_head)
    out, _ = scaled_dot_product_attention(q, k, v)
    return merge(out)


def key_padding_mask(lengths: torch.Tensor, T_k: int) -> torch.Tensor:
    """Correct: boolean (B, 1, 1, T_k) mask for multi-head scores (B, H, T_q, T_k)."""
    return padding_mask(lengths, T_k)[:, None]                               # (B, 1, 1, T_k)


def key_padding_mask_wrong_axis(lengths: torch.Tensor, T_k: int) -> torch.Tensor:
    """The (B, 1, T_k) mask of single-head attention used as is on (B, H, T_q, T_k) scores.

    Broadcasting aligns shapes from the right, so its batch axis lands on the *heads* axis: with
    B == H it runs silently and head h gets the padding of batch element h.
    """
    return padding_mask(lengths, T_k)                                        # BUG: add a heads axis


# ---------------------------------------------------------------------------- the checks

def _inputs(B=3, T_q=5, T_k=6, d_k=16, d_v=4, seed=0, scale=3.0):
    """Random float64 query/key/value; ``scale`` makes the scores large enough that a wrong
    scale factor changes the weights visibly."""
    g = torch.Generator().manual_seed(seed)
    q = scale * torch.randn(B, T_q, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(B, T_k, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(B, T_k, d_v, generator=g, dtype=torch.float64)
    return q, k, v


def _run(fn: AttentionFn, *args) -> tuple[torch.Tensor, torch.Tensor]:
    """``fn(*args)`` on copies of the inputs; its (output, weights) as float64 tensors."""
    result = call(fn, *(a.clone() if isinstance(a, torch.Tensor) else a for a in args))
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise CheckFailed(f"an attention function must return the pair (output, weights), got "
                          f"{type(result).__name__}")
    return as_float(result[0], "the output"), as_float(result[1], "the weights")


# Weights lie in [0, 1] and the outputs are averages of values of size about 1: computed in float32, both are
# within a few FLOAT32_EPS of the float64 reference (3 measured), while a scale off by 5% moves them by 1e-2.
_ATOL = 64 * FLOAT32_EPS


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.allclose(a, b, rtol=0, atol=_ATOL)


def diagnose_attention(fn: AttentionFn) -> list[str]:
    """Run every property of correct attention on ``fn``; return a message per broken property.

    The properties, in order: shapes; finite output; rows of weights sum to 1 over the keys;
    agreement with :func:`scaled_dot_product_attention` (which scales by 1/sqrt(d_k)); masked
    weights exactly 0; a query with every key masked gets zero weights and output, not NaN.
    """
    problems: list[str] = []
    q, k, v = _inputs()
    out, w = _run(fn, q, k, v)
    want_out, want_w = scaled_dot_product_attention(q, k, v)
    if tuple(w.shape) != tuple(want_w.shape) or tuple(out.shape) != tuple(want_out.shape):
        return [f"shapes: got output {tuple(out.shape)} and weights {tuple(w.shape)}, expected "
                f"{tuple(want_out.shape)} and {tuple(want_w.shape)} (..., T_q, d_v) and (..., T_q, T_k)"]
    if not (torch.isfinite(out).all() and torch.isfinite(w).all()):
        problems.append("output or weights contain NaN/inf on ordinary inputs with no mask")
        return problems

    row_sums = w.sum(-1)
    if not torch.allclose(row_sums, torch.ones_like(row_sums), rtol=0, atol=_ATOL):
        col_sums = w.sum(-2)
        hint = (" The columns sum to 1 instead: softmax over the wrong axis? Normalise over the keys, "
                "dim=-1, not over the queries, dim=-2."
                if torch.allclose(col_sums, torch.ones_like(col_sums), rtol=0, atol=_ATOL) else
                " Softmax over the wrong axis, or no softmax at all?")
        problems.append(f"weights do not sum to 1 over the keys (last axis): row sums range from "
                        f"{row_sums.min().item():.3f} to {row_sums.max().item():.3f}.{hint}")
    elif not (_close(w, want_w) and _close(out, want_out)):
        d_k = q.shape[-1]
        found = None
        for label, s in (("1 (no scaling): missing 1/sqrt(d_k)? Divide the scores by sqrt(d_k)", 1.0),
                         (f"1/d_k: divided by d_k = {d_k} instead of sqrt(d_k)", 1.0 / d_k)):
            alt_out, alt_w = scaled_dot_product_attention(q, k, v, scale=s)
            if _close(w, alt_w) and _close(out, alt_out):
                found = label
                break
        if found is not None:
            problems.append(f"does not match scaled_dot_product_attention on random inputs; it matches "
                            f"a scale of {found}")
        else:
            err = (w - want_w).abs().max().item()
            problems.append(f"does not match scaled_dot_product_attention on random inputs (largest "
                            f"weight error {err:.3g}): check the score q.k^T * 1/sqrt(d_k) and the weighted "
                            f"sum weights @ value")

    # A padding-style mask: batch element b may attend to its first lengths[b] keys.
    lengths = torch.tensor([6, 3, 1])
    mask = padding_mask(lengths, k.shape[-2])                                # (B, 1, T_k)
    out_m, w_m = _run(fn, q, k, v, mask)
    if not torch.isfinite(w_m).all():
        problems.append("weights contain NaN/inf with a mask that leaves every query some key")
    else:
        full = mask.expand_as(w_m)
        leaked = w_m[~full].abs().max().item() if (~full).any() else 0.0
        if leaked != 0.0:
            problems.append(f"masked weights are not exactly 0 (largest {leaked:.3g}): zero them, or fill "
                            f"the masked scores before the softmax, not after")
        want_m = scaled_dot_product_attention(q, k, v, mask)[1]
        if leaked == 0.0 and not problems and not _close(w_m, want_m):
            problems.append("with a padding mask the weights differ from scaled_dot_product_attention: is "
                            "the mask applied along the keys (last axis) of the scores?")

    # Every key masked for some queries: nothing to attend to.
    none = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool)
    none[1] = False                                                          # query 1 sees no key
    out_n, w_n = _run(fn, q, k, v, none)
    if torch.isnan(w_n).any() or torch.isnan(out_n).any():
        problems.append("a query whose keys are all masked gets NaN weights: masking with -inf makes the "
                        "softmax compute 0/0. Fill masked scores with torch.finfo(dtype).min (finite) and "
                        "set the masked weights to 0 after the softmax (see masked_softmax)")
    elif w_n[..., 1, :].abs().max() != 0 or out_n[..., 1, :].abs().max() != 0:
        problems.append("a query whose keys are all masked must get zero weights and a zero output; got "
                        f"weights summing to {w_n[..., 1, :].sum(-1).max().item():.3f}")
    return problems


def diagnose_heads(split: Callable[[torch.Tensor, int], torch.Tensor],
                   merge: Callable[[torch.Tensor], torch.Tensor]) -> list[str]:
    """Check a ``split(x (B, T, E), H) -> (B, H, T, E/H)`` and ``merge`` pair.

    Properties: the shape; merge(split(x)) == x; head h holds features h*d_head..(h+1)*d_head - 1
    of every time step, so changing time step t of x changes only row t of every head.
    """
    B, T, E, H = 2, 5, 12, 3
    # Entries 0..119 name their place; whole numbers this small are exact in float32 too, so the
    # comparisons below can be exact: splitting and merging only move entries.
    x = torch.arange(B * T * E, dtype=torch.float64).reshape(B, T, E)
    heads = as_float(call(split, x.clone(), H), "the heads")
    if tuple(heads.shape) != (B, H, T, E // H):
        return [f"split_heads of (B, T, E) = {(B, T, E)} into {H} heads must give (B, H, T, E/H) = "
                f"{(B, H, T, E // H)}, got {tuple(heads.shape)}"]
    problems = []
    back = as_float(call(merge, heads.clone()), "the merged heads")
    if tuple(back.shape) != (B, T, E) or not torch.equal(back, x):
        problems.append("merge_heads(split_heads(x)) is not x: split-then-merge must be the identity. A "
                        "transpose before the reshape (permute before reshape) scrambles the elements; "
                        "reshape (B, T, E) -> (B, T, H, d_head) first, then transpose to (B, H, T, d_head)")
    d = E // H
    expected = torch.stack([x[:, :, h * d:(h + 1) * d] for h in range(H)], dim=1)
    if not torch.equal(heads, expected):
        # Which time steps did row 0 of head 0 come from?
        t_of = (heads[0, 0, 0] % (T * E)) // E
        steps = sorted({int(t) for t in t_of})
        problems.append(f"head 0, time step 0 holds features of time steps {steps}, not only of step 0: "
                        f"the heads mix time steps. Heads split the features, not time: permute before "
                        f"reshape? Reshape (B, T, E) -> (B, T, H, d_head), then transpose(1, 2)")
    return problems


def diagnose_key_padding_mask(make_mask: Callable[[torch.Tensor, int], torch.Tensor]) -> list[str]:
    """Check ``make_mask(lengths (B,), T_k)`` builds a key mask for multi-head scores (B, H, T_q, T_k).

    Applied through :func:`scaled_dot_product_attention`, query rows of batch element b in every
    head must give weight 0 exactly to keys t >= lengths[b] and positive weight to the others.
    Run with B == H (where a wrongly placed batch axis broadcasts silently) and with B != H.
    """
    problems = []
    for B, H in ((3, 3), (2, 4)):
        T_q, T_k, d = 4, 5, 8
        g = torch.Generator().manual_seed(B * 10 + H)
        q = torch.randn(B, H, T_q, d, generator=g, dtype=torch.float64)
        k = torch.randn(B, H, T_k, d, generator=g, dtype=torch.float64)
        v = torch.randn(B, H, T_k, d, generator=g, dtype=torch.float64)
        lengths = torch.tensor([T_k, 2, 4, 1][:B])
        mask = as_tensor(call(make_mask, lengths.clone(), T_k), "the mask")
        if mask.dtype != torch.bool:
            return [f"the mask must be boolean, True = may attend, got {mask.dtype}: a comparison such as "
                    f"positions < lengths gives booleans"]
        try:
            _, w = scaled_dot_product_attention(q, k, v, mask)
        except (ValueError, RuntimeError) as err:
            problems.append(f"with batch {B} and {H} heads the mask of shape {tuple(mask.shape)} does not fit "
                            f"the scores (B, H, T_q, T_k) = {(B, H, T_q, T_k)} ({err}). A per-key padding "
                            f"mask needs the shape (B, 1, 1, T_k): add the heads axis, mask[:, None]")
            continue
        allowed = torch.arange(T_k)[None, :] < lengths[:, None]               # (B, T_k)
        allowed = allowed[:, None, None, :].expand_as(w)
        if (w[~allowed] != 0).any() or (w[allowed] <= 0).any():
            b, h, i = (int(j) for j in ((w != 0) != allowed).nonzero()[0][:3])
            seen = int((w[b, h, i] != 0).sum())
            where = (f"with batch {B} and {H} heads, batch element {b} (length {int(lengths[b])}) attends to "
                     f"{seen} keys in head {h}")
            if torch.equal(w != 0, ~allowed):
                problems.append(f"{where}: the mask is inverted: True means 'may attend', as in torch, so the "
                                f"real keys t < lengths[b] are True and the padding False")
            elif mask.dim() == 4 and mask.shape[0] == B:
                problems.append(f"{where}, not its first {int(lengths[b])}: the mask must allow exactly the keys "
                                f"t < lengths[b] (True = may attend)")
            else:
                problems.append(f"{where}: the mask of shape {tuple(mask.shape)} broadcasts over the wrong "
                                f"dimension (its batch axis lands on the heads axis). Use shape (B, 1, 1, T_k): "
                                f"padding_mask(lengths, T_k)[:, None]")
    return problems


def _raise_first(problems: list[str], success: str) -> None:
    if problems:
        raise CheckFailed(problems[0])
    ok(success)


def check_attention(fn: AttentionFn) -> None:
    """Raise :class:`CheckFailed` with the first property ``fn`` breaks; print "Correct" otherwise."""
    _raise_first(diagnose_attention(fn), "the weights of each query sum to one over the keys, the scores are "
                                         "scaled as in scaled_dot_product_attention, masked weights are exactly "
                                         "zero and a fully masked query gets zeros, not NaN.")


def check_heads(split: Callable[[torch.Tensor, int], torch.Tensor],
                merge: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Raise :class:`CheckFailed` with the first property the pair breaks; print "Correct" otherwise."""
    _raise_first(diagnose_heads(split, merge), "split-then-merge is the identity and each head holds its "
                                               "own block of features at every time step.")


def check_key_padding_mask(make_mask: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """Raise :class:`CheckFailed` if the mask hides the wrong keys; print "Correct" otherwise."""
    _raise_first(diagnose_key_padding_mask(make_mask), "in every head, each batch element sees exactly its "
                                                       "own real keys.")


# ---------------------------------------------------------------------------- the catalogue

@dataclass(frozen=True)
class PlantedBug:
    """One exercise: the buggy code, the check that catches it, the fix, and the words the
    check's message uses to point at the bug."""

    name: str
    misconception: str
    check: Callable[[], None]
    fixed: Callable[[], None]
    points_at: str


BUGS: dict[str, PlantedBug] = {b.name: b for b in (
    PlantedBug("softmax over the wrong axis",
               "Softmax over the queries (dim=-2) instead of the keys (dim=-1).",
               lambda: check_attention(attention_softmax_wrong_axis),
               lambda: check_attention(scaled_dot_product_attention),
               "softmax over the wrong axis"),
    PlantedBug("missing 1/sqrt(d)",
               "Dot-product scores used without the 1/sqrt(d_k) scale: the softmax saturates as d_k grows.",
               lambda: check_attention(attention_missing_scale),
               lambda: check_attention(scaled_dot_product_attention),
               "missing 1/sqrt(d_k)"),
    PlantedBug("-inf mask gives NaN",
               "Masking with -inf: a query with every key masked gets 0/0 = NaN weights.",
               lambda: check_attention(attention_neg_inf_mask),
               lambda: check_attention(scaled_dot_product_attention),
               "masking with -inf"),
    PlantedBug("permute before reshape",
               "Splitting heads by transposing before reshaping: heads mix time steps.",
               lambda: check_heads(split_heads_permute_first, merge_heads),
               lambda: check_heads(split_heads, merge_heads),
               "permute before reshape"),
    PlantedBug("permute before reshape, matched pair",
               "A split and merge that are each other's inverse, so the round trip passes, yet mix time.",
               lambda: check_heads(split_heads_permute_first, merge_heads_permute_first),
               lambda: check_heads(split_heads, merge_heads),
               "the heads mix time steps"),
    PlantedBug("mask broadcasts over the wrong dimension",
               "A (B, 1, T_k) padding mask on (B, H, T_q, T_k) scores: its batch axis meets the heads axis.",
               lambda: check_key_padding_mask(key_padding_mask_wrong_axis),
               lambda: check_key_padding_mask(key_padding_mask),
               "broadcasts over the wrong dimension"),
)}
