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


# The attention pooling of a padded batch of sets (objective 2) -------------------------------

from attention_course.teaching.checks.beyond import check_attention_pool, check_horizon_queries  # noqa: E402


def _scores(Z, S):
    return S @ Z.transpose(1, 2) / Z.shape[-1] ** 0.5                          # (B, k, n)


def _real(Z, lengths):
    return torch.arange(Z.shape[1])[None, None, :] < torch.as_tensor(lengths)[:, None, None]   # (B, 1, n)


def reference_pool(Z, S, lengths):
    scores = _scores(Z, S).masked_fill(~_real(Z, lengths), float("-inf"))
    return torch.softmax(scores, -1) @ Z


def _per_set(Z, S, lengths):                     # each set pooled alone, without padding
    return torch.stack([torch.softmax(_scores(Z[b:b + 1, :n], S), -1)[0] @ Z[b, :n] for b, n in
                        enumerate(lengths.tolist())])


@pytest.mark.parametrize("answer", [
    reference_pool,
    _per_set,
    lambda Z, S, n: reference_pool(Z.float(), S.float(), n),                   # float32
    lambda Z, S, n: reference_pool(Z, S, n).numpy(),                           # numpy
    lambda Z, S, n: reference_pool(Z, S, n).tolist(),                          # nested lists
])
def test_attention_pool_accepts_correct_answers(answer, capsys):
    check_attention_pool(answer)
    out = capsys.readouterr().out
    assert out.startswith("Correct") and not any(c.isdigit() for c in out)


def _unmasked(Z, S, n):
    return torch.softmax(_scores(Z, S), -1) @ Z


def _zeroed_after(Z, S, n):
    return (torch.softmax(_scores(Z, S), -1) * _real(Z, n)) @ Z


def _unscaled(Z, S, n):
    return torch.softmax((S @ Z.transpose(1, 2)).masked_fill(~_real(Z, n), float("-inf")), -1) @ Z


def _over_seeds(Z, S, n):
    return torch.softmax(_scores(Z, S).masked_fill(~_real(Z, n), -1e9), 1) @ Z


@pytest.mark.parametrize("wrong, message", [
    (_unmasked, "the padding gets weight"),
    (_zeroed_after, "after the softmax"),
    (_unscaled, "sqrt"),
    (_over_seeds, "over the seeds"),
    (lambda Z, S, n: torch.softmax(_scores(Z, S).masked_fill(~_real(Z, n), float("-inf")), 1) @ Z, "NaN"),
    (lambda Z, S, n: torch.softmax(_scores(Z, S), -1), "those are the weights"),
    (lambda Z, S, n: reference_pool(Z, S, n) + Z[:, :1], "first seed"),
    (lambda Z, S, n: reference_pool(Z, S, n)[:, :1], r"shape \(B, k, d\)"),
])
def test_attention_pool_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_attention_pool(wrong)


def test_attention_pool_rejects_a_pooling_that_reads_the_padding():
    def reads_padding(Z, S, n):                   # right unless the padding holds another value
        out = reference_pool(Z, S, n)
        return out + 1 if (Z == -3.0).any() else out
    with pytest.raises(CheckFailed, match="what the padding holds"):
        check_attention_pool(reads_padding)


def test_attention_pool_rejects_an_order_dependent_pooling():
    calls = []

    def by_position(Z, S, n):                     # right on the first three calls, then weighs by position
        calls.append(1)
        out = reference_pool(Z, S, n)
        return out if len(calls) <= 3 else out * torch.linspace(1, 2, out.shape[-1], dtype=out.dtype)
    with pytest.raises(CheckFailed, match="permutation-invariant"):
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
    (lambda *a: (reference_horizon(*a)[0], reference_horizon(*a)[1][..., :-1]), r"shape \(B, n_f, L\)"),
    (lambda hq, u, ev, mem: reference_horizon(hq, -u, ev, mem), "series 0, horizon index 1: got weights"),
])
def test_horizon_queries_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_horizon_queries(wrong)
