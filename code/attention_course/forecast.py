"""Attention for forecasting: horizon queries attend to the history (after MQTransformer, Eisenach et al. 2020).

A multi-horizon forecaster predicts the next H values of a series at once. MQTransformer's
decoder-encoder attention gives each forecast horizon h its own *query*, built from what is
known about the future time t + h (here: which horizon it is, and whether a scheduled event
falls on it); the *keys and values* are the encoded history. Each horizon can then look up the
past times that matter to it, for example the same phase one season earlier, or past events.
This module keeps only that idea, at toy scale: one attention layer, a point forecast trained
with the absolute error (the paper forecasts several quantiles and adds more machinery).

The data are synthetic so that the right answer is known: a level, a seasonal profile of
period P that differs from series to series, noise, and *events* (promotions, holidays)
whose dates are known in advance and which lift the series by a per-series amount.

Shapes: B series, L history steps, H horizons.

    history         (B, L)   past values y_{t-L+1} .. y_t
    history_events  (B, L)   1.0 where an event happened in the past, else 0.0
    future_events   (B, H)   1.0 where an event is scheduled at t + h (known in advance)
    target          (B, H)   y_{t+1} .. y_{t+H}
    forecast        (B, H)
    weights         (B, heads, H, L)   attention of each horizon's query over the history
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

import numpy as np
import torch
from torch import nn

from .multihead import MultiHeadAttention
from .validate import check_matches_module, check_steps, positive_int

__all__ = ["SeriesBatch", "make_series", "seasonal_naive", "HorizonAttentionForecaster", "train_forecaster",
           "mean_absolute_error"]


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


class HorizonAttentionForecaster(nn.Module):
    """One decoder-encoder attention layer whose queries are the forecast horizons.

    Keys and values: each past step's (scaled value, event flag), embedded, plus a learned
    embedding of its position. Queries: a learned embedding per horizon plus the embedded flag
    of a scheduled event at that horizon. A small feed-forward net reads each horizon's
    attention output (and its query) and predicts the value there. Series are scaled by their
    history's mean and standard deviation, and the forecast is scaled back.

    ``forward(history (B, L), history_events (B, L), future_events (B, H))`` returns
    ``(forecast (B, H), weights (B, heads, H, L))``.
    """

    def __init__(self, history: int = 48, horizon: int = 12, d_model: int = 32, num_heads: int = 2):
        super().__init__()
        self.history, self.horizon = history, horizon
        self.embed_past = nn.Linear(2, d_model)                         # (value, event) -> d
        self.position = nn.Parameter(0.1 * torch.randn(history, d_model))    # one vector per past step
        self.horizon_query = nn.Parameter(0.1 * torch.randn(horizon, d_model))   # one query per horizon
        self.embed_future = nn.Linear(1, d_model)                       # scheduled event flag -> d
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.head = nn.Sequential(nn.Linear(2 * d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, 1))

    def forward(self, history: torch.Tensor, history_events: torch.Tensor,
                future_events: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, L, H = history.shape[0], self.history, self.horizon
        for name, t, shape in (("history", history, (B, L)), ("history_events", history_events, (B, L)),
                               ("future_events", future_events, (B, H))):
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape:
                got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"{name} must have shape {shape} (batch, {'L' if shape[1] == L else 'H'}), got {got}")
        check_matches_module(self, history=history, history_events=history_events, future_events=future_events)
        mean = history.mean(1, keepdim=True)                                  # (B, 1)
        scale = history.std(1, keepdim=True) + 1e-3                           # (B, 1)
        past = torch.stack([(history - mean) / scale, history_events], dim=-1)   # (B, L, 2)
        memory = self.embed_past(past) + self.position                         # (B, L, d)
        queries = self.horizon_query + self.embed_future(future_events[..., None])   # (B, H, d)
        context, weights = self.attention(queries, memory, memory)             # (B, H, d), (B, heads, H, L)
        out = self.head(torch.cat([context, queries], dim=-1)).squeeze(-1)     # (B, H), in scaled units
        return mean + scale * out, weights


def train_forecaster(model: HorizonAttentionForecaster, rng: np.random.Generator, steps: int = 1500,
                     batch_size: int = 64, lr: float = 3e-3, period: int = 12, **series_kwargs) -> list[float]:
    """Absolute-error training on fresh synthetic batches; returns the loss per step."""
    steps, device = check_steps(steps), next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1 - i / steps)
    losses = []
    model.train()
    for _ in range(steps):
        b = make_series(rng, batch_size, period=period, history=model.history, horizon=model.horizon,
                        **series_kwargs).to(device)
        forecast, _ = model(b.history, b.history_events, b.future_events)
        loss = (forecast - b.target).abs().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        losses.append(loss.item())
    model.eval()
    return losses


def mean_absolute_error(forecast: torch.Tensor, target: torch.Tensor) -> float:
    """Mean of |forecast - target| over every series and horizon."""
    if forecast.shape != target.shape:
        raise ValueError(f"forecast {tuple(forecast.shape)} and target {tuple(target.shape)} differ in shape")
    return (forecast - target).abs().mean().item()
