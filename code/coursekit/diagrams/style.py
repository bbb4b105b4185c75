"""The course's visual language: one colour per role, one font, one card. Every diagram draws with these.

Colours are the Okabe-Ito palette (Okabe and Ito, *Color Universal Design*, 2008), chosen so that
readers with any common colour-vision deficiency can still tell the roles apart. Each role colour
fills shapes; text and thin strokes in a role's colour use :func:`dark`, the same hue darkened until
it reads on the card (contrast at least 4.5 : 1). Yellow (the queries) is therefore only ever a fill.

Sizes are in pixels: a diagram is drawn in a coordinate system of pixels (1 unit = 1 px, y down),
at most :data:`MAX_WIDTH` wide, and no text is smaller than :data:`SMALL` (subscripts included:
mathtext sets them at 0.7 of their symbol, so symbols use :data:`MATH`).
book/authoring.md documents all of this with examples.
"""

from __future__ import annotations

from matplotlib.colors import to_hex, to_rgb

# --- roles -----------------------------------------------------------------------------------------
ENCODER = "#0072B2"   # encoder states h_t, H                       (Okabe-Ito blue)
DECODER = "#E69F00"   # decoder states and what the decoder writes   (orange)
QUERY = "#F0E442"     # queries q_t, Q                               (yellow; fill only)
KEY = "#56B4E9"       # keys k_i, K                                  (sky blue)
VALUE = "#009E73"     # values v_i, V                                (bluish green)
WEIGHT = "#CC79A7"    # attention weights w_t, W                     (reddish purple)
GRADIENT = "#D55E00"  # gradients, backward paths, clipping          (vermillion)
INK = "#222222"       # text, forward arrows, outlines               (Okabe-Ito black, softened)
MUTED = "#666666"     # secondary text, what is not used (5.5 : 1 on the card)
NEUTRAL = "#BBBBBB"   # neutral shapes: tokens, inputs, anything without a role

ROLES = {
    "encoder": ENCODER, "decoder": DECODER, "query": QUERY, "key": KEY, "value": VALUE,
    "weight": WEIGHT, "gradient": GRADIENT, "neutral": NEUTRAL, "ink": INK,
}

# how strongly a role colour is mixed with white (style.tint) when it fills a shape
CELL_TINT = 0.45   # the cells of a vector or matrix
BOX_TINT = 0.75    # a box: a layer, an RNN cell, a block

# --- the card every diagram sits on (opaque, light in both site themes) -------------------------------
CARD = "#FBFAF6"
CARD_EDGE = "#D9D5CA"
CARD_RADIUS = 12
MAX_WIDTH = 640

# --- type --------------------------------------------------------------------------------------------
# DejaVu Sans ships with matplotlib, so the layout is measured with it; the fallbacks are narrower.
FONT_FAMILY = ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica", "sans-serif"]
TEXT = 14    # labels and notes
MATH = 17.2  # symbols and shape labels, as mathtext ($h_t$, $n \times d$); subscripts come out at 0.7: 12.04 px
SMALL = 12   # the smallest text anywhere

RC = {
    "svg.fonttype": "none",            # text stays <text>: searchable, translatable
    "svg.hashsalt": "attention-course",  # fixed ids, so the output is byte-for-byte reproducible
    "font.family": "sans-serif",
    "font.sans-serif": FONT_FAMILY[:-1],
    "mathtext.fontset": "dejavusans",
    "text.color": INK,
    "lines.solid_capstyle": "round",
    "path.simplify": False,
}


def _mix(color: str, other: str, amount: float) -> str:
    a, b = to_rgb(color), to_rgb(other)
    return to_hex(tuple((1 - amount) * x + amount * y for x, y in zip(a, b)))


def tint(color: str, amount: float = 0.7) -> str:
    """``color`` mixed with white: ``amount`` 0 is the colour, 1 is white. For large fills."""
    return _mix(color, "#FFFFFF", amount)


def _luminance(color: str) -> float:
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in to_rgb(color))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def dark(color: str, target: float = 4.5) -> str:
    """The same hue darkened (mixed with black) just enough to reach ``target`` contrast on the card:
    the colour for text and thin strokes of a role."""
    for step in range(101):
        c = _mix(color, "#000000", step / 100)
        if contrast(c, CARD) >= target:
            return c
    return "#000000"
