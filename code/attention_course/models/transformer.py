"""A small Transformer encoder-decoder (Vaswani et al. 2017), built from the package's pieces.

    src (B, S) --embed + positions--> (B, S, d) --N x EncoderLayer--> memory (B, S, d)
    tgt_in (B, T) --embed + positions--> (B, T, d) --N x DecoderLayer(memory)--> (B, T, d) -> logits (B, T, V)

Each layer is a few sublayers, each wrapped as ``x = x + sublayer(LayerNorm(x))``: the
residual connection keeps an identity path from input to output, the layer norm keeps every
sublayer's input at a fixed scale. (Normalising *before* the sublayer, "pre-LN", is reported
to train without the learning-rate warm-up that the original "post-LN" order needs, Xiong et al.
2020; chapter 5 measures how far that holds on a small task.)
``norm="post"`` builds the original order, ``x = LayerNorm(x + sublayer(x))``, for comparison.

    EncoderLayer   self-attention (padding mask) -> feed-forward
    DecoderLayer   self-attention (causal mask) -> cross-attention to memory (padding mask) -> feed-forward

Attention has no notion of order (permuting the tokens permutes the outputs), so the position
of each token is added to its embedding: as sines and cosines of different frequencies
(``positions="sinusoidal"``, the default), as a learned vector per position (``"learned"``), or
not at all (``"none"``, to see what is lost).

``Transformer`` has the interface of :class:`~attention_course.models.rnn_attention.AttentionSeq2Seq`
(``forward(src, lengths, tgt_in)``, ``greedy_decode(src, lengths, max_len)``), so the training
loop of :mod:`attention_course.train.seq2seq` and the date helpers of :mod:`attention_course.experiments.dates`
serve both. The model knows no task: vocabulary sizes and the longest length are constructor arguments.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from ..decoding import greedy_decode
from ..layers.attention import causal_mask, padding_mask
from ..layers.multihead import MultiHeadAttention
from ..tokens import PAD
from ..validate import check_choice, check_decoder_input, check_source

__all__ = ["sinusoidal_positions", "PositionalEncoding", "LearnedPositions", "NoPositions", "FeedForward",
           "EncoderLayer", "DecoderLayer", "DecodeState", "Transformer"]


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

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x`` holds positions ``offset .. offset + T - 1`` (``offset`` > 0 when decoding step by step)."""
        self._check(x, offset)
        return x + self.pe[offset: offset + x.shape[1]].to(x.dtype)     # (B, T, d_model)

    def _check(self, x: torch.Tensor, offset: int) -> None:
        max_len, d_model = self.pe.shape
        if x.dim() != 3 or x.shape[-1] != d_model:
            raise ValueError(f"x must have shape (batch, T, d_model={d_model}), got {tuple(x.shape)}")
        if offset + x.shape[1] > max_len:
            raise ValueError(f"sequence of length {offset + x.shape[1]} is longer than max_len={max_len}")


class LearnedPositions(PositionalEncoding):
    """``forward(x (B, T, d_model)) -> x + P[:T]`` with a trained (max_len, d_model) table ``P``
    (initialised N(0, 1), as ``nn.Embedding`` is); same interface and checks as :class:`PositionalEncoding`."""

    def __init__(self, d_model: int, max_len: int = 64):
        nn.Module.__init__(self)
        self.pe = nn.Parameter(torch.randn(max_len, d_model))


class NoPositions(PositionalEncoding):
    """``forward(x) -> x``: no position information (the checks of :class:`PositionalEncoding` still apply)."""

    def __init__(self, d_model: int, max_len: int = 64):
        nn.Module.__init__(self)
        self.register_buffer("pe", torch.zeros(max_len, d_model), persistent=False)   # holds the sizes only

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        self._check(x, offset)
        return x


POSITIONS = {"sinusoidal": PositionalEncoding, "learned": LearnedPositions, "none": NoPositions}
NORMS = ("pre", "post")


class FeedForward(nn.Module):
    """Position-wise: the same two-layer network on every position, (.., d_model) -> (.., d_model)."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    """``forward(x (B, S, d), mask) -> (x (B, S, d), weights (B, H, S, S))``. ``norm``: "pre" or "post"
    (where the layer norms sit, see the module's docstring)."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm: str = "pre"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ff = FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.post = check_choice("norm", norm, NORMS, " (where the layer norms sit)") == "post"

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None):
        if self.post:                                      # LayerNorm(x + sublayer(x)), the original order
            attended, weights = self.self_attn(x, x, x, mask)
            x = self.norm1(x + attended)
            return self.norm2(x + self.ff(x)), weights
        h = self.norm1(x)
        attended, weights = self.self_attn(h, h, h, mask)
        x = x + attended                                   # residual around self-attention
        x = x + self.ff(self.norm2(x))                     # residual around the feed-forward
        return x, weights


class DecoderLayer(nn.Module):
    """``forward(y (B, T, d), memory (B, S, d), self_mask, memory_mask)`` ->
    ``(y (B, T, d), self weights (B, H, T, T), cross weights (B, H, T, S))``."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm: str = "pre"):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ff = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.post = check_choice("norm", norm, NORMS, " (where the layer norms sit)") == "post"

    def forward(self, y: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None):
        if self.post:                                                            # the original order
            attended, self_weights = self.self_attn(y, y, y, self_mask)
            y = self.norm1(y + attended)
            attended, cross_weights = self.cross_attn(y, memory, memory, memory_mask)
            y = self.norm2(y + attended)
            return self.norm3(y + self.ff(y)), self_weights, cross_weights
        h = self.norm1(y)
        attended, self_weights = self.self_attn(h, h, h, self_mask)              # the output so far
        y = y + attended
        h = self.norm2(y)
        attended, cross_weights = self.cross_attn(h, memory, memory, memory_mask)  # queries ask the source
        y = y + attended
        y = y + self.ff(self.norm3(y))
        return y, self_weights, cross_weights

    def step(self, y: torch.Tensor, self_kv, cross_kv, memory_mask: torch.Tensor | None = None):
        """``forward`` for the newest position only, with a KV cache: ``y`` (B, 1, d) is the newest
        position's input, ``self_kv`` the heads' keys and values (B, n_h, t, d_head) of the positions
        before it, ``cross_kv`` those of the memory. Returns ``(y (B, 1, d), self_kv with this
        position appended)``. No causal mask is needed: the cache holds only earlier positions."""
        h = y if self.post else self.norm1(y)                                    # the self-attention's input
        k, v = self.self_attn.heads_kv(h, h)        # the newest position only
        keys = torch.cat([self_kv[0], k], dim=2)    # appended to the cache
        values = torch.cat([self_kv[1], v], dim=2)
        attended, _ = self.self_attn.attend(h, (keys, values))  # all t keys
        self_kv = (keys, values)
        if self.post:
            y = self.norm1(y + attended)
            y = self.norm2(y + self.cross_attn.attend(y, cross_kv, memory_mask)[0])
            return self.norm3(y + self.ff(y)), self_kv
        y = y + attended
        y = y + self.cross_attn.attend(self.norm2(y), cross_kv, memory_mask)[0]
        y = y + self.ff(self.norm3(y))
        return y, self_kv


class DecodeState(NamedTuple):
    """What :meth:`Transformer.step` carries from one output step to the next; every tensor is batch-first.

    ``memory`` (B, S, d) and ``src_mask`` (B, 1, S): the encoded source. ``ids`` (B, t): the tokens fed
    in so far. With the KV cache, ``cross_kv`` holds each decoder layer's cross-attention keys and values
    (B, H, S, d_head) and ``self_kv`` its self-attention keys and values of the t positions so far
    (B, H, t, d_head); without it both are None."""

    memory: torch.Tensor
    src_mask: torch.Tensor
    ids: torch.Tensor
    cross_kv: tuple | None
    self_kv: tuple | None


class Transformer(nn.Module):
    """Encoder-decoder Transformer over token ids, batch-first.

    ``forward(src (B, S), lengths (B,), tgt_in (B, T)) -> logits (B, T, tgt_vocab_size)``;
    ``greedy_decode(src, lengths, max_len) -> ids (B, max_len)``, ``PAD`` after ``EOS``;
    ``attention_maps(src, lengths, tgt_in)`` -> every layer's weights, per head.
    ``kv_cache`` (default True): decode with a cache of keys and values (:meth:`step`); False
    recomputes the decoder over the whole output at every step (same tokens, more work).
    ``positions``: "sinusoidal" (default), "learned" or "none"; one table serves source and target.
    ``norm``: "pre" (default) or "post"; with "post" there is no final layer norm after each stack,
    since every layer already ends with one. ``scale_embeddings``: multiply the embeddings by
    sqrt(d_model) before the positions are added, as Vaswani et al. do (default False).
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 64, num_heads: int = 4,
                 num_layers: int = 2, d_ff: int = 128, max_len: int = 64, kv_cache: bool = True,
                 positions: str = "sinusoidal", norm: str = "pre", scale_embeddings: bool = False):
        super().__init__()
        check_choice("positions", positions, POSITIONS)
        self.d_model, self.kv_cache = d_model, kv_cache
        self.embed_scale = math.sqrt(d_model) if scale_embeddings else 1.0
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model, padding_idx=PAD)
        self.positions = POSITIONS[positions](d_model, max_len)
        self.encoder = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm) for _ in range(num_layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm) for _ in range(num_layers))
        final = nn.Identity if norm == "post" else nn.LayerNorm                # post-LN layers end normalised
        self.encoder_norm, self.decoder_norm = final(d_model), final(d_model)
        self.out = nn.Linear(d_model, tgt_vocab_size)

    def _embed(self, embedding: nn.Embedding, ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        x = embedding(ids)                                                      # (B, T, d)
        return self.positions(x * self.embed_scale if self.embed_scale != 1.0 else x, offset)

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

    def start(self, src: torch.Tensor, lengths: torch.Tensor) -> DecodeState:
        """The decoding state (see :mod:`attention_course.decoding`): the encoded source, no output yet,
        and, if ``self.kv_cache``, each decoder layer's cross-attention keys and values computed once."""
        memory, src_mask, _ = self.encode(src, lengths)
        ids = src.new_empty((src.shape[0], 0))
        if not self.kv_cache:
            return DecodeState(memory, src_mask, ids, None, None)
        empty = memory.new_empty(src.shape[0], self.decoder[0].self_attn.num_heads, 0,
                                 self.decoder[0].self_attn.head_dim)         # (B, H, 0, d_head)
        cross_kv = tuple(layer.cross_attn.heads_kv(memory, memory) for layer in self.decoder)
        return DecodeState(memory, src_mask, ids, cross_kv, tuple((empty, empty) for _ in self.decoder))

    def step(self, state: DecodeState, prev: torch.Tensor):
        """One output step: ``prev`` (B,) -> (logits (B, V), new state, no weights).

        With the KV cache only the newest position goes through the decoder, its keys and values
        appended to each layer's cache; without it the decoder re-reads its whole output so far.
        Both give the same logits (up to rounding) and so the same tokens."""
        ids = torch.cat([state.ids, prev[:, None]], dim=1)                     # (B, t)
        if state.self_kv is None:                                              # full recomputation
            logits, _, _ = self.decode(ids, state.memory, state.src_mask)
            return logits[:, -1], state._replace(ids=ids), None                # the newest position only
        y = self._embed(self.tgt_embed, prev[:, None], offset=ids.shape[1] - 1)      # (B, 1, d)
        self_kv = []
        for layer, past, cross in zip(self.decoder, state.self_kv, state.cross_kv):
            y, kv = layer.step(y, past, cross, state.src_mask)
            self_kv.append(kv)
        logits = self.out(self.decoder_norm(y))[:, 0]                          # (B, V)
        return logits, state._replace(ids=ids, self_kv=tuple(self_kv)), None

    def greedy_decode(self, src: torch.Tensor, lengths: torch.Tensor, max_len: int, chunk: int = 1000) -> torch.Tensor:
        """(B, max_len) token ids, ``PAD`` after each row's ``EOS``; the encoder runs once. Rows are
        decoded ``chunk`` at a time, which bounds the memory of the attention weights."""
        return greedy_decode(self, src, lengths, max_len, chunk=chunk)
