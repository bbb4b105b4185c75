"""Token ids shared by every sequence task and model: the specials ``<pad> <bos> <eos>`` that every
vocabulary starts with, a padded batch of source and target ids, and ids back to text."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

__all__ = ["PAD", "BOS", "EOS", "SPECIALS", "Batch", "pad_ids", "decode_ids"]

PAD, BOS, EOS = 0, 1, 2
SPECIALS = ["<pad>", "<bos>", "<eos>"]


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


def pad_ids(rows, device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of token ids (lists of ints, of any lengths) -> ``(ids (B, S), lengths (B,))``: one row per
    list, ``PAD`` after its end, ``S`` the longest length; both int64, on ``device`` (default the CPU)."""
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    ids = np.full((len(rows), int(lengths.max(initial=0))), PAD, dtype=np.int64)
    for out, r in zip(ids, rows):                   # numpy fills a row from a list in one call
        out[:len(r)] = r
    return torch.from_numpy(ids).to(device), torch.from_numpy(lengths).to(device)


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
