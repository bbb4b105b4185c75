"""A synthetic pronoun task: which earlier name does "he" or "she" refer to?

What is *constructed* (by this generator, not learned): sentences of the form

    Hong likes a dog . Mina likes a bird . He also likes a cat .

with one to ``max_clauses`` opening clauses "<name> likes a <animal> .", then a final clause
"<pronoun> also likes a <animal> .". Exactly one name in the sentence has the pronoun's gender
(the others have the other gender), so the antecedent is unambiguous; its clause is placed at
random. The answer is that name.

What is *learned* is up to the model (:class:`~attention_course.models.pronoun.PronounResolver`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

__all__ = ["MALE_NAMES", "FEMALE_NAMES", "NAMES", "ANIMALS", "VOCAB", "PAD", "PronounBatch", "pronoun_batch",
           "encode_sentence", "decode_tokens"]


MALE_NAMES = ["Hong", "Tom", "Jun", "Sam", "Leo", "Max"]


FEMALE_NAMES = ["Mina", "Anna", "Sora", "Emma", "Yuna", "Lily"]


NAMES = MALE_NAMES + FEMALE_NAMES                      # the classes: the answer is an index into NAMES


ANIMALS = ["dog", "cat", "bird", "fish", "horse", "rabbit"]


VOCAB = ["<pad>", ".", "likes", "also", "a", "He", "She", *NAMES, *ANIMALS]


PAD = 0
_ID = {word: i for i, word in enumerate(VOCAB)}
_PRONOUN = {"male": "He", "female": "She"}


class PronounBatch(NamedTuple):
    """``tokens`` (B, T) word ids padded with ``PAD``; ``lengths`` (B,); ``pronoun_pos`` (B,) and
    ``antecedent_pos`` (B,) token positions; ``target`` (B,) the antecedent's index in ``NAMES``."""

    tokens: torch.Tensor
    lengths: torch.Tensor
    pronoun_pos: torch.Tensor
    antecedent_pos: torch.Tensor
    target: torch.Tensor

    def to(self, device: torch.device | str | None) -> PronounBatch:
        """The same batch on ``device`` (no copy for tensors already there)."""
        return PronounBatch(*(t.to(device) for t in self))


def encode_sentence(sentence: str) -> PronounBatch:
    """One sentence (words separated by spaces, the full stop a word of its own) as a batch of 1.

    It must contain exactly one pronoun and exactly one name of the pronoun's gender.
    """
    words = sentence.split()
    unknown = [w for w in words if w not in _ID or w == "<pad>"]
    if unknown:
        raise ValueError(f"unknown words {unknown}; the vocabulary is {VOCAB[1:]}")
    pronouns = [i for i, w in enumerate(words) if w in ("He", "She")]
    if len(pronouns) != 1:
        raise ValueError(f"the sentence needs exactly one pronoun (He or She), found {len(pronouns)}: {sentence!r}")
    same_gender = MALE_NAMES if words[pronouns[0]] == "He" else FEMALE_NAMES
    antecedents = [i for i, w in enumerate(words) if w in same_gender]
    if len(antecedents) != 1:
        raise ValueError(f"the sentence needs exactly one name matching {words[pronouns[0]]!r}, "
                         f"found {len(antecedents)}: {sentence!r}")
    return PronounBatch(torch.tensor([[_ID[w] for w in words]]), torch.tensor([len(words)]),
                        torch.tensor(pronouns), torch.tensor(antecedents),
                        torch.tensor([NAMES.index(words[antecedents[0]])]))


def decode_tokens(ids) -> list[str]:
    """Word ids -> words, padding dropped."""
    return [VOCAB[i] for i in np.asarray(ids).tolist() if i != PAD]


def pronoun_batch(rng: np.random.Generator, batch_size: int, max_clauses: int = 3) -> PronounBatch:
    """``batch_size`` random sentences with 1 to ``max_clauses`` opening clauses (uniform)."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if not isinstance(max_clauses, int) or not 1 <= max_clauses <= len(MALE_NAMES) + 1:
        raise ValueError(f"max_clauses must be an int in [1, {len(MALE_NAMES) + 1}], got {max_clauses!r}")
    T = 5 * max_clauses + 6
    tokens = np.full((batch_size, T), PAD)
    lengths, pron, ante, target = (np.zeros(batch_size, dtype=np.int64) for _ in range(4))
    for b in range(batch_size):
        gender = ("male", "female")[rng.integers(2)]
        same, other = (MALE_NAMES, FEMALE_NAMES) if gender == "male" else (FEMALE_NAMES, MALE_NAMES)
        n = int(rng.integers(1, max_clauses + 1))
        referent = same[rng.integers(len(same))]
        names = [referent, *rng.choice(other, size=n - 1, replace=False).tolist()]
        order = rng.permutation(n)                       # where each name's clause goes
        words = []
        for slot in range(n):
            name_index = int(np.flatnonzero(order == slot)[0])
            if name_index == 0:
                ante[b] = len(words)
            words += [names[name_index], "likes", "a", ANIMALS[rng.integers(len(ANIMALS))], "."]
        pron[b] = len(words)
        words += [_PRONOUN[gender], "also", "likes", "a", ANIMALS[rng.integers(len(ANIMALS))], "."]
        tokens[b, :len(words)] = [_ID[w] for w in words]
        lengths[b], target[b] = len(words), NAMES.index(referent)
    return PronounBatch(*(torch.as_tensor(a) for a in (tokens, lengths, pron, ante, target)))
