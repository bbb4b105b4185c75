"""A sentiment task with planted evidence: the true explanation of every example is known.

Reviews are built from three hand-written word lists of this module (no lexicon or corpus is
downloaded): positive words, negative words and neutral filler, and one marker word, "but".
A review is 20-36 words: filler, among which sit 3-5 sentiment words, each of a random polarity
drawn independently of the others, and one "but": "but" at a random place (not the last), the
deciding word at a random place after it, and the other sentiment words at random places before
"but" or after the deciding word:

    the (dull) cast was but the plot was SUPERB and it seemed (bland) to me     -> positive   (shortened)

The label is the polarity of the **first sentiment word after "but"**. That one word is the
**evidence** (the ground-truth explanation, exactly one token per review); every other sentiment
word is a **distractor**: it carries sentiment, yet it does not decide the label, and its polarity
says nothing about the label. A review is a **contrast** review if some distractor has the
polarity opposite to the label, which is the case for most reviews. A model that reads words one by
one without context can count positive against negative words, which is right more often than not
but wrong on many contrast reviews; a model that averages its states uniformly must carry the
position of "but" into every state.

Token ids: 0 is padding, then the words of ``VOCAB`` in order. Shapes: ``tokens`` (N, T) with
padding at the end of each row (T = the longest allowed length), ``lengths`` (N,), ``labels`` (N,)
float in {0, 1} (1 = positive), ``evidence`` and ``distractor`` (N, T) bool, ``contrast`` (N,) bool.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ..validate import positive_int

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


def _range(name: str, value, minimum: int) -> tuple[int, int]:
    """``value`` as a pair of ints ``(low, high)`` with ``minimum <= low <= high``."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be a pair (low, high), got {value!r}")
    low, high = (positive_int(name, v, minimum) for v in value)
    if low > high:
        raise ValueError(f"{name} must have low <= high, got {value!r}")
    return low, high


def planted_reviews(rng: np.random.Generator, n: int, length: tuple[int, int] = (20, 36),
                    n_sentiment: tuple[int, int] = (3, 5)) -> PlantedData:
    """Sample ``n`` reviews of ``length`` tokens holding ``n_sentiment`` sentiment words and one "but"
    (both ranges inclusive); the label is the polarity of the first sentiment word after "but"."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n = positive_int("n", n)
    k_low, k_high = _range("n_sentiment", n_sentiment, 1)
    low, high = _range("length", length, k_high + 1)      # room for every sentiment word and the marker
    tokens = np.zeros((n, high), dtype=np.int64)
    evidence = np.zeros((n, high), dtype=bool)
    distractor = np.zeros((n, high), dtype=bool)
    labels, lengths = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    for row in range(n):
        L, k = int(rng.integers(low, high + 1)), int(rng.integers(k_low, k_high + 1))
        while True:     # "but" anywhere but last, the evidence anywhere after it, room for the distractors
            marker = int(rng.integers(0, L - 1))
            place = int(rng.integers(marker + 1, L))
            free = [t for t in range(L) if not marker <= t <= place]      # before "but" or after the evidence
            if len(free) >= k - 1:
                break
        others = rng.choice(np.array(free, dtype=np.int64), size=k - 1, replace=False)
        polarity = rng.integers(0, 2, size=k)                  # independent coins; the first one is the label
        tokens[row, :L] = rng.choice(_FILL_IDS, size=L)
        tokens[row, marker] = WORD_ID[BUT]
        for t, p in zip([place, *others], polarity):
            tokens[row, t] = rng.choice(_POS_IDS if p == 1 else _NEG_IDS)
        evidence[row, place] = True
        distractor[row, others] = True
        labels[row], lengths[row] = polarity[0], L
    opposite = np.where(labels[:, None] == 1, np.isin(tokens, _NEG_IDS), np.isin(tokens, _POS_IDS))
    contrast = (distractor & opposite).any(1)
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
