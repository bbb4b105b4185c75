"""Training and evaluating set models on the maximum-regression task (Chapter 7)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..tasks.sets import max_regression_batch
from ..train import fit
from ..validate import check_steps

__all__ = ["train_max_regression", "max_regression_mae"]


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
