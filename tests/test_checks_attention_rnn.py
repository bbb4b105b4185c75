"""Chapter 2's exercise checkers accept the reference and reject typical wrong answers."""

import pytest
import torch
from attention_course.teaching.checks import CheckFailed
from attention_course.teaching.checks.attention_rnn import (
    EXERCISE_HS,
    EXERCISE_QUERY,
    check_additive_scores,
    check_context_vector,
    check_temperature,
)

SCORES = EXERCISE_HS @ EXERCISE_QUERY


def test_context_accepts_reference(capsys):
    check_context_vector(torch.softmax(SCORES, 0) @ EXERCISE_HS)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (SCORES @ EXERCISE_HS, "raw scores"),
    (EXERCISE_HS[SCORES.argmax()], "hard argmax"),
    (EXERCISE_HS.mean(0), "plain average"),
    (torch.zeros(4), "expected shape"),
    (torch.softmax(SCORES, 0) @ EXERCISE_HS + 0.1, "not the softmax-weighted average"),
])
def test_context_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_context_vector(wrong)


def reference_additive(q, k, W_q, W_k, b_k, v):
    return torch.tanh((q @ W_q.T)[:, None, :] + (k @ W_k.T + b_k)[None]) @ v


def test_additive_accepts_reference(capsys):
    check_additive_scores(reference_additive)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, message", [
    (lambda q, k, W_q, W_k, b_k, v: ((q @ W_q.T)[:, None, :] + (k @ W_k.T + b_k)[None]) @ v, "left out the tanh"),
    (lambda q, k, W_q, W_k, b_k, v: torch.tanh((q @ W_k.T)[:, None, :] + (k @ W_q.T + b_k)[None]) @ v,
     "which matrix multiplies"),
    (lambda q, k, W_q, W_k, b_k, v: reference_additive(q, k, W_q, W_k, b_k, v).T, "one score per"),
])
def test_additive_rejects_wrong(wrong, message):
    with pytest.raises(CheckFailed, match=message):
        check_additive_scores(wrong)


def test_temperature():
    check_temperature(0.21)
    with pytest.raises(CheckFailed, match="must be lower"):
        check_temperature(0.5)
    with pytest.raises(CheckFailed, match="higher temperature"):
        check_temperature(0.1)


# --- Exercise 2.3 (ex-later-input): a label that needs a later token ------------------------------

from attention_course.teaching.checks.attention_rnn import (  # noqa: E402
    ALIGNMENT_DATES,
    check_alignment_reading,
    check_later_input,
    check_length_curves,
)


def later_rule(digits):
    return digits[:, 3] > digits[:, 1]          # best from the first two digits: 75 of 100 (exact)


def test_later_input_accepts_reference(capsys):
    check_later_input(later_rule, 0.75)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("rule, best", [
    (lambda d: d[:, 3] % 2, 0.5),
    (lambda d: (d[:, 2] + d[:, 3]) % 3, 0.34),
    (lambda d: (d[:, 2] * 10 + d[:, 0]).numpy(), 0.1),          # numpy labels, ten classes
])
def test_later_input_accepts_other_valid_cases(rule, best, capsys):
    check_later_input(rule, best)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("rule, best, message", [
    (lambda d: d[:, 0] > d[:, 1], 0.5, "already decide your label"),
    (lambda d: d[:, 1] % 2, 1.0, "already decide your label"),
    (later_rule, 1.0, "no function of the first two digits is right for every sequence"),
    (later_rule, 0.5, "can do better than that"),
    (later_rule, 0.8, "more than any function"),
    (lambda d: d[:, 3] % 2, 0.75, r"0\.5000"),
    (lambda d: torch.zeros(len(d)), 0.5, "same label"),
    (lambda d: torch.randint(0, 2, (len(d),)), 0.5, "no randomness"),
    (lambda d: later_rule(d)[:, None], 0.75, r"shape \(10000,\)"),
    (lambda d: d[:, 3] / 3, 0.5, "classes"),
])
def test_later_input_rejects_wrong(rule, best, message):
    with pytest.raises(CheckFailed, match=message):
        check_later_input(rule, best)


# --- Exercise 2.4 (ex-read-alignment): reading an alignment map, on a stand-in model with known weights

class StandInTranslator(torch.nn.Module):
    """Writes ``iso`` for every text and puts weight 0.9 on ``where[text] = (i, j)`` while writing output
    characters 6 and 9; every other weight is spread evenly."""

    def __init__(self, where, iso="2007-04-06"):
        super().__init__()
        self.where, self.iso = where, iso
        self.anchor = torch.nn.Parameter(torch.zeros(1))

    def greedy_decode(self, src, lengths, max_len, return_weights=False):
        from attention_course.tasks.dates import SOURCE_VOCAB, TARGET_VOCAB
        from attention_course.tokens import EOS
        ids = torch.tensor([[TARGET_VOCAB.index(ch) for ch in self.iso] + [EOS]] * len(src))
        weights = torch.zeros(len(src), max_len, src.shape[1])
        for row, length in enumerate(lengths.tolist()):
            text = "".join(SOURCE_VOCAB[i] for i in src[row, :length].tolist())
            weights[row, :, :length] = 1.0 / length
            for out, at in zip((6, 9), self.where[text]):
                weights[row, out, :length] = 0.1 / (length - 1)
                weights[row, out, at] = 0.9
        return (ids, weights) if return_weights else ids


READING = {"4/6/07": (0, 2), "6.4.2007": (2, 0)}      # the month's and the day's last digit, by role


def test_alignment_reading_accepts_reference(capsys):
    weights = check_alignment_reading(StandInTranslator(READING), dict(READING))
    assert "Correct" in capsys.readouterr().out
    assert set(weights) == set(ALIGNMENT_DATES) and all(abs(w - 0.9) < 1e-6 for pair in weights.values() for w in pair)


@pytest.mark.parametrize("reading, message", [
    ({"4/6/07": (0, 2), "6.4.2007": (0, 2)}, "same indices for both texts"),
    ({"4/6/07": (2, 0), "6.4.2007": (2, 0)}, "same indices for both texts"),
    ({"4/6/07": (0, 2), "6.4.2007": (0, 4)}, "6.4.2007.* month's last digit .* index 2"),
    ({"4/6/07": (1, 3), "6.4.2007": (3, 1)}, "one too high"),
    ({"4/6/07": (0, 2), "6.4.2007": (2, 20)}, "outside the text"),
    ({"4/6/07": (0, 2)}, "expected a dict with the keys"),
    ([(0, 2), (2, 0)], "expected a dict"),
    ({"4/6/07": 0, "6.4.2007": (2, 0)}, "two input indices"),
])
def test_alignment_reading_rejects_wrong(reading, message):
    with pytest.raises(CheckFailed, match=message):
        check_alignment_reading(StandInTranslator(READING), reading)


def test_alignment_reading_swapped_roles():
    with pytest.raises(CheckFailed, match="swapped month and day"):
        check_alignment_reading(StandInTranslator(READING), {"4/6/07": (2, 0), "6.4.2007": (0, 2)})


def test_alignment_reading_needs_a_model_that_translates():
    with pytest.raises(CheckFailed, match="translates .* as '2007-06-04'"):
        check_alignment_reading(StandInTranslator(READING, iso="2007-06-04"), dict(READING))


def test_alignment_reading_follows_the_model_not_the_human_reading(capsys):
    odd = {"4/6/07": (4, 2), "6.4.2007": (2, 0)}      # a model whose month digit looks at the year
    with pytest.raises(CheckFailed, match=r"'4/6/07' the month's .* index 4 \('0'\), not on index 0"):
        check_alignment_reading(StandInTranslator(odd), dict(READING))
    check_alignment_reading(StandInTranslator(odd), odd)
    assert "Correct" in capsys.readouterr().out


# --- Exercise 2.5 (ex-length-rerun): the length curves, predicted ---------------------------------

LENGTHS = list(range(3, 31, 3))
PLAIN = {"length": LENGTHS, "token_accuracy": [0.97, 0.67, 0.48, 0.36, 0.29, 0.24, 0.22, 0.2, 0.17, 0.18],
         "exact_match": [0.9, 0.2, 0.01, 0, 0, 0, 0, 0, 0, 0]}
ATTENTION = {"length": LENGTHS, "token_accuracy": [1.0, 0.996, 0.988, 0.992, 0.991, 0.988, 0.989, 0.989, 0.984, 0.976],
             "exact_match": [1.0, 0.99, 0.95, 0.95, 0.93, 0.9, 0.9, 0.88, 0.85, 0.844]}


def test_length_curves_accept_reference(capsys):
    measured = check_length_curves({"plain": "C", "attention": "A"}, "above", PLAIN, ATTENTION)
    assert "Correct" in capsys.readouterr().out
    assert measured["exact"] == 0.844 and abs(measured["independent"] - 0.976 ** 31) < 1e-12


def test_length_curves_accept_lowercase(capsys):
    check_length_curves({"plain": "c", "attention": " a"}, "Above", PLAIN, ATTENTION)
    assert "Correct" in capsys.readouterr().out


@pytest.mark.parametrize("shapes, side, message", [
    ({"plain": "A", "attention": "A"}, "above", "plain model's curve falls below 0.5"),
    ({"plain": "B", "attention": "A"}, "above", r"lowest accuracy is 0\.17"),
    ({"plain": "C", "attention": "B"}, "above", "with attention the curve stays above 0.9"),
    ({"plain": "C", "attention": "A"}, "below", "errors are not independent"),
    ({"plain": "C", "attention": "D"}, "above", "must be one of"),
    ({"plain": "C"}, "above", "keys 'plain' and 'attention'"),
    ({"plain": "C", "attention": "A"}, "higher", "'above' or 'below'"),
])
def test_length_curves_reject_wrong(shapes, side, message):
    with pytest.raises(CheckFailed, match=message):
        check_length_curves(shapes, side, PLAIN, ATTENTION)


def test_length_curves_follow_the_measurements():
    """Where the measured exact match is below p ** (L + 1), 'below' is the answer the check accepts."""
    independent = dict(ATTENTION, exact_match=[*ATTENTION["exact_match"][:-1], 0.4])
    with pytest.raises(CheckFailed, match=r"0\.400, below"):
        check_length_curves({"plain": "C", "attention": "A"}, "above", PLAIN, independent)
    check_length_curves({"plain": "C", "attention": "A"}, "below", PLAIN, independent)


def test_length_curves_need_results():
    with pytest.raises(CheckFailed, match="run_length_experiment"):
        check_length_curves({"plain": "C", "attention": "A"}, "above", PLAIN["token_accuracy"], ATTENTION)
