"""Chapter 7's exercise checkers accept the reference solutions and reject typical wrong answers."""

import math

import pytest
import torch
from attention_course.analysis.adversarial import js_divergence
from attention_course.analysis.importance import precision_at_k
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.explanation import (
    check_js_divergence,
    check_one_token_adversary,
    check_precision_at_k,
)


def reference_jsd(p, q):
    m = (p + q) / 2
    return 0.5 * (torch.xlogy(p, p) - torch.xlogy(p, m)).sum(-1) + 0.5 * (torch.xlogy(q, q) - torch.xlogy(q, m)).sum(-1)


def test_jsd_accepts_reference(capsys):
    check_js_divergence(reference_jsd)
    check_js_divergence(js_divergence)
    assert "Correct" in capsys.readouterr().out


def _naive_log(p, q):
    m = (p + q) / 2
    return 0.5 * (p * (p / m).log()).sum(-1) + 0.5 * (q * (q / m).log()).sum(-1)


@pytest.mark.parametrize("wrong, message", [
    (lambda p, q: reference_jsd(p, q) / math.log(2), "bits"),
    (lambda p, q: (torch.xlogy(p, p) - torch.xlogy(p, q)).sum(-1), "KL"),
    (_naive_log, "NaN"),
    (lambda p, q: reference_jsd(p, q)[:-1], "one divergence per row"),
    (lambda p, q: reference_jsd(p, q) + p[:, 0] * 0.01, "symmetric"),
    (lambda p, q: reference_jsd(p, q) + 0.01, "expected"),
])
def test_jsd_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_js_divergence(wrong)


def reference_precision(scores, evidence, lengths, fixed_k=None):
    out = []
    for s, e, L in zip(scores, evidence, lengths):
        k = fixed_k or int(e[:L].sum())
        top = torch.argsort(s[:L], descending=True, stable=True)[:k]
        out.append(float(e[top].sum()) / k)
    return torch.tensor(out, dtype=scores.dtype)


def test_precision_accepts_reference(capsys):
    check_precision_at_k(reference_precision)
    check_precision_at_k(precision_at_k)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda s, e, l: precision_at_k(s, e, torch.full_like(l, s.shape[1])), "padding"),
    (lambda s, e, l: torch.ones(2), "one precision per review"),
    (lambda s, e, l: reference_precision(-s, e, l), "expected"),
])
def test_precision_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_precision_at_k(wrong)


def reference_one_token(s, bias, a, epsilon):
    base = torch.sigmoid((a * s).sum() + bias)
    best, best_jsd = None, -1.0
    for i in range(len(a)):
        if abs(float(torch.sigmoid(s[i] + bias) - base)) <= epsilon:
            jsd = float(js_divergence(torch.eye(len(a), dtype=a.dtype)[i], a))
            if jsd > best_jsd:
                best, best_jsd = i, jsd
    return best


def test_one_token_accepts_reference(capsys):
    check_one_token_adversary(reference_one_token)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda s, b, a, eps: int(a.argmin()), "moves P\\(positive\\)"),
    (lambda s, b, a, eps: int(a.argmax()), "another feasible token is farther"),
    (lambda s, b, a, eps: None, "expected a token index"),
])
def test_one_token_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_one_token_adversary(wrong)


# --- Exercise: predict the outcome of the counter-tests -------------------------------------------

def _tables(uniform_drop=(0.10, 0.08, 0.12, 0.07, 0.05), diag_lead=(-0.14, -0.17, -0.18, 0.29, -0.17),
            leak=(0.20, 0.18, 0.24, 0.25, 0.18), on_but=(1.0, 1.0, 1.0, 0.44, 1.0)):
    """Tables shaped like Chapter 7's: acc[seed, name] and diagnostic[seed, name] = (all, simple, contrast).
    ``diag_lead`` is the MLP with the BiLSTM's attention minus uniform weights on all reviews, ``leak`` the MLP
    with the exact adversary's weights minus uniform weights on contrast reviews, ``on_but`` the share of reviews
    whose attention peaks on "but" (four runs on "but", seed 3 elsewhere, as in the chapter's first run)."""
    from attention_course.teaching.checks.explanation import ON_BUT
    acc, diagnostic = {}, {}
    for seed, (drop, lead, adv, share) in enumerate(zip(uniform_drop, diag_lead, leak, on_but)):
        diagnostic[seed, ON_BUT] = share
        acc[seed, "BiLSTM"] = (0.99, 1.0, 0.99)
        acc[seed, "uniform BiLSTM"] = (0.99 - drop, 1.0, 0.9)
        diagnostic[seed, "uniform"] = (0.68, 1.0, 0.62)
        diagnostic[seed, "BiLSTM's"] = (0.68 + lead, 0.5, 0.55)
        diagnostic[seed, "adversarial"] = (0.85, 0.8, 0.62 + adv)
    return acc, diagnostic


PAIRS, ADVERSARY = [0.0001, 0.0004, 0.55, 0.0002, 0.0004, 0.55, 0.0003, 0.55, 0.0004, 0.55], [0.693] * 5
TRUE_ANSWER = {"uniform_suffices": False, "but_attention_useless": True, "adversary_leaks": True,
               "adversary_beyond_seeds": True}


def test_counter_tests_accepts_the_measured_outcome(capsys):
    from attention_course.teaching.checks.explanation import check_counter_tests, counter_test_verdicts
    acc, diagnostic = _tables()
    check_counter_tests(dict(TRUE_ANSWER), acc, diagnostic, PAIRS, ADVERSARY)
    out = capsys.readouterr().out
    assert out.startswith("Correct: ") and not any(ch.isdigit() for ch in out)
    margins = {k: round(v[1], 3) for k, v in counter_test_verdicts(acc, diagnostic, PAIRS, ADVERSARY).items()}
    assert margins == {"uniform_suffices": 0.05, "but_attention_useless": 0.14, "adversary_leaks": 0.18,
                       "adversary_beyond_seeds": 0.693}


def test_the_statements_do_not_depend_on_which_seeds_attend_to_but():
    """The same answer is right whether four, five or none of the runs put their attention on "but": the
    statement about such runs is vacuously true without them, and the others do not ask."""
    from attention_course.teaching.checks.explanation import check_counter_tests
    acc, diagnostic = _tables(diag_lead=(0.27, 0.29, 0.25, 0.3, 0.26), on_but=(0.4, 0.5, 0.3, 0.45, 0.2))  # none
    far = [0.3, 0.25, 0.28, 0.31, 0.2, 0.35, 0.3, 0.29, 0.33, 0.27]
    check_counter_tests(dict(TRUE_ANSWER), acc, diagnostic, far, ADVERSARY)
    acc, diagnostic = _tables(diag_lead=(-0.1, -0.12, -0.15, -0.2, -0.09), on_but=(1.0, 0.99, 0.97, 1.0, 0.96))
    check_counter_tests(dict(TRUE_ANSWER), acc, diagnostic, [0.0003] * 10, ADVERSARY)      # every run on "but"


def test_counter_tests_follow_the_measurements():
    """Other measurements, other truths: the check reads the tables, it does not know the answer."""
    from attention_course.teaching.checks.explanation import check_counter_tests
    acc, diagnostic = _tables(uniform_drop=(0.1, 0.1, -0.01, 0.1, 0.1), diag_lead=(0.02, -0.1, -0.1, 0.3, -0.1),
                              leak=(0.2, 0.2, -0.03, 0.2, 0.2))
    flipped = {k: not v for k, v in TRUE_ANSWER.items()}
    check_counter_tests(flipped, acc, diagnostic, PAIRS + [0.7, 0.7, 0.7], [0.5] * 5)    # median pair 0.55
    with pytest.raises(CheckFailed, match="'uniform_suffices'.*is True.*-1.0"):
        check_counter_tests(dict(TRUE_ANSWER), acc, diagnostic, PAIRS, ADVERSARY)


@pytest.mark.parametrize("change, diagnosis", [
    ({"uniform_suffices": True}, "'uniform_suffices' .* is False: learned minus uniform, points by seed: \\+10.0"),
    ({"but_attention_useless": False}, "'but_attention_useless' .* is True: runs on 'but': seeds \\[0, 1, 2, 4\\]"),
    ({"adversary_leaks": False}, "is True: exact adversary's minus uniform .* \\+20.0"),
    ({"adversary_beyond_seeds": False}, "median over the pairs of seeds 0.000"),
    ({"adversary_beyond_seeds": "yes"}, "must be True or False"),
    ({"adversary_beyond_seeds": None, "extra": True}, "unknown \\['extra'\\]"),
])
def test_counter_tests_rejects_wrong_predictions(change, diagnosis):
    from attention_course.teaching.checks.explanation import check_counter_tests
    acc, diagnostic = _tables()
    answer = {**TRUE_ANSWER, **change}
    with pytest.raises(CheckFailed, match=diagnosis):
        check_counter_tests(answer, acc, diagnostic, PAIRS, ADVERSARY)


def test_counter_tests_rejects_incomplete_input():
    from attention_course.teaching.checks.explanation import check_counter_tests
    acc, diagnostic = _tables()
    with pytest.raises(CheckFailed, match="missing \\['adversary_beyond_seeds'\\]"):
        check_counter_tests({k: v for k, v in TRUE_ANSWER.items() if k != "adversary_beyond_seeds"},
                            acc, diagnostic, PAIRS, ADVERSARY)
    with pytest.raises(CheckFailed, match="expected a dict"):
        check_counter_tests([True] * 4, acc, diagnostic, PAIRS, ADVERSARY)
    with pytest.raises(CheckFailed, match="the share of reviews whose attention peaks on 'but', in \\[0, 1\\]"):
        check_counter_tests(dict(TRUE_ANSWER), *_tables(on_but=(95, 100, 100, 44, 100)), PAIRS, ADVERSARY)
    from attention_course.teaching.checks.explanation import ON_BUT
    del diagnostic[4, ON_BUT]
    with pytest.raises(CheckFailed, match="lack the entry \\(4, \"attention on 'but'\"\\)"):
        check_counter_tests(dict(TRUE_ANSWER), acc, diagnostic, PAIRS, ADVERSARY)
    del diagnostic[2, "adversarial"]
    with pytest.raises(CheckFailed, match="lack the entry"):
        check_counter_tests(dict(TRUE_ANSWER), acc, diagnostic, PAIRS, ADVERSARY)


# --- The same exercise as code: a function that decides the statements from the tables ------------

def reference_verdicts(acc, diagnostic, pair_medians, adv_medians):
    import numpy as np
    from attention_course.teaching.checks.explanation import ON_BUT
    seeds = sorted({seed for seed, _ in acc})
    on_but = [s for s in seeds if diagnostic[s, ON_BUT] >= 0.95]
    return {"uniform_suffices": any(acc[s, "uniform BiLSTM"][0] >= acc[s, "BiLSTM"][0] for s in seeds),
            "but_attention_useless": all(diagnostic[s, "BiLSTM's"][0] <= diagnostic[s, "uniform"][0] for s in on_but),
            "adversary_leaks": all(diagnostic[s, "adversarial"][2] > diagnostic[s, "uniform"][2] for s in seeds),
            "adversary_beyond_seeds": bool(min(adv_medians) > np.median(pair_medians))}


def test_counter_verdict_function_accepts_reference(capsys):
    from attention_course.teaching.checks.explanation import check_counter_tests
    check_counter_tests(reference_verdicts, *_tables(), PAIRS, ADVERSARY)
    out = capsys.readouterr().out
    assert out.startswith("Correct: ") and not any(ch.isdigit() for ch in out)


@pytest.mark.parametrize("wrong, message", [
    (lambda *tables: dict(TRUE_ANSWER), "on uniform weights as good as learned"),      # hard-coded answers
    (lambda a, d, p, m: {**reference_verdicts(a, d, p, m), "adversary_beyond_seeds": min(m) > max(p)},
     "'adversary_beyond_seeds'.*yours says False"),
    (lambda a, d, p, m: {k: "yes" for k in TRUE_ANSWER}, "must be True or False"),
    (lambda a, d, p, m: {"uniform_suffices": False}, "missing"),
    (lambda a, d, p, m: 1 / 0, "raised ZeroDivisionError"),
])
def test_counter_verdict_function_rejects_wrong(wrong, message):
    from attention_course.teaching.checks.explanation import check_counter_tests
    with pytest.raises(CheckFailed, match=message):
        check_counter_tests(wrong, *_tables(), PAIRS, ADVERSARY)
