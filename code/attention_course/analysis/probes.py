"""Linear probes: what can be read off a vector by a linear classifier?

If a logistic regression trained on half of the vectors predicts a label on the other half,
the information is there, in linearly readable form. If it cannot beat the majority class,
it is (linearly) absent.
"""

from __future__ import annotations

import torch

from ..repro import shifted_seed

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
    g = torch.Generator().manual_seed(shifted_seed(seed))
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


def token_probe_accuracy(hs: torch.Tensor, src: torch.Tensor, lengths: torch.Tensor, offsets=(0, 1, 2),
                         steps: int = 200, seed: int = 0) -> dict[int, float]:
    """How well each encoder row tells its tokens: for every offset k, the held-out accuracy of a linear
    probe (:func:`linear_probe_accuracy`) that reads the token x_{t-k} off row h_t of ``hs`` (B, S, H),
    over every real position t >= k of the source ``src`` (B, S) with ``lengths`` (B,)."""
    if hs.dim() != 3 or src.shape != hs.shape[:2] or lengths.shape != src.shape[:1]:
        raise ValueError(f"need hs (B, S, H), src (B, S) and lengths (B,), got {tuple(hs.shape)}, "
                         f"{tuple(src.shape)} and {tuple(lengths.shape)}")
    t = torch.arange(src.shape[1], device=src.device)[None, :]               # (1, S)
    result = {}
    for k in offsets:
        if not isinstance(k, int) or k < 0 or k >= src.shape[1]:
            raise ValueError(f"offsets must be integers in [0, {src.shape[1]}), got {k!r}")
        valid = (t >= k) & (t < lengths.to(src.device)[:, None])             # (B, S) rows whose x_{t-k} exists
        earlier = torch.roll(src, k, dims=1)                                  # earlier[:, t] = src[:, t - k]
        result[k] = linear_probe_accuracy(hs[valid], earlier[valid], steps=steps, seed=seed)
    return result
