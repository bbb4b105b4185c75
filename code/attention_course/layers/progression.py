"""The steps by which Chapter 3 builds up to the package's attention layers, after Raschka (2024, ch. 3).

1. :func:`attention_without_weights`: the token vectors are their own queries, keys and values.
2. :class:`~attention_course.layers.self_attention.SelfAttention`: trainable W_Q, W_K, W_V.
3. :func:`renormalised_causal_weights`: a causal mask applied *after* the softmax, by zeroing the
   future and renormalising each row; it equals masking the scores before the softmax (the package's
   :func:`~attention_course.layers.attention.masked_softmax` with ``causal_mask``).
4. Dropout on the attention weights: ``SelfAttention(d, dropout=p)``, in training mode only.
5. :class:`HeadsWrapper`: several single-head layers side by side, their outputs concatenated.
6. :func:`heads_to_multihead`: the same heads as one
   :class:`~attention_course.layers.multihead.MultiHeadAttention`, which computes every head with one
   projection per role and splits the features into heads; its output projection W_O is set to the
   identity, so it computes exactly what the wrapper computes.
"""

from __future__ import annotations

import torch
from torch import nn

from ..validate import check_float_tensor, positive_int
from .attention import causal_mask
from .multihead import MultiHeadAttention
from .self_attention import SelfAttention

__all__ = ["attention_without_weights", "renormalised_causal_weights", "HeadsWrapper", "heads_to_multihead"]


def attention_without_weights(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` (..., T, d) -> ``(context (..., T, d), weights (..., T, T))``, with nothing to learn.

    Every token is its own query, key and value: the score of tokens i and t is the dot product
    x_i . x_t, each row of scores is softmaxed, and token i's context is the weighted sum of all tokens.
    """
    check_float_tensor("x", x, min_dims=2)
    if not torch.isfinite(x).all():
        raise ValueError("x holds NaN or inf: every weight of its row would be NaN")
    scores = x @ x.transpose(-2, -1)                       # (..., T, T): x_i . x_t
    weights = torch.softmax(scores, dim=-1)                # (..., T, T): each row sums to 1
    return weights @ x, weights                            # (..., T, d)


def renormalised_causal_weights(scores: torch.Tensor) -> torch.Tensor:
    """Causal weights from scores (..., T, T) by masking *after* the softmax: softmax each row over
    every key, zero the keys after the query (t > i), and divide each row by what is left."""
    check_float_tensor("scores", scores, min_dims=2)
    T = scores.shape[-1]
    if scores.shape[-2] != T:
        raise ValueError(f"causal weights need square scores (..., T, T), got {tuple(scores.shape)}")
    if not torch.isfinite(scores).all():
        raise ValueError("scores hold NaN or inf: masking after the softmax needs finite scores (the softmax "
                         "of a row with inf is NaN); mask before it with masked_softmax instead")
    weights = torch.softmax(scores, dim=-1)                               # (..., T, T) over every key
    past = weights * causal_mask(T, device=scores.device)                 # the future zeroed
    return past / past.sum(dim=-1, keepdim=True)                          # rows sum to 1 again


class HeadsWrapper(nn.Module):
    """``num_heads`` separate :class:`SelfAttention` heads of width ``d_model / num_heads``, run one
    after another; their outputs are concatenated along the features.

    ``forward(x (B, T, d_model), mask=None)`` returns ``(output (B, T, d_model), weights (B, H, T, T))``.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        d_model, num_heads = positive_int("d_model", d_model), positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        d_head = d_model // num_heads
        self.heads = nn.ModuleList(SelfAttention(d_model, d_k=d_head, d_v=d_head, dropout=dropout)
                                   for _ in range(num_heads))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        outs, weights = zip(*(head(x, mask) for head in self.heads))       # H x (B, T, d_head), H x (B, T, T)
        return torch.cat(outs, dim=-1), torch.stack(weights, dim=1)         # (B, T, d_model), (B, H, T, T)


def heads_to_multihead(wrapper: HeadsWrapper) -> MultiHeadAttention:
    """A :class:`MultiHeadAttention` that computes what ``wrapper`` computes (in eval mode).

    Its W_Q stacks the heads' W_Q (head h owns output features h*d_head .. (h+1)*d_head - 1, the slice
    ``split_heads`` gives head h), likewise W_K and W_V; W_O is the identity, so the heads' outputs
    are only concatenated, as the wrapper does.
    """
    if not isinstance(wrapper, HeadsWrapper):
        raise TypeError(f"expected a HeadsWrapper, got {type(wrapper).__name__}")
    first = wrapper.heads[0]
    d_model, num_heads = first.d_model, len(wrapper.heads)
    mha = MultiHeadAttention(d_model, num_heads, bias=False).to(first.W_Q.weight)
    with torch.no_grad():
        for name in ("W_Q", "W_K", "W_V"):
            # nn.Linear keeps W^T, shape (out, in): the heads' output features are the rows, stacked.
            getattr(mha, name).weight.copy_(torch.cat([getattr(h, name).weight for h in wrapper.heads], dim=0))
        mha.W_O.weight.copy_(torch.eye(d_model))
    return mha
