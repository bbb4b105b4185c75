"""Linear probes: what can be read off a vector by a linear classifier?

If a logistic regression trained on half of the vectors predicts a label on the other half,
the information is there, in linearly readable form. If it cannot beat the majority class,
it is (linearly) absent.
"""

from __future__ import annotations

import torch

__all__ = ["linear_probe_accuracy"]


def linear_probe_accuracy(features: torch.Tensor, labels: torch.Tensor, steps: int = 200, seed: int = 0) -> float:
    """Held-out accuracy of a logistic-regression probe.

    ``features`` (N, D) float, ``labels`` (N,) integer classes. The first half of a fixed random
    permutation trains the probe (L-BFGS on standardised features), the second half tests it.
    """
    if features.dim() != 2 or labels.shape != features.shape[:1]:
        raise ValueError(f"need features (N, D) and labels (N,), got {tuple(features.shape)} "
                         f"and {tuple(labels.shape)}")
    features, labels = features.detach().cpu(), labels.cpu()          # a small probe: fitted on the CPU
    g = torch.Generator().manual_seed(seed)
    order = torch.randperm(len(labels), generator=g, device="cpu")
    half = len(labels) // 2
    train, test = order[:half], order[half:]
    x = features.double()
    x = (x - x[train].mean(0)) / (x[train].std(0) + 1e-8)
    classes = int(labels.max()) + 1
    probe = torch.nn.Linear(x.shape[1], classes, device="cpu").double()
    opt = torch.optim.LBFGS(probe.parameters(), max_iter=steps, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(probe(x[train]), labels[train]) + 1e-3 * probe.weight.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return (probe(x[test]).argmax(1) == labels[test]).double().mean().item()
