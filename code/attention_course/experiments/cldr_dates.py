"""Real-language dates (Unicode CLDR via babel): two translators built from the Chapter 2 model.

    model, _ = train_multilingual(seed=0)      # dates in six languages -> ISO
    to_iso(model, ["jeudi 7 mars 2024", "2024년 3월 7일 목요일"])       # ['2024-03-07', '2024-03-07']
    model, _ = train_en_ko(seed=0)             # English "full" -> Korean "full"
    to_korean(model, ["Thursday, March 7, 2024"])                      # ['2024년 3월 7일 목요일']

Both are :class:`~attention_course.models.rnn_attention.AttentionSeq2Seq` with the vocabularies of
:mod:`attention_course.tasks.cldr_dates`, trained by the same loop as the English date translator
(teacher forcing, Adam, clipping at 1, linear decay); the held-out test days are never trained on.
"""

from __future__ import annotations

import numpy as np
import torch

from ..models.rnn_attention import AttentionSeq2Seq
from ..repro import shifted_seed
from ..tasks.cldr_dates import (
    ISO_LEN,
    ISO_VOCAB,
    KOREAN_VOCAB,
    LOCALES,
    MAX_KOREAN_LEN,
    SOURCE_VOCAB,
    cldr_date,
    decode_iso,
    decode_korean,
    en_ko_batch,
    encode_korean,
    encode_sources,
    multilingual_batch,
    random_cldr_dates,
)
from ..train.seq2seq import accuracy, train_seq2seq
from ..validate import check_steps, positive_int
from .dates import HELD_OUT_SEED

__all__ = ["MULTILINGUAL_BUDGET", "EN_KO_BUDGET", "train_multilingual", "train_en_ko", "to_iso", "to_korean",
           "multilingual_test_set", "multilingual_exact_match", "en_ko_test_set", "en_ko_exact_match",
           "weekday_alignment"]

# The small budgets the chapter trains with (each reaches exact match > 0.99 on held-out days, three seeds).
MULTILINGUAL_BUDGET = {"steps": 400, "batch_size": 64, "embed_dim": 32, "hidden_dim": 64, "lr": 2e-2,
                       "bidirectional": True}
EN_KO_BUDGET = {"steps": 150, "batch_size": 64, "embed_dim": 32, "hidden_dim": 64, "lr": 2e-2}


def _train(make_batch, tgt_vocab: int, steps: int, batch_size: int, embed_dim: int, hidden_dim: int, lr: float,
           seed: int, bidirectional: bool, device):
    check_steps(steps)
    positive_int("batch_size", batch_size)
    if seed == HELD_OUT_SEED:
        raise ValueError(f"seed {seed} is reserved for the held-out test dates")
    torch.manual_seed(shifted_seed(seed))
    model = AttentionSeq2Seq(len(SOURCE_VOCAB), tgt_vocab, embed_dim, hidden_dim, score="dot",
                             bidirectional=bidirectional).to("cpu" if device is None else device)
    rng = np.random.default_rng(shifted_seed(seed))
    history = train_seq2seq(model, lambda: make_batch(rng, batch_size, split="train"), steps, lr=lr, clip=1.0,
                            decay=True)
    return model, history


def train_multilingual(steps: int = MULTILINGUAL_BUDGET["steps"], batch_size: int = MULTILINGUAL_BUDGET["batch_size"],
                       embed_dim: int = MULTILINGUAL_BUDGET["embed_dim"],
                       hidden_dim: int = MULTILINGUAL_BUDGET["hidden_dim"], lr: float = MULTILINGUAL_BUDGET["lr"],
                       seed: int = 0, bidirectional: bool = MULTILINGUAL_BUDGET["bidirectional"],
                       device: torch.device | str | None = None):
    """Train a translator from the CLDR dates of all ``FORMATS`` to ISO; return ``(model, history)``.
    The encoder is bidirectional by default: ``10/12/1977`` (French, day first) and ``10/12/77`` (English,
    month first) differ only at the end, in the year's length, so reading the day needs right context."""
    return _train(multilingual_batch, len(ISO_VOCAB), steps, batch_size, embed_dim, hidden_dim, lr, seed,
                  bidirectional, device)


def train_en_ko(steps: int = EN_KO_BUDGET["steps"], batch_size: int = EN_KO_BUDGET["batch_size"],
                embed_dim: int = EN_KO_BUDGET["embed_dim"], hidden_dim: int = EN_KO_BUDGET["hidden_dim"],
                lr: float = EN_KO_BUDGET["lr"], seed: int = 0, bidirectional: bool = False,
                device: torch.device | str | None = None):
    """Train a translator from English "full" dates to Korean "full" dates; return ``(model, history)``."""
    return _train(en_ko_batch, len(KOREAN_VOCAB), steps, batch_size, embed_dim, hidden_dim, lr, seed,
                  bidirectional, device)


def _decode(model: AttentionSeq2Seq, texts: list[str], max_len: int, return_weights: bool = False):
    src, lengths = encode_sources(texts, device=next(model.parameters()).device)
    return model.greedy_decode(src, lengths, max_len, return_weights=return_weights)


def to_iso(model: AttentionSeq2Seq, texts: list[str]) -> list[str]:
    """Greedy translation of CLDR dates to ``YYYY-MM-DD``; bad texts raise ValueError naming the problem."""
    return [decode_iso(row) for row in _decode(model, texts, ISO_LEN + 1)]


def to_korean(model: AttentionSeq2Seq, texts: list[str]) -> list[str]:
    """Greedy translation of English "full" dates to Korean "full" dates."""
    return [decode_korean(row) for row in _decode(model, texts, MAX_KOREAN_LEN + 1)]


def multilingual_test_set(n: int = 5000):
    """``n`` held-out examples (test days only, every format) drawn with ``HELD_OUT_SEED``."""
    return random_cldr_dates(np.random.default_rng(HELD_OUT_SEED), n, split="test")


def multilingual_exact_match(model: AttentionSeq2Seq, n: int = 5000) -> dict[str, tuple[float, int]]:
    """Exact match on ``n`` held-out examples: ``{"all": (rate, n), "en": (rate, n_en), ...}`` per locale."""
    test = multilingual_test_set(n)
    predicted = to_iso(model, [e.text for e in test])
    right = np.array([p == e.iso for p, e in zip(predicted, test)])
    locale = np.array([e.locale for e in test])
    out = {"all": (float(right.mean()), len(test))}
    for loc in LOCALES:
        out[loc] = (float(right[locale == loc].mean()), int((locale == loc).sum()))
    return out


def en_ko_test_set(n: int = 5000):
    """``n`` held-out (English, Korean) pairs from the test days, drawn with ``HELD_OUT_SEED``."""
    return en_ko_batch(np.random.default_rng(HELD_OUT_SEED), n, split="test")


def en_ko_exact_match(model: AttentionSeq2Seq, n: int = 5000) -> float:
    """Fraction of ``n`` held-out English dates whose Korean translation is exactly right."""
    test = en_ko_test_set(n).to(next(model.parameters()).device)
    ids = model.greedy_decode(test.src, test.lengths, test.target.shape[1])
    return accuracy(ids, test.target)[1].mean().item()


def weekday_alignment(model: AttentionSeq2Seq, days) -> dict[str, float]:
    """Where the en->ko model looks while writing the weekday and the year, over the given ``days``
    (datetime.date objects): the fraction of days whose Korean weekday syllable (the first character
    of the final word, e.g. 목 of 목요일) takes its largest weight inside the English weekday name (the
    start of the source), and the fraction whose four year digits (the start of the output) each take
    it inside the year (the last four source characters); and ``weekdays_at_start``, for how many of the
    seven weekdays the syllable takes it inside the name on most of their days. Only days translated
    exactly right count; ``n`` is how many those are."""
    days = list(days)
    english = [cldr_date(d, "en", "full") for d in days]
    korean = [cldr_date(d, "ko", "full") for d in days]
    ids, weights = _decode(model, english, MAX_KOREAN_LEN + 1, return_weights=True)   # (B, T, S)
    target = encode_korean(korean)
    ok = (accuracy(ids, target)[1] == 1).tolist()
    top = weights.argmax(-1)                                                          # (B, T) source positions
    weekday_hits, year_hits, weekday_of = [], [], []
    for row, (en, ko) in enumerate(zip(english, korean)):
        if not ok[row]:
            continue
        name_end = en.index(",")                         # "Thursday" occupies source positions 0..name_end-1
        weekday_hits.append(int(top[row, ko.rindex(" ") + 1]) < name_end)
        weekday_of.append(en[:name_end])
        year_hits.append(all(len(en) - 4 <= int(top[row, t]) < len(en) for t in range(4)))
    if not weekday_hits:
        raise ValueError("the model translated none of the days exactly right: no alignment to measure")
    hits, names = np.array(weekday_hits), np.array(weekday_of)
    by_weekday = [hits[names == name].mean() for name in sorted(set(weekday_of))]
    return {"weekday_at_start": float(hits.mean()), "year_at_end": float(np.mean(year_hits)),
            "weekdays_at_start": int(sum(rate > 0.5 for rate in by_weekday)), "n": len(weekday_hits)}
