"""Chapter 5's exercise checkers accept the reference solutions and reject typical wrong answers."""

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
])
def test_canonical_correlations_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_canonical_correlations(wrong)


def reference_angles(A, B):
    Qa, Qb = np.linalg.qr(A)[0], np.linalg.qr(B)[0]
    cosines = np.linalg.svd(Qa.T @ Qb, compute_uv=False)
    return np.degrees(np.arccos(np.clip(cosines, -1, 1)))


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
