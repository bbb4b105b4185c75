"""Tests of the retrieval head, its training loop, the planted data and the CCA comparison."""


import numpy as np
import pytest
import torch
from attention_course import scaled_dot_product_attention, seed_everything
from attention_course.analysis.cca import cca
from attention_course.analysis.retrieval import (
    gaussian_pmi_terms,
    matched_direction_angles,
    whitened_bilinear,
    whitened_subspace_angles,
)
from attention_course.models.retrieval import RetrievalHead, retrieval_loss, train_retrieval
from attention_course.tasks.views import planted_views, squared_views
from scipy.stats import multivariate_normal


def test_planted_views_population_statistics():
    v = planted_views(np.random.default_rng(0), 50000, [0.8, 0.4], 4, 3)
    assert v.x.shape == (50000, 4) and v.y.shape == (50000, 3)
    assert np.allclose(v.correlations, [0.8, 0.4, 0.0])
    assert np.allclose(np.cov(v.x.T, v.y.T), v.joint_cov, atol=0.1 * np.abs(v.joint_cov).max())
    assert np.allclose(cca(v.x, v.y).correlations, v.correlations, atol=0.02)


@pytest.mark.parametrize("rho, message", [([0.5, 0.9], "non-increasing"), ([1.0], r"\[0, 1\)"),
                                          ([0.5] * 4, "at most min")])
def test_planted_views_bad_input(rho, message):
    with pytest.raises(ValueError, match=message):
        planted_views(np.random.default_rng(0), 10, rho, 3, 3)


def test_squared_views_are_uncorrelated_but_dependent():
    x, y = squared_views(np.random.default_rng(0), 20000, dim=2, noise=0.1)
    assert cca(x, y).correlations.max() < 0.05
    assert np.corrcoef(x[:, 0] ** 2, y[:, 0])[0, 1] > 0.9


def test_head_scores_are_the_bilinear_form():
    torch.manual_seed(0)
    head = RetrievalHead(4, 3, d_k=2).double()
    x, y = torch.randn(5, 4, dtype=torch.float64), torch.randn(6, 3, dtype=torch.float64)
    out, w = head(x, y)
    W = torch.as_tensor(head.bilinear())
    assert torch.allclose(w, torch.softmax(x @ W @ y.T, dim=-1))
    assert torch.allclose(out, w @ y)
    q, k = x @ head.W_Q.weight.T, y @ head.W_K.weight.T
    assert torch.allclose(w, scaled_dot_product_attention(q, k, y)[1])
    assert np.linalg.matrix_rank(head.bilinear()) <= 2
    values = torch.randn(6, 7, dtype=torch.float64)
    assert head(x, y, values)[0].shape == (5, 7)


def test_hidden_head_has_no_bilinear_matrix():
    head = RetrievalHead(2, 2, d_k=3, hidden=4)
    with pytest.raises(ValueError, match="no single bilinear"):
        head.bilinear()
    with pytest.raises(ValueError, match="positive"):
        RetrievalHead(0, 2, 3)


def test_retrieval_loss_matches_cross_entropy():
    torch.manual_seed(1)
    head = RetrievalHead(3, 2, d_k=2).double()
    x, y = torch.randn(8, 3, dtype=torch.float64), torch.randn(8, 2, dtype=torch.float64)
    loss, acc = retrieval_loss(head, x, y)
    scores = x @ torch.as_tensor(head.bilinear()) @ y.T
    assert torch.allclose(loss, torch.nn.functional.cross_entropy(scores, torch.arange(8)))
    assert acc == (scores.argmax(1) == torch.arange(8)).double().mean().item()
    with pytest.raises(ValueError, match="same number of pairs"):
        retrieval_loss(head, x, y[:5])


def test_training_learns_the_canonical_subspace_quickly():
    v = planted_views(np.random.default_rng(0), 2000, [0.9, 0.7], 4, 3)
    seed_everything(0)          # one thread: tiny matrices run many times slower on several
    head = RetrievalHead(4, 3, d_k=3)
    history = train_retrieval(head, v.x, v.y, steps=300, batch_size=64, lr=0.03, seed=0, record_every=100)
    assert history["step"] == [0, 100, 200, 300] and len(history["loss"]) == 300
    assert np.mean(history["loss"][-30:]) < np.mean(history["loss"][:30])
    angles = whitened_subspace_angles(history["bilinear"][-1], cca(v.x, v.y), k=2)
    assert angles["x"].max() < 15 and angles["y"].max() < 15
    assert angles["singular_values"][0] > angles["singular_values"][2]


def test_training_is_reproducible_and_checks_input():
    v = planted_views(np.random.default_rng(0), 200, [0.9], 2, 2)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        runs.append(train_retrieval(RetrievalHead(2, 2, 2), v.x, v.y, steps=5, batch_size=16)["loss"])
    assert runs[0] == runs[1]
    with pytest.raises(ValueError, match="batch_size"):
        train_retrieval(RetrievalHead(2, 2, 2), v.x, v.y, steps=1, batch_size=1000)
    with pytest.raises(ValueError, match="same n"):
        train_retrieval(RetrievalHead(2, 2, 2), v.x, v.y[:10], steps=1)


def test_whitened_bilinear_of_cca_map_is_a_partial_isometry():
    v = planted_views(np.random.default_rng(3), 3000, [0.8, 0.5, 0.3], 4, 4)
    r = cca(v.x, v.y)
    W = r.x_weights[:, :2] @ r.y_weights[:, :2].T          # the rank-2 CCA map
    s = np.linalg.svd(whitened_bilinear(W, r.cov_xx, r.cov_yy), compute_uv=False)
    assert np.allclose(s, [1, 1, 0, 0], atol=1e-10)
    angles = whitened_subspace_angles(W, r, k=2)
    assert np.allclose(angles["x"], 0, atol=1e-5) and np.allclose(angles["y"], 0, atol=1e-5)
    with pytest.raises(ValueError, match="W must have shape"):
        whitened_bilinear(W.T, r.cov_xx, r.cov_yy[:3, :3])
    with pytest.raises(ValueError, match="k must lie"):
        whitened_subspace_angles(W, r, k=5)


def test_matched_direction_angles_see_order_and_rotation_that_subspace_angles_miss():
    v = planted_views(np.random.default_rng(5), 4000, [0.8, 0.5, 0.3], 4, 4)
    r = cca(v.x, v.y)
    # The whitened map U diag(s) V^T is W = C_xx^-1/2 U diag(s) V^T C_yy^-1/2 = A diag(s) B^T (CCA weights).
    Wx, Wy = r.x_weights, r.y_weights
    good = matched_direction_angles(Wx[:, :3] @ np.diag([3.0, 2.0, 1.0]) @ Wy[:, :3].T, r, k=3)
    assert np.allclose(np.diag(good["x"]), 0, atol=1e-5) and np.allclose(np.diag(good["y"]), 0, atol=1e-5)
    assert np.allclose(good["x"] + np.eye(3) * 90, 90, atol=1e-5)     # off-diagonal: orthogonal
    assert np.allclose(good["singular_values"], [3, 2, 1])
    # Same subspaces, order of the first two swapped: subspace angles see nothing, matching does.
    swapped = Wx[:, :3] @ np.diag([2.0, 3.0, 1.0]) @ Wy[:, :3].T
    assert np.allclose(whitened_subspace_angles(swapped, r, 3)["x"], 0, atol=1e-5)
    bad = matched_direction_angles(swapped, r, k=3)
    assert np.allclose(np.diag(bad["x"]), [90, 90, 0], atol=1e-5)
    # A rotation by 30 degrees inside the top-2 span: matched angles are 30 degrees.
    c, s_ = np.cos(np.radians(30)), np.sin(np.radians(30))
    R = np.array([[c, -s_], [s_, c]])
    rotated = matched_direction_angles((Wx[:, :2] @ R) @ np.diag([3.0, 1.0]) @ (Wy[:, :2] @ R).T, r, k=2)
    assert np.allclose(np.diag(rotated["x"]), 30, atol=1e-5) and np.allclose(np.diag(rotated["y"]), 30, atol=1e-5)
    with pytest.raises(ValueError, match="k must lie"):
        matched_direction_angles(swapped, r, k=5)


def test_large_batch_optimum_is_the_whitened_cross_covariance():
    """With many keys the loss tends to 1/2 tr(W C_yy W^T C_xx) - tr(W^T C_xy) + log B, minimised at
    W = C_xx^-1 C_xy C_yy^-1; check the gradient of that limit vanishes there."""
    v = planted_views(np.random.default_rng(4), 1, [0.8, 0.3], 3, 2)
    W = np.linalg.solve(v.cov_xx, v.cov_xy) @ np.linalg.inv(v.cov_yy)
    grad = v.cov_xx @ W @ v.cov_yy - v.cov_xy
    assert np.allclose(grad, 0, atol=1e-10)
    s = np.linalg.svd(whitened_bilinear(W, v.cov_xx, v.cov_yy), compute_uv=False)
    assert np.allclose(s, [0.8, 0.3], atol=1e-10)


def test_retrieval_loss_over_several_batches_at_once():
    torch.manual_seed(2)
    head = RetrievalHead(3, 2, d_k=2).double()
    x, y = torch.randn(4, 5, 3, dtype=torch.float64), torch.randn(4, 5, 2, dtype=torch.float64)
    loss, acc = retrieval_loss(head, x, y)
    parts = [retrieval_loss(head, x[i], y[i]) for i in range(4)]
    assert torch.allclose(loss, torch.stack([p[0] for p in parts]).mean())
    assert np.isclose(acc, np.mean([p[1] for p in parts]))


def test_gaussian_pmi_terms_give_the_pmi_and_the_theorem():
    v = planted_views(np.random.default_rng(3), 1, [0.8, 0.3], 4, 3)
    Gamma, F, G = gaussian_pmi_terms(v.joint_cov, 4)
    pts = multivariate_normal(np.zeros(7), v.joint_cov).rvs(50, random_state=0)
    xs, ys = pts[:, :4], pts[:, 4:]
    pmi = (multivariate_normal(np.zeros(7), v.joint_cov).logpdf(pts)
           - multivariate_normal(np.zeros(4), v.cov_xx).logpdf(xs)
           - multivariate_normal(np.zeros(3), v.cov_yy).logpdf(ys))
    const = -0.5 * np.log(1 - v.correlations ** 2).sum()
    formula = (const + np.einsum("tp,pq,tq->t", xs, Gamma, ys) - 0.5 * np.einsum("tp,pq,tq->t", xs, F, xs)
               - 0.5 * np.einsum("tp,pq,tq->t", ys, G, ys))
    assert np.allclose(pmi, formula, atol=1e-9)
    s = np.linalg.svd(whitened_bilinear(Gamma, v.cov_xx, v.cov_yy), compute_uv=False)
    assert np.allclose(s, v.correlations / (1 - v.correlations ** 2), atol=1e-10)
    with pytest.raises(ValueError, match="square"):
        gaussian_pmi_terms(v.joint_cov[:, :5], 4)
