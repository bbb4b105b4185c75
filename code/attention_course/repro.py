"""Reproducibility: one call at the top of every notebook fixes seeds and thread counts.

Same wheel, same CPU and same thread count give bit-identical results; a different thread
count changes the order of floating-point reductions and so the last digits. Fixing the
count also avoids oversubscribing a small machine, which slows numpy and torch many times.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch
from threadpoolctl import threadpool_limits

__all__ = ["seed_everything", "DEFAULT_SEED", "DEFAULT_THREADS"]

DEFAULT_SEED = 0
DEFAULT_THREADS = 1


def seed_everything(seed: int = DEFAULT_SEED, threads: int = DEFAULT_THREADS) -> np.random.Generator:
    """Seed Python, numpy and torch, fix torch's and the BLAS libraries' thread counts.

    Returns a fresh ``numpy.random.Generator`` seeded with ``seed`` for code that wants one.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    os.environ["PYTHONHASHSEED"] = str(seed)  # for subprocesses; this one is already running
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    threadpool_limits(threads)
    torch.use_deterministic_algorithms(True)
    return np.random.default_rng(seed)
