"""Chapter 6's diagrams: what CCA finds in two views, the retrieval head with in-batch negatives, and
where the analogy between attention and CCA breaks.

The first view x plays the query's part in the retrieval head and the second view y the key's, so
the two views are drawn in the query and key colours throughout the chapter.
"""

from __future__ import annotations

from matplotlib.patches import Rectangle

from . import style as s
from .draw import arrow, box, canvas, cells, text

ROWS = 6  # samples drawn


def two_views():
    """Two paired views X and Y, a pair of weight vectors, and the two variates whose correlation CCA maximises."""
    W, H = 640, 392
    fig, ax = canvas(W, H)
    cs, top = 16, 86
    xl, yl = 40, 520                              # the two matrices' left edges
    # the two views, rows paired
    text(ax, xl + 2 * cs, 28, "view $X$", color=s.dark(s.QUERY))
    text(ax, yl + 1.5 * cs, 28, "view $Y$", color=s.dark(s.KEY))
    cells(ax, xl, top, ROWS, 4, s.QUERY, size=cs, shape="n × p")
    cells(ax, yl, top, ROWS, 3, s.KEY, size=cs, shape="n × q")
    text(ax, xl + 2 * cs, 58, "$p$ features", color=s.MUTED, size=s.SMALL)
    text(ax, yl + 1.5 * cs, 58, "$q$ features", color=s.MUTED, size=s.SMALL)
    # the variates Xa and Yb, one number per sample
    vx, vy = 196, 412
    cells(ax, vx, top, ROWS, 1, s.QUERY, size=cs, fill=s.tint(s.QUERY, 0.2))
    cells(ax, vy, top, ROWS, 1, s.KEY, size=cs, fill=s.tint(s.KEY, 0.2))
    text(ax, vx + cs / 2, 58, "$X a_1$")
    text(ax, vy + cs / 2, 58, "$Y b_1$")
    arrow(ax, (xl + 4 * cs + 8, top + 3 * cs), (vx - 8, top + 3 * cs))
    text(ax, (xl + 4 * cs + vx) / 2, top + 3 * cs - 16, r"$\times\, a_1$")
    arrow(ax, (yl - 8, top + 3 * cs), (vy + cs + 8, top + 3 * cs))
    text(ax, (yl + vy + cs) / 2, top + 3 * cs - 16, r"$\times\, b_1$")
    # row t of X and row t of Y describe the same sample
    for r in range(ROWS):
        yy = top + r * cs + cs / 2
        arrow(ax, (vx + cs + 4, yy), (vy - 4, yy), line_only=True, color=s.MUTED, lw=1, linestyle=(0, (2, 3)))
    text(ax, (vx + cs + vy) / 2, top + ROWS * cs + 18, "row $t$: the same sample", color=s.MUTED)
    box(ax, (vx + vy) / 2 - 150, top + ROWS * cs + 40, 316, 36, color=s.WEIGHT, fill=s.tint(s.WEIGHT, 0.88))
    text(ax, (vx + cs + vy) / 2, top + ROWS * cs + 58,
         r"$\rho_1 = \mathrm{corr}(X a_1,\, Y b_1)$, as large as possible")
    # the next pairs, and the SVD
    y0 = 270
    text(ax, W / 2, y0,
         r"then $a_2, b_2$: the best pair uncorrelated with $X a_1$ and $Y b_1$, so $\rho_2 \leq \rho_1$")
    text(ax, W / 2, y0 + 36, r"whitened, all of it is one SVD:  "
                             r"$C_{xx}^{-1/2}\, C_{xy}\, C_{yy}^{-1/2} = U\, \mathrm{diag}(\rho)\, V^{\top}$")
    text(ax, W / 2, y0 + 72, r"canonical directions $u_i$, $v_i$;   weights $a_i = C_{xx}^{-1/2} u_i$, "
                             r"$b_i = C_{yy}^{-1/2} v_i$", color=s.MUTED)
    return fig


def retrieval_head():
    """A batch of paired views: every x goes through W_Q, every y through W_K; the loss asks for the diagonal."""
    W, H = 640, 440
    fig, ax = canvas(W, H)
    cs, n = 18, 5                                       # cell size, pairs drawn
    gx, gy = 300, 150                                   # the weights grid, top-left
    # queries x_1..x_B down the left, through W_Q
    text(ax, 60, gy - 52, "queries", color=s.dark(s.QUERY))
    text(ax, 60, gy - 30, "$x_1, x_2, \\ldots$")
    for r in range(n):
        cy = gy + r * cs
        cells(ax, 24, cy + 2, 1, 4, s.QUERY, size=cs - 4)
    box(ax, 118, gy + 10, 70, 70, label="$W_Q$", color=s.QUERY)
    arrow(ax, (90, gy + n * cs / 2), (116, gy + n * cs / 2))
    arrow(ax, (190, gy + n * cs / 2), (gx - 10, gy + n * cs / 2))
    text(ax, 244, gy + n * cs / 2 - 14, "$q_i$")
    # keys y_1..y_B along the top, through W_K
    text(ax, gx + n * cs / 2, 20, "keys: the partners $y_1, y_2, \\ldots$", color=s.dark(s.KEY))
    for c in range(n):
        cells(ax, gx + c * cs + 2, 36, 3, 1, s.KEY, size=cs - 6)
    arrow(ax, (gx + n * cs / 2, 74), (gx + n * cs / 2, 84))
    box(ax, gx, 86, n * cs, 32, label="$W_K$", color=s.KEY)
    arrow(ax, (gx + n * cs / 2, 120), (gx + n * cs / 2, gy - 4))
    text(ax, gx + n * cs / 2 + 8, gy - 17, "$k_j$", ha="left")
    # the weights: softmax over each row, the diagonal is the true partner
    vals = [[0.7 if i == j else 0.08 for j in range(n)] for i in range(n)]
    vals[1][3], vals[3][1], vals[4][0] = 0.3, 0.25, 0.2
    cells(ax, gx, gy, n, n, s.WEIGHT, size=cs, values=vals)
    for i in range(n):
        ax.add_patch(Rectangle((gx + i * cs, gy + i * cs), cs, cs, fill=False, edgecolor=s.INK, linewidth=2,
                               clip_on=False))
    text(ax, gx + n * cs / 2, gy + n * cs + 16, "weights", color=s.dark(s.WEIGHT), shape="T_k × T_k")
    # annotations on the right
    ax0 = gx + n * cs + 26
    text(ax, ax0, gy + 8, "score  $s_{ij} = x_i^{\\top} W y_j$", ha="left")
    text(ax, ax0, gy + 38, "softmax along each row", ha="left", color=s.dark(s.WEIGHT))
    text(ax, ax0, gy + 66, "outlined: the true partner", ha="left")
    text(ax, ax0, gy + 90, "the rest: $T_k - 1$ negatives", ha="left", color=s.MUTED)
    # the loss and what the thing is called
    y0 = 312
    box(ax, 24, y0, 592, 54, color=s.GRADIENT, fill=s.tint(s.GRADIENT, 0.9))
    text(ax, W / 2, y0 + 17, "loss: $-\\log$ of the outlined weight, averaged over the rows")
    text(ax, W / 2, y0 + 39, "(the InfoNCE loss: every other key of the batch is a negative)", color=s.MUTED)
    text(ax, W / 2, 392, "two linear encoders, one per view, compared by a dot product:")
    text(ax, W / 2, 416, r"a dual encoder, with score matrix $W \propto W_Q W_K^{\top}$ ($p \times q$)",
         color=s.MUTED)
    return fig


def analogy_breaks():
    """Three rows: what CCA does and what attention does, for relations, competition and output."""
    W, H = 640, 436
    fig, ax = canvas(W, H)
    left, mid = 24, 250
    text(ax, 137, 26, "CCA", weight="bold")
    text(ax, 440, 26, "attention", weight="bold")
    rows = [52, 176, 300]
    heights = [110, 110, 118]
    for y, h in zip(rows, heights):
        box(ax, left, y, 212, h, color=s.NEUTRAL, fill=s.tint(s.NEUTRAL, 0.85))
        box(ax, mid, y, 366, h, color=s.NEUTRAL, fill=s.tint(s.NEUTRAL, 0.85))
    # 1. linear vs learned features
    y = rows[0]
    text(ax, left + 12, y + 22, "1  linear maps only:", ha="left", weight="bold")
    text(ax, left + 12, y + 52, r"$a^{\top} x$  and  $b^{\top} y$", ha="left")
    text(ax, left + 12, y + 82, "misses $y = x \\odot x$", ha="left", color=s.MUTED)
    box(ax, mid + 16, y + 30, 92, 48, label="tanh layer", color=s.QUERY, size=s.SMALL)
    arrow(ax, (mid + 110, y + 54), (mid + 140, y + 54))
    box(ax, mid + 142, y + 30, 58, 48, label="$W_Q$", color=s.QUERY)
    text(ax, mid + 212, y + 40, "features learned", ha="left")
    text(ax, mid + 212, y + 64, "with the score", ha="left")
    text(ax, mid + 212, y + 88, "(and so does deep CCA)", ha="left", color=s.MUTED, size=s.SMALL)
    # 2. one pair vs competition among keys
    y = rows[1]
    text(ax, left + 12, y + 22, "2  one pair at a time:", ha="left", weight="bold")
    text(ax, left + 12, y + 52, r"$\mathrm{corr}(X a,\, Y b)$", ha="left")
    text(ax, left + 12, y + 82, "no other sample counts", ha="left", color=s.MUTED)
    cs = 18
    text(ax, mid + 16, y + 30, "2 keys", ha="left")
    cells(ax, mid + 90, y + 21, 1, 2, s.WEIGHT, size=cs, values=[[0.75, 0.25]])
    text(ax, mid + 16, y + 70, "8 keys", ha="left")
    cells(ax, mid + 90, y + 61, 1, 8, s.WEIGHT, size=cs, values=[[0.3] + [0.1] * 7])
    text(ax, mid + 16, y + 96, "same score for the true key, less weight: keys compete", ha="left", color=s.MUTED,
         size=s.SMALL)
    # 3. nothing returned vs weighted values
    y = rows[2]
    text(ax, left + 12, y + 22, "3  returns directions", ha="left", weight="bold")
    text(ax, left + 12, y + 48, "and correlations:", ha="left", weight="bold")
    text(ax, left + 12, y + 80, "a similarity, nothing", ha="left", color=s.MUTED)
    text(ax, left + 12, y + 100, "read out with it", ha="left", color=s.MUTED)
    cells(ax, mid + 16, y + 24, 1, 4, s.WEIGHT, size=cs, values=[[0.6, 0.2, 0.15, 0.05]])
    text(ax, mid + 16 + 2 * cs, y + 14, "$w$", color=s.dark(s.WEIGHT))
    text(ax, mid + 102, y + 33, r"$\times$")
    cells(ax, mid + 116, y + 14, 4, 3, s.VALUE, size=12, shape="T_k × d_v", shape_side="below")
    arrow(ax, (mid + 160, y + 38), (mid + 196, y + 38))
    cells(ax, mid + 200, y + 32, 1, 3, s.VALUE, size=12)
    text(ax, mid + 218, y + 16, "$c$", color=s.dark(s.VALUE))
    text(ax, mid + 250, y + 30, "a weighted", ha="left")
    text(ax, mid + 250, y + 52, "average of", ha="left")
    text(ax, mid + 250, y + 74, "the values $V$", ha="left")
    return fig


DIAGRAMS = {
    "ch06_two_views": two_views,
    "ch06_retrieval_head": retrieval_head,
    "ch06_analogy_breaks": analogy_breaks,
}

ALT = {
    "ch06_two_views": (
        "Two matrices with paired rows, the view X (n samples, p features) and the view Y (the same n samples, q "
        "features), each multiplied by a weight vector, a1 and b1, to give one number per sample, Xa1 and Yb1, "
        "whose correlation rho1 CCA makes as large as possible; the next pair is the best one uncorrelated with the "
        "first, so rho2 is at most rho1. In whitened coordinates all of it is one SVD, Cxx to the minus one half "
        "times Cxy times Cyy to the minus one half equal to U diag(rho) V transposed, whose singular vectors are the "
        "canonical directions and give the weights."),
    "ch06_retrieval_head": (
        "A batch of T_k pairs: each query x_i goes through the linear map W_Q and each key y_j through W_K, and the "
        "score x_i transposed W y_j fills a T_k by T_k grid of attention weights, softmax along each row, whose "
        "outlined diagonal is each query's true partner while the other T_k minus 1 keys of its row are negatives. "
        "The loss is minus the log of the outlined weight, averaged over the rows: the InfoNCE loss of a dual "
        "encoder, two linear encoders compared by a dot product, whose score matrix W is proportional to W_Q times W_K "
        "transposed."),
    "ch06_analogy_breaks": (
        "Three rows compare CCA and attention: CCA uses linear maps only and misses y = x times x, while attention "
        "can put a tanh layer before W_Q and learn its features with the score, as deep CCA also does; a "
        "correlation scores one pair at a time, while in attention the same true key gets most of the weight among "
        "2 keys and much less among 8, because keys compete; CCA returns directions and correlations, while "
        "attention multiplies its weights w with the values V and returns their weighted average c. Each row is "
        "one place where the analogy between attention and CCA breaks."),
}
