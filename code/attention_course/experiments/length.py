"""The length experiment: how accuracy falls as the source gets longer.

Chapter 1 runs it on the plain encoder-decoder (the shape of Bahdanau et al. 2015, Fig. 2);
later chapters rerun it, unchanged, on models with attention. The protocol is fixed here so
that every model sees the same data, the same budget and the same test sets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..models.seq2seq import StackedSeq2Seq
from ..tasks.digits import digit_batch
from ..tokens import PAD
from ..train.seq2seq import accuracy, evaluate_by_length, train_seq2seq
from ..validate import check_steps, positive_int

__all__ = ["LengthProtocol", "run_length_experiment", "train_stacked", "evaluate_stacked",
           "run_stacked_length_experiment", "trained_stacked_length_experiment", "longest_copied"]


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


def _stacked_batch(rngs: list[np.random.Generator], p: LengthProtocol):
    """One training batch per model, each from that model's own stream: (src, lengths, tgt_in, target),
    every tensor with a leading model axis."""
    batches = [digit_batch(rng, p.batch_size, p.min_len, p.max_len) for rng in rngs]
    return (torch.stack([b.src for b in batches]), torch.stack([b.lengths for b in batches]),
            torch.stack([b.decoder_input() for b in batches]), torch.stack([b.target for b in batches]))


def train_stacked(model: StackedSeq2Seq, make_batch, steps: int, lr: float = 3e-3,
                  clip: float | None | Sequence[float | None] = 1.0,
                  callback: Callable[[int], None] | None = None, every: int = 100) -> dict[str, np.ndarray]:
    """Teacher-forced training of every model of a :class:`StackedSeq2Seq` at once.

    Each step is what :func:`~attention_course.train.seq2seq.train_seq2seq` does for one model,
    done for all: the mean cross-entropy of each model's own batch (``make_batch()`` returns
    src (M, B, S), lengths (M, B), tgt_in (M, B, T), target (M, B, T)), one backward pass for
    the sum (so each model gets its own gradient), each model's gradient clipped to ``clip``
    by its *own* total norm (one threshold for all, or one per model, None: no clipping; the
    rescaling of :func:`torch.nn.utils.clip_grad_norm_`), and one Adam step, which acts on every
    number separately. Returns ``loss`` and ``grad_norm`` (the norm before clipping), each
    (steps, M). ``callback(step)`` runs in eval mode after every ``every`` steps.
    """
    steps, every = check_steps(steps), positive_int("every", every)
    M = model.models
    clips = list(clip) if isinstance(clip, Sequence) else [clip] * M
    if len(clips) != M or any(c is not None and not c > 0 for c in clips):
        raise ValueError(f"clip must be None, a positive number or {M} of them (one per model), got {clip!r}")
    limit = torch.tensor([float("inf") if c is None else float(c) for c in clips])      # (M,)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = {"loss": np.zeros((steps, M)), "grad_norm": np.zeros((steps, M))}
    model.train()
    for step in range(steps):
        src, lengths, tgt_in, target = make_batch()
        logits = model(src, lengths, tgt_in)                                         # (M, B, T, V)
        token_loss = nn.functional.cross_entropy(logits.flatten(0, 2), target.flatten(), ignore_index=PAD,
                                                 reduction="none").view(target.shape)
        real = (target != PAD).flatten(1).sum(1)                                      # (M,)
        loss = token_loss.flatten(1).sum(1) / real                                    # (M,) each model's mean
        opt.zero_grad()
        loss.sum().backward()
        grads = [p.grad for p in model.parameters()]
        norm = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads]).sum(0).sqrt()   # (M,) per model
        scale = (limit / (norm + 1e-6)).clamp(max=1.0)                                # as clip_grad_norm_
        for g in grads:
            g.mul_(scale.view(-1, *[1] * (g.dim() - 1)))
        opt.step()
        history["loss"][step] = loss.detach().numpy()
        history["grad_norm"][step] = norm.numpy()
        if callback is not None and (step + 1) % every == 0:
            model.eval()
            callback(step + 1)
            model.train()
    model.eval()
    return history


def evaluate_stacked(model: StackedSeq2Seq, lengths: Sequence[int], examples: int,
                     rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Greedy-decode ``examples`` fresh strings of each length (the same strings for every model);
    return ``length`` and per-length, per-model ``token_accuracy`` and ``exact_match``, (len(lengths), M)."""
    M = model.models
    token_acc, exact_acc = [], []
    for L in lengths:
        b = digit_batch(rng, examples, L, L)
        src, lens = b.src.expand(M, -1, -1), b.lengths.expand(M, -1)
        predicted = model.greedy_decode(src, lens, b.target.shape[1])                 # (M, B, T)
        token, exact = accuracy(predicted.flatten(0, 1), b.target.repeat(M, 1))
        token_acc.append(token.view(M, -1).mean(1).numpy())
        exact_acc.append(exact.view(M, -1).mean(1).numpy())
    return {"length": np.array(lengths), "token_accuracy": np.array(token_acc), "exact_match": np.array(exact_acc)}


def run_stacked_length_experiment(model: StackedSeq2Seq, protocol: LengthProtocol, data_seeds: Sequence[int],
                                  clip: float | None | Sequence[float | None] = None, curve_every: int | None = None,
                                  curve_examples: int = 128):
    """The length experiment for the ``M`` models of ``model`` at once, model m trained on the stream
    of ``data_seeds[m]`` (two models given one seed see the same batches) and every model tested on
    the same ``protocol.eval_batch_size`` strings per length.

    ``clip`` defaults to ``protocol.clip``. With ``curve_every``, every that many steps each model
    is also tested on ``curve_examples`` strings of the longest length ``protocol.max_len`` (the same
    ones each time): the learning curve there. Returns (history, result, curve); ``curve`` holds
    ``step`` (K,) and ``token_accuracy`` (K, M), empty without ``curve_every``.
    """
    p = protocol
    if len(data_seeds) != model.models:
        raise ValueError(f"need one data seed per model ({model.models}), got {len(data_seeds)}")
    rngs = [np.random.default_rng(s) for s in data_seeds]
    curve: dict[str, list] = {"step": [], "token_accuracy": []}

    def record(step: int) -> None:
        acc = evaluate_stacked(model, [p.max_len], curve_examples, np.random.default_rng(p.eval_seed + 1))
        curve["step"].append(step)
        curve["token_accuracy"].append(acc["token_accuracy"][0])

    history = train_stacked(model, lambda: _stacked_batch(rngs, p), p.steps, lr=p.lr,
                            clip=p.clip if clip is None else clip, callback=record if curve_every else None,
                            every=curve_every or 1)
    result = evaluate_stacked(model, list(p.eval_lengths), p.eval_batch_size, np.random.default_rng(p.eval_seed))
    return history, result, {k: np.array(v) for k, v in curve.items()}


def trained_stacked_length_experiment(model: StackedSeq2Seq, protocol: LengthProtocol, data_seeds: Sequence[int],
                                      **options):
    """:func:`run_stacked_length_experiment` (``options``: ``clip``, ``curve_every``, ``curve_examples``)
    that also returns the trained model: ``(model, history, result, curve)``. In a worker process of
    :func:`~attention_course.train.parallel.run_parallel` the model trains on a copy, which this sends back."""
    return (model, *run_stacked_length_experiment(model, protocol, data_seeds, **options))


def longest_copied(lengths: Sequence[int], token_accuracy: Sequence[float], threshold: float = 0.9) -> int:
    """The longest tested length L such that every tested length up to L is copied with per-token
    accuracy at least ``threshold``; 0 when even the shortest is not. ``lengths`` must increase."""
    lengths, acc = np.asarray(lengths), np.asarray(token_accuracy, dtype=float)
    if lengths.ndim != 1 or acc.shape != lengths.shape or lengths.size == 0:
        raise ValueError(f"need one accuracy per length, got {lengths.shape} lengths and {acc.shape} accuracies")
    if (np.diff(lengths) <= 0).any():
        raise ValueError(f"lengths must increase, got {lengths.tolist()}")
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must lie in (0, 1], got {threshold!r}")
    below = np.flatnonzero(acc < threshold)
    if below.size == 0:
        return int(lengths[-1])
    return 0 if below[0] == 0 else int(lengths[below[0] - 1])
