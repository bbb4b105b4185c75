"""A few drawing helpers on top of matplotlib, in pixel coordinates (x right, y down).

``canvas(w, h)`` gives a figure on the course's card; ``box``, ``arrow``, ``text`` and ``cells`` (a
matrix as a grid of cells, a vector as one row or column of it, with its shape label such as
``n × d``) draw on it; ``to_svg(fig)`` returns the SVG text, deterministic and with text as text.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from . import style

_PT = 72.0  # matplotlib writes SVG in points at 72 per inch; we make one point one pixel


def canvas(width: float, height: float):
    """A figure of ``width`` x ``height`` px with the opaque light card; returns ``(fig, ax)``. Draw inside
    ``matplotlib.rc_context(style.RC)`` (``coursekit.diagrams.render`` does). No pyplot: nothing global changes."""
    if width > style.MAX_WIDTH:
        raise ValueError(f"a diagram is at most {style.MAX_WIDTH} px wide, got {width}")
    fig = Figure(figsize=(width / _PT, height / _PT), dpi=_PT)
    FigureCanvasAgg(fig)  # a renderer to measure text with
    fig.patch.set_alpha(0)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.set_axis_off()
    card = FancyBboxPatch((1, 1), width - 2, height - 2, boxstyle=f"round,pad=0,rounding_size={style.CARD_RADIUS}",
                          facecolor=style.CARD, edgecolor=style.CARD_EDGE, linewidth=1, clip_on=False, zorder=-10)
    card.set_gid("card")
    ax.add_patch(card)
    return fig, ax


_TRANSLATORS: list[Callable[[str], str]] = [lambda s: s]


@contextmanager
def translating(translate: Callable[[str], str]) -> Iterator[None]:
    """Within the block every word :func:`text` draws first goes through ``translate`` (the English in,
    its translation out): how a diagram's Korean twin is drawn from the same source, and how
    ``coursekit.diagrams.messages`` collects the words to translate."""
    _TRANSLATORS.append(translate)
    try:
        yield
    finally:
        _TRANSLATORS.pop()


_MATH_PART = re.compile(r"(\$[^$]+\$)")


def _shape_math(shape: str) -> str:
    """A shape label as mathtext: ``"n × d"`` becomes ``$n \times d$``; mathtext passes through."""
    return shape if shape.startswith("$") else "$" + shape.replace("×", r"\times") + "$"


def text(ax, x, y, s, size=None, color=style.INK, ha="center", va="center", shape=None, **kw):
    """Text at ``(x, y)``. Parts in ``$...$`` are mathtext (italic symbols, real subscripts) set at
    :data:`style.MATH`, the rest at ``size`` (default :data:`style.TEXT`), on one baseline. ``shape`` (e.g.
    ``"n × d"``, or mathtext such as ``r"$T_q \times d_k$"``) follows as a shape label, in mathtext, muted."""
    size = size or style.TEXT
    s = _TRANSLATORS[-1](s)
    parts = [(p, style.MATH if p.startswith("$") else size, color, {}) for p in _MATH_PART.split(s) if p]
    if shape:
        parts.append(("  " + _shape_math(shape), style.MATH, style.MUTED, {}))
    if len(parts) == 1:
        return ax.text(x, y, s, fontsize=parts[0][1], color=color, ha=ha, va=va, clip_on=False, **kw)
    # a line mixing words and symbols: set the pieces one after another on a common baseline
    base = y + (0.36 * size if va == "center" else 0)
    renderer = ax.figure.canvas.get_renderer()
    pieces = [ax.text(0, base, p, fontsize=sz, color=c, ha="left", va="baseline", clip_on=False, **{**kw, **extra})
              for p, sz, c, extra in parts]
    widths = [t.get_window_extent(renderer).width for t in pieces]
    x0 = {"left": x, "center": x - sum(widths) / 2, "right": x - sum(widths)}[ha]
    for t, w in zip(pieces, widths):
        # SVG drops a text's leading and trailing spaces: keep them as offsets instead
        full = t.get_text()
        t.set_text(full.lstrip())
        lead = w - t.get_window_extent(renderer).width
        t.set_text(full.strip())
        t.set_x(x0 + lead)
        x0 += w
    return pieces


def box(ax, x, y, w, h, label=None, color=style.NEUTRAL, fill=None, size=style.TEXT, radius=6, lw=1.5, **kw):
    """A rounded box with its top-left corner at ``(x, y)``, edged in the role ``color``, filled with
    its :data:`style.BOX_TINT` (or ``fill``), and an optional centred ``label``."""
    patch = FancyBboxPatch((x, y), w, h, boxstyle=f"round,pad=0,rounding_size={radius}",
                           facecolor=fill or style.tint(color, style.BOX_TINT), edgecolor=style.dark(color, 3.0),
                           linewidth=lw, clip_on=False, **kw)
    ax.add_patch(patch)
    if label is not None:
        text(ax, x + w / 2, y + h / 2, label, size=size)
    return patch


def arrow(ax, start, end, color=style.INK, lw=1.6, rad=0.0, head=10, line_only=False, shrink=0, **kw):
    """An arrow (or, with ``line_only``, a plain line) from ``start`` to ``end``, curved by ``rad``
    (matplotlib's arc3: the bend as a fraction of the length; positive bends to the left of travel on screen)."""
    patch = FancyArrowPatch(start, end, arrowstyle="-" if line_only else "-|>,head_length=0.9,head_width=0.45",
                            mutation_scale=head, connectionstyle=f"arc3,rad={-rad}", color=color, linewidth=lw,
                            shrinkA=shrink, shrinkB=shrink, clip_on=False, joinstyle="miter", capstyle="butt", **kw)
    ax.add_patch(patch)
    return patch


def cells(ax, x, y, rows, cols, color, size=12, shape=None, shape_side="below", lw=1.0, fill=None, values=None):
    """A matrix of ``rows`` x ``cols`` cells of ``size`` px, top-left at ``(x, y)``, filled with the role
    ``color`` (mixed with white by :data:`style.CELL_TINT`, or ``fill``) and outlined in its dark shade; a
    vector is one row (``rows=1``) or one column.
    ``values`` (rows x cols numbers in [0, 1], e.g. attention weights) fill each cell from white (0) to the
    full colour (1). ``shape`` (e.g. ``"n × d"``) is written below, or to the ``"right"``/``"left"``/``"above"``.
    Returns the bounding box ``(x0, y0, x1, y1)``."""
    edge = style.dark(color, 3.0)
    for r in range(rows):
        for c in range(cols):
            face = fill or style.tint(color, style.CELL_TINT)
            if values is not None:
                face = style.tint(color, 1 - values[r][c])
            ax.add_patch(Rectangle((x + c * size, y + r * size), size, size, facecolor=face, edgecolor=edge,
                                   linewidth=lw, clip_on=False))
    x1, y1 = x + cols * size, y + rows * size
    if shape:
        where = {"below": ((x + x1) / 2, y1 + 4, "center", "top"), "above": ((x + x1) / 2, y - 4, "center", "bottom"),
                 "right": (x1 + 6, (y + y1) / 2, "left", "center"), "left": (x - 6, (y + y1) / 2, "right", "center")}
        tx, ty, ha, va = where[shape_side]
        text(ax, tx, ty, _shape_math(shape), color=style.MUTED, ha=ha, va=va)
    return x, y, x1, y1


_NUMBER = re.compile(r"-?\d+\.\d+")
_FAMILY = "font-family: " + ", ".join(f"'{f}'" if " " in f else f for f in style.FONT_FAMILY)


def to_svg(fig, family: list[str] | None = None) -> str:
    """The figure as SVG text: width and height in px (one unit one pixel), every text in the course's font
    stack (``family``, default :data:`style.FONT_FAMILY`; mathtext glyphs name only DejaVu Sans), no date,
    no creator."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, transparent=True)
    svg = buf.getvalue()
    svg = re.sub(r'<svg ([^>]*?)width="([\d.]+)pt" height="([\d.]+)pt"',
                 lambda m: f'<svg {m.group(1)}width="{float(m.group(2)):g}px" height="{float(m.group(3)):g}px"',
                 svg, count=1)
    stack = _FAMILY if family is None else "font-family: " + ", ".join(f"'{f}'" if " " in f else f for f in family)
    svg = re.sub(r"font-family: [^;\"]+", stack, svg)
    return svg


_TEXT_CONTENT = re.compile(r"<text\b[^>]*>(.*?)</text>", re.S)


def embed_font(svg: str, font_path, family: str, pattern: str) -> str:
    """``svg`` carrying, as a WOFF font in a data URL, the glyphs of ``font_path`` for every character of
    its text that matches ``pattern`` (a regular-expression class such as Hangul syllables): an SVG shown
    through an ``<img>`` can use no font of the page, so a Korean twin brings its own, a few kilobytes,
    and reads the same offline in a browser with no Korean font. Unchanged if no character matches."""
    import logging

    from fontTools import subset
    from fontTools.ttLib import TTFont

    logging.getLogger("fontTools.subset").setLevel(logging.ERROR)   # it names each table it drops

    wanted = sorted({ch for content in _TEXT_CONTENT.findall(svg) for ch in re.findall(pattern, content)})
    if not wanted:
        return svg
    font = TTFont(str(font_path), recalcTimestamp=False)
    options = subset.Options()
    options.flavor = "woff"
    options.name_IDs, options.hinting, options.notdef_outline = [1, 2], False, True
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(wanted))
    subsetter.subset(font)
    buf = io.BytesIO()
    font.flavor = "woff"
    font.save(buf, reorderTables=True)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    face = (f"<style>@font-face {{ font-family: '{family}'; "
            f"src: url(data:font/woff;base64,{data}) format('woff'); }}</style>")
    return re.sub(r"(<svg\b[^>]*>)", lambda m: m.group(1) + "\n" + face, svg, count=1)


def normalise(svg: str) -> str:
    """``svg`` with every decimal number rounded to 2 places, so that last-bit differences between CPUs
    in path coordinates do not count as a change."""
    return _NUMBER.sub(lambda m: f"{float(m.group()):.2f}", svg)
