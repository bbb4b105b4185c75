"""Chapter 5's diagrams: where attention sits in a Transformer; the model as published; one decoding step
with a KV cache; and a beam of two that drops the greedy path."""

from __future__ import annotations

from matplotlib.patches import Circle

from . import style as s
from .draw import arrow, box, canvas, cells, text


def three_attentions():
    """One encoder layer and one decoder layer, each stacked N times: the encoder's self-attention, the
    decoder's masked self-attention and the cross-attention from the decoder to the encoder's output, each
    with where its queries, keys and values come from."""
    W, H = 640, 388
    fig, ax = canvas(W, H)
    ex, dx, bw = 28, 340, 272                  # left edges of the encoder and decoder columns; column width
    sw, sh = 200, 38                           # a sublayer box
    esx, dsx = ex + (bw - sw) / 2, dx + (bw - sw) / 2
    ea, da = esx + 36, dsx + 36                # where the arrows run up each column
    note = {"color": s.MUTED, "size": s.SMALL, "ha": "left"}
    # the encoder layer: self-attention, then feed-forward
    box(ax, ex, 150, bw, 160, color=s.ENCODER, radius=10)
    text(ax, ex + bw - 14, 168, "encoder layer  × N", ha="right", color=s.dark(s.ENCODER))
    box(ax, esx, 250, sw, sh, "self-attention", color=s.WEIGHT)
    box(ax, esx, 188, sw, sh, "feed-forward", color=s.NEUTRAL)
    arrow(ax, (ea, 250), (ea, 188 + sh + 1))
    text(ax, ea + 10, 298, "Q, K, V: the input", **note)
    # the decoder layer: masked self-attention, cross-attention, feed-forward
    box(ax, dx, 62, bw, 248, color=s.DECODER, radius=10)
    text(ax, dx + bw - 14, 80, "decoder layer  × N", ha="right", color=s.dark(s.DECODER))
    box(ax, dsx, 250, sw, sh, "masked self-attention", color=s.WEIGHT)
    box(ax, dsx, 176, sw, sh, "cross-attention", color=s.WEIGHT)
    box(ax, dsx, 100, sw, sh, "feed-forward", color=s.NEUTRAL)
    arrow(ax, (da, 250), (da, 176 + sh + 1))
    arrow(ax, (da, 176), (da, 100 + sh + 1))
    text(ax, da + 10, 298, "Q, K, V: output, masked", **note)
    text(ax, da + 10, 232, "Q: decoder; K, V: encoder", **note)
    # the encoder's output feeds every decoder layer's cross-attention
    blue = s.dark(s.ENCODER)
    arrow(ax, (ea, 188), (ea, 122), line_only=True, color=blue)
    arrow(ax, (ea - 0.8, 122), (320, 122), line_only=True, color=blue)
    arrow(ax, (320, 121.2), (320, 195), line_only=True, color=blue)
    arrow(ax, (319.2, 195), (dsx - 2, 195), color=blue)
    text(ax, ea + 8, 108, "encoder output: keys and values", ha="left", color=blue, size=s.SMALL)
    # inputs below, the next token above
    for x0, xa, label in ((ex, ea, "input tokens + positions"), (dx, da, "output so far + positions")):
        text(ax, x0 + bw / 2, 364, label)
        arrow(ax, (xa, 350), (xa, 250 + sh + 1))
    text(ax, da, 26, "next token", color=s.dark(s.DECODER))
    arrow(ax, (da, 100), (da, 40))
    return fig


_DASH = (0, (4, 3))


def _residual_sublayer(ax, cx, y, label, color, rx):
    """A sublayer box (top at ``y``) under its add & norm box, with the dropout on the sublayer's output and
    the residual line at ``x = rx`` (left or right of the boxes) from below the sublayer into the add & norm.
    Returns the top of the add & norm box."""
    sw, sh, nw, nh = 186, 30, 130, 24
    box(ax, cx - sw / 2, y, sw, sh, label, color=color)
    ny = y - 16 - nh
    box(ax, cx - nw / 2, ny, nw, nh, "add & norm", color=s.NEUTRAL, size=s.SMALL)
    arrow(ax, (cx, y), (cx, ny + nh + 1))
    text(ax, cx + 8, y - 8, "dropout", ha="left", color=s.MUTED, size=s.SMALL)
    # the residual: from the sublayer's input, round the box, into the add & norm
    base = y + sh + 9
    arrow(ax, (cx, base), (rx, base), line_only=True, lw=1.3)
    arrow(ax, (rx, base + 0.6), (rx, ny + nh / 2), line_only=True, lw=1.3)
    side = 1 if rx > cx else -1
    arrow(ax, (rx - side * 0.6, ny + nh / 2), (cx + side * (nw / 2 + 1), ny + nh / 2), lw=1.3, head=8)
    return ny


def published():
    """The Transformer of Vaswani et al. (2017), bottom to top: embeddings scaled by sqrt(d_m) plus
    sinusoidal positions (dropout on the sum); N = 6 encoder layers (self-attention, feed-forward) and N = 6
    decoder layers (masked self-attention, cross-attention, feed-forward), each sublayer's output dropped out,
    added to its input and normalised (post-LN); a linear layer sharing the embedding matrix, and a softmax."""
    W, H = 640, 640
    fig, ax = canvas(W, H)
    ecx, dcx = 170, 470                        # the centres of the encoder and decoder columns
    for cx, below in ((ecx, "input tokens"), (dcx, "output so far (shifted right)")):
        text(ax, cx, 620, below)
        arrow(ax, (cx, 606), (cx, 590 + 1))
        box(ax, cx - 110, 560, 220, 30, r"embedding × √$d_m$", color=s.NEUTRAL)
        arrow(ax, (cx, 560), (cx, 536 + 1))
        ax.add_patch(Circle(
            (cx, 526), 10, facecolor=s.CARD, edgecolor=s.INK, linewidth=1.4, clip_on=False))
        text(ax, cx, 525, "+", size=s.TEXT)
        text(ax, cx - 18, 526, "sinusoidal positions", ha="right", color=s.MUTED, size=s.SMALL)
        text(ax, cx + 8, 503, "dropout", ha="left", color=s.MUTED, size=s.SMALL)
        arrow(ax, (cx, 516), (cx, 474 + 1))
    # the encoder: N layers of self-attention and feed-forward
    box(ax, ecx - 140, 262, 280, 212, color=s.ENCODER, fill="none", radius=10)
    text(ax, ecx + 128, 280, "× N = 6", ha="right", color=s.dark(s.ENCODER))
    top = _residual_sublayer(ax, ecx, 424, "multi-head self-attention", s.WEIGHT, ecx - 118)
    arrow(ax, (ecx, top), (ecx, 344 + 30 + 9 + 1))
    top = _residual_sublayer(ax, ecx, 344, "feed-forward", s.NEUTRAL, ecx - 118)
    # the decoder: N layers of masked self-attention, cross-attention and feed-forward; its residual lines run
    # on the right, so that the encoder's output enters the cross-attention from the left without crossing one
    box(ax, dcx - 140, 182, 280, 292, color=s.DECODER, fill="none", radius=10)
    text(ax, dcx + 128, 200, "× N = 6", ha="right", color=s.dark(s.DECODER))
    dtop = _residual_sublayer(ax, dcx, 424, "masked self-attention", s.WEIGHT, dcx + 118)
    arrow(ax, (dcx, dtop), (dcx, 344 + 30 + 9 + 1))
    dtop = _residual_sublayer(ax, dcx, 344, "cross-attention", s.WEIGHT, dcx + 118)
    arrow(ax, (dcx, dtop), (dcx, 264 + 30 + 9 + 1))
    dtop = _residual_sublayer(ax, dcx, 264, "feed-forward", s.NEUTRAL, dcx + 118)
    # the encoder's output: keys and values of every decoder layer's cross-attention
    blue = s.dark(s.ENCODER)
    arrow(ax, (ecx, top), (ecx, 236), line_only=True, color=blue)
    arrow(ax, (ecx - 0.7, 236), (322, 236), line_only=True, color=blue)
    arrow(ax, (321.3, 236), (321.3, 359), line_only=True, color=blue)
    arrow(ax, (320.6, 359), (dcx - 93 - 1, 359), color=blue)
    text(ax, ecx, 222, "encoder output: K, V", color=blue, size=s.SMALL)
    # the output layer
    arrow(ax, (dcx, dtop), (dcx, 142 + 1))
    box(ax, dcx - 110, 112, 220, 30, "linear (embedding matrix)", color=s.NEUTRAL)
    arrow(ax, (dcx, 112), (dcx, 88 + 1))
    box(ax, dcx - 60, 62, 120, 26, "softmax", color=s.NEUTRAL)
    arrow(ax, (dcx, 62), (dcx, 38 + 1))
    text(ax, dcx, 26, "next-token probabilities", color=s.dark(s.DECODER))
    # the sizes of the base model
    note = {"ha": "left", "color": s.MUTED, "size": s.SMALL}
    text(ax, 30, 40, r"base model: $d_m$ = 512, 8 heads,", **note)
    text(ax, 30, 62, r"$d_{ff}$ = 2048, dropout 0.1,", **note)
    text(ax, 30, 84, "one matrix for both embeddings", **note)
    text(ax, 30, 106, "and the output layer", **note)
    return fig


def kv_cache():
    """Decoding step t in one decoder layer with a KV cache: only the newest position is projected; its key
    and value are appended to the self-attention's cache; its query reads all t cached keys; the cross-
    attention's keys and values were computed once, from the encoder, and are read at every step."""
    W, H = 640, 420
    fig, ax = canvas(W, H)
    c, t = 14, 5
    # the newest position, projected once
    text(ax, 30, 26, "step $t$: one new position", ha="left", color=s.dark(s.DECODER))
    cells(ax, 42, 46, 1, 4, s.DECODER, size=c)
    text(ax, 112, 53, "$x_t$", ha="left")
    arrow(ax, (70, 60), (70, 84 + 1))
    box(ax, 24, 84, 150, 30, r"$W_Q$, $W_K$, $W_V$", color=s.NEUTRAL)
    rows = {}
    for k, (sym, role) in enumerate((("$q_t$", s.QUERY), ("$k_t$", s.KEY), ("$v_t$", s.VALUE))):
        y = 150 + 46 * k
        cells(ax, 42, y, 1, 4, role, size=c)
        text(ax, 104, y + c / 2, sym, ha="left")
        rows[sym] = y + c / 2
    arrow(ax, (30, 114), (30, rows["$v_t$"]), line_only=True, lw=1.3)
    for y in rows.values():
        arrow(ax, (29.4, y), (42 - 1, y), lw=1.3, head=8)
    # the self-attention's caches: rows 1..t-1 kept from earlier steps, row t appended now
    gx = 300
    for name, colour, top, sym, shape in (("K", s.KEY, rows["$k_t$"] - (t - 0.5) * c, "$k_t$", r"$t \times d_k$"),
                                        ("V", s.VALUE, rows["$v_t$"] + 20 - (t - 0.5) * c + 30, "$v_t$",
                                         r"$t \times d_v$")):
        cells(ax, gx, top, t - 1, 4, colour, size=c, fill=s.tint(colour, 0.8))
        cells(ax, gx, top + (t - 1) * c, 1, 4, colour, size=c)
        text(ax, gx + 4 * c + 12, top + 8, f"${name}$ cache", ha="left", shape=shape)
        text(ax, gx + 4 * c + 12, top + 32, "rows $1..t-1$ kept,", ha="left", color=s.MUTED, size=s.SMALL)
        text(ax, gx + 4 * c + 12, top + 52, "row $t$ appended", ha="left", color=s.MUTED, size=s.SMALL)
        arrow(ax, (134, rows[sym]), (gx - 4, top + (t - 0.5) * c), rad=0.0)
    # the query reads every cached key
    wy = 92
    cells(ax, gx, wy, 1, t, s.WEIGHT, size=c, values=[[0.15, 0.05, 0.5, 0.1, 0.2]])
    text(ax, gx + t * c + 12, wy + c / 2, r"$w_t$: $q_t$ against all $t$ keys", ha="left")
    text(ax, gx + t * c + 12, wy + c / 2 + 22, r"output: $w_t V$, one row", ha="left", color=s.MUTED, size=s.SMALL)
    arrow(ax, (134, rows["$q_t$"]), (gx - 4, wy + c / 2), rad=-0.15)
    k_top = rows["$k_t$"] - (t - 0.5) * c                  # the K cache's first row
    arrow(ax, (gx + 2 * c, k_top - 2), (gx + 2 * c, wy + c + 3), color=s.dark(s.KEY))
    # the cross-attention's keys and values: computed once
    ax.plot([24, 616], [336, 336], color=s.CARD_EDGE, linewidth=1.2)
    cy = 356
    cells(ax, 42, cy, 2, 8, s.KEY, size=c, fill=s.tint(s.KEY, 0.8))
    cells(ax, 182, cy, 2, 8, s.VALUE, size=c, fill=s.tint(s.VALUE, 0.8))
    text(ax, 42 + 4 * c, cy + 2 * c + 14, r"$S \times d_k$", color=s.MUTED)
    text(ax, 182 + 4 * c, cy + 2 * c + 14, r"$S \times d_v$", color=s.MUTED)
    text(ax, 340, cy + 4, "cross-attention $K$, $V$: from the encoder,", ha="left", size=s.SMALL)
    text(ax, 340, cy + 24, "computed once, read at every step", ha="left", size=s.SMALL)
    return fig


_TREE = {  # prefix: (column, y, probability, state); state: kept, dropped, greedy (dropped), finished
    "a": (1, 92, 0.52, "kept"), "b": (1, 252, 0.48, "kept"),
    "aa": (2, 52, 0.187, "greedy"), "ab": (2, 96, 0.166, "dropped"), "a<eos>": (2, 140, 0.166, "dropped"),
    "ba": (2, 206, 0.24, "kept"), "bb": (2, 296, 0.24, "kept"),
    "aa<eos>": (3, 52, 0.187, "greedy"), "ba<eos>": (3, 184, 0.144, "finished"), "baa": (3, 228, 0.096, "dropped"),
    "bb<eos>": (3, 274, 0.072, "dropped"), "bbb": (3, 318, 0.168, "kept"),
    "bbb<eos>": (4, 318, 0.168, "finished"),
}


def beam_tree():
    """A beam of 2 on a table language model: the greedy prefix "aa" is pushed out at step 2 by "ba" and "bb",
    and the beam ends with "bbb<eos>" (p = .168), less likely than greedy's "aa<eos>" (p = .187): a search error."""
    W, H = 640, 430
    fig, ax = canvas(W, H)
    xs = {0: 34, 1: 112, 2: 236, 3: 380, 4: 532}
    widths = {1: 72, 2: 104, 3: 120, 4: 132}
    for col, label in ((1, "step 1"), (2, "step 2"), (3, "step 3"), (4, "step 4")):
        text(ax, xs[col], 22, label, color=s.MUTED, size=s.SMALL)
    root = (xs[0], 172)
    ax.add_patch(Circle(
        root, 6, facecolor=s.INK, edgecolor=s.INK, clip_on=False))
    text(ax, xs[0], 150, "start", color=s.MUTED, size=s.SMALL)
    centre = {"": root}
    for prefix, (col, y, p, state) in _TREE.items():
        w = widths[col]
        parent = prefix[:-5] if prefix.endswith("<eos>") else prefix[:-1]
        if prefix == "bbb<eos>":
            parent = "bbb"
        px, py = centre[parent]
        pw = widths.get(_TREE[parent][0], 0) if parent else 12
        greedy = state == "greedy" or prefix in ("a",)
        colour = s.INK if state in ("kept", "finished") or greedy else s.MUTED
        style_kw = {} if state in ("kept", "finished") or greedy else {"linestyle": _DASH}
        arrow(ax, (px + pw / 2, py), (xs[col] - w / 2 - 2, y), color=colour, lw=2.4 if greedy else 1.3, head=8,
              **style_kw)
        if state in ("kept", "finished"):
            box(ax, xs[col] - w / 2, y - 14, w, 28, color=s.DECODER, lw=1.5)
        else:
            box(ax, xs[col] - w / 2, y - 14, w, 28, color=s.MUTED, fill="none", lw=1.2, linestyle=_DASH)
        label = prefix.replace("<eos>", "⟨eos⟩")
        text(ax, xs[col], y, f"{label}  {p:g}".replace("0.", "."), size=s.SMALL if col >= 3 else s.TEXT,
             weight="bold" if greedy else "normal")
        centre[prefix] = (xs[col], y)
    # the two results
    text(ax, xs[3], 86, "greedy's output, p = .187", color=s.INK, size=s.SMALL, weight="bold")
    text(ax, xs[3], 106, "(not in the beam)", color=s.MUTED, size=s.SMALL)
    text(ax, 532, 282, "the beam's output, p = .168", color=s.dark(s.DECODER), size=s.SMALL)
    # legend
    ly = 378
    box(ax, 30, ly - 10, 36, 20, color=s.DECODER)
    text(ax, 74, ly, "kept in the beam of 2", ha="left", size=s.SMALL)
    box(ax, 250, ly - 10, 36, 20, color=s.MUTED, fill="none", lw=1.2, linestyle=_DASH)
    text(ax, 294, ly, "dropped", ha="left", size=s.SMALL)
    arrow(ax, (400, ly), (436, ly), lw=2.4, head=8)
    text(ax, 444, ly, "greedy's path (bold)", ha="left", size=s.SMALL)
    text(ax, 320, 408, r"final ranking: $\log p$, or $\log p \, / \, \mathrm{length}^{\alpha}$ "
         "with length normalisation", color=s.MUTED, size=s.SMALL)
    return fig


DIAGRAMS = {"ch05_three_attentions": three_attentions, "ch05_published": published,
            "ch05_kv_cache": kv_cache, "ch05_beam_tree": beam_tree}

ALT = {
    "ch05_three_attentions": (
        "An encoder layer, repeated N times, reads the input tokens plus positions with self-attention, whose "
        "queries, keys and values all come from the input, then a feed-forward network, and passes its output on "
        "as keys and values. A decoder layer, repeated N times, reads the output written so far plus positions "
        "with masked self-attention, then cross-attention, whose queries come from the decoder and whose keys and "
        "values come from the encoder's output, then a feed-forward network, and writes the next token."),
    "ch05_published": (
        "The Transformer as published, read from the bottom up: input tokens and the output so far (shifted "
        "right) are embedded, scaled by the square root of d_m, given sinusoidal positions and dropout, "
        "then pass through N = 6 encoder layers (self-attention, feed-forward) and N = 6 decoder layers "
        "(masked self-attention, cross-attention on the encoder's output, feed-forward), every sublayer's "
        "output dropped out, added to its input and layer-normalised. A linear layer sharing the embedding "
        "matrix and a softmax give the next-token probabilities; the base model has d_m 512, 8 heads, "
        "d_ff 2048 and dropout 0.1."
    ),
    "ch05_kv_cache": (
        "One decoding step t with a KV cache: only the newest position x_t is projected into q_t, k_t and "
        "v_t, whose key and value are appended as row t to the self-attention's key and value caches (rows 1 "
        "to t-1 kept from earlier steps), and q_t is compared with all t cached keys, read from the key "
        "cache, to give one row of weights w_t. The cross-attention's keys and values, S rows from the "
        "encoder, are computed once and read at every step."
    ),
    "ch05_beam_tree": (
        "A beam of 2 on a small table language model over four steps: greedy decoding takes a (.52), then aa "
        "(.187), and ends there, with aa at probability .187, but the beam keeps ba and bb (.24 each) at step "
        "2, pushing aa out, and ends with bbb at probability .168, less likely than greedy's output: a "
        "search error. The final ranking is by log p, or by log p divided by length to the power alpha with "
        "length normalisation."
    ),
}
