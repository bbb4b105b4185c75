"""Set Transformer (Lee et al., 2019): attention blocks for inputs that are sets, not sequences.

A set has no order, so a model of a set must not depend on the order in which its elements
are listed. Attention without positional encodings has that property built in: permuting the
keys and values permutes the terms of a sum, and permuting the queries permutes the output
rows. The paper builds everything from one block,

    MAB(X, Y) = LayerNorm(A + rFF(A)),   A = LayerNorm(X + MultiHead(X, Y, Y))

(queries from X, keys and values from Y; rFF is a feed-forward net applied to each row), and
three uses of it:

    SAB(X)      = MAB(X, X)                         self-attention among the elements, O(n^2)
    ISAB_m(X)   = MAB(X, MAB(I, X))                 via m learned inducing points I, O(n m)
    PMA_k(Z)    = MAB(S, rFF(Z))                    k learned seed vectors S pool the set to k rows

SAB and ISAB are permutation-*equivariant* (permute the input rows, the output rows follow);
PMA is permutation-*invariant* (the output does not change). A stack of SAB/ISAB layers then
PMA is a permutation-invariant function of the set.

Shapes: a batch of sets is (B, n, d), one row per element; ``mask`` (B, n) boolean marks the
real elements (True) of sets padded to a common n. The attention is the package's
:class:`~attention_course.layers.multihead.MultiHeadAttention`.

The models at the end (``SetTransformerModel`` and the DeepSets-style baselines ``PooledSetModel``
that pool with mean, sum or max) are the paper's first experiment, at small scale: the task is in
:mod:`attention_course.tasks.sets`, the training in :mod:`attention_course.experiments.sets`.
"""

from __future__ import annotations

import torch
from torch import nn

from ..layers.multihead import MultiHeadAttention
from ..validate import check_matches_module
from .ablation import mix_values

__all__ = ["MAB", "SAB", "ISAB", "PMA", "PooledSetModel", "SetTransformerModel"]


def _check_set(x: torch.Tensor, dim: int, name: str = "x", module: nn.Module | None = None) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != dim:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a batch of sets (batch, n, dim={dim}), got {got}")
    if module is not None:
        check_matches_module(module, **{name: x})


def _zero_padding(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """x (B, n, d) with the rows that ``mask`` (B, n) marks as padding set to 0: a select, so that
    whatever padding holds (NaN, inf) cannot reach a real element's output."""
    return x if mask is None else x.masked_fill(~mask[..., None], 0.0)


def _check_mask(mask: torch.Tensor | None, x: torch.Tensor) -> None:
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != x.shape[:2]:
        got = f"{tuple(mask.shape)} {mask.dtype}" if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise ValueError(f"mask must be a boolean (batch, n) = {tuple(x.shape[:2])} tensor marking real "
                         f"elements with True, got {got}")


class MAB(nn.Module):
    """Multihead attention block: ``forward(X (B, n, d), Y (B, m, d), mask (B, m) | None) -> (B, n, d)``.

    Queries come from X, keys and values from Y; ``mask`` hides padded rows of Y. The attention
    weights of the last call, (B, heads, n, m), are kept in ``last_weights`` for inspection.
    """

    def __init__(self, dim: int, num_heads: int, ff_hidden: int | None = None, layer_norm: bool = True):
        super().__init__()
        self.dim = dim
        self.attention = MultiHeadAttention(dim, num_heads)
        hidden = ff_hidden or 2 * dim
        self.rff = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.norm1 = nn.LayerNorm(dim) if layer_norm else nn.Identity()
        self.norm2 = nn.LayerNorm(dim) if layer_norm else nn.Identity()
        self.last_weights: torch.Tensor | None = None
        self.weights_transform = None          # ablations: replaces the weights (see models.ablation)

    def forward(self, X: torch.Tensor, Y: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_set(X, self.dim, "X", self)
        _check_set(Y, self.dim, "Y", self)
        _check_mask(mask, Y)
        key_mask = None if mask is None else mask[:, None, :]           # (B, 1, m): same for every query
        attended, weights = self.attention(X, Y, Y, key_mask)          # (B, n, d), (B, heads, n, m)
        if self.weights_transform is not None:                         # ablation: other weights, same values
            if mask is not None:
                raise ValueError("an ablation replaces the weights of unpadded sets only: pass mask=None")
            weights = self.weights_transform(weights)
            attended = mix_values(self.attention, weights, Y)
        self.last_weights = weights.detach()
        A = self.norm1(X + attended)                                    # (B, n, d)
        return self.norm2(A + self.rff(A))


class SAB(nn.Module):
    """Set attention block, MAB(X, X): ``forward(X (B, n, d), mask) -> (B, n, d)``, equivariant."""

    def __init__(self, dim: int, num_heads: int, layer_norm: bool = True):
        super().__init__()
        self.mab = MAB(dim, num_heads, layer_norm=layer_norm)

    def forward(self, X: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_set(X, self.mab.dim, "X", self)
        _check_mask(mask, X)
        X = _zero_padding(X, mask)                                 # padded rows: queries of zeros
        return self.mab(X, X, mask)


class ISAB(nn.Module):
    """Induced set attention block: ``forward(X (B, n, d), mask) -> (B, n, d)``, equivariant.

    The m inducing points I (m, d) attend to the set (m x n scores), then the set attends to
    the m results (n x m scores): 2 n m scores instead of SAB's n^2.
    """

    def __init__(self, dim: int, num_heads: int, num_inducing: int, layer_norm: bool = True):
        super().__init__()
        if not isinstance(num_inducing, int) or num_inducing < 1:
            raise ValueError(f"num_inducing must be a positive int, got {num_inducing!r}")
        self.inducing = nn.Parameter(torch.randn(1, num_inducing, dim) / dim**0.5)   # I (1, m, d)
        self.mab_in = MAB(dim, num_heads, layer_norm=layer_norm)
        self.mab_out = MAB(dim, num_heads, layer_norm=layer_norm)

    def forward(self, X: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_set(X, self.inducing.shape[-1], "X", self)
        _check_mask(mask, X)
        X = _zero_padding(X, mask)                                            # padded rows: queries of zeros
        summary = self.mab_in(self.inducing.expand(X.shape[0], -1, -1), X, mask)   # (B, m, d)
        return self.mab_out(X, summary)                                        # (B, n, d)


class PMA(nn.Module):
    """Pooling by multihead attention: ``forward(Z (B, n, d), mask) -> (B, k, d)``, invariant.

    k learned seed vectors S (k, d) are the queries; the set, after a row-wise feed-forward
    net, gives the keys and values.
    """

    def __init__(self, dim: int, num_heads: int, num_seeds: int = 1, layer_norm: bool = True):
        super().__init__()
        if not isinstance(num_seeds, int) or num_seeds < 1:
            raise ValueError(f"num_seeds must be a positive int, got {num_seeds!r}")
        self.seeds = nn.Parameter(torch.randn(1, num_seeds, dim) / dim**0.5)        # S (1, k, d)
        self.rff = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.mab = MAB(dim, num_heads, layer_norm=layer_norm)

    def forward(self, Z: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_set(Z, self.seeds.shape[-1], "Z", self)
        return self.mab(self.seeds.expand(Z.shape[0], -1, -1), self.rff(Z), mask)


def _pool(h: torch.Tensor, mask: torch.Tensor | None, how: str) -> torch.Tensor:
    """(B, n, d) -> (B, d) by mean, sum or max over the real elements."""
    if mask is not None:
        m = mask[..., None]                                        # (B, n, 1)
        if how == "max":                                           # the max of an empty set is taken as 0
            return torch.where(m.any(1), h.masked_fill(~m, float("-inf")).amax(1), 0.0)
        h = h.masked_fill(~m, 0.0)                                 # a select: padding adds exactly 0
        return h.sum(1) if how == "sum" else h.sum(1) / m.sum(1).clamp(min=1)
    return {"mean": h.mean, "sum": h.sum, "max": h.amax}[how](1)


class PooledSetModel(nn.Module):
    """DeepSets-style baseline: a row-wise encoder, a fixed pooling (mean, sum or max), a decoder.

    ``forward(x (B, n, 1), mask (B, n) | None) -> (B,)``.
    """

    def __init__(self, pool: str, dim: int = 64):
        super().__init__()
        if pool not in ("mean", "sum", "max"):
            raise ValueError(f"pool must be 'mean', 'sum' or 'max', got {pool!r}")
        self.pool = pool
        self.encoder = nn.Sequential(nn.Linear(1, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(),
                                     nn.Linear(dim, dim))
        self.decoder = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, 1))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_set(x, 1, "x", self)
        _check_mask(mask, x)
        return self.decoder(_pool(self.encoder(x), mask, self.pool)).squeeze(-1)


class SetTransformerModel(nn.Module):
    """Embedding, ``num_blocks`` SABs, PMA with one seed, a linear read-out.

    ``layer_norm`` defaults to False, as in the authors' public max-regression demo; the paper's
    equations (and :class:`MAB`'s default) include it.

    ``forward(x (B, n, 1), mask (B, n) | None) -> (B,)``.
    """

    def __init__(self, dim: int = 32, num_heads: int = 4, num_blocks: int = 1, layer_norm: bool = False):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(1, dim), nn.ReLU(), nn.Linear(dim, dim))   # row-wise, like rFF
        self.blocks = nn.ModuleList(SAB(dim, num_heads, layer_norm) for _ in range(num_blocks))
        self.pool = PMA(dim, num_heads, num_seeds=1, layer_norm=layer_norm)
        self.readout = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        _check_set(x, 1, "x", self)
        _check_mask(mask, x)
        h = self.embed(_zero_padding(x, mask))
        for block in self.blocks:
            h = block(h, mask)
        return self.readout(self.pool(h, mask))[:, 0, 0]          # one seed, one number: (B,)
