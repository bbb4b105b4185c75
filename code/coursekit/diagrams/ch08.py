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


def _dot(x, y, color, r=4.5):
    from matplotlib.patches import Circle
    return Circle((x, y), r, facecolor=color, edgecolor=s.dark(color, 3.0), linewidth=1, clip_on=False, zorder=3)


def set_blocks():
    """MAB inside (with its two residual connections), then SAB, ISAB and PMA as uses of it, with their output
    sizes."""
    W, H = 640, 400
    fig, ax = canvas(W, H)

    # top: the multihead attention block
    text(ax, 320, 22, "$\\mathrm{MAB}(X, Y)$: queries from $X$, keys and values from $Y$")
    bx, by = 70, 44
    box(ax, bx, by, 500, 124, color=s.MUTED, fill="none", lw=1.2, radius=8, linestyle=(0, (4, 3)))
    steps = [("multi-head\nattention", s.WEIGHT), ("add, LayerNorm", s.NEUTRAL), ("row-wise FF", s.NEUTRAL),
             ("add, LayerNorm", s.NEUTRAL)]
    xs = [88, 210, 332, 454]
    top, mid = by + 50, by + 72                                   # the boxes' top edge and middle line
    for (label, colour), x in zip(steps, xs):
        box(ax, x, top, 104, 44, color=colour)
        for i, line in enumerate(label.split("\n")):
            text(ax, x + 52, mid + (i - (len(label.split("\n")) - 1) / 2) * 16, line, size=s.SMALL)
    for a, b in zip(xs, xs[1:]):
        arrow(ax, (a + 104, mid), (b, mid))
    text(ax, bx - 30, mid - 12, "$X$")
    text(ax, bx - 30, mid + 20, "$Y$")
    arrow(ax, (bx - 20, mid - 12), (xs[0], mid - 12))
    arrow(ax, (bx - 20, mid + 20), (xs[0], mid + 14))
    arrow(ax, (xs[-1] + 104, mid), (xs[-1] + 128, mid))
    # the residual connections: X around the attention into the first add, A around the FF into the second
    lane = by + 22
    for start, end in ((bx + 2, xs[1] + 52), (xs[1] + 104 + 9, xs[3] + 52)):
        y0 = mid - 12 if start < xs[0] else mid
        ax.add_patch(_dot(start, y0, s.MUTED, r=2.6))
        arrow(ax, (start, y0), (start, lane), line_only=True, lw=1.3)
        arrow(ax, (start - 0.6, lane), (end, lane), line_only=True, lw=1.3)
        arrow(ax, (end, lane - 0.6), (end, top), lw=1.3, head=8)
    text(ax, xs[1] + 104 + 9, mid + 30, "$A$")
    text(ax, 462, by + 110, "one output row per row of $X$", size=s.SMALL, color=s.MUTED)

    # bottom: three uses of it
    y = 246
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
    """History steps as keys and values, one query per horizon built from what is known about t + h; each
    horizon's context, with its query, goes through the same feed-forward net to give its forecast."""
    W, H = 640, 330
    fig, ax = canvas(W, H)
    L, cs = 12, 22
    kx, ky = 64, 236
    # history: values and event flags, encoded as keys/values
    cells(ax, kx, ky, 1, L, s.KEY, size=cs)
    cells(ax, kx, ky + cs, 1, L, s.VALUE, size=cs)
    text(ax, kx + L * cs / 2, ky + 2 * cs + 18, "the history $y_{t-L+1}, \\dots, y_t$ (and its event flags)")
    text(ax, kx + L * cs / 2, ky + 2 * cs + 40, "encoded: keys and values, one per past step", color=s.MUTED)
    text(ax, kx - 16, ky + cs / 2, "$K$", color=s.dark(s.KEY))
    text(ax, kx - 16, ky + 1.5 * cs, "$V$", color=s.dark(s.VALUE))

    # horizon queries, above the history
    qx, qy, qs, gap = 110, 70, 30, 26
    for h in range(4):
        cells(ax, qx + h * (qs + gap), qy, 1, 1, s.QUERY, size=qs)
        label = ["$q_1$", "$q_2$", "$\\cdots$", "$q_{12}$"][h]
        text(ax, qx + h * (qs + gap) + qs / 2, qy + qs / 2, label)
    mid = qx + (4 * qs + 3 * gap) / 2
    text(ax, mid, 22, "one query per horizon $h$ ($n_f = 12$):")
    text(ax, mid, 46, "embedding of $h$ + event at $t + h$?", size=s.SMALL)

    # each query reads the history: weights drawn for q_1 and q_{n_f}
    for h, peaks in ((0, (0, 4, 8)), (3, (3, 7, 11))):                # same season: every 4th step back
        sx = qx + h * (qs + gap) + qs / 2
        for k in peaks:
            arrow(ax, (sx, qy + qs + 2), (kx + k * cs + cs / 2, ky - 2), color=s.dark(s.WEIGHT), lw=1.2, head=8)
    text(ax, 58, 128, "weights $w_h$", color=s.dark(s.WEIGHT))

    # right: for each horizon, its query and what it read go through one feed-forward net
    rx = 424
    text(ax, 508, 64, "for every horizon $h$:")
    cells(ax, rx, 92, 1, 1, s.QUERY, size=qs)
    text(ax, rx + qs / 2, 92 + qs / 2, "$q_h$")
    cells(ax, rx, 156, 1, 1, s.VALUE, size=qs)
    text(ax, rx + qs / 2, 156 + qs / 2, "$c_h$")
    text(ax, 474, 216, "$c_h^\\top = w_h^\\top V$", color=s.dark(s.VALUE))
    arrow(ax, (qx + 4 * qs + 3 * gap + 6, qy + qs / 2), (rx - 4, 92 + qs / 2))
    arrow(ax, (kx + L * cs + 6, ky + 1.5 * cs), (rx - 4, 156 + qs / 2), color=s.dark(s.VALUE))
    fx = 496
    box(ax, fx, 118, 56, 44, label="FF", color=s.DECODER)
    arrow(ax, (rx + qs + 4, 92 + qs / 2), (fx - 2, 130))
    arrow(ax, (rx + qs + 4, 156 + qs / 2), (fx - 2, 150))
    arrow(ax, (fx + 58, 140), (fx + 80, 140))
    text(ax, fx + 104, 140, "$\\hat y_{t+h}$", color=s.dark(s.DECODER))
    text(ax, fx + 28, 178, "one FF for all $h$", size=s.SMALL, color=s.MUTED)
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
        "from Y, added back to X by a residual connection and layer-normed into A, a row-wise feed-forward net whose "
        "input A is added back the same way, and a second layer norm. Below it, SAB is MAB(X, X), "
        "ISAB is MAB(X, MAB(I, X)) with m inducing points I, and PMA is MAB(S, rFF(Z)) with k seed vectors S, "
        "which returns k rows for a set of any size n."),
    "ch08_horizon_queries": (
        "The history of a series, one cell per past step, encoded as a row of keys and a row of values, below one "
        "query per forecast horizon, q_1 to q_12, each a horizon embedding plus whether an event is scheduled at "
        "t + h, with arrows from two queries to past steps one season apart where their weights fall. On the right, "
        "for every horizon h, its query q_h and its context c_h, the values weighted by its attention, go into one "
        "feed-forward net shared by all horizons, which gives the forecast y hat at t + h."),
}
