"""Two views of the same hidden variables, with planted canonical correlations (for CCA and retrieval)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PlantedViews", "planted_views", "resample_views", "squared_views"]


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


def resample_views(views: PlantedViews, rng: np.random.Generator, n: int) -> PlantedViews:
    """n fresh pairs from the population of ``views`` (same covariances and canonical correlations).

    The pairs are drawn from N(0, joint_cov), so a new seed gives a new sample of the same problem:
    what changes from seed to seed is only the finite-sample error.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    p = views.cov_xx.shape[0]
    z = rng.standard_normal((int(n), p + views.cov_yy.shape[0])) @ np.linalg.cholesky(views.joint_cov).T
    return PlantedViews(z[:, :p], z[:, p:], views.correlations, views.cov_xx, views.cov_yy, views.cov_xy)


def squared_views(rng: np.random.Generator, n: int, dim: int = 2, noise: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """(x (n, dim), y (n, dim)) with x standard normal and y = x**2 - 1 + noise * N(0, 1).

    y is almost a function of x, yet every x-feature is uncorrelated with every y-feature
    (E[x_i (x_j^2 - 1)] = 0 for a symmetric x): a relation that CCA cannot see.
    """
    if dim < 1 or not noise >= 0:
        raise ValueError(f"need dim >= 1 and noise >= 0, got dim={dim!r}, noise={noise!r}")
    x = rng.standard_normal((n, dim))
    return x, x**2 - 1 + noise * rng.standard_normal((n, dim))
