"""Claims a chapter makes about trained models, checked in the cell that computes them.

The last bits of a floating-point result depend on the CPU (MKL and ATen pick their code paths
by vendor and instruction set), and training turns those bits into visibly different numbers. A
chapter therefore never asks a reader to trust a stored training result: the cell states its
claim as a check that runs every time the notebook runs, on every machine::

    expect("attention keeps long-input accuracy above 0.95", acc_long > 0.95, acc_long=acc_long)

shows ``checked: attention keeps long-input accuracy above 0.95 (acc_long = 0.982)`` and raises
:class:`ClaimFailed`, with the measured values, when the claim does not hold. In a notebook (the site,
JupyterLab) the claim is displayed as one line with a tick, ``✓ attention keeps long-input accuracy
above 0.95``, and its measured values one click away (an HTML ``details`` element of class ``claim``);
the plain-text form above is what a terminal, a worker process and nbval see. Such cells carry the
nbval tag ``nbval-ignore-output`` (their numbers may move in the last digits; the claim may not);
every other cell is compared exactly.

Two modes. Under ``make test``, the unit tests and nbval (``COURSE_STRICT_CLAIMS=1``, which the Makefile
and ``tests/conftest.py`` set), a claim that does not hold raises :class:`ClaimFailed` and fails the run.
Everywhere else, a student's own run in JupyterLab for one, it shows a box instead, the claim beside
what this run measured and a link to the chapter's evidence page, where the spread over seeds is, and
the notebook runs on: a student on another CPU, or at another seed, is never stopped by a claim.

The Korean notebooks (``make lab-ko``) show their claims in Korean: ``COURSE_CLAIMS_CATALOG`` names a
gettext catalog (``.mo``, made from the Korean edition's catalogs by ``coursekit.i18n``) in which each
claim sentence is looked up; a sentence it lacks (one whose numbers differ in this run) stays English.
"""

from __future__ import annotations

import functools
import gettext
import html
import numbers
import os
import re

import numpy as np
import torch
from IPython.display import display

__all__ = ["Checked", "ClaimFailed", "NotHeld", "expect", "strict"]

STRICT_VARIABLE = "COURSE_STRICT_CLAIMS"
CATALOG_VARIABLE = "COURSE_CLAIMS_CATALOG"


def strict() -> bool:
    """True where a claim that does not hold must raise (``COURSE_STRICT_CLAIMS=1``: tests and CI)."""
    raw = os.environ.get(STRICT_VARIABLE, "").strip()
    if raw not in ("", "0", "1"):
        raise ValueError(f"{STRICT_VARIABLE} must be 1 (a failed claim raises) or 0 (it is shown), got {raw!r}")
    return raw == "1"


@functools.lru_cache(maxsize=4)
def _catalog(path: str) -> gettext.NullTranslations:
    try:
        with open(path, "rb") as file:
            return gettext.GNUTranslations(file)
    except OSError as err:
        raise ValueError(f"{CATALOG_VARIABLE} names a catalog that cannot be read: {path!r} ({err})") from None


def _in_language(claim: str) -> str:
    """``claim`` in the language of the catalog ``COURSE_CLAIMS_CATALOG`` names, if it has the sentence."""
    path = os.environ.get(CATALOG_VARIABLE, "").strip()
    return _catalog(path).gettext(claim) if path else claim


def _evidence_page() -> str | None:
    """The evidence notebook of the chapter this kernel runs, from the notebook path Jupyter gives
    the kernel (``JPY_SESSION_NAME``); None where that is unknown."""
    name = os.path.basename(os.environ.get("JPY_SESSION_NAME", ""))
    found = re.fullmatch(r"(\d\d_[a-z0-9_]+?)(_evidence)?\.ipynb", name)
    return f"{found.group(1)}_evidence.ipynb" if found else None


class ClaimFailed(AssertionError):
    """A claim the chapter makes did not hold in this run; the message gives the measured values."""


def _format(value) -> str:
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            value = value.item()
        elif value.ndim == 1 and value.size <= 12:
            return "[" + ", ".join(_format(v) for v in value.tolist()) + "]"
        else:
            return np.array2string(value, precision=4, separator=", ", threshold=12)
    if isinstance(value, (list, tuple)) and len(value) <= 12 and all(isinstance(v, numbers.Number) for v in value):
        return "[" + ", ".join(_format(v) for v in value) + "]"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.4g}"
    return repr(value)


class Checked:
    """A claim that held, as a notebook shows it: a tick and the sentence, the values one click away."""

    def __init__(self, claim: str, details: str):
        self.claim, self.details = claim, details

    def __repr__(self) -> str:
        return f"checked: {self.claim}" + (f" ({self.details})" if self.details else "")

    __str__ = __repr__

    def _repr_html_(self) -> str:
        values = f'<div class="claim-values">{html.escape(self.details)}</div>' if self.details else ""
        return f'<details class="claim"><summary>✓ {html.escape(self.claim)}</summary>{values}</details>'


class NotHeld:
    """A claim that did not hold in a student's run, as a notebook shows it: a box with the claim, the
    values this run measured, and where the spread over seeds is; the notebook goes on."""

    def __init__(self, claim: str, details: str, evidence: str | None):
        self.claim, self.details, self.evidence = claim, details, evidence

    def __repr__(self) -> str:
        where = self.evidence or "the chapter's evidence page"
        return (f"not held in this run: {self.claim}" + (f" (this run measured {self.details})" if self.details else "")
                + f". The course checks this claim over several seeds; see {where} for the spread. "
                "The notebook goes on.")

    __str__ = __repr__

    def _repr_html_(self) -> str:
        where = (f'<a href="{html.escape(self.evidence)}">the evidence page</a>' if self.evidence
                 else "the chapter's evidence page")
        measured = (f'<p><b>This run measured</b> {html.escape(self.details)}.</p>' if self.details else "")
        # styled inline: JupyterLab shows a student's run without the site's stylesheet
        return ('<div class="claim claim-not-held" role="note" style="border: 2px solid #D55E00; '
                'border-radius: 4px; padding: 0.3em 0.8em; background: #FFF4EC">'
                f'<p><b>The course claims</b> {html.escape(self.claim)}</p>{measured}'
                '<p>It did not hold in this run. Training results move with the seed and, in their last digits, '
                f'with the CPU; {where} shows the spread over seeds. The notebook goes on.</p></div>')


def expect(claim: str, holds, **measured) -> None:
    """Check one claim of the chapter; show ``checked: <claim> (<measured values>)`` or raise.

    ``claim`` is the sentence the prose relies on, ``holds`` the test of it (a bool, or a one-element
    bool tensor or array), and ``measured`` the numbers it rests on, shown in both outcomes. A claim that
    does not hold raises :class:`ClaimFailed` in strict mode (:func:`strict`) and shows a
    :class:`NotHeld` box otherwise.
    """
    if not isinstance(claim, str) or not claim.strip():
        raise ValueError(f"claim must be a non-empty sentence, got {claim!r}")
    if isinstance(holds, (torch.Tensor, np.ndarray)):
        if (holds.size if isinstance(holds, np.ndarray) else holds.numel()) != 1:
            raise ValueError(f"holds must be a single truth value, got an array of shape {tuple(holds.shape)}")
        holds = holds.item()
    if not isinstance(holds, (bool, np.bool_)):
        raise TypeError(f"holds must be a bool (the result of the comparison), got {type(holds).__name__}")
    details = ", ".join(f"{name} = {_format(value)}" for name, value in measured.items())
    claim = _in_language(claim)
    if not holds:
        if strict():
            raise ClaimFailed(f"claim failed: {claim}" + (f" ({details})" if details else ""))
        display(NotHeld(claim, details, _evidence_page()))
        return
    display(Checked(claim, details))      # outside IPython, display() prints the plain text
