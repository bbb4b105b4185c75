"""Chapter 5 timings: the Transformer against the RNN with attention; and, for Chapter 4, the package's multi-head
attention against ``torch.nn.MultiheadAttention``.

``date.transformer.seconds_to_999``  training seconds of ``train_date_transformer()`` until the exact
    match on the 5,000 held-out dates, checked every 50 steps, reaches 99.9% (evaluation excluded;
    inf if never). Target: at most 15.
    Its side-by-side partner is ``date.attention.seconds_to_999`` from :mod:`.rnn_attention`: the same
    measurement for the RNN with attention (``train_date_translator()``), both in one ``make bench`` run.
``mha.time_ratio_vs_torch``  median time of one forward plus backward pass of the package's
    :class:`~attention_course.layers.multihead.MultiHeadAttention` divided by that of
    ``torch.nn.MultiheadAttention`` holding the same weights, batch 8, T = 128, embed 256, 8 heads,
    float32, self-attention, both returning per-head weights; timed alternately in one run, so a busy
    machine slows both alike. Target: at most 1.1. ``mha.time_ratio_vs_torch_fused`` is the same
    against torch's ``need_weights=False`` path, which may use a fused kernel and returns no weights.
``compare.transformer.seconds_per_step``, ``compare.rnn.seconds_per_step``  training seconds per step of the two
    models of chapter 5's equal-parameter comparison (:mod:`attention_course.experiments.dates_compare`,
    ``COMPARE_BUDGET``, seed 0), the whole budget timed with the checks below off the clock.
``compare.transformer.seconds_to_90``, ``compare.rnn.seconds_to_90``  training seconds of the same runs until
    the greedy exact match on the comparison's held-out dates, checked at its checkpoints, reaches 90%
    (evaluation excluded; inf if not within the budget). ``compare.*.seconds_to_50``: the same to 50%,
    which both models reach within the budget. One training run per model gives all three.
"""

from __future__ import annotations

import torch
from attention_course.experiments.dates import date_exact_match, date_test_batch, train_date_transformer
from attention_course.experiments.dates_compare import COMPARE_BUDGET, KINDS, compared_trainer
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.train.seq2seq import accuracy

from ._clock import clocked_checks, median_backward_seconds, training_seconds_until

__all__ = ["run", "time_mha", "seconds_to_target", "compare_seconds"]

TARGET = 0.999
COMPARE_TARGETS = (0.5, 0.9)
BATCH, T, EMBED, HEADS = 8, 128, 256, 8


def _teacher_forced_exact_match(model, test) -> float:
    """Exact match when every step is fed the true previous token: an upper bound on the greedy
    exact match (a greedy answer that is all right was fed the true tokens at every step), and one
    forward pass instead of one per output step."""
    with torch.no_grad():
        logits = model(test.src, test.lengths, test.decoder_input())
    _, exact = accuracy(logits.argmax(-1), test.target)
    return exact.mean().item()


def seconds_to_target(every: int = 50, **kwargs) -> float:
    """Training seconds of ``train_date_transformer(**kwargs)`` until the exact match on the 5,000 held-out
    dates, checked every ``every`` steps, reaches TARGET (inf if it never does). Evaluation is not counted;
    training stops at the first check that passes. The greedy evaluation is skipped while the teacher-forced
    exact match, its upper bound, is still below TARGET (same answer, less waiting)."""
    test = date_test_batch(5000)
    return training_seconds_until(
        lambda **cb: train_date_transformer(**cb, **kwargs),
        lambda model: _teacher_forced_exact_match(model, test) >= TARGET and date_exact_match(model) >= TARGET,
        every)


def compare_seconds(kind: str, seed: int = 0) -> dict[str, float]:
    """``seconds_per_step`` (the whole comparison budget, evaluation excluded) and ``seconds_to_50``,
    ``seconds_to_90`` (training seconds until the greedy exact match on the comparison's ``n_test``
    held-out dates reaches 50%, 90%, checked every ``every`` steps; inf if never) of one model of
    chapter 5's comparison, all from one training run."""
    steps, every, n_test = COMPARE_BUDGET["steps"], COMPARE_BUDGET["every"], COMPARE_BUDGET["n_test"]
    train = compared_trainer(kind, seed, steps, COMPARE_BUDGET["batch_size"])
    checks, seconds = clocked_checks(train, lambda model: date_exact_match(model, n_test), every)
    result = {"seconds_per_step": seconds / steps}
    for target in COMPARE_TARGETS:
        result[f"seconds_to_{round(100 * target)}"] = next((t for t, exact in checks if exact >= target),
                                                           float("inf"))
    return result


def time_mha(repeats: int = 20, warmup: int = 3, seed: int = 0) -> dict[str, float]:
    """Median seconds of forward + backward for the package's layer and torch's, timed alternately."""
    torch.manual_seed(seed)
    reference = torch.nn.MultiheadAttention(EMBED, HEADS, batch_first=True)
    ours = MultiHeadAttention.from_torch(reference)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(BATCH, T, EMBED, generator=g, requires_grad=True)
    grad_out = torch.randn(BATCH, T, EMBED, generator=g)
    fns = {"package": lambda: ours(x, x, x)[0],
           "torch": lambda: reference(x, x, x, average_attn_weights=False)[0],
           "torch_fused": lambda: reference(x, x, x, need_weights=False)[0]}
    return median_backward_seconds(fns, (x,), grad_out, repeats, warmup)


def run() -> dict[str, float]:
    med = time_mha()
    metrics = {"mha.time_ratio_vs_torch": round(med["package"] / med["torch"], 3),
               "mha.time_ratio_vs_torch_fused": round(med["package"] / med["torch_fused"], 3),
               "mha.package_ms": round(1e3 * med["package"], 3),
               "mha.torch_ms": round(1e3 * med["torch"], 3)}
    metrics["date.transformer.seconds_to_999"] = round(seconds_to_target(), 2)
    for kind in KINDS:
        for name, value in compare_seconds(kind).items():
            metrics[f"compare.{kind}.{name}"] = round(value, 4)
    return metrics
