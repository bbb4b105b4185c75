"""Baselines for the real reviews of Chapter 7: how strong can a model on these snippets be?

Wiegreffe & Pinter ask first whether attention is needed at all: a model whose attention can be
frozen to uniform without loss is no test case for attention as explanation. Two references place
the chapter's BiLSTM: the same model with uniform attention (trained by
:func:`~attention_course.experiments.reviews.trained_classifier` with ``attention="uniform"``), and a
bag-of-words logistic regression, the classic baseline for sentiment snippets (Pang & Lee 2005 report
their classifiers on such features), which has no attention and no word order at all.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression

from ..validate import positive_int
from .reviews import accuracy, predict_proba, trained_classifier

__all__ = ["MODELS", "bag_of_words", "bag_of_words_accuracy", "held_out_accuracies"]

#: The chapter's three models on the real snippets: name -> (encoder, attention).
MODELS = {"BiLSTM": ("bilstm", "additive"), "uniform BiLSTM": ("bilstm", "uniform"),
          "average": ("average", "additive")}


def bag_of_words(data, vocab_size: int) -> csr_matrix:
    """Word counts (N, vocab_size) of ``data`` (padded ``tokens`` (N, T), ``lengths`` (N,)); only the
    first ``lengths[i]`` tokens of row ``i`` count, so padding never does."""
    vocab_size = positive_int("vocab_size", vocab_size, minimum=2)
    tokens, lengths = data.tokens.numpy(), data.lengths.numpy()
    if tokens.size and int(tokens.max()) >= vocab_size:
        raise ValueError(f"token id {int(tokens.max())} is outside the vocabulary of {vocab_size} ids")
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.concatenate([row[:n] for row, n in zip(tokens, lengths)]) if len(lengths) else np.zeros(0, int)
    counts = csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(lengths), vocab_size))
    counts.sum_duplicates()
    return counts


def bag_of_words_accuracy(train, test, vocab_size: int, C: float = 1.0) -> float:
    """Test accuracy of an L2-regularised logistic regression (scikit-learn, inverse strength ``C``)
    fitted on the word counts of ``train``; deterministic (the lbfgs solver uses no randomness)."""
    if not C > 0:
        raise ValueError(f"C must be positive, got {C!r}")
    model = LogisticRegression(C=C, max_iter=2000)
    model.fit(bag_of_words(train, vocab_size), train.labels.numpy())
    return float((model.predict(bag_of_words(test, vocab_size)) == test.labels.numpy()).mean())


def held_out_accuracies(split, seeds, steps: int = 100, batch_size: int = 128, lr: float = 0.02,
                        models: dict[str, tuple[str, str]] = MODELS) -> dict[tuple[str, int], float]:
    """``{(model name, seed): test accuracy}``: each of ``models`` trained by
    :func:`~attention_course.experiments.reviews.trained_classifier` on ``split.train`` with every
    seed and the same budget, scored on ``split.test``
    (``split`` is a :class:`~attention_course.tasks.movie_reviews.RottenTomatoes`)."""
    return {(name, seed): accuracy(predict_proba(trained_classifier(
                split.train, len(split.vocab), seed, encoder=encoder, attention=attention, steps=steps,
                batch_size=batch_size, lr=lr), split.test)[0], split.test.labels)
            for name, (encoder, attention) in models.items() for seed in seeds}
