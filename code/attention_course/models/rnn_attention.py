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

from ..decoding import greedy_decode
from ..layers.attention import masked_softmax, padding_mask, weighted_sum
from ..layers.scores import make_score
from ..tokens import PAD
from ..validate import check_decoder_input, check_source
from .seq2seq import Encoded, Encoder, make_rnn

__all__ = ["AttentionDecoder", "AttentionSeq2Seq"]


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
    """Encoder-decoder with attention; same interface as :class:`~attention_course.models.seq2seq.Seq2Seq`."""

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_dim: int = 32, hidden_dim: int = 64,
                 score: str = "dot", cell: str = "gru", bidirectional: bool = False):
        super().__init__()
        self.encoder = Encoder(src_vocab_size, embed_dim, hidden_dim, cell, bidirectional)
        self.decoder = AttentionDecoder(tgt_vocab_size, embed_dim, hidden_dim, score, cell)

    def encode(self, src: torch.Tensor, lengths: torch.Tensor) -> Encoded:
        """``Encoded(hs (B, S, H), state: the final state, mask (B, 1, S))``."""
        check_source(src, lengths, self.encoder.embed.num_embeddings)
        hs, state = self.encoder(src, lengths)
        return Encoded(hs, state, padding_mask(lengths.to(src.device), src.shape[1]))

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, T, vocab) for decoder input ``tgt_in`` (B, T)."""
        check_decoder_input(tgt_in, src, self.decoder.embed.num_embeddings)
        hs, state, src_mask = self.encode(src, lengths)
        logits, _, _ = self.decoder(tgt_in, state, hs, src_mask)
        return logits

    def start(self, src: torch.Tensor, lengths: torch.Tensor) -> Encoded:
        """The decoding state (see :mod:`attention_course.decoding`): all of ``encode``."""
        return self.encode(src, lengths)

    def step(self, state: Encoded, prev: torch.Tensor):
        """One output step: ``prev`` (B,) -> (logits (B, V), new state, weights (B, S)): one query per row."""
        logits, h, weights = self.decoder(prev[:, None], state.state, state.hs, state.mask)   # (B, 1, V), (B, 1, S)
        return logits[:, 0], state._replace(state=h), weights[:, 0]

    def greedy_decode(self, src: torch.Tensor, lengths: torch.Tensor, max_len: int,
                      return_weights: bool = False):
        """(B, max_len) token ids, ``PAD`` after ``EOS``; with ``return_weights`` also the
        attention weights (B, max_len, S) of every step. The loop is :mod:`attention_course.decoding`'s;
        each step is :meth:`step`."""
        return greedy_decode(self, src, lengths, max_len, return_weights)
