"""Attention in the RNN encoder-decoder (Bahdanau et al. 2015; Luong et al. 2015).

The encoder keeps every state: ``hs`` (B, S, H), one row per source token. At each output
step t the decoder state ``h_t`` (H,) asks which rows matter:

    scores   s_t = score(h_t, hs)              (S,)   one number per source token
    weights  w_t = softmax(s_t)                (S,)   non-negative, summing to 1
    context  c_t = w_t^T hs                    (H,)   a weighted average of the rows
    output   logits_t = W_out [c_t ; h_t]             the context joins the decoder state

Choosing one row would be an argmax, which has no useful gradient; the softmax chooses all
rows a little, differentiably. Teacher forcing runs every step at once (a matrix of queries);
greedy decoding runs one step at a time (a vector query fed back in).
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import masked_softmax, padding_mask, weighted_sum
from .data import BOS, EOS, PAD
from .seq2seq import Encoder, check_decoder_input, check_source, make_rnn
from .validate import positive_int

__all__ = ["DotScore", "GeneralScore", "AdditiveScore", "make_score", "AttentionDecoder", "AttentionSeq2Seq"]


class DotScore(nn.Module):
    """s(q, k) = q . k. ``forward(query (B, T, H), keys (B, S, H)) -> (B, T, S)``."""

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return query @ keys.transpose(-2, -1)


class GeneralScore(nn.Module):
    """s(q, k) = q^T W k, a learned bilinear form (Luong et al. 2015, "general")."""

    def __init__(self, hidden_dim: int):
        super().__init__()
        self.W = nn.Linear(hidden_dim, hidden_dim, bias=False)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return query @ self.W(keys).transpose(-2, -1)


class AdditiveScore(nn.Module):
    """s(q, k) = v^T tanh(W_q q + W_k k), a one-hidden-layer network (Bahdanau et al. 2015)."""

    def __init__(self, hidden_dim: int, attn_dim: int | None = None):
        super().__init__()
        attn_dim = attn_dim or hidden_dim
        self.W_q = nn.Linear(hidden_dim, attn_dim, bias=False)
        self.W_k = nn.Linear(hidden_dim, attn_dim)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.W_q(query)[:, :, None, :] + self.W_k(keys)[:, None, :, :])  # (B, T, S, A)
        return self.v(hidden).squeeze(-1)                                                  # (B, T, S)


_SCORES = {"dot": DotScore, "general": GeneralScore, "additive": AdditiveScore}


def make_score(name: str, hidden_dim: int) -> nn.Module:
    """One of ``"dot"``, ``"general"``, ``"additive"``."""
    if name not in _SCORES:
        raise ValueError(f"score must be one of {sorted(_SCORES)}, got {name!r}")
    return DotScore() if name == "dot" else _SCORES[name](hidden_dim)


class AttentionDecoder(nn.Module):
    """RNN decoder that reads the encoder's ``hs`` through attention at every step."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, score: str = "dot", cell: str = "gru"):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.rnn = make_rnn(cell, embed_dim, hidden_dim)
        self.score = make_score(score, hidden_dim)
        self.out = nn.Linear(2 * hidden_dim, vocab_size)

    def forward(self, tgt_in: torch.Tensor, state, hs: torch.Tensor, src_mask: torch.Tensor):
        """tgt_in (B, T), hs (B, S, H), src_mask (B, 1, S) -> logits (B, T, V), state, weights (B, T, S)."""
        h, state = self.rnn(self.embed(tgt_in), state)                    # (B, T, H) the queries
        weights = masked_softmax(self.score(h, hs), src_mask)             # (B, T, S)
        context = weighted_sum(weights, hs, src_mask)                     # (B, T, H) = weights @ hs
        return self.out(torch.cat([context, h], dim=-1)), state, weights


class AttentionSeq2Seq(nn.Module):
    """Encoder-decoder with attention; same interface as :class:`~attention_course.seq2seq.Seq2Seq`."""

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_dim: int = 32, hidden_dim: int = 64,
                 score: str = "dot", cell: str = "gru", bidirectional: bool = False):
        super().__init__()
        self.encoder = Encoder(src_vocab_size, embed_dim, hidden_dim, cell, bidirectional)
        self.decoder = AttentionDecoder(tgt_vocab_size, embed_dim, hidden_dim, score, cell)

    def encode(self, src: torch.Tensor, lengths: torch.Tensor):
        """(hs (B, S, H), final state, src_mask (B, 1, S))."""
        check_source(src, lengths, self.encoder.embed.num_embeddings)
        hs, state = self.encoder(src, lengths)
        return hs, state, padding_mask(lengths.to(src.device), src.shape[1])

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, T, vocab) for decoder input ``tgt_in`` (B, T)."""
        check_decoder_input(tgt_in, src, self.decoder.embed.num_embeddings)
        hs, state, src_mask = self.encode(src, lengths)
        logits, _, _ = self.decoder(tgt_in, state, hs, src_mask)
        return logits

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, lengths: torch.Tensor, max_len: int,
                      return_weights: bool = False):
        """(B, max_len) token ids, ``PAD`` after ``EOS``; with ``return_weights`` also the
        attention weights (B, max_len, S) of every step."""
        max_len = positive_int("max_len", max_len)
        hs, state, src_mask = self.encode(src, lengths)
        token = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        out, weights = [], []
        for _ in range(max_len):
            logits, state, w = self.decoder(token, state, hs, src_mask)   # one query per row
            token = logits.argmax(-1)                                     # (B, 1)
            out.append(token.masked_fill(done[:, None], PAD))
            weights.append(w)
            done |= token[:, 0] == EOS
        ids = torch.cat(out, dim=1)
        return (ids, torch.cat(weights, dim=1)) if return_weights else ids
