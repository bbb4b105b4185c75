"""One multi-head attention layer that has to answer with one query.

    vectors (B, T, p) --linear--> + marker embedding --> items (B, T, E)
    learned query (1, 1, E) --MultiHeadAttention(items)--> read (B, 1, E) --linear--> answer (B, slots, p)

The read-out is linear, so whatever the answer needs must already be in what attention read.
The parameter count does not depend on ``num_heads`` (the projections are E x E for any H), so
models with different numbers of heads compare at equal width and equal parameters.
"""

from __future__ import annotations

import torch
from torch import nn

from ..layers.multihead import MultiHeadAttention
from ..validate import check_float_tensor, check_token_ids, positive_int

__all__ = ["MarkedReader"]


class MarkedReader(nn.Module):
    """``forward(vectors (B, T, p), markers (B, T)) -> (answer (B, slots, p), weights (B, H, 1, T))``."""

    def __init__(self, dim: int, num_markers: int, slots: int, embed_dim: int = 32, num_heads: int = 1):
        super().__init__()
        self.dim, self.num_markers = positive_int("dim", dim), positive_int("num_markers", num_markers)
        self.slots = positive_int("slots", slots)
        self.item_in = nn.Linear(dim, embed_dim)
        self.marker_embed = nn.Embedding(num_markers, embed_dim)
        self.query = nn.Parameter(torch.randn(1, 1, embed_dim))
        self.attn = MultiHeadAttention(embed_dim, num_heads)
        self.out = nn.Linear(embed_dim, slots * dim)

    def forward(self, vectors: torch.Tensor, markers: torch.Tensor):
        check_float_tensor("vectors", vectors, min_dims=3)
        check_token_ids("markers", markers, self.num_markers, batch=vectors.shape[0])
        if vectors.dim() != 3 or vectors.shape[:2] != markers.shape or vectors.shape[2] != self.dim:
            raise ValueError(f"vectors must be (batch, T, dim={self.dim}) with markers (batch, T), got "
                             f"{tuple(vectors.shape)} and {tuple(markers.shape)}")
        items = self.item_in(vectors) + self.marker_embed(markers)  # (B, T, d_m)
        query = self.query.expand(vectors.shape[0], 1, -1)  # (B, 1, d_m): one query
        read, weights = self.attn(query, items, items)  # weights (B, n_h, 1, T)
        answer = self.out(read[:, 0])  # linear read-out of one (B, d_m) read
        return answer.view(-1, self.slots, self.dim), weights  # (B, slots, p)
