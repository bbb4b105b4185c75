"""Chapter 2's diagrams: attention's three steps, the two decoders side by side, and a bidirectional encoder."""

from __future__ import annotations

from . import style as s
from .draw import arrow, box, canvas, cells, text

D = 4  # cells drawn for a d-dimensional state
WEIGHTS = [0.05, 0.05, 0.8, 0.05, 0.05]   # the lesson's toy example: the third row matches


def attention_steps():
    """One decoder state against every encoder state: scores, softmax weights, and their weighted sum."""
    W, H = 640, 316
    fig, ax = canvas(W, H)
    cs, top = 22, 112                       # cell size; top of the five rows
    rows = [top + cs * i for i in range(5)]
    mid = top + 2.5 * cs

    # H: the encoder states, one row per input token
    hx = 58
    cells(ax, hx, top, 5, D, s.ENCODER, size=cs, shape="n × d")
    text(ax, hx + D * cs / 2, top - 20, "$H$", color=s.dark(s.ENCODER))
    for i, y in enumerate(rows):
        text(ax, hx - 22, y + cs / 2, f"$h_{i + 1}$", color=s.dark(s.ENCODER))
    text(ax, hx + D * cs / 2, 36, "encoder states,", color=s.dark(s.ENCODER))
    text(ax, hx + D * cs / 2, 56, "every one kept", color=s.dark(s.ENCODER))

    # the decoder state that asks
    qx, qy = 250 + 11 - 44, 40
    cells(ax, qx, qy, 1, D, s.QUERY, size=cs)
    text(ax, qx + D * cs / 2, qy - 20, "decoder state $q_t$")

    # 1. scores: one number per row
    sx = 250
    cells(ax, sx, top, 5, 1, s.NEUTRAL, size=cs)
    text(ax, sx + cs / 2, top + 5 * cs + 18, "$s_t$")
    arrow(ax, (hx + D * cs + 8, mid), (sx - 8, mid))
    arrow(ax, (sx + cs / 2, qy + cs + 4), (sx + cs / 2, top - 6))
    text(ax, sx + cs / 2, top + 5 * cs + 48, "1. score each row", weight="bold")
    text(ax, sx + cs / 2, top + 5 * cs + 74, r"$s_{t,i} = q_t^\top h_i$")

    # 2. softmax: weights that are positive and sum to 1
    wx = 400
    cells(ax, wx, top, 5, 1, s.WEIGHT, size=cs, values=[[v] for v in WEIGHTS])
    text(ax, wx + cs / 2, top + 5 * cs + 18, "$w_t$", color=s.dark(s.WEIGHT))
    arrow(ax, (sx + cs + 8, mid), (wx - 8, mid))
    text(ax, wx + cs / 2, top + 5 * cs + 48, "2. softmax", weight="bold")
    text(ax, wx + cs / 2, top + 5 * cs + 74, r"$w_t = \mathrm{softmax}(s_t)$", color=s.dark(s.WEIGHT))

    # 3. weighted sum: the context
    cx = 516
    cells(ax, cx, mid - cs / 2, 1, D, s.ENCODER, size=cs, shape="1 × d")
    text(ax, cx + D * cs / 2, mid - cs / 2 - 20, "context $c_t$")
    arrow(ax, (wx + cs + 8, mid), (cx - 8, mid))
    text(ax, cx + D * cs / 2, top + 5 * cs + 48, "3. weighted sum", weight="bold")
    text(ax, cx + D * cs / 2, top + 5 * cs + 74, r"$c_t = \sum_i w_{t,i}\, h_i$")
    text(ax, cx + D * cs / 2, mid + 44, "to the decoder", color=s.MUTED)
    return fig


def _column(ax, x0, width, title, note):
    text(ax, x0 + width / 2, 26, title, weight="bold")
    text(ax, x0 + width / 2, 50, note, color=s.MUTED)


def two_decoders():
    """Bahdanau's decoder and Luong's, one output step each: who asks, where the context goes, the readout."""
    W, H = 640, 470
    fig, ax = canvas(W, H)
    bw, bh = 196, 44                       # boxes
    left, right = 100, 400                 # the two columns' boxes start here

    # Bahdanau: the previous state asks; the context goes into the cell; readout on [q_t; c_t; y_{t-1}]
    dec = s.dark(s.DECODER)
    cx = left + bw / 2
    _column(ax, left - 50, bw + 100, "Bahdanau et al.", "the previous state asks")
    text(ax, cx, 76, "$q_{t-1}$", color=dec)
    arrow(ax, (cx, 88), (cx, 100))
    box(ax, left, 100, bw, bh, "attend over $H$", color=s.WEIGHT)
    arrow(ax, (cx, 100 + bh), (cx, 200))
    text(ax, cx + 8, 182, "$c_t$", ha="left")
    box(ax, left, 200, bw, bh, "GRU cell", color=s.DECODER)
    # q_{t-1} is also the state the cell updates: round the attention, into the cell's left side
    qx = left - 22
    ax.plot([cx - 18, qx, qx], [76, 76, 212], color=dec, lw=1.3, solid_joinstyle="miter")
    arrow(ax, (qx, 212), (left, 212), color=dec, lw=1.3, head=8)
    # y_{t-1} into the cell, and on to the readout
    yx = left - 76
    text(ax, yx + 14, 216, "$y_{t-1}$")
    arrow(ax, (yx, 234), (left, 234))
    ax.plot([yx, yx, left - 21], [234, 330, 330], color=s.INK, lw=1.3, solid_joinstyle="miter")
    arrow(ax, (left - 40, 330), (left - 20, 330), head=8)
    # c_t on to the readout too, round the cell's right side
    kx = left + bw + 34
    ax.plot([cx, kx, kx], [160, 160, 330], color=s.INK, lw=1.3, solid_joinstyle="miter")
    arrow(ax, (kx, 330), (left + bw + 20, 330), head=8)
    arrow(ax, (cx, 200 + bh), (cx, 300))
    text(ax, cx + 8, 272, "$q_t$", ha="left", color=dec)
    box(ax, left - 20, 300, bw + 40, bh + 16)
    text(ax, cx, 318, "readout: affine map of")
    text(ax, cx, 342, "$[q_t;\\ c_t;\\ y_{t-1}]$")
    arrow(ax, (cx, 360), (cx, 396))
    text(ax, cx, 412, "scores of the next token")
    text(ax, cx, 444, "(the paper: a maxout layer)", color=s.MUTED)

    # Luong: the cell runs first; the current state asks; attentional layer, then the output layer
    _column(ax, right - 50, bw + 100, "Luong et al.", "the current state asks")
    text(ax, right + bw / 2, 76, "$q_{t-1}$,  $y_{t-1}$")
    arrow(ax, (right + bw / 2, 88), (right + bw / 2, 100))
    box(ax, right, 100, bw, bh, "RNN cell", color=s.DECODER)
    arrow(ax, (right + bw / 2, 100 + bh), (right + bw / 2, 200))
    text(ax, right + bw / 2 + 8, 172, "$q_t$", ha="left", color=s.dark(s.DECODER))
    box(ax, right, 200, bw, bh, "attend over $H$", color=s.WEIGHT)
    arrow(ax, (right + bw / 2, 200 + bh), (right + bw / 2, 300))
    text(ax, right + bw / 2 + 8, 272, "$c_t$", ha="left")
    box(ax, right - 20, 300, bw + 40, bh + 16)
    text(ax, right + bw / 2, 318, "attentional layer")
    text(ax, right + bw / 2, 342, r"$\tilde q_t = \tanh(W_c\,[c_t;\ q_t])$")
    arrow(ax, (right + bw / 2, 360), (right + bw / 2, 396))
    text(ax, right + bw / 2, 412, r"scores of the next token: $W_s \tilde q_t$")
    text(ax, right + bw / 2, 444, "(the layer reads $c_t$ and $q_t$)", color=s.MUTED)
    skip = s.dark(s.DECODER)               # q_t also goes round the attention into the attentional layer
    xs = right + bw + 30
    ax.plot([right + bw / 2 + 2, xs, xs], [160, 160, 330], color=skip, lw=1.3, solid_joinstyle="miter")
    arrow(ax, (xs, 330), (right + bw + 20, 330), color=skip, lw=1.3, head=8)
    return fig


def bidirectional():
    """A bidirectional encoder on '8/3/95': each row of H joins a left-to-right state and a right-to-left one."""
    W, H = 640, 360
    fig, ax = canvas(W, H)
    chars = ["8", "/", "3", "/", "9", "5"]
    xs = [150 + 84 * i for i in range(len(chars))]
    cw, ch = 44, 30
    fy, by, ty, hy = 196, 136, 284, 52       # forward cells, backward cells, tokens, rows of H

    text(ax, 24, fy, "left to right", ha="left", color=s.dark(s.ENCODER))
    text(ax, 24, by, "right to left", ha="left", color=s.dark(s.ENCODER))
    text(ax, 24, hy + 10, "rows of $H$", ha="left", color=s.dark(s.ENCODER))
    for i, (x, c) in enumerate(zip(xs, chars)):
        box(ax, x - 18, ty - 16, 36, 32, c, color=s.NEUTRAL)
        arrow(ax, (x, ty - 18), (x, fy + ch / 2 + 1))
        box(ax, x - cw / 2, fy - ch / 2, cw, ch, color=s.ENCODER)
        box(ax, x - cw / 2, by - ch / 2, cw, ch, color=s.ENCODER)
        if i + 1 < len(xs):
            arrow(ax, (x + cw / 2, fy), (xs[i + 1] - cw / 2, fy))
            arrow(ax, (xs[i + 1] - cw / 2, by), (x + cw / 2, by))
        # the row of H: forward half beside backward half
        cells(ax, x - 22, hy, 1, 2, s.ENCODER, size=11)
        cells(ax, x, hy, 1, 2, s.ENCODER, size=11, fill=s.tint(s.ENCODER, 0.2))
        arrow(ax, (x + 11, by - ch / 2), (x + 11, hy + 14), color=s.dark(s.ENCODER), lw=1.2, head=8)
        arrow(ax, (x - 11, fy - ch / 2), (x - 11, hy + 14), color=s.dark(s.ENCODER), lw=1.2, head=8, zorder=0.5)
    # the row of the first character: what each half has read
    x0 = xs[0]
    box(ax, x0 - 34, hy - 12, 68, 36, color=s.WEIGHT, fill="none", lw=1.8, radius=6)
    text(ax, x0, hy - 26, "$h_1$", color=s.dark(s.ENCODER))
    text(ax, W / 2, 326, "row 1: the left-to-right half has read only '8'; the right-to-left half",
         color=s.INK)
    text(ax, W / 2, 346, "has read '/3/95', so it knows the '8' is a month", color=s.INK)
    return fig


DIAGRAMS = {
    "ch02_attention_steps": attention_steps,
    "ch02_two_decoders": two_decoders,
    "ch02_bidirectional": bidirectional,
}

ALT = {
    "ch02_attention_steps": (
        "Attention's three steps: the encoder states h1 to h5 are kept as the rows of the n × d matrix H, and the "
        "decoder state q_t is compared with every row, giving one score per row (step 1, the dot product of q_t "
        "and h_i). A softmax turns the scores into weights that are positive and sum to 1, drawn as purple cells "
        "whose shade is the weight, the third row's the darkest (step 2), and the weighted sum of the rows is the "
        "context c_t, one 1 × d vector, which goes to the decoder (step 3)."),
    "ch02_two_decoders": (
        "Two decoders, one output step each; left, Bahdanau's: the previous decoder state q_{t-1} attends over H, "
        "and the GRU cell updates q_{t-1} with the context c_t and the previous output y_{t-1}, giving q_t; the "
        "readout, an affine map (a maxout layer in the paper), reads q_t, c_t and y_{t-1}, one arrow each. "
        "Right, Luong's: the RNN "
        "cell runs first on q_{t-1} and y_{t-1}, giving q_t, which then attends over H; the context and q_t form "
        "the attentional state, tanh of W_c times c_t and q_t joined, and the output layer W_s reads it."),
    "ch02_bidirectional": (
        "A bidirectional encoder reading the characters 8 / 3 / 9 5: one row of recurrent cells runs left to "
        "right, another right to left, and every row of H joins the two states of its character side by side. "
        "The row of the first character, h1, is highlighted: its left-to-right half has read only the 8, its "
        "right-to-left half has read /3/95 as well, so it can tell that the 8 is a month."),
}
