"""Scaled dot-product attention and the two masks every course chapter uses.

Shapes (any number of leading batch dimensions ``...``):

    query   (..., T_q, d_k)   one row per position that asks
    key     (..., T_k, d_k)   one row per position that can be found
    value   (..., T_k, d_v)   what each key hands back
    mask    broadcastable to (..., T_q, T_k), boolean, True = "may attend"
    output  (..., T_q, d_v)
    weights (..., T_q, T_k)   each row sums to 1 (or is all zeros, see below)

The mask follows torch's convention (``torch.nn.functional.scaled_dot_product_attention``):
True marks a key the query may look at. A query whose keys are *all* masked has nothing to
attend to; it gets a row of zero weights and a zero output, never NaN. Masked scores, keys and
values are selected out, never multiplied by 0, so whatever they hold (NaN and inf included)
cannot reach the output; NaN or inf where the mask lets a query look raises ValueError.
"""

from __future__ import annotations

import math
import numbers

import torch

from ..validate import check_dropout, check_float_tensor, check_mask, check_no_nan, first_index, positive_int

__all__ = ["scaled_dot_product_attention", "masked_softmax", "weighted_sum", "causal_mask", "padding_mask"]


def _check_inputs(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  mask: torch.Tensor | None, scale: float | None = None) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_float_tensor(name, t, min_dims=2)
    if not (query.dtype == key.dtype == value.dtype):
        raise TypeError(f"query, key and value must share one dtype, got "
                        f"{query.dtype}, {key.dtype}, {value.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"query and key feature sizes differ: query {tuple(query.shape)} has "
                         f"d_k={query.shape[-1]}, key {tuple(key.shape)} has d_k={key.shape[-1]}")
    if query.shape[-1] == 0:
        raise ValueError(f"query and key have no features (d_k=0, shapes {tuple(query.shape)} and "
                         f"{tuple(key.shape)}): a score needs at least one")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key and value lengths differ: key {tuple(key.shape)} has "
                         f"T_k={key.shape[-2]}, value {tuple(value.shape)} has T_k={value.shape[-2]}")
    try:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(f"batch dimensions do not broadcast: query {tuple(query.shape)}, "
                         f"key {tuple(key.shape)}, value {tuple(value.shape)}") from None
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, numbers.Real)
                              or not math.isfinite(scale)):
        raise ValueError(f"scale must be a finite number (or None for 1/sqrt(d_k)), got {scale!r}")
    check_mask(mask, (*batch, query.shape[-2], key.shape[-2]))


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 mask: torch.Tensor | None = None, *,
                                 scale: float | None = None,
                                 dropout_p: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(output, weights)`` of softmax(query key^T * scale) value.

    ``scale`` defaults to 1/sqrt(d_k). Masked weights are exactly 0; a fully masked query row
    gets all-zero weights and a zero output. Whatever a masked key or value holds, NaN and inf
    included, cannot reach the output; NaN or inf where the mask lets a query look raises ValueError.

    ``dropout_p`` (as in torch's function) zeroes each weight with probability p and scales the
    survivors by 1 / (1 - p) before the weighted sum; the weights returned are those used. It is
    applied whenever p > 0: a layer passes 0 in eval mode (``SelfAttention`` does).
    """
    _check_inputs(query, key, value, mask, scale)
    dropout_p = check_dropout("dropout_p", dropout_p)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key.transpose(-2, -1)) * scale          # (..., T_q, T_k)
    weights = masked_softmax(scores, mask)                     # (..., T_q, T_k)
    if dropout_p:
        weights = torch.nn.functional.dropout(weights, dropout_p)   # rows no longer sum to 1
    return weighted_sum(weights, value, mask), weights         # (..., T_q, d_v)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis of ``scores`` (..., T_q, T_k), restricted to ``mask``.

    Masked entries get weight exactly 0, whatever their score (NaN and inf included); a row with no
    allowed key gets all zeros, not NaN. Finite scores of any size give finite weights. An allowed
    score that is NaN or +inf (or a row whose allowed scores are all -inf) raises ValueError.
    """
    check_float_tensor("scores", scores, min_dims=1)
    check_mask(mask, tuple(scores.shape))
    if mask is not None:
        # A select, not an addition: masked scores drop out whatever they hold. A fully masked row
        # is all -inf, which softmax turns into 0/0 = NaN; the select below makes it exactly 0.
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)                    # subtracts each row's max: no overflow
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    check_no_nan("the attention weights", weights, "some score that the mask allows is NaN or inf "
                 "(NaN or inf in the query or key, or q . k overflowing the dtype)")
    return weights


def weighted_sum(weights: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``weights @ value`` (..., T_q, d_v) for weights (..., T_q, T_k) and values (..., T_k, d_v).

    A value row that ``mask`` hides from every query is selected out before the product, so NaN or
    inf there cannot turn its zero weights into NaN (0 * inf is NaN). A non-finite value that some
    query may see raises ValueError.
    """
    if torch.isfinite(value.detach().sum()):                   # fast path: no NaN or inf anywhere
        return weights @ value
    bad = ~torch.isfinite(value).all(-1)                       # (..., T_k) rows holding NaN or inf
    if bad.any():
        seen = bad & _seen_keys(mask, bad)                     # ... that some query may look at
        if seen.any():
            raise ValueError(f"value holds NaN or inf at (batch..., key) = {first_index(seen)}, a key that "
                             f"the mask lets a query see: the output would be NaN")
        value = value.masked_fill(bad[..., None], 0.0)         # a select: only hidden rows are cleared
    return weights @ value


def _seen_keys(mask: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    """(..., T_k) True for each key that at least one query may attend to."""
    if mask is None:
        return torch.ones_like(like)
    return mask.any(-2) if mask.dim() > 1 else mask


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean (T, T) mask on ``device``: position i may attend to positions 0..i (lower triangle)."""
    T = positive_int("T", T)
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: torch.Tensor | list[int], max_len: int) -> torch.Tensor:
    """Boolean (batch, 1, max_len) key mask: True where key position t < lengths[b].

    The singleton middle axis broadcasts over the queries of (batch, T_q, T_k) scores; for
    multi-head scores (batch, heads, T_q, T_k) add a heads axis: ``mask[:, None]``.
    """
    max_len = positive_int("max_len", max_len, minimum=0)
    if not isinstance(lengths, torch.Tensor):                  # a list or an array
        lengths = torch.as_tensor(lengths)
    if lengths.numel() == 0:
        lengths = lengths.long()                               # an empty list: no rows
    if lengths.dim() != 1 or lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
        raise ValueError(f"lengths must be a 1-D integer tensor, got shape {tuple(lengths.shape)} "
                         f"and dtype {lengths.dtype}")
    if len(lengths) and (int(lengths.min()) < 0 or int(lengths.max()) > max_len):
        raise ValueError(f"lengths must lie in [0, max_len={max_len}], got "
                         f"min {int(lengths.min())} and max {int(lengths.max())}")
    positions = torch.arange(max_len, device=lengths.device)
    return (positions[None, :] < lengths[:, None])[:, None, :]
