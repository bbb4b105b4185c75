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


def clocked_checks(train: Callable[..., object], measure: Callable[[object], object], every: int = 50,
                   stop: Callable[[object], bool] = lambda value: False) -> tuple[list[tuple[float, object]], float]:
    """Call ``train(callback=..., every=every)``, whose callback receives ``(step, model)`` every ``every``
    steps, and at each check record ``(training seconds so far, measure(model))``; training stops at
    the first check whose value satisfies ``stop``. Time spent inside ``measure`` is not counted.

    Returns ``(checks, seconds)``: the checks in order, and the training seconds of the whole run.
    """
    clock = {"train": 0.0, "since": time.perf_counter()}
    checks: list[tuple[float, object]] = []

    def callback(step: int, model) -> bool:
        clock["train"] += time.perf_counter() - clock["since"]
        value = measure(model)
        checks.append((clock["train"], value))
        clock["since"] = time.perf_counter()
        return stop(value)

    train(callback=callback, every=every)
    return checks, clock["train"] + time.perf_counter() - clock["since"]


def training_seconds_until(train: Callable[..., object], reached: Callable[[object], bool], every: int = 50) -> float:
    """The training seconds of ``train`` (see :func:`clocked_checks`) up to the first check where
    ``reached(model)`` is true, training stopped there; ``inf`` if training ended without reaching it."""
    checks, _ = clocked_checks(train, reached, every, stop=bool)
    return checks[-1][0] if checks and checks[-1][1] else float("inf")
