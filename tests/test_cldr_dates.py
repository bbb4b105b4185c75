"""Tests of the CLDR date task (six languages through babel) and its two translators."""

import datetime as dt

import numpy as np
import pytest
from attention_course.tasks.cldr_dates import (
    CLDR_VERSION,
    FORMATS,
    ISO_VOCAB,
    KOREAN_VOCAB,
    LEFT_OUT,
    MAX_KOREAN_LEN,
    MAX_SOURCE_LEN,
    SOURCE_VOCAB,
    TEST_DAYS,
    TRAIN_DAYS,
    cldr_date,
    decode_iso,
    decode_korean,
    en_ko_batch,
    encode_korean,
    encode_sources,
    multilingual_batch,
    random_cldr_dates,
    romanize,
)
from attention_course.tokens import EOS, PAD
from babel.dates import format_date

DAY = dt.date(2024, 3, 7)     # a Thursday


@pytest.mark.parametrize("locale, width, text", [
    ("en", "full", "Thursday, March 7, 2024"),
    ("en", "short", "3/7/24"),
    ("fr", "full", "jeudi 7 mars 2024"),
    ("fr", "short", "07/03/2024"),
    ("de", "full", "Donnerstag, 7. März 2024"),
    ("de", "short", "07.03.24"),
    ("es", "long", "7 de marzo de 2024"),
    ("ja", "full", "2024年3月7日木曜日"),
    ("ja", "short", "2024/03/07"),
    ("ko", "full", "2024년 3월 7일 목요일"),
    ("ko", "medium", "2024. 3. 7."),
    ("ko", "short", "24. 3. 7."),
])
def test_cldr_texts(locale, width, text):
    assert cldr_date(DAY, locale, width) == text == format_date(DAY, width, locale=locale)


def test_cldr_version_and_formats():
    assert CLDR_VERSION == "49"               # babel 2.19.0 is built from CLDR 49
    assert len(FORMATS) == 23 and ("es", "short") not in FORMATS and ("es", "short") in LEFT_OUT
    with pytest.raises(ValueError, match="unknown CLDR format"):
        cldr_date(DAY, "it", "full")


@pytest.fixture(scope="module")
def calendar():
    """Every day 1970-2030 in every kept format, and in Spanish "short": {(locale, width): [texts]}."""
    days = [dt.date.fromordinal(int(o)) for o in sorted(np.concatenate([TRAIN_DAYS, TEST_DAYS]))]
    return days, {f: [cldr_date(d, *f) for d in days] for f in (*FORMATS, ("es", "short"))}


def test_every_text_names_one_day_and_fits_the_vocabulary(calendar):
    days, texts = calendar
    named: dict[str, set[int]] = {}
    for f in FORMATS:
        for d, t in zip(days, texts[f]):
            named.setdefault(t, set()).add(d.toordinal())
    assert all(len(v) == 1 for v in named.values())           # no text, in any kept format, names two days
    allowed = set(SOURCE_VOCAB[3:])
    assert {ch for t in named for ch in t} <= allowed
    assert max(map(len, named)) <= MAX_SOURCE_LEN
    korean = texts["ko", "full"]
    assert {ch for t in korean for ch in t} <= set(KOREAN_VOCAB[3:]) and max(map(len, korean)) <= MAX_KOREAN_LEN
    # The check can fail: with Spanish "short" added, thousands of texts name two days.
    for d, t in zip(days, texts["es", "short"]):
        named.setdefault(t, set()).add(d.toordinal())
    assert sum(len(v) > 1 for v in named.values()) == 8052


def test_vocabularies_are_sorted_and_start_with_the_specials():
    for vocab in (SOURCE_VOCAB, KOREAN_VOCAB):
        assert vocab[:3] == ["<pad>", "<bos>", "<eos>"] and vocab[3:] == sorted(set(vocab[3:]))
    assert "년" in KOREAN_VOCAB and "목" in KOREAN_VOCAB and "曜" in SOURCE_VOCAB and "ä" in SOURCE_VOCAB


def test_days_are_split_by_value_in_every_language():
    test_isos = {dt.date.fromordinal(int(d)).isoformat() for d in TEST_DAYS}
    train = random_cldr_dates(np.random.default_rng(5), 3000, split="train")
    test = random_cldr_dates(np.random.default_rng(5), 3000, split="test")
    assert all(e.iso not in test_isos for e in train) and all(e.iso in test_isos for e in test)
    assert {e.locale for e in train} == {e.locale for e in test} == {loc for loc, _ in FORMATS}
    assert {(e.locale, e.width) for e in train} == set(FORMATS)
    for e in train[:200]:
        assert cldr_date(dt.date.fromisoformat(e.iso), e.locale, e.width) == e.text


def test_no_test_day_or_string_occurs_in_the_default_training_streams(monkeypatch):
    """Record every batch both default translators train on and compare with their held-out test sets."""
    import attention_course.experiments.cldr_dates as experiment

    seen_src, seen_iso, seen_ko = set(), set(), set()

    def record(model, next_batch, steps, **kwargs):
        for _ in range(steps):
            b = next_batch()
            seen_src.update("".join(SOURCE_VOCAB[i] for i in row[:n]) for row, n in zip(b.src.tolist(),
                                                                                        b.lengths.tolist()))
            if b.target.shape[1] == 11:
                seen_iso.update(decode_iso(row) for row in b.target.tolist())
            else:
                seen_ko.update(decode_korean(row) for row in b.target.tolist())
        return {}

    monkeypatch.setattr(experiment, "train_seq2seq", record)
    experiment.train_multilingual()
    experiment.train_en_ko()
    assert len(seen_iso) > 5000 and len(seen_ko) > 5000
    test = experiment.multilingual_test_set(5000)
    assert not {e.text for e in test} & seen_src and not {e.iso for e in test} & seen_iso
    ko = experiment.en_ko_test_set(5000)
    ko_src = {"".join(SOURCE_VOCAB[i] for i in row[:n]) for row, n in zip(ko.src.tolist(), ko.lengths.tolist())}
    assert not ko_src & seen_src and not {decode_korean(row) for row in ko.target.tolist()} & seen_ko
    # The check can fail: as many draws from the training days do overlap the training stream.
    control = random_cldr_dates(np.random.default_rng(experiment.HELD_OUT_SEED), 5000, split="train")
    assert {e.iso for e in control} & seen_iso


def test_batches():
    b = multilingual_batch(np.random.default_rng(0), 16, split="train")
    assert b.src.shape[0] == 16 and b.target.shape == (16, 11) and (b.target[:, -1] == EOS).all()
    assert all(len(decode_iso(row)) == 10 for row in b.target)
    assert ISO_VOCAB[3:] == list("0123456789-")
    k = en_ko_batch(np.random.default_rng(0), 16, split="test")
    for row, src, n in zip(k.target, k.src, k.lengths):
        english = "".join(SOURCE_VOCAB[i] for i in src[:n])
        day = dt.datetime.strptime(english, "%A, %B %d, %Y").date()
        assert decode_korean(row) == cldr_date(day, "ko", "full")
        assert (row[(row == EOS).nonzero()[0, 0] + 1:] == PAD).all()


def test_encode_round_trip():
    src, lengths = encode_sources(["2024年3月7日木曜日", "7. März 2024"])
    assert src.shape == (2, 12) and lengths.tolist() == [12, 12]
    assert "".join(SOURCE_VOCAB[i] for i in src[0]) == "2024年3月7日木曜日" and (src[1, 12:] == PAD).all()
    target = encode_korean(["2024년 3월 7일 목요일"])
    assert target.shape == (1, 16) and target[0, -1] == EOS and decode_korean(target[0]) == "2024년 3월 7일 목요일"


@pytest.mark.parametrize("texts, message", [
    (["quarta-feira, 7 de março"], r"outside the vocabulary: \['-', 'q', 'ç'\]"),
    (["7 März 2024!", "３月"], r"\['!', '３'\]"),
    ([""], "empty"),
    (["   "], "empty"),
    (["1" * (MAX_SOURCE_LEN + 1)], f"longer than the maximum {MAX_SOURCE_LEN}"),
    ([], "non-empty list"),
    ("7.3.2024", "non-empty list"),
])
def test_encode_rejects_bad_input(texts, message):
    with pytest.raises(ValueError, match=message):
        encode_sources(texts)


def test_encode_names_non_strings_and_bad_korean():
    with pytest.raises(TypeError, match="only str, got int"):
        encode_sources(["7.3.2024", 7])
    with pytest.raises(ValueError, match=r"outside the vocabulary: \['a'\]"):
        encode_korean(["2024년 3월 7일 목요일a"])
    with pytest.raises(ValueError, match=f"longer than the maximum {MAX_KOREAN_LEN}"):
        encode_korean(["1" * (MAX_KOREAN_LEN + 1)])


def test_bad_arguments_are_named():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="split must be one of"):
        random_cldr_dates(rng, 3, split="validation")
    with pytest.raises(ValueError, match="split must be one of"):
        en_ko_batch(rng, 3, split="all")
    with pytest.raises(ValueError, match="unknown"):
        random_cldr_dates(rng, 3, split="train", formats=(("es", "short"),))
    with pytest.raises(ValueError, match="unknown"):
        random_cldr_dates(rng, 3, split="train", formats=())
    with pytest.raises(ValueError, match="batch_size"):
        multilingual_batch(rng, 0, split="train")


def test_romanize():
    assert [romanize(ch) for ch in "3월 목요일"] == ["3", "wol", "␣", "mok", "yo", "il"]
    labels = [romanize(ch) for ch in KOREAN_VOCAB[3:] + SOURCE_VOCAB[3:]]
    assert all(ord(c) < 0x3000 for label in labels for c in label)        # no Hangul or kanji left: DejaVu draws them
    with pytest.raises(ValueError, match="one character"):
        romanize("목요")


def test_translators_train_and_are_checked():
    from attention_course.experiments.cldr_dates import (
        en_ko_exact_match,
        multilingual_exact_match,
        to_iso,
        to_korean,
        train_en_ko,
        train_multilingual,
        weekday_alignment,
    )
    model, history = train_en_ko(steps=20, seed=1)
    assert len(history["loss"]) == 20 and history["loss"][-1] < history["loss"][0]
    assert 0.0 <= en_ko_exact_match(model, n=50) <= 1.0
    out = to_korean(model, ["Thursday, March 7, 2024"])
    assert len(out) == 1 and set(out[0]) <= set(KOREAN_VOCAB[3:])
    iso_model, _ = train_multilingual(steps=2, seed=1)
    result = multilingual_exact_match(iso_model, n=60)
    assert set(result) == {"all", "en", "fr", "de", "es", "ja", "ko"}
    assert sum(n for key, (_, n) in result.items() if key != "all") == 60
    with pytest.raises(ValueError, match="outside the vocabulary"):
        to_iso(iso_model, ["7 марта 2024"])
    with pytest.raises(ValueError, match="reserved for the held-out"):
        train_en_ko(steps=1, seed=2024)
    with pytest.raises(ValueError, match="steps"):
        train_multilingual(steps=0)
    untrained, _ = train_en_ko(steps=1, seed=1)
    with pytest.raises(ValueError, match="none of the days"):
        weekday_alignment(untrained, [dt.date(2024, 3, 7), dt.date(1999, 12, 31)])
