"""The two-lookup task (:mod:`attention_course.tasks.lookup`) learned by one attention layer with
one query (:class:`~attention_course.models.lookup.MarkedReader`), for a given number of heads.

    model, history = train_marked_reader(num_heads=2, seed=0)
    lookup_error(model)     # {'both': ..., 'first': ..., 'second': ...}: unexplained variance, held out
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..models.lookup import MarkedReader
from ..repro import shifted_seed
from ..tasks.lookup import FIRST, SECOND, two_lookup_batch
from ..train.loop import fit
from ..validate import check_steps

__all__ = ["LOOKUP_TEST_SEED", "LOOKUP_TASK", "train_marked_reader", "lookup_error", "marker_weights"]

LOOKUP_TEST_SEED = 9_999          # held-out sequences are drawn with this seed; training never uses it
LOOKUP_TASK = {"length": 8, "dim": 4}


def train_marked_reader(num_heads: int, seed: int = 0, steps: int = 200, batch_size: int = 64, lr: float = 3e-2,
                        embed_dim: int = 32):
    """Seed, build a :class:`MarkedReader` of width ``embed_dim`` with ``num_heads`` heads and train it
    with Adam (learning rate decaying linearly to 0) on fresh two-lookup batches; return ``(model, history)``."""
    check_steps(steps)
    if seed == LOOKUP_TEST_SEED:
        raise ValueError(f"seed {seed} is reserved for the held-out sequences")
    torch.manual_seed(shifted_seed(seed))
    model = MarkedReader(LOOKUP_TASK["dim"], SECOND + 1, 2, embed_dim, num_heads)
    rng = np.random.default_rng(shifted_seed(seed))

    def batch_loss() -> torch.Tensor:
        batch = two_lookup_batch(rng, batch_size, **LOOKUP_TASK)
        answer, _ = model(batch.vectors, batch.markers)                    # (B, 2, dim)
        return nn.functional.mse_loss(answer, batch.answer)

    return model, fit(model, batch_loss, steps, lr, decay="linear")


@torch.no_grad()
def lookup_error(model: MarkedReader, n: int = 2000) -> dict[str, float]:
    """On ``n`` held-out sequences, the fraction of the answer's variance left unexplained (mean squared
    error over the variance of the vectors, 1 per number: 0 is perfect, 1 is no better than answering
    0), for each slot (``first``, ``second``) and both (``both``)."""
    batch = two_lookup_batch(np.random.default_rng(LOOKUP_TEST_SEED), n, **LOOKUP_TASK)
    answer, _ = model(batch.vectors, batch.markers)
    error = ((answer - batch.answer) ** 2).mean((0, 2))                       # (2,): per slot
    return {"both": error.mean().item(), "first": error[0].item(), "second": error[1].item()}


@torch.no_grad()
def marker_weights(model: MarkedReader, n: int = 2000) -> torch.Tensor:
    """(heads, 2): each head's mean attention weight on the item marked FIRST and on the one marked
    SECOND, over ``n`` held-out sequences."""
    batch = two_lookup_batch(np.random.default_rng(LOOKUP_TEST_SEED), n, **LOOKUP_TASK)
    _, weights = model(batch.vectors, batch.markers)                          # (n, H, 1, T)
    return torch.stack([(weights[:, :, 0] * (batch.markers == mark)[:, None]).sum(-1).mean(0)
                        for mark in (FIRST, SECOND)], dim=1)
