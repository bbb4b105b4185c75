"""The two-lookup task: one query must read two different positions.

A sequence of ``length`` items holds random vectors of ``dim`` numbers (standard normal); one item
carries the marker ``FIRST``, another the marker ``SECOND`` (all others ``NO_MARK``). The answer
is the two marked vectors, in order: (vector marked FIRST, vector marked SECOND)::

    vectors  x_0 x_1 x_2 x_3 x_4 x_5        answer (x_2, x_5)
    markers   .   .   F   .   .   S

Positions carry no information (the markers land anywhere), so a reader has to find the two
marked items by their markers. One softmax over the items returns one weighted average: a mix
``a x_2 + (1 - a) x_5`` from which no linear map recovers both vectors.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ..validate import positive_int

__all__ = ["NO_MARK", "FIRST", "SECOND", "LookupBatch", "two_lookup_batch"]

NO_MARK, FIRST, SECOND = 0, 1, 2


class LookupBatch(NamedTuple):
    """``vectors`` (B, length, dim), ``markers`` (B, length), ``answer`` (B, 2, dim): the vectors
    marked FIRST and SECOND."""

    vectors: torch.Tensor
    markers: torch.Tensor
    answer: torch.Tensor


def two_lookup_batch(rng: np.random.Generator, batch_size: int, length: int = 8, dim: int = 4) -> LookupBatch:
    """``batch_size`` random sequences of ``length`` items (at least 2), each a vector of ``dim`` numbers."""
    batch_size, dim = positive_int("batch_size", batch_size), positive_int("dim", dim)
    length = positive_int("length", length, minimum=2)
    vectors = rng.standard_normal((batch_size, length, dim)).astype(np.float32)
    where = np.argsort(rng.random((batch_size, length)), axis=1)[:, :2]      # two distinct positions per row
    markers = np.full((batch_size, length), NO_MARK)
    rows = np.arange(batch_size)
    markers[rows, where[:, 0]] = FIRST
    markers[rows, where[:, 1]] = SECOND
    answer = np.stack([vectors[rows, where[:, 0]], vectors[rows, where[:, 1]]], axis=1)
    return LookupBatch(torch.from_numpy(vectors), torch.as_tensor(markers, dtype=torch.long),
                       torch.from_numpy(answer))
