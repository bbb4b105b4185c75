"""Tests of chapter 6's experiments: resampling a planted population, the matched angles of a head
against CCA, and the two sweeps (keys per query, training pairs)."""

import numpy as np
import pytest
from attention_course.analysis.cca import cca, inverse_sqrt_psd
from attention_course.experiments.views import (
    HeadProtocol,
    direction_spread,
    keys_sweep,
    matched_angles,
    sample_size_sweep,
    train_bilinear_head,
)
from attention_course.tasks.views import planted_views, resample_views

FAST = HeadProtocol(d_k=4, steps=60, lr=0.05)


def _views():
    return planted_views(np.random.default_rng(3), 10, [0.9, 0.5, 0.2], 4, 3)


def test_resample_views_keeps_the_population_and_draws_new_pairs():
    v = _views()
    a = resample_views(v, np.random.default_rng(0), 40000)
    b = resample_views(v, np.random.default_rng(1), 5)
    assert a.x.shape == (40000, 4) and a.y.shape == (40000, 3) and b.x.shape == (5, 4)
    assert np.array_equal(a.cov_xy, v.cov_xy) and np.array_equal(a.correlations, v.correlations)
    assert np.allclose(np.cov(a.x.T, a.y.T), v.joint_cov, atol=0.05 * np.abs(v.joint_cov).max())
    assert np.allclose(cca(a.x, a.y).correlations, v.correlations, atol=0.02)
    assert not np.allclose(a.x[:5], b.x)


@pytest.mark.parametrize("n", [0, -3, 2.5])
def test_resample_views_rejects_a_bad_size(n):
    with pytest.raises(ValueError, match="positive int"):
        resample_views(_views(), np.random.default_rng(0), n)


def test_matched_angles_are_zero_for_the_whitened_cross_covariance_and_large_for_a_random_map():
    v = resample_views(_views(), np.random.default_rng(0), 3000)
    result = cca(v.x, v.y)
    M = result.x_directions @ np.diag(result.correlations) @ result.y_directions.T
    W = inverse_sqrt_psd(result.cov_xx) @ M @ inverse_sqrt_psd(result.cov_yy)     # whitened, W is M itself
    angles = matched_angles(W, result)
    assert angles.shape == (2, 3) and angles.max() < 1e-6
    random = matched_angles(np.random.default_rng(1).standard_normal((4, 3)), result)
    assert random.max() > 10


def test_a_trained_head_is_deterministic_given_its_seed():
    v = resample_views(_views(), np.random.default_rng(0), 500)
    W1 = train_bilinear_head(v.x, v.y, 32, seed=2, protocol=FAST)
    W2 = train_bilinear_head(v.x, v.y, 32, seed=2, protocol=FAST)
    W3 = train_bilinear_head(v.x, v.y, 32, seed=3, protocol=FAST)
    assert W1.shape == (4, 3) and np.array_equal(W1, W2) and not np.allclose(W1, W3)


def test_keys_sweep_shapes_and_a_trained_head_nearer_m_than_a_random_one():
    v = resample_views(_views(), np.random.default_rng(0), 1000)
    out = keys_sweep(v.x, v.y, batch_sizes=(8, 64), seeds=(0, 1), protocol=HeadProtocol(d_k=3, steps=300, lr=0.02))
    assert out["matched"].shape == (2, 2, 2, 3) and out["nearest_own"].shape == (2, 2, 2, 3)
    assert out["singular_values"].shape == (2, 2, 3) and out["distance"].shape == (2, 2)
    assert (out["matched"] >= 0).all() and (out["matched"] <= 90).all()
    assert out["distance"].max() < 1.0          # an untrained head of this size sits near 1 or beyond
    assert out["nearest_own"][..., 0].all()     # the strongest pair (rho 0.9) is found by every head


def test_sample_size_sweep_cca_error_shrinks_with_n_and_sizes_are_checked():
    out = sample_size_sweep(_views(), sizes=(200, 20000), seeds=(0, 1), batch_size=32, protocol=FAST)
    assert out["matched"].shape == (2, 2, 2, 3) and out["cca_error"].shape == (2, 2, 2, 3)
    assert out["rho"].shape == (2, 2, 3) and out["singular_values"].shape == (2, 2, 3)
    # CCA's own error in the strongest pair falls with the sample (about 10x fewer degrees for 100x the pairs)
    assert out["cca_error"][:, 1, :, 0].mean() < 0.5 * out["cca_error"][:, 0, :, 0].mean()
    for sizes in [(100, 50), (16,), ()]:
        with pytest.raises(ValueError, match="sizes must be increasing"):
            sample_size_sweep(_views(), sizes=sizes, seeds=(0,), batch_size=32, protocol=FAST)


def test_direction_spread_is_zero_for_maps_with_the_same_directions_and_large_for_unrelated_ones():
    v = resample_views(_views(), np.random.default_rng(0), 3000)
    result = cca(v.x, v.y)
    M = result.x_directions @ np.diag(result.correlations) @ result.y_directions.T
    W = inverse_sqrt_psd(result.cov_xx) @ M @ inverse_sqrt_psd(result.cov_yy)
    same = direction_spread([W, 2.5 * W, -W], result)          # scale and sign move no direction
    assert same.shape == (2, 3) and same.max() < 1e-6
    apart = direction_spread([W, np.random.default_rng(1).standard_normal((4, 3))], result)
    assert apart.max() > 10 and (apart <= 90).all()
    with pytest.raises(ValueError, match="at least 2"):
        direction_spread([W], result)
