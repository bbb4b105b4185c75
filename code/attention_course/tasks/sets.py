"""Sets of numbers whose maximum is to be regressed (the first experiment of Lee et al. 2019)."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["max_regression_batch", "max_regression_test_set", "VALUE_HIGH"]


VALUE_HIGH = 100.0   # elements are drawn uniformly from [0, VALUE_HIGH), as in the paper's demo


def max_regression_batch(rng: np.random.Generator, batch_size: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` sets of ``n`` numbers uniform on [0, VALUE_HIGH): x (B, n, 1), target max (B,)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set size n must be a positive int, got {n!r}")
    x = torch.from_numpy(rng.uniform(0.0, VALUE_HIGH, size=(batch_size, n, 1))).float()
    return x, x.amax(dim=(1, 2))


def max_regression_test_set(seed: int = 1234, per_size: int = 200,
                            max_size: int = 10) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A fixed test set: ``per_size`` sets of every size 1..max_size, one (x, target) pair per size."""
    rng = np.random.default_rng(seed)
    return [max_regression_batch(rng, per_size, n) for n in range(1, max_size + 1)]
