"""Score functions: how well a query matches each key (Luong et al. 2015; Bahdanau et al. 2015).

Each ``forward(query (B, T, H), keys (B, S, H)) -> scores (B, T, S)``; a softmax over S turns
the scores into attention weights.
"""

from __future__ import annotations

import torch
from torch import nn

from ..validate import check_choice

__all__ = ["Score", "DotScore", "GeneralScore", "AdditiveScore", "make_score"]


class Score(nn.Module):
    """``forward(query (B, T, H), keys (B, S, H)) = compare(query, project_keys(keys))``.

    ``project_keys`` is the part of a score that depends on the keys alone; it is the same for every
    query, so a decoder that asks one query per step computes it once per source and calls
    ``compare`` at each step (Bahdanau et al. 2015, Appendix A.1.2: "U_a h_j can be pre-computed").
    """

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return keys                                                     # (B, S, H): nothing to precompute

    def compare(self, query: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return self.compare(query, self.project_keys(keys))


class DotScore(Score):
    """s(q, k) = q . k. ``forward(query (B, T, H), keys (B, S, H)) -> (B, T, S)``."""

    def compare(self, query: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        return query @ projected.transpose(-2, -1)                      # (B, T, S)


class GeneralScore(DotScore):
    """s(q, k) = q^T W k, a learned bilinear form (Luong et al. 2015, "general"): the dot score of q and W k."""

    def __init__(self, hidden_dim: int):
        super().__init__()
        self.W = nn.Linear(hidden_dim, hidden_dim, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return self.W(keys)                                             # (B, S, H)


class AdditiveScore(Score):
    """s(q, k) = v^T tanh(W_q q + W_k k), a one-hidden-layer network (Bahdanau et al. 2015)."""

    def __init__(self, hidden_dim: int, attn_dim: int | None = None):
        super().__init__()
        attn_dim = attn_dim or hidden_dim
        self.W_q = nn.Linear(hidden_dim, attn_dim, bias=False)
        self.W_k = nn.Linear(hidden_dim, attn_dim)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return self.W_k(keys)                                           # (B, S, A)

    def compare(self, query: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.W_q(query)[:, :, None, :] + projected[:, None, :, :])   # (B, T, S, A)
        return self.v(hidden).squeeze(-1)                                                # (B, T, S)


_SCORES = {"dot": DotScore, "general": GeneralScore, "additive": AdditiveScore}


def make_score(name: str, hidden_dim: int) -> Score:
    """One of ``"dot"``, ``"general"``, ``"additive"``."""
    check_choice("score", name, _SCORES)
    return DotScore() if name == "dot" else _SCORES[name](hidden_dim)
