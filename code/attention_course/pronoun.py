"""A synthetic pronoun task: which earlier name does "he" or "she" refer to?

What is *constructed* (by this generator, not learned): sentences of the form

    Hong likes a dog . Mina likes a bird . He also likes a cat .

with one to ``max_clauses`` opening clauses "<name> likes a <animal> .", then a final clause
"<pronoun> also likes a <animal> .". Exactly one name in the sentence has the pronoun's gender
(the others have the other gender), so the antecedent is unambiguous; its clause is placed at
random. The answer is that name.

What is *learned* (by :class:`PronounResolver`): word embeddings, the attention projections
W_Q, W_K, W_V and a read-out. The model reads the answer off the self-attention output at the
pronoun's position only, and it has no position information, so the only way to the name is
for the pronoun's query to pick out the right key.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from .attention import padding_mask
from .self_attention import SelfAttention
from .validate import check_lengths, check_steps, check_token_ids

__all__ = ["MALE_NAMES", "FEMALE_NAMES", "NAMES", "ANIMALS", "VOCAB", "PAD", "PronounBatch", "pronoun_batch",
           "encode_sentence", "decode_tokens", "PronounResolver", "train_pronoun_model", "pronoun_accuracy"]

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


class PronounResolver(nn.Module):
    """Embedding -> one :class:`SelfAttention` layer -> linear read-out at the pronoun.

    ``forward(tokens (B, T), lengths (B,), pronoun_pos (B,))`` returns ``(logits (B, len(NAMES)),
    weights (B, T, T))``. The mask hides padding and each position's own key, so the pronoun's
    output is a mix of the *other* words' values: its own gender can reach the read-out only
    through where it looks. There are no position embeddings.

    The embeddings start small (std ``embed_std``), so the first attention weights are nearly
    uniform; with the default N(0, 1) embeddings the weights are sharp from the first step and
    training often locks onto a wrong word before the values mean anything.
    """

    def __init__(self, d_model: int = 16, d_k: int = 16, embed_std: float = 0.1):
        super().__init__()
        self.embed = nn.Embedding(len(VOCAB), d_model, padding_idx=PAD)
        with torch.no_grad():
            self.embed.weight.normal_(0.0, embed_std)
            self.embed.weight[PAD] = 0.0
        self.attention = SelfAttention(d_model, d_k=d_k, d_v=d_model)
        self.readout = nn.Linear(d_model, len(NAMES))

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor, pronoun_pos: torch.Tensor):
        self._check(tokens, lengths, pronoun_pos)
        B, T = tokens.shape
        not_self = ~torch.eye(T, dtype=torch.bool, device=tokens.device)             # (T, T)
        mask = padding_mask(lengths, T) & not_self                                   # (B, T, T)
        out, weights = self.attention(self.embed(tokens), mask)                      # (B, T, d), (B, T, T)
        at_pronoun = out[torch.arange(B, device=tokens.device), pronoun_pos]           # (B, d)
        return self.readout(at_pronoun), weights

    def _check(self, tokens: torch.Tensor, lengths: torch.Tensor, pronoun_pos: torch.Tensor) -> None:
        check_token_ids("tokens", tokens, self.embed.num_embeddings)
        B, T = tokens.shape
        if not isinstance(pronoun_pos, torch.Tensor) or pronoun_pos.shape != (B,):
            got = tuple(pronoun_pos.shape) if isinstance(pronoun_pos, torch.Tensor) else type(pronoun_pos).__name__
            raise ValueError(f"lengths and pronoun_pos must have shape ({B},), got pronoun_pos {got}")
        check_lengths(lengths, B, T)
        if pronoun_pos.is_floating_point() or not bool(((pronoun_pos >= 0) & (pronoun_pos < lengths)).all()):
            raise ValueError(f"pronoun_pos must hold integer positions of real tokens (0 <= pos < lengths[b]), "
                             f"got {pronoun_pos.tolist()}")


def train_pronoun_model(model: PronounResolver, steps: int = 400, batch_size: int = 64, lr: float = 1e-2,
                        seed: int = 0, max_clauses: int = 3) -> list[float]:
    """Adam on cross-entropy for ``steps`` fresh batches from ``pronoun_batch``; returns the losses."""
    steps, device = check_steps(steps), next(model.parameters()).device
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    model.train()
    for _ in range(steps):
        batch = pronoun_batch(rng, batch_size, max_clauses).to(device)
        logits, _ = model(batch.tokens, batch.lengths, batch.pronoun_pos)
        loss = nn.functional.cross_entropy(logits, batch.target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def pronoun_accuracy(model: PronounResolver, batch: PronounBatch) -> tuple[float, float]:
    """(fraction of right answers, mean attention weight from the pronoun to its antecedent)
    over ``batch``."""
    batch = batch.to(next(model.parameters()).device)
    logits, weights = model(batch.tokens, batch.lengths, batch.pronoun_pos)
    B = batch.tokens.shape[0]
    right = (logits.argmax(-1) == batch.target).float().mean().item()
    rows = torch.arange(B, device=weights.device)
    on_antecedent = weights[rows, batch.pronoun_pos, batch.antecedent_pos]              # (B,)
    return right, on_antecedent.mean().item()
