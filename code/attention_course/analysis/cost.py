"""What self-attention and a recurrence cost, and how far information travels (Chapter 3).

* :func:`loglog_slope`: the least-squares slope of log time against log T, the exponent of a power law.
* :func:`last_output_gradient_norms`: ||d y_T / d x_t|| for every input position t, how strongly the
  last output of a sequence layer depends on each input.
* :func:`cache_sizes`: the sizes of this machine's data caches, to compare with the T x T matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

__all__ = ["loglog_slope", "last_output_gradient_norms", "cache_sizes"]


def loglog_slope(lengths: Sequence[float], seconds: Sequence[float], min_length: float = 0) -> float:
    """Least-squares slope of log(seconds) against log(lengths) over the points with length >= min_length:
    time ~ T^slope there."""
    T, t = np.asarray(lengths, dtype=float), np.asarray(seconds, dtype=float)
    if T.shape != t.shape or T.ndim != 1:
        raise ValueError(f"lengths and seconds must be 1-D and of one length, got {T.shape} and {t.shape}")
    keep = T >= min_length
    if keep.sum() < 2:
        raise ValueError(f"a slope needs at least two points with length >= {min_length}, got {int(keep.sum())}")
    if not (np.all(T[keep] > 0) and np.all(t[keep] > 0) and np.all(np.isfinite(t[keep]))):
        raise ValueError("lengths and seconds must be positive and finite to take logarithms")
    slope, _ = np.polyfit(np.log(T[keep]), np.log(t[keep]), 1)
    return float(slope)


def last_output_gradient_norms(layer: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """(T,) ||d y_T / d x_t||_F for t = 1..T, where ``y = layer(x)`` maps (1, T, d) to (1, T, d_out).

    The Jacobian of the last output y_T (d_out numbers) with respect to each input x_t, by one
    backward pass per output feature.
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[0] != 1:
        raise ValueError(f"x must be one sequence of shape (1, T, d), got {getattr(x, 'shape', x)!r}")
    x = x.detach().clone().requires_grad_(True)
    y_last = layer(x)[0, -1]                                               # (d_out,)
    rows = [torch.autograd.grad(y_last[j], x, retain_graph=True)[0][0] for j in range(y_last.shape[0])]
    jacobian = torch.stack(rows)                                           # (d_out, T, d)
    return jacobian.pow(2).sum(dim=(0, 2)).sqrt()                          # (T,)


def cache_sizes(cpu: int = 0) -> dict[str, int]:
    """This machine's data caches as ``{"L1": bytes, "L2": bytes, ...}``, read from Linux's sysfs
    (``/sys/devices/system/cpu/cpu<cpu>/cache``); empty where that is not available."""
    sizes: dict[str, int] = {}
    for index in sorted(Path(f"/sys/devices/system/cpu/cpu{cpu}/cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = (index / "level").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction" or not size:
            continue
        unit = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1], 1)
        sizes[f"L{level}"] = int(size.rstrip("KMG")) * unit
    return sizes
