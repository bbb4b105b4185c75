"""Training the digit classifiers of Chapter 8 (learned attention vs convolution) on scikit-learn's digits,
and measuring what training changes in the attention heads (:func:`centre_study`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..models.image_attention import DigitClassifier, local_fraction
from ..repro import seed_everything, shifted_seed
from ..tasks.handwritten import HandwrittenDigits
from ..train import fit
from ..train.parallel import run_parallel
from ..validate import check_batch_size, check_steps

__all__ = ["digit_accuracy", "train_digit_classifier", "fresh_digit_classifier", "trained_digit_classifier",
           "centre_study", "DIGIT_SEEDS"]

DIGIT_SEEDS = (0, 1, 2, 3, 4)


def train_digit_classifier(model: nn.Module, data: HandwrittenDigits, steps: int, batch_size: int = 64,
                           lr: float = 1e-2, seed: int = 0) -> list[float]:
    """Cross-entropy with Adam (cosine decay) on ``batch_size`` images drawn at random (seeded) from
    ``data`` at every step; returns the loss per step."""
    steps, batch_size = check_steps(steps), check_batch_size(batch_size, len(data.labels), "training images")
    g = torch.Generator().manual_seed(shifted_seed(seed))

    def batch_loss() -> torch.Tensor:
        idx = torch.randperm(len(data.labels), generator=g)[:batch_size]
        return F.cross_entropy(model(data.images[idx]), data.labels[idx])

    return fit(model, batch_loss, steps, lr, decay="cosine")["loss"]


def fresh_digit_classifier(mixer: str, seed: int = 0) -> DigitClassifier:
    """The untrained ``DigitClassifier(mixer)`` that the run of ``seed`` starts from
    (:func:`trained_digit_classifier` with the same seed begins with exactly these weights)."""
    seed_everything(seed)
    return DigitClassifier(mixer)


def trained_digit_classifier(mixer: str, data: HandwrittenDigits, seed: int = 0, steps: int = 600,
                             batch_size: int = 64, lr: float = 1e-2, train_positions: bool = True) -> DigitClassifier:
    """One run of the chapter: ``seed_everything(seed)``, a fresh ``DigitClassifier(mixer)``, trained by
    :func:`train_digit_classifier`; returns the trained model. A function of its arguments alone, so that
    the runs can go side by side (:func:`~attention_course.train.parallel.run_parallel`).

    ``train_positions=False`` (attention only) is the control: the heads' centres and sharpness stay at
    their random start, and only the value maps and the read-out learn."""
    if not train_positions and mixer != "attention":
        raise ValueError(f"train_positions=False freezes attention centres; mixer {mixer!r} has none")
    model = fresh_digit_classifier(mixer, seed)
    if not train_positions:
        model.mix.centres.requires_grad_(False)
        model.mix.raw_alpha.requires_grad_(False)
    train_digit_classifier(model, data, steps, batch_size, lr, seed)
    return model


def _head_summary(model: DigitClassifier) -> dict:
    with torch.no_grad():
        return {"centres": model.mix.centres.detach().numpy().copy(), "alpha": model.mix.alpha.numpy().copy(),
                "local": local_fraction(model.mix.weights(), model.grid).numpy()}


def centre_study(train: HandwrittenDigits, test: HandwrittenDigits, seeds: Sequence[int] = (0, 1, 2),
                 steps: int = 600, batch_size: int = 64, lr: float = 1e-2) -> dict:
    """What training changes in the attention heads of :class:`DigitClassifier`, over ``seeds``.

    Per seed, three runs side by side with the same start and the same batches: the attention classifier,
    the control whose head positions stay at their random start (``train_positions=False``), and the
    3 x 3 convolution. Returns a dict of numpy arrays, one row per seed:

    * ``start``, ``end`` (seeds, heads, 2): each head's centre before and after training (pixels);
    * ``shift`` (seeds, heads): how far training moved it, ``|end - start|``;
    * ``other_start`` (seeds, heads): how far it is from the same head of an untrained model with another
      seed (``seed + 1000``): the scale of the random start, against which the shift is read;
    * ``alpha_start``, ``alpha_end`` (seeds, heads); ``local_start``, ``local_end`` (seeds, heads): the local
      attention fraction of :func:`~attention_course.models.image_attention.local_fraction`;
    * ``acc`` {"attention", "frozen positions", "conv"}: (seeds,) test accuracies; ``params`` per model.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("centre_study needs at least one seed")
    kinds = {"attention": dict(mixer="attention"), "frozen positions": dict(mixer="attention", train_positions=False),
             "conv": dict(mixer="conv")}
    jobs = [dict(data=train, seed=seed, steps=steps, batch_size=batch_size, lr=lr, **kw)
            for seed in seeds for kw in kinds.values()]
    models = iter(run_parallel(trained_digit_classifier, jobs))
    out: dict = {k: [] for k in ("start", "end", "other_start", "alpha_start", "alpha_end", "local_start",
                                 "local_end")}
    out["acc"] = {k: [] for k in kinds}
    out["params"] = {}
    for seed in seeds:
        first = _head_summary(fresh_digit_classifier("attention", seed))          # the run's start
        other = _head_summary(fresh_digit_classifier("attention", seed + 1000))   # an untrained model, another seed
        for kind in kinds:
            model = next(models)
            out["acc"][kind].append(digit_accuracy(model, test))
            out["params"][kind] = sum(p.numel() for p in model.parameters())
            if kind == "attention":
                last = _head_summary(model)
        out["start"].append(first["centres"])
        out["end"].append(last["centres"])
        out["other_start"].append(np.linalg.norm(other["centres"] - first["centres"], axis=-1))
        out["alpha_start"].append(first["alpha"])
        out["alpha_end"].append(last["alpha"])
        out["local_start"].append(first["local"])
        out["local_end"].append(last["local"])
    result = {k: np.array(v) for k, v in out.items() if k not in ("acc", "params")}
    result["shift"] = np.linalg.norm(result["end"] - result["start"], axis=-1)
    result["acc"] = {k: np.array(v) for k, v in out["acc"].items()}
    result["params"] = out["params"]
    result["seeds"] = np.array(seeds)
    return result


def digit_accuracy(model: nn.Module, data: HandwrittenDigits) -> float:
    """Fraction of ``data`` whose largest logit is the true digit."""
    with torch.no_grad():
        return (model(data.images).argmax(-1) == data.labels).double().mean().item()
