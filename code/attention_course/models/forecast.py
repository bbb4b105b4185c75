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

import torch
from torch import nn

from ..layers.multihead import MultiHeadAttention
from ..validate import check_matches_module
from .ablation import mix_values

__all__ = ["HorizonAttentionForecaster", "LinearForecaster", "RecurrentForecaster"]


def _scale(history: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each series' history mean and standard deviation, (B, 1) each: models work in these units."""
    return history.mean(1, keepdim=True), history.std(1, keepdim=True) + 1e-3


def _check_inputs(model: nn.Module, history: torch.Tensor, history_events: torch.Tensor,
                  future_events: torch.Tensor) -> None:
    B, L, H = (history.shape[0] if isinstance(history, torch.Tensor) and history.dim() else 0), model.history, \
        model.horizon
    for name, t, shape in (("history", history, (B, L)), ("history_events", history_events, (B, L)),
                           ("future_events", future_events, (B, H))):
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must have shape {shape} (batch, {'L' if name != 'future_events' else 'H'}), "
                             f"got {got}")
    check_matches_module(model, history=history, history_events=history_events, future_events=future_events)


class _AblatableAttention(MultiHeadAttention):
    """Chapter 4's multi-head attention whose weights an ablation may replace: with ``weights_transform``
    set, the output mixes the same values with ``weights_transform(weights)``."""

    weights_transform = None

    def forward(self, query, key, value, mask=None):
        output, weights = super().forward(query, key, value, mask)
        if self.weights_transform is None:
            return output, weights
        weights = self.weights_transform(weights)                     # ablation: other weights, same values
        return mix_values(self, weights, value), weights


class HorizonAttentionForecaster(nn.Module):
    """One decoder-encoder attention layer whose queries are the forecast horizons.

    Keys and values: each past step's (scaled value, event flag), embedded, plus a learned
    embedding of its position. Queries: a learned embedding per horizon plus the embedded flag
    of a scheduled event at that horizon. A small feed-forward net reads each horizon's
    attention output (and its query) and predicts the value there. Series are scaled by their
    history's mean and standard deviation, and the forecast is scaled back.

    ``forward(history (B, L), history_events (B, L), future_events (B, H))`` returns
    ``(forecast (B, H), weights (B, heads, H, L))``. For ablations, ``weights_transform`` (None:
    off) replaces the weights the values are mixed with (see :mod:`attention_course.models.ablation`).
    """

    def __init__(self, history: int = 48, horizon: int = 12, d_model: int = 32, num_heads: int = 2):
        super().__init__()
        self.history, self.horizon = history, horizon
        self.embed_past = nn.Linear(2, d_model)                         # (value, event) -> d
        self.position = nn.Parameter(0.1 * torch.randn(history, d_model))    # one vector per past step
        self.horizon_query = nn.Parameter(0.1 * torch.randn(horizon, d_model))   # one query per horizon
        self.embed_future = nn.Linear(1, d_model)                       # scheduled event flag -> d
        self.attention = _AblatableAttention(d_model, num_heads)
        self.head = nn.Sequential(nn.Linear(2 * d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, 1))

    def forward(self, history: torch.Tensor, history_events: torch.Tensor,
                future_events: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        _check_inputs(self, history, history_events, future_events)
        mean, scale = _scale(history)                          # (B, 1) each
        past = torch.stack([(history - mean) / scale, history_events], -1)
        memory = self.embed_past(past) + self.position          # (B, L, d_m)
        horizon_events = self.embed_future(future_events[..., None])
        queries = self.horizon_query + horizon_events           # (B, n_f, d_m)
        context, weights = self.attention(queries, memory, memory)
        # context (B, n_f, d_m); weights (B, n_h, n_f, L)
        both = torch.cat([context, queries], dim=-1)
        out = self.head(both).squeeze(-1)                       # (B, n_f)
        return mean + scale * out, weights

    @property
    def weights_transform(self):
        """The ablation's replacement of the attention weights (None: off); see :mod:`.ablation`."""
        return self.attention.weights_transform

    @weights_transform.setter
    def weights_transform(self, transform) -> None:
        self.attention.weights_transform = transform


class RecurrentForecaster(nn.Module):
    """The same inputs and read-out as :class:`HorizonAttentionForecaster`, a GRU instead of attention.

    A GRU reads the history's (scaled value, event flag) pairs in order; its last state, projected,
    replaces the attention context of every horizon. The queries (a learned vector per horizon
    plus the embedded scheduled-event flag) and the feed-forward read-out are as in the attention
    model, so the comparison changes one thing: how the history is summarised.
    ``forward(...)`` returns ``(forecast (B, H), None)``.
    """

    def __init__(self, history: int = 48, horizon: int = 12, d_model: int = 32, hidden: int = 32):
        super().__init__()
        self.history, self.horizon = history, horizon
        self.gru = nn.GRU(2, hidden, batch_first=True)
        self.summary = nn.Linear(hidden, d_model)
        self.horizon_query = nn.Parameter(0.1 * torch.randn(horizon, d_model))
        self.embed_future = nn.Linear(1, d_model)
        self.head = nn.Sequential(nn.Linear(2 * d_model, 2 * d_model), nn.ReLU(), nn.Linear(2 * d_model, 1))

    def forward(self, history: torch.Tensor, history_events: torch.Tensor,
                future_events: torch.Tensor) -> tuple[torch.Tensor, None]:
        _check_inputs(self, history, history_events, future_events)
        mean, scale = _scale(history)
        past = torch.stack([(history - mean) / scale, history_events], dim=-1)    # (B, L, 2)
        _, last = self.gru(past)                                                  # (1, B, hidden)
        queries = self.horizon_query + self.embed_future(future_events[..., None])   # (B, H, d)
        context = self.summary(last[0])[:, None, :].expand_as(queries)           # (B, H, d)
        out = self.head(torch.cat([context, queries], dim=-1)).squeeze(-1)        # (B, H)
        return mean + scale * out, None


class LinearForecaster(nn.Module):
    """A linear map from the same inputs to the H forecasts, in each series' scaled units.

    Inputs: the scaled history (L), its event flags (L) and the scheduled event flags (H); one
    linear layer gives the H scaled forecasts. Fitted in closed form by least squares
    (:func:`attention_course.experiments.series.fit_least_squares`). ``forward`` returns
    ``(forecast (B, H), None)``.
    """

    def __init__(self, history: int = 48, horizon: int = 12):
        super().__init__()
        self.history, self.horizon = history, horizon
        self.linear = nn.Linear(2 * history + horizon, horizon)

    def features(self, history: torch.Tensor, history_events: torch.Tensor,
                 future_events: torch.Tensor) -> torch.Tensor:
        """(B, 2L + H): scaled history, history events, future events."""
        _check_inputs(self, history, history_events, future_events)
        mean, scale = _scale(history)
        return torch.cat([(history - mean) / scale, history_events, future_events], dim=1)

    def forward(self, history: torch.Tensor, history_events: torch.Tensor,
                future_events: torch.Tensor) -> tuple[torch.Tensor, None]:
        mean, scale = _scale(history)
        return mean + scale * self.linear(self.features(history, history_events, future_events)), None
