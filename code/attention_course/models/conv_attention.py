"""Self-attention that computes a convolution: the construction of Cordonnier, Loukas and Jaggi (2020).

A convolution with a K x K kernel adds up K^2 linear maps of the input, one per kernel
offset Delta (a shift of the pixel grid): out[p] = sum_Delta W[Delta] x[p + Delta] + b.
Multi-head self-attention adds up its heads. Their Theorem 1 makes the two match: give each
head one offset Delta_h, let the head's attention score depend only on *where* the key is
relative to the query, and make it peak at the key p + Delta_h:

    delta          = p_key - p_query                          (relative position, D numbers)
    r_delta        = (||delta||^2, delta_1, ..., delta_D)      (relative encoding, D + 1 numbers)
    v_h            = -alpha (1, -2 Delta_h)                     (the head's positional query)
    score_h(q, k)  = v_h . r_delta = -alpha (||delta - Delta_h||^2 - ||Delta_h||^2)

The score is a downward parabola centred on delta = Delta_h; the constant ||Delta_h||^2 is the
same for every key, and a softmax ignores it. As the sharpness alpha grows, head h's softmax
puts all its weight on the key p + Delta_h: the head *selects* one shifted pixel. Its value map
is the kernel's slice W[Delta_h] (C_in -> C_out), and summing the heads (an output projection
made of stacked identity matrices) gives the convolution. The weight a head leaks to the
nearest other keys is about exp(-alpha) each, so the error falls exponentially in alpha.

For a 2-D image the encoding has D + 1 = 3 numbers, the dimension the theorem asks for; K^2
heads give a K x K kernel. A 1-D sequence needs 2 numbers and K heads.

Zero padding: the keys are the input padded with K // 2 zeros on every side (the queries are
the original positions), so the key p + Delta always exists and a padded key's value is 0,
exactly like ``conv1d`` / ``conv2d`` with ``padding=K // 2``.

Shapes, with D spatial dimensions (1 or 2), N_q = number of positions, N_k = number of padded
positions, n_h = K^D heads:

    x        (B, C_in, *spatial)            the input, as torch's conv layers take it
    weight   (C_out, C_in, K[, K])          torch's conv weight layout; K odd
    offsets  (n_h, D)                       Delta_h, in the order of the flattened kernel
    scores   (n_h, N_q, N_k)                one positional score matrix per head
    weights  (n_h, N_q, N_k)                softmax of the scores (the same for every batch item)
    output   (B, C_out, *spatial)
"""

from __future__ import annotations

import itertools
import math
import numbers

import torch
import torch.nn.functional as F

from ..layers.attention import masked_softmax

__all__ = ["kernel_offsets", "grid_positions", "relative_encoding", "positional_queries",
           "quadratic_scores", "conv_as_attention"]


def kernel_offsets(kernel_size: int, dims: int, device: torch.device | str | None = None) -> torch.Tensor:
    """(kernel_size**dims, dims) integer offsets Delta of a centred kernel, row-major.

    Row h is the offset of the kernel entry ``weight[..., i, j]`` with ``h = i * K + j`` (2-D) or
    ``weight[..., i]`` with ``h = i`` (1-D): Delta = (i - K // 2, j - K // 2). That is the order
    in which ``weight.flatten(2)`` lists the kernel, and the order in which torch's conv layers
    (a cross-correlation) pair ``weight[..., i]`` with the input at ``p + i - K // 2``.
    """
    if not isinstance(kernel_size, int) or kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be a positive odd int (a centred kernel), got {kernel_size!r}")
    if dims not in (1, 2):
        raise ValueError(f"dims must be 1 or 2, got {dims!r}")
    half = kernel_size // 2
    rows = list(itertools.product(range(-half, half + 1), repeat=dims))
    return torch.tensor(rows, dtype=torch.long, device=device)


def grid_positions(shape: tuple[int, ...], start: int = 0, device: torch.device | str | None = None) -> torch.Tensor:
    """(prod(shape), len(shape)) integer coordinates of a grid, row-major, from ``start``.

    ``grid_positions((2, 3))`` lists (0, 0), (0, 1), (0, 2), (1, 0), ...: the order in which
    ``x.flatten(2)`` lists the pixels of an image x (B, C, 2, 3).
    """
    if not shape or any(not isinstance(n, int) or n < 1 for n in shape):
        raise ValueError(f"shape must be a non-empty tuple of positive ints, got {shape!r}")
    axes = [torch.arange(start, start + n, device=device) for n in shape]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(-1, len(shape))


def relative_encoding(query_positions: torch.Tensor, key_positions: torch.Tensor,
                      dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """r_delta (N_q, N_k, D + 1) = (||delta||^2, delta) for delta = key position - query position.

    ``query_positions`` (N_q, D) and ``key_positions`` (N_k, D) are coordinates on one grid.
    """
    for name, p in (("query_positions", query_positions), ("key_positions", key_positions)):
        if not isinstance(p, torch.Tensor) or p.dim() != 2:
            got = tuple(p.shape) if isinstance(p, torch.Tensor) else type(p).__name__
            raise ValueError(f"{name} must be a (N, D) tensor of coordinates, got {got}")
    if query_positions.shape[1] != key_positions.shape[1]:
        raise ValueError(f"query and key positions must have the same number of coordinates D, got "
                         f"{tuple(query_positions.shape)} and {tuple(key_positions.shape)}")
    delta = (key_positions[None, :, :] - query_positions[:, None, :]).to(dtype)   # (N_q, N_k, D)
    return torch.cat([(delta**2).sum(-1, keepdim=True), delta], dim=-1)            # (N_q, N_k, D + 1)


def positional_queries(offsets: torch.Tensor, alpha: float, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """v_h (n_h, D + 1) = -alpha (1, -2 Delta_h): head h's score peaks at the relative position Delta_h."""
    if not isinstance(offsets, torch.Tensor) or offsets.dim() != 2:
        got = tuple(offsets.shape) if isinstance(offsets, torch.Tensor) else type(offsets).__name__
        raise ValueError(f"offsets must be a (heads, D) tensor, got {got}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha < math.inf:
        raise ValueError(f"alpha (the sharpness) must be a positive finite number, got {alpha!r}")
    ones = torch.ones(offsets.shape[0], 1, dtype=dtype, device=offsets.device)
    return -alpha * torch.cat([ones, -2 * offsets.to(dtype)], dim=-1)


def quadratic_scores(query_positions: torch.Tensor, key_positions: torch.Tensor, offsets: torch.Tensor,
                     alpha: float, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(n_h, N_q, N_k) scores v_h . r_delta = -alpha (||delta - Delta_h||^2 - ||Delta_h||^2)."""
    r = relative_encoding(query_positions, key_positions, dtype)       # (N_q, N_k, D + 1)
    v = positional_queries(offsets, alpha, dtype)                       # (n_h, D + 1)
    if v.shape[1] != r.shape[2]:
        raise ValueError(f"offsets have D={offsets.shape[1]} coordinates but positions have D={r.shape[2] - 1}")
    scores = torch.einsum("hc,qkc->hqk", v, r)
    if (scores.isnan() | scores.isposinf()).any():                      # -inf is fine: weight 0
        raise ValueError(f"alpha={alpha!r} is too large for {dtype}: the scores overflow (inf - inf = NaN); "
                         f"use a smaller alpha or float64")
    return scores


def conv_as_attention(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None, *,
                      alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Multi-head self-attention with one head per kernel offset; approaches ``conv{1,2}d(x, weight, bias,
    padding=K // 2)`` as ``alpha`` grows.

    ``x`` (B, C_in, L) or (B, C_in, rows, cols); ``weight`` (C_out, C_in, K) or (C_out, C_in, K, K), K odd;
    ``bias`` (C_out,) or None. Returns ``(output, weights)``: output shaped like the convolution's,
    weights (K^D, N_q, N_k) with N_q the number of positions and N_k that of the padded positions.
    Computed in ``x``'s dtype.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() not in (3, 4):
        got = f"shape {tuple(x.shape)}, dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a floating-point (B, C_in, L) or (B, C_in, rows, cols) tensor, got {got}")
    dims = x.dim() - 2
    if not isinstance(weight, torch.Tensor) or weight.dim() != dims + 2:
        got = tuple(weight.shape) if isinstance(weight, torch.Tensor) else type(weight).__name__
        raise ValueError(f"for a {dims}-D input {tuple(x.shape)} weight must be (C_out, C_in{', K' * dims}), got {got}")
    K = weight.shape[-1]
    if weight.shape[1] != x.shape[1] or set(weight.shape[2:]) != {K} or K % 2 == 0:
        raise ValueError(f"weight {tuple(weight.shape)} must be (C_out, C_in={x.shape[1]}{', K' * dims}) with one "
                         f"odd kernel size K")
    if weight.dtype != x.dtype:
        raise TypeError(f"x and weight must share one dtype, got {x.dtype} and {weight.dtype}")
    C_out = weight.shape[0]
    if bias is not None and (not isinstance(bias, torch.Tensor) or bias.shape != (C_out,)):
        got = tuple(bias.shape) if isinstance(bias, torch.Tensor) else type(bias).__name__
        raise ValueError(f"bias must be None or a (C_out={C_out},) tensor, got {got}")

    B, spatial, half = x.shape[0], tuple(x.shape[2:]), K // 2
    x_pad = F.pad(x, (half, half) * dims)                                  # zeros around every side
    keys = x_pad.flatten(2).transpose(1, 2)                                # (B, N_k, C_in) one row per padded position
    query_pos = grid_positions(spatial, device=x.device)                   # (N_q, D)
    key_pos = grid_positions(tuple(x_pad.shape[2:]), start=-half, device=x.device)  # (N_k, D), same coordinates
    offsets = kernel_offsets(K, dims, device=x.device)                     # (n_h, D)
    scores = quadratic_scores(query_pos, key_pos, offsets, alpha, x.dtype)  # (n_h, N_q, N_k)
    weights = masked_softmax(scores)                                       # (n_h, N_q, N_k)
    W_heads = weight.flatten(2).permute(2, 1, 0)                           # (n_h, C_in, C_out): value map W[Delta_h]
    values = keys[:, None] @ W_heads                                       # (B, n_h, N_k, C_out)
    out = (weights @ values).sum(1)                                        # (B, N_q, C_out): heads summed
    if bias is not None:
        out = out + bias
    return out.transpose(1, 2).reshape(B, C_out, *spatial), weights
