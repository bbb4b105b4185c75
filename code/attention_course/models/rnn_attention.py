"""Attention in the RNN encoder-decoder: the decoders of Luong et al. 2015 and Bahdanau et al. 2015.

The encoder keeps every state: ``hs`` (B, S, H), one row per source token. At each output step the
decoder asks which rows matter, in three steps: scores (one per source token), softmax weights,
and the context c = w^T hs (a weighted average of the rows). The two published decoders differ in
*which* state asks and *where* the context goes.

Luong et al. 2015 (:class:`LuongDecoder`), the query is the current state h_t::

    h_t  = RNN(h_{t-1}, [y_{t-1} ; h~_{t-1}])       (the h~ part only with input feeding)
    c_t  = attend(h_t, hs)                         scores: dot, general or concat (= additive)
    h~_t = tanh(W_c [c_t ; h_t])                   the attentional state
    logits_t = W_s h~_t

With ``attentional=False`` the tanh layer is left out and ``[c_t ; h_t]`` goes straight to the
output layer: the decoder of the source posts and of Deep Learning from Scratch 2.

Bahdanau et al. 2015 (:class:`BahdanauDecoder`), the query is the previous state s_{t-1}::

    c_t  = attend(s_{t-1}, hs)                     additive score v^T tanh(W_q s + W_k h)
    s_t  = RNN(s_{t-1}, [y_{t-1} ; c_t])           the context enters the recurrent cell
    logits_t = W_o [s_t ; c_t ; y_{t-1}]           (the paper: a maxout layer on these three)

Bahdanau's queries, and Luong's with input feeding, depend on the step before, so even teacher
forcing runs those decoders one step at a time. Luong's decoder without input feeding runs its
RNN over the whole known target first and then asks all queries in one batched product; its
recurrence is still step by step, inside the RNN.

Every decoder has ``forward(tgt_in (B, T), state, hs (B, S, H), src_mask (B, 1, S)) ->
(logits (B, T, V), state, weights (B, T, S))`` and ``initial_state(encoder_state, hs)``. A decoding
state holds the RNN state and, with input feeding, h~ as ``(rnn_state, h~ (1, B, H))``: every tensor
in it has the batch on axis 1.
"""

from __future__ import annotations

import torch
from torch import nn

from ..decoding import greedy_decode
from ..layers.attention import masked_softmax, padding_mask, weighted_sum
from ..layers.scores import make_score
from ..tokens import PAD
from ..validate import check_choice, check_decoder_input, check_source
from .seq2seq import Encoded, Encoder, make_rnn

__all__ = ["LuongDecoder", "BahdanauDecoder", "AttentionSeq2Seq", "DECODERS"]


def _top(state) -> torch.Tensor:
    """The last layer's hidden state (B, H) of an RNN state (for the LSTM the pair (h, c))."""
    return (state[0] if isinstance(state, tuple) else state)[-1]


class LuongDecoder(nn.Module):
    """Luong et al. 2015's global-attention decoder: query h_t, attentional state tanh(W_c [c_t; h_t]).

    ``input_feeding=True`` feeds h~_{t-1} into the RNN beside the previous output's embedding.
    ``attentional=False`` drops the tanh layer: ``[c_t; h_t]`` goes straight to the output layer
    (the decoder of Deep Learning from Scratch 2).
    """

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, score: str = "dot", cell: str = "gru",
                 input_feeding: bool = False, attentional: bool = True):
        super().__init__()
        if input_feeding and not attentional:
            raise ValueError("input feeding feeds back the attentional state h~: it needs attentional=True")
        self.input_feeding, self.attentional = bool(input_feeding), bool(attentional)
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.rnn = make_rnn(cell, embed_dim + hidden_dim * self.input_feeding, hidden_dim)
        self.score = make_score(score, hidden_dim)
        self.W_c = nn.Linear(2 * hidden_dim, hidden_dim, bias=False) if attentional else None
        self.out = nn.Linear(hidden_dim if attentional else 2 * hidden_dim, vocab_size)

    def initial_state(self, encoder_state, hs: torch.Tensor):
        """The encoder's final state, and with input feeding h~_0 = 0 (1, B, H) beside it."""
        return (encoder_state, hs.new_zeros(1, *hs.shape[::2])) if self.input_feeding else encoder_state

    def attend(self, h: torch.Tensor, hs: torch.Tensor, keys: torch.Tensor, src_mask: torch.Tensor):
        """Queries h (B, T, H) -> (the output layer's input (B, T, H or 2H), weights (B, T, S)).
        ``keys = self.score.project_keys(hs)``, computed once per source."""
        weights = masked_softmax(self.score.compare(h, keys), src_mask)   # (B, T, S)
        context = weighted_sum(weights, hs, src_mask)                     # (B, T, H) = weights @ hs
        ch = torch.cat([context, h], dim=-1)                              # (B, T, 2H)
        return (torch.tanh(self.W_c(ch)) if self.attentional else ch), weights   # h~ (B, T, H)

    def forward(self, tgt_in: torch.Tensor, state, hs: torch.Tensor, src_mask: torch.Tensor):
        """tgt_in (B, T), hs (B, S, H), src_mask (B, 1, S) -> logits (B, T, V), state, weights (B, T, S)."""
        y = self.embed(tgt_in)                                            # (B, T, E)
        keys = self.score.project_keys(hs)                                # (B, S, .) the same for every query
        if not self.input_feeding:
            h, state = self.rnn(y, state)                                 # (B, T, H) all queries at once
            h_tilde, weights = self.attend(h, hs, keys, src_mask)
            return self.out(h_tilde), state, weights
        state, h_tilde = state                                            # h~_{t-1} (1, B, H)
        outs, all_weights = [], []
        for t in range(y.shape[1]):                                       # h~_{t-1} feeds step t
            h, state = self.rnn(torch.cat([y[:, t:t + 1], h_tilde.transpose(0, 1)], -1), state)  # (B, 1, H)
            h_t, weights = self.attend(h, hs, keys, src_mask)             # (B, 1, H), (B, 1, S)
            h_tilde = h_t.transpose(0, 1)
            outs.append(h_t)
            all_weights.append(weights)
        return self.out(torch.cat(outs, 1)), (state, h_tilde), torch.cat(all_weights, 1)


class BahdanauDecoder(nn.Module):
    """Bahdanau et al. 2015's decoder: query s_{t-1}, the context enters the RNN with y_{t-1}.

    Two simplifications of the paper, both in how the pieces are wired rather than in what attends:
    the output is one affine layer on ``[s_t; c_t; y_{t-1}]`` (the paper puts a maxout layer there), and
    s_0 is the encoder's final state (the paper: tanh(W_s h<-_1) from the backward encoder's first state).
    """

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, score: str = "additive",
                 cell: str = "gru"):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.rnn = make_rnn(cell, embed_dim + hidden_dim, hidden_dim)
        self.score = make_score(score, hidden_dim)
        self.out = nn.Linear(2 * hidden_dim + embed_dim, vocab_size)

    def initial_state(self, encoder_state, hs: torch.Tensor):
        """s_0: the encoder's final state."""
        return encoder_state

    def forward(self, tgt_in: torch.Tensor, state, hs: torch.Tensor, src_mask: torch.Tensor):
        """tgt_in (B, T), hs (B, S, H), src_mask (B, 1, S) -> logits (B, T, V), state, weights (B, T, S)."""
        y = self.embed(tgt_in)                                            # (B, T, E)
        keys = self.score.project_keys(hs)                                # (B, S, A) U_a h_j, once per source
        outs, all_weights = [], []
        for t in range(y.shape[1]):                                       # s_{t-1} asks, so one step at a time
            query = _top(state)[:, None]                                  # (B, 1, H) s_{t-1}
            weights = masked_softmax(self.score.compare(query, keys), src_mask)   # (B, 1, S)
            context = weighted_sum(weights, hs, src_mask)                 # (B, 1, H) c_t
            s, state = self.rnn(torch.cat([y[:, t:t + 1], context], -1), state)   # (B, 1, H) s_t
            outs.append(torch.cat([s, context, y[:, t:t + 1]], -1))      # (B, 1, 2H + E)
            all_weights.append(weights)
        return self.out(torch.cat(outs, 1)), state, torch.cat(all_weights, 1)


DECODERS = {"luong": LuongDecoder, "bahdanau": BahdanauDecoder}


class AttentionSeq2Seq(nn.Module):
    """Encoder-decoder with attention; same interface as :class:`~attention_course.models.seq2seq.Seq2Seq`.

    ``decoder="luong"`` (the default) or ``"bahdanau"``; ``score`` defaults to the published one
    (``"dot"`` for Luong, ``"additive"`` for Bahdanau). ``attentional`` and ``input_feeding`` are
    :class:`LuongDecoder`'s options; the default ``attentional=False`` is the decoder of the source
    posts (Deep Learning from Scratch 2), ``attentional=True`` Luong's as published.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_dim: int = 32, hidden_dim: int = 64,
                 score: str | None = None, cell: str = "gru", bidirectional: bool = False, decoder: str = "luong",
                 attentional: bool = False, input_feeding: bool = False):
        super().__init__()
        if check_choice("decoder", decoder, DECODERS) == "bahdanau" and (attentional or input_feeding):
            raise ValueError("attentional and input_feeding are options of the Luong decoder, not of Bahdanau's")
        self.encoder = Encoder(src_vocab_size, embed_dim, hidden_dim, cell, bidirectional)
        if decoder == "luong":
            self.decoder = LuongDecoder(tgt_vocab_size, embed_dim, hidden_dim, score or "dot", cell,
                                        input_feeding=input_feeding, attentional=attentional)
        else:
            self.decoder = BahdanauDecoder(tgt_vocab_size, embed_dim, hidden_dim, score or "additive", cell)

    def encode(self, src: torch.Tensor, lengths: torch.Tensor) -> Encoded:
        """``Encoded(hs (B, S, H), state: the final state, mask (B, 1, S))``."""
        check_source(src, lengths, self.encoder.embed.num_embeddings)
        hs, state = self.encoder(src, lengths)
        return Encoded(hs, state, padding_mask(lengths.to(src.device), src.shape[1]))

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, T, vocab) for decoder input ``tgt_in`` (B, T)."""
        check_decoder_input(tgt_in, src, self.decoder.embed.num_embeddings)
        hs, state, src_mask = self.start(src, lengths)
        logits, _, _ = self.decoder(tgt_in, state, hs, src_mask)
        return logits

    def start(self, src: torch.Tensor, lengths: torch.Tensor) -> Encoded:
        """The decoding state (see :mod:`attention_course.decoding`): ``encode``, with the decoder's
        initial state in place of the encoder's final one."""
        encoded = self.encode(src, lengths)
        return encoded._replace(state=self.decoder.initial_state(encoded.state, encoded.hs))

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
