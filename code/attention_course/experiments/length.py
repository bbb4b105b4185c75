"""The length experiment: how accuracy falls as the source gets longer.

Chapter 1 runs it on the plain encoder-decoder (the shape of Bahdanau et al. 2015, Fig. 2);
later chapters rerun it, unchanged, on models with attention. The protocol is fixed here so
that every model sees the same data, the same budget and the same test sets.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from ..analysis.gradients import input_gradient_norms
from ..models.rnn_attention import AttentionSeq2Seq
from ..models.seq2seq import Seq2Seq, StackedSeq2Seq
from ..repro import shifted_seed
from ..tasks.digits import DIGIT_VOCAB, decode_digits, digit_batch
from ..tokens import PAD
from ..train.parallel import run_parallel
from ..train.seq2seq import accuracy, evaluate_by_length, train_seq2seq
from ..validate import check_steps, positive_int

__all__ = ["LengthProtocol", "run_length_experiment", "length_run", "LENGTH_RUNS", "train_stacked", "evaluate_stacked",
           "run_stacked_length_experiment", "trained_stacked_length_experiment", "longest_copied",
           "SWEEP", "SWEEP_SEEDS", "SWEEP_WIDTHS", "SWEEP_RUNS", "sweep_parameters", "bottleneck_sweep", "copies",
           "CELL_PROTOCOL", "trained_cell", "compare_cells"]


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
    train_rng = np.random.default_rng(shifted_seed(p.train_seed))
    history = train_seq2seq(model, lambda: digit_batch(train_rng, p.batch_size, p.min_len, p.max_len),
                            p.steps, lr=p.lr, clip=p.clip)
    result = evaluate_by_length(model, lambda rng, L: digit_batch(rng, p.eval_batch_size, L, L),
                                list(p.eval_lengths), np.random.default_rng(p.eval_seed))
    return history, result


LENGTH_RUNS = ("plain", "attention")


def length_run(model: str, seed: int = 0, hidden_dim: int = 64, protocol: LengthProtocol = LengthProtocol()):
    """Chapter 2's rerun of the length experiment for one ``model`` of :data:`LENGTH_RUNS`: the plain GRU
    encoder-decoder or the same encoder and decoder with dot-product attention, 16-dimensional embeddings,
    width ``hidden_dim``. ``seed`` fixes the initial weights and the training strings (the protocol's
    ``train_seed``); the test strings are the protocol's, the same for every seed. Returns the per-length
    results of :func:`run_length_experiment` (``length``, ``token_accuracy``, ``exact_match``) with
    ``parameters`` added. Seed 0 is the chapter's run."""
    if model not in LENGTH_RUNS:
        raise ValueError(f"model must be one of {LENGTH_RUNS}, got {model!r}")
    hidden_dim = positive_int("hidden_dim", hidden_dim)
    torch.manual_seed(shifted_seed(seed))
    net = (Seq2Seq(len(DIGIT_VOCAB), embed_dim=16, hidden_dim=hidden_dim, cell="gru")
           if model == "plain" else
           AttentionSeq2Seq(len(DIGIT_VOCAB), len(DIGIT_VOCAB), embed_dim=16, hidden_dim=hidden_dim, score="dot"))
    _, result = run_length_experiment(net, dataclasses.replace(protocol, train_seed=seed))
    return {**result, "parameters": sum(p.numel() for p in net.parameters())}


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
    rngs = [np.random.default_rng(shifted_seed(s)) for s in data_seeds]
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


# --------------------------------------------------------------------------- chapter 1's sweep

#: Chapter 1's shrunk protocol: strings of 1 to 10 digits, 900 steps of 64 strings per model.
SWEEP = LengthProtocol(max_len=10, steps=900, eval_lengths=tuple(range(2, 11)), eval_batch_size=200)
SWEEP_SEEDS = (0, 1, 2)
SWEEP_WIDTHS = (16, 32, 64)
#: The names of the sweep's configurations, as :func:`bottleneck_sweep` returns them.
SWEEP_RUNS = ("plain d=16", "plain d=32", "plain d=64", "attention d=16", "unclipped d=32", "reversed d=32")


def sweep_parameters(hidden_dim: int, attention: bool = False, embed_dim: int = 16) -> int:
    """Parameters of one model of the sweep: the plain GRU Seq2Seq, plus with attention the
    read-out's weights for the context (its ``nn.Linear(2 d, V)`` replaces ``Linear(d, V)``)."""
    plain = sum(p.numel() for p in Seq2Seq(len(DIGIT_VOCAB), embed_dim, hidden_dim).parameters())
    return plain + (len(DIGIT_VOCAB) * hidden_dim if attention else 0)


def _fresh(hidden_dim: int, seed: int, count: int) -> list[Seq2Seq]:
    torch.manual_seed(shifted_seed(seed))
    return [Seq2Seq(len(DIGIT_VOCAB), 16, hidden_dim, "gru") for _ in range(count)]


def bottleneck_sweep(seeds: Sequence[int] = SWEEP_SEEDS, protocol: LengthProtocol = SWEEP,
                     curve_every: int | None = None, curve_examples: int = 128) -> dict:
    """Chapter 1's experiment: the plain GRU encoder-decoder at widths 16, 32 and 64, and beside them
    three controls trained from the same initial weights on the same strings: the d = 16 models
    reading every encoder state through attention, the d = 32 models without gradient clipping, and
    the d = 32 models fed their source backwards. ``len(seeds)`` models of each (seed s: model
    weights drawn in turn, training strings from stream s); the three stacks, one per width, train
    side by side (:func:`~attention_course.train.parallel.run_parallel`).

    With ``curve_every``, each model is also tested every that many steps on ``curve_examples``
    strings of the longest length (its learning curve there; the tests draw on their own random
    stream, so the training is the same with or without them).

    Returns a dict with ``runs`` (name -> dict of ``acc`` and ``exact`` (lengths, seeds), ``curve``
    (points, seeds) at the longest length (no points without ``curve_every``), ``loss`` and
    ``grad_norm`` (steps, seeds)), ``lengths``,
    ``curve_steps`` and ``models`` (name -> the trained :class:`StackedSeq2Seq` of that width: ``16``,
    ``32``, ``64``; model m of the d = 32 stack is seed m's plain model).
    """
    seeds = tuple(seeds)
    n = len(seeds)
    if n == 0:
        raise ValueError("need at least one seed")
    plain16 = _fresh(16, 16, n)
    torch.manual_seed(shifted_seed(116))
    readouts = [nn.Linear(2 * 16, plain16[0].decoder.out.out_features) for _ in seeds]
    stack16 = StackedSeq2Seq.from_models(plain16 * 2, attention_out=[None] * n + readouts)
    plain32 = _fresh(32, 32, n)
    reversed32 = [copy.deepcopy(m) for m in plain32]
    for m in reversed32:
        m.reverse_input = True
    stack32 = StackedSeq2Seq.from_models(plain32 * 2 + reversed32)
    stack64 = StackedSeq2Seq.from_models(_fresh(64, 64, n))
    curve = dict(curve_every=curve_every, curve_examples=curve_examples)
    (stack16, *run16), (stack32, *run32), (stack64, *run64) = run_parallel(trained_stacked_length_experiment, [
        dict(model=stack16, protocol=protocol, data_seeds=seeds * 2, **curve),
        dict(model=stack32, protocol=protocol, data_seeds=seeds * 3, clip=[1.0] * n + [None] * n + [1.0] * n, **curve),
        dict(model=stack64, protocol=protocol, data_seeds=seeds, **curve)])

    def part(run, first):
        history, result, curve = run
        cols = slice(first, first + n)
        points = curve["token_accuracy"].reshape(len(curve["step"]), history["loss"].shape[1])     # (K, M)
        return {"acc": result["token_accuracy"][:, cols], "exact": result["exact_match"][:, cols],
                "curve": points[:, cols], "loss": history["loss"][:, cols],
                "grad_norm": history["grad_norm"][:, cols]}

    runs = dict(zip(SWEEP_RUNS, (part(run16, 0), part(run32, 0), part(run64, 0), part(run16, n),
                                 part(run32, n), part(run32, 2 * n))))
    return {"runs": runs, "lengths": list(protocol.eval_lengths), "curve_steps": run16[2]["step"],
            "models": {16: stack16, 32: stack32, 64: stack64}}


def copies(model: Seq2Seq, batch) -> list[tuple[str, str, str]]:
    """Greedy copies of ``batch``'s digit strings by ``model``: ``(source, copy, marks)`` per example,
    where ``marks`` has a ``^`` under every position the copy got wrong (or did not reach)."""
    out = model.greedy_decode(batch.src, batch.lengths, max_len=batch.target.shape[1])
    rows = []
    for target, copy_ids in zip(batch.target, out):
        source, copied = decode_digits(target), decode_digits(copy_ids)
        marks = "".join("^" if i >= len(copied) or copied[i] != ch else " " for i, ch in enumerate(source))
        rows.append((source, copied, marks))
    return rows


#: The cell comparison's protocol: strings of up to 15 digits, 400 steps, tested at 5, 10 and 15 digits.
CELL_PROTOCOL = LengthProtocol(max_len=15, steps=400, eval_lengths=(5, 10, 15))


def trained_cell(cell: str, seed: int = 0, protocol: LengthProtocol = CELL_PROTOCOL, hidden_dim: int = 64,
                 probe_seed: int = 4) -> dict:
    """One encoder-decoder with recurrent ``cell`` (rnn, gru or lstm) trained under ``protocol``
    (weights from torch seed ``seed``, training strings from stream ``seed``). Returns ``length``,
    ``token_accuracy`` and the gradient that reaches each input position of 128 fresh strings of the
    longest length (``init`` before training, ``trained`` after; see
    :func:`~attention_course.analysis.gradients.input_gradient_norms`)."""
    probe = digit_batch(np.random.default_rng(probe_seed), 128, protocol.max_len, protocol.max_len)
    torch.manual_seed(shifted_seed(seed))
    model = Seq2Seq(len(DIGIT_VOCAB), embed_dim=16, hidden_dim=hidden_dim, cell=cell)
    init = input_gradient_norms(model, probe)
    _, result = run_length_experiment(model, dataclasses.replace(protocol, train_seed=seed))
    return {"length": np.array(result["length"]), "token_accuracy": np.array(result["token_accuracy"]),
            "init": init, "trained": input_gradient_norms(model, probe)}


def compare_cells(seeds: Sequence[int] = SWEEP_SEEDS, cells: Sequence[str] = ("rnn", "gru", "lstm"),
                  protocol: LengthProtocol = CELL_PROTOCOL) -> dict[str, list[dict]]:
    """:func:`trained_cell` for every cell and seed, side by side: cell -> one result per seed."""
    jobs = [dict(cell=c, seed=s, protocol=protocol) for c in cells for s in seeds]
    results = run_parallel(trained_cell, jobs)
    return {c: results[i * len(seeds):(i + 1) * len(seeds)] for i, c in enumerate(cells)}
