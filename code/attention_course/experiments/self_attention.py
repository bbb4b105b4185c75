"""Chapter 3's measurements, shared by the lesson and its evidence page, so both run the same tested code.

* :func:`score_scale_statistics`: why attention divides by sqrt(d_k): the variance of q . k, the entropy
  of the weights and the gradient that reaches the scores, with and without the scale, for several d_k.
* :func:`gru_multiply_adds`, :func:`attention_multiply_adds`: the arithmetic of one layer per example.
* :func:`recurrence_vs_attention`: a GRU layer and a self-attention layer of one width side by side at
  several lengths: sequential steps, multiply-adds, the bytes of the T x T weights (measured on the
  tensor) and how strongly the last output depends on the first input (measured by autograd).
* :func:`left_padded_causal_mask`: a causal mask for a batch padded on the left, whose first queries
  see only padding: the honest example of a query with every key masked.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch

from ..analysis.cost import last_output_gradient_norms
from ..layers.attention import causal_mask
from ..layers.self_attention import SelfAttention
from ..repro import shifted_seed
from ..validate import positive_int

__all__ = ["score_scale_statistics", "gru_multiply_adds", "attention_multiply_adds", "recurrence_vs_attention",
           "left_padded_causal_mask"]


def _dims(name: str, values: Sequence[int]) -> list[int]:
    values = list(values)
    if not values:
        raise ValueError(f"{name} must name at least one size, got {values!r}")
    return [positive_int(name, v) for v in values]


def score_scale_statistics(dims: Sequence[int] = (4, 16, 64, 256, 1024), n_keys: int = 64, n_queries: int = 512,
                           seed: int = 0) -> dict[str, dict[tuple[str, int], float]]:
    """For each ``d_k`` in ``dims``: random queries and keys with N(0, 1) entries, in float64, scored
    unscaled (q . k) and scaled (q . k / sqrt(d_k)).

    Returns ``{"var": ..., "entropy": ..., "grad": ...}``, each keyed by ``(label, d_k)`` with label
    ``"unscaled"`` or ``"scaled"``: the variance of the scores, the mean entropy (nats) of a query's
    weights over ``n_keys`` keys, and the median over queries of ||dL/d scores|| for a loss in a fixed
    random direction of the output.
    """
    dims = _dims("dims", dims)
    n_keys, n_queries = positive_int("n_keys", n_keys), positive_int("n_queries", n_queries)
    gen = torch.Generator().manual_seed(seed)
    stats: dict[str, dict[tuple[str, int], float]] = {"var": {}, "entropy": {}, "grad": {}}
    for d_k in dims:
        q = torch.randn(n_queries, d_k, generator=gen, dtype=torch.float64)
        k = torch.randn(n_keys, d_k, generator=gen, dtype=torch.float64)
        v = torch.randn(n_keys, 16, generator=gen, dtype=torch.float64)
        upstream = torch.randn(n_queries, 16, generator=gen, dtype=torch.float64)   # a fixed direction of the loss
        raw = q @ k.T                                                              # (n_queries, n_keys)
        for label, scale in (("unscaled", 1.0), ("scaled", 1 / math.sqrt(d_k))):
            scores = (raw * scale).requires_grad_(True)
            w = torch.softmax(scores, dim=-1)
            ((w @ v) * upstream).sum().backward()
            stats["var"][label, d_k] = (raw * scale).var().item()
            stats["entropy"][label, d_k] = (-(w * torch.log(w.clamp_min(1e-300))).sum(-1).mean()).item()
            stats["grad"][label, d_k] = scores.grad.norm(dim=-1).median().item()    # a typical query
    return stats


def gru_multiply_adds(T: int, d: int) -> int:
    """Multiply-adds of one GRU layer of width ``d`` over ``T`` steps, one example: three gates, each an
    input and a hidden ``d x d`` product per step."""
    return 6 * positive_int("T", T) * positive_int("d", d) ** 2


def attention_multiply_adds(T: int, d: int) -> int:
    """Multiply-adds of one self-attention layer of width ``d`` over ``T`` positions, one example: three
    ``T x d x d`` projections, the ``T x T`` scores (``T * T * d``) and the weighted sum (``T * T * d``)."""
    T, d = positive_int("T", T), positive_int("d", d)
    return 3 * T * d * d + 2 * T * T * d


def recurrence_vs_attention(lengths: Sequence[int] = (8, 32, 128), d: int = 16, seed: int = 0) -> list[dict]:
    """A random GRU layer and a random :class:`SelfAttention` layer of width ``d`` (float64, seeded),
    compared at each length ``T`` on one random sequence. One dict per length:

    ``T``; ``steps_gru`` (T: h_t waits for h_{t-1}) and ``steps_attention`` (1: one round of matrix
    products); ``madds_gru``, ``madds_attention`` (multiply-adds per example); ``weight_bytes`` (the
    float32 ``T x T`` weights of one example, measured on the tensor the layer returns); and
    ``ratio_gru``, ``ratio_attention``: ||dy_T/dx_1|| / ||dy_T/dx_{T-1}||, how strongly the last output
    depends on the first input compared with the next-to-last one.
    """
    lengths = _dims("lengths", lengths)
    d = positive_int("d", d)
    torch.manual_seed(shifted_seed(seed))
    gru = torch.nn.GRU(d, d, batch_first=True).double()
    attention = SelfAttention(d).double()
    attention32 = copy.deepcopy(attention).float()                              # the same layer in float32
    rows = []
    for T in lengths:
        x = torch.randn(1, T, d, dtype=torch.float64)
        g = last_output_gradient_norms(lambda z: gru(z)[0], x)
        a = last_output_gradient_norms(lambda z: attention(z)[0], x)
        with torch.no_grad():
            _, weights = attention32(x.float())                                 # (1, T, T) float32
        rows.append({"T": T, "steps_gru": T, "steps_attention": 1,
                     "madds_gru": gru_multiply_adds(T, d), "madds_attention": attention_multiply_adds(T, d),
                     "weight_bytes": weights.element_size() * weights.nelement(),
                     "ratio_gru": (g[0] / g[-2]).item(), "ratio_attention": (a[0] / a[-2]).item()})
    return rows


def left_padded_causal_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(B, T, T) boolean, True = may attend: a causal mask combined with a key-padding mask for a batch
    padded on the *left* (row b's real tokens fill the last ``lengths[b]`` positions).

    Query i sees the real keys t <= i. A query in the left padding (i < T - lengths[b]) has no real key at
    or before it, so its row is all False: every key masked.
    """
    T = positive_int("T", T)
    if not isinstance(lengths, torch.Tensor) or lengths.dim() != 1 or lengths.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"lengths must be a 1-D integer tensor, got {getattr(lengths, 'shape', lengths)!r}")
    if ((lengths < 1) | (lengths > T)).any():
        raise ValueError(f"every length must be between 1 and T={T}, got {lengths.tolist()}")
    real = torch.arange(T)[None, :] >= (T - lengths)[:, None]                  # (B, T): True on real tokens
    return causal_mask(T)[None] & real[:, None, :]                              # (B, T, T)
