"""What every exercise self-check shares: the failure type, the success message, and one rule for
reading a student's answer.

The rule, the same in every check:

* where a tensor is asked for, a torch tensor (any float dtype, on any device), a numpy array or
  nested lists of numbers are all accepted (:func:`as_tensor`); where a number is asked for, a
  Python, numpy or one-element torch number (:func:`as_number`);
* answers are compared with tolerances sized to float32 arithmetic, so that an answer computed in
  float32 passes as well as one computed in float64; wrong answers are off by far more;
* an exception raised by the student's code becomes a :class:`CheckFailed` that quotes the
  student's own line (:func:`call`), never a crash inside the check;
* a message shows enough digits to see the difference between what was got and what was expected.
"""

from __future__ import annotations

import re
import sysconfig
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import torch

__all__ = ["CheckFailed", "ok", "first_wrong", "call", "as_tensor", "as_float", "as_number", "FLOAT32_EPS"]

FLOAT32_EPS = float(torch.finfo(torch.float32).eps)   # 1.19e-7, the spacing of float32 numbers near 1


class CheckFailed(AssertionError):
    """A self-check found a wrong answer; the message says what is wrong."""


def ok(message: str) -> None:
    """Report a passed check: print ``Correct: <message>``.

    A success message confirms without any value the student was asked to find: it says what was
    checked ("both derivatives match autograd"), never the numbers, shapes, indices or formulas that
    are the answer, because it is printed right below the exercise, where the solution is still
    hidden. A message holding a digit is refused with a ValueError: that is a bug in the check, not
    in the student's answer. (A failing check may show values: the student has then tried.)"""
    if re.search(r"\d", message):
        raise ValueError(f"a check's success message must not contain a digit, which could give the answer "
                         f"away: {message!r}")
    print(f"Correct: {message}")


def first_wrong(got: Mapping, want: Mapping, why: Mapping[str, Callable[[], str]]) -> None:
    """For a check of several predictions: raise a CheckFailed at the first key of ``why`` (in its order) at
    which ``got`` differs from ``want``, with the message ``why[key]()``, built only then."""
    for key, message in why.items():
        if got[key] != want[key]:
            raise CheckFailed(message())


# Code that is not the student's: Python itself, installed packages, and this package.
_NOT_THEIRS = tuple(sorted({str(Path(sysconfig.get_paths()[k]).resolve()) for k in ("stdlib", "purelib", "platlib")}
                           | {str(Path(__file__).resolve().parents[1])}))


def _their_line(error: BaseException) -> str:
    """Where in the student's code ``error`` was raised: the innermost frame outside libraries."""
    frames = traceback.extract_tb(error.__traceback__)[1:]                  # [0] is call() itself
    theirs = [f for f in frames if not str(Path(f.filename).resolve()).startswith(_NOT_THEIRS)]
    if not (theirs or frames):
        return ""
    frame = (theirs or frames)[-1]
    return f"\n  at {frame.filename}, line {frame.lineno}, in {frame.name}" + (f": {frame.line}" if frame.line else "")


def call(fn, *args):
    """``fn(*args)``, the student's function; an exception it raises becomes a CheckFailed."""
    if not callable(fn):
        raise CheckFailed(f"expected a function, got {type(fn).__name__}")
    try:
        return fn(*args)
    except Exception as error:  # noqa: BLE001 - the student's code may fail in any way
        raise CheckFailed(f"your function raised {type(error).__name__}: {error}{_their_line(error)}") from None


def as_tensor(answer, what: str) -> torch.Tensor:
    """``answer`` as a CPU tensor of its own dtype: a torch tensor, a numpy array or number, or nested
    lists or tuples of numbers. Anything else is a CheckFailed naming what was got."""
    if isinstance(answer, torch.Tensor):
        t = answer.detach().cpu()
    else:
        try:
            array = np.asarray(answer)
        except (TypeError, ValueError):                                       # ragged lists, odd objects
            array = None
        if array is None or not (array.dtype == bool or np.issubdtype(array.dtype, np.number)):
            hint = " (did your function return its result?)" if answer is None else ""
            shape = " that is not a rectangular array of numbers" if isinstance(answer, (list, tuple)) else ""
            raise CheckFailed(f"expected {what} as a tensor, numpy array or nested lists of numbers, got "
                              f"{type(answer).__name__}{shape}{hint}")
        t = torch.from_numpy(np.array(array))                                  # a copy: never the student's memory
    if t.is_complex():
        raise CheckFailed(f"expected {what} as real numbers, got complex dtype {t.dtype}")
    return t


def as_float(answer, what: str) -> torch.Tensor:
    """``answer`` as a float64 CPU tensor (see :func:`as_tensor`); booleans are not numbers here."""
    t = as_tensor(answer, what)
    if t.dtype == torch.bool:
        raise CheckFailed(f"expected {what} as numbers, got booleans")
    return t.to(torch.float64)


def as_number(answer, what: str) -> float:
    """``answer`` as a Python float: a Python, numpy or one-element torch number."""
    if isinstance(answer, str) or isinstance(answer, bool):
        raise CheckFailed(f"expected {what} as a number, got {type(answer).__name__} {answer!r}")
    try:
        t = as_float(answer, what)
    except CheckFailed:
        raise CheckFailed(f"expected {what} as a number, got {type(answer).__name__}") from None
    if t.numel() != 1:
        raise CheckFailed(f"expected {what} as one number, got {t.numel()} numbers of shape {tuple(t.shape)}")
    return float(t.reshape(()))
