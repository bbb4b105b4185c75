"""One attention head trained to retrieve a paired view, and its comparison with CCA.

The task: a batch holds B pairs (x_b, y_b). Each x_b is a query, every y_j in the batch is a
key, and the head must put its attention on the key that belongs to the query:

    x        (B, p)    queries' raw features
    y        (B, q)    keys' raw features (also the values, unless told otherwise)
    scores   (B, B)    s_bj = (x_b W_Q) . (y_j W_K) / sqrt(d_k) = x_b^T W y_j,  W = W_Q W_K^T / sqrt(d_k)
    weights  (B, B)    softmax over keys j; the loss is -log weights[b, b], averaged over b

With linear query and key maps the score is the bilinear form x^T W y with W (p, q) of rank at
most d_k; :func:`~attention_course.analysis.retrieval.whitened_subspace_angles` compares W with CCA's
canonical directions.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..layers.attention import scaled_dot_product_attention
from ..repro import shifted_seed
from ..train import fit
from ..validate import check_matches_module, check_steps

__all__ = ["RetrievalHead", "retrieval_loss", "train_retrieval"]


class RetrievalHead(nn.Module):
    """One attention head: queries from x, keys from y, scaled dot-product scores.

    ``hidden=0``: linear maps, q = x W_Q (B, d_k) and k = y W_K (B, d_k), so the score is the
    bilinear form x^T W y (see :meth:`bilinear`). ``hidden>0``: each side first goes through its
    own small tanh network of that width, so the score can depend on x and y non-linearly.
    """

    def __init__(self, x_dim: int, y_dim: int, d_k: int, hidden: int = 0):
        super().__init__()
        if min(x_dim, y_dim, d_k) < 1 or hidden < 0:
            raise ValueError(f"need positive x_dim, y_dim, d_k and hidden >= 0, got {x_dim}, {y_dim}, {d_k}, "
                             f"{hidden}")
        self.hidden, self.x_dim, self.y_dim = hidden, x_dim, y_dim
        self.x_features = nn.Sequential(nn.Linear(x_dim, hidden), nn.Tanh()) if hidden else nn.Identity()
        self.y_features = nn.Sequential(nn.Linear(y_dim, hidden), nn.Tanh()) if hidden else nn.Identity()
        self.W_Q = nn.Linear(hidden or x_dim, d_k, bias=False)
        self.W_K = nn.Linear(hidden or y_dim, d_k, bias=False)

    def forward(self, x: torch.Tensor, y: torch.Tensor,
                value: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """x (..., B, p) queries, y (..., B_k, q) keys, value (..., B_k, d_v) (default: y itself).
        Returns (output (..., B, d_v), weights (..., B, B_k))."""
        self._check(x, y, value)
        query = self.W_Q(self.x_features(x))                  # (..., B, d_k)
        key = self.W_K(self.y_features(y))                    # (..., B_k, d_k)
        return scaled_dot_product_attention(query, key, y if value is None else value)

    def _check(self, x: torch.Tensor, y: torch.Tensor, value: torch.Tensor | None) -> None:
        for name, t, dim in (("x", x, self.x_dim), ("y", y, self.y_dim)):
            if not isinstance(t, torch.Tensor) or t.dim() < 2 or t.shape[-1] != dim:
                got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must have shape (..., B, {dim}), got {got}")
        check_matches_module(self, x=x, y=y, value=value)

    def bilinear(self) -> np.ndarray:
        """W = W_Q W_K^T / sqrt(d_k), shape (p, q): score(x, y) = x^T W y. Linear heads only."""
        if self.hidden:
            raise ValueError("a head with hidden features has no single bilinear matrix")
        d_k = self.W_Q.out_features
        # nn.Linear stores weight (d_k, in) and computes x @ weight.T, so W_Q = W_Q.weight.T.
        W = self.W_Q.weight.T @ self.W_K.weight / math.sqrt(d_k)
        return W.detach().double().cpu().numpy()


def retrieval_loss(head: RetrievalHead, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Cross-entropy of the softmax over a batch's keys on the true pair (query b <-> key b), and
    the fraction of queries whose largest weight is on their own key.

    x (..., B, p), y (..., B, q): any leading dimensions hold independent batches of B pairs.
    """
    if x.shape[:-1] != y.shape[:-1] or x.dim() < 2:
        raise ValueError(f"x and y must hold the same number of pairs, (..., B, p) and (..., B, q), got "
                         f"{tuple(x.shape)} and {tuple(y.shape)}")
    _, weights = head(x, y)                                   # (..., B, B)
    # float64 keeps the true pair's weight far from underflow, so its log is finite.
    loss = -weights.diagonal(dim1=-2, dim2=-1).log().mean()
    accuracy = (weights.argmax(-1) == torch.arange(x.shape[-2], device=weights.device)).double().mean().item()
    return loss, accuracy


def train_retrieval(head: RetrievalHead, x: np.ndarray, y: np.ndarray, steps: int, batch_size: int = 128,
                    lr: float = 0.02, seed: int = 0, record_every: int = 0) -> dict[str, list]:
    """Adam on :func:`retrieval_loss`, each step on ``batch_size`` pairs drawn from x (n, p), y (n, q),
    with the learning rate decaying from ``lr`` to 0 along a cosine.

    The head is trained in float64. Returns the history: ``loss`` and ``accuracy`` per step, and
    if ``record_every`` > 0 (linear heads) ``step`` and ``bilinear`` (W (p, q)) every that many
    steps, including step 0 (before training) and the last step.
    """
    steps, device = check_steps(steps), next(head.parameters()).device
    x_t = torch.as_tensor(np.asarray(x, dtype=float), device=device)
    y_t = torch.as_tensor(np.asarray(y, dtype=float), device=device)
    if x_t.dim() != 2 or y_t.dim() != 2 or len(x_t) != len(y_t):
        raise ValueError(f"x and y must be (n, p) and (n, q) with the same n, got {tuple(x_t.shape)} and "
                         f"{tuple(y_t.shape)}")
    if not 2 <= batch_size <= len(x_t):
        raise ValueError(f"batch_size must lie in [2, n = {len(x_t)}], got {batch_size}")
    head.double()
    g = torch.Generator().manual_seed(shifted_seed(seed))
    history: dict[str, list] = {"loss": [], "accuracy": [], "step": [], "bilinear": []}

    def record(step: int) -> None:
        if record_every and (step % record_every == 0 or step == steps):
            history["step"].append(step)
            history["bilinear"].append(head.bilinear())

    def batch_loss() -> torch.Tensor:
        idx = torch.randperm(len(x_t), generator=g)[:batch_size]
        loss, acc = retrieval_loss(head, x_t[idx], y_t[idx])
        history["accuracy"].append(acc)
        return loss

    record(0)
    history["loss"] = fit(head, batch_loss, steps, lr, decay="cosine", callback=record, every=1)["loss"]
    return history
