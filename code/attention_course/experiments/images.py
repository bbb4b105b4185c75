"""Training the digit classifiers of Chapter 8 (learned attention vs convolution) on scikit-learn's digits."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..models.image_attention import DigitClassifier
from ..repro import seed_everything
from ..tasks.handwritten import HandwrittenDigits
from ..train import fit
from ..validate import check_batch_size, check_steps

__all__ = ["digit_accuracy", "train_digit_classifier", "trained_digit_classifier"]


def train_digit_classifier(model: nn.Module, data: HandwrittenDigits, steps: int, batch_size: int = 64,
                           lr: float = 1e-2, seed: int = 0) -> list[float]:
    """Cross-entropy with Adam (cosine decay) on ``batch_size`` images drawn at random (seeded) from
    ``data`` at every step; returns the loss per step."""
    steps, batch_size = check_steps(steps), check_batch_size(batch_size, len(data.labels), "training images")
    g = torch.Generator().manual_seed(seed)

    def batch_loss() -> torch.Tensor:
        idx = torch.randperm(len(data.labels), generator=g)[:batch_size]
        return F.cross_entropy(model(data.images[idx]), data.labels[idx])

    return fit(model, batch_loss, steps, lr, decay="cosine")["loss"]


def trained_digit_classifier(mixer: str, data: HandwrittenDigits, seed: int = 0, steps: int = 600,
                             batch_size: int = 64, lr: float = 1e-2) -> DigitClassifier:
    """One run of the chapter: ``seed_everything(seed)``, a fresh ``DigitClassifier(mixer)``, trained by
    :func:`train_digit_classifier`; returns the trained model. A function of its arguments alone, so that
    the runs can go side by side (:func:`~attention_course.train.parallel.run_parallel`)."""
    seed_everything(seed)
    model = DigitClassifier(mixer)
    train_digit_classifier(model, data, steps, batch_size, lr, seed)
    return model


def digit_accuracy(model: nn.Module, data: HandwrittenDigits) -> float:
    """Fraction of ``data`` whose largest logit is the true digit."""
    with torch.no_grad():
        return (model(data.images).argmax(-1) == data.labels).double().mean().item()
