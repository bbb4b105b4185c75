"""The length experiment: how accuracy falls as the source gets longer.

Chapter 1 runs it on the plain encoder-decoder (the shape of Bahdanau et al. 2015, Fig. 2);
later chapters rerun it, unchanged, on models with attention. The protocol is fixed here so
that every model sees the same data, the same budget and the same test sets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from torch import nn

from ..tasks.digits import digit_batch
from ..train.seq2seq import evaluate_by_length, train_seq2seq

__all__ = ["LengthProtocol", "run_length_experiment"]


@dataclass(frozen=True)
class LengthProtocol:
    """Train on digit strings of every length in [min_len, max_len] mixed; test each length alone."""

    min_len: int = 1
    max_len: int = 30
    batch_size: int = 64
    steps: int = 1000
    lr: float = 3e-3
    clip: float | None = 1.0
    eval_lengths: tuple[int, ...] = field(default_factory=lambda: tuple(range(3, 31, 3)))
    eval_batch_size: int = 256
    train_seed: int = 0
    eval_seed: int = 1


def run_length_experiment(model: nn.Module, protocol: LengthProtocol = LengthProtocol()):
    """Train ``model`` under ``protocol``; return (training history, per-length results).

    The per-length results hold ``length``, ``token_accuracy`` and ``exact_match`` lists.
    Training batches come from ``train_seed``, test batches from ``eval_seed``, so two models
    run under one protocol see exactly the same examples.
    """
    p = protocol
    train_rng = np.random.default_rng(p.train_seed)
    history = train_seq2seq(model, lambda: digit_batch(train_rng, p.batch_size, p.min_len, p.max_len),
                            p.steps, lr=p.lr, clip=p.clip)
    result = evaluate_by_length(model, lambda rng, L: digit_batch(rng, p.eval_batch_size, L, L),
                                list(p.eval_lengths), np.random.default_rng(p.eval_seed))
    return history, result
