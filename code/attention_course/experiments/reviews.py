"""Training and evaluating the attention classifier on the planted and the real reviews (Chapter 7).

``data`` is a :class:`~attention_course.tasks.reviews.PlantedData` or a
:class:`~attention_course.tasks.movie_reviews.ReviewSet`: anything with ``tokens``, ``lengths``,
``labels``, ``subset`` and ``to``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..analysis.adversarial import (
    ADVERSARY_DIVERGENCES,
    adversarial_attention,
    consistent_adversary_loss,
    js_divergence,
    total_variation,
)
from ..analysis.importance import gradient_importance, kendall_tau, leave_one_out_importance
from ..models.classifier import AttentionClassifier
from ..repro import shifted_seed
from ..train import fit
from ..validate import check_batch_size, check_choice, check_steps, positive_int

__all__ = ["train_classifier", "trained_classifier", "predict_proba", "accuracy", "importance_measures",
           "importance_taus", "train_consistent_adversary", "trained_consistent_adversary", "consistency",
           "consistent_adversary_curve", "relative_fall", "has_flattened", "counter_test_run"]


def train_classifier(model: AttentionClassifier, data, steps: int = 400, batch_size: int = 64,
                     lr: float = 1e-2, seed: int = 0, weights: torch.Tensor | None = None) -> list[float]:
    """Adam on binary cross-entropy over random mini-batches of ``data``; returns the loss per step.

    ``weights`` (N, T), if given, is imposed as the attention of every training example (frozen:
    it is data, not a parameter), as in Wiegreffe & Pinter's diagnostic models.
    """
    check_steps(steps)
    check_batch_size(batch_size, len(data), "examples of the training data")
    if weights is not None and weights.shape != data.tokens.shape:
        raise ValueError(f"weights must match tokens {tuple(data.tokens.shape)}, got {tuple(weights.shape)}")
    device = next(model.parameters()).device
    torch.manual_seed(shifted_seed(seed))
    rng = np.random.default_rng(shifted_seed(seed))
    loss_fn = nn.BCEWithLogitsLoss()

    def batch_loss() -> torch.Tensor:
        index = torch.as_tensor(rng.choice(len(data), size=batch_size, replace=False))
        batch = data.subset(index).to(device)
        imposed = None if weights is None else weights[index, :batch.tokens.shape[1]].to(device)
        logits, _ = model(batch.tokens, batch.lengths, imposed)
        return loss_fn(logits, batch.labels)

    return fit(model, batch_loss, steps, lr)["loss"]


def trained_classifier(data, vocab_size: int, seed: int = 0, encoder: str = "bilstm", attention: str = "additive",
                       weights: torch.Tensor | None = None, steps: int = 400, batch_size: int = 64, lr: float = 1e-2,
                       embed_dim: int = 32, hidden_dim: int = 32) -> AttentionClassifier:
    """``torch.manual_seed(seed)``, a fresh :class:`AttentionClassifier`, trained by :func:`train_classifier`
    with ``seed``: one run of a seed sweep, the same model in this process or in a worker process of
    :func:`~attention_course.train.parallel.run_parallel`."""
    torch.manual_seed(shifted_seed(seed))
    model = AttentionClassifier(vocab_size, embed_dim=embed_dim, hidden_dim=hidden_dim, encoder=encoder,
                                attention=attention)
    train_classifier(model, data, steps=steps, batch_size=batch_size, lr=lr, seed=seed, weights=weights)
    return model


@torch.no_grad()
def predict_proba(model: AttentionClassifier, data,
                  weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(P(positive) (N,), attention weights (N, T)) for every example of ``data``."""
    model.eval()
    data = data.to(next(model.parameters()).device)
    logits, used = model(data.tokens, data.lengths, weights)
    return torch.sigmoid(logits), used


def accuracy(probs: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of examples whose thresholded probability (>= 0.5 -> 1) equals the label."""
    if probs.shape != labels.shape:
        raise ValueError(f"probs {tuple(probs.shape)} and labels {tuple(labels.shape)} differ in shape")
    return float(((probs >= 0.5).float() == labels).float().mean())


def importance_measures(model: AttentionClassifier, data) -> dict[str, torch.Tensor]:
    """The three token rankings of Jain & Wallace for every example of ``data``, each (N, T), zero on
    padding: the model's ``"attention"``, the ``"gradient"`` (:func:`gradient_importance`) and
    ``"leave-one-out"`` (:func:`leave_one_out_importance`). Deterministic, so a notebook can compute the
    measures of several models side by side (:func:`~attention_course.train.parallel.run_parallel`)."""
    _, attention = predict_proba(model, data)
    data = data.to(next(model.parameters()).device)
    return {"attention": attention, "gradient": gradient_importance(model, data.tokens, data.lengths),
            "leave-one-out": leave_one_out_importance(model, data.tokens, data.lengths)}


def importance_taus(model: AttentionClassifier, data) -> dict[str, np.ndarray]:
    """Jain & Wallace's rank correlations, review by review: (N,) Kendall tau-b of the attention with
    the gradient (``"attention-gradient"``) and with leave-one-out (``"attention-loo"``), and of the
    two with each other (``"gradient-loo"``, the reference); NaN where a ranking is undefined."""
    m = importance_measures(model, data)
    attention, gradient, loo = m["attention"], m["gradient"], m["leave-one-out"]
    return {"attention-gradient": kendall_tau(attention, gradient, data.lengths),
            "attention-loo": kendall_tau(attention, loo, data.lengths),
            "gradient-loo": kendall_tau(gradient, loo, data.lengths)}


def train_consistent_adversary(model: AttentionClassifier, data, base_probs: torch.Tensor,
                               base_weights: torch.Tensor, lam: float, steps: int = 400, batch_size: int = 64,
                               lr: float = 1e-2, seed: int = 0, divergence: str = "kl",
                               callback=None, every: int = 100) -> list[float]:
    """Train ``model`` (fresh) as Wiegreffe & Pinter's model-consistent adversary of a base model.

    ``base_probs`` (N,) and ``base_weights`` (N, T) are the base model's P(positive) and attention on
    every example of ``data``; the labels are not used. Adam on random mini-batches of
    :func:`~attention_course.analysis.adversarial.consistent_adversary_loss`, the same batches and
    optimiser as :func:`train_classifier`. ``callback(step)``, if given, runs after every ``every``
    steps (as in :func:`~attention_course.train.fit`). ``divergence`` is the attention term of the loss:
    ``"kl"``, KL(adversary || base) as Wiegreffe & Pinter train it, or ``"jsd"``. Returns the loss per step.
    """
    _check_divergence(divergence)
    check_steps(steps)
    check_batch_size(batch_size, len(data), "examples of the training data")
    if base_probs.shape != data.labels.shape or base_weights.shape != data.tokens.shape:
        raise ValueError(f"base_probs {tuple(base_probs.shape)} and base_weights {tuple(base_weights.shape)} must "
                         f"match the data's labels {tuple(data.labels.shape)} and tokens {tuple(data.tokens.shape)}")
    device = next(model.parameters()).device
    torch.manual_seed(shifted_seed(seed))
    rng = np.random.default_rng(shifted_seed(seed))

    def batch_loss() -> torch.Tensor:
        index = torch.as_tensor(rng.choice(len(data), size=batch_size, replace=False))
        batch = data.subset(index).to(device)
        logits, weights = model(batch.tokens, batch.lengths)
        target = base_weights[index, :batch.tokens.shape[1]].to(device)
        return consistent_adversary_loss(torch.sigmoid(logits), base_probs[index].to(device), weights, target,
                                         lam, divergence)

    return fit(model, batch_loss, steps, lr, callback=callback, every=every)["loss"]


def _check_divergence(divergence: str) -> None:
    check_choice("divergence", divergence, ADVERSARY_DIVERGENCES,
                 " (the attention term of the adversary's loss: Wiegreffe & Pinter's KL, or the bounded JSD)")


def trained_consistent_adversary(data, vocab_size: int, base_probs: torch.Tensor, base_weights: torch.Tensor,
                                 lam: float, seed: int = 0, steps: int = 400, divergence: str = "kl",
                                 embed_dim: int = 32, hidden_dim: int = 32, batch_size: int = 64,
                                 lr: float = 1e-2) -> AttentionClassifier:
    """``torch.manual_seed(seed)``, a fresh BiLSTM :class:`AttentionClassifier` (not the base model's weights),
    trained by :func:`train_consistent_adversary` with ``seed``; returns it (one run of a sweep)."""
    torch.manual_seed(shifted_seed(seed))
    model = AttentionClassifier(vocab_size, embed_dim=embed_dim, hidden_dim=hidden_dim, encoder="bilstm")
    train_consistent_adversary(model, data, base_probs, base_weights, lam, steps=steps, batch_size=batch_size,
                               lr=lr, seed=seed, divergence=divergence)
    return model


def consistency(model: AttentionClassifier, data, base_probs: torch.Tensor,
                base_weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per example of ``data``: (JSD of the model's attention from ``base_weights`` (N,), TVD of its
    P(positive) from ``base_probs`` (N,)), Wiegreffe & Pinter's two axes."""
    probs, weights = predict_proba(model, data)
    return (js_divergence(weights, base_weights.to(weights.device)),
            total_variation(probs, base_probs.to(probs.device)))


def consistent_adversary_curve(data, test, vocab_size: int, base_probs: torch.Tensor, base_weights: torch.Tensor,
                               test_probs: torch.Tensor, test_weights: torch.Tensor, lam: float, seed: int = 0,
                               steps: int = 3000, every: int = 100, divergence: str = "kl", embed_dim: int = 32,
                               hidden_dim: int = 32, batch_size: int = 64, lr: float = 1e-2) -> dict:
    """One model-consistent adversary trained for ``steps`` steps, measured on ``test`` as it trains.

    The adversary is :func:`trained_consistent_adversary`'s (the same model, batches and updates, from
    ``torch.manual_seed(seed)``), trained against the base model's ``base_probs`` (N,) and
    ``base_weights`` (N, T) on ``data``, with the attention term ``divergence`` of its loss (``"kl"``,
    Wiegreffe & Pinter's, or ``"jsd"``). Before training and after every ``every`` steps it is scored
    against the base model's ``test_probs`` and ``test_weights`` on ``test`` by :func:`consistency`,
    whatever the loss: the JSD of the attention is bounded by ln 2 and comparable between runs.
    Returns ``{"steps": [0, every, ...], "jsd": [...], "tvd": [...], "accuracy": [...], "model": adversary}``:
    the mean JSD of its attention, the mean TVD of its output and its accuracy on ``test`` at each step.
    Run at ``lam = 0`` it is the control: an adversary asked only to copy the outputs, which shows how
    closely the trainer can copy them at all within the budget.
    """
    _check_divergence(divergence)
    steps = check_steps(steps)
    every = positive_int("every (the steps between two measurements)", every)
    if every > steps:
        raise ValueError(f"every must be a whole number of steps in [1, steps={steps}], got {every!r}")
    if test_probs.shape != test.labels.shape or test_weights.shape != test.tokens.shape:
        raise ValueError(f"test_probs {tuple(test_probs.shape)} and test_weights {tuple(test_weights.shape)} must "
                         f"match the test data's labels {tuple(test.labels.shape)} and tokens "
                         f"{tuple(test.tokens.shape)}")
    torch.manual_seed(shifted_seed(seed))
    model = AttentionClassifier(vocab_size, embed_dim=embed_dim, hidden_dim=hidden_dim, encoder="bilstm")
    curve: dict = {"steps": [], "jsd": [], "tvd": [], "accuracy": []}

    test = test.to(next(model.parameters()).device)              # moved once, not at every checkpoint
    test_probs, test_weights = test_probs.to(test.labels.device), test_weights.to(test.labels.device)

    def record(step: int) -> bool:
        probs, weights = predict_proba(model, test)                # one forward pass per checkpoint
        curve["steps"].append(step)
        curve["jsd"].append(js_divergence(weights, test_weights).mean().item())
        curve["tvd"].append(total_variation(probs, test_probs).mean().item())
        curve["accuracy"].append(accuracy(probs, test.labels))
        return False

    record(0)
    train_consistent_adversary(model, data, base_probs, base_weights, lam, steps=steps, batch_size=batch_size,
                               lr=lr, seed=seed, divergence=divergence, callback=record, every=every)
    curve["model"] = model
    return curve


def relative_fall(values, window: int = 5) -> float:
    """How much a training curve still falls at its end, relative to where it is:

        (median of the ``window`` values before the last ``window``  -  median of the last ``window``)
        / median of the last ``window``

    Positive while the curve still falls, negative when it has risen (a spike that lasted, a divergence);
    the medians ignore a single outlying checkpoint. ``values`` needs at least ``2 * window`` entries, and
    the last ``window`` must have a positive median (a distance that has reached exactly 0 has no scale).
    """
    window = positive_int("window (checkpoints in each half)", window)
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or len(values) < 2 * window:
        raise ValueError(f"values must be a curve of at least 2 * window = {2 * window} checkpoints, got "
                         f"{values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("values hold NaN or inf: the run diverged")
    last, before = np.median(values[-window:]), np.median(values[-2 * window:-window])
    if not last > 0:
        raise ValueError(f"the last {window} values have median {last!r}: a relative fall needs a positive value")
    return float((before - last) / last)


def has_flattened(values, window: int = 5, tolerance: float = 0.2) -> bool:
    """True when a training curve has flattened: over its last ``window`` checkpoints its median moved by
    at most ``tolerance`` of its value, in either direction, against the ``window`` before
    (:func:`relative_fall`). Relative, so that the criterion means the same for a curve at 0.005 as for
    one at 0.3, and two-sided, so that a curve that jumped up at the end does not count as flat."""
    if not (isinstance(tolerance, (int, float)) and not isinstance(tolerance, bool) and tolerance > 0):
        raise ValueError(f"tolerance must be a positive fraction, got {tolerance!r}")
    return abs(relative_fall(values, window)) <= tolerance


def _scores(model: AttentionClassifier, data, weights: torch.Tensor | None = None) -> tuple[float, float, float]:
    """Accuracy on all, on the simple and on the contrast reviews of planted ``data``."""
    probs, _ = predict_proba(model, data, weights)
    c = data.contrast
    return (accuracy(probs, data.labels), accuracy(probs[~c], data.labels[~c]),
            accuracy(probs[c], data.labels[c]))


@torch.no_grad()
def _exact_adversary(model: AttentionClassifier, data, weights: torch.Tensor, epsilon: float):
    model.eval()
    hs = model.states(model.embed(data.tokens), data.lengths)
    return adversarial_attention(model.token_logits(hs), model.out.bias.item(), weights, data.lengths, epsilon)


def counter_test_run(train, test, vocab_size: int, seed: int = 0, steps: int = 200, batch_size: int = 64,
                     lr: float = 1e-2, epsilon: float = 0.01) -> dict:
    """One seed of Wiegreffe & Pinter's counter-tests on planted reviews, as Chapter 7 tabulates them.

    Trains, each by :func:`trained_classifier` with ``seed`` and the same budget: the BiLSTM with learned
    attention, the BiLSTM with uniform attention, and three context-free (average-encoder) diagnostic
    models, with uniform weights, with the BiLSTM's attention frozen, and with the BiLSTM's exact
    adversary (:func:`~attention_course.analysis.adversarial.adversarial_attention`, within ``epsilon``).
    Returns ``{"acc": {"BiLSTM": ..., "uniform BiLSTM": ...}, "diagnostic": {"uniform": ...,
    "BiLSTM's": ..., "adversarial": ...}, "attention": (N, T), "adversary_jsd": (N,)}``: each accuracy is
    (all, simple, contrast) on ``test``; the attention is the BiLSTM's on ``test`` and the JSD its exact
    adversary's distance from it. The same models as a notebook's loop over these trainers, in one job.
    """
    if not hasattr(test, "contrast"):
        raise ValueError("counter_test_run needs planted reviews (PlantedData, with a contrast mask) as test data")
    budget = dict(vocab_size=vocab_size, seed=seed, steps=steps, batch_size=batch_size, lr=lr)
    bilstm = trained_classifier(train, encoder="bilstm", **budget)
    uniform = trained_classifier(train, encoder="bilstm", attention="uniform", **budget)
    _, train_weights = predict_proba(bilstm, train)
    _, test_weights = predict_proba(bilstm, test)
    train_adversary, _ = _exact_adversary(bilstm, train, train_weights, epsilon)
    test_adversary, adversary_jsd = _exact_adversary(bilstm, test, test_weights, epsilon)
    mlp = {name: trained_classifier(train, encoder="average", attention=attention, weights=weights, **budget)
           for name, attention, weights in (("uniform", "uniform", None), ("BiLSTM's", "additive", train_weights),
                                            ("adversarial", "additive", train_adversary))}
    return {"acc": {"BiLSTM": _scores(bilstm, test), "uniform BiLSTM": _scores(uniform, test)},
            "diagnostic": {"uniform": _scores(mlp["uniform"], test),
                           "BiLSTM's": _scores(mlp["BiLSTM's"], test, test_weights),
                           "adversarial": _scores(mlp["adversarial"], test, test_adversary)},
            "attention": test_weights, "adversary_jsd": adversary_jsd}
