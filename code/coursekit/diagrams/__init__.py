"""The course's drawn diagrams: SVG schematics with one visual language (see ``style`` and book/authoring.md).

Each chapter's diagrams live in ``chNN.py`` as functions that return a matplotlib figure, listed in that
module's ``DIAGRAMS`` (file name -> function) with an alt text for each in its ``ALT``; ``authoring.py``
draws the legend of the visual language for book/authoring.md. ``python -m
coursekit.diagrams`` (``make diagrams``) writes them all to ``book/diagrams/<name>.svg``; ``--check``
redraws them in memory and fails, naming each file, when a committed SVG is missing, differs or has no
source.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import matplotlib

from . import authoring, style
from .draw import normalise, to_svg

__all__ = ["DIAGRAMS", "ALT", "render", "stale", "write"]

# Every chapter module (ch01, ch02, ...) is found by its name, so adding a chapter's drawings is adding its file.
_CHAPTERS = [importlib.import_module(f"{__name__}.{m.name}")
             for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name) if re.fullmatch(r"ch\d\d", m.name)]
DIAGRAMS = {name: draw for module in [*_CHAPTERS, authoring] for name, draw in module.DIAGRAMS.items()}
ALT = {name: alt for module in [*_CHAPTERS, authoring] for name, alt in module.ALT.items()}


def render(name: str) -> str:
    """The SVG text of the diagram ``name`` (e.g. ``"ch01_encoder_decoder"``)."""
    if name not in DIAGRAMS:
        raise ValueError(f"no diagram named {name!r}; known: {', '.join(sorted(DIAGRAMS))}")
    with matplotlib.rc_context():
        matplotlib.rcdefaults()  # whatever the caller set (a notebook's style, say) does not leak in
        matplotlib.rcParams.update(style.RC)
        return to_svg(DIAGRAMS[name]())


def write(out: Path) -> list[Path]:
    """Write every diagram to ``out/<name>.svg``; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in DIAGRAMS:
        path = out / f"{name}.svg"
        path.write_text(render(name), encoding="utf-8")
        paths.append(path)
    return paths


def stale(out: Path) -> list[str]:
    """One line per SVG in ``out`` that is missing, differs from a fresh drawing (numbers compared to two
    decimals) or has no source; empty when everything is up to date."""
    problems = []
    for name in DIAGRAMS:
        path = out / f"{name}.svg"
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif normalise(path.read_text(encoding="utf-8")) != normalise(render(name)):
            problems.append(f"{path}: differs from its source")
    for path in sorted(out.glob("*.svg")):
        if path.stem not in DIAGRAMS:
            problems.append(f"{path}: no diagram of this name in coursekit.diagrams")
    return problems
