"""Training and evaluating set models on the maximum-regression task (Chapter 8)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from ..models.ablation import replaced_weights, shuffled_weights, uniform_weights
from ..models.set_transformer import PooledSetModel, SetTransformerModel
from ..repro import seed_everything, shifted_seed
from ..tasks.sets import max_regression_batch
from ..train import fit
from ..train.parallel import run_parallel
from ..validate import check_choice, check_steps

__all__ = ["train_max_regression", "trained_set_model", "max_regression_mae", "SET_MODELS", "pma_reading",
           "pma_ablation", "set_study", "SET_BUDGET", "SET_SEEDS"]

SET_MODELS = ("mean", "sum", "max", "set_transformer")
SET_BUDGET = {"steps": 1000, "batch_size": 64, "lr": 3e-3}     # the chapter's training budget, every model
SET_SEEDS = (0, 1, 2)


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
    train_max_regression(model, np.random.default_rng(shifted_seed(seed)), **training)
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


@torch.no_grad()
def pma_reading(model: SetTransformerModel, x: torch.Tensor, scale: float = 1.0) -> dict:
    """Where the trained Set Transformer's pooling reads, on sets ``x`` (B, n, 1) of one size.

    Returns ``weights`` (B, heads, n), PMA's attention of its one seed over the elements; per head
    ``on_max`` (heads,), the share of sets whose largest weight is on the largest element, and
    ``weight_on_max`` (heads,), the mean weight given to that element; ``by_rank`` (heads, n), the mean
    weight on the element of each rank (1 = largest); and ``best_head``, the head giving the largest
    element the most weight."""
    if not isinstance(model, SetTransformerModel):
        raise ValueError(f"pma_reading needs a SetTransformerModel, got {type(model).__name__}")
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != 1:
        raise ValueError(f"x must be sets of numbers, shape (B, n, 1), got {getattr(x, 'shape', type(x).__name__)}")
    model.eval()
    model(x / scale)
    weights = model.pool.mab.last_weights[:, :, 0]                       # (B, heads, n)
    largest = x[..., 0].argmax(-1)                                       # (B,)
    on_max = (weights.argmax(-1) == largest[:, None]).double().mean(0)  # (heads,)
    weight_on_max = weights.gather(-1, largest[:, None, None].expand(-1, weights.shape[1], 1))[..., 0].mean(0)
    order = x[..., 0].argsort(-1, descending=True)
    by_rank = weights.gather(-1, order[:, None, :].expand(-1, weights.shape[1], -1)).mean(0)
    return {"weights": weights, "on_max": on_max.numpy(), "weight_on_max": weight_on_max.numpy(),
            "by_rank": by_rank.numpy(), "best_head": int(weight_on_max.argmax())}


def pma_ablation(model: SetTransformerModel, test_set: list[tuple[torch.Tensor, torch.Tensor]],
                 scale: float = 1.0, seed: int = 0) -> dict[str, float]:
    """The test MAE of the trained model with PMA's attention weights replaced, every parameter kept:
    ``"uniform"`` (a mean of the set) and ``"shuffled"`` (its own weights, permuted over the elements)."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for label, transform in (("uniform", uniform_weights), ("shuffled", lambda w: shuffled_weights(w, gen))):
        with replaced_weights(model.pool.mab, transform):
            out[label] = max_regression_mae(model, test_set, scale=scale)
    return out


def set_study(test_set: list[tuple[torch.Tensor, torch.Tensor]], seeds: Sequence[int] = (0, 1, 2),
              scale: float = 100.0, **training) -> dict:
    """The max-regression comparison over ``seeds``: every model of :data:`SET_MODELS` trained by
    :func:`trained_set_model` once per seed (side by side, the Set Transformers first), then tested.

    Returns ``mae`` {name: (seeds,)}, ``params`` {name: int}, ``models`` {name: [model per seed]}, and for
    the Set Transformer per seed ``on_max`` and ``weight_on_max`` of its best PMA head on the largest sets of
    ``test_set`` (:func:`pma_reading`) and ``ablated`` {"uniform", "shuffled": (seeds,)} (:func:`pma_ablation`).
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("set_study needs at least one seed")
    order = sorted(SET_MODELS, key=lambda name: name != "set_transformer")     # the slowest first
    jobs = [dict(name=name, seed=seed, scale=scale, **training) for name in order for seed in seeds]
    trained = dict(zip([(j["name"], j["seed"]) for j in jobs], run_parallel(trained_set_model, jobs)))
    models = {name: [trained[name, seed] for seed in seeds] for name in SET_MODELS}
    out = {"seeds": np.array(seeds), "models": models,
           "mae": {name: np.array([max_regression_mae(m, test_set, scale=scale) for m in ms])
                   for name, ms in models.items()},
           "params": {name: sum(p.numel() for p in ms[0].parameters()) for name, ms in models.items()},
           "on_max": [], "weight_on_max": [], "ablated": {"uniform": [], "shuffled": []}}
    largest = max(test_set, key=lambda batch: batch[0].shape[1])[0]
    for model in models["set_transformer"]:
        reading = pma_reading(model, largest, scale=scale)
        out["on_max"].append(reading["on_max"][reading["best_head"]])
        out["weight_on_max"].append(reading["weight_on_max"][reading["best_head"]])
        for label, value in pma_ablation(model, test_set, scale=scale).items():
            out["ablated"][label].append(value)
    out["on_max"], out["weight_on_max"] = np.array(out["on_max"]), np.array(out["weight_on_max"])
    out["ablated"] = {k: np.array(v) for k, v in out["ablated"].items()}
    return out
