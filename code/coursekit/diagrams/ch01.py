"""Chapter 1's diagrams: the plain encoder-decoder with its one vector, and the gradient path through time."""

from __future__ import annotations

from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

from . import style as s
from .draw import arrow, box, canvas, cells, text

D = 4  # cells drawn for a d-dimensional state


def _chain(ax, xs, cy, cw):
    """Arrows from cell to cell along ``cy``; a ``None`` in ``xs`` is an ellipsis the arrows pass through."""
    kw = {"zorder": 2}
    for i in range(len(xs) - 1):
        a, b = xs[i], xs[i + 1]
        if a is None:
            arrow(ax, (b - cw / 2 - 16, cy), (b - cw / 2, cy), **kw)
        elif b is None:
            text(ax, (a + xs[i + 2]) / 2, cy, "⋯")
            arrow(ax, (a + cw / 2, cy), (a + cw / 2 + 14, cy), line_only=True, **kw)
        else:
            arrow(ax, (a + cw / 2, cy), (b - cw / 2, cy), **kw)


def encoder_decoder():
    """The plain RNN encoder-decoder, unrolled: all states H stay behind, only h_n reaches the decoder."""
    W, H = 640, 296
    fig, ax = canvas(W, H)
    cw, ch, cy = 40, 34, 170           # cells: width, height, centre line
    top, bottom = 98, cy + 64          # state vectors / outputs above the cells; inputs below
    enc = [52, 132, None, 248]         # cell centres; None is an ellipsis
    dec = [392, 472, None, 592]
    cs = 11                            # a state vector: D cells of cs px

    # encoder: x_t -> cell -> h_t, each state also passed right
    for cx, x, h in zip(enc, ["$x_1$", "$x_2$", None, "$x_n$"], ["$h_1$", "$h_2$", None, "$h_n$"]):
        if cx is None:
            continue
        box(ax, cx - cw / 2, cy - ch / 2, cw, ch, color=s.ENCODER)
        text(ax, cx, bottom, x)
        arrow(ax, (cx, bottom - 14), (cx, cy + ch / 2 + 1))
        arrow(ax, (cx, cy - ch / 2), (cx, top + cs + 1), color=s.dark(s.ENCODER), lw=1.3, head=8)
        cells(ax, cx - D * cs / 2, top, 1, D, s.ENCODER, size=cs)
        text(ax, cx, top - 16, h, color=s.dark(s.ENCODER))
    text(ax, 190, top + cs / 2, "⋯", color=s.dark(s.ENCODER))
    _chain(ax, enc, cy, cw)

    # H: every state, kept inside the encoder
    box(ax, 24, top - 36, 256, 56, color=s.MUTED, fill="none", lw=1.2, radius=8, linestyle=(0, (4, 3)))
    text(ax, 152, 24, "all the states $H$", shape="n × d")
    text(ax, 152, 46, "not passed on to the decoder", color=s.MUTED)

    # the bottleneck: h_n alone crosses over
    bx, bs = (enc[3] + dec[0]) / 2, 13
    ax.add_patch(FancyBboxPatch((bx - D * bs / 2 - 7, cy - bs / 2 - 7), D * bs + 14, bs + 14,
                                boxstyle="round,pad=0,rounding_size=6", facecolor=s.tint(s.ENCODER, 0.82),
                                edgecolor=s.dark(s.ENCODER), linewidth=1.6, clip_on=False))
    cells(ax, bx - D * bs / 2, cy - bs / 2, 1, D, s.ENCODER, size=bs)
    arrow(ax, (enc[3] + cw / 2, cy), (bx - D * bs / 2 - 8, cy))
    arrow(ax, (bx + D * bs / 2 + 8, cy), (dec[0] - cw / 2 + 1, cy))
    text(ax, bx, cy - 32, "$h_n$", shape="1 × d")
    text(ax, bx, cy + 32, "the bottleneck", weight="bold")

    # decoder: <bos>, y_1, ... in; y_1, y_2, ... out; each output fed back as the next input
    for cx, y_in, y_out in zip(dec, ["<bos>", "$y_1$", None, "$y_{m-1}$"], ["$y_1$", "$y_2$", None, "$y_m$"]):
        if cx is None:
            continue
        box(ax, cx - cw / 2, cy - ch / 2, cw, ch, color=s.DECODER)
        text(ax, cx, bottom, y_in)
        arrow(ax, (cx, bottom - 14), (cx, cy + ch / 2 + 1))
        arrow(ax, (cx, cy - ch / 2), (cx, top + 8))
        text(ax, cx, top - 4, y_out, color=s.dark(s.DECODER))
    text(ax, 532, top - 4, "⋯", color=s.dark(s.DECODER))
    text(ax, 532, bottom, "⋯")
    _chain(ax, dec, cy, cw)
    for x0, x1 in [(dec[0], dec[1]), (dec[1], 532)]:   # each output fed back as the next input
        arrow(ax, (x0 + 12, top + 4), (x1 - 16, bottom - 12), color=s.dark(s.DECODER, 3.0), lw=1.4, head=8,
              linestyle=(0, (3, 2)))
    text(ax, 490, 24, r"writes $y_1, y_2, \ldots, y_m$")
    text(ax, 490, 46, "feeding each one back in", color=s.MUTED)

    # what each half is
    text(ax, 152, 274, "encoder", color=s.dark(s.ENCODER), weight="bold")
    text(ax, 490, 274, "decoder", color=s.dark(s.DECODER), weight="bold")
    return fig


def gradient_path():
    """The unrolled recurrence with the backward path: a product of Jacobians, clipping, and a gate's bypass."""
    W, H = 640, 544
    fig, ax = canvas(W, H)
    enc, grad = s.ENCODER, s.GRADIENT
    cw, ch, cy = 50, 36, 128                  # cells: width, height, centre line
    cell_x = {"1": 92, "t": 300, "n": 508}    # the three cells drawn; ellipses between them
    gaps = [196, 404]                         # where the ellipses sit
    loss_x = 598
    mids = [148, 244, 356, 452, 556]          # state arrows' midpoints: h_1, h_{t-1}, h_t, h_{n-1}, h_n

    # the gate, above
    text(ax, W / 2, 28, r"GRU:  $h_t = (1 - z_t) \odot h_{t-1} + z_t \odot \tilde h_t$")
    text(ax, W / 2, 56, r"with $z_t \approx 0$ the bypass carries $h_{t-1}$ over:  "
                        r"$\partial h_t / \partial h_{t-1} \approx I$", color=s.dark(enc))

    # forward: x_t into each cell, states left to right
    for (x0, x1), lab, mx in zip([(117, 180), (212, 275), (325, 388), (420, 483), (533, 580)],
                                 ["$h_1$", "$h_{t-1}$", "$h_t$", "$h_{n-1}$", "$h_n$"], mids):
        arrow(ax, (x0, cy), (x1, cy))
        text(ax, mx, cy + 20, lab, color=s.dark(enc))
    for x in gaps:
        text(ax, x, cy, "⋯")
    for name, cx in cell_x.items():
        ax.add_patch(FancyArrowPatch((cx - cw / 2 - 12, cy), (cx + cw / 2 + 12, cy), arrowstyle="-",
                                     connectionstyle="arc,angleA=90,angleB=90,armA=36,armB=36,rad=10",
                                     color=s.dark(enc, 3.0), linewidth=2.2, clip_on=False))
        box(ax, cx - cw / 2, cy - ch / 2, cw, ch, color=enc)
        arrow(ax, (cx, cy + 62), (cx, cy + ch / 2 + 1))
        text(ax, cx, cy + 76, f"$x_{name}$")
    # the gradient can take the bypass too, multiplied by about I
    bt = cell_x["t"]
    arrow(ax, (bt + cw / 2 + 4, cy - 46), (bt - cw / 2 - 4, cy - 46), color=grad, lw=1.6, head=8)
    text(ax, bt + cw / 2 + 10, cy - 46, r"$\times I$", ha="left", color=s.dark(grad))
    ax.add_patch(Circle((loss_x, cy), 16, facecolor=s.tint(s.NEUTRAL, 0.6), edgecolor=s.INK, linewidth=1.4,
                        clip_on=False))
    text(ax, loss_x, cy, "$L$")

    # backward: from the loss, right to left, each cell multiplies the gradient by its Jacobian
    by = 282
    text(ax, W / 2, by - 30,
         r"back to $x_1$: $n - 1$ Jacobians $\partial h_t / \partial h_{t-1}$, then $\partial h_1 / \partial x_1$",
         color=s.dark(grad))
    for x in mids:
        ax.add_patch(Circle((x, by), 4, facecolor=grad, edgecolor="none", clip_on=False))
    ax.add_patch(FancyArrowPatch((loss_x, cy + 17), (mids[4] + 6, by), arrowstyle="-|>,head_length=0.9,head_width=0.45",
                                 mutation_scale=10, connectionstyle="angle,angleA=-90,angleB=180,rad=12",
                                 color=grad, linewidth=2, clip_on=False))
    for a, b, lab, cx in [(4, 3, r"$\partial h_n / \partial h_{n-1}$", cell_x["n"]),
                          (2, 1, r"$\partial h_t / \partial h_{t-1}$", cell_x["t"]),
                          (0, None, r"$\partial h_1 / \partial x_1$", cell_x["1"])]:
        arrow(ax, (mids[a] - 6, by), (mids[b] + 6 if b is not None else 40, by), color=grad, lw=2)
        text(ax, cx, by + 26, "× " + lab, color=s.dark(grad))
    for a, b in [(3, 2), (1, 0)]:
        arrow(ax, (mids[a] - 6, by), (mids[b] + 6, by), color=grad, lw=2, line_only=True, linestyle=(0, (2, 3)))
    text(ax, 30, by, "$x_1$", ha="right", color=s.dark(grad))

    # its size at each step: one factor of about the recurrent gain per step back
    text(ax, 24, 356, r"its size at each step, for a recurrent gain $\gamma$:", ha="left", va="baseline")
    for row, (label, ratio, word) in enumerate([(r"$\gamma < 1$", 1 / 1.5, "vanishing"),
                                               (r"$\gamma > 1$", 1.4, "exploding")]):
        base = 404 + row * 52
        text(ax, 24, base - 20, label, ha="left", va="baseline")
        text(ax, 24, base, word, ha="left", va="baseline", color=s.dark(grad))
        for k, x in enumerate(reversed(mids)):
            hgt = max(2, 9 * ratio**k)
            ax.add_patch(Rectangle((x - 7, base - hgt), 14, hgt, facecolor=s.tint(grad, 0.35),
                                   edgecolor=s.dark(grad, 3.0), linewidth=1, clip_on=False))

    # clipping: on the total gradient g, just before the update
    box(ax, 24, 474, 592, 54, color=grad, fill=s.tint(grad, 0.88))
    text(ax, W / 2, 492, "all steps add up to the gradient $g$ of the weights; before the update,")
    text(ax, W / 2, 515,
         r"clipping caps its length at $\kappa$:  $g \leftarrow g \cdot \min(1,\, \kappa / \Vert g \Vert)$")
    return fig


DIAGRAMS = {
    "ch01_encoder_decoder": encoder_decoder,
    "ch01_gradient_path": gradient_path,
}

ALT = {
    "ch01_encoder_decoder": (
        "The plain RNN encoder-decoder unrolled: the encoder reads the tokens x1 to xn and computes a state at "
        "every step, together the n × d matrix H, which is not passed on; only its last state hn, one 1 × d vector "
        "(the bottleneck), starts the decoder, which writes y1 to ym, reading a start token first and then each "
        "token it wrote."),
    "ch01_gradient_path": (
        "An unrolled recurrence: cells read x1 to xn and pass states h1 to hn on to the loss L. Going back from L "
        "to x1, the gradient is multiplied by n - 1 Jacobians, each the derivative of a state with respect to the "
        "one before, and last by the derivative of h1 with respect to x1; its size shrinks step by step for a "
        "recurrent "
        "gain gamma below 1 (vanishing) and grows for gamma above 1 (exploding); a GRU's gate adds a bypass over "
        "each cell, through which the gradient passes multiplied by about the identity, and clipping rescales the "
        "total gradient g to g times min(1, kappa / norm of g) just before the weight update."),
}
