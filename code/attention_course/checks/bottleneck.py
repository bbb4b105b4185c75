"""Self-checks for Chapter 1, the seq2seq bottleneck."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ..data import EOS, PAD, digit_batch
from ..seq2seq import reverse_padded
from ..training import accuracy
from ._base import CheckFailed, ok

__all__ = ["check_reverse_padded", "check_token_accuracy", "check_linear_rnn_gradient"]


# Exercise 1.1: the input-reversal trick --------------------------------------------------------

def check_reverse_padded(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(src (B, S), lengths (B,)) -> (B, S)`` must reverse each row's real tokens only."""
    batch = digit_batch(np.random.default_rng(11), 8, 1, 9)
    src, lengths = batch.src, batch.lengths
    got = fn(src.clone(), lengths.clone())
    want = reverse_padded(src, lengths)
    if not isinstance(got, torch.Tensor) or got.shape != src.shape:
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
        raise CheckFailed(f"expected a tensor of shape {tuple(src.shape)} (same as src), got {shape}")
    if torch.equal(got, want):
        ok("each row's real tokens are reversed and the padding stays at the end.")
        return
    if torch.equal(got, src):
        raise CheckFailed("the output equals the input: nothing was reversed")
    if torch.equal(got, src.flip(1)):
        raise CheckFailed("you reversed whole rows, padding included, so the padding now comes first; "
                          "reverse only the first lengths[b] tokens of row b")
    row = int((got != want).any(1).nonzero()[0])
    raise CheckFailed(f"row {row} (length {int(lengths[row])}) is wrong: got {got[row].tolist()}, "
                      f"expected {want[row].tolist()}")


# Exercise 1.2: per-token accuracy --------------------------------------------------------------

def check_token_accuracy(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(predicted (B, T), target (B, T)) -> (B,)`` per-example token accuracy, counting the
    target's real tokens and its EOS, never its padding; a short prediction is padded."""
    target = torch.tensor([[5, 6, 7, EOS, PAD, PAD],
                           [3, 4, EOS, PAD, PAD, PAD],
                           [8, 9, 10, 11, 12, EOS]])
    predicted = torch.tensor([[5, 6, 8, EOS, PAD, 3],
                              [3, 4, 4, EOS, PAD, PAD],
                              [8, 9, 10, 11, 12, 12]])
    want, _ = accuracy(predicted, target)
    got = torch.as_tensor(fn(predicted, target), dtype=torch.float64)
    if got.shape != want.shape:
        raise CheckFailed(f"expected one accuracy per example, shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if torch.allclose(got, want.double()):
        short = fn(predicted[:, :3], target)
        want_short, _ = accuracy(predicted[:, :3], target)
        if not torch.allclose(torch.as_tensor(short, dtype=torch.float64), want_short.double()):
            raise CheckFailed("a prediction shorter than the target must count its missing tokens as wrong")
        ok("padding is ignored, EOS counts, and missing tokens count as wrong.")
        return
    with_pad = (predicted == target).double().mean(1)
    no_eos_mask = (target != PAD) & (target != EOS)
    no_eos = ((predicted == target) & no_eos_mask).sum(1) / no_eos_mask.sum(1)
    if torch.allclose(got, with_pad):
        raise CheckFailed("your accuracy counts padding positions: a row with more PAD looks better than it is")
    if torch.allclose(got, no_eos.double()):
        raise CheckFailed("your accuracy ignores EOS: stopping at the right place is part of the answer")
    raise CheckFailed(f"got {got.tolist()}, expected {[round(v, 4) for v in want.tolist()]}")


# Exercise 1.3: gradients through time ----------------------------------------------------------

def check_linear_rnn_gradient(small: float, large: float, T: int = 50) -> None:
    """d h_T / d x_1 for the scalar RNN h_t = w h_{t-1} + x_t, with w = 0.9 (``small``) and
    w = 1.1 (``large``)."""
    for w, answer in ((0.9, small), (1.1, large)):
        want = w ** (T - 1)
        if math.isclose(answer, want, rel_tol=1e-6):
            continue
        if math.isclose(answer, w ** T, rel_tol=1e-6):
            raise CheckFailed(f"for w={w}: off by one. x_1 enters at step 1, then {T - 1} more steps "
                              f"multiply it by w")
        if math.isclose(answer, w * T, rel_tol=1e-6) or math.isclose(answer, w * (T - 1), rel_tol=1e-6):
            raise CheckFailed(f"for w={w}: the chain rule multiplies one factor per step; it does not add them")
        raise CheckFailed(f"for w={w}: got {answer:.6g}, expected a number near {want:.3g}")
    ok(f"0.9^{T - 1} = {0.9 ** (T - 1):.4f} vanishes and 1.1^{T - 1} = {1.1 ** (T - 1):.1f} explodes.")
