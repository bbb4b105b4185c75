"""A one-layer self-attention model that resolves a pronoun to its antecedent (Chapter 3).

What is *learned*: word embeddings, the attention projections W_Q, W_K, W_V and a read-out. The
model reads the answer off the self-attention output at the pronoun's position only, and it has
no position information, so the only way to the name is for the pronoun's query to pick out the
right key.
"""

from __future__ import annotations

import torch
from torch import nn

from ..layers.attention import padding_mask
from ..layers.self_attention import SelfAttention
from ..tokens import PAD
from ..validate import check_lengths, check_token_ids

__all__ = ["PronounResolver"]


class PronounResolver(nn.Module):
    """Embedding -> one :class:`SelfAttention` layer -> linear read-out at the pronoun.

    ``forward(tokens (B, T), lengths (B,), pronoun_pos (B,))`` returns ``(logits (B, num_names),
    weights (B, T, T))``: one logit per candidate name, over a vocabulary of ``vocab_size`` words.
    The mask hides padding and each position's own key, so the pronoun's
    output is a mix of the *other* words' values: its own gender can reach the read-out only
    through where it looks. There are no position embeddings.

    The embeddings start small (std ``embed_std``), so the first attention weights are nearly
    uniform; with the default N(0, 1) embeddings the weights are sharp from the first step and
    training often locks onto a wrong word before the values mean anything.
    """

    def __init__(self, vocab_size: int, num_names: int, d_model: int = 16, d_k: int = 16, embed_std: float = 0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=PAD)
        with torch.no_grad():
            self.embed.weight.normal_(0.0, embed_std)
            self.embed.weight[PAD] = 0.0
        self.attention = SelfAttention(d_model, d_k=d_k, d_v=d_model)
        self.readout = nn.Linear(d_model, num_names)

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
