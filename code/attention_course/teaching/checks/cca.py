"""Self-checks for Chapter 5, attention and canonical correlation analysis."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...analysis.cca import cca, cca_from_covariances, principal_angles, sqrt_psd
from ...tasks.views import planted_views
from ._base import FLOAT32_EPS, CheckFailed, as_float, call, ok

__all__ = ["check_canonical_correlations", "check_principal_angles", "check_pmi_cross_matrix"]


def _as_vector(got, n: int, what: str) -> np.ndarray:
    got = as_float(got, what).numpy()
    if got.shape != (n,):
        raise CheckFailed(f"expected {what} of shape ({n},), got shape {got.shape}")
    return got


# Tolerances for answers computed in float32 as well as float64. Canonical correlations lie in [0, 1]
# and these views are well conditioned (cond < 25): float32 gets within 1e-6. Angles come from arccos,
# which near 0 degrees turns a float32 rounding of the cosine into ~1e-4 degrees.
CORRELATION_TOL = 1e-5
ANGLE_TOL = 1e-3      # degrees


# Exercise 5.1: CCA from whitening and one SVD --------------------------------------------------

def _views():
    v = planted_views(np.random.default_rng(21), 400, [0.8, 0.5, 0.2], 5, 4)
    return v.x + 3.0, v.y - 2.0                      # non-zero means: centring matters


def check_canonical_correlations(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
    """``fn(X (n, p), Y (n, q)) -> (min(p, q),)`` canonical correlations, largest first."""
    X, Y = _views()
    want = cca(X, Y).correlations
    got = _as_vector(call(fn, X.copy(), Y.copy()), len(want), "the canonical correlations")
    if np.allclose(got, want, rtol=0, atol=CORRELATION_TOL):
        ok(f"the canonical correlations are {np.round(want, 3).tolist()}.")
        return
    if np.allclose(got, want[::-1], rtol=0, atol=CORRELATION_TOL):
        raise CheckFailed("the values are right but in ascending order; list the strongest pair first")
    if np.allclose(got, want**2, rtol=0, atol=CORRELATION_TOL):
        raise CheckFailed("these are the squared correlations (eigenvalues of C_xx^-1 C_xy C_yy^-1 C_yx); "
                          "take square roots, or use the singular values of the whitened cross-covariance")
    n = len(X)
    uncentred = cca_from_covariances(X.T @ X / (n - 1), Y.T @ Y / (n - 1), X.T @ Y / (n - 1))[0]
    if np.allclose(got, uncentred, atol=1e-4):
        raise CheckFailed("you did not centre X and Y: subtract each column's mean before forming covariances")
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    cross = np.linalg.svd(Xc.T @ Yc / (n - 1), compute_uv=False)[:len(want)]
    sx, sy = Xc.std(0, ddof=1), Yc.std(0, ddof=1)
    standardised = np.linalg.svd((Xc / sx).T @ (Yc / sy) / (n - 1), compute_uv=False)[:len(want)]
    if np.allclose(got, cross, rtol=1e-3) or np.allclose(got, cross * (n - 1) / n, rtol=1e-3):
        raise CheckFailed("these are singular values of the raw cross-covariance C_xy; whiten both views first "
                          "(C_xx^-1/2 C_xy C_yy^-1/2)")
    if np.allclose(got, standardised, rtol=1e-3):
        raise CheckFailed("you scaled each feature to unit variance but did not whiten: correlated features "
                          "still need C_xx^-1/2 and C_yy^-1/2, not just 1/std")
    if (got > 1 + 1e-9).any() or (got < -1e-9).any():
        raise CheckFailed(f"canonical correlations lie in [0, 1], got {np.round(got, 4).tolist()}")
    raise CheckFailed(f"got {np.round(got, 6).tolist()}, expected {np.round(want, 6).tolist()}")


# Exercise 5.2: principal angles ----------------------------------------------------------------

def check_principal_angles(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
    """``fn(A (d, k), B (d, k)) -> (k,)`` principal angles in degrees, smallest first."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((7, 3)) * np.array([1.0, 4.0, 0.3])
    B = A @ rng.standard_normal((3, 3)) + 0.4 * rng.standard_normal((7, 3))
    want = principal_angles(A, B)
    got = _as_vector(call(fn, A.copy(), B.copy()), 3, "the principal angles")
    if np.allclose(got, want, rtol=0, atol=ANGLE_TOL):
        # The span, not the basis, decides the angles: a basis change of A must not change them.
        A2 = A @ np.array([[2.0, 1, 0], [0, 1, 0], [0, 3, -1]])
        again = _as_vector(call(fn, A2, B.copy()), 3, "the angles")
        if not np.allclose(again, want, rtol=0, atol=ANGLE_TOL):
            raise CheckFailed("your angles change when A's columns are replaced by other columns with the same "
                              "span; orthonormalise both bases (np.linalg.qr) before the SVD")
        ok(f"the angles are {np.round(want, 2).tolist()} degrees; they depend only on the two spans.")
        return
    if np.allclose(np.degrees(got), want, rtol=0, atol=ANGLE_TOL):
        raise CheckFailed("these look like radians; return degrees (np.degrees)")
    if np.allclose(got, want[::-1], rtol=0, atol=ANGLE_TOL):
        raise CheckFailed("the values are right but the order is not: smallest angle first")
    raw = np.degrees(np.arccos(np.clip(np.linalg.svd(A.T @ B, compute_uv=False), -1, 1)))
    if np.allclose(got, raw, atol=1e-3):
        raise CheckFailed("the singular values of A^T B are cosines only when A and B have orthonormal columns; "
                          "orthonormalise both (np.linalg.qr) first")
    raise CheckFailed(f"got {np.round(got, 5).tolist()}, expected {np.round(want, 5).tolist()} (degrees)")


# Exercise 5.3: the cross term of the Gaussian PMI ----------------------------------------------

def check_pmi_cross_matrix(fn: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """``fn(cov ((p+q), (p+q)), p) -> A (p, q)`` with PMI(x, y) = x^T A y + (terms in x alone or y alone)."""
    v = planted_views(np.random.default_rng(8), 1, [0.85, 0.4], 3, 2)
    cov, p = v.joint_cov, 3
    precision = np.linalg.inv(cov)
    want = -precision[:p, p:]
    got = as_float(call(fn, cov.copy(), p), "A").numpy()
    if got.shape != want.shape:
        raise CheckFailed(f"expected A of shape (p, q) = {want.shape}, got {got.shape}")
    # Inverting in float32 loses about cond(cov) float32 roundings of the largest entry.
    tol = 8 * np.linalg.cond(cov) * FLOAT32_EPS * np.abs(want).max()

    def near(a, b) -> bool:
        return bool(np.abs(a - b).max() <= tol)

    if near(got, want):
        Wx, Wy = sqrt_psd(v.cov_xx), sqrt_psd(v.cov_yy)
        s = np.linalg.svd(Wx @ got @ Wy, compute_uv=False)
        rho = cca_from_covariances(v.cov_xx, v.cov_yy, v.cov_xy)[0]
        ok(f"in whitened coordinates A has singular values {np.round(s, 3).tolist()} = rho / (1 - rho^2) for "
           f"rho = {np.round(rho, 3).tolist()}.")
        return
    if near(got, -want):
        raise CheckFailed("wrong sign: PMI = -1/2 z^T Lambda z + ..., so the cross term is -x^T Lambda_xy y")
    if near(got, want / 2) or near(got, -want / 2):
        raise CheckFailed("off by a factor of 2: the off-diagonal blocks appear twice in z^T Lambda z "
                          "(x^T Lambda_xy y and y^T Lambda_yx x)")
    if near(got, cov[:p, p:]) or near(got, -cov[:p, p:]):
        raise CheckFailed("that is the cross-covariance block C_xy; the cross term comes from the precision "
                          "matrix, the inverse of the whole joint covariance")
    if near(got, -np.linalg.pinv(cov[:p, p:]).T) or near(got, np.linalg.pinv(cov[:p, p:]).T):
        raise CheckFailed("invert the whole joint covariance, then take its (x, y) block; inverting the block "
                          "alone is not the same")
    raise CheckFailed(f"A is not the expected matrix: largest error {np.abs(got - want).max():.3g} "
                      f"(allowed {tol:.2g})")
