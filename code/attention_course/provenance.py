"""Provenance: one line that says what a chapter was executed with, for its last cell.

``print(provenance())`` at the end of a chapter gives, for example::

    Executed with Python 3.11, torch 2.13.0, numpy 2.4.6, matplotlib 3.11.2, attention_course 0.1.0;
    seed 0, 1 thread, deterministic algorithms on.

The text is deterministic, so nbval can compare it like any other output: it holds only what the
lock file (constraints.txt) pins and what :func:`~attention_course.repro.seed_everything` sets,
and the Python version without its patch number. It holds no date, host name or run time: those
change on every run. Wall-clock times belong to ``make bench`` (``_build/bench.json``), not to
stored notebook outputs. :func:`elapsed_seconds` exists for an author who wants to see a run
time while working; do not print it in a cell whose output is stored.
"""

from __future__ import annotations

import sys
import time
from importlib import metadata

import torch

from .repro import DEFAULT_SEED, SEED_SHIFT_VARIABLE, seed_shift

__all__ = ["provenance", "versions", "elapsed_seconds"]

PACKAGES = ("torch", "numpy", "matplotlib")


def versions() -> dict[str, str]:
    """Python (major.minor), the numerical packages and this package, in a fixed order."""
    found = {"Python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in (*PACKAGES, "attention-course"):
        try:
            v = metadata.version(name)
        except metadata.PackageNotFoundError:
            v = "not installed"
        found[name.replace("-", "_")] = v.split("+")[0]      # torch 2.13.0+cpu -> 2.13.0
    return found


def provenance(seed: int = DEFAULT_SEED) -> str:
    """A short, deterministic description of the environment a notebook ran in.

    ``seed`` is the seed the chapter passed to ``seed_everything`` (0 in every chapter). The thread
    count and the deterministic-algorithms flag are read from torch, as the chapter left them. Under a
    seed shift (``COURSE_SEED_SHIFT``) the line says so: the text then depends on the shift.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    parts = ", ".join(f"{name} {v}" for name, v in versions().items())
    threads = torch.get_num_threads()
    determinism = "on" if torch.are_deterministic_algorithms_enabled() else "off"
    shift = seed_shift()
    seeds = f"seed {seed}" + (f", shifted by {shift} ({SEED_SHIFT_VARIABLE}={shift})" if shift else "")
    return (f"Executed with {parts}; {seeds}, {threads} thread{'s' if threads != 1 else ''}, "
            f"deterministic algorithms {determinism}.")


def elapsed_seconds() -> float | None:
    """Wall-clock seconds since this Python process (the notebook's kernel) started, or None
    where the start time cannot be read. Not deterministic: never store it in an output."""
    try:
        import psutil
    except ImportError:
        return None
    return time.time() - psutil.Process().create_time()
