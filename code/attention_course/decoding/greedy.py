"""Greedy decoding: at every step write the most likely token and feed it back in."""

from __future__ import annotations

import torch

from ..tokens import BOS, EOS, PAD
from ..validate import positive_int

__all__ = ["greedy_decode"]


@torch.no_grad()
def greedy_decode(model, src: torch.Tensor, lengths: torch.Tensor, max_len: int, return_weights: bool = False,
                  chunk: int | None = None):
    """(B, max_len) token ids from ``model.start`` / ``model.step``, ``PAD`` after each row's ``EOS``;
    with ``return_weights`` also the attention weights (B, max_len, S) of every step.
    ``chunk``, if given, decodes that many rows at a time, which bounds the memory of each step."""
    max_len = positive_int("max_len", max_len)
    if chunk is not None and src.shape[0] > positive_int("chunk", chunk):
        parts = [greedy_decode(model, src[i:i + chunk], lengths[i:i + chunk], max_len, return_weights)
                 for i in range(0, src.shape[0], chunk)]
        return tuple(map(torch.cat, zip(*parts))) if return_weights else torch.cat(parts)
    state = model.start(src, lengths)
    token = torch.full((src.shape[0],), BOS, dtype=torch.long, device=src.device)   # (B,)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    out, weights = [], []
    for _ in range(max_len):
        logits, state, w = model.step(state, token)           # (B, V), and (B, S) or None
        token = logits.argmax(-1)                             # (B,) fed back in as it is
        out.append(token.masked_fill(done, PAD))              # written: PAD once the row has ended
        weights.append(w)
        done |= token == EOS
    ids = torch.stack(out, dim=1)                             # (B, max_len)
    if not return_weights:
        return ids
    if any(w is None for w in weights):
        raise ValueError(f"{type(model).__name__}.step returns no attention weights over the source")
    return ids, torch.stack(weights, dim=1)                   # (B, max_len, S)
