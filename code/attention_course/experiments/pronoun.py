"""Training and evaluating the pronoun resolver on the pronoun task (Chapter 3)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..models.pronoun import PronounResolver
from ..repro import shifted_seed
from ..tasks.pronoun import PronounBatch, pronoun_batch
from ..train import fit
from ..validate import check_steps

__all__ = ["train_pronoun_model", "pronoun_accuracy"]


def train_pronoun_model(model: PronounResolver, steps: int = 400, batch_size: int = 64, lr: float = 1e-2,
                        seed: int = 0, max_clauses: int = 3) -> list[float]:
    """Adam on cross-entropy for ``steps`` fresh batches from ``pronoun_batch``; returns the losses."""
    steps, device = check_steps(steps), next(model.parameters()).device
    rng = np.random.default_rng(shifted_seed(seed))

    def batch_loss() -> torch.Tensor:
        batch = pronoun_batch(rng, batch_size, max_clauses).to(device)
        logits, _ = model(batch.tokens, batch.lengths, batch.pronoun_pos)
        return nn.functional.cross_entropy(logits, batch.target)

    return fit(model, batch_loss, steps, lr)["loss"]


@torch.no_grad()
def pronoun_accuracy(model: PronounResolver, batch: PronounBatch) -> tuple[float, float]:
    """(fraction of right answers, mean attention weight from the pronoun to its antecedent)
    over ``batch``."""
    batch = batch.to(next(model.parameters()).device)
    logits, weights = model(batch.tokens, batch.lengths, batch.pronoun_pos)
    B = batch.tokens.shape[0]
    right = (logits.argmax(-1) == batch.target).float().mean().item()
    rows = torch.arange(B, device=weights.device)
    on_antecedent = weights[rows, batch.pronoun_pos, batch.antecedent_pos]              # (B,)
    return right, on_antecedent.mean().item()
