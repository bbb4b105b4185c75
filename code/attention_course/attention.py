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
attend to; it gets a row of zero weights and a zero output, never NaN.
"""

from __future__ import annotations

import math

import torch

__all__ = ["scaled_dot_product_attention", "masked_softmax", "causal_mask", "padding_mask"]


def _check_inputs(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                  mask: torch.Tensor | None) -> None:
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got dtype {t.dtype}")
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dims (..., T, d), got shape {tuple(t.shape)}")
    if not (query.dtype == key.dtype == value.dtype):
        raise TypeError(f"query, key and value must share one dtype, got "
                        f"{query.dtype}, {key.dtype}, {value.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"query and key feature sizes differ: query {tuple(query.shape)} has "
                         f"d_k={query.shape[-1]}, key {tuple(key.shape)} has d_k={key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"key and value lengths differ: key {tuple(key.shape)} has "
                         f"T_k={key.shape[-2]}, value {tuple(value.shape)} has T_k={value.shape[-2]}")
    try:
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except RuntimeError:
        raise ValueError(f"batch dimensions do not broadcast: query {tuple(query.shape)}, "
                         f"key {tuple(key.shape)}, value {tuple(value.shape)}") from None
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a boolean tensor (True = may attend), got {got}")
    scores_shape = (*batch, query.shape[-2], key.shape[-2])
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != torch.Size(scores_shape):
        raise ValueError(f"mask of shape {tuple(mask.shape)} is not broadcastable to the scores "
                         f"shape (..., T_q, T_k) = {scores_shape}")


def scaled_dot_product_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                                 mask: torch.Tensor | None = None, *,
                                 scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Return ``(output, weights)`` of softmax(query key^T * scale) value.

    ``scale`` defaults to 1/sqrt(d_k). Masked weights are exactly 0; a fully masked query row
    gets all-zero weights and a zero output.
    """
    _check_inputs(query, key, value, mask)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key.transpose(-2, -1)) * scale          # (..., T_q, T_k)
    weights = masked_softmax(scores, mask)                     # (..., T_q, T_k)
    return weights @ value, weights                            # (..., T_q, d_v)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis of ``scores`` (..., T_q, T_k), restricted to ``mask``.

    Masked entries get weight exactly 0; a row with no allowed key gets all zeros, not NaN.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    # The most negative finite number, not -inf: a fully masked row stays finite
    # (uniform) instead of 0/0 = NaN, and is zeroed just below.
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean (T, T) mask: position i may attend to positions 0..i (lower triangle)."""
    if not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive int, got {T!r}")
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: torch.Tensor | list[int], max_len: int) -> torch.Tensor:
    """Boolean (batch, 1, max_len) key mask: True where key position t < lengths[b].

    The singleton middle axis broadcasts over the queries of (batch, T_q, T_k) scores; for
    multi-head scores (batch, heads, T_q, T_k) add a heads axis: ``mask[:, None]``.
    """
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise ValueError(f"lengths must be a 1-D integer tensor, got shape {tuple(lengths.shape)} "
                         f"and dtype {lengths.dtype}")
    if len(lengths) and (int(lengths.min()) < 0 or int(lengths.max()) > max_len):
        raise ValueError(f"lengths must lie in [0, max_len={max_len}], got "
                         f"min {int(lengths.min())} and max {int(lengths.max())}")
    positions = torch.arange(max_len, device=lengths.device)
    return (positions[None, :] < lengths[:, None])[:, None, :]
