"""Chapter 6's exercise checkers accept the reference solutions and reject typical wrong answers."""

import numpy as np
import pytest
from attention_course.analysis.cca import cca, principal_angles
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.cca import (
    check_canonical_correlations,
    check_pmi_cross_matrix,
    check_principal_angles,
)


def _whiten(C):
    evals, evecs = np.linalg.eigh(C)
    return evecs @ np.diag(evals ** -0.5) @ evecs.T


def reference_cca(X, Y):
    X, Y = X - X.mean(0), Y - Y.mean(0)
    n = len(X)
    M = _whiten(X.T @ X / (n - 1)) @ (X.T @ Y / (n - 1)) @ _whiten(Y.T @ Y / (n - 1))
    return np.linalg.svd(M, compute_uv=False)


def test_canonical_correlations_accepts_reference(capsys):
    check_canonical_correlations(reference_cca)
    check_canonical_correlations(lambda X, Y: cca(X, Y).correlations)
    assert "Correct" in capsys.readouterr().out


def _uncentred(X, Y):
    n = len(X)
    M = _whiten(X.T @ X / (n - 1)) @ (X.T @ Y / (n - 1)) @ _whiten(Y.T @ Y / (n - 1))
    return np.linalg.svd(M, compute_uv=False)


def _not_whitened(X, Y):
    X, Y = X - X.mean(0), Y - Y.mean(0)
    return np.linalg.svd(X.T @ Y / (len(X) - 1), compute_uv=False)


def _standardised_only(X, Y):
    X, Y = X - X.mean(0), Y - Y.mean(0)
    X, Y = X / X.std(0, ddof=1), Y / Y.std(0, ddof=1)
    return np.linalg.svd(X.T @ Y / (len(X) - 1), compute_uv=False)


@pytest.mark.parametrize("wrong, message", [
    (lambda X, Y: reference_cca(X, Y) ** 2, "squared correlations"),
    (lambda X, Y: reference_cca(X, Y)[::-1], "ascending order"),
    (_uncentred, "did not centre"),
    (_not_whitened, "raw cross-covariance"),
    (_standardised_only, "did not whiten"),
    (lambda X, Y: reference_cca(X, Y)[:2], r"shape \(4,\)"),
    (lambda X, Y: reference_cca(X, Y) * 0.9, "expected"),
    (lambda X, Y: np.degrees(np.arccos(reference_cca(X, Y))), "principal angles themselves"),
    (lambda X, Y: np.arccos(reference_cca(X, Y)), "principal angles themselves"),
])
def test_canonical_correlations_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_canonical_correlations(wrong)


def reference_angles(A, B):
    Qa, Qb = np.linalg.qr(A)[0], np.linalg.qr(B)[0]
    cosines = np.linalg.svd(Qa.T @ Qb, compute_uv=False)
    return np.degrees(np.arccos(np.clip(cosines, -1, 1)))


def test_canonical_correlations_accepts_cosines_of_principal_angles(capsys):
    # The lesson's route: the cosines of the principal angles between the centred column spans (QR whitening).
    check_canonical_correlations(
        lambda X, Y: np.cos(np.radians(reference_angles(X - X.mean(0), Y - Y.mean(0)))))
    assert "Correct" in capsys.readouterr().out


def test_principal_angles_accepts_reference(capsys):
    check_principal_angles(reference_angles)
    check_principal_angles(principal_angles)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda A, B: np.radians(reference_angles(A, B)), "radians"),
    (lambda A, B: reference_angles(A, B)[::-1], "smallest angle first"),
    (lambda A, B: np.degrees(np.arccos(np.clip(np.linalg.svd(A.T @ B, compute_uv=False), -1, 1))),
     "orthonormalise"),
    (lambda A, B: reference_angles(A, B) + 1.0, "expected"),
])
def test_principal_angles_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_principal_angles(wrong)


def test_principal_angles_rejects_basis_dependent_answer():
    # Right on the checker's first matrices, wrong once A's basis changes: caught by the second call.
    calls = []

    def first_time_only(A, B):
        calls.append(1)
        return reference_angles(A, B) if len(calls) == 1 else reference_angles(A, B) + 5
    with pytest.raises(CheckFailed, match="same span"):
        check_principal_angles(first_time_only)


def reference_pmi(cov, p):
    return -np.linalg.inv(cov)[:p, p:]


def test_pmi_cross_matrix_accepts_reference(capsys):
    check_pmi_cross_matrix(reference_pmi)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda cov, p: np.linalg.inv(cov)[:p, p:], "wrong sign"),
    (lambda cov, p: -0.5 * np.linalg.inv(cov)[:p, p:], "factor of 2"),
    (lambda cov, p: cov[:p, p:], "cross-covariance block"),
    (lambda cov, p: -np.linalg.pinv(cov[:p, p:]).T, "inverting the block"),
    (lambda cov, p: np.zeros((p, 2)), "largest error"),
    (lambda cov, p: np.zeros((2, p)), "shape"),
])
def test_pmi_cross_matrix_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_pmi_cross_matrix(wrong)


# --- Exercise: a correlation written as a bilinear score ------------------------------------------

def _correlation_score(X, Y, a, b, centre=True, scale="std", ddof=1):
    mx, my = (X.mean(0), Y.mean(0)) if centre else (np.zeros(X.shape[1]), np.zeros(Y.shape[1]))
    sx, sy = ((X - X.mean(0)) @ a).std(ddof=ddof), ((Y - Y.mean(0)) @ b).std(ddof=ddof)
    W = np.outer(a, b) / {"std": sx * sy, "none": 1.0, "norm": np.linalg.norm(a) * np.linalg.norm(b)}[scale]
    return lambda x, y: np.einsum("tp,pq,tq->t", x - mx, W, y - my)


def test_correlation_score_accepts_the_reference(capsys):
    from attention_course.teaching.checks.cca import check_correlation_score
    check_correlation_score(_correlation_score)
    as_lists = lambda X, Y, a, b: (lambda s: lambda x, y: s(x, y).tolist())(_correlation_score(X, Y, a, b))  # noqa: E731
    check_correlation_score(as_lists)
    assert capsys.readouterr().out.count("Correct: ") == 2


def _constant(X, Y, a, b):
    c = np.corrcoef(X @ a, Y @ b)[0, 1]
    return lambda x, y: np.full(len(x), c * (len(X) - 1) / len(X))        # the right average, no bilinear form


@pytest.mark.parametrize("wrong, diagnosis", [
    (lambda X, Y, a, b: _correlation_score(X, Y, a, b, centre=False), "did not centre"),
    (lambda X, Y, a, b: _correlation_score(X, Y, a, b, scale="none"), "covariance"),
    (lambda X, Y, a, b: _correlation_score(X, Y, a, b, scale="norm"), "unit \\*length\\*"),
    (lambda X, Y, a, b: _correlation_score(X, Y, a, b, ddof=0), "n / \\(n - 1\\)"),
    (_constant, "not linear"),
    (lambda X, Y, a, b: (lambda s: lambda x, y: s(x, y) + 0.01)(_correlation_score(X, Y, a, b)), "is 0.2"),
    (lambda X, Y, a, b: (lambda s: lambda x, y: s(x, y)[:-1])(_correlation_score(X, Y, a, b)), "one score per pair"),
    (lambda X, Y, a, b: np.outer(a, b), "expected a function"),
])
def test_correlation_score_rejects_wrong_answers(wrong, diagnosis):
    from attention_course.teaching.checks.cca import check_correlation_score
    with pytest.raises(CheckFailed, match=diagnosis):
        check_correlation_score(wrong)


# --- Exercise: a relation CCA cannot see ------------------------------------------------------------

def _product(rng, n):
    x = rng.standard_normal((n, 2))
    return x, x[:, :1] * x[:, 1:] + 0.1 * rng.standard_normal((n, 1))


@pytest.mark.parametrize("case", [
    _product,
    lambda rng, n: (lambda x: (x, np.abs(x)))(rng.standard_normal(n)),              # 1-D arrays are accepted
    lambda rng, n: (lambda x: (x, np.cos(2 * x)))(rng.standard_normal((n, 3))),
])
def test_blind_spot_accepts_relations_cca_cannot_see(case, capsys):
    from attention_course.teaching.checks.cca import check_blind_spot
    check_blind_spot(case)
    assert capsys.readouterr().out.startswith("Correct: ")


@pytest.mark.parametrize("wrong, diagnosis", [
    (lambda rng, n: (lambda x: (x, 2 * x + rng.standard_normal((n, 2))))(rng.standard_normal((n, 2))),
     "CCA sees this relation"),
    (lambda rng, n: (rng.standard_normal((n, 2)), rng.standard_normal((n, 2))), "neither does anything else"),
    (lambda rng, n: (lambda x: (x, x**2 - 1 + 0.1 * rng.standard_normal((n, 2))))(rng.standard_normal((n, 2))),
     "the chapter's relation"),
    (lambda rng, n: (rng.standard_normal((n, 5)), rng.standard_normal((n, 2))), "at most 3"),
    (lambda rng, n: (rng.standard_normal((n, 2)), np.ones((n, 2))), "constant"),
    (lambda rng, n: (rng.standard_normal((n, 2)), np.full((n, 2), np.nan)), "NaN"),
    (lambda rng, n: (rng.standard_normal((n, 2)), rng.standard_normal((n // 2, 2))), "one row per sample"),
    (lambda rng, n: rng.standard_normal((n, 2)), "expected a tuple"),
])
def test_blind_spot_rejects_wrong_cases(wrong, diagnosis):
    from attention_course.teaching.checks.cca import check_blind_spot
    with pytest.raises(CheckFailed, match=diagnosis):
        check_blind_spot(wrong)


# --- Exercise: keys compete -------------------------------------------------------------------------

def test_competition_accepts_the_answer(capsys):
    import math

    from attention_course.teaching.checks.cca import COMPETITION_SCORE, check_competition
    n = math.floor(math.exp(COMPETITION_SCORE)) + 2             # n - 1 competitors must outweigh e^3 = 20.09
    check_competition(n)
    check_competition(np.int64(n))
    check_competition(float(n))
    assert capsys.readouterr().out.count("Correct: ") == 3


@pytest.mark.parametrize("wrong, diagnosis", [
    (21, "still has 0.5011 >= 1/2: the true key is one of the keys"),
    (20, "still at least half"),
    (40, "already is with fewer keys"),
    (21.5, "whole number"),
    ("22", "as a number"),
    (True, "as a number"),
])
def test_competition_rejects_wrong_answers(wrong, diagnosis):
    from attention_course.teaching.checks.cca import check_competition
    with pytest.raises(CheckFailed, match=diagnosis):
        check_competition(wrong)
