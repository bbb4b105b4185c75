"""Chapter 8's diagrams: convolution as attention (one head per kernel offset), the Set Transformer's blocks,
and the forecaster whose queries are the forecast horizons."""

from __future__ import annotations

from . import style as s
from .draw import arrow, box, canvas, cells, text

OFFSETS = [(di, dj) for di in (-1, 0, 1) for dj in (-1, 0, 1)]


def conv_heads():
    """A 3 x 3 convolution as nine heads: head (di, dj) puts all its weight on the pixel at that offset."""
    W, H = 640, 290
    fig, ax = canvas(W, H)

    # left: the image around the query pixel p, the 3 x 3 keys a convolution reads
    cs, n = 26, 5
    x0, y0 = 28, 92
    cells(ax, x0, y0, n, n, s.NEUTRAL, size=cs)
    cells(ax, x0 + cs, y0 + cs, 3, 3, s.KEY, size=cs)
    cells(ax, x0 + 2 * cs, y0 + 2 * cs, 1, 1, s.QUERY, size=cs, fill=s.QUERY)
    text(ax, x0 + 2.5 * cs, y0 + 2.5 * cs, "$p$")
    text(ax, x0 + n * cs / 2, y0 - 40, "image $X$, query pixel $p$")
    text(ax, x0 + n * cs / 2, y0 - 18, "keys $p + \\Delta$ around it", color=s.dark(s.KEY))
    text(ax, x0 + n * cs / 2, y0 + n * cs + 20, "a $3 \\times 3$ kernel", color=s.MUTED)
    text(ax, x0 + n * cs / 2, y0 + n * cs + 42, "reads these nine", color=s.MUTED)

    # middle: nine heads laid out like the kernel, each one-hot at its offset
    ms, gap = 13, 14
    gx, gy = 232, 66
    step = 3 * ms + gap
    for di, dj in OFFSETS:
        hx, hy = gx + (dj + 1) * step, gy + (di + 1) * step
        values = [[1.0 if (r - 1, c - 1) == (di, dj) else 0.0 for c in range(3)] for r in range(3)]
        cells(ax, hx, hy, 3, 3, s.WEIGHT, size=ms, values=values)
    text(ax, gx + 1.5 * step - gap / 2, gy - 26, "nine heads, head $h$ at offset $\\Delta_h$")
    text(ax, gx + 1.5 * step - gap / 2, gy + 3 * step + 8, "each head's weights over the keys",
         color=s.dark(s.WEIGHT))
    text(ax, gx + 1.5 * step - gap / 2, gy + 3 * step + 30, "$s_h(\\delta) = -\\alpha\\,\\|\\delta - \\Delta_h\\|^2$")
    arrow(ax, (x0 + n * cs + 10, y0 + n * cs / 2), (gx - 10, y0 + n * cs / 2))

    # right: the sum over heads is the convolution
    rx = 470
    box(ax, rx, 118, 148, 78, color=s.VALUE)
    text(ax, rx + 74, 140, "$\\sum_{\\Delta} \\; X_{p+\\Delta}\\, W_{\\Delta}$")
    text(ax, rx + 74, 174, "one head per $\\Delta$", size=s.SMALL, color=s.dark(s.VALUE))
    arrow(ax, (gx + 3 * step - gap + 8, 157), (rx - 4, 157))
    text(ax, rx + 74, 230, "$=$ conv$(X)_p$ exactly")
    text(ax, rx + 74, 252, "as $\\alpha \\to \\infty$", color=s.MUTED)
    return fig


def _mab(ax, x, y, w, label, q_label, kv_label, q_color=s.QUERY, kv_color=s.KEY):
    """A MAB as a box with its two inputs: queries from the left label, keys and values from the right."""
    box(ax, x, y, w, 40, label=label, color=s.NEUTRAL)
    text(ax, x + w * 0.25, y + 66, q_label, color=s.INK)
    text(ax, x + w * 0.75, y + 66, kv_label, color=s.INK)
    arrow(ax, (x + w * 0.25, y + 54), (x + w * 0.25, y + 41))
    arrow(ax, (x + w * 0.75, y + 54), (x + w * 0.75, y + 41))
    ax.add_patch(_dot(x + w * 0.25, y + 48, q_color))
    ax.add_patch(_dot(x + w * 0.75, y + 48, kv_color))


def _dot(x, y, color):
    from matplotlib.patches import Circle
    return Circle((x, y), 4.5, facecolor=color, edgecolor=s.dark(color, 3.0), linewidth=1, clip_on=False, zorder=3)


def set_blocks():
    """MAB inside, then SAB, ISAB and PMA as uses of it, with their output sizes."""
    W, H = 640, 386
    fig, ax = canvas(W, H)

    # top: the multihead attention block
    text(ax, 320, 24, "$\\mathrm{MAB}(X, Y)$: queries from $X$, keys and values from $Y$")
    bx, by = 70, 46
    box(ax, bx, by, 500, 104, color=s.MUTED, fill="none", lw=1.2, radius=8, linestyle=(0, (4, 3)))
    steps = [("multi-head\nattention", s.WEIGHT), ("add, LayerNorm", s.NEUTRAL), ("row-wise FF", s.NEUTRAL),
             ("add, LayerNorm", s.NEUTRAL)]
    xs = [88, 210, 332, 454]
    for (label, colour), x in zip(steps, xs):
        box(ax, x, by + 30, 104, 44, color=colour)
        for i, line in enumerate(label.split("\n")):
            text(ax, x + 52, by + 52 + (i - (len(label.split("\n")) - 1) / 2) * 16, line, size=s.SMALL)
    for a, b in zip(xs, xs[1:]):
        arrow(ax, (a + 104, by + 52), (b, by + 52))
    text(ax, bx - 30, by + 40, "$X$")
    text(ax, bx - 30, by + 72, "$Y$")
    arrow(ax, (bx - 20, by + 40), (xs[0], by + 44))
    arrow(ax, (bx - 20, by + 72), (xs[0], by + 62))
    arrow(ax, (xs[-1] + 104, by + 52), (xs[-1] + 128, by + 52))
    text(ax, 320, by + 92, "one output row per row of $X$", size=s.SMALL, color=s.MUTED)

    # bottom: three uses of it
    y = 232
    text(ax, 108, y - 34, "SAB, equivariant", weight="bold")
    _mab(ax, 38, y, 140, "MAB", "$X$", "$X$")
    text(ax, 108, y + 104, "$n^2$ scores")
    text(ax, 108, y + 126, "$n$ rows out", color=s.MUTED)

    text(ax, 318, y - 34, "ISAB, equivariant", weight="bold")
    box(ax, 248, y, 140, 40, label="MAB", color=s.NEUTRAL)
    text(ax, 283, y + 66, "$X$")
    arrow(ax, (283, y + 54), (283, y + 41))
    ax.add_patch(_dot(283, y + 48, s.QUERY))
    box(ax, 318, y + 56, 96, 30, label="MAB$(I, X)$", color=s.NEUTRAL, size=s.SMALL)
    arrow(ax, (353, y + 55), (353, y + 41))
    ax.add_patch(_dot(353, y + 48, s.KEY))
    text(ax, 318, y + 104, "$m$ inducing points $I$: $2nm$ scores")
    text(ax, 318, y + 126, "$n$ rows out", color=s.MUTED)

    text(ax, 530, y - 34, "PMA, invariant", weight="bold")
    _mab(ax, 460, y, 140, "MAB", "$S$", "rFF$(Z)$")
    text(ax, 530, y + 104, "$k$ seed vectors $S$")
    text(ax, 530, y + 126, "$k$ rows out, any $n$", color=s.MUTED)
    return fig


def horizon_queries():
    """History steps as keys and values, one query per horizon built from what is known about t + h."""
    W, H = 640, 330
    fig, ax = canvas(W, H)
    L, Hh, cs = 12, 4, 22
    kx, ky = 64, 236
    # history: values and event flags, encoded as keys/values
    cells(ax, kx, ky, 1, L, s.KEY, size=cs)
    cells(ax, kx, ky + cs, 1, L, s.VALUE, size=cs)
    text(ax, kx + L * cs / 2, ky + 2 * cs + 18, "the history $y_{t-L+1}, \\dots, y_t$ (and its event flags)")
    text(ax, kx + L * cs / 2, ky + 2 * cs + 40, "encoded: keys and values, one per past step", color=s.MUTED)
    text(ax, kx - 16, ky + cs / 2, "$K$", color=s.dark(s.KEY))
    text(ax, kx - 16, ky + 1.5 * cs, "$V$", color=s.dark(s.VALUE))

    # horizon queries
    qx, qy, qs = 392, 70, 30
    for h in range(Hh):
        cells(ax, qx + h * (qs + 26), qy, 1, 1, s.QUERY, size=qs)
        label = ["$q_1$", "$q_2$", "$\\cdots$", "$q_H$"][h]
        text(ax, qx + h * (qs + 26) + qs / 2, qy + qs / 2, label)
    text(ax, qx + 2 * (qs + 26) - 13, 22, "one query per horizon $h$:")
    text(ax, qx + 2 * (qs + 26) - 13, 46, "embedding of $h$ + event at $t + h$?", size=s.SMALL)

    # each query reads the history: weights drawn for q_1 and q_H
    for h, peaks in ((0, (0, 4, 8)), (3, (3, 7, 11))):                # same season: every 4th step back
        sx = qx + h * (qs + 26) + qs / 2
        for k in peaks:
            arrow(ax, (sx, qy + qs + 2), (kx + k * cs + cs / 2, ky - 2), color=s.dark(s.WEIGHT), lw=1.2, head=8)
    text(ax, 150, 40, "weights: where each horizon", color=s.dark(s.WEIGHT))
    text(ax, 150, 60, "looks, e.g. one season back", color=s.dark(s.WEIGHT))

    # output
    ox = 586
    box(ax, ox - 10, 150, 52, 34, label="FF", color=s.DECODER)
    arrow(ax, (qx + 3 * (qs + 26) + qs + 4, qy + qs / 2), (ox + 16, 148), rad=-0.3)
    text(ax, ox + 16, 206, "$\\hat y_{t+h}$", color=s.dark(s.DECODER))
    return fig


DIAGRAMS = {
    "ch08_conv_heads": conv_heads,
    "ch08_set_blocks": set_blocks,
    "ch08_horizon_queries": horizon_queries,
}

ALT = {
    "ch08_conv_heads": (
        "An image patch with a query pixel p and its eight neighbours, the keys a 3 × 3 convolution reads, next to "
        "nine attention heads laid out like the kernel, each with its weights one-hot at its own offset Delta_h. "
        "Summing each selected pixel times its value map gives the convolution at p, exactly as alpha grows."),
    "ch08_set_blocks": (
        "The multihead attention block MAB(X, Y): multi-head attention with queries from X and keys and values "
        "from Y, add and layer norm, a row-wise feed-forward net, add and layer norm. Below it, SAB is MAB(X, X), "
        "ISAB is MAB(X, MAB(I, X)) with m inducing points I, and PMA is MAB(S, rFF(Z)) with k seed vectors S, "
        "which returns k rows for a set of any size n."),
    "ch08_horizon_queries": (
        "The history of a series, one cell per past step, encoded as a row of keys and a row of values, below one "
        "query per forecast horizon, each a horizon embedding plus whether an event is scheduled at t + h. Arrows "
        "from two queries to past steps one season apart show where a horizon's weights fall, and a small "
        "feed-forward net turns each horizon's result into its forecast."),
}
