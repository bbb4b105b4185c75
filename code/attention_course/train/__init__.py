"""Training: one loop (``fit``) that every model's trainer calls with its own loss, and
``run_parallel`` (:mod:`.parallel`), which runs independent trainings in worker processes."""

from .loop import fit

__all__ = ["fit"]
