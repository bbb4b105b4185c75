"""The one training loop of the course: Adam, optional gradient clipping and decay, a callback.

Each model's trainer builds its batches and its loss in a function ``batch_loss() -> loss`` and
hands it to :func:`fit`; everything else (optimizer, clipping, schedule, history) is here once.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ..validate import check_steps, positive_int

__all__ = ["fit"]


def fit(model: nn.Module, batch_loss: Callable[[], torch.Tensor], steps: int, lr: float,
        clip: float | None = None, decay: str | None = None, record_grad_norm: bool = False,
        callback: Callable[[int], bool] | None = None, every: int = 100,
        warmup: int = 0) -> dict[str, list[float]]:
    """Adam on ``batch_loss()`` (a fresh batch's scalar loss) for ``steps`` steps; return the history.

    ``clip`` rescales the gradient to at most that total norm (None: no clipping); with
    ``record_grad_norm`` the history also holds ``grad_norm``, the norm *before* clipping.
    ``decay`` lowers the learning rate to zero over the ``steps`` (at least one): ``"linear"``, or
    ``"cosine"`` (torch's ``CosineAnnealingLR``); None keeps it at ``lr``.
    ``warmup`` (steps, less than ``steps``): the learning rate first rises linearly, ``lr * (i + 1) / warmup``
    at step ``i``, and reaches ``lr`` at step ``warmup``; with ``decay="linear"`` it then falls linearly to
    zero at the end (the ``"cosine"`` decay takes no warm-up here).
    ``callback(step)``, if given, runs in eval mode after every ``every`` steps; returning True
    stops early. The model is left in eval mode.
    """
    steps, every = check_steps(steps), positive_int("every", every)
    # foreach: one kernel per kind of update over all parameters instead of a Python loop over them; the
    # same arithmetic, bit for bit (torch picks it by itself only for GPU tensors).
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    if decay not in (None, "linear", "cosine"):
        raise ValueError(f"decay must be None, 'linear' or 'cosine', got {decay!r}")
    if not isinstance(warmup, int) or isinstance(warmup, bool) or not 0 <= warmup < steps:
        raise ValueError(f"warmup must be a whole number of steps in [0, steps={steps}), got {warmup!r}")
    if warmup and decay == "cosine":
        raise ValueError("warmup is not available with decay='cosine'; use decay='linear' or None")
    if warmup:
        after = (lambda i: 1 - (i - warmup) / (steps - warmup)) if decay == "linear" else (lambda i: 1.0)
        schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: (i + 1) / warmup if i < warmup else after(i))
    else:
        schedule = (torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1 - i / steps) if decay == "linear" else
                    torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps) if decay == "cosine" else None)
    history: dict[str, list[float]] = {"loss": [], **({"grad_norm": []} if record_grad_norm else {})}
    model.train()
    for step in range(steps):
        loss = batch_loss()
        opt.zero_grad()
        loss.backward()
        if clip is not None or record_grad_norm:
            norm = nn.utils.clip_grad_norm_(model.parameters(), float("inf") if clip is None else clip)
        opt.step()
        if schedule is not None:
            schedule.step()
        history["loss"].append(loss.item())
        if record_grad_norm:
            history["grad_norm"].append(norm.item())
        if callback is not None and (step + 1) % every == 0:
            model.eval()
            stop = callback(step + 1)
            model.train()
            if stop:
                break
    model.eval()
    return history
