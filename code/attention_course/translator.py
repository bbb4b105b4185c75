"""The date translator: an attention encoder-decoder that turns human dates into ISO dates.

    model = train_date_translator()
    translate(model, ["Thursday, August 3, 1995", "3.8.1995"])   # ['1995-08-03', '1995-08-03']

Everything is generated on the fly by :mod:`.dates`; training takes seconds on a laptop CPU.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .dates import SOURCE_VOCAB, TARGET_LEN, TARGET_VOCAB, date_batch, decode_target, encode_sources
from .rnn_attention import AttentionSeq2Seq
from .training import accuracy, train_seq2seq
from .validate import check_steps

__all__ = ["train_date_translator", "translate", "date_exact_match", "HELD_OUT_SEED", "COMPARISON_BUDGET"]

HELD_OUT_SEED = 2024        # test dates come from this seed; training batches from ``seed``
# The small, equal budget under which the chapter (accuracy) and ``make bench`` (time) compare
# score functions and encoders.
COMPARISON_BUDGET = {"steps": 200, "hidden_dim": 64}


def train_date_translator(steps: int = 600, batch_size: int = 64, score: str = "dot", hidden_dim: int = 128,
                          embed_dim: int = 32, bidirectional: bool = True, lr: float = 5e-3, seed: int = 0,
                          callback: Callable[[int, AttentionSeq2Seq], bool] | None = None, every: int = 100,
                          device: torch.device | str | None = None):
    """Train an :class:`AttentionSeq2Seq` on generated dates; return ``(model, history)``.

    The defaults reach 99.9% exact match on held-out dates (see the chapter and ``make bench``).
    ``callback(step, model)`` runs every ``every`` steps; returning True stops training.
    The model is built on ``device`` (default: the CPU), where the batches follow it.
    """
    check_steps(steps)
    if seed == HELD_OUT_SEED:
        raise ValueError(f"seed {seed} is reserved for the held-out test dates")
    torch.manual_seed(seed)
    model = AttentionSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), embed_dim, hidden_dim, score=score,
                             bidirectional=bidirectional).to("cpu" if device is None else device)
    rng = np.random.default_rng(seed)
    history = train_seq2seq(model, lambda: date_batch(rng, batch_size), steps, lr=lr, clip=1.0, decay=True,
                            callback=callback and (lambda step: callback(step, model)), every=every)
    return model, history


def translate(model: AttentionSeq2Seq, texts: list[str]) -> list[str]:
    """Greedy translation of each text to ``YYYY-MM-DD``.

    Raises ValueError for characters outside the vocabulary (listing them), empty texts and
    texts longer than the model was trained on.
    """
    src, lengths = encode_sources(texts, device=next(model.parameters()).device)
    ids = model.greedy_decode(src, lengths, TARGET_LEN + 1)
    return [decode_target(row) for row in ids]


def date_exact_match(model: AttentionSeq2Seq, n: int = 5000) -> float:
    """Fraction of ``n`` held-out generated dates translated exactly right."""
    test = date_batch(np.random.default_rng(HELD_OUT_SEED), n).to(next(model.parameters()).device)
    ids = model.greedy_decode(test.src, test.lengths, TARGET_LEN + 1)
    _, exact = accuracy(ids, test.target)
    return exact.mean().item()
