"""The classifier of Jain & Wallace (2019): embedding, encoder, additive attention, linear output.

    embeddings  e_t = E[x_t]                          (N, T, E)
    states      h_t = encoder(e)_t                    (N, T, H)
    scores      s_t = v^T tanh(W_q q + W_k h_t)       (N, T)    q is one learned query vector
    weights     a = masked_softmax(s)                 (N, T)    zero on padding, rows sum to 1
    context     c = sum_t a_t h_t                     (N, H)
    logit       y = w^T c + b                         (N,)      P(positive) = sigmoid(y)

Encoders: ``"bilstm"`` (a bidirectional LSTM: h_t sees the whole review) or ``"average"`` (h_t =
tanh(W e_t + b), a projection of token t alone: no context). Attention: ``"additive"`` (learned,
as above) or ``"uniform"`` (a_t = 1/L on the L real tokens; Wiegreffe & Pinter's baseline).
Any attention can be replaced at call time: ``forward(tokens, lengths, weights=a)`` uses the
given weights (N, T) instead, which is how permuted, adversarial and frozen attention are tested.

Because the output layer is linear, the logit is ``sum_t a_t (w . h_t) + b``: each token
contributes its own number ``w . h_t`` (:meth:`AttentionClassifier.token_logits`), weighted by
its attention.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .attention import masked_softmax, padding_mask
from .explain_data import PlantedData
from .rnn_attention import AdditiveScore
from .seq2seq import make_rnn
from .validate import check_lengths, check_steps, check_token_ids

__all__ = ["AttentionClassifier", "uniform_weights", "train_classifier", "predict_proba", "accuracy"]

_ENCODERS = ("bilstm", "average")
_ATTENTIONS = ("additive", "uniform")


def uniform_weights(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(N, T) weights 1/L on each row's L real tokens and 0 on its padding."""
    mask = padding_mask(lengths, T)[:, 0]                                  # (N, T)
    return mask.float() / mask.sum(1, keepdim=True).clamp(min=1)


class AttentionClassifier(nn.Module):
    """Binary text classifier with one attention layer over the encoder states (module docstring)."""

    def __init__(self, vocab_size: int, embed_dim: int = 32, hidden_dim: int = 32,
                 encoder: str = "bilstm", attention: str = "additive"):
        super().__init__()
        if encoder not in _ENCODERS:
            raise ValueError(f"encoder must be one of {_ENCODERS}, got {encoder!r}")
        if attention not in _ATTENTIONS:
            raise ValueError(f"attention must be one of {_ATTENTIONS}, got {attention!r}")
        if encoder == "bilstm" and hidden_dim % 2:
            raise ValueError(f"a BiLSTM splits hidden_dim in two; got odd hidden_dim={hidden_dim}")
        self.encoder_kind, self.attention_kind = encoder, attention
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        if encoder == "bilstm":
            self.rnn = make_rnn("lstm", embed_dim, hidden_dim // 2, bidirectional=True)
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
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True, enforce_sorted=False)
        hs, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=embedded.shape[1])
        return hs

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


def train_classifier(model: AttentionClassifier, data: PlantedData, steps: int = 400, batch_size: int = 64,
                     lr: float = 1e-2, seed: int = 0, weights: torch.Tensor | None = None) -> list[float]:
    """Adam on binary cross-entropy over random mini-batches of ``data``; returns the loss per step.

    ``weights`` (N, T), if given, is imposed as the attention of every training example (frozen:
    it is data, not a parameter), as in Wiegreffe & Pinter's diagnostic models.
    """
    check_steps(steps)
    if weights is not None and weights.shape != data.tokens.shape:
        raise ValueError(f"weights must match tokens {tuple(data.tokens.shape)}, got {tuple(weights.shape)}")
    device = next(model.parameters()).device
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    history = []
    model.train()
    for _ in range(steps):
        index = torch.as_tensor(rng.choice(len(data), size=batch_size, replace=False))
        batch = data.subset(index).to(device)
        imposed = None if weights is None else weights[index].to(device)
        logits, _ = model(batch.tokens, batch.lengths, imposed)
        loss = loss_fn(logits, batch.labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.item())
    model.eval()
    return history


@torch.no_grad()
def predict_proba(model: AttentionClassifier, data: PlantedData,
                  weights: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(P(positive) (N,), attention weights (N, T)) for every example of ``data``."""
    model.eval()
    data = data.to(next(model.parameters()).device)
    logits, used = model(data.tokens, data.lengths, weights)
    return torch.sigmoid(logits), used


def accuracy(probs: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of examples whose thresholded probability (>= 0.5 -> 1) equals the label."""
    if probs.shape != labels.shape:
        raise ValueError(f"probs {tuple(probs.shape)} and labels {tuple(labels.shape)} differ in shape")
    return float(((probs >= 0.5).float() == labels).float().mean())
