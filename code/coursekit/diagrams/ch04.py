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
    """Left: head h takes block h of the features of Q and of K, for every position; Q_h K_h^T is a full T x T
    score matrix, and the two add up to QK^T. Right: Q and K cut into two halves of time; each half meets only
    its own half of the keys, so only two corners of the T x T scores are computed."""
    W, H = 640, 344
    fig, ax = canvas(W, H)
    c, T, dh = 12, 6, 4
    shades = (0.5, 0.15)                      # block 1 lighter, block 2 darker
    # left: a cut of the features
    text(ax, 180, 22, "heads: cut the features", weight="bold")
    for h, y in enumerate((70, 190)):
        fill_q, fill_k = s.tint(s.QUERY, shades[h]), s.tint(s.KEY, shades[h])
        text(ax, 16, y + T * c / 2, f"head {h + 1}", ha="left")
        cells(ax, 84, y, T, dh, s.QUERY, size=c, fill=fill_q)
        text(ax, 84 + dh * c / 2, y - 14, f"$Q_{h + 1}$")
        cells(ax, 148, y, T, dh, s.KEY, size=c, fill=fill_k)
        text(ax, 148 + dh * c / 2, y - 14, f"$K_{h + 1}$")
        arrow(ax, (204, y + T * c / 2), (236, y + T * c / 2))
        cells(ax, 244, y, T, T, s.WEIGHT, size=c, fill=s.tint(s.WEIGHT, shades[h]))
        text(ax, 244 + T * c / 2, y - 14, f"$Q_{h + 1} K_{h + 1}^\\top$")
    text(ax, 140, 190 + T * c + 16, r"$T \times d_{\mathrm{head}}$ each", color=s.MUTED)
    text(ax, 244 + T * c / 2, 190 + T * c + 16, r"$T \times T$", color=s.MUTED)
    text(ax, 180, 302, "every head scores every pair of positions;", color=s.MUTED)
    text(ax, 180, 324, r"the two add up to $QK^\top$", color=s.MUTED)
    ax.plot([364, 364], [16, 328], color=s.CARD_EDGE, linewidth=1.2)
    # right: a cut of time
    text(ax, 502, 22, "not this: cut time", weight="bold")
    half, cq = T // 2, 10
    tx = 392
    for role, y, sym in ((s.QUERY, 66, "$Q$"), (s.KEY, 164, "$K$")):
        text(ax, tx + 4 * cq, y - 14, sym)
        cells(ax, tx, y, half, 2 * dh, role, size=cq, fill=s.tint(role, shades[0]))
        cells(ax, tx, y + half * cq + 5, half, 2 * dh, role, size=cq, fill=s.tint(role, shades[1]))
    text(ax, tx + 4 * cq, 164 + T * cq + 20, r"$T \times d_m$", color=s.MUTED)
    gx, gy = 540, 112
    arrow(ax, (tx + 8 * cq + 8, gy + T * c / 2), (gx - 8, gy + T * c / 2))
    _dashed_grid(ax, gx, gy, T, T, c)
    cells(ax, gx, gy, half, half, s.WEIGHT, size=c, fill=s.tint(s.WEIGHT, shades[0]))
    cells(ax, gx + half * c, gy + half * c, half, half, s.WEIGHT, size=c, fill=s.tint(s.WEIGHT, shades[1]))
    text(ax, gx + T * c / 2, gy + T * c + 16, r"$T \times T$", color=s.MUTED)
    text(ax, 502, 274, "each half meets only its own", color=s.MUTED)
    text(ax, 502, 296, "half of the keys: the dashed", color=s.MUTED)
    text(ax, 502, 318, "scores are never computed", color=s.MUTED)
    return fig


def split_merge():
    """(T, d_m) viewed as (T, n_h, d_head), then the head axis moved before time: (n_h, T, d_head). Merging
    runs the same two steps backwards. Below, the bug: a plain reshape to (n_h, T, d_head) hands each head
    whole positions, cut into pieces of d_head features."""
    W, H = 640, 396
    fig, ax = canvas(W, H)
    c, T, d = 16, 4, 3
    shades = (0.55, 0.15)                     # head 1's features lighter, head 2's darker

    def matrix(x, y, gap=0):
        for h in range(2):
            cells(ax, x + h * (d * c + gap), y, T, d, s.KEY, size=c, fill=s.tint(s.KEY, shades[h]))

    top = 60
    matrix(30, top)
    text(ax, 30 + d * c, top - 18, "$K$")
    text(ax, 30 + d * c, top + T * c + 16, r"$T \times d_m$", color=s.MUTED)
    arrow(ax, (142, top + T * c / 2), (196, top + T * c / 2))
    text(ax, 169, top - 12, "view", color=s.MUTED)
    matrix(206, top, gap=10)
    text(ax, 206 + d * c + 5, top + T * c + 16, r"$T \times n_h \times d_{\mathrm{head}}$", color=s.MUTED)
    text(ax, 206 + d * c / 2, top - 14, "head 1", size=s.SMALL)
    text(ax, 216 + 1.5 * d * c, top - 14, "head 2", size=s.SMALL)
    arrow(ax, (330, top + T * c / 2), (394, top + T * c / 2))
    text(ax, 362, top - 12, "transpose", color=s.MUTED)
    for h in range(2):
        y = 24 + h * (T * c + 16)
        cells(ax, 410, y, T, d, s.KEY, size=c, fill=s.tint(s.KEY, shades[h]))
        text(ax, 410 + d * c + 10, y + T * c / 2, f"head {h + 1}", ha="left")
    text(ax, 556, 24 + T * c + 8, r"$n_h \times T \times d_{\mathrm{head}}$", color=s.MUTED)
    arrow(ax, (400, 186), (150, 186), color=s.INK)
    text(ax, 275, 172, "merge: transpose back, then reshape", color=s.MUTED, size=s.SMALL)
    ax.plot([24, 616], [206, 206], color=s.CARD_EDGE, linewidth=1.2)
    # the bug: the memory read in order, d_head numbers at a time
    text(ax, 320, 228, "the bug: reshape (T, d_m) straight to (n_h, T, d_head)", weight="bold")
    y0 = 262
    matrix(30, y0)
    text(ax, 30 + d * c, y0 + T * c + 16, r"$T \times d_m$", color=s.MUTED)
    arrow(ax, (142, y0 + T * c / 2), (196, y0 + T * c / 2), color=s.GRADIENT)
    for h, x in enumerate((210, 400)):          # head h gets positions 2h+1, 2h+2, each cut in two rows
        for r in range(T):
            cells(ax, x, y0 + r * c, 1, d, s.KEY, size=c, fill=s.tint(s.KEY, shades[r % 2]))
        text(ax, x + d * c + 10, y0 + T * c / 2 - 11, f"head {h + 1}:", ha="left", color=s.dark(s.GRADIENT))
        text(ax, x + d * c + 10, y0 + T * c / 2 + 11, f"positions {2 * h + 1}, {2 * h + 2}", ha="left",
             color=s.dark(s.GRADIENT))
    text(ax, 320, 360, "each row is half a position: the right shape, the wrong content,", color=s.MUTED)
    text(ax, 320, 380, "and no error", color=s.MUTED)
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
        "Left, heads cut the features: head 1 takes Q_1 and K_1, the first block of features of the queries and "
        "of the keys for every position, and head 2 takes Q_2 and K_2, the second block; each pair gives a full "
        "T × T score matrix, Q_1 K_1ᵀ and Q_2 K_2ᵀ, so every head scores every pair of positions and the two add "
        "up to QKᵀ. Right, not this: Q and K cut into two halves of time; each half meets only its own half of "
        "the keys, so only two diagonal corners of the T × T scores are computed and the rest, drawn dashed, "
        "never are."),
    "ch04_split_merge": (
        "Splitting heads: the T × d_m matrix K, its features in two blocks of d_head, is viewed as "
        "T × n_h × d_head and then transposed to n_h × T × d_head, one T × d_head matrix per head holding that "
        "head's block of features for every position; merging transposes back and reshapes. Below, the bug: "
        "reshaping T × d_m straight to n_h × T × d_head reads the memory in order, d_head numbers per row, so "
        "head 1's four rows are the two halves of position 1 and the two halves of position 2, and head 2 gets "
        "positions 3 and 4 the same way: the right shape with the wrong content, and no error."),
    "ch04_two_lookup": (
        "Eight items, one marked F and one marked S: above, one head gives one row of weights, here almost all on "
        "F, and one weighted average, which holds F or a blur of F and S, never both. Below, two heads at the same "
        "width give two rows of weights, head 1 on F and head 2 on S, whose two averages, concatenated, hold F and "
        "S side by side."),
}
