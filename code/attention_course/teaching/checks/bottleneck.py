"""Self-checks for Chapter 1, the seq2seq bottleneck."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from ...models.seq2seq import Seq2Seq, reverse_padded
from ...tasks.digits import DIGIT_VOCAB, digit_batch
from ...tokens import EOS, PAD
from ...train.seq2seq import accuracy
from ._base import FLOAT32_EPS, CheckFailed, as_float, as_number, as_tensor, call, ok

__all__ = ["check_reverse_padded", "check_token_accuracy", "check_linear_rnn_gradient", "check_last_state"]


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
    ok("both derivatives are right: for the smaller w the gradient through time vanishes, for the larger it "
       "explodes.")


# Exercise 1.4 (ex-last-state): the one vector the decoder receives --------------------------------

_HANDOVER_LENGTHS = (9, 3, 1, 6, 9, 2)      # a padded batch of mixed lengths: short rows end in padding


def _handover_case():
    """A small untrained GRU Seq2Seq, a padded batch, its states ``hs`` and the context it passes on."""
    with torch.random.fork_rng():           # the learner's random stream is left as it was
        torch.manual_seed(0)
        model = Seq2Seq(len(DIGIT_VOCAB), embed_dim=8, hidden_dim=16, cell="gru").eval()
    lengths = torch.tensor(_HANDOVER_LENGTHS)
    S = int(lengths.max())
    digits = torch.from_numpy(np.random.default_rng(3).integers(0, 10, size=(len(lengths), S))) + 3
    src = torch.where(torch.arange(S)[None, :] < lengths[:, None], digits, PAD)
    with torch.no_grad():
        hs, context, _ = model.encode(src, lengths)
    return model, src, lengths, hs, context


def check_last_state(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """``fn(H (B, S, d), lengths (B,)) -> (1, B, d)``: out of the encoder's states, the one vector the
    plain decoder of :class:`Seq2Seq` starts from. The check runs the answer on the package's model."""
    model, src, lengths, hs, want = _handover_case()
    B, S, H = hs.shape
    got = as_float(call(fn, hs.clone(), lengths.clone()), "the context")
    want64 = want.double()
    if got.shape == (B, H) and torch.allclose(got, want64[0], atol=1e-6):
        raise CheckFailed(f"these are the right vectors, but the decoder's RNN takes its initial state as (layers, "
                          f"batch, hidden) = {tuple(want.shape)}: add the leading axis of one layer, e.g. [None]")
    if got.shape != want.shape:
        raise CheckFailed(f"expected the decoder's initial state, shape (1, batch, hidden) = {tuple(want.shape)}, "
                          f"got {tuple(got.shape)}")
    if torch.allclose(got, want64, atol=1e-6):
        with torch.no_grad():
            tgt_in = torch.full((B, 4), 3 + 7)
            mine, _ = model.decoder(tgt_in, got.to(want.dtype))
            theirs = model(src, lengths, tgt_in)
        if not torch.allclose(mine, theirs, atol=1e-5):     # the package itself would be broken
            raise AssertionError("Seq2Seq does not start its decoder from the encoder's final state")
        ok("your context is each row's state after its last real token, one vector per example whatever the "
           "length; started from it, the decoder gives the same logits as the package's model.")
        return
    short = [b for b in range(B) if lengths[b] < S]
    if torch.allclose(got, hs[:, 0].double()[None], atol=1e-6):
        raise CheckFailed("you passed H[:, 0], the state after the FIRST token: a decoder started from it has seen "
                          "one digit of the source. The plain decoder starts where the encoder stopped reading")
    if torch.allclose(got, hs[:, -1].double()[None], atol=1e-6):
        raise CheckFailed(f"H[:, -1] is the last POSITION of the padded batch; for the rows shorter than {S} "
                          f"(rows {short}) it is padding, where H is zero (packing keeps padding out of the "
                          f"states), so their decoders would start from zeros. Take each row's last real token")
    if torch.allclose(got, hs.double().sum(1)[None] / lengths.double()[None, :, None], atol=1e-6) or \
            torch.allclose(got, hs.double().mean(1)[None], atol=1e-6):
        raise CheckFailed("an average of the states is not what the plain model passes on: it passes one state, "
                          "the encoder's last, and the decoder never sees the others")
    for b in range(B):
        if torch.allclose(got[0, b], want64[0, b], atol=1e-6):
            continue
        took = [t for t in range(S) if torch.allclose(got[0, b], hs[b, t].double(), atol=1e-6)]
        where = f"you took H[{b}, {took[0]}]" if took else "your vector is none of its states"
        raise CheckFailed(f"row {b} has {int(lengths[b])} real tokens and {where}; its last real token is at index "
                          f"lengths[{b}] - 1 = {int(lengths[b]) - 1}")
