"""A sentiment task with planted evidence: the true explanation of every example is known.

Reviews are built from three hand-written word lists of this module (no lexicon or corpus is
downloaded): positive words, negative words and neutral filler. Two kinds of review:

    simple     one clause holding 1-3 sentiment words, all of the label's polarity
               "the plot was superb and the cast was charming"            -> positive
    contrast   a clause with 1-2 words of the *other* polarity, then "but", then a clause
               with 1-2 words of the label's polarity
               "the acting was brilliant but the script was a waste"      -> negative

The label is the polarity of the sentiment words in the last clause. Those words are the
**evidence** (the ground-truth explanation); sentiment words before "but" are **distractors**:
they carry sentiment, yet they do not decide the label. A model that reads words one by one
without context can solve the simple reviews but not the contrast ones.

Token ids: 0 is padding, then the words of ``VOCAB`` in order. Shapes: ``tokens`` (N, T) with
padding at the end of each row, ``lengths`` (N,), ``labels`` (N,) float in {0, 1} (1 =
positive), ``evidence`` and ``distractor`` (N, T) bool, ``contrast`` (N,) bool.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

__all__ = ["POSITIVE", "NEGATIVE", "FILLER", "BUT", "VOCAB", "WORD_ID", "PlantedData", "planted_reviews",
           "encode_review", "decode"]

POSITIVE = ("good", "great", "superb", "brilliant", "wonderful", "moving", "charming", "delightful", "funny",
            "clever", "beautiful", "gripping", "stunning", "fresh", "warm", "touching", "smart", "solid",
            "engaging", "masterful")
NEGATIVE = ("bad", "awful", "dull", "boring", "waste", "tedious", "clumsy", "bland", "weak", "messy",
            "lifeless", "poor", "stale", "silly", "shallow", "tiresome", "flat", "dreadful", "pointless",
            "forgettable")
FILLER = ("the", "a", "movie", "film", "was", "is", "plot", "story", "cast", "acting", "script", "ending",
          "director", "it", "and", "this", "with", "of", "scenes", "music", "camera", "at", "times", "in",
          "its", "felt", "seemed", "to", "me", "overall", "really", "quite", "very", "lead", "dialogue",
          "pacing", "sequel", "screen", "two", "hours")
BUT = "but"
VOCAB = ("<pad>", *POSITIVE, *NEGATIVE, *FILLER, BUT)
WORD_ID = {w: i for i, w in enumerate(VOCAB)}
_POS_IDS = np.array([WORD_ID[w] for w in POSITIVE])
_NEG_IDS = np.array([WORD_ID[w] for w in NEGATIVE])
_FILL_IDS = np.array([WORD_ID[w] for w in FILLER])


class PlantedData(NamedTuple):
    """A padded set of planted reviews (shapes in the module docstring)."""

    tokens: torch.Tensor
    lengths: torch.Tensor
    labels: torch.Tensor
    evidence: torch.Tensor
    distractor: torch.Tensor
    contrast: torch.Tensor

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def subset(self, index) -> PlantedData:
        """The rows ``index`` (a slice, an index tensor or a boolean mask) of every field."""
        return PlantedData(*(field[index] for field in self))

    def to(self, device: torch.device | str | None) -> PlantedData:
        """The same data on ``device`` (no copy for tensors already there)."""
        return PlantedData(*(field.to(device) for field in self))


def _clause(rng: np.random.Generator, n_words: int, polarity: int, length: int) -> tuple[list[int], list[bool]]:
    """Filler of ``length`` tokens with ``n_words`` sentiment words of ``polarity`` at random places."""
    ids = list(rng.choice(_FILL_IDS, size=length))
    where = rng.choice(length, size=n_words, replace=False)
    pool = _POS_IDS if polarity == 1 else _NEG_IDS
    for position, word in zip(where, rng.choice(pool, size=n_words, replace=False)):
        ids[position] = int(word)
    flags = [False] * length
    for position in where:
        flags[position] = True
    return [int(i) for i in ids], flags


def planted_reviews(rng: np.random.Generator, n: int, contrast_fraction: float = 0.5,
                    max_len: int = 20) -> PlantedData:
    """Sample ``n`` reviews, a ``contrast_fraction`` of them of the contrast kind."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not 0.0 <= contrast_fraction <= 1.0:
        raise ValueError(f"contrast_fraction must lie in [0, 1], got {contrast_fraction!r}")
    if max_len < 12:
        raise ValueError(f"max_len must be at least 12 to hold a contrast review, got {max_len}")
    tokens = np.zeros((n, max_len), dtype=np.int64)
    evidence = np.zeros((n, max_len), dtype=bool)
    distractor = np.zeros((n, max_len), dtype=bool)
    labels = rng.integers(0, 2, size=n)
    contrast = rng.random(n) < contrast_fraction
    lengths = np.zeros(n, dtype=np.int64)
    for row in range(n):
        label = int(labels[row])
        if contrast[row]:
            first, first_flags = _clause(rng, int(rng.integers(1, 3)), 1 - label, int(rng.integers(4, 7)))
            last, last_flags = _clause(rng, int(rng.integers(1, 3)), label, int(rng.integers(4, 7)))
            ids = first + [WORD_ID[BUT]] + last
            ev = [False] * (len(first) + 1) + last_flags
            dis = first_flags + [False] * (len(last) + 1)
        else:
            ids, ev = _clause(rng, int(rng.integers(1, 4)), label, int(rng.integers(6, max_len + 1)))
            dis = [False] * len(ids)
        L = len(ids)
        tokens[row, :L], evidence[row, :L], distractor[row, :L], lengths[row] = ids, ev, dis, L
    return PlantedData(torch.as_tensor(tokens), torch.as_tensor(lengths), torch.as_tensor(labels, dtype=torch.float32),
                       torch.as_tensor(evidence), torch.as_tensor(distractor), torch.as_tensor(contrast))


def encode_review(words: list[str] | str, max_len: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A hand-written review (words from ``VOCAB``) as ``tokens`` (1, T) and ``lengths`` (1,)."""
    words = words.split() if isinstance(words, str) else list(words)
    unknown = [w for w in words if w not in WORD_ID or w == "<pad>"]
    if unknown:
        raise ValueError(f"words not in the task's vocabulary: {unknown}")
    T = max_len or len(words)
    if len(words) > T:
        raise ValueError(f"review has {len(words)} words, more than max_len={T}")
    tokens = torch.zeros(1, T, dtype=torch.long)
    tokens[0, :len(words)] = torch.tensor([WORD_ID[w] for w in words])
    return tokens, torch.tensor([len(words)])


def decode(tokens: torch.Tensor, length: int | None = None) -> list[str]:
    """One row of token ids (T,) back to its words, padding dropped."""
    ids = [int(i) for i in tokens.tolist()]
    ids = ids[:length] if length is not None else [i for i in ids if i != 0]
    return [VOCAB[i] for i in ids]
