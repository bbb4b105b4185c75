"""Chapter 5's diagram: where attention sits in a Transformer, in its three places."""

from __future__ import annotations

from . import style as s
from .draw import arrow, box, canvas, text


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
    arrow(ax, (ea - 0.8, 122), (318, 122), line_only=True, color=blue)
    arrow(ax, (317.4, 122), (dsx - 2, 192), color=blue)
    text(ax, ea + 8, 108, "encoder output: keys and values", ha="left", color=blue, size=s.SMALL)
    # inputs below, the next token above
    for x0, xa, label in ((ex, ea, "input tokens + positions"), (dx, da, "output so far + positions")):
        text(ax, x0 + bw / 2, 364, label)
        arrow(ax, (xa, 350), (xa, 250 + sh + 1))
    text(ax, da, 26, "next token", color=s.dark(s.DECODER))
    arrow(ax, (da, 100), (da, 40))
    return fig


DIAGRAMS = {"ch05_three_attentions": three_attentions}

ALT = {
    "ch05_three_attentions": (
        "An encoder layer, repeated N times, reads the input tokens plus positions with self-attention, whose "
        "queries, keys and values all come from the input, then a feed-forward network, and passes its output on "
        "as keys and values. A decoder layer, repeated N times, reads the output written so far plus positions "
        "with masked self-attention, then cross-attention, whose queries come from the decoder and whose keys and "
        "values come from the encoder's output, then a feed-forward network, and writes the next token."),
}
