"""Real images for Chapter 8: the 8 x 8 handwritten digits that ship inside scikit-learn's wheel.

1,797 images of the digits 0-9, 8 x 8 pixels with integer values 0..16 (Alpaydin and Kaynak,
UCI Optical Recognition of Handwritten Digits, 1998). The file ``sklearn/datasets/data/digits.csv.gz``
is read through ``importlib.metadata`` like any data file: nothing is downloaded.
"""

from __future__ import annotations

import gzip
import importlib.metadata
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["HandwrittenDigits", "load_handwritten_digits"]


@dataclass(frozen=True)
class HandwrittenDigits:
    """images (n, 8, 8) float32 in [0, 1] (pixel / 16); labels (n,) int64 in 0..9."""

    images: torch.Tensor
    labels: torch.Tensor

    def split(self, n_test: int, seed: int = 0) -> tuple[HandwrittenDigits, HandwrittenDigits]:
        """(train, test): a seeded random permutation, the last ``n_test`` images held out."""
        if not 0 < n_test < len(self.labels):
            raise ValueError(f"n_test must lie in (0, {len(self.labels)}), got {n_test}")
        order = torch.randperm(len(self.labels), generator=torch.Generator().manual_seed(seed))
        train, test = order[:-n_test], order[-n_test:]
        return (HandwrittenDigits(self.images[train], self.labels[train]),
                HandwrittenDigits(self.images[test], self.labels[test]))


def load_handwritten_digits() -> HandwrittenDigits:
    """The 1,797 digits of scikit-learn's wheel; a RuntimeError says what to install if missing."""
    where = "sklearn/datasets/data/digits.csv.gz"
    try:
        path = importlib.metadata.distribution("scikit-learn").locate_file(where)
        with gzip.open(path, "rt") as f:
            table = np.loadtxt(f, delimiter=",")
    except (importlib.metadata.PackageNotFoundError, FileNotFoundError) as error:
        raise RuntimeError(f"the digits ship inside the scikit-learn wheel ({where}), which is not installed "
                           f"here: pip install scikit-learn==1.9.1 (see requirements.txt)") from error
    if table.shape != (1797, 65):
        raise RuntimeError(f"{where} should hold 1,797 rows of 64 pixels and a label, got shape {table.shape}")
    images = torch.from_numpy(table[:, :64].reshape(-1, 8, 8) / 16.0).float()
    return HandwrittenDigits(images=images, labels=torch.from_numpy(table[:, 64]).long())
