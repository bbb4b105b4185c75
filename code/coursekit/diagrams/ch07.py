"""Chapter 7's diagrams: what plausibility and faithfulness each compare an explanation with, the six tests
of Jain & Wallace and Wiegreffe & Pinter in one picture, and the model-consistent adversary trained against a
base model.

Attention weights are purple cells (or words) shaded by their size; the base model is drawn in the encoder's
blue, the adversary it is compared with in grey, and the loss and its gradient in vermillion.
"""

from __future__ import annotations

from . import style as s
from .draw import arrow, box, canvas, cells, text

REVIEW = ["the", "plot", "was", "dull", "but", "the", "music", "was", "superb"]
MODEL_WEIGHTS = [0.01, 0.03, 0.01, 0.05, 0.72, 0.02, 0.04, 0.02, 0.10]   # peaked on "but", as the BiLSTM's


def _word_row(ax, x, y, words, weights, width=48, height=28, gap=4, outline=None):
    """Words in boxes shaded from white (weight 0) to full purple (weight 1); ``outline`` is the index of a
    word drawn with a thick ink edge."""
    for i, (w, a) in enumerate(zip(words, weights)):
        box(ax, x + i * (width + gap), y, width, height, color=s.WEIGHT, fill=s.tint(s.WEIGHT, 1 - a),
            lw=2.6 if i == outline else 1.0, radius=4)
        text(ax, x + i * (width + gap) + width / 2, y + height / 2, w, size=s.SMALL)
    return x + len(words) * (width + gap) - gap


def plausible_faithful():
    """One explanation (a score per word), compared once with a person's rationale and once with the model."""
    W, H = 640, 420
    fig, ax = canvas(W, H)
    text(ax, W / 2, 26, "an explanation: one score per word (here the attention)", color=s.dark(s.WEIGHT))
    right = _word_row(ax, 84, 46, REVIEW, MODEL_WEIGHTS)
    text(ax, W / 2, 96, "the model predicts:  positive", color=s.dark(s.ENCODER))
    # two comparisons
    lx, rx, top, bw, bh = 20, 330, 150, 290, 250
    arrow(ax, (W / 2 - 40, 108), (lx + bw / 2, top - 4), rad=0.15)
    arrow(ax, (W / 2 + 40, 108), (rx + bw / 2, top - 4), rad=-0.15)
    box(ax, lx, top, bw, bh, color=s.NEUTRAL, fill=s.tint(s.NEUTRAL, 0.88))
    box(ax, rx, top, bw, bh, color=s.ENCODER, fill=s.tint(s.ENCODER, 0.92))
    text(ax, lx + bw / 2, top + 22, "plausible?", weight="bold")
    text(ax, lx + bw / 2, top + 46, "compared with a person", color=s.MUTED)
    text(ax, lx + bw / 2, top + 66, "(here: the planted rule)", color=s.MUTED)
    words = ["but", "the", "music", "was", "superb"]
    _word_row(ax, lx + 18, top + 86, words, [0, 0, 0, 0, 1], width=46, gap=6, outline=4)
    text(ax, lx + bw / 2, top + 140, "the evidence: the first sentiment", size=s.SMALL)
    text(ax, lx + bw / 2, top + 158, "word after but", size=s.SMALL)
    text(ax, lx + bw / 2, top + 194, "does the top word match?", weight="bold", size=s.SMALL)
    text(ax, lx + bw / 2, top + 216, "measured by precision at k", color=s.MUTED, size=s.SMALL)
    text(ax, rx + bw / 2, top + 22, "faithful?", weight="bold")
    text(ax, rx + bw / 2, top + 46, "compared with the model itself", color=s.MUTED)
    text(ax, rx + bw / 2, top + 66, "(an intervention)", color=s.MUTED)
    text(ax, rx + 22, top + 100, "delete the top words:", ha="left", size=s.SMALL)
    text(ax, rx + 22, top + 122, "does the prediction fall?", ha="left", size=s.SMALL)
    text(ax, rx + 22, top + 150, "keep only the top words:", ha="left", size=s.SMALL)
    text(ax, rx + 22, top + 172, "does the prediction stay?", ha="left", size=s.SMALL)
    text(ax, rx + bw / 2, top + 206, "measured by comprehensiveness", color=s.MUTED, size=s.SMALL)
    text(ax, rx + bw / 2, top + 226, "and sufficiency (ERASER)", color=s.MUTED, size=s.SMALL)
    del right
    return fig


def _test_box(ax, x, y, w, h, number, question, how, color):
    box(ax, x, y, w, h, color=color, fill=s.tint(color, 0.9))
    text(ax, x + 14, y + 20, f"{number}  {question}", ha="left", weight="bold", size=s.SMALL)
    for i, line in enumerate(how):
        text(ax, x + 30, y + 42 + 18 * i, line, ha="left", size=s.SMALL, color=s.MUTED if i else s.INK)


def six_tests():
    """The model once across the top; below it Jain & Wallace's two tests and Wiegreffe & Pinter's four."""
    W, H = 640, 520
    fig, ax = canvas(W, H)
    # the model: tokens, states, weights, output
    y = 30
    cells(ax, 40, y, 1, 6, s.NEUTRAL, size=18)
    text(ax, 94, y + 36, "tokens $x_t$", color=s.MUTED, size=s.SMALL)
    arrow(ax, (152, y + 9), (186, y + 9))
    box(ax, 190, y - 8, 84, 34, label="BiLSTM", color=s.ENCODER)
    arrow(ax, (276, y + 9), (306, y + 9))
    cells(ax, 310, y, 1, 6, s.ENCODER, size=18)
    text(ax, 364, y + 36, "states $h_t$", color=s.dark(s.ENCODER), size=s.SMALL)
    arrow(ax, (422, y + 9), (448, y + 9))
    cells(ax, 452, y, 1, 6, s.WEIGHT, size=18, values=[[0.05, 0.1, 0.6, 0.1, 0.1, 0.05]])
    text(ax, 506, y + 36, "weights $w_t$", color=s.dark(s.WEIGHT), size=s.SMALL)
    arrow(ax, (564, y + 9), (590, y + 9))
    text(ax, 606, y + 9, r"$\hat y$")
    # two columns of tests
    top, h, gap = 100, 84, 12
    lx, rx, w = 16, 326, 298
    text(ax, lx + w / 2, top - 12 + 6, "Jain & Wallace: is it the explanation?", weight="bold",
         color=s.dark(s.GRADIENT), size=s.SMALL)
    text(ax, rx + w / 2, top - 12 + 6, "Wiegreffe & Pinter: might it be?", weight="bold",
         color=s.dark(s.ENCODER), size=s.SMALL)
    y0 = top + 8
    _test_box(ax, lx, y0, w, h, "1", "agrees with other measures?",
              [r"Kendall $\tau$ of $w$ with the gradient", "and with leave-one-out"], s.GRADIENT)
    _test_box(ax, lx, y0 + h + gap, w, h, "2", "other weights, same output?",
              ["permute $w$; search the adversary", r"max JSD with $|\Delta \hat y| \leq \varepsilon$"], s.GRADIENT)
    _test_box(ax, rx, y0, w, h, "3", "is attention needed at all?",
              ["retrain with $w_t = 1/L$ (uniform)", "same accuracy: no test case"], s.ENCODER)
    _test_box(ax, rx, y0 + (h + gap), w, h, "4", "how far do seeds move it?",
              ["JSD between retrained models", "a yardstick for the adversary"], s.ENCODER)
    _test_box(ax, rx, y0 + 2 * (h + gap), w, h, "5", "useful to another model?",
              ["freeze $w$, train a model", "without context on it"], s.ENCODER)
    _test_box(ax, rx, y0 + 3 * (h + gap), w, h, "6", "can a trained model differ?",
              ["train a second model: same $\\hat y$,", "weights far away (TVD, JSD)"], s.ENCODER)
    # what each family touches
    ty = y0 + 2 * (h + gap) + 14
    text(ax, lx + w / 2, ty, "1 and 2 edit or compare the weights", size=s.SMALL)
    text(ax, lx + w / 2, ty + 20, "of one trained model", size=s.SMALL)
    text(ax, lx + w / 2, ty + 56, "3 to 6 retrain: they ask about", size=s.SMALL)
    text(ax, lx + w / 2, ty + 76, "models, not about edits of one", size=s.SMALL)
    return fig


def trained_adversary():
    """Base model (frozen) and adversary (trained) on the same review; Wiegreffe & Pinter's loss,
    TVD - lambda * KL, written with the word "loss" (L is the number of tokens in the notation)."""
    W, H = 640, 372
    fig, ax = canvas(W, H)
    text(ax, W / 2, 24, "the same review $x$, every training review", color=s.MUTED)
    top, bw, bh = 48, 260, 120
    for x0, title, colour, weights, sub in ((30, "base model: trained, frozen", s.ENCODER,
                                             [0.05, 0.05, 0.8, 0.05, 0.05], ("$\\hat y$", "$w$")),
                                            (350, "adversary: fresh weights, no labels", s.NEUTRAL,
                                             [0.1, 0.7, 0.0, 0.1, 0.1], ("$\\tilde y$", "$\\tilde w$"))):
        box(ax, x0, top, bw, bh, color=colour, fill=s.tint(colour, 0.9))
        text(ax, x0 + bw / 2, top + 20, title, weight="bold", size=s.SMALL)
        box(ax, x0 + 20, top + 38, 84, 30, label="BiLSTM", color=colour, size=s.SMALL)
        cells(ax, x0 + 136, top + 44, 1, 5, s.WEIGHT, size=18, values=[weights])
        text(ax, x0 + 62, top + 96, f"output {sub[0]}")
        text(ax, x0 + 181, top + 96, sub[1], color=s.dark(s.WEIGHT))
        arrow(ax, (x0 + 62, top + bh - 6), (x0 + 62, 212))
        arrow(ax, (x0 + 181, top + bh - 6), (x0 + 181, 212))
    ly, lh = 216, 62
    box(ax, 30, ly, 580, lh, color=s.GRADIENT, fill=s.tint(s.GRADIENT, 0.9))
    text(ax, W / 2, ly + 22, r"loss $= \mathrm{TVD}(\tilde y, \hat y) \;-\; \lambda\,"
                             r"\mathrm{KL}(\tilde w \,\|\, w)$")
    text(ax, W / 2, ly + 46, "copy the outputs, but attend elsewhere", color=s.MUTED, size=s.SMALL)
    # the gradient updates the adversary only
    arrow(ax, (600, ly), (604, top + bh + 2), color=s.GRADIENT, rad=0.0)
    text(ax, 592, 196, "update", color=s.dark(s.GRADIENT), size=s.SMALL, ha="right")
    text(ax, W / 2, 310, r"$\lambda = 0$: the control, asked only to copy the outputs")
    text(ax, W / 2, 340, "small TVD, attention far away (measured in JSD): not the only way to its outputs",
         color=s.MUTED, size=s.SMALL)
    return fig


DIAGRAMS = {
    "ch07_plausible_faithful": plausible_faithful,
    "ch07_six_tests": six_tests,
    "ch07_trained_adversary": trained_adversary,
}

ALT = {
    "ch07_plausible_faithful": (
        "A review, the plot was dull but the music was superb, with each word shaded by its attention weight, "
        "darkest on but, and the prediction positive. The explanation is compared twice: with a person (here the "
        "planted rule, whose evidence is superb, the first sentiment word after but), which grades its plausibility "
        "by precision at k, and with the model itself, by deleting its top words or keeping only them, which grades "
        "its faithfulness by ERASER's comprehensiveness and sufficiency."),
    "ch07_six_tests": (
        "The model across the top, tokens x_t through a BiLSTM to states h_t, weighted by attention weights w_t "
        "into the output y hat, and below it six tests: Jain and Wallace's agreement with the gradient and "
        "leave-one-out (Kendall tau) and other weights with the same output (permutation, an adversary with the "
        "largest JSD within epsilon), which work on one trained model. Beside them Wiegreffe and Pinter's four, "
        "which retrain: uniform weights (is attention needed at all), JSD between retrained seeds (a yardstick), "
        "frozen attention handed to a model without context, and a second model trained to match the output with "
        "weights far away (TVD and JSD)."),
    "ch07_trained_adversary": (
        "The same review goes to the base model, trained and frozen, with attention weights w and output y hat, "
        "and to the adversary, a BiLSTM of the same architecture from fresh weights that sees no labels, with "
        "attention weights w tilde and output y tilde; the outputs feed the TVD term and the attentions the KL "
        "term of the loss, TVD(y tilde, y hat) minus lambda times KL(w tilde || w): copy the outputs but attend "
        "elsewhere, and the gradient updates only the adversary. At lambda = 0 it is the control, asked only to "
        "copy the outputs; an adversary that ends with small TVD and its attention far away (measured in JSD) "
        "shows that the base model's attention was not the only way to its outputs."),
}
