"""Human-written dates and their ISO form, generated on the fly (nothing is downloaded).

``random_dates(rng, n)`` returns pairs such as ``("Thursday, August 3, 1995", "1995-08-03")``.
Formats, each drawn with equal probability:

    month names   "August 3, 1995", "3 August 1995", "Aug 03 1995", with or without a weekday
                  in front ("Thursday, ...", "thu ..."); names full or abbreviated, and the
                  whole text in lower, UPPER or Title case
    numeric       "8/3/95" (M/D/YY), "08/03/1995" (MM/DD/YYYY), "3.8.1995" (D.M.YYYY),
                  "1995/08/03" (YYYY/MM/DD)

Years run from 1970 to 2030, so a two-digit year is never ambiguous (70..99 -> 19xx,
00..30 -> 20xx).

Dates are held out by value: a fixed tenth of the 22,280 calendar days (``TEST_DAYS``, drawn once
with seed ``SPLIT_SEED``) is only ever generated for ``split="test"``, the rest (``TRAIN_DAYS``) only
for ``split="train"``. Every day has a different text in every format, so no test string, in any
format or case, can occur in a training batch.

Characters are the tokens: ``SOURCE_VOCAB`` for the text, ``TARGET_VOCAB`` for the ISO date, both
starting with the ``<pad> <bos> <eos>`` ids of :mod:`attention_course.tokens`.
"""

from __future__ import annotations

import datetime as dt
import string

import numpy as np
import torch

from ..tokens import EOS, Batch, decode_ids, pad_ids
from ..validate import check_choice, positive_int

__all__ = ["SOURCE_VOCAB", "TARGET_VOCAB", "MAX_SOURCE_LEN", "TARGET_LEN", "random_dates", "format_date",
           "encode_sources", "decode_target", "date_batch", "FORMATS", "SPLITS", "SPLIT_SEED", "TRAIN_DAYS",
           "TEST_DAYS"]

_SPECIALS = ["<pad>", "<bos>", "<eos>"]
SOURCE_VOCAB = [*_SPECIALS, *string.digits, *string.ascii_lowercase, *string.ascii_uppercase, " ", ",", "/", "."]
TARGET_VOCAB = [*_SPECIALS, *string.digits, "-"]
_SOURCE_ID = {ch: i for i, ch in enumerate(SOURCE_VOCAB)}
_TARGET_ID = {ch: i for i, ch in enumerate(TARGET_VOCAB)}
MAX_SOURCE_LEN = 32          # longest generated text is "wednesday, september 27, 2000" (29 chars)
TARGET_LEN = 10              # YYYY-MM-DD

# Spelled out rather than taken from strftime, whose names follow the process locale.
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_FIRST_DAY = dt.date(1970, 1, 1).toordinal()
_LAST_DAY = dt.date(2030, 12, 31).toordinal()

# The split by value: one fixed draw marks a tenth of the days as test days.
SPLITS = ("train", "test")
SPLIT_SEED = 20150901
_ALL_DAYS = np.arange(_FIRST_DAY, _LAST_DAY + 1)
_IS_TEST = np.random.default_rng(SPLIT_SEED).random(len(_ALL_DAYS)) < 0.1
TRAIN_DAYS = _ALL_DAYS[~_IS_TEST]     # ordinals (datetime.date.toordinal) of the days training sees
TEST_DAYS = _ALL_DAYS[_IS_TEST]       # ... and of the days only tests see
_DAYS = {"train": TRAIN_DAYS, "test": TEST_DAYS}

FORMATS = ("month_day_year", "day_month_year", "month_day_year_padded",
           "M/D/YY", "MM/DD/YYYY", "D.M.YYYY", "YYYY/MM/DD")
_CASES = (str.lower, str.upper, str.title)


def format_date(day: dt.date, fmt: str, *, abbreviate: bool = False, weekday: bool = False,
                case: int = 2) -> str:
    """Write ``day`` in one of ``FORMATS``; the flags only affect the month-name formats."""
    if fmt == "M/D/YY":
        return f"{day.month}/{day.day}/{day.year % 100:02d}"
    if fmt == "MM/DD/YYYY":
        return f"{day.month:02d}/{day.day:02d}/{day.year}"
    if fmt == "D.M.YYYY":
        return f"{day.day}.{day.month}.{day.year}"
    if fmt == "YYYY/MM/DD":
        return f"{day.year}/{day.month:02d}/{day.day:02d}"
    month = _MONTHS[day.month - 1][:3] if abbreviate else _MONTHS[day.month - 1]
    if fmt == "month_day_year":
        text = f"{month} {day.day}, {day.year}"
    elif fmt == "day_month_year":
        text = f"{day.day} {month} {day.year}"
    elif fmt == "month_day_year_padded":
        text = f"{month} {day.day:02d} {day.year}"
    else:
        raise ValueError(f"unknown date format {fmt!r}; expected one of {FORMATS}")
    if weekday:
        name = _WEEKDAYS[day.weekday()]
        text = f"{name[:3] if abbreviate else name}, {text}"
    return _CASES[case](text)


def _split_days(split: str) -> np.ndarray:
    return _DAYS[check_choice("split", split, _DAYS)]


def random_dates(rng: np.random.Generator, n: int, *, split: str) -> list[tuple[str, str]]:
    """``n`` (human text, ISO date) pairs with days drawn uniformly from the ``split``'s days
    (``"train"`` or ``"test"``, disjoint by value; see the module docstring)."""
    pool = _split_days(split)
    days = pool[rng.integers(0, len(pool), size=positive_int("n", n))]
    fmts = rng.integers(0, len(FORMATS), size=n)
    flags = rng.integers(0, 2, size=(n, 2))
    cases = rng.integers(0, 3, size=n)
    pairs = []
    for d, f, (abbr, wday), c in zip(days, fmts, flags, cases):
        day = dt.date.fromordinal(int(d))
        text = format_date(day, FORMATS[f], abbreviate=bool(abbr), weekday=bool(wday), case=int(c))
        pairs.append((text, day.isoformat()))
    return pairs


def encode_sources(texts: list[str], device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Texts -> (src (B, S) character ids padded with ``PAD``, lengths (B,)), on ``device`` (default CPU).

    Raises ValueError for an empty list, an empty text, a text longer than ``MAX_SOURCE_LEN``
    or characters outside ``SOURCE_VOCAB`` (all of them are listed).
    """
    if isinstance(texts, str) or not len(texts):
        raise ValueError("texts must be a non-empty list of strings")
    bad = sorted({ch for t in texts for ch in t if ch not in _SOURCE_ID or _SOURCE_ID[ch] < len(_SPECIALS)})
    if bad:
        raise ValueError(f"characters outside the vocabulary: {bad!r}; allowed are digits, ASCII letters, "
                         f"space and , / .")
    for t in texts:
        if not t.strip():
            raise ValueError("cannot translate an empty (or blank) text")
        if len(t) > MAX_SOURCE_LEN:
            raise ValueError(f"text of {len(t)} characters is longer than MAX_SOURCE_LEN={MAX_SOURCE_LEN}: {t!r}")
    return pad_ids([[_SOURCE_ID[ch] for ch in t] for t in texts], device)


def decode_target(ids) -> str:
    """Target ids -> text, stopping at the first ``EOS`` and skipping the other specials."""
    return decode_ids(ids, TARGET_VOCAB)


def date_batch(rng: np.random.Generator, batch_size: int, *, split: str) -> Batch:
    """A batch of the ``split``'s dates: ``src`` (B, S) text characters, ``target`` (B, 11) ISO date + ``EOS``."""
    pairs = random_dates(rng, positive_int("batch_size", batch_size), split=split)
    src, lengths = encode_sources([text for text, _ in pairs])
    target = torch.tensor([[_TARGET_ID[ch] for ch in iso] + [EOS] for _, iso in pairs], device="cpu")
    return Batch(src, lengths, target)
