"""Self-checks for Chapter 6, attention and canonical correlation analysis."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from ...analysis.cca import cca, cca_from_covariances, principal_angles
from ...tasks.views import planted_views
from ._base import FLOAT32_EPS, CheckFailed, as_float, as_number, call, ok

__all__ = ["check_canonical_correlations", "check_principal_angles", "check_pmi_cross_matrix",
           "check_correlation_score", "check_blind_spot", "check_competition"]


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


# Exercise ex-cca-scratch: canonical correlations, by any whitening ------------------------------------

def _views():
    v = planted_views(np.random.default_rng(21), 400, [0.8, 0.5, 0.2], 5, 4)
    return v.x + 3.0, v.y - 2.0                      # non-zero means: centring matters


def check_canonical_correlations(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
    """``fn(X (n, p), Y (n, q)) -> (min(p, q),)`` canonical correlations, largest first."""
    X, Y = _views()
    want = cca(X, Y).correlations
    got = _as_vector(call(fn, X.copy(), Y.copy()), len(want), "the canonical correlations")
    if np.allclose(got, want, rtol=0, atol=CORRELATION_TOL):
        ok("your canonical correlations match the package's cca, strongest pair first.")
        return
    if np.allclose(got, want[::-1], rtol=0, atol=CORRELATION_TOL):
        raise CheckFailed("the values are right but in ascending order; list the strongest pair first")
    angles = np.arccos(np.clip(want, -1.0, 1.0))
    if np.allclose(got, np.degrees(angles), atol=1e-3) or np.allclose(got, angles, atol=1e-5):
        raise CheckFailed("these are the principal angles themselves; the canonical correlations are their "
                          "cosines (np.cos of the angles in radians)")
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


# Exercise ex-principal-angles: principal angles --------------------------------------------------

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
        ok("your angles match the package's principal_angles and depend only on the two spans, not on their "
           "bases.")
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


# Exercise ex-pmi-cross: the cross term of the Gaussian PMI ----------------------------------------

def check_pmi_cross_matrix(fn: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """``fn(cov ((p+q), (p+q)), p) -> Gamma (p, q)`` with PMI(x, y) = x^T Gamma y + (terms in x alone or y alone)."""
    v = planted_views(np.random.default_rng(8), 1, [0.85, 0.4], 3, 2)
    cov, p = v.joint_cov, 3
    precision = np.linalg.inv(cov)
    want = -precision[:p, p:]
    got = as_float(call(fn, cov.copy(), p), "the cross-term matrix").numpy()
    if got.shape != want.shape:
        raise CheckFailed(f"expected the cross-term matrix of shape (p, q) = {want.shape}, got {got.shape}")
    # Inverting in float32 loses about cond(cov) float32 roundings of the largest entry.
    tol = 8 * np.linalg.cond(cov) * FLOAT32_EPS * np.abs(want).max()

    def near(a, b) -> bool:
        return bool(np.abs(a - b).max() <= tol)

    if near(got, want):
        ok("your matrix gives the cross term of the Gaussian PMI.")
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
    raise CheckFailed(f"that is not the cross-term matrix: largest error {np.abs(got - want).max():.3g} "
                      f"(allowed {tol:.2g})")


# Exercise ex-corr-score: a correlation written as a bilinear score ---------------------------------------

def _score_case(seed: int):
    rng = np.random.default_rng(seed)
    v = planted_views(rng, 300, [0.7, 0.3], 4, 3)
    X, Y = v.x @ rng.standard_normal((4, 4)) + 5.0, v.y + np.array([-3.0, 1.0, 2.0])   # correlated, not centred
    a, b = rng.standard_normal(4) * 3, rng.standard_normal(3) / 2
    return X, Y, a, b


def _scores_of(score, X, Y) -> np.ndarray:
    got = as_float(call(score, X.copy(), Y.copy()), "the scores").numpy()
    if got.shape != (len(X),):
        raise CheckFailed(f"score(x (m, p), y (m, q)) must return one score per pair, shape ({len(X)},), got "
                          f"shape {got.shape}")
    return got


def _is_bilinear(score, mx: np.ndarray, my: np.ndarray, rng: np.random.Generator) -> bool:
    """Whether f(u, v) = score(mx + u, my + v) is linear in u and in v, on a few random directions."""
    u, u2, w = rng.standard_normal((5, len(mx))), rng.standard_normal((5, len(mx))), rng.standard_normal((5, len(my)))

    def f(du, dv):
        return _scores_of(score, mx + du, my + dv)
    tol = 1e-6 * max(1.0, float(np.abs(f(u, w)).max()))
    return (np.allclose(f(2 * u, w), 2 * f(u, w), atol=tol) and np.allclose(f(u + u2, w), f(u, w) + f(u2, w), atol=tol)
            and np.allclose(f(u, -w), -f(u, w), atol=tol))


def check_correlation_score(fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], Callable]) -> None:
    """``fn(X (n, p), Y (n, q), a (p,), b (q,)) -> score`` with ``score(x (m, p), y (m, q)) -> (m,)`` a bilinear
    form of the centred vectors, (x - mean x)^T W (y - mean y), whose sum over the n true pairs divided by
    n - 1 is corr(X a, Y b)."""
    for seed in (3, 4):
        X, Y, a, b = _score_case(seed)
        score = call(fn, X.copy(), Y.copy(), a.copy(), b.copy())
        if not callable(score):
            raise CheckFailed(f"expected a function score(x, y), got {type(score).__name__}")
        n = len(X)
        got = float(_scores_of(score, X, Y).sum() / (n - 1))
        want = float(np.corrcoef(X @ a, Y @ b)[0, 1])
        Xc, Yc = X - X.mean(0), Y - Y.mean(0)
        sa, sb = (Xc @ a).std(ddof=1), (Yc @ b).std(ddof=1)
        if abs(got - want) > 1e-6:
            raw = float(((X @ a) * (Y @ b)).sum() / (n - 1) / (sa * sb))
            if abs(got - raw) < 1e-4 * max(1.0, abs(raw)):
                raise CheckFailed(f"the average score is {got:.4f}, the correlation {want:.4f}: you did not centre. "
                                  f"A correlation is a score of x - mean(x) and y - mean(y), the means of the data")
            if abs(got - want * sa * sb) < 1e-4 * sa * sb:
                raise CheckFailed(f"this is the covariance of Xa and Yb ({got:.4f}), not their correlation "
                                  f"({want:.4f}): the projections need unit variance, divide W by the standard "
                                  f"deviations of Xa and Yb")
            norms = np.linalg.norm(a) * np.linalg.norm(b)
            if abs(got - want * sa * sb / norms) < 1e-4 * max(1.0, abs(got)):
                raise CheckFailed("you divided by |a| |b|: unit *length* is not unit *variance*; the standard "
                                  "deviation of Xa is sqrt(a^T C_xx a)")
            if abs(got - want * n / (n - 1)) < 1e-6:
                raise CheckFailed(f"off by the factor n / (n - 1) = {n / (n - 1):.4f}: the standard deviations and "
                                  f"the sum over pairs must use the same n - 1")
            raise CheckFailed(f"the sum of the scores over the true pairs / (n - 1) is {got:.4f}, the correlation "
                              f"corr(Xa, Yb) is {want:.4f}")
        # The score must be a bilinear form of the centred vectors, not a number that happens to average right.
        if not _is_bilinear(score, X.mean(0), Y.mean(0), np.random.default_rng(seed + 10)):
            raise CheckFailed("the average is right, but score(x, y) is not linear in x - mean(x) and in "
                              "y - mean(y): it must be (x - mean x)^T W (y - mean y) for one matrix W")
    ok("your score is bilinear in the centred vectors, and its average over the true pairs is the correlation.")


# Exercise ex-blind-spot: a relation CCA cannot see -------------------------------------------------------

def _knn_r2(x: np.ndarray, y: np.ndarray, k: int = 10) -> float:
    """R^2 on the second half of a k-nearest-neighbour regression of y on x fitted on the first half
    (features of x standardised): how far y is a function of x, whatever the function."""
    x = (x - x.mean(0)) / x.std(0)
    half = len(x) // 2
    train, test = x[:half], x[half:]
    d2 = (test**2).sum(1)[:, None] - 2 * test @ train.T + (train**2).sum(1)[None, :]
    near = np.argpartition(d2, k, axis=1)[:, :k]
    estimate = y[:half][near].mean(1)
    truth = y[half:]
    return float(1 - ((truth - estimate) ** 2).sum() / ((truth - truth.mean(0)) ** 2).sum())


def check_blind_spot(fn: Callable[[np.random.Generator, int], tuple]) -> None:
    """``fn(rng, n) -> (x (n, p), y (n, q))``, p <= 3: y (nearly) a function of x whose canonical correlations
    with x are all below 0.1, and not the chapter's y = x * x - 1."""
    n = 4000
    out = call(fn, np.random.default_rng(0), n)
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise CheckFailed(f"expected a tuple (x, y), got {type(out).__name__}")
    x, y = (as_float(v, name).numpy() for v, name in zip(out, ("x", "y")))
    x, y = (v[:, None] if v.ndim == 1 else v for v in (x, y))
    if x.ndim != 2 or y.ndim != 2 or len(x) != n or len(y) != n:
        raise CheckFailed(f"x and y must have one row per sample, (n, p) and (n, q) with n = {n}, got shapes "
                          f"{x.shape} and {y.shape}")
    if x.shape[1] > 3:
        raise CheckFailed(f"x has {x.shape[1]} features; use at most 3, so that nearest neighbours can see "
                          f"whether y is a function of x")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise CheckFailed("x or y holds NaN or infinite values")
    if (x.std(0) < 1e-6).any() or (y.std(0) < 1e-6).any():
        raise CheckFailed("a feature of x or y is constant: every feature must vary")
    if x.shape == y.shape and all(abs(np.corrcoef(y[:, j], x[:, j] ** 2)[0, 1]) > 0.95 for j in range(x.shape[1])):
        raise CheckFailed("that is the chapter's relation, y = x * x - 1 feature by feature; build another one")
    try:
        rho = float(cca(x, y).correlations.max())
    except ValueError as error:
        raise CheckFailed(f"CCA cannot run on your views: {error}") from None
    if rho >= 0.1:
        raise CheckFailed(f"CCA sees this relation: the largest canonical correlation is {rho:.3f} (at least 0.1). "
                          f"Every x-feature must be uncorrelated with every y-feature, e.g. y even in a "
                          f"symmetric x, or a product of independent features")
    r2 = _knn_r2(x, y)
    if r2 < 0.7:
        raise CheckFailed(f"CCA finds nothing (largest correlation {rho:.3f}), but neither does anything else: "
                          f"10 nearest neighbours in x explain only R^2 = {r2:.2f} of y. Independent noise is "
                          f"uncorrelated too; make y (nearly) a function of x")
    ok("CCA finds next to nothing in your views, yet nearest neighbours in x predict y: a relation that only a "
       "non-linear model can use.")


# Exercise ex-blind-spot: keys compete --------------------------------------------------------------------

COMPETITION_SCORE = 3.0        # the true key's score; every other key scores 0


def check_competition(n_keys) -> None:
    """``n_keys``: the smallest number of keys (the true one included) at which the true key, scoring
    ``COMPETITION_SCORE`` against 0 for each other key, gets less than half of the softmax weight."""
    got = as_number(n_keys, "the number of keys")

    def weight(n: int) -> float:
        return float(torch.softmax(torch.tensor([COMPETITION_SCORE] + [0.0] * (n - 1), dtype=torch.float64), 0)[0])

    want = next(n for n in range(1, 10_000) if weight(n) < 0.5)
    if not got.is_integer() or got < 1:
        raise CheckFailed(f"expected a whole number of keys (at least 1), got {n_keys!r}")
    got = int(got)
    if got == want:
        ok("that is the smallest number of keys at which the true key keeps less than half the weight: its score "
           "never changed, only the number of competitors.")
        return
    if got == want - 1:
        raise CheckFailed(f"with {got} keys the true key still has {weight(got):.4f} >= 1/2: the true key is one "
                          f"of the keys, so {got} keys are {got - 1} competitors against e^3 = "
                          f"{np.exp(COMPETITION_SCORE):.2f}")
    if weight(got) >= 0.5:
        raise CheckFailed(f"with {got} keys the true key's weight is e^3 / (e^3 + {got - 1}) = {weight(got):.4f}, "
                          f"still at least half: more competitors are needed")
    raise CheckFailed(f"with {got} keys the true key's weight e^3 / (e^3 + {got - 1}) = {weight(got):.4f} is below "
                      f"half, but it already is with fewer keys: find the smallest n with e^3 < n - 1")
