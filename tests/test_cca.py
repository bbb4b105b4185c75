"""Tests of the numpy CCA: scikit-learn agreement, invariances, bad input, principal angles."""

import numpy as np
import pytest
from attention_course.analysis.cca import cca, cca_from_covariances, inverse_sqrt_psd, principal_angles, sqrt_psd
from attention_course.tasks.views import planted_views
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.linalg import subspace_angles
from sklearn.cross_decomposition import CCA


def _views(seed=0, n=1500, rho=(0.9, 0.6, 0.3), p=5, q=4):
    return planted_views(np.random.default_rng(seed), n, rho, p, q)


def test_recovers_planted_correlations_and_its_own_definition():
    v = _views(n=20000)
    r = cca(v.x, v.y)
    assert r.correlations.shape == (4,) and r.x_weights.shape == (5, 4) and r.y_weights.shape == (4, 4)
    assert np.allclose(r.correlations, [0.9, 0.6, 0.3, 0.0], atol=0.03)
    a, b = r.transform(v.x, v.y)
    assert np.allclose(np.cov(a.T), np.eye(4), atol=1e-10)           # unit variance, uncorrelated
    assert np.allclose(np.cov(b.T), np.eye(4), atol=1e-10)
    cross = np.cov(a.T, b.T)[:4, 4:]
    assert np.allclose(cross, np.diag(r.correlations), atol=1e-10)   # only matched pairs correlate
    assert np.allclose(r.x_directions.T @ r.x_directions, np.eye(4), atol=1e-10)
    assert np.allclose(r.y_directions.T @ r.y_directions, np.eye(4), atol=1e-10)


def test_population_covariances_give_the_planted_correlations_exactly():
    v = _views()
    rho, a, b = cca_from_covariances(v.cov_xx, v.cov_yy, v.cov_xy)
    assert np.allclose(rho, v.correlations, atol=1e-12)
    assert np.allclose(a.T @ v.cov_xy @ b, np.diag(rho), atol=1e-12)


def test_matches_scikit_learn():
    v = _views(seed=3, rho=(0.85, 0.6, 0.35))
    r = cca(v.x, v.y, n_components=3)
    sk = CCA(n_components=3, max_iter=2000, tol=1e-10).fit(v.x, v.y)
    assert all(n < 2000 for n in np.atleast_1d(sk.n_iter_))           # the iterations converged
    xs, ys = sk.transform(v.x, v.y)
    sk_corr = np.array([np.corrcoef(xs[:, i], ys[:, i])[0, 1] for i in range(3)])
    assert np.allclose(sk_corr, r.correlations, atol=1e-3)


def test_n_components_and_transform_shapes():
    v = _views()
    r = cca(v.x, v.y, n_components=2)
    a, b = r.transform(v.x[:7], v.y[:7])
    assert a.shape == (7, 2) and b.shape == (7, 2)
    with pytest.raises(ValueError, match=r"X must have shape \(n, 5\)"):
        r.transform(v.y, v.y)


@st.composite
def paired_data(draw):
    n = draw(st.integers(30, 80))
    p, q = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    Z = rng.standard_normal((n, 2))
    X = rng.standard_normal((n, p)) + Z @ rng.standard_normal((2, p))
    Y = rng.standard_normal((n, q)) + Z @ rng.standard_normal((2, q))
    return X, Y, rng


def _random_invertible(rng, d):
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * rng.uniform(0.3, 3.0, size=d)


@settings(max_examples=50, deadline=None)
@given(paired_data())
def test_invertible_affine_maps_leave_correlations_unchanged(data):
    X, Y, rng = data
    r = cca(X, Y)
    X2 = X @ _random_invertible(rng, X.shape[1]) + rng.standard_normal(X.shape[1])
    Y2 = Y @ _random_invertible(rng, Y.shape[1]) - 5.0
    assert np.allclose(cca(X2, Y2).correlations, r.correlations, atol=1e-8)
    assert (r.correlations <= 1 + 1e-12).all() and (np.diff(r.correlations) <= 1e-12).all()


@settings(max_examples=50, deadline=None)
@given(paired_data())
def test_swapping_views_swaps_the_weights(data):
    X, Y, _ = data
    r, s = cca(X, Y), cca(Y, X)
    assert np.allclose(r.correlations, s.correlations, atol=1e-10)
    # Weights are defined up to rotations inside repeated correlations: compare well-separated ones.
    gaps = np.diff(np.concatenate([[2.0], r.correlations, [-1.0]]))
    assume(np.abs(gaps).min() > 1e-3)
    assert np.allclose(s.x_weights, r.y_weights, atol=1e-6)
    assert np.allclose(s.y_weights, r.x_weights, atol=1e-6)


def test_bad_input_messages():
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((50, 3)), rng.standard_normal((40, 2))
    with pytest.raises(ValueError, match=r"same number of rows.*\(50, 3\).*\(40, 2\)"):
        cca(X, Y)
    with pytest.raises(ValueError, match=r"X has 4 rows but 6 features.*reg > 0"):
        cca(rng.standard_normal((4, 6)), rng.standard_normal((4, 2)))
    X = rng.standard_normal((50, 3))
    X = np.column_stack([X, X[:, 0] - 2 * X[:, 1]])                 # a redundant feature
    with pytest.raises(ValueError, match=r"covariance of X \(4x4\) is rank-deficient.*reg > 0"):
        cca(X, rng.standard_normal((50, 2)))
    with pytest.raises(ValueError, match="n_components"):
        cca(rng.standard_normal((50, 3)), rng.standard_normal((50, 2)), n_components=3)
    with pytest.raises(ValueError, match="finite"):
        cca(np.full((5, 1), np.nan), np.ones((5, 1)))
    with pytest.raises(ValueError, match="reg must be"):
        cca(X, X, reg=-1.0)


def test_regularisation_handles_singular_covariances():
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((5, 8)), rng.standard_normal((5, 3))
    r = cca(X, Y, reg=0.1)
    assert np.isfinite(r.correlations).all() and (r.correlations <= 1).all()


def test_matrix_square_roots():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((4, 4))
    C = A @ A.T + 0.1 * np.eye(4)
    assert np.allclose(sqrt_psd(C) @ sqrt_psd(C), C)
    assert np.allclose(inverse_sqrt_psd(C) @ C @ inverse_sqrt_psd(C), np.eye(4))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 8), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_principal_angles_match_scipy(d, ka, kb, seed):
    assume(ka <= d and kb <= d)
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((d, ka)), rng.standard_normal((d, kb))
    assert np.allclose(principal_angles(A, B), np.sort(np.degrees(subspace_angles(A, B))), atol=1e-5)
    assert np.allclose(principal_angles(A, A @ rng.standard_normal((ka, ka))), 0, atol=1e-5)


def test_principal_angles_small_angles_and_errors():
    A = np.eye(3)[:, :2]
    B = A.copy()
    B[2, 0] = np.tan(np.radians(1e-4))
    assert np.allclose(principal_angles(A, B), [0.0, 1e-4], atol=1e-9)
    assert np.allclose(principal_angles(np.eye(2)[:, :1], np.eye(2)[:, 1:]), [90.0])
    with pytest.raises(ValueError, match="linearly dependent"):
        principal_angles(np.ones((3, 2)), A)
    with pytest.raises(ValueError, match="same space"):
        principal_angles(A, np.eye(4)[:, :2])
