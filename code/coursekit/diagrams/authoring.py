"""The visual language on one card, for the authoring page (book/authoring.md)."""

from __future__ import annotations

from . import style as s
from .draw import arrow, box, canvas, cells, text


def visual_language():
    """The role colours, how matrices, vectors and weights are drawn, and the line styles."""
    W, H = 640, 372
    fig, ax = canvas(W, H)

    # one colour per role: as cells (left) and as a box (right)
    roles = [("encoder", "states", s.ENCODER), ("decoder", "states", s.DECODER), ("queries", "", s.QUERY),
             ("keys", "", s.KEY), ("values", "", s.VALUE), ("attention", "weights", s.WEIGHT),
             ("gradients", "", s.GRADIENT), ("neutral", "", s.NEUTRAL)]
    for i, (first, second, colour) in enumerate(roles):
        cx = 24 + 74 * i + 37
        cells(ax, cx - 27, 22, 1, 3, colour, size=14)
        box(ax, cx + 18, 20, 14, 18, color=colour, radius=3, lw=1.2)
        text(ax, cx, 56, first, color=s.dark(colour))
        if second:
            text(ax, cx, 74, second, color=s.dark(colour))

    # shapes: a matrix stacks vectors as rows; a vector is one row; weights shade by size
    y0 = 128
    text(ax, 24, y0 - 16, "matrices and vectors, with their shapes as on the notation page", ha="left",
         va="baseline", color=s.MUTED)
    cells(ax, 40, y0 + 24, 5, 4, s.ENCODER, size=14, shape="n × d")
    text(ax, 68, y0 + 8, "$H$")
    text(ax, 114, y0 + 48, "one row", ha="left", color=s.MUTED)
    text(ax, 114, y0 + 66, "per position", ha="left", color=s.MUTED)
    cells(ax, 222, y0 + 52, 1, 4, s.ENCODER, size=14, shape="1 × d")
    text(ax, 250, y0 + 34, "$h_n$")
    for x, sym, colour, rows, shape in [(370, "$Q$", s.QUERY, 3, r"$T_q \times d_k$"),
                                        (460, "$K$", s.KEY, 5, r"$T_k \times d_k$"),
                                        (550, "$V$", s.VALUE, 5, r"$T_k \times d_v$")]:
        cells(ax, x, y0 + 24, rows, 3, colour, size=12, shape=shape)
        text(ax, x + 18, y0 + 8, sym)

    # weights, and the lines
    y1 = 300
    cells(ax, 40, y1 - 7, 1, 5, s.WEIGHT, size=14, values=[[0.05, 0.15, 0.6, 0.15, 0.05]], shape="T_k",
          shape_side="right")
    text(ax, 40, y1 - 26, "$w_t$: shade = weight", ha="left")
    arrow(ax, (228, y1), (280, y1))
    text(ax, 288, y1, "forward", ha="left")
    arrow(ax, (420, y1), (368, y1), color=s.GRADIENT, lw=2)
    text(ax, 428, y1, "gradients", ha="left", color=s.dark(s.GRADIENT))
    box(ax, 530, y1 - 13, 36, 26, color=s.MUTED, fill="none", lw=1.2, radius=6, linestyle=(0, (4, 3)))
    text(ax, 574, y1, "unused", ha="left", color=s.MUTED)
    text(ax, 24, y1 + 50, f"words {s.TEXT} px, symbols and shapes {s.MATH} px, nothing below {s.SMALL} px, "
                          f"at most {s.MAX_WIDTH} px wide", ha="left", va="baseline", color=s.MUTED)
    return fig


DIAGRAMS = {"authoring_visual_language": visual_language}

ALT = {
    "authoring_visual_language": (
        "The course's visual language: one colour each for encoder states (blue), decoder states (orange), queries "
        "(yellow), keys (sky blue), values (green), attention weights (purple), gradients (vermillion) and neutral "
        "shapes (grey), shown as cells and as a box. Below, a matrix H drawn as a grid with one row per position "
        "and its shape n × d, a vector hn of shape 1 × d, the grids Q, K and V with their shapes, a row of "
        "attention weights shaded by size, and the line styles: black forward arrows, vermillion gradient arrows "
        "and a dashed grey outline for what is not used."),
}
