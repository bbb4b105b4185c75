"""How a trained retrieval head relates to CCA: its bilinear form in whitened coordinates and the
angles between its subspaces and the canonical directions."""

from __future__ import annotations

import numpy as np

from .cca import CCAResult, principal_angles, sqrt_psd

__all__ = ["gaussian_pmi_terms", "matched_direction_angles", "whitened_bilinear", "whitened_subspace_angles"]


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


def matched_direction_angles(W: np.ndarray, result: CCAResult, k: int) -> dict[str, np.ndarray]:
    """Angles in degrees between each of the top-k singular directions of W (p, q) in whitened
    coordinates and each of CCA's top-k canonical directions, one pair of lines at a time.

    Returns {"x": (k, k) on the query side, "y": (k, k) on the key side, "singular_values": (k,)},
    where entry [i, j] is the angle between learned direction i and canonical direction j (a line
    has no sign, so the angles lie in [0, 90]). The diagonal holds the matched pairs; a learned
    direction is matched to its own canonical direction when its row is smallest on the diagonal.
    Unlike subspace angles, these notice directions that rotate among themselves inside the top-k
    span, or come out in another order.
    """
    if not 1 <= k <= result.x_weights.shape[1]:
        raise ValueError(f"k must lie in [1, {result.x_weights.shape[1]}] (the CCA components), got {k}")
    U, s, Vt = np.linalg.svd(whitened_bilinear(W, result.cov_xx, result.cov_yy))
    learned = {"x": U[:, :k], "y": Vt[:k].T}
    canonical = {"x": result.x_directions[:, :k], "y": result.y_directions[:, :k]}
    angles = {side: np.array([[principal_angles(learned[side][:, [i]], canonical[side][:, [j]])[0]
                               for j in range(k)] for i in range(k)]) for side in ("x", "y")}
    return {**angles, "singular_values": s[:k]}


def gaussian_pmi_terms(joint_cov: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The matrices of the PMI of a zero-mean Gaussian vector (x, y), x of p features:
    PMI(x, y) = const + x^T Gamma y - x^T F x / 2 - y^T G y / 2.

    joint_cov ((p + q), (p + q)) is the covariance of (x, y). Returns (Gamma (p, q), F (p, p), G (q, q)).
    """
    joint_cov = np.asarray(joint_cov, dtype=float)
    if joint_cov.ndim != 2 or joint_cov.shape[0] != joint_cov.shape[1] or not 1 <= p < joint_cov.shape[0]:
        raise ValueError(f"joint_cov must be square, (p + q, p + q), with 1 <= p < p + q; got shape "
                         f"{joint_cov.shape} and p = {p}")
    precision = np.linalg.inv(joint_cov)
    Gamma = -precision[:p, p:]
    F = precision[:p, :p] - np.linalg.inv(joint_cov[:p, :p])
    G = precision[p:, p:] - np.linalg.inv(joint_cov[p:, p:])
    return Gamma, F, G
