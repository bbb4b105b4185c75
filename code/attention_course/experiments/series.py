"""Training and evaluating the horizon-attention forecaster on the synthetic series (Chapter 7)."""

from __future__ import annotations

import numpy as np
import torch

from ..models.forecast import HorizonAttentionForecaster
from ..tasks.series import make_series
from ..train import fit
from ..validate import check_steps

__all__ = ["train_forecaster", "mean_absolute_error"]


def train_forecaster(model: HorizonAttentionForecaster, rng: np.random.Generator, steps: int = 1500,
                     batch_size: int = 64, lr: float = 3e-3, period: int = 12, **series_kwargs) -> list[float]:
    """Absolute-error training on fresh synthetic batches; returns the loss per step."""
    steps, device = check_steps(steps), next(model.parameters()).device

    def batch_loss() -> torch.Tensor:
        b = make_series(rng, batch_size, period=period, history=model.history, horizon=model.horizon,
                        **series_kwargs).to(device)
        forecast, _ = model(b.history, b.history_events, b.future_events)
        return (forecast - b.target).abs().mean()

    return fit(model, batch_loss, steps, lr, decay="linear")["loss"]


def mean_absolute_error(forecast: torch.Tensor, target: torch.Tensor) -> float:
    """Mean of |forecast - target| over every series and horizon."""
    if forecast.shape != target.shape:
        raise ValueError(f"forecast {tuple(forecast.shape)} and target {tuple(target.shape)} differ in shape")
    return (forecast - target).abs().mean().item()
