"""Every exercise self-check is fair to every correct answer and hard to fool (issue 15, items 1-3;
issue 37, item 5).

Each checker gets the reference solution in four forms, computed in float32, computed in float64,
returned as a numpy array and returned as nested lists, and must accept all of them; it gets at
least two named wrong answers and must reject each with its diagnosis; and a student function
that raises becomes a ``CheckFailed`` that quotes the student's own line, never a crash.

"Every checker" is every ``check_*`` function of ``attention_course.teaching``, wherever it lives
(the chapters' checks and the debug-this-attention checks): they are found by walking the package,
and each must sit in one of the tables below, or the test of coverage fails.
"""

import importlib
import inspect
import math
import pkgutil

import attention_course.teaching as teaching
import numpy as np
import pytest
import torch
from attention_course import scaled_dot_product_attention
from attention_course.layers.attention import causal_mask, padding_mask
from attention_course.models.seq2seq import reverse_padded
from attention_course.tasks.series import seasonal_naive
from attention_course.teaching.checks import (
    CheckFailed,
    check_linear_rnn_gradient,
    check_reverse_padded,
    check_token_accuracy,
)
from attention_course.teaching.checks.attention_rnn import (
    EXERCISE_HS,
    EXERCISE_QUERY,
    check_additive_scores,
    check_context_vector,
    check_later_input,
    check_temperature,
)
from attention_course.teaching.checks.beyond import (
    check_attention_max,
    check_attention_pool,
    check_horizon_queries,
    check_offset_scores,
    check_seasonal_naive,
)
from attention_course.teaching.checks.bottleneck import check_last_state
from attention_course.teaching.checks.cca import (
    check_blind_spot,
    check_canonical_correlations,
    check_competition,
    check_correlation_score,
    check_pmi_cross_matrix,
    check_principal_angles,
)
from attention_course.teaching.checks.explanation import (
    check_js_divergence,
    check_one_token_adversary,
    check_precision_at_k,
)
from attention_course.teaching.checks.multihead import (
    KV_SETUP,
    check_kv_cache_prediction,
    check_merge_detector,
    check_positions,
    check_split_heads,
    check_split_heads_time_first,
    check_three_lookup,
    check_to_torch,
)
from attention_course.teaching.checks.self_attention import (
    check_decoder_mask,
    check_doubling,
    check_leak_detector,
    check_masked_softmax,
    check_next_entry,
    check_row_bug_case,
    check_score_scale,
    check_sharp_lookup,
    check_top_weight,
)
from attention_course.teaching.debugging import (
    attention_missing_scale,
    attention_neg_inf_mask,
    attention_softmax_wrong_axis,
    check_attention,
    check_heads,
    check_key_padding_mask,
    key_padding_mask,
    key_padding_mask_wrong_axis,
    merge_heads,
    merge_heads_permute_first,
    split_heads,
    split_heads_permute_first,
)
from attention_course.tokens import EOS, PAD
from attention_course.train.seq2seq import accuracy
from test_checks_attention_rnn import later_rule, reference_additive
from test_checks_beyond import (
    _real,
    _scores,
    reference_horizon,
    reference_offset_scores,
    reference_pool,
    reference_soft_max,
)
from test_checks_bottleneck import last_real_state
from test_checks_cca import _correlation_score, _product, reference_angles, reference_cca, reference_pmi
from test_checks_explanation import reference_jsd, reference_one_token, reference_precision
from test_checks_multihead import _reference_three_lookup
from test_checks_self_attention import (
    NEXT_ENTRY_W_Q,
    reference_masked_softmax,
    reference_row_case,
    reference_top_weight,
)

# --- the four forms of an answer -----------------------------------------------------------------


def _cast(x, dtype):
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(dtype)
    if isinstance(x, np.ndarray) and np.issubdtype(x.dtype, np.floating):
        return x.astype({torch.float32: np.float32, torch.float64: np.float64}[dtype])
    return x


def _numpy(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def _form(take, give):
    """A student who turns each input into ``take(input)``, and each result into ``give(result)``: each part
    of a result that is a tuple, as the pair (output, weights); a result that is a function (a score
    function) is that student's too."""
    def form(fn):
        def student(*args):
            result = fn(*(take(a) for a in args))
            parts = result if isinstance(result, tuple) else (result,)
            parts = tuple(form(p) if callable(p) else give(p) for p in parts)
            return parts if isinstance(result, tuple) else parts[0]
        return student
    return form


def computed_in(dtype):
    """The student converts every floating-point input to ``dtype`` and computes there."""
    return _form(lambda a: _cast(a, dtype), lambda y: _cast(y, dtype))


FORMS = {
    "float32": computed_in(torch.float32),
    "float64": computed_in(torch.float64),
    "numpy": _form(lambda a: a, _numpy),
    "list": _form(lambda a: a, lambda y: _numpy(y).tolist()),
}


def _answer(form, answer) -> tuple:
    """The arguments of a checker for ``answer``, a function or a tuple of a checker's arguments (as
    (split, merge) or (rule, accuracy)): each function in ``form``, any other argument as it is."""
    return tuple(FORMS[form](a) if callable(a) else a for a in (answer if isinstance(answer, tuple) else (answer,)))


# --- reference solutions, written for any float dtype ----------------------------------------------
# Those the per-chapter checker tests already define are imported from there; the rest are here.


def ref_accuracy(p, t):
    return accuracy(p, t)[0]


def ref_additive_numpy(q, k, W_q, W_k, b_k, v):
    q, k, W_q, W_k, b_k, v = (x.numpy().astype(np.float64) for x in (q, k, W_q, W_k, b_k, v))
    return np.tanh((q @ W_q.T)[:, None, :] + (k @ W_k.T + b_k)[None]) @ v


def ref_decoder_mask(lengths, T):
    return causal_mask(T) & padding_mask(lengths, T)


def ref_split(x, H):
    return x.view(x.shape[0], x.shape[1], H, -1).transpose(1, 2)


def ref_positions(max_len, d, dtype=torch.float64, sin_first=True):
    t = torch.arange(max_len, dtype=dtype)[:, None]
    w = 10000.0 ** (-torch.arange(0, d, 2, dtype=dtype) / d)
    pe = torch.zeros(max_len, d, dtype=dtype)
    pe[:, 0::2], pe[:, 1::2] = (torch.sin(t * w), torch.cos(t * w)) if sin_first else (torch.cos(t * w),
                                                                                        torch.sin(t * w))
    return pe


def _to_torch(layer, order=(0, 1, 2), batch_first=True):
    module = torch.nn.MultiheadAttention(layer.embed_dim, layer.num_heads, batch_first=batch_first)
    lins = [layer.W_Q, layer.W_K, layer.W_V]
    with torch.no_grad():
        module.in_proj_weight.copy_(torch.cat([lins[i].weight for i in order]))
        module.in_proj_bias.copy_(torch.cat([lins[i].bias for i in order]))
        module.out_proj.weight.copy_(layer.W_O.weight)
        module.out_proj.bias.copy_(layer.W_O.bias)
    return module


def _token_accuracy_with_padding(p, t):
    return (p == t).double().mean(1)


def _token_accuracy_without_eos(p, t):
    real = (t != PAD) & (t != EOS)
    return ((p == t) & real).sum(1) / real.sum(1)


# Checkers that take a function: (checker, reference, {wrong answer: diagnosis}).
FUNCTION_CHECKS = {
    "reverse_padded": (check_reverse_padded, reverse_padded, {
        "whole rows flipped": (lambda s, l: s.flip(1), "padding included"),
        "unchanged": (lambda s, l: s, "nothing was reversed")}),
    "token_accuracy": (check_token_accuracy, ref_accuracy, {
        "padding counted": (_token_accuracy_with_padding, "counts padding"),
        "EOS ignored": (_token_accuracy_without_eos, "ignores EOS")}),
    "additive_scores": (check_additive_scores, reference_additive, {
        "no tanh": (lambda q, k, W_q, W_k, b_k, v: ((q @ W_q.T)[:, None] + (k @ W_k.T + b_k)[None]) @ v,
                    "left out the tanh"),
        "swapped matrices": (lambda q, k, W_q, W_k, b_k, v: reference_additive(q, k, W_k, W_q, b_k, v),
                             "which matrix multiplies")}),
    "decoder_mask": (check_decoder_mask, ref_decoder_mask, {
        "inverted": (lambda l, T: ~ref_decoder_mask(l, T), "inverted"),
        "causal only": (lambda l, T: causal_mask(T).expand(len(l), T, T), "attend to padding")}),
    "masked_softmax": (check_masked_softmax, reference_masked_softmax, {
        "-inf fill": (lambda s, m: torch.softmax(s.masked_fill(~m, float("-inf")), -1), "row 2.* is NaN"),
        "uniform empty row": (lambda s, m: torch.softmax(s.masked_fill(~m, torch.finfo(s.dtype).min), -1),
                              "uniform weights")}),
    "top_weight": (check_top_weight, reference_top_weight, {
        "mean weight": (lambda d, s: 1 / 64, "mean weight of a row"),
        "never unscaled": (lambda d, s: reference_top_weight(d, True), "do not sharpen")}),
    "split_heads": (check_split_heads, ref_split, {
        "reshaped straight": (lambda x, H: x.reshape(x.shape[0], H, x.shape[1], -1), "straight to"),
        "strided": (lambda x, H: x.view(x.shape[0], x.shape[1], -1, H).permute(0, 3, 1, 2), "strided")}),
    "split_heads_time_first": (check_split_heads_time_first,
                               lambda x, H: x.view(x.shape[0], x.shape[1], H, -1).permute(1, 2, 0, 3), {
        "batch and time swapped": (ref_split, "batch and time are swapped"),
        "reshaped straight": (lambda x, H: x.reshape(x.shape[1], H, x.shape[0], -1), "straight to")}),
    "positions": (check_positions, lambda n, d: ref_positions(n, d), {
        "sin and cos swapped": (lambda n, d: ref_positions(n, d, sin_first=False), "swapped"),
        "transposed": (lambda n, d: ref_positions(n, d).T, "transposed")}),
    "canonical_correlations": (check_canonical_correlations, reference_cca, {
        "squared": (lambda X, Y: reference_cca(X, Y) ** 2, "squared correlations"),
        "ascending": (lambda X, Y: reference_cca(X, Y)[::-1].copy(), "ascending order")}),
    "principal_angles": (check_principal_angles, reference_angles, {
        "radians": (lambda A, B: np.radians(reference_angles(A, B)), "radians"),
        "largest first": (lambda A, B: reference_angles(A, B)[::-1].copy(), "smallest angle first")}),
    "pmi_cross_matrix": (check_pmi_cross_matrix, reference_pmi, {
        "wrong sign": (lambda cov, p: -reference_pmi(cov, p), "wrong sign"),
        "half": (lambda cov, p: reference_pmi(cov, p) / 2, "factor of 2")}),
    "js_divergence": (check_js_divergence, reference_jsd, {
        "bits": (lambda p, q: reference_jsd(p, q) / math.log(2), "bits"),
        "KL": (lambda p, q: (torch.xlogy(p, p) - torch.xlogy(p, q)).sum(-1), "KL")}),
    "precision_at_k": (check_precision_at_k, reference_precision, {
        "k hard-coded to 2": (lambda s, e, l: reference_precision(s, e, l, fixed_k=2), "same k = 2 for every review"),
        "padding ranked": (lambda s, e, l: reference_precision(s, e, torch.full_like(l, s.shape[1])), "padding")}),
    "one_token_adversary": (check_one_token_adversary, reference_one_token, {
        "truncated float": (lambda s, b, a, eps: reference_one_token(s, b, a, eps) + 0.9, "not a whole number"),
        "most attended token": (lambda s, b, a, eps: int(a.argmax()), "another feasible token is farther")}),
    "offset_scores": (check_offset_scores, reference_offset_scores, {
        "mirrored": (lambda q, k, o, a: reference_offset_scores(q, k, -o, a),
                     r"query - offset instead of query \+ offset"),
        "alpha ignored": (lambda q, k, o, a: reference_offset_scores(q, k, o, 0.7), "do not change with alpha")}),
    "attention_pool": (check_attention_pool, reference_pool, {
        "softmax over the seeds": (lambda Z, S, n: _scores(Z, S).masked_fill(~_real(Z, n), -1e9).softmax(1) @ Z,
                                   "over the seeds"),
        "no scale": (lambda Z, S, n: (S @ Z.transpose(1, 2)).masked_fill(~_real(Z, n), float("-inf")).softmax(-1)
                     @ Z, "sqrt")}),
    "horizon_queries": (check_horizon_queries, reference_horizon, {
        "events ignored": (lambda hq, u, ev, mem: reference_horizon(hq, u, 0 * ev, mem), "ignore the scheduled events"),
        "context wrong": (lambda hq, u, ev, mem: (2 * reference_horizon(hq, u, ev, mem)[0],
                                                  reference_horizon(hq, u, ev, mem)[1]), "context is not")}),
    "attention_max": (check_attention_max, reference_soft_max, {
        "hard max": (lambda x, a: x.amax(-1), "hard max"),
        "mean": (lambda x, a: x.mean(-1), "that is the mean")}),
    "seasonal_naive": (check_seasonal_naive, seasonal_naive, {
        "naive": (lambda h, p, H: h[:, -1:].repeat(1, H), "naive forecast"),
        "off by one": (lambda h, p, H: seasonal_naive(h[:, :-1], p, H), "off by one")}),
    "last_state": (check_last_state, last_real_state, {
        "first state": (lambda hs, l: hs[:, 0][None], "FIRST token"),
        "last position": (lambda hs, l: hs[:, -1][None], "last POSITION")}),
    "later_input": (check_later_input, (later_rule, 0.75), {
        "early digits": ((lambda d: d[:, 0] > d[:, 1], 0.5), "already decide your label"),
        "accuracy too low": ((later_rule, 0.5), "can do better than that")}),
    "correlation_score": (check_correlation_score, _correlation_score, {
        "not centred": (lambda X, Y, a, b: _correlation_score(X, Y, a, b, centre=False), "did not centre"),
        "covariance": (lambda X, Y, a, b: _correlation_score(X, Y, a, b, scale="none"), "covariance")}),
    "blind_spot": (check_blind_spot, _product, {
        "linear": (lambda rng, n: (lambda x: (x, 2 * x + rng.standard_normal((n, 2))))(rng.standard_normal((n, 2))),
                   "CCA sees this relation"),
        "noise": (lambda rng, n: (rng.standard_normal((n, 2)), rng.standard_normal((n, 2))),
                  "neither does anything else")}),
    "three_lookup": (check_three_lookup, _reference_three_lookup, {
        "fixed positions": (lambda rng, n: _reference_three_lookup(rng, n, fixed=True), "not placed at random"),
        "one item marked twice": (lambda rng, n: _reference_three_lookup(rng, n, same_mark=True), "exactly one item")}),
    # The debug-this-attention checks (teaching/debugging.py)
    "attention": (check_attention, scaled_dot_product_attention, {
        "softmax over the queries": (attention_softmax_wrong_axis, "softmax over the wrong axis"),
        "no scale": (attention_missing_scale, "missing 1/sqrt"),
        "-inf mask": (attention_neg_inf_mask, "masking with -inf")}),
    "heads": (check_heads, (split_heads, merge_heads), {
        "permute first": ((split_heads_permute_first, merge_heads), "permute before reshape"),
        "matched pair": ((split_heads_permute_first, merge_heads_permute_first), "the heads mix time steps")}),
    "key_padding_mask": (check_key_padding_mask, key_padding_mask, {
        "no heads axis": (key_padding_mask_wrong_axis, "broadcasts over the wrong dimension"),
        "inverted": (lambda lengths, T: ~key_padding_mask(lengths, T), "inverted")}),
}

ACCEPT = [(name, form) for name in FUNCTION_CHECKS for form in FORMS]
REJECT = [(name, wrong, form) for name, (_, _, wrongs) in FUNCTION_CHECKS.items() for wrong in wrongs
          for form in ("float32", "float64")]


@pytest.mark.parametrize("name, form", ACCEPT)
def test_checker_accepts_the_reference_in_every_form(name, form, capsys):
    check, reference, _ = FUNCTION_CHECKS[name]
    check(*_answer(form, reference))
    assert capsys.readouterr().out.startswith("Correct: ")


@pytest.mark.parametrize("name, wrong, form", REJECT)
def test_checker_rejects_named_wrong_answers(name, wrong, form):
    check, _, wrongs = FUNCTION_CHECKS[name]
    answer, diagnosis = wrongs[wrong]
    with pytest.raises(CheckFailed, match=diagnosis):
        check(*_answer(form, answer))


@pytest.mark.parametrize("check, answer", [
    (check_positions, lambda n, d: ref_positions(n, d, torch.float32)),
    (check_offset_scores, lambda q, k, o, a: reference_offset_scores(q, k, o, a, torch.float32)),
], ids=["positions", "offset_scores"])
def test_checker_accepts_answers_computed_in_float32_from_integer_inputs(check, answer, capsys):
    check(answer)
    assert "Correct" in capsys.readouterr().out


def test_additive_scores_accepts_a_numpy_computation(capsys):
    check_additive_scores(ref_additive_numpy)
    assert "Correct" in capsys.readouterr().out


def test_to_torch_accepts_a_float64_module(capsys):
    check_to_torch(lambda layer: _to_torch(layer).double())
    check_to_torch(_to_torch)
    assert capsys.readouterr().out.count("Correct") == 2


@pytest.mark.parametrize("wrong, diagnosis", [(lambda layer: _to_torch(layer, order=(1, 0, 2)), "wrong order"),
                                              (lambda layer: _to_torch(layer, batch_first=False), "batch_first")])
def test_to_torch_rejects_named_wrong_answers(wrong, diagnosis):
    with pytest.raises(CheckFailed, match=diagnosis):
        check_to_torch(wrong)


def _fails_inside(*args):
    scale = 0
    return 1 / scale                                   # the student's bug


def _failing(check, reference) -> list:
    """The checker with each of the student's functions in ``reference`` failing in turn, the others
    correct (so that the merge of (split, merge) is reached)."""
    args = reference if isinstance(reference, tuple) else (reference,)
    return [pytest.param(check, args[:i] + (_fails_inside,) + args[i + 1:], id=f"{check.__name__}-{i}")
            for i, a in enumerate(args) if callable(a)]


# Checkers of a student's function whose answer is no number or array, or is held by its own test here: an
# exception in the student's code must still be a CheckFailed.
OTHER_FUNCTION_CHECKS = {check_to_torch: "returns a module: test_to_torch_accepts_a_float64_module",
                         check_score_scale: "returns a number: test_score_scale_accepts_every_form",
                         check_leak_detector: "returns a verdict, True or False",
                         check_merge_detector: "returns a verdict, True or False"}

STUDENT_FAILS = [p for check, reference, _ in FUNCTION_CHECKS.values() for p in _failing(check, reference)] + \
    [pytest.param(check, (_fails_inside,), id=check.__name__) for check in OTHER_FUNCTION_CHECKS] + \
    [pytest.param(check_correlation_score, (lambda X, Y, a, b: _fails_inside,), id="check_correlation_score-its score")]


@pytest.mark.parametrize("check, args", STUDENT_FAILS)
def test_an_exception_in_the_students_code_is_a_check_failure_naming_their_line(check, args):
    with pytest.raises(CheckFailed) as failure:
        check(*args)
    message = str(failure.value)
    assert "your function raised ZeroDivisionError" in message
    assert "test_checks_fair.py" in message and "1 / scale" in message


# --- checkers of values ---------------------------------------------------------------------------

def _float32_rnn_gradient(w, T=50):
    x = torch.zeros(T, requires_grad=True)                  # float32, as the exercise's autograd gives
    h = torch.zeros(())
    for t in range(T):
        h = w * h + x[t]
    h.backward()
    return x.grad[0]


@pytest.mark.parametrize("form", ["float32 autograd", "float64", "tensor", "numpy", "python float"])
def test_linear_rnn_gradient_accepts_every_form(form, capsys):
    small, large = {
        "float32 autograd": lambda: (_float32_rnn_gradient(0.9).item(), _float32_rnn_gradient(1.1).item()),
        "float64": lambda: (0.9 ** 49, 1.1 ** 49),
        "tensor": lambda: (_float32_rnn_gradient(0.9), _float32_rnn_gradient(1.1)),
        "numpy": lambda: (np.float32(0.9) ** 49, np.float32(1.1) ** 49),
        "python float": lambda: (float(np.float32(0.9 ** 49)), float(np.float32(1.1 ** 49))),
    }[form]()
    check_linear_rnn_gradient(small, large)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("small, large, diagnosis", [
    (0.9 ** 50, 1.1 ** 50, "off by one"),
    (0.9 * 49, 1.1 ** 49, "multiplies"),
    (0.9 ** 49 * (1 + 1e-3), 1.1 ** 49, r"got 0\.005732143\d*, expected a number near 0\.005726416\d*"),
    ("0.0057", 1.1 ** 49, "as a number, got str '0.0057'"),
])
def test_linear_rnn_gradient_rejects_named_wrong_answers(small, large, diagnosis):
    with pytest.raises(CheckFailed, match=diagnosis):
        check_linear_rnn_gradient(small, large)


SCORES = EXERCISE_HS @ EXERCISE_QUERY
CONTEXT = torch.softmax(SCORES.double(), 0) @ EXERCISE_HS.double()


@pytest.mark.parametrize("context", [CONTEXT.float(), CONTEXT, CONTEXT.numpy(), CONTEXT.tolist()],
                         ids=FORMS.keys())
def test_context_vector_accepts_every_form(context, capsys):
    check_context_vector(context)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("context, diagnosis", [(SCORES @ EXERCISE_HS, "raw scores"),
                                                (EXERCISE_HS[SCORES.argmax()].numpy(), "hard argmax")])
def test_context_vector_rejects_named_wrong_answers(context, diagnosis):
    with pytest.raises(CheckFailed, match=diagnosis):
        check_context_vector(context)


@pytest.mark.parametrize("tau", [0.21, 0.213, 0.2051, np.float64(0.21), np.float32(0.21), torch.tensor(0.21)])
def test_temperature_accepts_every_answer_that_rounds_to_it_and_keeps_the_condition(tau, capsys):
    check_temperature(tau)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("tau, diagnosis", [
    (0.214, r"top weight is only 0.989\d+ < 0.99"),        # rounds to 0.21, yet breaks the condition
    (0.215, r"top weight is only 0.989\d+ < 0.99"),
    (0.2, "higher temperature still reaches 0.99"),
    (0.5, "must be lower"),
    (-1.0, "positive"),
    (math.nan, "positive"),
])
def test_temperature_rejects_named_wrong_answers(tau, diagnosis):
    with pytest.raises(CheckFailed, match=diagnosis):
        check_temperature(tau)


SCALE_FORMS = {
    "float32 tensor": lambda d, sq, sk: 1 / (torch.sqrt(torch.tensor(float(d))) * sq * sk),
    "float64 tensor": lambda d, sq, sk: 1 / (torch.sqrt(torch.tensor(float(d), dtype=torch.float64)) * sq * sk),
    "numpy float32": lambda d, sq, sk: np.float32(1) / (np.sqrt(np.float32(d)) * np.float32(sq) * np.float32(sk)),
    "python float": lambda d, sq, sk: 1 / (math.sqrt(d) * sq * sk),
}


@pytest.mark.parametrize("form", SCALE_FORMS)
def test_score_scale_accepts_every_form(form, capsys):
    check_score_scale(SCALE_FORMS[form])
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, diagnosis", [
    (lambda d, sq, sk: 1 / (torch.tensor(float(d)) * sq * sk), "divide by d, the variance"),
    (lambda d, sq, sk: 1 / torch.sqrt(torch.tensor(float(d))), "right only for unit variances"),
    (lambda d, sq, sk: 1.001 / (math.sqrt(d) * sq * sk), r"got 0.125125, expected 0.125\b"),
])
def test_score_scale_rejects_named_wrong_answers(wrong, diagnosis):
    with pytest.raises(CheckFailed, match=diagnosis):
        check_score_scale(wrong)


@pytest.mark.parametrize("answer", [5, np.int64(5), torch.tensor(5), 5.0])
def test_one_token_adversary_accepts_every_integer_form(answer, capsys):
    check_one_token_adversary(lambda *args: answer)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("answer, diagnosis", [(5.9, "5.9 is not a whole number"), (True, "got True"),
                                               (None, "expected a token index")])
def test_one_token_adversary_does_not_truncate(answer, diagnosis):
    with pytest.raises(CheckFailed, match=diagnosis):
        check_one_token_adversary(lambda *args: answer)


def test_precision_at_k_fixture_rows_need_different_k():
    # the wrong answer "k = 2 for every review" passed while every fixture row had two evidence tokens
    with pytest.raises(CheckFailed):
        check_precision_at_k(lambda s, e, l: reference_precision(s, e, l, fixed_k=2))


def test_answers_that_are_not_numbers_are_named(capsys):
    for check, answer in [(check_reverse_padded, lambda s, l: None), (check_masked_softmax, lambda s, m: "weights"),
                          (check_seasonal_naive, lambda h, p, H: [[1, 2], [3]])]:
        with pytest.raises(CheckFailed, match="expected .*got (NoneType|str|list)"):
            check(answer)


# --- checkers of values, and every checker of the package -----------------------------------------

def _value(form, x):
    """A number or an array ``x`` in one of the four forms: a float32 or float64 tensor, a numpy array, lists."""
    t = torch.as_tensor(np.asarray(x, dtype=np.float64))
    return {"float32": t.float(), "float64": t, "numpy": t.numpy(), "list": t.tolist()}[form]


def _kv_cache_answer(value):
    B, S, T, H = (KV_SETUP[k] for k in ("batch", "source_len", "steps", "num_heads"))
    return (B, H, T, KV_SETUP["d_model"] // H), value(B * T), value(B * T * (T + 1) // 2), value(B * T * S)


# Checkers of values: (checker, its arguments for a correct answer, given a function that puts a value in a form).
VALUE_CHECKS = {
    "doubling": (check_doubling, lambda value: (value(4), value(2), value(1))),
    "sharp_lookup": (check_sharp_lookup, lambda value: (value([2, 5, 7, 3.5, 6.25]),)),
    "next_entry": (check_next_entry, lambda value: (value(NEXT_ENTRY_W_Q),)),
    "row_bug_case": (check_row_bug_case, lambda value: tuple(value(t) for t in reference_row_case())),
    "competition": (check_competition, lambda value: (value(math.floor(math.exp(3.0)) + 2),)),
    "kv_cache_prediction": (check_kv_cache_prediction, _kv_cache_answer),
}

# Checkers of values whose forms have their own test above.
VALUE_CHECKS_HELD_ABOVE = {
    "check_linear_rnn_gradient": test_linear_rnn_gradient_accepts_every_form,
    "check_context_vector": test_context_vector_accepts_every_form,
    "check_temperature": test_temperature_accepts_every_answer_that_rounds_to_it_and_keeps_the_condition,
}

# Checkers of predictions that are no number or array (names, words, True or False, indices into a text
# read off a trained model) and run no code of the student's: the four forms do not apply.
PREDICTIONS = {
    "check_alignment_reading": "input indices per text, read off the chapter's trained translator",
    "check_length_curves": "a letter per curve and 'above' or 'below'",
    "check_split_identity": "names of candidate splits",
    "check_beam_prediction": "strings of 'a' and 'b'",
    "check_query_shapes": "a count and a shape per kind of attention",
    "check_order_blind": "True or False per step",
    "check_counter_tests": "True or False per statement",
    "check_search_error": "a table of next-token probabilities, decoded by the package's own searches",
}


@pytest.mark.parametrize("name, form", [(name, form) for name in VALUE_CHECKS for form in FORMS])
def test_value_checker_accepts_the_answer_in_every_form(name, form, capsys):
    check, arguments = VALUE_CHECKS[name]
    check(*arguments(lambda x: _value(form, x)))
    assert capsys.readouterr().out.startswith("Correct: ")


def _every_check() -> dict:
    """Every ``check_*`` function defined in ``attention_course.teaching`` or any module under it."""
    modules = [teaching] + [importlib.import_module(info.name)
                            for info in pkgutil.walk_packages(teaching.__path__, f"{teaching.__name__}.")]
    return {name: f for module in modules for name, f in vars(module).items()
            if name.startswith("check_") and inspect.isfunction(f) and f.__module__ == module.__name__}


def test_every_check_of_the_package_is_held_to_the_rule():
    """No checker escapes this file: each one found in the package is in exactly one table above."""
    found = set(_every_check())
    assert {"check_attention", "check_heads", "check_key_padding_mask"} <= found        # outside teaching.checks
    held = ([check.__name__ for check, _, _ in FUNCTION_CHECKS.values()]
            + [check.__name__ for check in OTHER_FUNCTION_CHECKS]
            + [check.__name__ for check, _ in VALUE_CHECKS.values()]
            + list(VALUE_CHECKS_HELD_ABOVE) + list(PREDICTIONS))
    twice = sorted({name for name in held if held.count(name) > 1})
    assert not twice, f"checks in more than one table: {twice}"
    assert set(held) == found, (f"checks no table here holds: {sorted(found - set(held))}; "
                                f"names here that are no check of the package: {sorted(set(held) - found)}")
