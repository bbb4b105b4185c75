"""Self-checks for Chapter 1, the seq2seq bottleneck."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ...models.seq2seq import reverse_padded
from ...tasks.digits import digit_batch
from ...tokens import EOS, PAD
from ...train.seq2seq import accuracy
from ._base import FLOAT32_EPS, CheckFailed, as_float, as_number, as_tensor, call, ok

__all__ = ["check_reverse_padded", "check_token_accuracy", "check_linear_rnn_gradient"]


# Exercise 1.1: the input-reversal trick --------------------------------------------------------

def check_reverse_padded(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(src (B, S), lengths (B,)) -> (B, S)`` must reverse each row's real tokens only."""
    batch = digit_batch(np.random.default_rng(11), 8, 1, 9)
    src, lengths = batch.src, batch.lengths
    got = as_tensor(call(fn, src.clone(), lengths.clone()), "the reversed batch")
    want = reverse_padded(src, lengths)
    if got.shape != src.shape:
        raise CheckFailed(f"expected a tensor of shape {tuple(src.shape)} (same as src), got {tuple(got.shape)}")
    if torch.equal(got.double(), want.double()):
        ok("each row's real tokens are reversed and the padding stays at the end.")
        return
    got = got.double()
    if torch.equal(got, src.double()):
        raise CheckFailed("the output equals the input: nothing was reversed")
    if torch.equal(got, src.flip(1).double()):
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
    got = as_float(call(fn, predicted.clone(), target.clone()), "the accuracies")
    if got.shape != want.shape:
        raise CheckFailed(f"expected one accuracy per example, shape {tuple(want.shape)}, got {tuple(got.shape)}")
    if torch.allclose(got, want.double()):
        short = as_float(call(fn, predicted[:, :3].clone(), target.clone()), "the accuracies")
        want_short, _ = accuracy(predicted[:, :3], target)
        if short.shape != want_short.shape or not torch.allclose(short, want_short.double()):
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
    # float32 autograd rounds w and each of the T - 1 products: a relative error up to about T * eps.
    rel_tol = 2 * T * FLOAT32_EPS
    for w, answer in ((0.9, small), (1.1, large)):
        answer = as_number(answer, f"d h_T / d x_1 for w={w}")
        want = w ** (T - 1)
        if math.isclose(answer, want, rel_tol=rel_tol):
            continue
        if math.isclose(answer, w ** T, rel_tol=rel_tol):
            raise CheckFailed(f"for w={w}: off by one. x_1 enters at step 1, then {T - 1} more steps "
                              f"multiply it by w")
        if math.isclose(answer, w * T, rel_tol=rel_tol) or math.isclose(answer, w * (T - 1), rel_tol=rel_tol):
            raise CheckFailed(f"for w={w}: the chain rule multiplies one factor per step; it does not add them")
        raise CheckFailed(f"for w={w}: got {answer:.9g}, expected a number near {want:.9g} (relative error "
                          f"{abs(answer - want) / want:.2g}, allowed {rel_tol:.2g})")
    ok(f"0.9^{T - 1} = {0.9 ** (T - 1):.4f} vanishes and 1.1^{T - 1} = {1.1 ** (T - 1):.1f} explodes.")
