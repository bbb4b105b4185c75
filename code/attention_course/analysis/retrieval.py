"""How a trained retrieval head relates to CCA: its bilinear form in whitened coordinates and the
angles between its subspaces and the canonical directions."""

from __future__ import annotations

import numpy as np

from .cca import CCAResult, principal_angles, sqrt_psd

__all__ = ["whitened_bilinear", "whitened_subspace_angles"]


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
