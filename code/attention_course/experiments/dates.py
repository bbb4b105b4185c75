"""Date translation: encoder-decoders trained to turn human dates into ISO dates.

    model, _ = train_date_translator()          # the RNN with attention (Chapter 2)
    translate(model, ["Thursday, August 3, 1995", "3.8.1995"])   # ['1995-08-03', '1995-08-03']
    model, _ = train_date_transformer()         # the Transformer (Chapter 5), same data, loss and loop

Everything is generated on the fly by :mod:`attention_course.tasks.dates`; training takes seconds
on a laptop CPU.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ..models.rnn_attention import AttentionSeq2Seq
from ..models.transformer import Transformer
from ..repro import shifted_seed
from ..tasks.dates import (
    MAX_SOURCE_LEN,
    SOURCE_VOCAB,
    TARGET_LEN,
    TARGET_VOCAB,
    TEST_DAYS,
    date_batch,
    decode_target,
    encode_sources,
    format_date,
    random_dates,
)
from ..train.parallel import run_parallel
from ..train.seq2seq import accuracy, train_seq2seq
from ..validate import check_steps, positive_int

__all__ = ["train_on_dates", "train_date_translator", "train_date_transformer", "translate", "date_exact_match",
           "date_test_batch", "HELD_OUT_SEED", "COMPARISON_BUDGET", "translator_parameters", "width_for_parameters",
           "compare_on_dates", "train_and_score", "score_variants", "chapter_variants", "month_name_mass",
           "ambiguous_numeric_dates", "format_probe_dates"]

HELD_OUT_SEED = 2024        # test batches are drawn from the test days with this seed; training from ``seed``
# The small, equal budget under which the chapter (accuracy) and ``make bench`` (time) compare
# score functions and encoders.
COMPARISON_BUDGET = {"steps": 200, "batch_size": 64, "hidden_dim": 64}


def train_on_dates(build: Callable[[], nn.Module], steps: int, batch_size: int, lr: float, seed: int,
                   callback: Callable[[int, nn.Module], bool] | None, every: int,
                   device: torch.device | str | None, warmup: int = 0):
    """Seed, build the model ``build()`` on ``device`` (default: the CPU) and train it on generated
    dates: teacher forcing, Adam, gradient clipping at 1, learning rate decaying linearly to 0.
    Return ``(model, history)``. ``callback(step, model)`` runs every ``every`` steps; returning
    True stops training. ``warmup``: steps of linearly rising learning rate before the decay."""
    check_steps(steps)
    if seed == HELD_OUT_SEED:
        raise ValueError(f"seed {seed} is reserved for the held-out test dates")
    torch.manual_seed(shifted_seed(seed))
    model = build().to("cpu" if device is None else device)
    rng = np.random.default_rng(shifted_seed(seed))
    history = train_seq2seq(model, lambda: date_batch(rng, batch_size, split="train"), steps, lr=lr, clip=1.0,
                            decay=True, callback=callback and (lambda step: callback(step, model)), every=every,
                            warmup=warmup)
    return model, history


def train_date_translator(steps: int = 400, batch_size: int = 128, score: str | None = None, hidden_dim: int = 64,
                          embed_dim: int = 32, bidirectional: bool = True, lr: float = 1e-2, seed: int = 0,
                          callback: Callable[[int, AttentionSeq2Seq], bool] | None = None, every: int = 100,
                          device: torch.device | str | None = None, decoder: str = "luong",
                          attentional: bool = False, input_feeding: bool = False):
    """Train an :class:`AttentionSeq2Seq` on generated dates (:func:`train_on_dates`); return
    ``(model, history)``. ``decoder``, ``score``, ``attentional`` and ``input_feeding`` choose the
    decoder (see :class:`AttentionSeq2Seq`). The defaults reach 99.9% exact match on held-out dates
    (see the chapter and ``make bench``)."""
    return train_on_dates(lambda: AttentionSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), embed_dim, hidden_dim,
                                                   score=score, bidirectional=bidirectional, decoder=decoder,
                                                   attentional=attentional, input_feeding=input_feeding),
                          steps, batch_size, lr, seed, callback, every, device)


def train_date_transformer(steps: int = 800, batch_size: int = 64, d_model: int = 64, num_heads: int = 4,
                           num_layers: int = 2, d_ff: int = 128, lr: float = 1e-2, warmup: int = 50, seed: int = 0,
                           callback: Callable[[int, Transformer], bool] | None = None, every: int = 100,
                           device: torch.device | str | None = None, positions: str = "learned"):
    """Train a :class:`Transformer` on generated dates, with the same data, loss and loop as
    :func:`train_date_translator` (:func:`train_on_dates`), the learning rate rising over ``warmup``
    steps (at most ``steps - 1``, so that a short run still trains) and then decaying linearly to 0;
    return ``(model, history)``. The defaults (learned positions, a high learning rate after a short
    warm-up) reach 99.9% exact match on held-out dates (see the chapter and ``make bench``)."""
    warmup = min(warmup, check_steps(steps) - 1)
    return train_on_dates(lambda: Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d_model, num_heads, num_layers,
                                              d_ff, max_len=max(MAX_SOURCE_LEN, TARGET_LEN + 1),
                                              positions=positions),
                          steps, batch_size, lr, seed, callback, every, device, warmup=warmup)


def translate(model: AttentionSeq2Seq, texts: list[str]) -> list[str]:
    """Greedy translation of each text to ``YYYY-MM-DD``.

    Raises ValueError for characters outside the vocabulary (listing them), empty texts and
    texts longer than the model was trained on.
    """
    src, lengths = encode_sources(texts, device=next(model.parameters()).device)
    ids = model.greedy_decode(src, lengths, TARGET_LEN + 1)
    return [decode_target(row) for row in ids]


def date_test_batch(n: int = 5000):
    """The held-out test set: ``n`` dates drawn with ``HELD_OUT_SEED`` from the test days, which no
    training batch ever contains (:mod:`attention_course.tasks.dates` splits the days by value)."""
    return date_batch(np.random.default_rng(HELD_OUT_SEED), n, split="test")


def date_exact_match(model: AttentionSeq2Seq, n: int = 5000) -> float:
    """Fraction of ``n`` held-out dates (test days only, never seen in training) translated exactly right."""
    test = date_test_batch(n).to(next(model.parameters()).device)
    ids = model.greedy_decode(test.src, test.lengths, TARGET_LEN + 1)
    _, exact = accuracy(ids, test.target)
    return exact.mean().item()


def translator_parameters(hidden_dim: int, embed_dim: int = 32, **options) -> int:
    """Parameter count of the :class:`AttentionSeq2Seq` that ``train_date_translator(hidden_dim=...,
    **options)`` builds (``options``: score, bidirectional, decoder, attentional, input_feeding)."""
    return sum(p.numel() for p in AttentionSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), embed_dim,
                                                   positive_int("hidden_dim", hidden_dim), **options).parameters())


def width_for_parameters(target: int, **options) -> int:
    """The even ``hidden_dim`` whose translator (:func:`translator_parameters`) has the parameter count
    closest to ``target``: how models with different score functions are sized to equal parameters."""
    target = positive_int("target", target)
    below, h = translator_parameters(2, **options), 2
    while below < target:                                  # the count grows with the width: walk up to it
        above = translator_parameters(h + 2, **options)
        if above >= target:
            return h + 2 if above - target < target - below else h
        below, h = above, h + 2
    return 2


def train_and_score(n_test: int = 5000, **options) -> tuple[AttentionSeq2Seq, float]:
    """``train_date_translator(**options)``, then its exact match on ``n_test`` held-out dates:
    ``(model, exact)``. One run of :func:`compare_on_dates`."""
    model, _ = train_date_translator(**options)
    return model, date_exact_match(model, n_test)


def compare_on_dates(variants: dict[str, dict], seeds=(0, 1, 2), n_test: int = 2000, workers: int | None = None,
                     **budget) -> dict[str, dict]:
    """Train every variant (keyword arguments of :func:`train_date_translator`) once per seed, all under
    the same ``budget`` (e.g. steps, batch_size) and so on the same training batches for one seed;
    score each on the same ``n_test`` held-out dates. The runs are independent, so they are spread
    over ``workers`` processes (:func:`~attention_course.train.parallel.run_parallel`; the results do
    not depend on it). Returns, per variant, ``parameters``, ``exact`` (one exact-match rate per
    seed) and ``models`` (the trained models, seed order)."""
    if not len(seeds):
        raise ValueError("compare_on_dates needs at least one seed")
    names = [(name, seed) for name in variants for seed in seeds]
    runs = run_parallel(train_and_score, [dict(n_test=n_test, **budget, **variants[name], seed=seed)
                                          for name, seed in names], workers)
    results = {name: {"parameters": 0, "exact": [], "models": []} for name in variants}
    for (name, _), (model, exact) in zip(names, runs):
        results[name]["parameters"] = sum(p.numel() for p in model.parameters())
        results[name]["exact"].append(exact)
        results[name]["models"].append(model)
    return results


def score_variants(hidden_dim: int = COMPARISON_BUDGET["hidden_dim"]) -> dict[str, dict]:
    """The score comparison's variants (keyword arguments of :func:`train_date_translator`): Luong's
    decoder as published with a unidirectional encoder and the dot, general and additive scores, each
    at the width whose parameter count is closest to the general-score model's at ``hidden_dim``."""
    luong = dict(decoder="luong", attentional=True, bidirectional=False)
    target = translator_parameters(hidden_dim, score="general", **luong)
    return {s: dict(score=s, hidden_dim=width_for_parameters(target, score=s, **luong), **luong)
            for s in ("dot", "general", "additive")}


def chapter_variants(hidden_dim: int = COMPARISON_BUDGET["hidden_dim"]) -> dict[str, dict]:
    """The five variants of Chapter 2's comparisons (keyword arguments of :func:`train_date_translator`),
    slowest first: Bahdanau's decoder with the additive score at the additive model's width; the dot
    model with a bidirectional encoder, at the width whose parameter count is closest to the
    unidirectional dot model's; and the three :func:`score_variants` (Luong's decoder, unidirectional).
    The score comparison is dot / general / additive, the decoder comparison additive / Bahdanau, the
    encoder comparison dot / bidirectional."""
    scores = score_variants(hidden_dim)
    dot = scores["dot"]
    bidirectional = dict(dot, bidirectional=True,
                         hidden_dim=width_for_parameters(translator_parameters(**dot), score="dot", decoder="luong",
                                                         attentional=True, bidirectional=True))
    bahdanau = dict(decoder="bahdanau", score="additive", bidirectional=False,
                    hidden_dim=scores["additive"]["hidden_dim"])
    return {"Bahdanau (additive)": bahdanau, "bidirectional": bidirectional, **scores}


def _month_word(text: str) -> str:
    """The month name of a date written with one (a weekday name, if any, comes first)."""
    return [w for w in text.replace(",", " ").split() if w.isalpha()][-1]


def month_name_mass(model: AttentionSeq2Seq, n: int = 1000) -> dict[str, float]:
    """How much of its attention each month digit of the output (``MM`` of ``YYYY-MM-DD``) puts on the
    letters of the month name, over ``n`` held-out dates written with a month name: ``first`` and
    ``second`` (means over the dates), ``uniform`` (the share the name would get from uniform attention,
    its length over the text's) and ``n``."""
    n = positive_int("n", n)
    texts = [t for t, _ in random_dates(np.random.default_rng(HELD_OUT_SEED + 1), 4 * n, split="test")
             if any(ch.isalpha() for ch in t)][:n]
    src, lengths = encode_sources(texts, device=next(model.parameters()).device)
    _, weights = model.greedy_decode(src, lengths, TARGET_LEN + 1, return_weights=True)   # (n, 11, S)
    masses, uniform = [], []
    for row, text in enumerate(texts):
        word = _month_word(text)
        start = text.rfind(word)
        masses.append(weights[row, 5:7, start:start + len(word)].sum(1).tolist())     # output rows 'MM'
        uniform.append(len(word) / len(text))
    first, second = np.mean(masses, axis=0)
    return {"first": float(first), "second": float(second), "uniform": float(np.mean(uniform)), "n": len(texts)}


def _test_days(rng: np.random.Generator, n: int) -> list[dt.date]:
    return [dt.date.fromordinal(int(d)) for d in rng.choice(TEST_DAYS, n)]


def ambiguous_numeric_dates(n: int = 500) -> list[tuple[str, str]]:
    """``(text, iso)`` for ``n`` held-out days each written ``M/D/YY`` (month first) and ``D.M.YYYY`` (day
    first): the formats whose first number's role only the separator after it settles."""
    days = _test_days(np.random.default_rng(HELD_OUT_SEED), positive_int("n", n))
    return [(format_date(d, fmt), d.isoformat()) for d in days for fmt in ("M/D/YY", "D.M.YYYY")]


def format_probe_dates(n: int = 1000) -> tuple[list[str], torch.Tensor]:
    """Texts and labels for the format probe: held-out days whose day and month are single digits (so
    the first character says nothing about the format), alternately written ``D.M.YYYY`` (label 0) and
    ``M/D/YY`` (label 1). At most ``n``; about 1,000 such days come out of the 6,000 drawn."""
    days = [d for d in _test_days(np.random.default_rng(5), 6000) if d.day <= 9 and d.month <= 9][:positive_int("n", n)]
    texts = [format_date(d, "M/D/YY" if k % 2 else "D.M.YYYY") for k, d in enumerate(days)]
    return texts, torch.tensor([k % 2 for k in range(len(days))])
