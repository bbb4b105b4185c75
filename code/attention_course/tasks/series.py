"""Synthetic series for forecasting (Chapter 7), generated so that the right answer is known.

Each series is a level, a seasonal profile of period P that differs from series to series, noise,
and *events* (promotions, holidays) whose dates are known in advance and which lift the series by
a per-series amount. Shapes: B series, L history steps, H horizons.

    history         (B, L)   past values y_{t-L+1} .. y_t
    history_events  (B, L)   1.0 where an event happened in the past, else 0.0
    future_events   (B, H)   1.0 where an event is scheduled at t + h (known in advance)
    target          (B, H)   y_{t+1} .. y_{t+H}
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import numpy as np
import torch

from ..validate import positive_int

__all__ = ["SeriesBatch", "make_series", "seasonal_naive"]


@dataclass(frozen=True)
class SeriesBatch:
    """A batch of series cut at a forecast origin t, plus the truth of the H steps that follow."""

    history: torch.Tensor          # (B, L)
    history_events: torch.Tensor   # (B, L)
    future_events: torch.Tensor    # (B, H)
    target: torch.Tensor           # (B, H)
    uplift: torch.Tensor           # (B,) each series' event effect (for analysis only, not a model input)

    def to(self, device: torch.device | str | None) -> SeriesBatch:
        """The same batch on ``device`` (no copy for tensors already there)."""
        return SeriesBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def make_series(rng: np.random.Generator, batch_size: int, period: int = 12, history: int = 48,
                horizon: int = 12, event_rate: float = 0.06, noise: float = 0.4) -> SeriesBatch:
    """``batch_size`` synthetic series of ``history + horizon`` steps, split at the forecast origin.

    y_t = level + seasonal[(t + phase) mod period] + uplift * event_t + noise * N(0, 1), with per
    series: level ~ U(5, 15), a seasonal profile of two random harmonics (amplitude about 1 to 3),
    a random phase, and an uplift ~ U(2, 6) added at each event. Events happen independently
    with probability ``event_rate`` at every step; their dates in the forecast window are given
    to the model in ``future_events``.
    """
    for name, v in (("batch_size", batch_size), ("period", period), ("history", history), ("horizon", horizon)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if history < period:
        raise ValueError(f"history={history} must cover at least one period={period} (seasonal naive needs it)")
    if not 0.0 <= event_rate < 1.0:
        raise ValueError(f"event_rate must lie in [0, 1), got {event_rate!r}")
    B, T = batch_size, history + horizon
    t = np.arange(T)[None, :] + rng.integers(0, period, size=(B, 1))          # (B, T) with a random phase
    angle = 2 * np.pi * t / period
    amp = rng.uniform(0.5, 1.5, size=(B, 2, 1)) * np.array([2.0, 1.0])[None, :, None]
    shift = rng.uniform(0, 2 * np.pi, size=(B, 2, 1))
    seasonal = amp[:, 0] * np.sin(angle + shift[:, 0]) + amp[:, 1] * np.sin(2 * angle + shift[:, 1])
    level = rng.uniform(5.0, 15.0, size=(B, 1))
    uplift = rng.uniform(2.0, 6.0, size=(B, 1))
    events = (rng.random((B, T)) < event_rate).astype(np.float64)
    y = level + seasonal + uplift * events + noise * rng.standard_normal((B, T))

    def f(a):
        return torch.from_numpy(np.ascontiguousarray(a)).float()

    return SeriesBatch(history=f(y[:, :history]), history_events=f(events[:, :history]),
                       future_events=f(events[:, history:]), target=f(y[:, history:]), uplift=f(uplift[:, 0]))


def seasonal_naive(history: torch.Tensor, period: int, horizon: int) -> torch.Tensor:
    """(B, L) -> (B, horizon): each future step repeats the value one (or more) whole periods back.

    Step t + h (h = 1..horizon) copies y_{t + h - k P} with the smallest k >= 1 that lands in the
    history: k = ceil(h / P).
    """
    if not isinstance(history, torch.Tensor) or history.dim() != 2:
        got = tuple(history.shape) if isinstance(history, torch.Tensor) else type(history).__name__
        raise ValueError(f"history must be a (batch, L) tensor, got {got}")
    L = history.shape[1]
    if isinstance(period, bool) or not isinstance(period, numbers.Integral) or not 1 <= period <= L:
        raise ValueError(f"period must be an int in [1, L={L}], got {period!r}")
    h = torch.arange(1, positive_int("horizon", horizon) + 1, device=history.device)
    k = (h + period - 1) // period                        # ceil(h / P)
    index = L - 1 + h - k * period                        # position of y_{t + h - kP} in the history
    return history[:, index]
