"""Training time until a target is reached, with the checks themselves left off the clock."""

from __future__ import annotations

import time
from collections.abc import Callable


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
