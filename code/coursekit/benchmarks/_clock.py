"""Clocks for the benchmarks: interleaved median times of backward passes, and training time until a
target is reached with the checks themselves left off the clock."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


def median_backward_seconds(fns: dict[str, Callable[[], torch.Tensor]], inputs: tuple[torch.Tensor, ...],
                            grad_out: torch.Tensor, repeats: int, warmup: int) -> dict[str, float]:
    """Median seconds of ``fns[name]().backward(grad_out)`` for each name, the implementations timed
    alternately (a busy machine slows all alike) after ``warmup`` untimed rounds; the gradients of
    ``inputs`` are cleared before each pass, off the clock."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(warmup + repeats):
        for name, fn in fns.items():
            for t in inputs:
                t.grad = None
            start = time.perf_counter()
            fn().backward(grad_out)
            elapsed = time.perf_counter() - start
            if i >= warmup:
                times[name].append(elapsed)
    return {name: statistics.median(ts) for name, ts in times.items()}


def training_seconds_until(train: Callable[..., object], reached: Callable[[object], bool], every: int = 50) -> float:
    """Call ``train(callback=..., every=every)``, whose callback receives ``(step, model)`` every
    ``every`` steps, and stop training at the first check where ``reached(model)`` is true.

    Returns the training seconds up to that check (time spent inside ``reached`` is not counted),
    or ``inf`` if training ended without reaching the target.
    """
    clock = {"train": 0.0, "since": time.perf_counter(), "reached": float("inf")}

    def callback(step: int, model) -> bool:
        clock["train"] += time.perf_counter() - clock["since"]
        done = reached(model)
        if done:
            clock["reached"] = clock["train"]
        clock["since"] = time.perf_counter()
        return done

    train(callback=callback, every=every)
    return clock["reached"]
