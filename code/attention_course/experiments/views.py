"""The retrieval experiments on paired views (chapter 6): a bilinear head trained contrastively,
compared with CCA direction by direction.

Chapter 6 trains one attention head, a *dual encoder* with linear query and key maps, to pick each
query's partner among the other keys of its batch (in-batch negatives, the InfoNCE loss). Two
sweeps measure how close its whitened map comes to CCA:

* :func:`keys_sweep`: the number of keys per query (the batch size) at a fixed sample, several
  seeds; the singular values approach the canonical correlations as the batch grows.
* :func:`sample_size_sweep`: the number of training pairs, several seeds, fresh samples of one
  population; the matched angle between the head's i-th direction and CCA's i-th direction,
  both estimated on the same pairs, shrinks as the sample grows. The population optimum has the
  canonical directions exactly, so this angle is a finite-sample effect, not a training budget.

:func:`direction_spread` sets beside the matched angle how far heads trained from different seeds
lie from one another: heads that agree with each other more closely than with CCA have found the
sample's optimum, whose directions differ from the sample's canonical ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from ..analysis.cca import CCAResult, cca, cca_from_covariances, principal_angles, sqrt_psd
from ..analysis.retrieval import matched_direction_angles, whitened_bilinear
from ..models.retrieval import RetrievalHead, train_retrieval
from ..repro import shifted_seed
from ..tasks.views import PlantedViews, resample_views
from ..validate import check_steps

__all__ = ["HeadProtocol", "HEAD", "train_bilinear_head", "matched_angles", "direction_spread", "keys_sweep",
           "sample_size_sweep", "SAMPLE_SIZES", "SAMPLE_SEEDS"]


@dataclass(frozen=True)
class HeadProtocol:
    """How every bilinear head of chapter 6 is trained: Adam, cosine decay, float64."""

    d_k: int = 6
    steps: int = 1500
    lr: float = 0.02


HEAD = HeadProtocol()
SAMPLE_SIZES = (1000, 4000, 16000, 64000)
SAMPLE_SEEDS = (0, 1, 2)


def train_bilinear_head(x: np.ndarray, y: np.ndarray, batch_size: int, seed: int,
                        protocol: HeadProtocol = HEAD, steps: int | None = None) -> np.ndarray:
    """Train a linear :class:`RetrievalHead` on the pairs (x (n, p), y (n, q)) with ``batch_size``
    keys per query; seed ``seed`` fixes its initial weights and its batches. Returns its bilinear
    map W (p, q), score(x, y) = x^T W y."""
    torch.manual_seed(shifted_seed(seed))
    head = RetrievalHead(x_dim=x.shape[1], y_dim=y.shape[1], d_k=protocol.d_k)
    steps = protocol.steps if steps is None else check_steps(steps)
    return train_retrieval(head, x, y, steps=steps, batch_size=batch_size, lr=protocol.lr, seed=seed,
                           record_every=steps)["bilinear"][-1]


def matched_angles(W: np.ndarray, result: CCAResult) -> np.ndarray:
    """(2, k) angles in degrees between the i-th singular direction of the whitened W and the i-th
    canonical direction of ``result``, query side (row 0) and key side (row 1), k = all components."""
    angles = matched_direction_angles(W, result, k=result.x_weights.shape[1])
    return np.array([np.diag(angles["x"]), np.diag(angles["y"])])


def direction_spread(bilinears: Sequence[np.ndarray], result: CCAResult) -> np.ndarray:
    """(2, k) the largest angle in degrees, over every two of the maps W (p, q) in ``bilinears``, between
    their i-th singular directions in the whitened coordinates of ``result``, query side (row 0) and key
    side (row 1), k = all components: how far heads trained from different seeds disagree with one another,
    to set beside :func:`matched_angles`, how far each one is from CCA. Needs at least two maps."""
    if len(bilinears) < 2:
        raise ValueError(f"direction_spread compares maps with one another: give at least 2, got {len(bilinears)}")
    k = result.x_weights.shape[1]
    directions = []
    for W in bilinears:
        U, _, Vt = np.linalg.svd(whitened_bilinear(W, result.cov_xx, result.cov_yy))
        directions.append((U[:, :k], Vt[:k].T))
    out = np.zeros((2, k))
    for a, b in itertools.combinations(directions, 2):
        for side in (0, 1):
            out[side] = np.maximum(out[side], [principal_angles(a[side][:, [i]], b[side][:, [i]])[0]
                                               for i in range(k)])
    return out


def keys_sweep(x: np.ndarray, y: np.ndarray, batch_sizes: Sequence[int] = (4, 16, 64, 128, 256),
               seeds: Sequence[int] = tuple(range(5)), protocol: HeadProtocol = HEAD) -> dict:
    """Heads trained on the same pairs with each number of keys per query, one per seed.

    Returns ``batch_sizes``, ``seeds``, ``result`` (CCA of x, y), and arrays indexed
    [batch size, seed]: ``matched`` (..., 2, k) matched angles, ``nearest_own`` (..., 2, k) whether
    learned direction i is nearest canonical direction i, ``singular_values`` (..., k) of the
    whitened map, ``distance`` (...) the relative distance ||W~ - M|| / ||M||.
    """
    result = cca(x, y)
    k = result.x_weights.shape[1]
    M = result.x_directions @ np.diag(result.correlations) @ result.y_directions.T
    shape = (len(batch_sizes), len(seeds))
    out = {"matched": np.zeros(shape + (2, k)), "nearest_own": np.zeros(shape + (2, k), bool),
           "singular_values": np.zeros(shape + (k,)), "distance": np.zeros(shape)}
    for i, B in enumerate(batch_sizes):
        for j, s in enumerate(seeds):
            W = train_bilinear_head(x, y, B, s, protocol)
            angles = matched_direction_angles(W, result, k=k)
            out["matched"][i, j] = [np.diag(angles["x"]), np.diag(angles["y"])]
            out["nearest_own"][i, j] = [angles[side].argmin(1) == np.arange(k) for side in "xy"]
            out["singular_values"][i, j] = angles["singular_values"]
            W_white = whitened_bilinear(W, result.cov_xx, result.cov_yy)
            out["distance"][i, j] = np.linalg.norm(W_white - M) / np.linalg.norm(M)
    return {"batch_sizes": tuple(batch_sizes), "seeds": tuple(seeds), "result": result, **out}


def _population_angles(result: CCAResult, views: PlantedViews) -> np.ndarray:
    """(2, k) angles between the sample canonical weights of ``result`` and the population's, each
    measured in the population's whitened coordinates."""
    k = result.x_weights.shape[1]
    _, pop_a, pop_b = cca_from_covariances(views.cov_xx, views.cov_yy, views.cov_xy)
    out = np.zeros((2, k))
    for row, (weights, cov, truth) in enumerate(((result.x_weights, views.cov_xx, pop_a),
                                                 (result.y_weights, views.cov_yy, pop_b))):
        root = sqrt_psd(cov)
        est, true = root @ weights, root @ truth
        out[row] = [principal_angles(est[:, [i]], true[:, [i]])[0] for i in range(k)]
    return out


def sample_size_sweep(views: PlantedViews, sizes: Sequence[int] = SAMPLE_SIZES,
                      seeds: Sequence[int] = SAMPLE_SEEDS, batch_size: int = 256,
                      protocol: HeadProtocol = HEAD, steps: int | None = None) -> dict:
    """The matched angle between the head and CCA against the number of training pairs.

    For each seed s, one fresh sample of max(sizes) pairs is drawn from the population of ``views``
    (generator ``default_rng(1000 + s)``); for each n in ``sizes`` the first n pairs are the training
    set: CCA is computed on them and a head (seed s, ``batch_size`` keys per query, the same number
    of steps whatever n) is trained on them. Returns ``sizes``, ``seeds`` and arrays indexed
    [seed, size]: ``matched`` (..., 2, k) angle between learned and canonical direction i on the same
    pairs, query and key side; ``cca_error`` (..., 2, k) angle between sample and population
    canonical direction i; ``singular_values`` (..., k) of the head's whitened map; ``rho`` (..., k)
    the sample canonical correlations.
    """
    sizes = tuple(int(n) for n in sizes)
    if not sizes or min(sizes) < batch_size or list(sizes) != sorted(set(sizes)):
        raise ValueError(f"sizes must be increasing and at least batch_size = {batch_size}, got {sizes}")
    k = min(views.cov_xx.shape[0], views.cov_yy.shape[0])
    shape = (len(seeds), len(sizes))
    out = {"matched": np.zeros(shape + (2, k)), "cca_error": np.zeros(shape + (2, k)),
           "singular_values": np.zeros(shape + (k,)), "rho": np.zeros(shape + (k,))}
    for i, s in enumerate(seeds):
        sample = resample_views(views, np.random.default_rng(1000 + s), max(sizes))
        for j, n in enumerate(sizes):
            x, y = sample.x[:n], sample.y[:n]
            result = cca(x, y)
            W = train_bilinear_head(x, y, batch_size, s, protocol, steps)
            out["matched"][i, j] = matched_angles(W, result)
            out["cca_error"][i, j] = _population_angles(result, views)
            out["singular_values"][i, j] = np.linalg.svd(whitened_bilinear(W, result.cov_xx, result.cov_yy),
                                                         compute_uv=False)[:k]
            out["rho"][i, j] = result.correlations
    return {"sizes": sizes, "seeds": tuple(seeds), **out}
