"""Every Chapter 3 exercise checker accepts the reference solution and rejects typical wrong answers."""

import math

import numpy as np
import pytest
import torch
from attention_course import causal_mask, padding_mask, scaled_dot_product_attention
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.self_attention import (
    LOOKUP_KEYS,
    LOOKUP_QUERIES,
    LOOKUP_SCALE,
    LOOKUP_VALUES,
    ROW_LOOP_BUGS,
    check_decoder_mask,
    check_doubling,
    check_leak_detector,
    check_masked_softmax,
    check_next_entry,
    check_order_blind,
    check_query_shapes,
    check_row_bug_case,
    check_score_scale,
    check_sharp_lookup,
    check_top_weight,
    longest_chain,
)


def test_scale_accepts_reference(capsys):
    check_score_scale(lambda d, sq, sk: 1 / (math.sqrt(d) * sq * sk))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda d, sq, sk: 1 / (d * sq * sk), "divide by d, the variance"),
    (lambda d, sq, sk: 1 / math.sqrt(d), "right only for unit variances"),
    (lambda d, sq, sk: 1 / (math.sqrt(d) * sq**2 * sk**2), "divide by the variances"),
    (lambda d, sq, sk: 1.0, "expected"),
])
def test_scale_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_score_scale(wrong)


def test_decoder_mask_accepts_reference(capsys):
    check_decoder_mask(lambda lengths, T: causal_mask(T) & padding_mask(lengths, T))
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda l, T: ~(causal_mask(T) & padding_mask(l, T)), "inverted"),
    (lambda l, T: causal_mask(T).T & padding_mask(l, T), "later positions"),
    (lambda l, T: causal_mask(T).expand(len(l), T, T), "attend to padding"),
    (lambda l, T: padding_mask(l, T).expand(len(l), T, T), "not causal"),
    (lambda l, T: (causal_mask(T) & padding_mask(l, T)).int(), "boolean tensor"),
    (lambda l, T: torch.ones(2, T, T, dtype=torch.bool), r"shape \(batch, T, T\)"),
    (lambda l, T: causal_mask(T) & padding_mask(l.clamp(max=2), T), "row 0 .* query 2, key 2"),
])
def test_decoder_mask_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_decoder_mask(wrong)


def reference_masked_softmax(scores, mask):
    return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), -1).masked_fill(~mask, 0.0)


def test_masked_softmax_accepts_reference(capsys):
    check_masked_softmax(reference_masked_softmax)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), -1), "row 2.* is NaN"),
    (lambda s, m: torch.softmax(s.masked_fill(~m, torch.finfo(s.dtype).min), -1), "uniform weights"),
    (lambda s, m: torch.softmax(s, -1), "exactly 0"),
    (lambda s, m: reference_masked_softmax(2 * s, m), "rows sum to 1 but the weights are wrong"),
    (lambda s, m: torch.exp(s).masked_fill(~m, 0.0), "must sum to 1"),
    (lambda s, m: reference_masked_softmax(s, m)[:, :3], "shape"),
])
def test_masked_softmax_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_masked_softmax(wrong)


# --- Exercise 3.3: the largest weight without the scale ------------------------------------------

def reference_top_weight(d, scaled, n=1000, seed=0, divide_by=None):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, 1, d, generator=g, dtype=torch.float64)
    k = torch.randn(n, 64, d, generator=g, dtype=torch.float64)      # each query its own 64 keys
    scores = (q @ k.transpose(1, 2))[:, 0]                            # (n, 64)
    if scaled:
        scores = scores / (divide_by(d) if divide_by else math.sqrt(d))
    return torch.softmax(scores, -1).max(-1).values.mean().item()


def test_top_weight_accepts_reference(capsys):
    check_top_weight(reference_top_weight)
    check_top_weight(lambda d, s: reference_top_weight(d, s, n=1000, seed=5))
    check_top_weight(lambda d, s: reference_top_weight(d, s, n=3000, seed=9))
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("wrong, message", [
    (lambda d, s: 1 / 64, "mean weight of a row"),
    (lambda d, s: reference_top_weight(d, not s), "swapped"),
    (lambda d, s: reference_top_weight(d, True), "do not sharpen"),
    (lambda d, s: reference_top_weight(d, s, divide_by=lambda d: d), "dividing by d"),
    (lambda d, s: reference_top_weight(d, s, n=3), "at least 1000"),
])
def test_top_weight_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_top_weight(wrong)


# --- Exercise 3.4: a test that finds a leaking causal mask --------------------------------------

def reference_leak_detector(attend, T=6, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, d, generator=g, dtype=torch.float64)
    base = attend(x)
    for j in range(1, T):                                  # change token j, compare every output before it
        y = x.clone()
        y[0, j] = torch.randn(d, generator=g, dtype=torch.float64)
        if not torch.allclose(attend(y)[0, :j], base[0, :j], rtol=0, atol=1e-9):
            return True
    return False


def _last_token_first_output(attend, T=6):
    x = torch.randn(1, T, 8, dtype=torch.float64)
    y = x.clone()
    y[0, -1] += 1.0
    return not torch.allclose(attend(y)[0, 0], attend(x)[0, 0])     # only the first output watched


def _any_change(attend, T=6):
    x = torch.randn(1, T, 8, dtype=torch.float64)
    y = x.clone()
    y[0, 3] += 1.0
    return not torch.allclose(attend(y), attend(x))      # compares the changed position and later ones too


def test_leak_detector_accepts_reference(capsys):
    check_leak_detector(reference_leak_detector)
    check_leak_detector(lambda a: torch.tensor(reference_leak_detector(a)))
    check_leak_detector(lambda a: np.bool_(reference_leak_detector(a)))
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("wrong, message", [
    (lambda a: False, "misses the leak in 'masked after the softmax, rows not renormalised'"),
    (lambda a: True, "says 'the package's causal attention' leaks"),
    (_last_token_first_output, "misses the leak in 'a mask one step too wide"),
    (_any_change, "says 'the package's causal attention' leaks"),
    (lambda a: "yes", "expected True or False"),
])
def test_leak_detector_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_leak_detector(wrong)


def test_every_planted_variant_is_what_it_claims():
    from attention_course.teaching.checks.self_attention import _causal_variants
    truth = {name: leaks for name, (_, leaks) in _causal_variants().items()}
    found = {name: reference_leak_detector(attend) for name, (attend, _) in _causal_variants().items()}
    assert found == truth
    assert sum(truth.values()) >= 4 and sum(not v for v in truth.values()) >= 3


# --- Exercise 3.5: what doubling T costs ---------------------------------------------------------

def test_doubling_accepts_reference(capsys):
    check_doubling(4, 2, 1)
    check_doubling(np.float64(4.0), torch.tensor(2.0), 1.0)
    out = capsys.readouterr().out
    assert out.count("Correct") == 2 and "all three factors match" in out


@pytest.mark.parametrize("answer, message", [
    ((2, 2, 1), "doubles both its rows and its columns"),
    ((8, 2, 1), "B T\\^2 numbers"),
    ((4, 1, 1), "the GRU's chain does grow"),
    ((4, 4, 1), "linear in T, not quadratic"),
    ((4, 2, 2), "self-attention's chain does not grow"),
    ((4, 2, 4), "self-attention's chain does not grow"),
    (("4", 2, 1), "as a number"),
])
def test_doubling_rejects_wrong(answer, message):
    with pytest.raises(CheckFailed, match=message):
        check_doubling(*answer)


def test_longest_chain_counts_sequential_operations():
    x = torch.ones(3, requires_grad=True)
    y = x
    for _ in range(5):
        y = y * 2                                           # five operations, one after another
    assert longest_chain(y) - longest_chain(x * 2) == 4
    wide = sum(x * k for k in range(5))                     # five products side by side, then the sums
    assert longest_chain(wide) < longest_chain(y) + 5
    with pytest.raises(ValueError, match="grad_fn"):
        longest_chain(torch.ones(3))


# --- Exercise 3.6: a sharp soft lookup -----------------------------------------------------------

def reference_sharp_lookup():
    K = torch.tensor(list(LOOKUP_KEYS.values()), dtype=torch.float64)
    V = torch.tensor(list(LOOKUP_VALUES.values()), dtype=torch.float64)
    Q = torch.tensor(LOOKUP_QUERIES, dtype=torch.float64)
    return torch.softmax(LOOKUP_SCALE * Q @ K.T, -1) @ V


def test_sharp_lookup_accepts_reference(capsys):
    check_sharp_lookup([2, 5, 7, 3.5, 6.25])
    check_sharp_lookup(reference_sharp_lookup())
    check_sharp_lookup(np.array([2.0, 5.0, 7.0, 3.5, 6.25]))
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("answer, message", [
    ([2, 5, 5, 3.5, 6.25], "exactly the key of 'dog'.*longer key"),
    ([2, 5, 7, 2, 6.25], "cat and dog equally.*mean of their values"),
    ([2, 5, 7, 5, 6.25], "cat and dog equally"),
    ([2, 5, 7, 3.5, 0], "scores every key the same.*mean of all the values"),
    ([5, 5, 7, 3.5, 6.25], "query 1 .*got 5, the package gives 2.000"),
    ([2, 5, 7, 3.5], "expected 5 predictions"),
    ("2 5 7", "tensor, numpy array or nested lists"),
])
def test_sharp_lookup_rejects_wrong(answer, message):
    with pytest.raises(CheckFailed, match=message):
        check_sharp_lookup(answer)


NEXT_ENTRY_W_Q = [[0, 1, -1], [0, -1, 1], [0, 1, 1], [3, 0, 0]]        # cat -> dog -> bird -> fish -> cat


def test_next_entry_accepts_reference(capsys):
    check_next_entry(NEXT_ENTRY_W_Q)
    check_next_entry(torch.tensor(NEXT_ENTRY_W_Q, dtype=torch.float32))
    check_next_entry(2 * np.array(NEXT_ENTRY_W_Q))                       # any queries that pick the right keys
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("answer, message", [
    (list(LOOKUP_KEYS.values()), "with W_Q = W_K every token asks for what it offers"),
    ([[0, 1, 0], [0, 0, 1], [0, 2, 2], [1, 0, 0]], "cat's query .* fish's key highest \\(a long key"),
    ([[1, 0, 0], [0, -1, 1], [0, 1, 1], [3, 0, 0]], "cat's query .* its own key highest"),
    ([[0, 1, -1], [0, -1, 1], [0, 1, 1], [0, 0, 0]], "fish's query .* tie for the largest score"),
    ([[0, 0.05, -0.05], [0, -1, 1], [0, 1, 1], [3, 0, 0]], "dog wins by too little"),
    (np.array(NEXT_ENTRY_W_Q).T, "nn.Linear's layout"),
    (np.zeros((4, 4)), "shape \\(d_model, d_k\\) = \\(4, 3\\)"),
    (np.full((4, 3), np.inf), "finite"),
])
def test_next_entry_rejects_wrong(answer, message):
    with pytest.raises(CheckFailed, match=message):
        check_next_entry(answer)


# --- Exercise 3.7: a case that shows three row-by-row bugs ---------------------------------------

def reference_row_case(dtype=torch.float64, big=400.0):
    g = torch.Generator().manual_seed(0)
    Q = torch.randn(4, 3, generator=g, dtype=dtype)
    K = torch.randn(4, 3, generator=g, dtype=dtype)
    V = torch.randn(4, 5, generator=g, dtype=dtype)                     # d_v = 5, not d_k = 3
    Q[0] = big * K[2]                                                   # one very large score
    return Q, K, V


def test_row_bug_case_accepts_reference(capsys):
    check_row_bug_case(*reference_row_case())
    check_row_bug_case(*reference_row_case(torch.float32, big=100.0))
    Q, K, V = reference_row_case()
    check_row_bug_case(Q[:3].numpy(), K.tolist(), V)                   # T_q != T_k: the column loop fails
    assert capsys.readouterr().out.count("Correct") == 3


def test_every_row_loop_is_wrong_and_runs_on_the_chapter_test():
    Q, K, V = reference_row_case()
    want, _ = scaled_dot_product_attention(Q, K, V)
    for name, loop in ROW_LOOP_BUGS.items():
        out = loop(Q, K, V)
        assert not (torch.isfinite(out).all() and torch.allclose(out, want, atol=1e-6)), name
    g = torch.Generator().manual_seed(1)                               # the chapter's square test, Section 3.4
    Q, K, V = (torch.randn(4, 8, generator=g, dtype=torch.float64) for _ in range(3))
    want, _ = scaled_dot_product_attention(Q, K, V)
    agree = {name: torch.allclose(loop(Q, K, V), want, atol=1e-9) for name, loop in ROW_LOOP_BUGS.items()}
    assert agree == {"loop A": False, "loop B": True, "loop C": True}


def _symmetric_case():
    Q, K, V = reference_row_case()
    return K, K, V                                                      # Q = K: symmetric scores


def _square_width_case():
    Q, K, V = reference_row_case()
    return Q, K, V[:, :3]                                               # d_v = d_k


def _small_scores_case():
    g = torch.Generator().manual_seed(0)
    return (torch.randn(4, 3, generator=g, dtype=torch.float64), torch.randn(4, 3, generator=g, dtype=torch.float64),
            torch.randn(4, 5, generator=g, dtype=torch.float64))


def _float32_scores_too_small():
    return reference_row_case(torch.float32, big=30.0)                 # largest score about 50: exp(50) fits float32


@pytest.mark.parametrize("case, message", [
    (_symmetric_case, "loop A agrees.*symmetric"),
    (_square_width_case, "loop B agrees.*d_v = d_k = 3"),
    (_small_scores_case, "loop C agrees.*overflows only above about 709 in float64"),
    (_float32_scores_too_small, "about 88 in float32"),
    (lambda: (torch.ones(4, 3, dtype=torch.float64), torch.ones(4, 2, dtype=torch.float64),
              torch.ones(4, 5, dtype=torch.float64)), "package rejects these inputs.*feature sizes differ"),
    (lambda: (torch.ones(1, 4, 3), torch.ones(4, 3), torch.ones(4, 5)), "must be a matrix"),
    (lambda: (torch.ones(4, 3), torch.ones(4, 3, dtype=torch.float64), torch.ones(4, 5)), "share one dtype"),
    (lambda: (torch.full((4, 3), float("nan")), torch.ones(4, 3), torch.ones(4, 5)), "finite"),
])
def test_row_bug_case_rejects_wrong(case, message):
    with pytest.raises(CheckFailed, match=message):
        check_row_bug_case(*case())


# --- Exercise 3.8: one query vector per step, or a query matrix -----------------------------------

RIGHT_SHAPES = {"seq2seq": (7, (2, 1, 11)), "self-attention": (1, (2, 7, 7)), "cross-attention": (1, (2, 7, 11))}


def test_query_shapes_accepts_reference(capsys):
    check_query_shapes(RIGHT_SHAPES)
    check_query_shapes({k: (np.int64(n), torch.Size(s)) for k, (n, s) in RIGHT_SHAPES.items()})
    check_query_shapes({k: [n, list(s)] for k, (n, s) in RIGHT_SHAPES.items()})
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("change, message", [
    ({"seq2seq": (1, (2, 7, 11))}, "asks 7 times, not 1"),
    ({"seq2seq": (7, (2, 7, 11))}, "stacked after the loop"),
    ({"seq2seq": (7, (2, 11))}, "shape \\(2, 1, 11\\), got \\(2, 11\\)"),
    ({"self-attention": (7, (2, 7, 7))}, "one call, not 7"),
    ({"self-attention": (1, (2, 7, 11))}, "same 7 positions"),
    ({"cross-attention": (1, (2, 11, 7))}, "rows are queries"),
    ({"cross-attention": 7}, "expected \\(number of calls, shape\\)"),
])
def test_query_shapes_rejects_wrong(change, message):
    with pytest.raises(CheckFailed, match=message):
        check_query_shapes({**RIGHT_SHAPES, **change})


def test_query_shapes_rejects_missing_keys():
    with pytest.raises(CheckFailed, match="expected a dict with the keys"):
        check_query_shapes({"seq2seq": RIGHT_SHAPES["seq2seq"]})
    with pytest.raises(CheckFailed, match="expected a dict"):
        check_query_shapes([RIGHT_SHAPES])


# --- Exercise 3.9: which steps can see word order --------------------------------------------------

RIGHT_ORDER = {"no weights": True, "learned projections": True, "causal mask": False, "dropout, eval mode": True,
               "several heads": True, "positions added": False}


def test_order_blind_accepts_reference(capsys):
    check_order_blind(RIGHT_ORDER)
    check_order_blind({k: np.bool_(v) for k, v in RIGHT_ORDER.items()})
    check_order_blind({k: torch.tensor(v) for k, v in RIGHT_ORDER.items()})
    assert capsys.readouterr().out.count("Correct") == 3


@pytest.mark.parametrize("step, message", [
    ("causal mask", "the mask stays put while the tokens move"),
    ("positions added", "belongs to a place, not to a token"),
    ("several heads", "each head is equivariant"),
    ("learned projections", "P X W = P \\(X W\\)"),
    ("no weights", "a softmax does not care"),
    ("dropout, eval mode", "dropout is off"),
])
def test_order_blind_rejects_each_wrong_step(step, message):
    with pytest.raises(CheckFailed, match=f"{step}: .*{message}"):
        check_order_blind({**RIGHT_ORDER, step: not RIGHT_ORDER[step]})


def test_order_blind_rejects_bad_answers():
    with pytest.raises(CheckFailed, match="expected True or False"):
        check_order_blind({**RIGHT_ORDER, "causal mask": "no"})
    with pytest.raises(CheckFailed, match="expected a dict with the keys"):
        check_order_blind({"causal mask": False})
    with pytest.raises(CheckFailed, match="causal mask: "):               # "attention never sees order"
        check_order_blind({k: True for k in RIGHT_ORDER})


def test_measuring_checks_leave_the_global_random_state_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    check_doubling(4, 2, 1)
    check_query_shapes(RIGHT_SHAPES)
    check_order_blind(RIGHT_ORDER)
    assert torch.equal(torch.rand(3), expected)
