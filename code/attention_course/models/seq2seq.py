"""The plain RNN encoder-decoder (Sutskever et al. 2014; Cho et al. 2014).

The encoder reads the source (B, S) and keeps only its final hidden state: one vector of
``hidden_dim`` numbers per example, whatever the source length. The decoder starts from that
vector and writes the target one token at a time. That single vector is the bottleneck.

Cells: ``"rnn"`` (tanh), ``"gru"`` or ``"lstm"``. For the LSTM the state handed over is the
pair (h, c), each (1, B, hidden_dim).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..decoding import greedy_decode
from ..layers.attention import padding_mask
from ..tokens import PAD
from ..validate import check_decoder_input, check_source

__all__ = ["Encoder", "Decoder", "Seq2Seq", "Encoded", "reverse_padded", "make_rnn"]

_CELLS = {"rnn": (nn.RNN, {"nonlinearity": "tanh"}), "gru": (nn.GRU, {}), "lstm": (nn.LSTM, {})}


def make_rnn(cell: str, input_size: int, hidden_size: int, **kwargs) -> nn.RNNBase:
    """A batch-first torch RNN layer of the named kind (see ``_CELLS``)."""
    if cell not in _CELLS:
        raise ValueError(f"cell must be one of {sorted(_CELLS)}, got {cell!r}")
    layer, options = _CELLS[cell]
    return layer(input_size, hidden_size, batch_first=True, **options, **kwargs)


def reverse_padded(src: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse the first ``lengths[b]`` tokens of each row of (B, S) ``src``; padding stays."""
    check_source(src, lengths)
    S = src.shape[1]
    pos = torch.arange(S, device=src.device)[None, :]    # (1, S)
    rev = lengths.to(src.device)[:, None] - 1 - pos      # (B, S)
    index = torch.where(rev >= 0, rev, pos)              # padding maps to itself
    return src.gather(1, index)


class Encoded(NamedTuple):
    """What an RNN encoder-decoder's ``encode`` returns: every state ``hs`` (B, S, H), the final
    ``state`` (the context; for the LSTM the pair (h, c)) and the padding ``mask`` (B, 1, S)."""

    hs: torch.Tensor
    state: torch.Tensor | tuple[torch.Tensor, torch.Tensor]
    mask: torch.Tensor


class Encoder(nn.Module):
    """Embedding + RNN. ``forward(src (B, S), lengths (B,))`` returns ``hs`` (B, S, hidden_dim),
    every state (zero past each row's length), and the final state (the context).

    ``bidirectional=True`` runs a second RNN from the end of each row backwards, each with
    ``hidden_dim // 2`` units: row t of ``hs`` then sees the tokens before *and* after t, and
    the final state is the two directions' last states side by side.
    """

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, cell: str = "gru",
                 bidirectional: bool = False):
        super().__init__()
        if bidirectional and hidden_dim % 2:
            raise ValueError(f"a bidirectional encoder splits hidden_dim in two; got odd hidden_dim={hidden_dim}")
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.rnn = make_rnn(cell, embed_dim, hidden_dim // 2 if bidirectional else hidden_dim,
                            bidirectional=bidirectional)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor):
        check_source(src, lengths, self.embed.num_embeddings)
        packed = pack_padded_sequence(self.embed(src), lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        out, state = self.rnn(packed)
        hs, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        if self.rnn.bidirectional:       # (2, B, H/2) forward and backward -> (1, B, H)
            def merge(s):
                return torch.cat([s[0], s[1]], dim=-1)[None]
            state = tuple(map(merge, state)) if isinstance(state, tuple) else merge(state)
        return hs, state


class Decoder(nn.Module):
    """Embedding + RNN + linear read-out. ``forward(tgt_in (B, T), state)`` returns logits
    (B, T, vocab_size) and the new state."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, cell: str = "gru"):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD)
        self.rnn = make_rnn(cell, embed_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim, vocab_size)

    def forward(self, tgt_in: torch.Tensor, state):
        h, state = self.rnn(self.embed(tgt_in), state)
        return self.out(h), state


class Seq2Seq(nn.Module):
    """Encoder-decoder whose only bridge is the encoder's final state.

    ``reverse_input=True`` feeds the source backwards (Sutskever et al. 2014), so the first
    tokens to be written are the last ones read.
    """

    def __init__(self, vocab_size: int, embed_dim: int = 32, hidden_dim: int = 64,
                 cell: str = "gru", reverse_input: bool = False):
        super().__init__()
        self.encoder = Encoder(vocab_size, embed_dim, hidden_dim, cell)
        self.decoder = Decoder(vocab_size, embed_dim, hidden_dim, cell)
        self.reverse_input = reverse_input

    def encode(self, src: torch.Tensor, lengths: torch.Tensor) -> Encoded:
        """``Encoded(hs (B, S, hidden_dim), state: the context, mask (B, 1, S))``."""
        check_source(src, lengths, self.encoder.embed.num_embeddings)
        mask = padding_mask(lengths.to(src.device), src.shape[1])
        if self.reverse_input:
            src = reverse_padded(src, lengths)
        return Encoded(*self.encoder(src, lengths), mask)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (B, T, vocab_size) for decoder input ``tgt_in`` (B, T)."""
        check_decoder_input(tgt_in, src, self.decoder.embed.num_embeddings)
        logits, _ = self.decoder(tgt_in, self.encode(src, lengths).state)
        return logits

    def start(self, src: torch.Tensor, lengths: torch.Tensor):
        """The decoding state (see :mod:`attention_course.decoding`): the context alone."""
        return self.encode(src, lengths).state

    def step(self, state, prev: torch.Tensor):
        """One output step: ``prev`` (B,) the last tokens -> (logits (B, V), new state, no weights)."""
        logits, state = self.decoder(prev[:, None], state)            # (B, 1, V)
        return logits[:, 0], state, None

    def greedy_decode(self, src: torch.Tensor, lengths: torch.Tensor, max_len: int) -> torch.Tensor:
        """(B, max_len) token ids, each step's argmax fed back in; ``PAD`` after ``EOS``."""
        return greedy_decode(self, src, lengths, max_len)
