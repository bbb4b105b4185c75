"""Argument checks shared by the package's public functions, each called in one line at the top.

Every check raises ``TypeError`` (wrong kind of object or dtype) or ``ValueError`` (wrong shape,
range or value) with a message that names the argument and what was expected, so that bad input
never reaches torch and comes back as NaN, a wrong shape or an error from deep inside a kernel.
The table in ``book/bad_input.md`` lists what each public function guarantees.
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

__all__ = ["positive_int", "check_float_tensor", "check_steps", "check_lengths", "check_token_ids", "check_mask",
           "check_bool_mask", "broadcasts_to", "check_matches_module", "check_no_nan", "first_index",
           "check_source", "check_decoder_input", "check_dropout", "check_batch_size"]


def positive_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``; Python and numpy integers pass, bools and floats do not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        kind = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    return int(value)


def check_float_tensor(name: str, x, min_dims: int = 0) -> None:
    """``x``: a floating-point torch.Tensor with at least ``min_dims`` dims."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < min_dims:
        raise ValueError(f"{name} must have at least {min_dims} dim{'s' * (min_dims != 1)}, got shape "
                         f"{tuple(x.shape)}")


def check_steps(steps) -> int:
    """The number of training steps: a positive int (0 or fewer would return an untrained model)."""
    return positive_int("steps (the number of training batches)", steps)


def check_batch_size(batch_size, available: int, what: str) -> int:
    """A mini-batch drawn without replacement from ``available`` examples (``what``, e.g. "training images"):
    a positive int, at most ``available``; returns it."""
    batch_size = positive_int("batch_size", batch_size)
    if batch_size > available:
        raise ValueError(f"batch_size={batch_size} exceeds the {available} {what}")
    return batch_size


def first_index(bad: torch.Tensor) -> tuple[int, ...]:
    """The index of the first True entry of a boolean tensor, for error messages."""
    return tuple(int(i) for i in bad.nonzero()[0])


def check_lengths(lengths, batch: int, max_len: int, minimum: int = 1) -> None:
    """``lengths``: a 1-D integer tensor of ``batch`` entries, each in [minimum, max_len]."""
    if not isinstance(lengths, torch.Tensor):
        raise TypeError(f"lengths must be a torch.Tensor of integers, got {type(lengths).__name__} "
                        f"(convert it with torch.as_tensor(lengths))")
    if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
        raise TypeError(f"lengths must hold integers, got dtype {lengths.dtype}")
    if lengths.shape != (batch,):
        raise ValueError(f"lengths must have shape ({batch},), got {tuple(lengths.shape)}")
    if batch and (int(lengths.min()) < minimum or int(lengths.max()) > max_len):
        raise ValueError(f"lengths must lie in [{minimum}, {max_len}] (the padded length), got min "
                         f"{int(lengths.min())} and max {int(lengths.max())}")


def check_token_ids(name: str, ids, vocab_size: int | None = None, batch: int | None = None,
                    empty_ok: bool = False) -> None:
    """``ids``: a (batch, length) int64 tensor (``batch`` rows, if given; not empty unless ``empty_ok``)
    with values in [0, vocab_size)."""
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.dtype != torch.long:
        got = f"shape {tuple(ids.shape)} and dtype {ids.dtype}" if isinstance(ids, torch.Tensor) \
            else type(ids).__name__
        raise ValueError(f"{name} must be a (batch, length) tensor of token ids (int64), got {got}")
    if ids.numel() == 0 and not empty_ok:
        raise ValueError(f"{name} is empty (shape {tuple(ids.shape)}): a batch needs at least one row and one token")
    if batch is not None and ids.shape[0] != batch:
        raise ValueError(f"{name} must have one row per example ({batch}), got shape {tuple(ids.shape)}")
    if vocab_size is not None and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        bad = first_index((ids < 0) | (ids >= vocab_size))
        raise ValueError(f"{name} holds token ids outside the vocabulary [0, {vocab_size}): {int(ids[bad])} "
                         f"at {bad}")


def check_source(src: torch.Tensor, lengths: torch.Tensor, vocab_size: int | None = None) -> None:
    """Raise ValueError (TypeError for lengths that are not an integer tensor) unless ``src`` is a
    non-empty (B, S) int64 tensor of token ids in [0, vocab_size) and ``lengths`` (B,) lies in [1, S]."""
    check_token_ids("src", src, vocab_size)
    check_lengths(lengths, src.shape[0], src.shape[1])


def check_decoder_input(tgt_in: torch.Tensor, source: torch.Tensor, vocab_size: int) -> None:
    """Raise ValueError unless ``tgt_in`` is a (B, T) int64 tensor of ids in [0, vocab_size), with the
    batch size B of ``source`` (the source ids or the encoder's memory)."""
    check_token_ids("tgt_in", tgt_in, vocab_size, batch=source.shape[0])


def check_bool_mask(mask) -> None:
    """``mask``: a boolean tensor (True = may attend)."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a boolean tensor (True = may attend), got {got}")


def broadcasts_to(shape: tuple[int, ...], target: tuple[int, ...]) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` without growing it."""
    try:
        return torch.broadcast_shapes(shape, target) == torch.Size(target)
    except RuntimeError:
        return False


def check_mask(mask, shape: tuple[int, ...], what: str = "the scores") -> None:
    """``mask``: None, or a boolean tensor that broadcasts to ``shape`` without growing it."""
    if mask is None:
        return
    check_bool_mask(mask)
    if not broadcasts_to(mask.shape, shape):
        raise ValueError(f"mask of shape {tuple(mask.shape)} is not broadcastable to {what} "
                         f"shape (..., T_q, T_k) = {tuple(shape)}")


def _first_float_parameter(module: nn.Module) -> torch.Tensor | None:
    return next((p for p in module.parameters() if p.is_floating_point()), None)


def check_matches_module(module: nn.Module, **inputs: torch.Tensor) -> None:
    """Each floating-point input has the dtype and device of ``module``'s parameters.

    Without this, float64 data in a float32 model fails inside a matrix product with "mat1 and
    mat2 must have the same dtype"; the package never casts silently.
    """
    param = _first_float_parameter(module)
    if param is None:
        return
    for name, x in inputs.items():
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            continue
        if x.dtype != param.dtype:
            raise TypeError(f"{name} has dtype {x.dtype} but {type(module).__name__}'s parameters are {param.dtype}: "
                            f"convert the input ({name}.to({param.dtype})) or the model (model.to({x.dtype}))")
        if x.device != param.device:
            raise ValueError(f"{name} is on {x.device} but {type(module).__name__}'s parameters are on "
                             f"{param.device}: move one of them ({name}.to(device) or model.to(device))")


def check_no_nan(name: str, x: torch.Tensor, hint: str) -> None:
    """Raise ValueError if ``x`` holds a NaN, naming the first one and ``hint`` (its likely cause)."""
    if not torch.isnan(x.detach().sum()):              # fast path: a NaN anywhere makes the sum NaN
        return
    bad = torch.isnan(x)
    if bad.any():
        raise ValueError(f"{name} would be NaN ({int(bad.sum())} entries, the first at index {first_index(bad)}): "
                         f"{hint}")


def check_dropout(name: str, p) -> float:
    """``p``: a dropout probability, a real number in [0, 1) (at 1 every weight would be dropped and the
    survivors' factor 1 / (1 - p) would divide by zero)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= float(p) < 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1), got {p!r}")
    return float(p)


def check_choice(name: str, value, choices, hint: str = ""):
    """``value`` must be one of ``choices`` (names: a tuple, set or the keys of a dict); returns it.
    ``hint`` follows the list of choices in the message, e.g. what the choice decides."""
    options = sorted(choices)
    if isinstance(value, bool) or value not in options:
        raise ValueError(f"{name} must be one of {options}{hint}, got {value!r}")
    return value
