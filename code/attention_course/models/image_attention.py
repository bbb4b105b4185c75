"""A learned attention layer on small images whose scores depend on relative position only, and a
convolution with the same receptive field, as two classifiers of the same shape (Chapter 8).

Cordonnier, Loukas and Jaggi (2020) prove that multi-head self-attention *can* express a
convolution (see :mod:`attention_course.models.conv_attention`, where the scores are set by
hand) and, training with a quadratic relative encoding, watch where each head's attention
centre goes. This module repeats that second experiment at toy scale. Head h scores a key by
a Gaussian-shaped bump in the relative position delta = p_key - p_query, with a learned centre
Delta_h and a learned sharpness alpha_h > 0:

    x         (B, N, C_in)   N = H_img * W_img pixels
    scores    (heads, N, N)  score_h[q, k] = -alpha_h ||delta(q, k) - Delta_h||^2   (no content term)
    weights   (heads, N, N)  softmax over the keys k (the same for every image)
    out       (B, N, C_out)  sum_h weights_h @ (x W_V,h) + bias

The centres start at random, up to several pixels away; nothing in the parametrisation says that
near keys are better than far ones, so whether the heads end up local is a finding.
:class:`DigitClassifier` puts one such layer (or a K x K convolution) on the raw pixels, then a
ReLU and a global max pool, so a feature can only come from the pixels the layer mixes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..validate import check_matches_module

__all__ = ["DigitClassifier", "RelativePositionAttention", "local_fraction"]


def _grid(rows: int, cols: int) -> torch.Tensor:
    """(rows * cols, 2) integer coordinates, row-major."""
    return torch.stack(torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij"), -1).reshape(-1, 2)


class RelativePositionAttention(nn.Module):
    """Multi-head attention over the pixels of a ``grid`` (H_img, W_img) with learned quadratic
    relative-position scores and no content term. ``forward(x (B, N, C_in)) -> (B, N, C_out)``;
    :meth:`weights` returns the (heads, N, N) attention, the same for every image; ``centres``
    (heads, 2) are the Delta_h in pixels (row, column offsets)."""

    def __init__(self, grid: tuple[int, int], dim_in: int, dim_out: int, num_heads: int,
                 init_spread: float = 2.0, init_alpha: float = 0.5):
        super().__init__()
        if len(grid) != 2 or min(grid) < 1 or min(dim_in, dim_out, num_heads) < 1:
            raise ValueError(f"need a 2-D grid and positive sizes, got grid={grid}, dim_in={dim_in}, "
                             f"dim_out={dim_out}, num_heads={num_heads}")
        if not (init_spread >= 0 and init_alpha > 0):
            raise ValueError(f"need init_spread >= 0 and init_alpha > 0, got {init_spread}, {init_alpha}")
        self.grid, self.num_heads, self.dim_in = tuple(grid), num_heads, dim_in
        pos = _grid(*grid).float()
        self.register_buffer("delta", pos[None, :, :] - pos[:, None, :], persistent=False)   # (N, N, 2)
        self.centres = nn.Parameter(init_spread * torch.randn(num_heads, 2))                 # Delta_h
        self.raw_alpha = nn.Parameter(torch.full((num_heads,), float(torch.log(torch.expm1(torch.tensor(init_alpha))))))
        self.W_V = nn.Parameter(torch.randn(num_heads, dim_in, dim_out) / (num_heads * dim_in) ** 0.5)   # W_V,h
        self.bias = nn.Parameter(torch.zeros(dim_out))

    @property
    def alpha(self) -> torch.Tensor:
        """(heads,) the sharpness of each head, softplus of a free parameter (always > 0)."""
        return F.softplus(self.raw_alpha)

    def weights(self) -> torch.Tensor:
        """(heads, N, N): softmax over keys of -alpha_h ||delta - Delta_h||^2."""
        gap = self.delta[None] - self.centres[:, None, None, :]                 # (heads, N, N, 2)
        return torch.softmax(-self.alpha[:, None, None] * (gap ** 2).sum(-1), dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N = self.grid[0] * self.grid[1]
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or tuple(x.shape[1:]) != (N, self.dim_in):
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"x must have shape (batch, N={N}, C={self.dim_in}), got {got}")
        check_matches_module(self, x=x)
        B, H = x.shape[0], self.num_heads
        # sum_h weights_h @ (x W_V,h) = sum_h (weights_h @ x) W_V,h, cheaper when C_in < C_out; the
        # weights are the same for every image, so all images are mixed in one matrix product.
        keys = x.transpose(0, 1).reshape(N, B * self.dim_in)                    # (N, B * C_in)
        mixed = (self.weights().reshape(H * N, N) @ keys).reshape(H, N, B, self.dim_in)   # (heads, N, B, C_in)
        return torch.einsum("hnbc,hco->bno", mixed, self.W_V) + self.bias       # (B, N, C_out)


def local_fraction(weights: torch.Tensor, grid: tuple[int, int], radius: int = 1) -> torch.Tensor:
    """(heads,) each head's attention mass on keys within ``radius`` pixels of the query in both
    coordinates (the (2 radius + 1)^2 neighbourhood, the query included), averaged over all queries.

    weights (heads, N, N) over an H_img x W_img ``grid``. Uniform attention gives about
    (2 radius + 1)^2 / N (less at the borders)."""
    pos = _grid(*grid)
    if weights.dim() != 3 or tuple(weights.shape[1:]) != (len(pos), len(pos)):
        raise ValueError(f"weights must have shape (heads, {len(pos)}, {len(pos)}), got {tuple(weights.shape)}")
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    near = ((pos[None, :, :] - pos[:, None, :]).abs().amax(-1) <= radius).to(weights)    # (N, N)
    return (weights * near).sum(-1).mean(-1)


class DigitClassifier(nn.Module):
    """raw pixels -> one mixing layer (1 -> C channels) -> ReLU -> max over pixels -> 10 logits.

    ``mixer="attention"``: :class:`RelativePositionAttention` with ``num_heads`` heads;
    ``mixer="conv"``: a ``kernel`` x ``kernel`` convolution with zero padding, the receptive field of
    ``kernel**2`` heads that each look at one offset. ``forward(images (B, H_img, W_img)) -> (B, 10)``.
    """

    def __init__(self, mixer: str, grid: tuple[int, int] = (8, 8), channels: int = 16, num_heads: int = 9,
                 kernel: int = 3, classes: int = 10):
        super().__init__()
        if mixer not in ("attention", "conv"):
            raise ValueError(f"mixer must be 'attention' or 'conv', got {mixer!r}")
        self.mixer, self.grid = mixer, tuple(grid)
        if mixer == "attention":
            self.mix = RelativePositionAttention(grid, 1, channels, num_heads)
        else:
            self.mix = nn.Conv2d(1, channels, kernel, padding=kernel // 2)
        self.readout = nn.Linear(channels, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if not isinstance(images, torch.Tensor) or images.dim() != 3 or tuple(images.shape[1:]) != self.grid:
            got = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
            raise ValueError(f"images must have shape (batch, {self.grid[0]}, {self.grid[1]}), got {got}")
        B = images.shape[0]
        if self.mixer == "attention":
            h = self.mix(images.reshape(B, -1, 1))                              # (B, N, C)
        else:
            h = self.mix(images[:, None]).flatten(2).transpose(1, 2)            # (B, N, C)
        return self.readout(F.relu(h).amax(1))                                  # (B, 10): max over pixels
