"""The course's drawn diagrams: SVG schematics with one visual language (see ``style`` and book/authoring.md).

Each chapter's diagrams live in ``chNN.py`` as functions that return a matplotlib figure, listed in that
module's ``DIAGRAMS`` (file name -> function) with an alt text for each in its ``ALT``; ``authoring.py``
draws the legend of the visual language for book/authoring.md. ``python -m
coursekit.diagrams`` (``make diagrams``) writes them all to ``book/diagrams/<name>.svg``; ``--check``
redraws them in memory and fails, naming each file, when a committed SVG is missing, differs or has no
source.

Each translated module (``book/translations.yml``, ``diagrams``) also has a twin in
``book/diagrams/<language>/<name>.svg``, drawn by the same function with every word taken from the
catalog ``book/locales/<language>/LC_MESSAGES/diagrams/<module>.po`` (:func:`messages` lists the words)
and carrying the glyphs of the Korean font it needs (:func:`draw.embed_font`).
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import re
from pathlib import Path

import matplotlib

from ..fonts import korean_font
from . import authoring, style
from .draw import embed_font, normalise, to_svg, translating

__all__ = ["DIAGRAMS", "ALT", "MODULE", "messages", "render", "stale", "twins", "write"]

# Every chapter module (ch01, ch02, ...) is found by its name, so adding a chapter's drawings is adding its file.
_CHAPTERS = [importlib.import_module(f"{__name__}.{m.name}")
             for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name) if re.fullmatch(r"ch\d\d", m.name)]
DIAGRAMS = {name: draw for module in [*_CHAPTERS, authoring] for name, draw in module.DIAGRAMS.items()}
ALT = {name: alt for module in [*_CHAPTERS, authoring] for name, alt in module.ALT.items()}
MODULE = {name: module.__name__.rsplit(".", 1)[1] for module in [*_CHAPTERS, authoring] for name in module.DIAGRAMS}

# The Korean font of the twins: NanumGothic (coursekit.fonts).
HANGUL = "[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]"
KOREAN_FAMILY = "NanumGothic"


def _draw(name: str, translate, family: list[str]) -> str:
    with matplotlib.rc_context(), translating(translate):
        matplotlib.rcdefaults()  # whatever the caller set (a notebook's style, say) does not leak in
        matplotlib.rcParams.update(style.RC)
        if family != style.FONT_FAMILY:
            # measured with DejaVu Sans and, glyph by glyph where it has none, NanumGothic (the SVG names the
            # whole stack; matplotlib knows only these two)
            matplotlib.rcParams["font.family"] = [style.FONT_FAMILY[0], KOREAN_FAMILY]
        return to_svg(DIAGRAMS[name](), family)


def render(name: str, words: dict[str, str] | None = None) -> str:
    """The SVG text of the diagram ``name`` (e.g. ``"ch01_encoder_decoder"``); with ``words`` (English ->
    Korean, a catalog) its Korean twin, measured and shown with NanumGothic for the Hangul."""
    if name not in DIAGRAMS:
        raise ValueError(f"no diagram named {name!r}; known: {', '.join(sorted(DIAGRAMS))}")
    if words is None:
        return _draw(name, lambda s: s, style.FONT_FAMILY)
    from matplotlib import font_manager
    font = korean_font()
    if KOREAN_FAMILY not in {f.name for f in font_manager.fontManager.ttflist}:
        for face in (font, korean_font(bold=True)):   # regular and bold
            font_manager.fontManager.addfont(str(face))
    family = [*style.FONT_FAMILY[:-1], KOREAN_FAMILY, style.FONT_FAMILY[-1]]
    # NanumGothicBold says weight 600, which matplotlib takes for bold, with a warning on each lookup
    quiet = logging.getLogger("matplotlib.font_manager")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        svg = _draw(name, lambda s: words.get(s, s), family)
    finally:
        quiet.setLevel(level)
    return embed_font(svg, font, KOREAN_FAMILY, HANGUL)


def messages() -> dict[str, list[str]]:
    """The words each diagram module draws, in drawing order, each once, except those with nothing to
    translate (a symbol, a formula): ``{"ch01": [...], ...}``, the templates of the diagram catalogs."""
    from ..i18n import translatable
    found: dict[str, list[str]] = {}
    def collect(words: list[str]):
        def record(s: str) -> str:
            if translatable(s) and s not in words:
                words.append(s)
            return s
        return record

    for name in DIAGRAMS:
        _draw(name, collect(found.setdefault(MODULE[name], [])), style.FONT_FAMILY)
    return found


def twins(language: str) -> dict[str, dict[str, str]]:
    """For each diagram with a translated module: its catalog (English -> translation)."""
    from ..i18n import catalog, translations
    modules = translations(Path("."), language)["diagrams"]
    return {name: catalog(f"diagrams/{MODULE[name]}", Path("."), language)
            for name in DIAGRAMS if MODULE[name] in modules}


def write(out: Path, language: str = "ko") -> list[Path]:
    """Write every diagram to ``out/<name>.svg`` and each translated one's twin to ``out/<language>/``;
    return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in DIAGRAMS:
        path = out / f"{name}.svg"
        path.write_text(render(name), encoding="utf-8")
        paths.append(path)
    for name, words in twins(language).items():
        path = out / language / f"{name}.svg"
        path.parent.mkdir(exist_ok=True)
        path.write_text(render(name, words), encoding="utf-8")
        paths.append(path)
    return paths


def stale(out: Path, language: str = "ko") -> list[str]:
    """One line per SVG in ``out`` (and its ``language`` twins) that is missing, differs from a fresh
    drawing (numbers compared to two decimals) or has no source; empty when everything is up to date."""
    problems = []
    catalogs = twins(language)
    expected = [(out / f"{name}.svg", name, None) for name in DIAGRAMS]
    expected += [(out / language / f"{name}.svg", name, words) for name, words in catalogs.items()]
    for path, name, words in expected:
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif normalise(path.read_text(encoding="utf-8")) != normalise(render(name, words)):
            problems.append(f"{path}: differs from its source" + (" or its catalog" if words is not None else ""))
    for path in sorted(out.glob("*.svg")):
        if path.stem not in DIAGRAMS:
            problems.append(f"{path}: no diagram of this name in coursekit.diagrams")
    for path in sorted((out / language).glob("*.svg")):
        if path.stem not in catalogs:
            problems.append(f"{path}: no translated diagram of this name (book/translations.yml)")
    return problems
