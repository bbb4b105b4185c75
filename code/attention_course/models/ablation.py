"""Ablating attention: run a trained model with its attention weights replaced, values untouched.

Reading attention weights says where a model reads, not whether that reading matters (Chapter 7).
An ablation asks the second question: keep every trained parameter, replace the weights of one
attention layer by other weights over the same values, and measure how much worse the model gets.

    uniform_weights(w)          every key gets 1 / T_k: the layer becomes a mean of its values
    shuffled_weights(w, g)      each query's weights permuted at random over the keys: the same
                                distribution of weights, put on other keys
    mix_values(mha, w, value)   MultiHeadAttention's output for given weights w (B, heads, T_q, T_k)

A model that supports ablation holds the replacement in its ``weights_transform`` attribute
(None = its own weights); :func:`replaced_weights` sets it for the duration of a ``with`` block.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from ..layers.multihead import MultiHeadAttention, merge_heads, split_heads

__all__ = ["mix_values", "replaced_weights", "shuffled_weights", "uniform_weights"]


def mix_values(attention: MultiHeadAttention, weights: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """The output of ``attention`` for value (B, T_k, E) if its weights were ``weights`` (B, heads, T_q, T_k):
    W_O(concat_h(weights_h @ (value W_V)_h)), shape (B, T_q, E)."""
    if weights.dim() != 4 or weights.shape[1] != attention.num_heads or weights.shape[-1] != value.shape[1]:
        raise ValueError(f"weights must have shape (batch, heads={attention.num_heads}, T_q, T_k={value.shape[1]}), "
                         f"got {tuple(weights.shape)}")
    v = split_heads(attention.W_V(value), attention.num_heads)      # (B, heads, T_k, d_head)
    return attention.W_O(merge_heads(weights @ v))                  # (B, T_q, E)


def uniform_weights(weights: torch.Tensor) -> torch.Tensor:
    """Weights of the same shape, 1 / T_k on every key."""
    return torch.full_like(weights, 1.0 / weights.shape[-1])


def shuffled_weights(weights: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Each query's row of weights permuted at random over its keys (one permutation per row)."""
    noise = torch.rand(weights.shape, generator=generator).to(weights.device)
    return weights.gather(-1, noise.argsort(-1))


@contextmanager
def replaced_weights(module: nn.Module, transform: Callable[[torch.Tensor], torch.Tensor]) -> Iterator[nn.Module]:
    """``with replaced_weights(model, uniform_weights): ...`` runs ``module`` with its attention weights
    passed through ``transform``; the module's own weights come back afterwards, even on an error."""
    if not hasattr(module, "weights_transform"):
        raise TypeError(f"{type(module).__name__} has no weights_transform: it does not support ablation")
    if not callable(transform):
        raise TypeError(f"transform must be callable (weights -> weights), got {type(transform).__name__}")
    before = module.weights_transform
    module.weights_transform = transform
    try:
        yield module
    finally:
        module.weights_transform = before
