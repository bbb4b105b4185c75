"""Self-attention and cross-attention: learned projections around scaled dot-product attention.

Self-attention reads one sequence ``x`` (B, T, d_model) and asks it about itself:

    Q = x W_Q   (B, T, d_k)      K = x W_K   (B, T, d_k)      V = x W_V   (B, T, d_v)
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    output (B, T, d_v), weights (B, T, T): row i says how much position i draws from each t

Cross-attention (encoder-decoder attention) takes its queries from one sequence and its keys
and values from another: Q = x W_Q from the decoder, K = memory W_K and V = memory W_V from
the encoder, so the weights are (B, T_q, T_k). Both layers are single-head and have no output
projection; Chapter 4 splits them into heads. The attention itself is the package's
:func:`attention_course.layers.attention.scaled_dot_product_attention`, not a copy of it.
"""

from __future__ import annotations

import torch
from torch import nn

from ..validate import check_dropout, check_matches_module
from .attention import scaled_dot_product_attention

__all__ = ["SelfAttention", "CrossAttention"]


def _check_sequence(name: str, x: torch.Tensor, features: int, layer: nn.Module) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 3 or x.shape[-1] != features:
        raise ValueError(f"{name} must have shape (batch, T, {features}), got {tuple(x.shape)}")
    check_matches_module(layer, **{name: x})


def _check_size(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


class SelfAttention(nn.Module):
    """One sequence attends to itself: ``forward(x (B, T, d_model), mask=None)`` returns
    ``(output (B, T, d_v), weights (B, T, T))``.

    ``mask`` is boolean, True = may attend, broadcastable to (B, T, T): ``causal_mask(T)`` for a
    decoder, ``padding_mask(lengths, T)`` for padded batches, or both combined with ``&``.
    ``dropout`` is the probability of dropping an attention weight in training mode (off in eval mode).
    """

    def __init__(self, d_model: int, d_k: int | None = None, d_v: int | None = None, bias: bool = False,
                 dropout: float = 0.0):
        super().__init__()
        d_k = d_model if d_k is None else d_k
        d_v = d_model if d_v is None else d_v
        for name, size in (("d_model", d_model), ("d_k", d_k), ("d_v", d_v)):
            _check_size(name, size)
        self.d_model, self.dropout = d_model, check_dropout("dropout", dropout)
        self.W_Q = nn.Linear(d_model, d_k, bias=bias)    # x (.., d_model) -> Q (.., d_k)
        self.W_K = nn.Linear(d_model, d_k, bias=bias)    # x (.., d_model) -> K (.., d_k)
        self.W_V = nn.Linear(d_model, d_v, bias=bias)    # x (.., d_model) -> V (.., d_v)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        _check_sequence("x", x, self.d_model, self)
        q = self.W_Q(x)                                    # (B, T, d_k)  one query per position
        k = self.W_K(x)                                    # (B, T, d_k)  one key per position
        v = self.W_V(x)                                    # (B, T, d_v)  one value per position
        return scaled_dot_product_attention(q, k, v, mask, dropout_p=self.dropout if self.training else 0.0)


class CrossAttention(nn.Module):
    """Queries from ``x`` (B, T_q, d_query), keys and values from ``memory`` (B, T_k, d_memory).

    ``forward(x, memory, mask=None)`` returns ``(output (B, T_q, d_v), weights (B, T_q, T_k))``.
    ``mask`` is boolean, True = may attend, broadcastable to (B, T_q, T_k); for padded memory use
    :func:`attention_course.layers.attention.padding_mask`.
    """

    def __init__(self, d_query: int, d_memory: int, d_k: int | None = None, d_v: int | None = None,
                 bias: bool = False):
        super().__init__()
        d_k = d_query if d_k is None else d_k
        d_v = d_memory if d_v is None else d_v
        for name, size in (("d_query", d_query), ("d_memory", d_memory), ("d_k", d_k), ("d_v", d_v)):
            _check_size(name, size)
        self.d_query, self.d_memory = d_query, d_memory
        self.W_Q = nn.Linear(d_query, d_k, bias=bias)    # x      (.., d_query)  -> Q (.., d_k)
        self.W_K = nn.Linear(d_memory, d_k, bias=bias)   # memory (.., d_memory) -> K (.., d_k)
        self.W_V = nn.Linear(d_memory, d_v, bias=bias)   # memory (.., d_memory) -> V (.., d_v)

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        self._check(x, memory)
        q = self.W_Q(x)                                    # (B, T_q, d_k)
        k = self.W_K(memory)                               # (B, T_k, d_k)
        v = self.W_V(memory)                               # (B, T_k, d_v)
        return scaled_dot_product_attention(q, k, v, mask)

    def _check(self, x: torch.Tensor, memory: torch.Tensor) -> None:
        _check_sequence("x (the queries' sequence)", x, self.d_query, self)
        _check_sequence("memory (the keys' and values' sequence)", memory, self.d_memory, self)
        if x.shape[0] != memory.shape[0]:
            raise ValueError(f"x and memory must share the batch size, got x {tuple(x.shape)} "
                             f"and memory {tuple(memory.shape)}")
