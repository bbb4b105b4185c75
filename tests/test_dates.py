"""Tests of the date generator and its character encoding."""

import datetime as dt
import re

import numpy as np
import pytest
import torch
from attention_course.tasks.dates import (
    FORMATS,
    MAX_SOURCE_LEN,
    SOURCE_VOCAB,
    TARGET_VOCAB,
    date_batch,
    decode_target,
    encode_sources,
    format_date,
    random_dates,
)
from attention_course.tokens import EOS, PAD

DAY = dt.date(1995, 8, 3)   # a Thursday


@pytest.mark.parametrize("fmt, kwargs, text", [
    ("month_day_year", {}, "August 3, 1995"),
    ("month_day_year", {"abbreviate": True, "weekday": True, "case": 1}, "THU, AUG 3, 1995"),
    ("day_month_year", {"weekday": True, "case": 0}, "thursday, 3 august 1995"),
    ("month_day_year_padded", {"abbreviate": True}, "Aug 03 1995"),
    ("M/D/YY", {}, "8/3/95"),
    ("MM/DD/YYYY", {}, "08/03/1995"),
    ("D.M.YYYY", {}, "3.8.1995"),
    ("YYYY/MM/DD", {}, "1995/08/03"),
])
def test_format_date(fmt, kwargs, text):
    assert format_date(DAY, fmt, **kwargs) == text


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown date format"):
        format_date(DAY, "DD-MM")


def test_random_dates_cover_everything_and_are_consistent():
    pairs = random_dates(np.random.default_rng(0), 4000, split="train")
    assert pairs == random_dates(np.random.default_rng(0), 4000, split="train")
    years = set()
    for text, iso in pairs:
        day = dt.date.fromisoformat(iso)
        years.add(day.year)
        assert 1970 <= day.year <= 2030
        assert len(text) <= MAX_SOURCE_LEN
        if re.match(r"^\d{1,2}/\d{1,2}/\d\d$", text):              # M/D/YY: the century is implied
            m, d, yy = map(int, text.split("/"))
            assert (m, d) == (day.month, day.day) and yy == day.year % 100
    assert min(years) == 1970 and max(years) == 2030
    texts = [t for t, _ in pairs]
    assert any(t.isupper() for t in texts) and any(t.islower() and t[0].isalpha() for t in texts)
    assert any(re.match(r"^\d{4}/\d\d/\d\d$", t) for t in texts)
    assert any(re.match(r"^\d+\.\d+\.\d{4}$", t) for t in texts)
    assert len(FORMATS) == 7


def test_weekday_is_right():
    for text, iso in random_dates(np.random.default_rng(1), 500, split="train"):
        if "," in text and text.split(",")[0].isalpha():
            name = text.split(",")[0].lower()
            assert dt.date.fromisoformat(iso).strftime("%A").lower().startswith(name)


def test_encode_and_decode_round_trip():
    src, lengths = encode_sources(["3.8.1995", "Aug 03 1995"])
    assert src.shape == (2, 11) and lengths.tolist() == [8, 11]
    assert "".join(SOURCE_VOCAB[i] for i in src[0, :8]) == "3.8.1995" and (src[0, 8:] == PAD).all()
    ids = [TARGET_VOCAB.index(ch) for ch in "1995-08-03"] + [EOS, PAD]
    assert decode_target(torch.tensor(ids)) == "1995-08-03"


@pytest.mark.parametrize("texts, message", [
    (["Août 3, 1995"], r"outside the vocabulary: \['û'\]"),
    (["3 aug 1995", "5 mai 2001!", "é"], r"\['!', 'é'\]"),
    ([""], "empty"),
    (["   "], "empty"),
    (["1" * 33], "longer than MAX_SOURCE_LEN=32"),
    ([], "non-empty list"),
    ("3.8.1995", "non-empty list"),
])
def test_encode_rejects_bad_input(texts, message):
    with pytest.raises(ValueError, match=message):
        encode_sources(texts)


def test_date_batch_targets():
    b = date_batch(np.random.default_rng(2), 16, split="train")
    assert b.target.shape == (16, 11) and (b.target[:, -1] == EOS).all()
    for row in b.target:
        assert re.match(r"^\d{4}-\d\d-\d\d$", decode_target(row))


def test_days_are_split_by_value():
    from attention_course.tasks.dates import TEST_DAYS, TRAIN_DAYS
    assert not set(TRAIN_DAYS) & set(TEST_DAYS)
    assert len(TRAIN_DAYS) + len(TEST_DAYS) == dt.date(2030, 12, 31).toordinal() - dt.date(1970, 1, 1).toordinal() + 1
    assert 0.09 < len(TEST_DAYS) / (len(TRAIN_DAYS) + len(TEST_DAYS)) < 0.11
    test_isos = {dt.date.fromordinal(int(d)).isoformat() for d in TEST_DAYS}
    assert all(iso not in test_isos for _, iso in random_dates(np.random.default_rng(5), 3000, split="train"))
    assert all(iso in test_isos for _, iso in random_dates(np.random.default_rng(5), 3000, split="test"))


def test_unknown_split_is_named():
    with pytest.raises(ValueError, match="split must be one of"):
        random_dates(np.random.default_rng(0), 3, split="validation")
    with pytest.raises(ValueError, match="split must be one of"):
        date_batch(np.random.default_rng(0), 3, split="all")


def test_no_test_date_or_string_occurs_in_the_default_training_stream(monkeypatch):
    """Record every batch the default date translator trains on (the training loop is replaced by
    a recorder that draws the same batches) and compare with the held-out test set."""
    import attention_course.experiments.dates as experiment
    from attention_course.tasks.dates import SOURCE_VOCAB

    seen_src, seen_target = set(), set()

    def record(model, next_batch, steps, **kwargs):
        for _ in range(steps):
            b = next_batch()
            for row, length in zip(b.src.tolist(), b.lengths.tolist()):
                seen_src.add("".join(SOURCE_VOCAB[i] for i in row[:length]))
            seen_target.update(decode_target(row) for row in b.target.tolist())
        return []

    monkeypatch.setattr(experiment, "train_seq2seq", record)
    experiment.train_date_translator()
    experiment.train_date_transformer()
    assert len(seen_target) > 10_000            # 38,400 + 51,200 draws from about 20,000 training days
    test = experiment.date_test_batch(5000)
    test_src = {"".join(SOURCE_VOCAB[i] for i in row[:length])
                for row, length in zip(test.src.tolist(), test.lengths.tolist())}
    test_target = {decode_target(row) for row in test.target.tolist()}
    assert not test_src & seen_src
    assert not test_target & seen_target
    # The check can fail: the same number of dates drawn from the training days does overlap.
    control = date_batch(np.random.default_rng(experiment.HELD_OUT_SEED), 5000, split="train")
    assert {decode_target(row) for row in control.target.tolist()} & seen_target
