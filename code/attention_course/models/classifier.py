"""The classifier of Jain & Wallace (2019): embedding, encoder, additive attention, linear output.

    embeddings  e_t = E[x_t]                          (N, T, E)
    states      h_t = encoder(e)_t                    (N, T, H)
    scores      s_t = v^T tanh(W_q q + W_k h_t)       (N, T)    q is one learned query vector
    weights     a = masked_softmax(s)                 (N, T)    zero on padding, rows sum to 1
    context     c = sum_t a_t h_t                     (N, H)
    logit       y = w^T c + b                         (N,)      P(positive) = sigmoid(y)

Encoders: ``"bilstm"`` (a bidirectional LSTM: h_t sees the whole review; its two directions are
two LSTMs, the second reading each review's real tokens right to left, which equals torch's packed
bidirectional LSTM and trains several times faster on the CPU) or ``"average"`` (h_t =
tanh(W e_t + b), a projection of token t alone: no context). Attention: ``"additive"`` (learned,
as above) or ``"uniform"`` (a_t = 1/L on the L real tokens; Wiegreffe & Pinter's baseline).
Any attention can be replaced at call time: ``forward(tokens, lengths, weights=a)`` uses the
given weights (N, T) instead, which is how permuted, adversarial and frozen attention are tested.

Because the output layer is linear, the logit is ``sum_t a_t (w . h_t) + b``: each token
contributes its own number ``w . h_t`` (:meth:`AttentionClassifier.token_logits`), weighted by
its attention.
"""

from __future__ import annotations

import torch
from torch import nn

from ..layers.attention import masked_softmax, padding_mask
from ..layers.scores import AdditiveScore
from ..validate import check_choice, check_lengths, check_token_ids
from .seq2seq import make_rnn

__all__ = ["AttentionClassifier", "uniform_weights", "reversal_index"]


_ENCODERS = ("bilstm", "average")


_ATTENTIONS = ("additive", "uniform")


def uniform_weights(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(N, T) weights 1/L on each row's L real tokens and 0 on its padding."""
    mask = padding_mask(lengths, T)[:, 0]                                  # (N, T)
    return mask.float() / mask.sum(1, keepdim=True).clamp(min=1)


def reversal_index(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(N, T) positions L - 1 - t for the L real tokens of each row, t itself on padding."""
    pos = torch.arange(T, device=lengths.device)[None, :]                      # (1, T)
    rev = lengths[:, None] - 1 - pos                                           # (N, T)
    return torch.where(rev >= 0, rev, pos)


class AttentionClassifier(nn.Module):
    """Binary text classifier with one attention layer over the encoder states (module docstring)."""

    def __init__(self, vocab_size: int, embed_dim: int = 32, hidden_dim: int = 32,
                 encoder: str = "bilstm", attention: str = "additive"):
        super().__init__()
        check_choice("encoder", encoder, _ENCODERS)
        check_choice("attention", attention, _ATTENTIONS)
        if encoder == "bilstm" and hidden_dim % 2:
            raise ValueError(f"a BiLSTM splits hidden_dim in two; got odd hidden_dim={hidden_dim}")
        self.encoder_kind, self.attention_kind = encoder, attention
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        if encoder == "bilstm":
            self.rnn = make_rnn("lstm", embed_dim, hidden_dim // 2)              # reads left to right
            self.rnn_reverse = make_rnn("lstm", embed_dim, hidden_dim // 2)      # reads right to left
        else:
            self.project = nn.Linear(embed_dim, hidden_dim)
        if attention == "additive":
            self.query = nn.Parameter(torch.zeros(1, 1, hidden_dim))
            self.score = AdditiveScore(hidden_dim)
        self.out = nn.Linear(hidden_dim, 1)

    def _check(self, tokens: torch.Tensor, lengths: torch.Tensor) -> None:
        check_token_ids("tokens", tokens, self.embed.num_embeddings)
        check_lengths(lengths, tokens.shape[0], tokens.shape[1])

    def states(self, embedded: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Encoder states hs (N, T, H) from embeddings (N, T, E); zero on padding."""
        mask = padding_mask(lengths, embedded.shape[1])[:, 0, :, None]             # (N, T, 1)
        if self.encoder_kind == "average":
            return torch.tanh(self.project(embedded)) * mask
        T, half = embedded.shape[1], self.rnn.hidden_size
        index = reversal_index(lengths.to(embedded.device), T)[:, :, None]        # (N, T, 1)
        forward = self.rnn(embedded)[0]                                            # (N, T, H/2); padding comes last
        reverse = self.rnn_reverse(embedded.gather(1, index.expand_as(embedded)))[0]
        backward = reverse.gather(1, index.expand(-1, -1, half))                  # reversing twice is the identity
        return torch.cat([forward, backward], -1) * mask                           # (N, T, H)

    def attend(self, hs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The model's own attention weights (N, T) over states hs (N, T, H)."""
        if self.attention_kind == "uniform":
            return uniform_weights(lengths, hs.shape[1])
        query = self.query.expand(hs.shape[0], 1, hs.shape[2])                     # (N, 1, H)
        scores = self.score(query, hs)                                             # (N, 1, T)
        return masked_softmax(scores, padding_mask(lengths, hs.shape[1]))[:, 0]    # (N, T)

    def head(self, hs: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Logits (N,) from states (N, T, H) and attention weights (N, T)."""
        if weights.shape != hs.shape[:2]:
            raise ValueError(f"weights must have shape {tuple(hs.shape[:2])} (N, T), got {tuple(weights.shape)}")
        context = (weights[:, :, None] * hs).sum(1)                                # (N, H)
        return self.out(context).squeeze(-1)

    def token_logits(self, hs: torch.Tensor) -> torch.Tensor:
        """(N, T): w . h_t, what token t adds to the logit per unit of attention (bias excluded)."""
        return hs @ self.out.weight[0]

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits (N,), weights (N, T)); pass ``weights`` to impose an attention distribution."""
        self._check(tokens, lengths)
        hs = self.states(self.embed(tokens), lengths)
        if weights is None:
            weights = self.attend(hs, lengths)
        return self.head(hs, weights), weights
