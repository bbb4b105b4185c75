"""Chapter 4's diagrams: heads cut the features and not time; splitting and merging heads as a reshape and
a transpose; and the two-lookup task, which one head cannot answer and two heads can."""

from __future__ import annotations

from . import style as s
from .draw import arrow, box, canvas, cells, text

_DASH = (0, (4, 3))


def _dashed_grid(ax, x, y, rows, cols, size):
    """A grid of empty cells with a dashed grey outline: scores that are never computed."""
    from matplotlib.patches import Rectangle
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x + c * size, y + r * size), size, size, facecolor="none", edgecolor=s.MUTED,
                                   linewidth=0.8, linestyle=_DASH, clip_on=False))


def feature_split():
    """Left: Q cut into two blocks of features; each block against K's block gives a full T x T score matrix.
    Right: Q cut into two halves of time; each half sees only its own keys, two corners of the T x T scores."""
    W, H = 640, 336
    fig, ax = canvas(W, H)
    c, T, E = 14, 6, 8
    # left: a cut of the features
    text(ax, 160, 24, "heads: cut the features", weight="bold")
    qx, qy = 30, 74
    cells(ax, qx, qy, T, E // 2, s.QUERY, size=c)
    cells(ax, qx + 4 * c + 6, qy, T, E // 2, s.QUERY, size=c, fill=s.tint(s.QUERY, 0.15))
    text(ax, qx + 2 * c, qy - 14, "$Q_1$")
    text(ax, qx + 6 * c + 6, qy - 14, "$Q_2$")
    text(ax, qx + 4 * c + 3, qy + T * c + 16, "T × E", color=s.MUTED)
    sx = 190
    for k, (y, lab) in enumerate(((52, r"$Q_1 K_1^\top$"), (170, r"$Q_2 K_2^\top$"))):
        arrow(ax, (qx + E * c + 14, qy + T * c / 2), (sx - 8, y + T * c / 2))
        cells(ax, sx, y, T, T, s.WEIGHT, size=c, fill=s.tint(s.WEIGHT, 0.45 if k == 0 else 0.2))
        text(ax, sx + T * c + 10, y + T * c / 2, lab, ha="left")
    text(ax, 160, 290, "every head sees every position;", color=s.MUTED)
    text(ax, 160, 312, r"the blocks add up to $QK^\top$", color=s.MUTED)
    ax.plot([320, 320], [16, 320], color=s.CARD_EDGE, linewidth=1.2)
    # right: a cut of time
    text(ax, 480, 24, "not this: cut time", weight="bold")
    tx, ty = 350, 74
    cells(ax, tx, ty, T // 2, E, s.QUERY, size=c)
    cells(ax, tx, ty + T // 2 * c + 6, T // 2, E, s.QUERY, size=c, fill=s.tint(s.QUERY, 0.15))
    text(ax, tx + E * c / 2, ty + T * c + 22, "T × E", color=s.MUTED)
    gx, gy = 520, 74
    arrow(ax, (tx + E * c + 10, ty + T * c / 2 + 3), (gx - 8, gy + T * c / 2 + 3))
    _dashed_grid(ax, gx, gy, T, T, c)
    half = T // 2
    cells(ax, gx, gy, half, half, s.WEIGHT, size=c, fill=s.tint(s.WEIGHT, 0.45))
    cells(ax, gx + half * c, gy + half * c, half, half, s.WEIGHT, size=c, fill=s.tint(s.WEIGHT, 0.2))
    text(ax, gx + T * c / 2, gy + T * c + 16, "T × T", color=s.MUTED)
    text(ax, 480, 268, "each half sees only its own", color=s.MUTED)
    text(ax, 480, 290, "positions: the dashed scores", color=s.MUTED)
    text(ax, 480, 312, "are never computed", color=s.MUTED)
    return fig


def split_merge():
    """(T, E) viewed as (T, H, d_head), then the head axis moved before time: (H, T, d_head). Merging runs
    the same two steps backwards. Below, the bug: a plain reshape to (H, T, d_head) hands whole positions to
    a head."""
    W, H = 640, 396
    fig, ax = canvas(W, H)
    c, T, d = 16, 4, 3
    shades = (0.55, 0.15)                     # head 1 lighter, head 2 darker

    def matrix(x, y, gap=0):
        for h in range(2):
            cells(ax, x + h * (d * c + gap), y, T, d, s.KEY, size=c, fill=s.tint(s.KEY, shades[h]))

    top = 60
    matrix(30, top)
    text(ax, 30 + d * c, top - 18, "$K$")
    text(ax, 30 + d * c, top + T * c + 16, "T × E", color=s.MUTED)
    arrow(ax, (142, top + T * c / 2), (196, top + T * c / 2))
    text(ax, 169, top - 12, "view", color=s.MUTED)
    matrix(206, top, gap=10)
    text(ax, 206 + d * c + 5, top + T * c + 16, r"$T \times H \times d_{head}$", color=s.MUTED)
    text(ax, 206 + d * c / 2, top - 14, "head 1", size=s.SMALL)
    text(ax, 216 + 1.5 * d * c, top - 14, "head 2", size=s.SMALL)
    arrow(ax, (330, top + T * c / 2), (394, top + T * c / 2))
    text(ax, 362, top - 12, "transpose", color=s.MUTED)
    for h in range(2):
        y = 24 + h * (T * c + 16)
        cells(ax, 410, y, T, d, s.KEY, size=c, fill=s.tint(s.KEY, shades[h]))
        text(ax, 410 + d * c + 10, y + T * c / 2, f"head {h + 1}", ha="left")
    text(ax, 556, 24 + T * c + 8, r"$H \times T \times d_{head}$", color=s.MUTED)
    arrow(ax, (400, 186), (150, 186), color=s.INK)
    text(ax, 275, 172, "merge: transpose back, then reshape", color=s.MUTED, size=s.SMALL)
    ax.plot([24, 616], [206, 206], color=s.CARD_EDGE, linewidth=1.2)
    # the bug
    text(ax, 320, 228, "the bug: reshape (T, E) straight to (H, T, d_head)", weight="bold")
    y0 = 262
    matrix(30, y0)
    text(ax, 30 + d * c, y0 + T * c + 16, "T × E", color=s.MUTED)
    arrow(ax, (142, y0 + T * c / 2), (196, y0 + T * c / 2), color=s.GRADIENT)
    for h in range(2):                         # head h gets rows 2h, 2h+1, read in memory order
        y = y0 - 8 + h * (2 * c + 12)
        for r in range(2):
            cells(ax, 214, y + r * c, 1, d, s.KEY, size=c, fill=s.tint(s.KEY, shades[0]))
            cells(ax, 214 + d * c, y + r * c, 1, d, s.KEY, size=c, fill=s.tint(s.KEY, shades[1]))
        text(ax, 214 + 2 * d * c + 10, y + c, f"head {h + 1}: positions {2 * h + 1}, {2 * h + 2}", ha="left",
             color=s.dark(s.GRADIENT))
    text(ax, 320, 376, "the right shape with the wrong content, and no error", color=s.MUTED)
    return fig


def two_lookup():
    """Eight items, two of them marked. One head: one row of weights, one average of the two marked vectors.
    Two heads at the same width: two rows, each on one marked item, concatenated into both vectors."""
    W, H = 640, 356
    fig, ax = canvas(W, H)
    c, n = 22, 8
    first, second = 2, 5
    ix = 200
    text(ax, ix + n * c / 2, 20, "eight items, two marked", color=s.MUTED)
    cells(ax, ix, 36, 1, n, s.VALUE, size=c)
    text(ax, ix + first * c + c / 2, 36 + c + 12, "F", size=s.SMALL, weight="bold")
    text(ax, ix + second * c + c / 2, 36 + c + 12, "S", size=s.SMALL, weight="bold")

    def row(y, peaks, label):
        values = [0.03] * n
        for pos, v in peaks:
            values[pos] = v
        cells(ax, ix, y, 1, n, s.WEIGHT, size=c, values=[values])
        text(ax, ix - 12, y + c / 2, label, ha="right")

    # one head
    text(ax, 20, 100, "one head", weight="bold", ha="left")
    box(ax, 20, 114, 64, 30, label="$q$", color=s.QUERY)
    arrow(ax, (88, 129), (ix - 36, 129))
    row(118, [(first, 0.95)], "")
    text(ax, ix - 12, 129, "$w$", ha="right")
    arrow(ax, (ix + n * c + 8, 129), (418, 129))
    cells(ax, 428, 120, 1, 4, s.VALUE, size=16, fill=s.tint(s.VALUE, 0.2))
    text(ax, 504, 129, "one average:", ha="left", color=s.MUTED)
    text(ax, 504, 151, "F, or a blur", ha="left", color=s.MUTED)
    text(ax, 504, 173, "of F and S", ha="left", color=s.MUTED)
    ax.plot([24, 616], [196, 196], color=s.CARD_EDGE, linewidth=1.2)
    # two heads
    text(ax, 20, 216, "two heads, same width", weight="bold", ha="left")
    box(ax, 20, 262, 64, 30, label="$q$", color=s.QUERY)
    for k, (y, peak) in enumerate(((238, first), (286, second))):
        arrow(ax, (88, 277), (ix - 70, y + c / 2))
        row(y, [(peak, 0.95)], "")
        text(ax, ix - 12, y + c / 2, f"head {k + 1}", ha="right", size=s.SMALL)
        arrow(ax, (ix + n * c + 8, y + c / 2), (440, 256 + k * 16))
    cells(ax, 450, 256, 1, 4, s.VALUE, size=16, fill=s.tint(s.VALUE, 0.2))
    cells(ax, 450 + 64, 256, 1, 4, s.VALUE, size=16, fill=s.tint(s.VALUE, 0.05))
    text(ax, 514, 296, "concatenated:", color=s.MUTED)
    text(ax, 514, 318, "F and S, side by side", color=s.MUTED)
    return fig


DIAGRAMS = {
    "ch04_feature_split": feature_split,
    "ch04_split_merge": split_merge,
    "ch04_two_lookup": two_lookup,
}

ALT = {
    "ch04_feature_split": (
        "Left: the T × E query matrix Q is cut into two blocks of features, Q_1 and Q_2; each block against the "
        "same block of the keys gives a full T × T score matrix, Q_1 K_1ᵀ and Q_2 K_2ᵀ, so every head sees every "
        "position and the two add up to QKᵀ. Right: Q cut instead into two halves of time; each half sees only "
        "its own positions, so only two diagonal corners of the T × T scores are computed and the rest, drawn "
        "dashed, never are."),
    "ch04_split_merge": (
        "Splitting heads: the T × E matrix K, its features in two blocks of d_head, is viewed as T × H × d_head "
        "and then transposed to H × T × d_head, one T × d_head matrix per head holding that head's block of "
        "features for every position; merging transposes back and reshapes. Below, the bug: reshaping T × E "
        "straight to H × T × d_head reads the memory in order, so head 1 gets positions 1 and 2 whole and head 2 "
        "positions 3 and 4, the right shape with the wrong content, and no error."),
    "ch04_two_lookup": (
        "Eight items, one marked F and one marked S: above, one head gives one row of weights, here almost all on "
        "F, and one weighted average, which holds F or a blur of F and S, never both. Below, two heads at the same "
        "width give two rows of weights, head 1 on F and head 2 on S, whose two averages, concatenated, hold F and "
        "S side by side."),
}
