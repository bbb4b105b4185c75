"""Training and evaluation loops for the sequence-to-sequence chapters.

A model here is anything with ``forward(src, lengths, tgt_in) -> logits (B, T, V)`` and
``greedy_decode(src, lengths, max_len) -> ids (B, max_len)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ..tokens import PAD, Batch
from ..validate import check_steps, check_token_ids, positive_int
from .loop import fit

__all__ = ["train_seq2seq", "accuracy", "evaluate_by_length"]


def train_seq2seq(model: nn.Module, make_batch: Callable[[], Batch], steps: int, lr: float = 3e-3,
                  clip: float | None = 1.0, decay: bool = False,
                  callback: Callable[[int], bool] | None = None, every: int = 100,
                  warmup: int = 0) -> dict[str, list[float]]:
    """Teacher-forced cross-entropy training for ``steps`` batches from ``make_batch()``.

    ``clip`` rescales the gradient to at most that total norm (None: no clipping). Returns the
    history: ``loss`` and the gradient norm *before* clipping, ``grad_norm``, per step.
    ``decay=True`` lowers the learning rate linearly to zero over the ``steps``; ``warmup`` steps of
    linear rise come first (see :func:`~attention_course.train.loop.fit`).
    ``callback(step)``, if given, runs after every ``every`` steps; returning True stops early.
    Each batch is moved to the device of the model's parameters.
    """
    steps, every = check_steps(steps), positive_int("every", every)
    device = next(model.parameters()).device
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)

    def batch_loss() -> torch.Tensor:
        batch = make_batch().to(device)
        logits = model(batch.src, batch.lengths, batch.decoder_input())   # (B, T, V)
        return loss_fn(logits.flatten(0, 1), batch.target.flatten())

    return fit(model, batch_loss, steps, lr, clip=clip, decay="linear" if decay else None, record_grad_norm=True,
               callback=callback, every=every, warmup=warmup)


def accuracy(predicted: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-example (token accuracy, exact match) of predicted ids against target ids.

    Both are (B, T) and compared position by position over the target's non-pad tokens
    (its final ``EOS`` included); a prediction that is too short counts its missing tokens
    as wrong. Exact match: every one of those tokens right. Raises ValueError for batches of
    different sizes and for a target row with no real token (its accuracy would be 0/0).
    """
    check_token_ids("target", target)
    check_token_ids("predicted", predicted, empty_ok=True)
    if predicted.shape[0] != target.shape[0]:
        raise ValueError(f"predicted has {predicted.shape[0]} rows but target has {target.shape[0]}: one "
                         f"prediction per target row")
    empty = (target == PAD).all(1)
    if empty.any():
        raise ValueError(f"target row {int(empty.nonzero()[0])} has no real tokens (all PAD): its accuracy "
                         f"would be 0/0")
    T = target.shape[1]
    if predicted.shape[1] < T:
        predicted = nn.functional.pad(predicted, (0, T - predicted.shape[1]), value=PAD)
    predicted = predicted[:, :T]
    real = target != PAD
    right = (predicted == target) & real
    token = right.sum(1) / real.sum(1)
    exact = (right.sum(1) == real.sum(1)).float()
    return token, exact


def evaluate_by_length(model: nn.Module, make_batch: Callable[[np.random.Generator, int], Batch],
                       lengths: list[int], rng: np.random.Generator) -> dict[str, list[float]]:
    """Greedy-decode one batch ``make_batch(rng, L)`` per source length L; return per-length
    mean token accuracy and exact-match rate (the digit task's final EOS counts as a token)."""
    result: dict[str, list[float]] = {"length": [], "token_accuracy": [], "exact_match": []}
    model.eval()
    device = next(model.parameters()).device
    for L in lengths:
        batch = make_batch(rng, L).to(device)
        predicted = model.greedy_decode(batch.src, batch.lengths, batch.target.shape[1])
        token, exact = accuracy(predicted, batch.target)
        result["length"].append(L)
        result["token_accuracy"].append(token.mean().item())
        result["exact_match"].append(exact.mean().item())
    return result
