"""Chapter 3's diagrams: X to Q, K, V and the T x T weights; the masks as matrices; cross-attention; and what
a recurrence must do one step after another against what self-attention does at once."""

from __future__ import annotations

from . import style as s
from .draw import arrow, box, canvas, cells, text

# a small fixed pattern of attention weights (rows sum to 1), drawn as shades of the weight colour
_W4 = [[0.55, 0.15, 0.1, 0.2], [0.1, 0.6, 0.2, 0.1], [0.2, 0.1, 0.5, 0.2], [0.7, 0.05, 0.05, 0.2]]


def qkv():
    """X, one row per token, projected by W_Q, W_K, W_V into Q, K, V; Q against K gives the T x T weights W,
    and W times V the output, one row per token."""
    W, H = 640, 318
    fig, ax = canvas(W, H)
    c, T = 13, 4                              # cell size; tokens drawn
    xx, xy = 28, 124                          # X: T x d_m
    cells(ax, xx, xy, T, 5, s.NEUTRAL, size=c, shape="T × d_m")
    text(ax, xx + 2.5 * c, xy - 18, "$X$")
    px = 190
    ys = {"Q": 30, "K": 128, "V": 226}
    for (name, y), colour, proj, shape in zip(ys.items(), (s.QUERY, s.KEY, s.VALUE), ("$W_Q$", "$W_K$", "$W_V$"),
                                              ("T × d_k", "T × d_k", "T × d_v")):
        arrow(ax, (xx + 5 * c + 8, xy + 2 * c), (px - 8, y + 2 * c))
        text(ax, px - 40, y + 2 * c + (-18 if y < xy else 18 if y > xy else -14), proj)
        cells(ax, px, y, T, 3, colour, size=c, shape=shape)
        text(ax, px + 3 * c + 8, y + 2 * c, f"${name}$", ha="left")
    wx, wy = 380, 92                          # the weights
    arrow(ax, (px + 3 * c + 30, ys["Q"] + 2 * c), (wx - 8, wy + 16))
    arrow(ax, (px + 3 * c + 30, ys["K"] + 2 * c), (wx - 8, wy + 48))
    cells(ax, wx, wy, T, T, s.WEIGHT, size=16, values=_W4, shape="T × T")
    text(ax, wx + 32, 28, r"$W$ = softmax($QK^\top$ / √$d_k$)")
    text(ax, wx + 32, 56, "row $i$: what token $i$ takes from each", color=s.MUTED, size=s.SMALL)
    ox = 560                                  # the output
    arrow(ax, (wx + 4 * 16 + 8, wy + 32), (ox - 8, wy + 32))
    arrow(ax, (px + 3 * c + 30, ys["V"] + 2 * c), (ox + 1.5 * c, wy + 4 * c + 44), rad=0.2)
    cells(ax, ox, wy + 6, T, 3, s.VALUE, size=c, fill=s.tint(s.VALUE, 0.2), shape="T × d_v")
    text(ax, ox + 1.5 * c, wy - 12, "$WV$")
    text(ax, 500, 262, "the output: one row per token,", color=s.MUTED)
    text(ax, 500, 284, "a weighted sum of the values", color=s.MUTED)
    return fig


def masks():
    """The causal mask, a padding mask and the two combined, as T x T matrices of allowed (query, key) pairs."""
    W, H = 640, 262
    fig, ax = canvas(W, H)
    T, c, length = 6, 20, 4
    causal = [[1.0 if t <= i else 0.0 for t in range(T)] for i in range(T)]
    padding = [[1.0 if t < length else 0.0 for t in range(T)] for _ in range(T)]
    both = [[a * b for a, b in zip(r1, r2)] for r1, r2 in zip(causal, padding)]
    panels = [(84, causal, "causal", "no key after the query"),
              (270, padding, "padding", "4 real tokens, 2 of padding"),
              (460, both, "both", "combined: True where both are")]
    top = 62
    for x, grid, name, note in panels:
        cells(ax, x, top, T, T, s.WEIGHT, size=c, values=[[0.55 * v for v in row] for row in grid])
        text(ax, x + T * c / 2, 22, name, weight="bold")
        text(ax, x + T * c / 2, 44, "key $t$ →", color=s.MUTED, size=s.SMALL)
        text(ax, x + T * c / 2, top + T * c + 22, note, size=s.SMALL)
    text(ax, 76, top + T * c / 2, "query $i$", color=s.MUTED, size=s.SMALL, ha="right")
    text(ax, 237, top + T * c / 2, "AND", size=s.TEXT, weight="bold")
    text(ax, 423, top + T * c / 2, "=", size=20)
    # legend
    lx, ly = 150, 232
    cells(ax, lx, ly - 8, 1, 1, s.WEIGHT, size=16, values=[[0.55]])
    text(ax, lx + 24, ly, "may attend (True)", ha="left")
    cells(ax, lx + 190, ly - 8, 1, 1, s.WEIGHT, size=16, values=[[0.0]])
    text(ax, lx + 214, ly, "masked: weight exactly 0", ha="left")
    return fig


def cross_attention():
    """Queries from the decoder's positions, keys and values from the encoder's output; weights T_q x T_k."""
    W, H = 640, 310
    fig, ax = canvas(W, H)
    c = 13
    Tq, Tk = 3, 5
    # decoder sequence and encoder memory
    dx, dy = 30, 60
    cells(ax, dx, dy, Tq, 4, s.DECODER, size=c, shape=r"$T_q \times d_m$")
    text(ax, 22, dy - 18, "decoder", color=s.dark(s.DECODER), weight="bold", ha="left")
    ex, ey = 30, 172
    cells(ax, ex, ey, Tk, 4, s.ENCODER, size=c, shape=r"$T_k \times d_m$")
    text(ax, 22, ey - 18, "encoder output", color=s.dark(s.ENCODER), weight="bold", ha="left")
    # projections
    px = 200
    arrow(ax, (dx + 4 * c + 10, dy + 1.5 * c), (px - 8, dy + 1.5 * c))
    text(ax, (dx + 4 * c + px) / 2 + 6, dy + 1.5 * c - 16, "$W_Q$")
    cells(ax, px, dy, Tq, 3, s.QUERY, size=c)
    text(ax, px + 3 * c + 8, dy + 1.5 * c, "$Q$", ha="left")
    for y, colour, sym, proj in ((150, s.KEY, "$K$", "$W_K$"), (232, s.VALUE, "$V$", "$W_V$")):
        arrow(ax, (ex + 4 * c + 10, ey + 2.5 * c), (px - 8, y + 2.5 * c))
        text(ax, (ex + 4 * c + px) / 2 + 6, (ey + 2.5 * c + y + 2.5 * c) / 2 - 16, proj)
        cells(ax, px, y, Tk, 3, colour, size=c)
        text(ax, px + 3 * c + 8, y + 2.5 * c, sym, ha="left")
    # the weights T_q x T_k
    wx, wy = 350, 84
    arrow(ax, (px + 3 * c + 30, dy + 1.5 * c), (wx - 8, wy + 10))
    arrow(ax, (px + 3 * c + 30, 150 + 2.5 * c), (wx - 8, wy + 2 * 16))
    vals = [[0.1, 0.6, 0.1, 0.1, 0.1], [0.05, 0.1, 0.7, 0.1, 0.05], [0.1, 0.1, 0.1, 0.2, 0.5]]
    cells(ax, wx, wy, Tq, Tk, s.WEIGHT, size=16, values=vals, shape=r"$T_q \times T_k$")
    text(ax, wx + 40, wy - 50, "one row per decoder position,")
    text(ax, wx + 40, wy - 28, "one column per encoder position", color=s.MUTED)
    # output
    ox = 560
    arrow(ax, (wx + Tk * 16 + 8, wy + 1.5 * 16), (ox - 8, wy + 1.5 * 16))
    arrow(ax, (px + 3 * c + 30, 232 + 2.5 * c), (ox + 1.5 * c, wy + Tq * c + 32), rad=-0.2)
    cells(ax, ox, wy + 4, Tq, 3, s.VALUE, size=c, fill=s.tint(s.VALUE, 0.2), shape=r"$T_q \times d_v$")
    text(ax, ox + 1.5 * c, wy - 14, "$WV$")
    text(ax, 480, 270, "the decoder asks,", color=s.MUTED)
    text(ax, 480, 290, "the encoder answers", color=s.MUTED)
    return fig


def dependencies():
    """Above, a recurrence: h_t waits for h_{t-1}, and x_1 reaches y_T through T cells. Below, self-attention:
    every output reads every input at once, T x T weights, one step from any input to any output."""
    W, H = 640, 420
    fig, ax = canvas(W, H)
    xs = [110, 200, 290, 380, 470]
    labels = ["1", "2", "3", None, "T"]
    # recurrence
    text(ax, 24, 26, "recurrence", ha="left", weight="bold", color=s.dark(s.ENCODER))
    cy, bw, bh = 100, 44, 32
    for x, lab in zip(xs, labels):
        if lab is None:
            text(ax, x, cy, "⋯")
            continue
        box(ax, x - bw / 2, cy - bh / 2, bw, bh, label=f"$h_{lab}$", color=s.ENCODER)
        arrow(ax, (x, cy + 52), (x, cy + bh / 2 + 1))
        text(ax, x, cy + 64, f"$x_{lab}$")
    for a, b in zip(xs[:-1], xs[1:]):
        arrow(ax, (a + bw / 2, cy), (b - bw / 2, cy))
    arrow(ax, (xs[-1], cy - bh / 2), (xs[-1], cy - 40))
    text(ax, xs[-1], cy - 50, "$y_T$")
    text(ax, 560, 76, "$T$ steps,", ha="left")
    text(ax, 560, 98, "one after", ha="left")
    text(ax, 560, 120, "another", ha="left")
    text(ax, W / 2, 192, "$x_1$ reaches $y_T$ through $T$ cells, $T - 1$ steps from $h_1$ to $h_T$", color=s.MUTED)
    # self-attention
    ty = 226
    text(ax, 24, ty, "self-attention", ha="left", weight="bold", color=s.dark(s.WEIGHT))
    top, bottom = 262, 362
    real = [x for x, lab in zip(xs, labels) if lab is not None]
    for x in real:
        for x2 in real:
            arrow(ax, (x2, bottom - 12), (x, top + 14), color=s.WEIGHT, lw=1.1, line_only=True)
    for x, lab in zip(xs, labels):
        if lab is None:
            text(ax, x, top, "⋯")
            text(ax, x, bottom, "⋯")
            continue
        text(ax, x, top, f"$y_{lab}$")
        text(ax, x, bottom, f"$x_{lab}$")
    text(ax, 560, 290, "1 step,", ha="left")
    text(ax, 560, 312, "$T \\times T$", ha="left")
    text(ax, 560, 334, "weights", ha="left")
    text(ax, W / 2, 396, "every output reads every input directly: path length 1; work and memory grow as $T^2$",
         color=s.MUTED, size=s.SMALL)
    return fig


DIAGRAMS = {
    "ch03_qkv": qkv,
    "ch03_masks": masks,
    "ch03_cross_attention": cross_attention,
    "ch03_dependencies": dependencies,
}

ALT = {
    "ch03_qkv": (
        "The input X, a T × d_m matrix with one row per token, is multiplied by three learned matrices W_Q, W_K "
        "and W_V into the queries Q and keys K (T × d_k) and the values V (T × d_v). Q and K together give the "
        "T × T matrix of weights W = softmax(QKᵀ / √d_k), whose row i says how much token i takes from each "
        "token; W times V is the output, again one row per token."),
    "ch03_masks": (
        "Three 6 × 6 grids of query rows and key columns, allowed cells shaded and masked cells white (weight "
        "exactly 0): the causal mask allows the lower triangle, key t at most query i; the padding mask of a "
        "sequence with 4 real tokens allows the first four key columns in every row; both combined (a logical "
        "AND) allow the lower triangle within the first four columns."),
    "ch03_cross_attention": (
        "Cross-attention: the decoder's T_q positions are projected by W_Q into the queries; the encoder's T_k "
        "output rows are projected by W_K and W_V into the keys and values. The weights form a T_q × T_k grid, "
        "one row per decoder position and one column per encoder position, and the output WV has one row per "
        "decoder position."),
    "ch03_dependencies": (
        "Above, a recurrence: cells h_1 to h_T in a chain, each reading its input x_t and waiting for the cell "
        "before it, so T steps run one after another and x_1 reaches the last output y_T through all T cells, "
        "T − 1 steps from h_1 to h_T. "
        "Below, self-attention: every output y_i is joined to every input x_t by a line, all at once, T × T "
        "weights, so any input reaches any output in one step, at a cost in work and memory that grows as T²."),
}
