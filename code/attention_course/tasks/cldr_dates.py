"""Dates as people write them in six languages, from the Unicode CLDR (through ``babel``).

The Unicode Common Locale Data Repository (CLDR) is the table of how each language writes dates,
numbers and names that operating systems and browsers use. ``babel`` ships a copy of it inside its
wheel (``CLDR_VERSION`` below), so nothing is downloaded. Each locale has four date formats:

    locale  full                          long                  medium         short
    en      Thursday, March 7, 2024       March 7, 2024         Mar 7, 2024    3/7/24
    fr      jeudi 7 mars 2024             7 mars 2024           7 mars 2024    07/03/2024
    de      Donnerstag, 7. März 2024      7. März 2024          07.03.2024     07.03.24
    es      jueves, 7 de marzo de 2024    7 de marzo de 2024    7 mar 2024     (7/3/24, left out)
    ja      2024年3月7日木曜日             2024年3月7日           2024/03/07     2024/03/07
    ko      2024년 3월 7일 목요일          2024년 3월 7일         2024. 3. 7.    24. 3. 7.

``FORMATS`` lists the 23 (locale, width) pairs used. Spanish "short" (``d/M/yy``) is left out:
it writes 7 March 2024 as ``7/3/24``, which is English "short" (``M/d/yy``) for 3 July 2024, so
for 8,052 of the calendar's days a text without its language names two days
(``tests/test_cldr_dates.py`` checks that with it left out every text names one day). Three of
the formats kept write two-digit years (en, de and ko "short"); years run from 1970 to 2030, so
``yy`` is unambiguous here (70..99 -> 19xx, 00..30 -> 20xx), but only because of that range.

The days are split by value exactly as in :mod:`attention_course.tasks.dates`: ``TRAIN_DAYS`` only
for ``split="train"``, ``TEST_DAYS`` only for ``split="test"``, in every language and format.

Two tasks share the source side:

    multilingual   any of the 23 formats -> ISO ``YYYY-MM-DD`` (``TARGET_VOCAB`` of tasks.dates)
    en_ko          English "full" -> Korean "full": ``Thursday, March 7, 2024`` -> ``2024년 3월 7일 목요일``

Characters are the tokens. ``SOURCE_VOCAB`` and ``KOREAN_VOCAB`` are the sorted characters of the
texts of every day of the year 2000 (every month name, weekday name, digit and separator occurs in
it), after the ``<pad> <bos> <eos>`` specials.
"""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple

import babel
import numpy as np
import torch
from babel import Locale
from babel.core import get_global
from babel.dates import get_date_format

from ..tokens import EOS, SPECIALS, Batch, decode_ids, pad_ids
from ..validate import check_choice, positive_int
from .dates import SPLITS, TEST_DAYS, TRAIN_DAYS
from .dates import TARGET_VOCAB as ISO_VOCAB

__all__ = ["LOCALES", "WIDTHS", "FORMATS", "LEFT_OUT", "CLDR_VERSION", "BABEL_VERSION", "SOURCE_VOCAB",
           "KOREAN_VOCAB", "ISO_VOCAB", "MAX_SOURCE_LEN", "MAX_KOREAN_LEN", "ISO_LEN", "CldrDate", "cldr_date",
           "random_cldr_dates", "encode_sources", "encode_korean", "decode_iso", "decode_korean",
           "multilingual_batch", "en_ko_batch", "romanize", "TRAIN_DAYS", "TEST_DAYS", "SPLITS"]

LOCALES = ("en", "fr", "de", "es", "ja", "ko")
WIDTHS = ("full", "long", "medium", "short")
LEFT_OUT = {("es", "short"): "d/M/yy reads as English M/d/yy: '7/3/24' would name two days"}
FORMATS = tuple((loc, w) for loc in LOCALES for w in WIDTHS if (loc, w) not in LEFT_OUT)
CLDR_VERSION = get_global("cldr")["version"]      # the CLDR release this babel was built from
BABEL_VERSION = babel.__version__
MAX_SOURCE_LEN = 36      # longest text: Spanish "full", e.g. "miércoles, 30 de septiembre de 2026" (35)
MAX_KOREAN_LEN = 18      # longest Korean "full" text, e.g. "2024년 12월 31일 화요일" (17)
ISO_LEN = 10             # YYYY-MM-DD

_LOCALE = {loc: Locale.parse(loc) for loc in LOCALES}
_PATTERN = {(loc, w): get_date_format(w, locale=_LOCALE[loc]) for loc in LOCALES for w in WIDTHS}
_DAYS = {"train": TRAIN_DAYS, "test": TEST_DAYS}


def cldr_date(day: dt.date, locale: str, width: str) -> str:
    """``day`` written in ``locale``'s CLDR ``width`` format (the same text as
    ``babel.dates.format_date(day, width, locale=locale)``, with the pattern parsed once)."""
    if (locale, width) not in _PATTERN:
        raise ValueError(f"unknown CLDR format ({locale!r}, {width!r}); locales are {LOCALES}, widths {WIDTHS}")
    return _PATTERN[locale, width].apply(day, _LOCALE[locale])


def _vocab(texts) -> list[str]:
    return [*SPECIALS, *sorted({ch for t in texts for ch in t})]


_YEAR_2000 = [dt.date(2000, 1, 1) + dt.timedelta(k) for k in range(366)]
SOURCE_VOCAB = _vocab(cldr_date(d, loc, w) for loc, w in FORMATS for d in _YEAR_2000)
KOREAN_VOCAB = _vocab(cldr_date(d, "ko", "full") for d in _YEAR_2000)
_SOURCE_ID = {ch: i for i, ch in enumerate(SOURCE_VOCAB) if i >= len(SPECIALS)}
_KOREAN_ID = {ch: i for i, ch in enumerate(KOREAN_VOCAB) if i >= len(SPECIALS)}
_ISO_ID = {ch: i for i, ch in enumerate(ISO_VOCAB) if i >= len(SPECIALS)}


class CldrDate(NamedTuple):
    """One generated example: the ``text``, its ``iso`` date, and the ``locale`` and ``width`` it is written in."""

    text: str
    iso: str
    locale: str
    width: str


def _split_days(split: str) -> np.ndarray:
    return _DAYS[check_choice("split", split, _DAYS)]


def random_cldr_dates(rng: np.random.Generator, n: int, *, split: str,
                      formats: tuple[tuple[str, str], ...] = FORMATS) -> list[CldrDate]:
    """``n`` examples, days drawn uniformly from the ``split``'s days and formats uniformly from ``formats``
    (a sequence of (locale, width) pairs of ``FORMATS``; Spanish "short" is refused, see ``LEFT_OUT``)."""
    pool = _split_days(split)
    unknown = [f for f in formats if not isinstance(f, tuple) or f not in FORMATS]
    if not formats or unknown:
        raise ValueError(f"formats must be a non-empty sequence of (locale, width) pairs from FORMATS; "
                         f"unknown: {unknown!r}")
    days = pool[rng.integers(0, len(pool), size=positive_int("n", n))]
    which = rng.integers(0, len(formats), size=n)
    out = []
    for d, f in zip(days, which):
        day, (loc, w) = dt.date.fromordinal(int(d)), formats[f]
        out.append(CldrDate(cldr_date(day, loc, w), day.isoformat(), loc, w))
    return out


def _encode(texts, ids: dict[str, int], max_len: int, what: str, device, end: bool) -> tuple[torch.Tensor,
                                                                                            torch.Tensor]:
    if isinstance(texts, str) or not len(texts):
        raise ValueError(f"{what} must be a non-empty list of strings")
    odd = [t for t in texts if not isinstance(t, str)]
    if odd:
        raise TypeError(f"{what} must contain only str, got {type(odd[0]).__name__} {odd[0]!r}")
    bad = sorted({ch for t in texts for ch in t if ch not in ids})
    if bad:
        raise ValueError(f"characters outside the vocabulary: {bad!r}; the vocabulary is the {len(ids)} characters "
                         f"of the CLDR dates generated here")
    for t in texts:
        if not t.strip():
            raise ValueError(f"{what}: cannot translate an empty (or blank) text")
        if len(t) > max_len:
            raise ValueError(f"text of {len(t)} characters is longer than the maximum {max_len}: {t!r}")
    return pad_ids([[ids[ch] for ch in t] + [EOS] * end for t in texts], device)


def encode_sources(texts: list[str], device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Texts -> (src (B, S) ids over ``SOURCE_VOCAB`` padded with ``PAD``, lengths (B,)), on ``device``.

    Raises ValueError for an empty list, an empty text, a text longer than ``MAX_SOURCE_LEN`` or
    characters outside ``SOURCE_VOCAB`` (all of them are listed).
    """
    return _encode(texts, _SOURCE_ID, MAX_SOURCE_LEN, "texts", device, end=False)


def encode_korean(texts: list[str], device: torch.device | str | None = None) -> torch.Tensor:
    """Korean target texts -> ids (B, T) over ``KOREAN_VOCAB``, each followed by ``EOS`` and padded with ``PAD``.
    Same errors as :func:`encode_sources` (maximum ``MAX_KOREAN_LEN``)."""
    return _encode(texts, _KOREAN_ID, MAX_KOREAN_LEN, "Korean texts", device, end=True)[0]


def decode_iso(ids) -> str:
    """Target ids over ``ISO_VOCAB`` -> text, stopping at the first ``EOS``."""
    return decode_ids(ids, ISO_VOCAB)


def decode_korean(ids) -> str:
    """Target ids over ``KOREAN_VOCAB`` -> text, stopping at the first ``EOS``."""
    return decode_ids(ids, KOREAN_VOCAB)


def multilingual_batch(rng: np.random.Generator, batch_size: int, *, split: str,
                       formats: tuple[tuple[str, str], ...] = FORMATS) -> Batch:
    """A batch of the ``split``'s days in random formats: ``src`` (B, S) characters, ``target`` (B, 11)
    the ISO date + ``EOS``."""
    examples = random_cldr_dates(rng, positive_int("batch_size", batch_size), split=split, formats=formats)
    src, lengths = encode_sources([e.text for e in examples])
    target = torch.tensor([[_ISO_ID[ch] for ch in e.iso] + [EOS] for e in examples])
    return Batch(src, lengths, target)


def en_ko_batch(rng: np.random.Generator, batch_size: int, *, split: str) -> Batch:
    """English "full" dates of the ``split``'s days as ``src``; ``target`` (B, T) their Korean "full" texts,
    each followed by ``EOS`` and padded with ``PAD``."""
    days = _split_days(split)
    days = days[rng.integers(0, len(days), size=positive_int("batch_size", batch_size))]
    dates = [dt.date.fromordinal(int(d)) for d in days]
    src, lengths = encode_sources([cldr_date(d, "en", "full") for d in dates])
    return Batch(src, lengths, encode_korean([cldr_date(d, "ko", "full") for d in dates]))


# Revised Romanization of the Hangul syllables, and readings of the kanji, that the dates use: labels for plots
# whose fonts lack the glyphs.
_ROMAN = {"년": "nyeon", "월": "wol", "일": "il", "요": "yo", "화": "hwa", "수": "su", "목": "mok", "금": "geum",
          "토": "to", "年": "nen", "月": "getsu", "日": "nichi", "曜": "yō", "火": "ka", "水": "sui", "木": "moku",
          "金": "kin", "土": "do"}


def romanize(ch: str) -> str:
    """A Latin label for one character: Hangul and kanji of the dates romanised, a space shown as ``␣``,
    anything else as it is."""
    if not isinstance(ch, str) or len(ch) != 1:
        raise ValueError(f"romanize takes one character, got {ch!r}")
    return _ROMAN.get(ch, "␣" if ch == " " else ch)
