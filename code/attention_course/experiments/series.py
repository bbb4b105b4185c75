"""Training and evaluating the forecasters of Chapter 8, on fresh synthetic series or on fixed windows."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..models.forecast import HorizonAttentionForecaster, LinearForecaster, RecurrentForecaster, _scale
from ..repro import seed_everything, shifted_seed
from ..tasks.series import SeriesBatch, make_series
from ..train import fit
from ..validate import check_batch_size, check_choice, check_steps

__all__ = ["fit_least_squares", "mean_absolute_error", "train_forecaster", "train_on_windows", "FORECASTERS",
           "new_forecaster", "trained_forecaster", "trained_on_windows", "FORECAST_JOB", "FORECAST_SEEDS"]

# The chapter's synthetic forecaster run (seed added per run) and its seeds.
FORECAST_JOB = {"kind": "attention", "history": 48, "horizon": 12, "d_model": 32, "num_heads": 2, "steps": 1000,
                "batch_size": 64, "lr": 3e-3, "period": 12}
FORECAST_SEEDS = (0, 1, 2, 3)

FORECASTERS = {"attention": HorizonAttentionForecaster, "GRU": RecurrentForecaster}


def train_forecaster(model: nn.Module, rng: np.random.Generator, steps: int = 1500,
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


def train_on_windows(model: nn.Module, data: SeriesBatch, steps: int, batch_size: int = 64, lr: float = 3e-3,
                     seed: int = 0) -> list[float]:
    """Absolute-error training on ``batch_size`` windows drawn at random (with a seeded generator)
    from the fixed training windows ``data``; returns the loss per step."""
    steps, batch_size = check_steps(steps), check_batch_size(batch_size, len(data.history), "training windows")
    device, g = next(model.parameters()).device, torch.Generator().manual_seed(shifted_seed(seed))
    data = data.to(device)

    def batch_loss() -> torch.Tensor:
        idx = torch.randperm(len(data.history), generator=g)[:batch_size].to(device)
        forecast, _ = model(data.history[idx], data.history_events[idx], data.future_events[idx])
        return (forecast - data.target[idx]).abs().mean()

    return fit(model, batch_loss, steps, lr, decay="linear")["loss"]


def new_forecaster(kind: str, seed: int, **options) -> nn.Module:
    """``seed_everything(seed)``, then a fresh ``FORECASTERS[kind](**options)``: the same model, whether
    it is built here or in a worker process of :func:`~attention_course.train.parallel.run_parallel`."""
    check_choice("kind", kind, FORECASTERS)
    seed_everything(seed)
    return FORECASTERS[kind](**options)


def trained_forecaster(kind: str, seed: int, steps: int, batch_size: int = 64, lr: float = 3e-3, period: int = 12,
                       **options) -> nn.Module:
    """A :func:`new_forecaster` trained by :func:`train_forecaster` on the synthetic series of the
    generator seeded with ``seed``; returns the trained model (one run of a seed sweep)."""
    model = new_forecaster(kind, seed, **options)
    train_forecaster(model, np.random.default_rng(shifted_seed(seed)), steps=steps, batch_size=batch_size, lr=lr,
                     period=period)
    return model.eval()


def trained_on_windows(kind: str, seed: int, data: SeriesBatch, steps: int, batch_size: int = 64,
                       lr: float = 3e-3, **options) -> nn.Module:
    """A :func:`new_forecaster` trained by :func:`train_on_windows` on the fixed windows ``data``
    with ``seed``; returns the trained model (one run of a seed sweep)."""
    model = new_forecaster(kind, seed, **options)
    train_on_windows(model, data, steps=steps, batch_size=batch_size, lr=lr, seed=seed)
    return model.eval()


def fit_least_squares(model: LinearForecaster, data: SeriesBatch, ridge: float = 1e-3) -> LinearForecaster:
    """Fit ``model`` to the windows ``data`` in closed form: ridge least squares of the scaled
    targets on :meth:`~attention_course.models.forecast.LinearForecaster.features` (and a bias),
    in float64. The squared error makes it a mean forecast, where the trained models forecast the
    median; returns the model."""
    if not ridge >= 0:
        raise ValueError(f"ridge must be >= 0, got {ridge!r}")
    with torch.no_grad():
        feats = model.features(data.history, data.history_events, data.future_events).double()
        mean, scale = _scale(data.history)
        target = ((data.target - mean) / scale).double()                    # (N, H) in scaled units
        design = torch.cat([feats, torch.ones(len(feats), 1, dtype=torch.float64)], dim=1)
        gram = design.T @ design + ridge * torch.eye(design.shape[1], dtype=torch.float64)
        coef = torch.linalg.solve(gram, design.T @ target)                  # (2L + H + 1, H)
        model.linear.weight.copy_(coef[:-1].T.to(model.linear.weight.dtype))
        model.linear.bias.copy_(coef[-1].to(model.linear.bias.dtype))
    return model.eval()
