"""Synthetic sequence tasks generated on the fly: nothing is downloaded.

Digit strings: the model reads a random string of decimal digits and must write it back. Token ids:

    0 <pad>   1 <bos>   2 <eos>   3..12 the digits 0..9
"""

from __future__ import annotations

import numpy as np
import torch

from ..tokens import EOS, PAD, SPECIALS, Batch, decode_ids
from ..validate import positive_int

__all__ = ["DIGIT_VOCAB", "digit_batch", "decode_digits"]


DIGIT_VOCAB = [*SPECIALS, *"0123456789"]


def digit_batch(rng: np.random.Generator, batch_size: int, min_len: int, max_len: int) -> Batch:
    """Sample ``batch_size`` digit strings with lengths uniform in [min_len, max_len]."""
    positive_int("batch_size", batch_size)
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    lengths = rng.integers(min_len, max_len + 1, size=batch_size)
    digits = rng.integers(0, 10, size=(batch_size, max_len)) + 3
    valid = np.arange(max_len)[None, :] < lengths[:, None]
    src = np.where(valid, digits, PAD)
    target = np.full((batch_size, max_len + 1), PAD)
    target[:, :max_len] = src
    target[np.arange(batch_size), lengths] = EOS
    return Batch(torch.from_numpy(src), torch.from_numpy(lengths), torch.from_numpy(target))   # on the CPU


def decode_digits(ids) -> str:
    """Token ids -> digit string, stopping at the first ``EOS`` and skipping specials."""
    return decode_ids(ids, DIGIT_VOCAB)
