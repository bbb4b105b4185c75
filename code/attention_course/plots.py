"""Alignment maps as matplotlib heat maps, with a font that has Hangul where a label needs it.

    fig, ax = plt.subplots()
    alignment_map(ax, weights, "Thursday, March 7, 2024", "2024년 3월 7일 목요일")

matplotlib's default font (DejaVu Sans) has no Hangul. The wheel ``koreanize-matplotlib`` ships
NanumGothic (SIL Open Font License); :func:`hangul_font` registers that one file with matplotlib's
font manager and returns it as a ``FontProperties``, without importing ``koreanize_matplotlib``
(whose import rewrites the global rcParams of every later figure). :func:`alignment_map` uses it only
for labels that contain Hangul; every other label keeps the figure's font.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
from matplotlib import font_manager

__all__ = ["hangul_font", "has_hangul", "alignment_map"]

_FONT_PACKAGE = "koreanize_matplotlib"
_FONT_FILE = ("fonts", "NanumGothic.ttf")


def has_hangul(text: str) -> bool:
    """Whether ``text`` holds a Hangul syllable or jamo."""
    return any("\uac00" <= ch <= "\ud7a3" or "\u1100" <= ch <= "\u11ff" or "\u3130" <= ch <= "\u318f"
               for ch in text)


@lru_cache(maxsize=1)
def _font_path() -> Path:
    spec = importlib.util.find_spec(_FONT_PACKAGE)          # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"no font with Hangul: the package {_FONT_PACKAGE.replace('_', '-')} (which ships "
                           "NanumGothic) is not installed; install the course's requirements")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*_FONT_FILE)
    if not path.is_file():
        raise RuntimeError(f"no font with Hangul: {path} is missing from {_FONT_PACKAGE}")
    return path


@lru_cache(maxsize=1)
def hangul_font() -> font_manager.FontProperties:
    """NanumGothic, registered with matplotlib's font manager (once), as a ``FontProperties`` to pass to
    the labels that hold Hangul. Raises RuntimeError, saying what to install, if the font is missing."""
    path = _font_path()
    font_manager.fontManager.addfont(str(path))
    return font_manager.FontProperties(fname=str(path))


def _labels(tokens: Sequence[str]) -> list[str]:
    return ["␣" if t == " " else t for t in tokens]


def alignment_map(ax, weights, inputs: Sequence[str], outputs: Sequence[str], *, fontsize: float = 10,
                  xlabel: str = "input characters", ylabel: str = "output characters", title: str | None = None):
    """Draw ``weights`` (outputs x inputs, each row summing to 1) on ``ax`` as a grey heat map from 0
    (white) to 1 (black), one column per input token and one row per output token, labelled with the
    tokens (a space shown as ``␣``); tick labels with Hangul are set in :func:`hangul_font`."""
    w = np.asarray(weights.detach() if hasattr(weights, "detach") else weights, dtype=float)
    if w.ndim != 2 or w.shape != (len(outputs), len(inputs)):
        raise ValueError(f"weights must be (len(outputs), len(inputs)) = ({len(outputs)}, {len(inputs)}), "
                         f"got {w.shape}")
    ax.imshow(w, cmap="Greys", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(inputs)), _labels(inputs), fontsize=fontsize)
    ax.set_yticks(range(len(outputs)), _labels(outputs), fontsize=fontsize)
    for labels in (ax.get_xticklabels(), ax.get_yticklabels()):
        for label in labels:
            if has_hangul(label.get_text()):
                label.set_fontproperties(hangul_font())
                label.set_fontsize(fontsize)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title, fontproperties=hangul_font() if has_hangul(title) else None)
    ax.grid(False)
    return ax
