"""Training: one loop (``fit``) that every model's trainer calls with its own loss."""

from .loop import fit

__all__ = ["fit"]
