"""Self-checks for Chapter 7, is attention explanation?"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable

import torch

from ...analysis.adversarial import js_divergence, total_variation
from ...analysis.importance import precision_at_k
from ...layers.attention import padding_mask
from ._base import FLOAT32_EPS, CheckFailed, as_float, as_number, call, ok

__all__ = ["check_js_divergence", "check_precision_at_k", "check_one_token_adversary", "check_counter_tests",
           "counter_test_verdicts", "COUNTER_TEST_STATEMENTS", "BUT_SHARE", "ON_BUT"]


# Exercise 7.1: Jensen-Shannon divergence ------------------------------------------------------

def _distributions() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(61)
    p = torch.softmax(3 * torch.randn(6, 5, generator=g, dtype=torch.float64), -1)
    q = torch.softmax(3 * torch.randn(6, 5, generator=g, dtype=torch.float64), -1)
    p[0], q[0] = torch.tensor([1.0, 0, 0, 0, 0]), torch.tensor([0, 0, 0, 0, 1.0])   # disjoint: ln 2
    p[1] = torch.tensor([0.5, 0.5, 0, 0, 0])                                          # zeros inside
    return p, q


def check_js_divergence(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(p (N, T), q (N, T)) -> (N,)`` Jensen-Shannon divergence in nats, row by row."""
    p, q = _distributions()
    want = js_divergence(p, q)
    got = as_float(call(fn, p.clone(), q.clone()), "the divergences")
    if got.shape != want.shape:
        raise CheckFailed(f"expected one divergence per row, shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if torch.isnan(got).any():
        rows = torch.isnan(got).nonzero().flatten().tolist()
        raise CheckFailed(f"rows {rows} are NaN: a zero probability must contribute 0 log 0 = 0, not 0 * -inf")
    # A float32 computation sums five terms of size <= ln 2 with logs: within about 1e-7 of float64.
    atol = 16 * FLOAT32_EPS
    if torch.allclose(got, want, rtol=0, atol=atol):
        ok("your divergences match the package's js_divergence, zero probabilities and disjoint supports "
           "included.")
        return
    if torch.allclose(got, want / math.log(2), rtol=0, atol=atol):
        raise CheckFailed("your values are in bits (log base 2, bound 1); use the natural log (bound ln 2)")
    kl = (torch.xlogy(p, p) - torch.xlogy(p, q)).sum(-1)
    if torch.allclose(got[2:], kl[2:], rtol=0, atol=atol):
        raise CheckFailed("this is KL(p || q), not JSD: compare each distribution with the mixture m = (p + q) / 2")
    swapped = as_float(call(fn, q.clone(), p.clone()), "the divergences")
    if swapped.shape != got.shape or not torch.allclose(swapped, got, rtol=0, atol=atol):
        raise CheckFailed("JSD is symmetric, yours is not: JSD(p, q) must equal JSD(q, p)")
    raise CheckFailed(f"got {[round(v, 6) for v in got.tolist()]}, expected {[round(v, 6) for v in want.tolist()]}")


# Exercise 7.2: precision at k against planted evidence ----------------------------------------

def _ranking_case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # Rows with 2, 1 and 3 evidence tokens, so a k that does not follow the evidence shows; no ties
    # among real tokens, so every tie-breaking rule gives the same answer.
    scores = torch.tensor([[-0.5, -0.1, -0.9, -0.2, 0.0, 0.0],        # all negative: padding (0) must not win
                           [0.1, 0.7, 0.2, 0.6, 0.0, 0.0],
                           [0.3, 0.2, 0.1, 0.05, 0.9, 0.8]])
    evidence = torch.tensor([[False, True, False, True, False, False],
                             [False, True, False, False, False, False],
                             [False, True, False, False, True, True]])
    lengths = torch.tensor([4, 4, 6])
    return scores, evidence, lengths


def _precision_fixed_k(scores, evidence, lengths, k: int) -> torch.Tensor:
    """Precision at the same k for every row (a wrong answer, for the diagnosis)."""
    real = padding_mask(lengths, scores.shape[1])[:, 0]
    order = torch.sort(scores.masked_fill(~real, float("-inf")), dim=1, descending=True, stable=True).indices
    return evidence.gather(1, order)[:, :k].double().sum(1) / k


def check_precision_at_k(fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(scores (N, T), evidence (N, T) bool, lengths (N,)) -> (N,)`` precision at k, k = the
    row's number of evidence tokens, ranking real tokens only."""
    scores, evidence, lengths = _ranking_case()
    want = precision_at_k(scores, evidence, lengths).double()
    got = as_float(call(fn, scores.clone(), evidence.clone(), lengths.clone()), "the precisions")
    if got.shape != want.shape:
        raise CheckFailed(f"expected one precision per review, shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if torch.allclose(got, want):
        ok("padding is never ranked and k follows the evidence.")
        return
    padded = precision_at_k(scores, evidence, torch.full_like(lengths, scores.shape[1])).double()
    if torch.allclose(got, padded):
        raise CheckFailed("your ranking lets padding positions in: in review 0 every real score is negative, so "
                          "the padding (score 0) took the top places; rank only the first lengths[n] tokens")
    for k in range(1, scores.shape[1] + 1):
        if torch.allclose(got, _precision_fixed_k(scores, evidence, lengths, k)):
            raise CheckFailed(f"you used the same k = {k} for every review; k is each review's number of evidence "
                              f"tokens: {evidence.sum(1).tolist()}")
    raise CheckFailed(f"got {[round(v, 3) for v in got.tolist()]}, expected {[round(v, 3) for v in want.tolist()]} "
                      f"(k is the number of evidence tokens of each review: {evidence.sum(1).tolist()})")


# Exercise 7.3: the one-token adversary ---------------------------------------------------------

def _adversary_case():
    token_logits = torch.tensor([4.0, -0.5, 6.0, 3.0, 0.2, 5.5], dtype=torch.float64)
    weights = torch.tensor([0.05, 0.05, 0.6, 0.1, 0.05, 0.15], dtype=torch.float64)
    return token_logits, -0.5, weights, 0.01


def _best_one_token(token_logits, bias, weights, epsilon):
    base = torch.sigmoid((weights * token_logits).sum() + bias)
    moved = torch.sigmoid(token_logits + bias)
    feasible = total_variation(moved, base.expand_as(moved)) <= epsilon
    jsd = js_divergence(torch.eye(len(weights), dtype=weights.dtype), weights.expand(len(weights), -1))
    jsd = jsd.masked_fill(~feasible, -1.0)
    return int(jsd.argmax()) if feasible.any() else None


def _as_index(answer, n: int) -> int | None:
    """A token index: an int, a numpy or torch integer, or a float holding a whole number; or None."""
    if answer is None:
        return None
    if isinstance(answer, bool) or (isinstance(answer, torch.Tensor) and answer.dtype == torch.bool):
        raise CheckFailed(f"got {answer!r}, expected a token index in 0..{n - 1} (or None), not a boolean")
    value = as_number(answer, "the token index")
    if not value.is_integer():
        raise CheckFailed(f"got {answer!r}: {value:g} is not a whole number; return the index of a token "
                          f"(an int in 0..{n - 1})")
    return int(value)


def check_one_token_adversary(fn: Callable[[torch.Tensor, float, torch.Tensor, float], int | None]) -> None:
    """``fn(token_logits (T,), bias, weights (T,), epsilon) -> index`` of the token that, given all
    the attention, moves P(positive) by at most epsilon and is farthest (JSD) from ``weights``."""
    token_logits, bias, weights, epsilon = _adversary_case()
    want = _best_one_token(token_logits, bias, weights, epsilon)
    got = _as_index(call(fn, token_logits.clone(), bias, weights.clone(), epsilon), len(weights))
    if got == want:
        ok("your token keeps the prediction within epsilon and is the farthest such one-token attention.")
        return
    base = torch.sigmoid((weights * token_logits).sum() + bias)
    if got is not None and 0 <= got < len(weights):
        change = float((torch.sigmoid(token_logits[got] + bias) - base).abs())
        if change > epsilon:
            raise CheckFailed(f"all attention on token {got} moves P(positive) by {change:.3f} > {epsilon}: the "
                              f"constraint is on the predicted probability, sigmoid(s_i + bias)")
        raise CheckFailed(f"token {got} is feasible, but another feasible token is farther from the original "
                          f"attention in JSD")
    raise CheckFailed(f"got {got!r}, expected a token index in 0..{len(weights) - 1}")


# Exercise ex-counter-tests: decide Wiegreffe & Pinter's counter-tests from the five-seed tables -------------
#
# Each statement is decided by a mechanism, not by which seeds a run happens to draw, so that its truth is the
# same at any seed and on any CPU: learned attention beats uniform weights in every seed; a run whose attention
# sits on "but" hands a context-free model nothing (vacuously true where no run does); the exact adversary's
# weights are computed from the BiLSTM's prediction and leak it; and no two seeds' attentions are as far apart,
# in median, as the adversary's distributions, which sit near the bound ln 2.

BUT_SHARE = 0.95     # a run "sits on but" when its attention peaks on "but" for at least this share of reviews
ON_BUT = "attention on 'but'"      # diagnostic[seed, ON_BUT]: the share of test reviews whose attention peaks there

COUNTER_TEST_STATEMENTS = {
    "uniform_suffices": "in at least one seed, the BiLSTM with attention frozen to uniform classifies the test "
                        "reviews at least as well as with learned attention",
    "but_attention_useless": "in every seed whose BiLSTM attention peaks on 'but' for at least 95% of the test "
                             "reviews, the context-free MLP handed that attention classifies the test reviews no "
                             "better than the same MLP with uniform weights",
    "adversary_leaks": "on contrast reviews, the MLP handed the exact adversary's weights beats the same MLP with "
                       "uniform weights, in every seed",
    "adversary_beyond_seeds": "in every seed, the adversary's median JSD from the BiLSTM's attention exceeds the "
                              "median JSD of the typical pair of seeds (the median over the pairs of their medians)",
}


def counter_test_verdicts(acc: dict, diagnostic: dict, pair_medians, adversary_medians) -> dict:
    """For each of ``COUNTER_TEST_STATEMENTS``: ``(holds, margin, evidence)`` from a chapter's measurements.
    ``acc[seed, name]`` and ``diagnostic[seed, name]`` are (all, simple, contrast) accuracies as Section 7.5
    tabulates them, and ``diagnostic[seed, ON_BUT]`` the share of test reviews whose BiLSTM attention peaks on
    "but"; ``pair_medians`` the median JSD of each pair of seeds, ``adversary_medians`` each seed's adversary's.
    ``margin`` is how far the closest seed is from the statement's threshold."""
    seeds = sorted({seed for seed, _ in acc})
    if not seeds:
        raise CheckFailed("the accuracy table is empty")
    try:
        drop = [acc[s, "BiLSTM"][0] - acc[s, "uniform BiLSTM"][0] for s in seeds]
        lead = [diagnostic[s, "BiLSTM's"][0] - diagnostic[s, "uniform"][0] for s in seeds]
        leak = [diagnostic[s, "adversarial"][2] - diagnostic[s, "uniform"][2] for s in seeds]
        shares = [float(diagnostic[s, ON_BUT]) for s in seeds]
    except KeyError as missing:
        raise CheckFailed(f"the tables lack the entry {missing}: pass the chapter's acc and diagnostic") from None
    pairs, advs = [float(v) for v in pair_medians], [float(v) for v in adversary_medians]
    if not pairs or not advs:
        raise CheckFailed("pass the median JSD of every pair of seeds and of every seed's adversary")
    if not all(0 <= v <= 1 for v in shares):
        raise CheckFailed(f"diagnostic[seed, {ON_BUT!r}] is the share of reviews whose attention peaks on 'but', "
                          f"in [0, 1]; got {shares}")
    on_but = [k for k, v in enumerate(shares) if v >= BUT_SHARE]          # positions of the runs on "but"
    typical = float(statistics.median(pairs))

    def pts(values) -> str:
        return " ".join(f"{100 * v:+.1f}" for v in values)

    useless = [lead[k] for k in on_but]
    return {
        "uniform_suffices": (min(drop) <= 0, abs(min(drop)),
                             f"learned minus uniform, points by seed: {pts(drop)}"),
        "but_attention_useless": (all(v <= 0 for v in useless), abs(max(useless)) if useless else 1.0,
                                  f"runs on 'but': seeds {[seeds[k] for k in on_but]}; BiLSTM's minus uniform "
                                  f"weights, points by seed: {pts(lead)}"),
        "adversary_leaks": (min(leak) > 0, abs(min(leak)),
                            f"exact adversary's minus uniform weights on contrast reviews, points by seed: "
                            f"{pts(leak)}"),
        "adversary_beyond_seeds": (min(advs) > typical, abs(min(advs) - typical),
                                   f"smallest adversary median {min(advs):.3f}, median over the pairs of seeds "
                                   f"{typical:.3f} (the pairs range over {min(pairs):.3f}-{max(pairs):.3f})"),
    }


def _made_up_tables() -> list[tuple[str, dict, dict, list, list]]:
    """Tables shaped like Section 7.5's on which the statements come out otherwise than in the chapter:
    ``(what is different, acc, diagnostic, pair_medians, adversary_medians)``."""
    def tables(drop, lead, leak, share):
        acc, diagnostic = {}, {}
        for seed, (d, g, k, b) in enumerate(zip(drop, lead, leak, share)):
            acc[seed, "BiLSTM"] = (0.99, 1.0, 0.99)
            acc[seed, "uniform BiLSTM"] = (0.99 - d, 1.0, 0.9)
            diagnostic[seed, "uniform"] = (0.68, 1.0, 0.62)
            diagnostic[seed, "BiLSTM's"] = (0.68 + g, 0.5, 0.55)
            diagnostic[seed, "adversarial"] = (0.85, 0.8, 0.62 + k)
            diagnostic[seed, ON_BUT] = b
        return acc, diagnostic

    flipped = tables(drop=(0.1, 0.1, -0.01, 0.1, 0.1), lead=(0.02, -0.1, -0.1, 0.3, -0.1),
                     leak=(0.2, 0.2, -0.03, 0.2, 0.2), share=(1.0, 1.0, 1.0, 0.44, 1.0))
    none_on_but = tables(drop=(0.1, 0.08, 0.12, 0.07, 0.05), lead=(0.27, 0.29, 0.25, 0.3, 0.26),
                         leak=(0.2, 0.18, 0.24, 0.25, 0.18), share=(0.4, 0.5, 0.3, 0.45, 0.2))
    pairs = [0.0001, 0.0004, 0.55, 0.0002, 0.0004, 0.55, 0.0003, 0.55, 0.0004, 0.55, 0.7, 0.7, 0.7]
    return [("uniform weights as good as learned ones in one seed, a run on 'but' that helps the MLP, an "
             "adversary that does not leak in one seed and one below the typical pair of seeds",
             *flipped, pairs, [0.5] * 5),
            ("no run whose attention sits on 'but' and one pair of seeds far apart", *none_on_but,
             [0.3, 0.25, 0.28, 0.31, 0.2, 0.7, 0.3, 0.29, 0.33, 0.27], [0.693] * 5)]


def _as_verdicts(answer, verb: str = "decide", noun: str = "verdict", array_booleans: bool = True) -> dict:
    """A dict {statement: True or False}, every statement named once; with ``array_booleans``, numpy and
    torch booleans are accepted as True or False (a function's answer is often computed with them)."""
    if not isinstance(answer, dict):
        raise CheckFailed(f"expected a dict {{statement name: True or False}}, got {type(answer).__name__}")
    missing = [k for k in COUNTER_TEST_STATEMENTS if k not in answer]
    unknown = [k for k in answer if k not in COUNTER_TEST_STATEMENTS]
    if missing or unknown:
        raise CheckFailed(f"{verb} every statement, by its name: missing {missing}, unknown {unknown}")
    out = {}
    for name, value in answer.items():
        if array_booleans and isinstance(value, torch.Tensor) and value.numel() == 1 and value.dtype == torch.bool:
            value = bool(value)
        elif array_booleans and type(value).__name__ == "bool_":     # numpy's boolean
            value = bool(value)
        if value is not True and value is not False:
            raise CheckFailed(f"the {noun} for '{name}' must be True or False, got {value!r}")
        out[name] = value
    return out


def _check_verdict_function(fn: Callable, acc: dict, diagnostic: dict, pair_medians, adversary_medians) -> None:
    cases = [("the chapter's tables", acc, diagnostic, list(pair_medians), list(adversary_medians)),
             *_made_up_tables()]
    for where, *tables in cases:
        want = counter_test_verdicts(*tables)
        got = _as_verdicts(call(fn, *[dict(t) if isinstance(t, dict) else list(t) for t in tables]))
        wrong = [name for name, (holds, _, _) in want.items() if got[name] != holds]
        if wrong:
            raise CheckFailed(f"on {where}: " + "; ".join(
                f"'{name}' ({COUNTER_TEST_STATEMENTS[name]}) is {want[name][0]}, yours says {got[name]}: "
                f"{want[name][2]}" for name in wrong))
    ok("your function decides every statement as the measurements do, on the chapter's tables and on "
       "made-up tables where the answers change.")


def check_counter_tests(predictions, acc: dict, diagnostic: dict, pair_medians, adversary_medians) -> None:
    """``predictions``: True or False for each key of ``COUNTER_TEST_STATEMENTS``, checked against the
    measurements of Section 7.5 (see :func:`counter_test_verdicts`); or a function
    ``fn(acc, diagnostic, pair_medians, adversary_medians) -> that dict``, checked on the chapter's tables and
    on made-up ones where the statements come out otherwise."""
    if callable(predictions):
        _check_verdict_function(predictions, acc, diagnostic, pair_medians, adversary_medians)
        return
    predictions = _as_verdicts(predictions, "predict", "prediction", array_booleans=False)
    verdicts = counter_test_verdicts(acc, diagnostic, pair_medians, adversary_medians)
    wrong = [name for name, (holds, _, _) in verdicts.items() if predictions[name] != holds]
    if wrong:
        raise CheckFailed("; ".join(f"'{name}' ({COUNTER_TEST_STATEMENTS[name]}) is {verdicts[name][0]}: "
                                    f"{verdicts[name][2]}" for name in wrong))
    ok("every prediction matches the chapter's measurements.")
