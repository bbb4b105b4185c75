"""Series for forecasting (Chapter 8): synthetic ones whose right answer is known, and one real one.

Each series is a level, a seasonal profile of period P that differs from series to series, noise,
and *events* (promotions, holidays) whose dates are known in advance and which lift the series by
a per-series amount. Shapes: B series, L history steps, H horizons.

    history         (B, L)   past values y_{t-L+1} .. y_t
    history_events  (B, L)   1.0 where an event happened in the past, else 0.0
    future_events   (B, H)   1.0 where an event is scheduled at t + h (known in advance)
    target          (B, H)   y_{t+1} .. y_{t+H}
"""

from __future__ import annotations

import importlib.metadata
import numbers
from dataclasses import dataclass, fields

import numpy as np
import torch

from ..validate import positive_int

__all__ = ["DemandSeries", "SeriesBatch", "event_effect", "harmonic_regression", "load_electricity_demand",
           "make_series", "seasonal_naive", "seasonal_naive_with_events", "windows"]


@dataclass(frozen=True)
class SeriesBatch:
    """A batch of series cut at a forecast origin t, plus the truth of the H steps that follow."""

    history: torch.Tensor          # (B, L)
    history_events: torch.Tensor   # (B, L)
    future_events: torch.Tensor    # (B, H)
    target: torch.Tensor           # (B, H)
    uplift: torch.Tensor           # (B,) each series' event effect (for analysis only, not a model input;
                                   # NaN where it is unknown, as for a real series)

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


def _check_batch_tensors(period: int, **tensors: torch.Tensor) -> None:
    history = tensors["history"]
    if not isinstance(history, torch.Tensor) or history.dim() != 2:
        got = tuple(history.shape) if isinstance(history, torch.Tensor) else type(history).__name__
        raise ValueError(f"history must be a (batch, L) tensor, got {got}")
    B, L = history.shape
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.shape[0] != B:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a (batch={B}, steps) tensor, got {got}")
    if tensors.get("history_events") is not None and tensors["history_events"].shape != history.shape:
        raise ValueError(f"history_events must have the shape of history {tuple(history.shape)}, "
                         f"got {tuple(tensors['history_events'].shape)}")
    if isinstance(period, bool) or not isinstance(period, numbers.Integral) or not 1 <= period < L:
        raise ValueError(f"period must be an int in [1, L={L}), got {period!r}")


def event_effect(history: torch.Tensor, history_events: torch.Tensor, period: int,
                 default: float = 0.0) -> torch.Tensor:
    """(B,) each window's event effect, estimated from its own history alone.

    The least-squares slope of d_s = y_s - y_{s-P} on c_s = e_s - e_{s-P} over the history (the
    seasonal profile cancels in the differences); ``default`` where the history has no step whose
    event flag differs from one season earlier, so the effect cannot be seen.
    """
    _check_batch_tensors(period, history=history, history_events=history_events)
    d = history[:, period:] - history[:, :-period]                   # (B, L - P)
    c = history_events[:, period:] - history_events[:, :-period]     # (B, L - P), in {-1, 0, 1}
    seen = (c * c).sum(1)
    return torch.where(seen > 0, (d * c).sum(1) / seen.clamp(min=1), torch.as_tensor(float(default)))


def seasonal_naive_with_events(history: torch.Tensor, history_events: torch.Tensor, future_events: torch.Tensor,
                               period: int, effect: torch.Tensor | float) -> torch.Tensor:
    """Seasonal naive that knows the calendar: (B, H) forecast
    y_{t+h-kP} + effect * (e_{t+h} - e_{t+h-kP}), with k = ceil(h / P) as in :func:`seasonal_naive`.

    ``effect`` is one number or (B,) per window (for example :func:`event_effect`); the forecast
    removes the event it copies from one season back and adds the one scheduled at t + h.
    """
    _check_batch_tensors(period, history=history, history_events=history_events, future_events=future_events)
    L, H = history.shape[1], future_events.shape[1]
    h = torch.arange(1, H + 1, device=history.device)
    index = L - 1 + h - (h + period - 1) // period * period           # position of y_{t+h-kP}
    effect = torch.as_tensor(effect, dtype=history.dtype, device=history.device).reshape(-1, 1)
    return history[:, index] + effect * (future_events - history_events[:, index])


def harmonic_regression(history: torch.Tensor, history_events: torch.Tensor, future_events: torch.Tensor,
                        period: int, harmonics: int = 2, ridge: float = 1e-6) -> torch.Tensor:
    """A least-squares fit to each window's own history, extrapolated: (B, H) forecast.

    y_s ~ level + sum_k (a_k cos(2 pi k s / P) + b_k sin(2 pi k s / P)) + u e_s over the L history
    steps (the form the synthetic series are made with, for ``harmonics=2``); the fit is then
    evaluated at t + 1 .. t + H with the scheduled events. ``ridge`` keeps it defined when a
    history has no event (u is then 0).
    """
    _check_batch_tensors(period, history=history, history_events=history_events, future_events=future_events)
    harmonics = positive_int("harmonics", harmonics)
    L, H = history.shape[1], future_events.shape[1]
    s = torch.arange(L + H, dtype=torch.float64, device=history.device)
    angle = 2 * torch.pi * s[:, None] * torch.arange(1, harmonics + 1, device=history.device) / period   # (L+H, K)
    basis = torch.cat([torch.ones(L + H, 1, dtype=torch.float64, device=history.device),
                       angle.cos(), angle.sin()], dim=1)                              # (L+H, 1+2K)
    events = torch.cat([history_events, future_events], dim=1).double()               # (B, L+H)
    design = torch.cat([basis.expand(len(history), -1, -1), events[..., None]], dim=-1)   # (B, L+H, 2+2K)
    past, y = design[:, :L], history.double()[..., None]                               # (B, L, p), (B, L, 1)
    gram = past.transpose(1, 2) @ past + ridge * torch.eye(past.shape[-1], dtype=torch.float64)
    coef = torch.linalg.solve(gram, past.transpose(1, 2) @ y)                          # (B, p, 1)
    return (design[:, L:] @ coef)[..., 0].to(history.dtype)                            # (B, H)


@dataclass(frozen=True)
class DemandSeries:
    """Hourly electricity demand of England and Wales, 5 June to 27 August 2000 (12 weeks).

    values (T,) in gigawatts (GW), the mean of the two half-hourly readings of each hour;
    weekend (T,) 1.0 on Saturdays and Sundays (the calendar is known in advance), else 0.0;
    period 24 hours. The first hour is Monday 5 June 2000, 00:00-01:00.
    """

    values: np.ndarray
    weekend: np.ndarray
    period: int = 24


def load_electricity_demand() -> DemandSeries:
    """The half-hourly demand of Taylor (2003), as shipped in the ``pmdarima`` wheel, by the hour.

    The 4,032 numbers are read as text from ``pmdarima/datasets/taylor.py`` through
    ``importlib.metadata`` (``pmdarima`` itself is never imported, and needs none of its
    dependencies for this). Raises a RuntimeError that says how to install it if it is missing.
    """
    where = "pmdarima/datasets/taylor.py"
    try:
        path = importlib.metadata.distribution("pmdarima").locate_file(where)
        text = open(path, encoding="utf-8").read()
    except (importlib.metadata.PackageNotFoundError, FileNotFoundError) as error:
        raise RuntimeError(f"the electricity demand series ships inside the pmdarima wheel ({where}), which is "
                           f"not installed here: pip install --no-deps pmdarima==2.1.1 (see requirements.txt)"
                           ) from error
    start = text.find("np.array([")
    end = text.find("])", start)
    try:
        half_hourly = np.array([float(v) for v in text[start + len("np.array(["):end].split(",")])
    except ValueError as error:
        raise RuntimeError(f"{where} does not hold the expected array of numbers (another pmdarima version?)"
                           ) from error
    if start < 0 or half_hourly.shape != (4032,):
        raise RuntimeError(f"{where} should hold 4,032 half-hourly values, found {half_hourly.size}")
    values = half_hourly.reshape(-1, 2).mean(1) / 1000.0              # MW per half hour -> GW per hour
    day = np.arange(len(values)) // 24                                # day 0 is a Monday
    return DemandSeries(values=values, weekend=(day % 7 >= 5).astype(np.float64))


def windows(values: np.ndarray, events: np.ndarray, history: int, horizon: int, origins) -> SeriesBatch:
    """Cut one series into forecast windows: for each origin t (the index of the first forecast
    step), history = values[t - L : t], target = values[t : t + H], and the events likewise.

    ``origins`` is an iterable of ints with L <= t <= len(values) - H. ``uplift`` is NaN (unknown).
    """
    values, events = np.asarray(values, dtype=float), np.asarray(events, dtype=float)
    if values.ndim != 1 or values.shape != events.shape:
        raise ValueError(f"values and events must be 1-D of the same length, got {values.shape} and {events.shape}")
    history, horizon = positive_int("history", history), positive_int("horizon", horizon)
    origins = np.asarray(list(origins), dtype=int)
    if origins.size == 0 or origins.min() < history or origins.max() > len(values) - horizon:
        raise ValueError(f"origins must lie in [history={history}, len - horizon={len(values) - horizon}], got "
                         f"{origins.min() if origins.size else 'none'}..{origins.max() if origins.size else ''}")
    past = origins[:, None] + np.arange(-history, 0)[None, :]
    future = origins[:, None] + np.arange(horizon)[None, :]

    def f(a):
        return torch.from_numpy(np.ascontiguousarray(a)).float()

    return SeriesBatch(history=f(values[past]), history_events=f(events[past]), future_events=f(events[future]),
                       target=f(values[future]), uplift=torch.full((len(origins),), float("nan")))
