"""Every Chapter 8 exercise checker accepts the reference solution and rejects typical wrong answers."""

import pytest
import torch
from attention_course.tasks.series import seasonal_naive
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.beyond import check_attention_max, check_offset_scores, check_seasonal_naive


def reference_offset_scores(q, k, offset, alpha, dtype=torch.float64):
    delta = (k[None] - q[:, None]).to(dtype)                 # (N_q, N_k, D)
    return -alpha * ((delta - offset.to(dtype)) ** 2).sum(-1)


def test_offset_scores_accepts_reference(capsys):
    check_offset_scores(reference_offset_scores)
    assert "Correct" in capsys.readouterr().out


def test_offset_scores_accepts_a_per_query_constant(capsys):
    check_offset_scores(lambda q, k, o, a: reference_offset_scores(q, k, o, a) + q.double().sum(-1, keepdim=True))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda q, k, o, a: reference_offset_scores(q, k, -o, a), "query - offset instead of query \\+ offset"),
    (lambda q, k, o, a: -reference_offset_scores(q, k, o, a), "grow with the distance"),
    (lambda q, k, o, a: reference_offset_scores(q, k, o, 0.7), "do not change with alpha"),
    (lambda q, k, o, a: reference_offset_scores(q, k, o, a)[:, :-1], r"shape \(N_q, N_k\)"),
    (lambda q, k, o, a: reference_offset_scores(q, k, o + torch.tensor([1, 0]), a),
     r"largest weight is on key \[3, 0\], expected key \[2, 0\]"),
])
def test_offset_scores_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_offset_scores(wrong)


def reference_soft_max(x, alpha):
    return (torch.softmax(alpha * x, -1) * x).sum(-1)


def test_attention_max_accepts_reference(capsys):
    check_attention_max(reference_soft_max)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda x, a: x.amax(-1), "hard max"),
    (lambda x, a: (torch.softmax(a * x, 0) * x).sum(-1), "over the batch"),
    (lambda x, a: (torch.softmax(x, -1) * x).sum(-1), "does not depend on alpha"),
    (lambda x, a: x.mean(-1), "that is the mean"),
    (lambda x, a: torch.softmax(a * x, -1), "the weights alone"),
    (lambda x, a: (torch.softmax(a * x, -1) * x).sum(-1) + 1, "expected"),
    (lambda x, a: x[:, 0], "expected"),
])
def test_attention_max_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_attention_max(wrong)


def test_attention_max_rejects_order_dependence():
    calls = []

    def order_dependent(x, alpha):          # right on the first two calls, then weighs elements by position
        calls.append(1)
        if len(calls) <= 2:
            return reference_soft_max(x, alpha)
        return reference_soft_max(x * torch.linspace(1, 2, x.shape[-1], dtype=x.dtype), alpha)

    with pytest.raises(CheckFailed, match="reordering"):
        check_attention_max(order_dependent)


def test_seasonal_naive_accepts_reference(capsys):
    check_seasonal_naive(seasonal_naive)
    assert "Correct" in capsys.readouterr().out


def _one_period_back(history, period, horizon):
    L = history.shape[1]
    return history[:, [L - period + h for h in range(horizon)]]     # fails for h >= period


def _clamped(history, period, horizon):
    L = history.shape[1]
    return history[:, [min(L - period + h, L - 1) for h in range(horizon)]]


@pytest.mark.parametrize("wrong, message", [
    (_one_period_back, "indexing failed"),
    (_clamped, r"horizons 1..4 are right, horizon h = 5 is not"),
    (lambda h, p, H: h[:, -1:].repeat(1, H), "naive forecast"),
    (lambda h, p, H: seasonal_naive(h[:, :-1], p, H), "off by one"),
    (lambda h, p, H: seasonal_naive(h, p, H)[:, :-1], r"shape \(batch, horizon\)"),
    (lambda h, p, H: seasonal_naive(h, p, H) * torch.tensor([1.0] * 8 + [2.0], dtype=h.dtype), "horizon h = 9"),
])
def test_seasonal_naive_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_seasonal_naive(wrong)


# The attention pooling of a set (objective 2) -------------------------------------------------

from attention_course.teaching.checks.beyond import check_attention_pool, check_horizon_queries  # noqa: E402


def reference_pool(Z, S):
    return torch.softmax(S @ Z.transpose(1, 2) / Z.shape[-1] ** 0.5, -1) @ Z


@pytest.mark.parametrize("answer", [
    reference_pool,
    lambda Z, S: reference_pool(Z.float(), S.float()),                       # float32
    lambda Z, S: reference_pool(Z, S).numpy(),                               # numpy
    lambda Z, S: reference_pool(Z, S).tolist(),                              # nested lists
])
def test_attention_pool_accepts_correct_answers(answer, capsys):
    check_attention_pool(answer)
    out = capsys.readouterr().out
    assert out.startswith("Correct") and not any(c.isdigit() for c in out)


@pytest.mark.parametrize("wrong, message", [
    (lambda Z, S: torch.softmax(S @ Z.transpose(1, 2), -1) @ Z, "sqrt"),
    (lambda Z, S: torch.softmax(S @ Z.transpose(1, 2) / Z.shape[-1] ** 0.5, 1) @ Z, "over the seeds"),
    (lambda Z, S: torch.softmax(S @ Z.transpose(1, 2) / Z.shape[-1] ** 0.5, -1), "those are the weights"),
    (lambda Z, S: Z.mean(1, keepdim=True).expand(-1, S.shape[0], -1), "the mean of each set"),
    (lambda Z, S: reference_pool(Z, S) + Z[:, :1], "expected"),
    (lambda Z, S: reference_pool(Z, S) + 0.1 * Z[:, :1], "first seed"),
])
def test_attention_pool_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_attention_pool(wrong)


def test_attention_pool_rejects_an_order_dependent_pooling():
    def by_position(Z, S):
        w = torch.softmax(S @ Z.transpose(1, 2) / Z.shape[-1] ** 0.5, -1)
        out = w @ Z
        return out if Z[0, 0, 0] > -0.5 else out * 1.5
    with pytest.raises(CheckFailed, match="permutation-invariant|expected"):
        check_attention_pool(by_position)


# The forecaster's horizon queries (objective 4) -----------------------------------------------

def reference_horizon(hq, u, ev, mem):
    q = hq + ev[..., None] * u
    w = torch.softmax(q @ mem.transpose(1, 2) / mem.shape[-1] ** 0.5, -1)
    return w @ mem, w


@pytest.mark.parametrize("answer", [
    reference_horizon,
    lambda *a: tuple(t.float() for t in reference_horizon(*a)),
    lambda *a: [t.numpy() for t in reference_horizon(*a)],
])
def test_horizon_queries_accepts_correct_answers(answer, capsys):
    check_horizon_queries(answer)
    out = capsys.readouterr().out
    assert out.startswith("Correct") and not any(c.isdigit() for c in out)


def _no_events(hq, u, ev, mem):
    return reference_horizon(hq, u, 0 * ev, mem)


def _unscaled(hq, u, ev, mem):
    w = torch.softmax((hq + ev[..., None] * u) @ mem.transpose(1, 2), -1)
    return w @ mem, w


def _over_horizons(hq, u, ev, mem):
    w = torch.softmax((hq + ev[..., None] * u) @ mem.transpose(1, 2) / mem.shape[-1] ** 0.5, 1)
    return w @ mem, w


@pytest.mark.parametrize("wrong, message", [
    (lambda *a: reference_horizon(*a)[0], "return two things"),
    (_no_events, "ignore the scheduled events"),
    (_unscaled, "sqrt"),
    (_over_horizons, "over the horizons"),
    (lambda *a: (reference_horizon(*a)[0] * 2, reference_horizon(*a)[1]), "context is not"),
    (lambda *a: (reference_horizon(*a)[0], reference_horizon(*a)[1][..., :-1]), r"shape \(B, H, L\)"),
    (lambda hq, u, ev, mem: reference_horizon(hq, -u, ev, mem), "series 0, horizon index 1: got weights"),
])
def test_horizon_queries_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_horizon_queries(wrong)
