"""Reproducibility: one call at the top of every notebook fixes seeds and thread counts.

What is reproducible where (torch 2.13 CPU wheels, measured):

- Same wheel, same CPU model and same thread count: a rerun is bit-identical, training included.
- Another thread count changes the order of floating-point reductions, hence the last digits.
- Another CPU vendor or instruction set changes them too, and no setting prevents it: MKL and
  ATen choose their kernels by CPU (float32 ``sqrt``, which Adam calls every step, is correctly
  rounded on one path and not on another). Closed-form results rounded for display agree
  everywhere; the results of training do not, even to three decimals.

So the chapters compare closed-form outputs exactly, and state what they claim about trained
models as checks that run in the cell (:func:`attention_course.claims.expect`). ``make test``
validates the notebooks twice, the second time on another numeric code path
(``ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE``), which moves the last bits of training as
a CPU of another vendor would. Fixing the thread count also avoids oversubscribing a small
machine, which slows numpy and torch many times. On CUDA, deterministic cuBLAS needs
``CUBLAS_WORKSPACE_CONFIG``, which :func:`seed_everything` sets unless it is already set.
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
    # cuBLAS raises under deterministic algorithms unless it has a fixed workspace (read at CUDA init).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    # Deterministic mode also fills every new tensor with NaN, to expose reads of memory never written
    # (about a tenth of a small Transformer's training step here). The package writes what it allocates,
    # so results are bit-identical without it (tests/test_repro.py).
    torch.utils.deterministic.fill_uninitialized_memory = False
    return np.random.default_rng(seed)
