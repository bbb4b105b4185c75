"""Synthetic sequence tasks generated on the fly: nothing is downloaded.

Digit strings: the model reads a random string of decimal digits and must write it back
(``task="copy"``) or write it backwards (``task="reverse"``). Token ids:

    0 <pad>   1 <bos>   2 <eos>   3..12 the digits 0..9
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from .validate import positive_int

__all__ = ["PAD", "BOS", "EOS", "DIGIT_VOCAB", "Batch", "digit_batch", "decode_digits", "decode_ids"]

PAD, BOS, EOS = 0, 1, 2
DIGIT_VOCAB = ["<pad>", "<bos>", "<eos>", *"0123456789"]


class Batch(NamedTuple):
    """A padded batch. ``src`` (B, S) and ``target`` (B, S+1) hold token ids; ``lengths`` (B,)
    is the number of real tokens in each source row; every target ends with ``EOS``."""

    src: torch.Tensor
    lengths: torch.Tensor
    target: torch.Tensor

    def decoder_input(self) -> torch.Tensor:
        """(B, S+1): ``BOS`` followed by the target shifted right (teacher forcing)."""
        bos = torch.full_like(self.target[:, :1], BOS)
        return torch.cat([bos, self.target[:, :-1]], dim=1)

    def to(self, device: torch.device | str | None) -> Batch:
        """The same batch on ``device`` (no copy for tensors already there)."""
        return Batch(*(t.to(device) for t in self))


def digit_batch(rng: np.random.Generator, batch_size: int, min_len: int, max_len: int,
                task: str = "copy") -> Batch:
    """Sample ``batch_size`` digit strings with lengths uniform in [min_len, max_len]."""
    positive_int("batch_size", batch_size)
    if task not in ("copy", "reverse"):
        raise ValueError(f"task must be 'copy' or 'reverse', got {task!r}")
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got min_len={min_len}, max_len={max_len}")
    lengths = rng.integers(min_len, max_len + 1, size=batch_size)
    digits = rng.integers(0, 10, size=(batch_size, max_len)) + 3
    valid = np.arange(max_len)[None, :] < lengths[:, None]
    src = np.where(valid, digits, PAD)
    out = src.copy()
    if task == "reverse":
        for row, n in zip(out, lengths):
            row[:n] = row[:n][::-1]
    target = np.full((batch_size, max_len + 1), PAD)
    target[:, :max_len] = out
    target[np.arange(batch_size), lengths] = EOS
    return Batch(torch.from_numpy(src), torch.from_numpy(lengths), torch.from_numpy(target))   # on the CPU


def decode_ids(ids, vocab: list[str]) -> str:
    """Token ids (a sequence, array or tensor) -> text over ``vocab``, stopping at the first ``EOS`` and
    skipping the other specials (ids below 3). Raises ValueError for an id outside the vocabulary."""
    ids = ids.tolist() if isinstance(ids, torch.Tensor) else np.asarray(ids).tolist()
    text = []
    for i in ids:
        if not 0 <= i < len(vocab):
            raise ValueError(f"id {i!r} is not in the vocabulary (ids 0..{len(vocab) - 1})")
        if i == EOS:
            break
        if i > EOS:
            text.append(vocab[i])
    return "".join(text)


def decode_digits(ids) -> str:
    """Token ids -> digit string, stopping at the first ``EOS`` and skipping specials."""
    return decode_ids(ids, DIGIT_VOCAB)
