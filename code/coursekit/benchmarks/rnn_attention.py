"""Chapter 2 timings: how long the date translator trains to reach 99.9%, and each score's cost."""

from __future__ import annotations

import time

from attention_course.experiments.dates import (
    COMPARISON_BUDGET,
    date_exact_match,
    score_variants,
    train_date_translator,
)

from ._clock import training_seconds_until

TARGET = 0.999


def seconds_to_target(every: int = 50, **kwargs) -> float:
    """Training seconds of ``train_date_translator(**kwargs)`` until the exact match on the 5,000
    held-out dates (``date_test_batch``: test days only, never generated for training), checked every
    ``every`` steps, reaches TARGET (inf if it never does).
    Evaluation time is not counted."""
    return training_seconds_until(lambda **cb: train_date_translator(**cb, **kwargs),
                                  lambda model: date_exact_match(model) >= TARGET, every)


def run() -> dict[str, float]:
    metrics = {"date.attention.seconds_to_999": round(seconds_to_target(), 2)}
    for score, options in score_variants().items():         # the chapter's equal-parameter variants
        start = time.perf_counter()
        train_date_translator(steps=COMPARISON_BUDGET["steps"], batch_size=COMPARISON_BUDGET["batch_size"], **options)
        metrics[f"date.score.{score}.train_seconds"] = round(time.perf_counter() - start, 2)
    return metrics
