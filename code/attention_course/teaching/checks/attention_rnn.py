"""Self-checks for Chapter 2, attention in the RNN encoder-decoder."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping

import torch

from ...layers.scores import AdditiveScore
from ...models.seq2seq import Encoder
from ...tasks.dates import TARGET_LEN, decode_target, encode_sources
from ...tasks.digits import DIGIT_VOCAB
from ._base import CheckFailed, as_float, as_number, as_tensor, call, first_wrong, ok

__all__ = ["EXERCISE_HS", "EXERCISE_QUERY", "check_context_vector", "check_additive_scores",
           "check_temperature", "LATER_LENGTH", "LATER_ROW", "check_later_input", "ALIGNMENT_DATES",
           "alignment_argmax", "check_alignment_reading", "check_length_curves"]

# Exercise 2.1: four encoder states (rows) and one decoder state.
EXERCISE_HS = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 3.0]])
EXERCISE_QUERY = torch.tensor([0.5, -1.0, 1.0])


def check_context_vector(context) -> None:
    """The dot-score context vector of ``EXERCISE_QUERY`` over ``EXERCISE_HS``, shape (3,)."""
    context = as_float(context, "the context vector").flatten()
    hs, query = EXERCISE_HS.double(), EXERCISE_QUERY.double()
    scores = hs @ query
    weights = torch.softmax(scores, 0)
    want = weights @ hs
    if context.shape != want.shape:
        raise CheckFailed(f"the context vector has one entry per feature of hs: expected shape "
                          f"{tuple(want.shape)}, got {tuple(context.shape)}")
    if torch.allclose(context, want, atol=1e-4):
        ok("your context vector is the average of the rows of EXERCISE_HS, weighted by the softmax of their dot "
           "scores with EXERCISE_QUERY.")
        return
    if torch.allclose(context, scores @ hs, atol=1e-4):
        raise CheckFailed("you weighted the rows by the raw scores: apply the softmax first so the weights are "
                          "positive and sum to 1")
    if torch.allclose(context, hs[scores.argmax()], atol=1e-4):
        raise CheckFailed("you picked the single best row (a hard argmax): attention averages all rows with "
                          "softmax weights")
    if torch.allclose(context, hs.mean(0), atol=1e-4):
        raise CheckFailed("that is the plain average of the rows (uniform weights); the scores should decide "
                          "the weights")
    raise CheckFailed(f"got {[round(c, 6) for c in context.tolist()]}, which is not the softmax-weighted "
                      f"average of the rows, {[round(c, 6) for c in want.tolist()]}")


def check_additive_scores(fn: Callable[..., torch.Tensor]) -> None:
    """``fn(query (T, H), keys (S, H), W_q (A, H), W_k (A, H), b_k (A,), v (A,)) -> (T, S)`` additive scores."""
    g = torch.Generator().manual_seed(3)
    H, A, T, S = 4, 5, 2, 6
    score = AdditiveScore(H, A)
    with torch.no_grad():
        for p in score.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    query, keys = torch.randn(T, H, generator=g), torch.randn(S, H, generator=g)
    want = score.double()(query[None].double(), keys[None].double())[0].detach()
    args = (query, keys, score.W_q.weight.detach(), score.W_k.weight.detach(), score.W_k.bias.detach(),
            score.v.weight.detach()[0])
    got = as_float(call(fn, *(a.float().clone() for a in args)), "the scores")
    if got.shape != want.shape:
        raise CheckFailed(f"expected one score per (query, key) pair, shape {tuple(want.shape)}, "
                          f"got {tuple(got.shape)}")
    if torch.allclose(got, want, atol=1e-5):
        ok("your additive scores match the package's AdditiveScore.")
        return
    query, keys, W_q, W_k, b_k, v = (a.double() for a in args)
    no_tanh = (query @ W_q.T)[:, None, :] + (keys @ W_k.T + b_k)[None, :, :]
    if torch.allclose(got, no_tanh @ v, atol=1e-5):
        raise CheckFailed("you left out the tanh: without it the additive score is linear and reduces to "
                          "q-part + k-part, so every query ranks the keys the same way")
    i, j = divmod(int((got - want).abs().argmax()), want.shape[1])
    raise CheckFailed(f"the scores differ from v^T tanh(W_q q + W_k k + b_k), most at query {i}, key {j}: got "
                      f"{got[i, j].item():.6f}, expected {want[i, j].item():.6f}; check which matrix multiplies "
                      f"which vector")


_TEMPERATURE_SCORES = torch.tensor([2.0, 1.0, 0.5, 0.0], dtype=torch.float64)


def _top_weight(tau: float) -> float:
    return torch.softmax(_TEMPERATURE_SCORES / tau, 0)[0].item()


def _largest_temperature(target: float = 0.99) -> float:
    """The exact tau where the top weight falls to ``target`` (it falls as tau grows): bisection."""
    lo, hi = 1e-3, 10.0
    for _ in range(80):
        lo, hi = ((lo + hi) / 2, hi) if _top_weight((lo + hi) / 2) >= target else (lo, (lo + hi) / 2)
    return lo


def check_temperature(tau: float) -> None:
    """The largest temperature (to 2 decimals) at which softmax(s / tau) puts at least 0.99 on the
    largest of the scores s = [2.0, 1.0, 0.5, 0.0].

    Accepted: any tau that rounds to that answer and still gives a top weight >= 0.99, that is
    [0.205, 0.21300...] (0.214 rounds to 0.21 too, but its top weight is below 0.99)."""
    tau = as_number(tau, "the temperature")
    exact = _largest_temperature()                        # 0.21300...
    want = math.floor(exact * 100) / 100                  # the largest on the 0.01 grid
    if not tau > 0:
        raise CheckFailed(f"got tau={tau}: a temperature must be positive")
    top_at = _top_weight(tau)
    if top_at >= 0.99 and abs(tau - want) <= 0.005:
        ok("that is the largest temperature, to two decimals, at which the top weight still reaches the target: "
           "below it the softmax is as good as a hard argmax.")
        return
    if top_at < 0.99:
        raise CheckFailed(f"at tau={tau:g} the top weight is only {top_at:.6f} < 0.99: the temperature must be "
                          f"lower")
    raise CheckFailed(f"at tau={tau:g} the top weight is {top_at:.6f} >= 0.99, but a higher temperature "
                      f"still reaches 0.99")


# Exercise 2.3 (ex-later-input): a case where row t needs a later token ----------------------------

LATER_LENGTH = 4     # the check runs the rule on every sequence of 4 digits
LATER_ROW = 1        # ... and asks what the row hs[:, 1], read after src[:, 0] and src[:, 1], can know


def _all_digit_sequences() -> torch.Tensor:
    """Every sequence of LATER_LENGTH digits 0..9, (10**LATER_LENGTH, LATER_LENGTH), in lexicographic order."""
    return torch.tensor(list(itertools.product(range(10), repeat=LATER_LENGTH)))


def _rows_at(encoder: Encoder, digits: torch.Tensor) -> torch.Tensor:
    """Row ``LATER_ROW`` of ``hs`` for digit sequences (n, LATER_LENGTH), tokens as in ``DIGIT_VOCAB``."""
    with torch.no_grad():
        hs, _ = encoder(digits + 3, torch.full((len(digits),), LATER_LENGTH))
    return hs[:, LATER_ROW]


def check_later_input(rule: Callable[[torch.Tensor], torch.Tensor], best_left_to_right: float) -> None:
    """``rule(digits (n, 4) of 0..9) -> labels (n,)`` must give a label that the row ``hs[:, 1]`` of a
    left-to-right encoder, which has read only ``digits[:, :2]``, cannot always know;
    ``best_left_to_right`` is the predicted best accuracy of any function of ``digits[:, :2]`` on it
    (over all 10**4 sequences, equally likely)."""
    digits = _all_digit_sequences()
    labels = as_tensor(call(rule, digits.clone()), "the labels")
    if labels.shape != (len(digits),):
        raise CheckFailed(f"expected one label per sequence, shape ({len(digits)},), got {tuple(labels.shape)}")
    if labels.is_floating_point() and not torch.equal(labels, labels.round()):
        raise CheckFailed("labels must be classes (integers or booleans), not fractions")
    labels = labels.long()
    if not torch.equal(labels, as_tensor(call(rule, digits.clone()), "the labels").long()):
        raise CheckFailed("your rule gave different labels to the same sequences on a second call: the label must be "
                          "a function of the input, with no randomness")
    if labels.unique().numel() < 2:
        raise CheckFailed("every sequence gets the same label: there is nothing to tell apart")
    # The best any function of the first LATER_ROW + 1 digits can do: the majority label of each prefix.
    n_prefix = 10 ** (LATER_ROW + 1)
    groups = labels.reshape(n_prefix, -1)                     # lexicographic order: one row per prefix
    majority = torch.stack([(groups == c).sum(1) for c in labels.unique()]).amax(0)
    bound = majority.sum().item() / len(digits)
    if bound == 1.0:
        raise CheckFailed(f"digits[:, :{LATER_ROW + 1}] already decide your label, and hs[:, {LATER_ROW}] of a "
                          f"left-to-right encoder has read them: it can know the label. Make the label depend on a "
                          f"LATER digit, digits[:, {LATER_ROW + 1}] or digits[:, {LATER_ROW + 2}]")
    guess = as_number(best_left_to_right, "the best accuracy of a left-to-right row")
    if not abs(guess - bound) <= 0.005:
        if math.isclose(guess, 1.0):
            hint = ("no function of the first two digits is right for every sequence, because your label needs a "
                    "later one")
        elif guess < bound:
            hint = ("a left-to-right row can do better than that: for each pair of first two digits it may answer the "
                    "label most sequences with that start have")
        else:
            hint = "that is more than any function of the first two digits can reach"
        raise CheckFailed(f"you predicted {guess:g}, but the best any function of digits[:, :{LATER_ROW + 1}] can do "
                          f"on your rule is {bound:.4f} (the majority label of each of the {n_prefix} starts): {hint}")
    # Two sequences with the same start and different labels, run through the package's encoders.
    mixed = int((majority < groups.shape[1]).nonzero()[0])
    pair = torch.stack([digits[mixed * groups.shape[1] + int((groups[mixed] == c).nonzero()[0])]
                        for c in groups[mixed].unique()[:2]])
    with torch.random.fork_rng():
        torch.manual_seed(0)
        left_to_right = Encoder(len(DIGIT_VOCAB), 8, 16, "gru").eval()
        both_ways = Encoder(len(DIGIT_VOCAB), 8, 16, "gru", bidirectional=True).eval()
    uni, bi = _rows_at(left_to_right, pair), _rows_at(both_ways, pair)
    if not torch.allclose(uni[0], uni[1], atol=1e-6) or torch.allclose(bi[0], bi[1], atol=1e-4):   # package broken
        raise AssertionError("the package's encoders do not behave as left-to-right and bidirectional encoders")
    ok("your label needs a later digit, and your accuracy is the best a left-to-right row can reach on it. Two "
       "sequences with the same start and different labels get the same row from the package's left-to-right "
       "Encoder and two different rows from the bidirectional one: only the bidirectional row can know the label.")


# Exercise 2.4 (ex-read-alignment): read an alignment map -----------------------------------------

# One held-out day, 6 April 2007, in two numeric formats: the same digits, with the roles of the first
# two numbers swapped. Asked: where the last digit of the month (output character 6 of YYYY-MM-DD) and
# the last digit of the day (output character 9) put their largest weight.
ALIGNMENT_DATES = ("4/6/07", "6.4.2007")
_ALIGNMENT_ISO = "2007-04-06"
_ASKED = (6, 9)


def alignment_argmax(model, texts=ALIGNMENT_DATES) -> dict[str, tuple[tuple[int, float], ...]]:
    """For each text, (input index, weight) of the largest weight of output characters 6 and 9, the
    last digits of month and day, in ``model``'s greedy translation."""
    src, lengths = encode_sources(list(texts), device=next(model.parameters()).device)
    ids, weights = model.greedy_decode(src, lengths, TARGET_LEN + 1, return_weights=True)   # (B, 11, S)
    out = {}
    for row, text in enumerate(texts):
        if decode_target(ids[row]) != _ALIGNMENT_ISO:
            raise CheckFailed(f"the model translates {text!r} as {decode_target(ids[row])!r}, not {_ALIGNMENT_ISO!r}: "
                              f"pass the chapter's trained translator, date_model")
        w = weights[row, :, :len(text)].detach().cpu().double()
        out[text] = tuple((int(w[i].argmax()), float(w[i].max())) for i in _ASKED)
    return out


def _reading(reading, texts) -> dict[str, tuple[int, int]]:
    if not isinstance(reading, Mapping) or set(reading) != set(texts):
        raise CheckFailed(f"expected a dict with the keys {list(texts)}, each mapped to two input indices "
                          f"(month, day), got {reading!r}")
    out = {}
    for text in texts:
        pair = reading[text]
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise CheckFailed(f"for {text!r} give two input indices, (month, day), got {pair!r}")
        out[text] = tuple(int(as_number(i, f"an index into {text!r}")) for i in pair)
    return out


def check_alignment_reading(model, reading: Mapping[str, tuple[int, int]]) -> dict[str, tuple[float, float]]:
    """``reading[text] = (i, j)``: the input indices (from 0) on which the trained translator ``model``
    puts its largest weight while writing the last digit of the month (i) and of the day (j), for each
    text of ``ALIGNMENT_DATES``. Returns the largest weights, {text: (month, day)}."""
    reading = _reading(reading, ALIGNMENT_DATES)
    found = alignment_argmax(model)
    want = {text: tuple(i for i, _ in found[text]) for text in ALIGNMENT_DATES}
    if reading == want:
        ok("in both texts your indices are where the translator puts its largest weights while it writes the "
           "month's last digit and the day's: the same characters, aligned by their role, which only the separator "
           "settles.")
        return {text: tuple(w for _, w in found[text]) for text in ALIGNMENT_DATES}
    first, second = ALIGNMENT_DATES
    if reading[first] == reading[second]:
        raise CheckFailed(f"you gave the same indices for both texts: they hold the same digits, but in {second!r} "
                          f"the '.' marks the day-first format, so the first number is the day")
    for text in ALIGNMENT_DATES:
        got, exp = reading[text], want[text]
        if got == exp:
            continue
        if got == exp[::-1]:
            raise CheckFailed(f"in {text!r} you swapped month and day: the month's last digit looks at index {exp[0]} "
                              f"({text[exp[0]]!r}), the day's at index {exp[1]} ({text[exp[1]]!r})")
        if tuple(i - 1 for i in got) == exp:
            raise CheckFailed(f"for {text!r} your indices are one too high: input indices count from 0")
        k = 0 if got[0] != exp[0] else 1
        field = ("month", "day")[k]
        index, weight = found[text][k]
        raise CheckFailed(f"in {text!r} the {field}'s last digit (output character {_ASKED[k]} of {_ALIGNMENT_ISO}) "
                          f"puts its largest weight, {weight:.2f}, on index {index} ({text[index]!r}), not on index "
                          f"{got[k]}" + (f" ({text[got[k]]!r})" if 0 <= got[k] < len(text) else " (outside the text)"))
    raise AssertionError("unreachable")


# Exercise 2.5 (ex-length-rerun): the length experiment, rerun with attention ----------------------

CURVE_SHAPES = {"A": "stays above 0.9 at every tested length",
                "B": "falls below 0.9 at some length but stays above 0.5",
                "C": "falls below 0.5 at some length"}


def _shape(accuracy) -> str:
    low = min(accuracy)
    return "A" if low > 0.9 else "B" if low > 0.5 else "C"


def check_length_curves(shapes: Mapping[str, str], exact_vs_independent: str, plain_result: Mapping,
                        attention_result: Mapping) -> dict[str, float]:
    """Predictions about Section 2.6's curves, checked against its measured results (dicts with
    ``length``, ``token_accuracy`` and ``exact_match`` lists, as ``run_length_experiment`` returns them):
    ``shapes = {"plain": letter, "attention": letter}`` with the letters of ``CURVE_SHAPES``, and
    ``exact_vs_independent``, "above" or "below": the attention model's exact match on the longest
    strings against p ** (L + 1), what it would be if each of the L digits and the <eos> were right
    independently with its per-token accuracy p. Returns the measured numbers."""
    for name, result in (("plain_result", plain_result), ("attention_result", attention_result)):
        if not isinstance(result, Mapping) or not {"length", "token_accuracy", "exact_match"} <= set(result):
            raise CheckFailed(f"{name} must be the per-length results of run_length_experiment (a dict with length, "
                              f"token_accuracy and exact_match)")
    if not isinstance(shapes, Mapping) or set(shapes) != {"plain", "attention"}:
        raise CheckFailed(f"expected shapes as a dict with the keys 'plain' and 'attention', got {shapes!r}")
    guesses = {k: str(v).strip().upper() for k, v in shapes.items()}
    for k, v in guesses.items():
        if v not in CURVE_SHAPES:
            raise CheckFailed(f"shapes[{k!r}] must be one of {sorted(CURVE_SHAPES)}, got {shapes[k]!r}")
    lows = {"plain": min(plain_result["token_accuracy"]), "attention": min(attention_result["token_accuracy"])}
    measured = {name: _shape([low]) for name, low in lows.items()}
    first_wrong(guesses, measured, {
        "plain": lambda: (f"the plain model's curve {CURVE_SHAPES[measured['plain']]} (its lowest accuracy is "
                          f"{lows['plain']:.2f}): one vector has to carry the whole string, and in this budget the "
                          f"model did not learn to fit long strings into it"),
        "attention": lambda: (f"with attention the curve {CURVE_SHAPES[measured['attention']]} (its lowest accuracy "
                              f"is {lows['attention']:.2f}): the decoder no longer carries the string, it reads the "
                              f"state of each digit when it writes it")})
    L = attention_result["length"][-1]
    p, exact = attention_result["token_accuracy"][-1], attention_result["exact_match"][-1]
    independent = p ** (L + 1)
    side = "above" if exact > independent else "below"
    answer = str(exact_vs_independent).strip().lower()
    if answer not in ("above", "below"):
        raise CheckFailed(f"exact_vs_independent must be 'above' or 'below', got {exact_vs_independent!r}")
    if answer != side:
        raise CheckFailed(f"at {L} digits the exact match is {exact:.3f}, {side} p^{L + 1} = {p:.3f}^{L + 1} = "
                          f"{independent:.3f}" + (": the errors are not independent. They come in bunches (a skipped "
                                                  "or repeated digit shifts every later one), so they fill fewer "
                                                  "strings" if side == "above" else ""))
    per_wrong = (L + 1) * (1 - p) / (1 - exact) if exact < 1 else 0.0     # wrong tokens per wrong string
    ok("both curve shapes and the side of the independent-errors product match the measured results.")
    return {"plain_lowest": lows["plain"], "attention_lowest": lows["attention"], "exact": exact,
            "independent": independent, "wrong_tokens_per_wrong_string": per_wrong}
