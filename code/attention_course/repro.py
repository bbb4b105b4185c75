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

A claim must not rest on one seed. ``COURSE_SEED_SHIFT=N`` in the environment (default 0) shifts
every training and initialisation seed of the course by ``N``: :func:`seed_everything` and every
trainer of the package seed themselves with :func:`shifted_seed`. Data sets, held-out splits and
the inputs of closed-form demonstrations keep their seeds, so the same examples are scored by
differently trained models. ``make test`` runs every notebook at shift 1 as well as at 0.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch
from threadpoolctl import threadpool_limits

__all__ = ["seed_everything", "seed_shift", "shifted_seed", "DEFAULT_SEED", "DEFAULT_THREADS", "SEED_SHIFT_VARIABLE"]

DEFAULT_SEED = 0
DEFAULT_THREADS = 1
SEED_SHIFT_VARIABLE = "COURSE_SEED_SHIFT"


def seed_shift() -> int:
    """The course's seed shift: the value of ``COURSE_SEED_SHIFT`` (a non-negative integer), 0 if unset."""
    raw = os.environ.get(SEED_SHIFT_VARIABLE, "").strip()
    if not raw:
        return 0
    try:
        shift = int(raw)
    except ValueError:
        shift = -1
    if shift < 0:
        raise ValueError(f"{SEED_SHIFT_VARIABLE} must be a non-negative integer (for example 1), got {raw!r}")
    return shift


def shifted_seed(seed: int) -> int:
    """``seed`` moved by the course's seed shift (:func:`seed_shift`): what every trainer seeds itself with."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    return seed + seed_shift()


def seed_everything(seed: int = DEFAULT_SEED, threads: int = DEFAULT_THREADS) -> np.random.Generator:
    """Seed Python, numpy and torch, fix torch's and the BLAS libraries' thread counts.

    Python's, numpy's and torch's global seeds are ``seed`` moved by the course's seed shift
    (:func:`shifted_seed`, 0 unless ``COURSE_SEED_SHIFT`` is set): they initialise models. The returned
    ``numpy.random.Generator`` is for drawing data and is seeded with ``seed`` itself, so a seed shift
    trains other models on the same data.
    """
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive int, got {threads!r}")
    data_seed, seed = seed, shifted_seed(seed)
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
    return np.random.default_rng(data_seed)
