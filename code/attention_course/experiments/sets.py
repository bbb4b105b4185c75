"""Training and evaluating set models on the maximum-regression task (Chapter 8)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..models.set_transformer import PooledSetModel, SetTransformerModel
from ..repro import seed_everything
from ..tasks.sets import max_regression_batch
from ..train import fit
from ..validate import check_choice, check_steps

__all__ = ["train_max_regression", "trained_set_model", "max_regression_mae", "SET_MODELS"]

SET_MODELS = ("mean", "sum", "max", "set_transformer")


def train_max_regression(model: nn.Module, rng: np.random.Generator, steps: int = 1000, batch_size: int = 64,
                         max_size: int = 10, lr: float = 1e-3, scale: float = 1.0) -> list[float]:
    """L1 (mean absolute error) training on fresh batches; each batch has one size n in 1..max_size.

    The model sees x / scale and predicts max / scale (the chapter uses scale = VALUE_HIGH, so that
    inputs and targets lie in [0, 1)); every model gets the same Adam run with a learning rate
    decaying linearly to 0. Returns the loss per step, in the data's units.
    """
    steps, device = check_steps(steps), next(model.parameters()).device

    def batch_loss() -> torch.Tensor:
        x, y = (t.to(device) for t in max_regression_batch(rng, batch_size, int(rng.integers(1, max_size + 1))))
        prediction = scale * model(x / scale)
        if prediction.shape != y.shape:
            raise ValueError(f"the model must return one number per set, shape {tuple(y.shape)}, got "
                             f"{tuple(prediction.shape)}")
        return (prediction - y).abs().mean()

    return fit(model, batch_loss, steps, lr, decay="linear")["loss"]


def trained_set_model(name: str, seed: int = 0, **training) -> nn.Module:
    """One run of the chapter: ``seed_everything(seed)``, a fresh model (``"set_transformer"``, or a
    ``PooledSetModel`` pooling by ``"mean"``, ``"sum"`` or ``"max"``), trained by :func:`train_max_regression`
    on batches from ``np.random.default_rng(seed)`` with the keyword arguments ``training``; returns the
    model. A function of its arguments alone, so that the runs can go side by side (``run_parallel``)."""
    check_choice("name", name, SET_MODELS)
    seed_everything(seed)
    model = SetTransformerModel() if name == "set_transformer" else PooledSetModel(name)
    train_max_regression(model, np.random.default_rng(seed), **training)
    return model


@torch.no_grad()
def max_regression_mae(model: nn.Module, test_set: list[tuple[torch.Tensor, torch.Tensor]],
                       scale: float = 1.0) -> float:
    """Mean absolute error of the predicted maximum over every set of ``test_set``, in data units."""
    model.eval()
    device = next(model.parameters()).device
    errors = []
    for x, y in test_set:
        x, y = x.to(device), y.to(device)
        prediction = scale * model(x / scale)
        if prediction.shape != y.shape:
            raise ValueError(f"the model must return one number per set, shape {tuple(y.shape)}, got "
                             f"{tuple(prediction.shape)}")
        errors.append((prediction - y).abs())
    return torch.cat(errors).mean().item()
