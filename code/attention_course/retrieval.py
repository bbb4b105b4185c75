"""One attention head trained to retrieve a paired view, and its comparison with CCA.

The task: a batch holds B pairs (x_b, y_b). Each x_b is a query, every y_j in the batch is a
key, and the head must put its attention on the key that belongs to the query:

    x        (B, p)    queries' raw features
    y        (B, q)    keys' raw features (also the values, unless told otherwise)
    scores   (B, B)    s_bj = (x_b W_Q) . (y_j W_K) / sqrt(d_k) = x_b^T W y_j,  W = W_Q W_K^T / sqrt(d_k)
    weights  (B, B)    softmax over keys j; the loss is -log weights[b, b], averaged over b

With linear query and key maps the score is the bilinear form x^T W y with W (p, q) of rank at
most d_k; :func:`whitened_subspace_angles` compares W with CCA's canonical directions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .attention import scaled_dot_product_attention
from .cca import CCAResult, principal_angles, sqrt_psd
from .validate import check_matches_module, check_steps

__all__ = ["PlantedViews", "planted_views", "squared_views", "RetrievalHead", "retrieval_loss",
           "train_retrieval", "whitened_bilinear", "whitened_subspace_angles"]


# Data -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlantedViews:
    """Two views with known canonical correlations.

    x (n, p), y (n, q): the samples; correlations (min(p, q),): the population canonical
    correlations, strongest first; cov_xx (p, p), cov_yy (q, q), cov_xy (p, q): the population
    covariances.
    """

    x: np.ndarray
    y: np.ndarray
    correlations: np.ndarray
    cov_xx: np.ndarray
    cov_yy: np.ndarray
    cov_xy: np.ndarray

    @property
    def joint_cov(self) -> np.ndarray:
        """((p + q), (p + q)) covariance of the stacked vector (x, y)."""
        return np.block([[self.cov_xx, self.cov_xy], [self.cov_xy.T, self.cov_yy]])


def _random_mixing(rng: np.random.Generator, d: int) -> np.ndarray:
    """(d, d) random invertible matrix: a random rotation times scales in [1/e, e]."""
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    Q = Q * np.sign(np.diag(R))                    # Haar-distributed rotation
    return Q * np.exp(rng.uniform(-1.0, 1.0, size=d))


def planted_views(rng: np.random.Generator, n: int, correlations, x_dim: int, y_dim: int) -> PlantedViews:
    """n jointly Gaussian, zero-mean pairs whose canonical correlations are ``correlations``.

    In canonical coordinates xi (p,) and eta (q,) are standard normal with corr(xi_i, eta_i) =
    correlations[i] and every other pair uncorrelated; then x = L_x xi and y = L_y eta with random
    invertible L_x, L_y, so the raw features hide the structure. Missing correlations are 0.
    """
    rho = np.asarray(correlations, dtype=float)
    k = min(x_dim, y_dim)
    if rho.ndim != 1 or len(rho) > k:
        raise ValueError(f"correlations must be a 1-D sequence of at most min(x_dim, y_dim) = {k} values, "
                         f"got shape {rho.shape}")
    if ((rho < 0) | (rho >= 1)).any() or (np.diff(rho) > 0).any():
        raise ValueError(f"correlations must be non-increasing and lie in [0, 1), got {rho.tolist()}")
    if n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    rho = np.concatenate([rho, np.zeros(k - len(rho))])
    L_x, L_y = _random_mixing(rng, x_dim), _random_mixing(rng, y_dim)
    xi = rng.standard_normal((n, x_dim))
    eta = rng.standard_normal((n, y_dim))
    eta[:, :k] = rho * xi[:, :k] + np.sqrt(1 - rho**2) * eta[:, :k]
    P = np.zeros((x_dim, y_dim))
    P[np.arange(k), np.arange(k)] = rho
    return PlantedViews(xi @ L_x.T, eta @ L_y.T, rho, L_x @ L_x.T, L_y @ L_y.T, L_x @ P @ L_y.T)


def squared_views(rng: np.random.Generator, n: int, dim: int = 2, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(x (n, dim), y (n, dim)) with x standard normal and y = x**2 - 1 + noise * N(0, 1).

    y is almost a function of x, yet every x-feature is uncorrelated with every y-feature
    (E[x_i (x_j^2 - 1)] = 0 for a symmetric x): a relation that CCA cannot see.
    """
    if dim < 1 or not noise >= 0:
        raise ValueError(f"need dim >= 1 and noise >= 0, got dim={dim!r}, noise={noise!r}")
    x = rng.standard_normal((n, dim))
    return x, x**2 - 1 + noise * rng.standard_normal((n, dim))


# The head -------------------------------------------------------------------------------------

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
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)   # lr decays to 0
    g = torch.Generator().manual_seed(seed)
    history: dict[str, list] = {"loss": [], "accuracy": [], "step": [], "bilinear": []}

    def record(step: int) -> None:
        if record_every and (step % record_every == 0 or step == steps):
            history["step"].append(step)
            history["bilinear"].append(head.bilinear())

    record(0)
    for step in range(1, steps + 1):
        idx = torch.randperm(len(x_t), generator=g)[:batch_size]
        loss, acc = retrieval_loss(head, x_t[idx], y_t[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        history["loss"].append(loss.item())
        history["accuracy"].append(acc)
        record(step)
    return history


# Comparison with CCA --------------------------------------------------------------------------

def whitened_bilinear(W: np.ndarray, cov_xx: np.ndarray, cov_yy: np.ndarray) -> np.ndarray:
    """The map W (p, q) in whitened coordinates: x^T W y = u^T (C_xx^{1/2} W C_yy^{1/2}) v for
    u = C_xx^{-1/2} x, v = C_yy^{-1/2} y. Returns (p, q)."""
    W = np.asarray(W, dtype=float)
    if W.shape != (cov_xx.shape[0], cov_yy.shape[0]):
        raise ValueError(f"W must have shape (p, q) = ({cov_xx.shape[0]}, {cov_yy.shape[0]}), got {W.shape}")
    return sqrt_psd(cov_xx, "cov_xx") @ W @ sqrt_psd(cov_yy, "cov_yy")


def whitened_subspace_angles(W: np.ndarray, result: CCAResult, k: int) -> dict[str, np.ndarray]:
    """Principal angles in degrees, (k,) per side, between the top-k singular subspaces of W
    (p, q) in whitened coordinates and CCA's top-k canonical directions.

    Returns {"x": angles on the query side, "y": angles on the key side, "singular_values": all
    singular values of the whitened W, largest first}.
    """
    if not 1 <= k <= result.x_weights.shape[1]:
        raise ValueError(f"k must lie in [1, {result.x_weights.shape[1]}] (the CCA components), got {k}")
    U, s, Vt = np.linalg.svd(whitened_bilinear(W, result.cov_xx, result.cov_yy))
    return {"x": principal_angles(U[:, :k], result.x_directions[:, :k]),
            "y": principal_angles(Vt[:k].T, result.y_directions[:, :k]),
            "singular_values": s}
