"""Chapter 2 timings: how long the date translator trains to reach 99.9%, and each score's cost."""

from __future__ import annotations

import time

from ..translator import COMPARISON_BUDGET, date_exact_match, train_date_translator

TARGET = 0.999


def seconds_to_target(every: int = 50, **kwargs) -> float:
    """Training seconds of ``train_date_translator(**kwargs)`` until the exact match on the 5,000
    held-out dates, checked every ``every`` steps, reaches TARGET (inf if it never does).
    Evaluation time is not counted."""
    clock = {"train": 0.0, "since": time.perf_counter(), "reached": float("inf")}

    def callback(step, model) -> bool:
        clock["train"] += time.perf_counter() - clock["since"]
        reached = date_exact_match(model) >= TARGET
        if reached:
            clock["reached"] = clock["train"]
        clock["since"] = time.perf_counter()
        return reached

    train_date_translator(callback=callback, every=every, **kwargs)
    return clock["reached"]


def run() -> dict[str, float]:
    metrics = {"date.attention.seconds_to_999": round(seconds_to_target(), 2)}
    for score in ("dot", "general", "additive"):
        start = time.perf_counter()
        train_date_translator(score=score, bidirectional=False, **COMPARISON_BUDGET)
        metrics[f"date.score.{score}.train_seconds"] = round(time.perf_counter() - start, 2)
    return metrics
