"""Canonical correlation analysis (CCA) in numpy, and principal angles between subspaces.

Two views of the same n samples, one row per sample:

    X   (n, p)    first view
    Y   (n, q)    second view

CCA asks for weight vectors a (p,) and b (q,) that maximise corr(X a, Y b), then for further
pairs that are uncorrelated with the earlier ones (Hotelling, 1936). With the covariances
C_xx (p, p), C_yy (q, q) and C_xy (p, q) the answer is one SVD:

    M = C_xx^{-1/2} C_xy C_yy^{-1/2} = U diag(rho) V^T
    a_i = C_xx^{-1/2} u_i,   b_i = C_yy^{-1/2} v_i,   corr(X a_i, Y b_i) = rho_i

``U`` and ``V`` are the canonical *directions in whitened coordinates* (u = C_xx^{-1/2} x);
the weights ``a_i``, ``b_i`` are the same directions expressed for the raw features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CCAResult", "cca", "cca_from_covariances", "inverse_sqrt_psd", "sqrt_psd", "principal_angles"]


def _as_real(A, name: str, dims: int = 2) -> np.ndarray:
    """``A`` as a float array with ``dims`` dims; complex or non-numeric data is a TypeError, not a
    silent cast (numpy would drop the imaginary part)."""
    A = np.asarray(A)
    if np.iscomplexobj(A):
        raise TypeError(f"{name} must be real, got complex values (dtype {A.dtype}); CCA here is defined for "
                        f"real data")
    if A.dtype == bool or not (np.issubdtype(A.dtype, np.floating) or np.issubdtype(A.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {A.dtype}")
    if A.ndim != dims:
        raise ValueError(f"{name} must be {dims}-D, got shape {A.shape}")
    return A.astype(float)


def _check_symmetric(C: np.ndarray, name: str) -> None:
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {C.shape}")
    if not np.isfinite(C).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    scale = max(np.abs(C).max(), np.finfo(C.dtype).tiny)
    if np.abs(C - C.T).max() > 1e-8 * scale:
        i, j = np.unravel_index(np.abs(C - C.T).argmax(), C.shape)
        raise ValueError(f"{name} ({C.shape[0]}x{C.shape[1]}) is not symmetric: entry ({i}, {j}) is {C[i, j]:.6g} "
                         f"but ({j}, {i}) is {C[j, i]:.6g}; a covariance matrix is symmetric")


def _eigh_psd(C: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of a symmetric positive-definite matrix, or a ValueError saying why not."""
    C = _as_real(C, name)
    _check_symmetric(C, name)
    evals, evecs = np.linalg.eigh(C)
    tol = max(C.shape) * np.finfo(C.dtype).eps * max(abs(evals[-1]), np.finfo(C.dtype).tiny)
    if evals[0] <= tol:
        rank = int((evals > tol).sum())
        raise ValueError(f"{name} ({C.shape[0]}x{C.shape[1]}) is rank-deficient (numerical rank {rank}): "
                         f"some combination of features is constant or a copy of others, so it cannot be "
                         f"whitened. Remove those features or use reg > 0 (ridge-regularised CCA)")
    return evals, evecs


def inverse_sqrt_psd(C: np.ndarray, name: str = "covariance") -> np.ndarray:
    """C^{-1/2} (d, d) of a symmetric positive-definite C (d, d): the whitening matrix."""
    evals, evecs = _eigh_psd(C, name)
    return (evecs / np.sqrt(evals)) @ evecs.T


def sqrt_psd(C: np.ndarray, name: str = "covariance") -> np.ndarray:
    """C^{1/2} (d, d) of a symmetric positive-definite C (d, d): maps whitened back to raw."""
    evals, evecs = _eigh_psd(C, name)
    return (evecs * np.sqrt(evals)) @ evecs.T


@dataclass(frozen=True)
class CCAResult:
    """The canonical pairs, strongest first.

    correlations (k,)    rho_1 >= ... >= rho_k >= 0
    x_weights    (p, k)  column i is a_i; X_centred @ a_i has unit variance
    y_weights    (q, k)  column i is b_i; Y_centred @ b_i has unit variance
    x_mean (p,), y_mean (q,), cov_xx (p, p), cov_yy (q, q): the statistics used (cov_* include reg)
    """

    correlations: np.ndarray
    x_weights: np.ndarray
    y_weights: np.ndarray
    x_mean: np.ndarray
    y_mean: np.ndarray
    cov_xx: np.ndarray
    cov_yy: np.ndarray

    @property
    def x_directions(self) -> np.ndarray:
        """(p, k) canonical directions in whitened x-coordinates: orthonormal columns u_i."""
        return sqrt_psd(self.cov_xx, "cov_xx") @ self.x_weights

    @property
    def y_directions(self) -> np.ndarray:
        """(q, k) canonical directions in whitened y-coordinates: orthonormal columns v_i."""
        return sqrt_psd(self.cov_yy, "cov_yy") @ self.y_weights

    def transform(self, X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Canonical variates: ((X - x_mean) @ x_weights (n, k), (Y - y_mean) @ y_weights (m, k))."""
        X, Y = np.asarray(X), np.asarray(Y)
        for name, Z, w in (("X", X, self.x_weights), ("Y", Y, self.y_weights)):
            if Z.ndim != 2 or Z.shape[1] != w.shape[0]:
                raise ValueError(f"{name} must have shape (n, {w.shape[0]}), got {Z.shape}")
        X, Y = _as_real(X, "X"), _as_real(Y, "Y")
        return (X - self.x_mean) @ self.x_weights, (Y - self.y_mean) @ self.y_weights


def _fix_signs(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flip each weight pair (a_i, b_i) together so that the entry of largest magnitude in the
    stacked column [a_i; b_i] is positive. The rule treats both views alike, so swapping X and Y
    swaps the weights exactly (barring an exact tie between entries)."""
    stacked = np.vstack([A, B])
    k = stacked.shape[1]
    signs = np.sign(stacked[np.abs(stacked).argmax(0), np.arange(k)])
    signs[signs == 0] = 1.0
    return A * signs, B * signs


def cca_from_covariances(cov_xx: np.ndarray, cov_yy: np.ndarray, cov_xy: np.ndarray,
                         n_components: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(correlations (k,), x_weights (p, k), y_weights (q, k)) from C_xx (p, p), C_yy (q, q), C_xy (p, q).

    The covariances may be sample or population ones; k defaults to min(p, q).
    """
    cov_xx, cov_yy, cov_xy = (_as_real(C, name) for C, name in ((cov_xx, "cov_xx"), (cov_yy, "cov_yy"),
                                                               (cov_xy, "cov_xy")))
    p, q = cov_xy.shape
    if cov_xx.shape != (p, p) or cov_yy.shape != (q, q):
        raise ValueError(f"covariance shapes do not fit together: cov_xx {cov_xx.shape}, cov_yy {cov_yy.shape}, "
                         f"cov_xy {cov_xy.shape} (expected (p, p), (q, q), (p, q))")
    k = min(p, q) if n_components is None else n_components
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= min(p, q):
        raise ValueError(f"n_components must be an int in [1, min(p, q) = {min(p, q)}], got {n_components!r}")
    wx = inverse_sqrt_psd(cov_xx, "the covariance of X")
    wy = inverse_sqrt_psd(cov_yy, "the covariance of Y")
    U, rho, Vt = np.linalg.svd(wx @ cov_xy @ wy)             # whitened cross-covariance
    a, b = _fix_signs(wx @ U[:, :k], wy @ Vt[:k].T)
    return rho[:k], a, b


def cca(X: np.ndarray, Y: np.ndarray, n_components: int | None = None, reg: float = 0.0) -> CCAResult:
    """Canonical correlation analysis of X (n, p) and Y (n, q), rows paired.

    ``reg`` >= 0 is added to the diagonal of both covariances (ridge CCA); use it when a
    covariance is singular, for example with fewer rows than features. Returns a
    :class:`CCAResult` with k = ``n_components`` (default min(p, q)) pairs, strongest first.
    """
    X, Y = np.asarray(X), np.asarray(Y)
    if X.ndim != 2 or Y.ndim != 2:
        raise ValueError(f"X and Y must be 2-D (n, features), got shapes {X.shape} and {Y.shape}")
    X, Y = _as_real(X, "X"), _as_real(Y, "Y")
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must have the same number of rows (one per paired sample), "
                         f"got X {X.shape} and Y {Y.shape}")
    if not np.isfinite(X).all() or not np.isfinite(Y).all():
        raise ValueError("X and Y must be finite (no NaN or inf)")
    if not reg >= 0:
        raise ValueError(f"reg must be >= 0, got {reg!r}")
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"need at least 2 rows to estimate covariances, got {n}")
    if reg == 0:
        for name, Z in (("X", X), ("Y", Y)):
            if n <= Z.shape[1]:
                raise ValueError(f"{name} has {n} rows but {Z.shape[1]} features: after centring its "
                                 f"covariance has rank at most {n - 1} < {Z.shape[1]}, so it cannot be "
                                 f"whitened. Use more rows than features, or reg > 0")
    x_mean, y_mean = X.mean(0), Y.mean(0)
    Xc, Yc = X - x_mean, Y - y_mean
    cov_xx = Xc.T @ Xc / (n - 1) + reg * np.eye(X.shape[1])
    cov_yy = Yc.T @ Yc / (n - 1) + reg * np.eye(Y.shape[1])
    cov_xy = Xc.T @ Yc / (n - 1)
    rho, a, b = cca_from_covariances(cov_xx, cov_yy, cov_xy, n_components)
    return CCAResult(rho, a, b, x_mean, y_mean, cov_xx, cov_yy)


def _orthonormal_basis(A: np.ndarray, name: str) -> np.ndarray:
    A = np.asarray(A)
    if A.ndim == 2:
        A = _as_real(A, name)
    if A.ndim != 2 or A.shape[1] == 0 or A.shape[1] > A.shape[0]:
        raise ValueError(f"{name} must be a (d, k) matrix with 1 <= k <= d, got shape {A.shape}")
    Q, R = np.linalg.qr(A)
    diag = np.abs(np.diag(R))
    if diag.min() <= A.shape[0] * np.finfo(float).eps * max(diag.max(), np.finfo(float).tiny):
        raise ValueError(f"the columns of {name} {A.shape} are linearly dependent: they do not span "
                         f"a {A.shape[1]}-dimensional subspace")
    return Q


def principal_angles(A: np.ndarray, B: np.ndarray, degrees: bool = True) -> np.ndarray:
    """Principal angles (min(k_a, k_b),), smallest first, between the column spans of A (d, k_a)
    and B (d, k_b).

    Cosines are the singular values of Qa^T Qb (Qa, Qb orthonormal bases); small angles are
    taken from the sines instead, which keeps them accurate (Knyazev and Argentati, 2002).
    """
    Qa, Qb = _orthonormal_basis(A, "A"), _orthonormal_basis(B, "B")
    if Qa.shape[0] != Qb.shape[0]:
        raise ValueError(f"A and B must live in the same space (same number of rows), got {np.shape(A)} "
                         f"and {np.shape(B)}")
    if Qa.shape[1] < Qb.shape[1]:
        Qa, Qb = Qb, Qa                                        # Qa spans the larger subspace
    cosines = np.linalg.svd(Qa.T @ Qb, compute_uv=False)       # descending: smallest angle first
    sines = np.linalg.svd(Qb - Qa @ (Qa.T @ Qb), compute_uv=False)[::-1]   # ascending
    angles = np.where(cosines**2 < 0.5, np.arccos(np.clip(cosines, -1, 1)), np.arcsin(np.clip(sines, -1, 1)))
    return np.degrees(angles) if degrees else angles
