"""A small Transformer encoder-decoder (Vaswani et al. 2017), built from the package's pieces.

    src (B, S) --embed + positions--> (B, S, d) --N x EncoderLayer--> memory (B, S, d)
    tgt_in (B, T) --embed + positions--> (B, T, d) --N x DecoderLayer(memory)--> (B, T, d) -> logits (B, T, V)

Each layer is a few sublayers, each wrapped as ``x = x + sublayer(LayerNorm(x))``: the
residual connection keeps an identity path from input to output, the layer norm keeps every
sublayer's input at a fixed scale. (Normalising *before* the sublayer, "pre-LN", trains
without the learning-rate warm-up that the original "post-LN" order needs; Xiong et al. 2020.)

    EncoderLayer   self-attention (padding mask) -> feed-forward
    DecoderLayer   self-attention (causal mask) -> cross-attention to memory (padding mask) -> feed-forward

Attention has no notion of order (permuting the tokens permutes the outputs), so the position
of each token is added to its embedding as sines and cosines of different frequencies.

``Transformer`` has the interface of :class:`~attention_course.models.rnn_attention.AttentionSeq2Seq`
(``forward(src, lengths, tgt_in)``, ``greedy_decode(src, lengths, max_len)``), so the training
loop of :mod:`attention_course.train.seq2seq` and the date helpers of :mod:`attention_course.experiments.dates`
serve both. The model knows no task: vocabulary sizes and the longest length are constructor arguments.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..decoding import greedy_decode
from ..layers.attention import causal_mask, padding_mask
from ..layers.multihead import MultiHeadAttention
from ..tokens import PAD
from ..validate import check_decoder_input, check_source

__all__ = ["sinusoidal_positions", "PositionalEncoding", "FeedForward", "EncoderLayer", "DecoderLayer", "Transformer"]


def sinusoidal_positions(max_len: int, d_model: int) -> torch.Tensor:
    """(max_len, d_model): row t is PE_t with PE[t, 2i] = sin(t w_i), PE[t, 2i+1] = cos(t w_i),
    w_i = 10000^(-2i / d_model). Each pair of features is a clock of its own frequency."""
    if not isinstance(max_len, int) or max_len < 1 or not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(f"need a positive max_len and an even d_model >= 2, got max_len={max_len!r}, "
                         f"d_model={d_model!r}")
    t = torch.arange(max_len, dtype=torch.float64)[:, None]                          # (max_len, 1)
    w = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d/2,)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(t * w)
    pe[:, 1::2] = torch.cos(t * w)
    return pe.float()


class PositionalEncoding(nn.Module):
    """``forward(x (B, T, d_model)) -> x + PE[:T]`` with the fixed :func:`sinusoidal_positions`."""

    def __init__(self, d_model: int, max_len: int = 64):
        super().__init__()
        self.register_buffer("pe", sinusoidal_positions(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check(x)
        return x + self.pe[: x.shape[1]].to(x.dtype)                # (B, T, d_model)

    def _check(self, x: torch.Tensor) -> None:
        max_len, d_model = self.pe.shape
        if x.dim() != 3 or x.shape[-1] != d_model:
            raise ValueError(f"x must have shape (batch, T, d_model={d_model}), got {tuple(x.shape)}")
        if x.shape[1] > max_len:
            raise ValueError(f"sequence of length {x.shape[1]} is longer than max_len={max_len}")


class FeedForward(nn.Module):
    """Position-wise: the same two-layer network on every position, (.., d_model) -> (.., d_model)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    """``forward(x (B, S, d), mask) -> (x (B, S, d), weights (B, H, S, S))``."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff = FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        h = self.norm1(x)
        attended, weights = self.self_attn(h, h, h, mask)
        x = x + attended                                   # residual around self-attention
        x = x + self.ff(self.norm2(x))                     # residual around the feed-forward
        return x, weights


class DecoderLayer(nn.Module):
    """``forward(y (B, T, d), memory (B, S, d), self_mask, memory_mask)`` ->
    ``(y (B, T, d), self weights (B, H, T, T), cross weights (B, H, T, S))``."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))

    def forward(self, y: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None):
        h = self.norm1(y)
        attended, self_weights = self.self_attn(h, h, h, self_mask)              # the output so far
        y = y + attended
        h = self.norm2(y)
        attended, cross_weights = self.cross_attn(h, memory, memory, memory_mask)  # queries ask the source
        y = y + attended
        y = y + self.ff(self.norm3(y))
        return y, self_weights, cross_weights


class Transformer(nn.Module):
    """Encoder-decoder Transformer over token ids, batch-first.

    ``forward(src (B, S), lengths (B,), tgt_in (B, T)) -> logits (B, T, tgt_vocab_size)``;
    ``greedy_decode(src, lengths, max_len) -> ids (B, max_len)``, ``PAD`` after ``EOS``;
    ``attention_maps(src, lengths, tgt_in)`` -> every layer's weights, per head.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 64, num_heads: int = 4,
                 num_layers: int = 2, d_ff: int = 128, max_len: int = 64):
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model, padding_idx=PAD)
        self.positions = PositionalEncoding(d_model, max_len)
        self.encoder = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff) for _ in range(num_layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff) for _ in range(num_layers))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, tgt_vocab_size)

    def _embed(self, embedding: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        return self.positions(embedding(ids))                                   # (B, T, d)

    def encode(self, src: torch.Tensor, lengths: torch.Tensor):
        """(memory (B, S, d), src_mask (B, 1, S), encoder weights: one (B, H, S, S) per layer)."""
        check_source(src, lengths, self.src_embed.num_embeddings)
        src_mask = padding_mask(lengths.to(src.device), src.shape[1])           # (B, 1, S) keys
        x, weights = self._embed(self.src_embed, src), []
        for layer in self.encoder:
            x, w = layer(x, src_mask)
            weights.append(w)
        return self.encoder_norm(x), src_mask, weights

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask: torch.Tensor):
        """(logits (B, T, V), self weights [(B, H, T, T)], cross weights [(B, H, T, S)])."""
        check_decoder_input(tgt_in, memory, self.tgt_embed.num_embeddings)
        y, self_weights, cross_weights = self._embed(self.tgt_embed, tgt_in), [], []
        mask = causal_mask(tgt_in.shape[1], device=tgt_in.device)              # (T, T): no peeking ahead
        for layer in self.decoder:
            y, w_self, w_cross = layer(y, memory, mask, src_mask)
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        return self.out(self.decoder_norm(y)), self_weights, cross_weights

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        memory, src_mask, _ = self.encode(src, lengths)
        logits, _, _ = self.decode(tgt_in, memory, src_mask)
        return logits

    @torch.no_grad()
    def attention_maps(self, src: torch.Tensor, lengths: torch.Tensor,
                       tgt_in: torch.Tensor) -> dict[str, list[torch.Tensor]]:
        """Teacher-forced weights: ``{"encoder": [(B, H, S, S)], "decoder": [(B, H, T, T)],
        "cross": [(B, H, T, S)]}``, one entry per layer."""
        memory, src_mask, enc = self.encode(src, lengths)
        _, dec, cross = self.decode(tgt_in, memory, src_mask)
        return {"encoder": enc, "decoder": dec, "cross": cross}

    def start(self, src: torch.Tensor, lengths: torch.Tensor):
        """The decoding state (see :mod:`attention_course.decoding`): memory, mask, the ids written so far."""
        memory, src_mask, _ = self.encode(src, lengths)
        return memory, src_mask, src.new_empty((src.shape[0], 0))

    def step(self, state, prev: torch.Tensor):
        """One output step: ``prev`` (B,) -> (logits (B, V), new state, no weights). No cache: the
        decoder re-reads its whole output so far (the outputs are short)."""
        memory, src_mask, ids = state
        ids = torch.cat([ids, prev[:, None]], dim=1)                          # (B, t)
        logits, _, _ = self.decode(ids, memory, src_mask)
        return logits[:, -1], (memory, src_mask, ids), None                   # the newest position only

    def greedy_decode(self, src: torch.Tensor, lengths: torch.Tensor, max_len: int, chunk: int = 1000) -> torch.Tensor:
        """(B, max_len) token ids, ``PAD`` after each row's ``EOS``; the encoder runs once. Rows are
        decoded ``chunk`` at a time, which bounds the memory of the attention weights."""
        return greedy_decode(self, src, lengths, max_len, chunk=chunk)
