"""The plain RNN encoder-decoder (Sutskever et al. 2014; Cho et al. 2014).

The encoder reads the source (B, S) and keeps only its final hidden state: one vector of
``hidden_dim`` numbers per example, whatever the source length. The decoder starts from that
vector and writes the target one token at a time. That single vector is the bottleneck.

Cells: ``"rnn"`` (tanh), ``"gru"`` or ``"lstm"``. For the LSTM the state handed over is the
pair (h, c), each (1, B, hidden_dim).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from ..decoding import greedy_decode
from ..layers.attention import padding_mask
from ..tokens import PAD
from ..validate import check_choice, check_decoder_input, check_source, check_token_ids, positive_int

__all__ = ["Encoder", "Decoder", "Seq2Seq", "StackedSeq2Seq", "Encoded", "reverse_padded", "make_rnn"]

_CELLS = {"rnn": (nn.RNN, {"nonlinearity": "tanh"}), "gru": (nn.GRU, {}), "lstm": (nn.LSTM, {})}


def make_rnn(cell: str, input_size: int, hidden_size: int, **kwargs) -> nn.RNNBase:
    """A batch-first torch RNN layer of the named kind (see ``_CELLS``)."""
    layer, options = _CELLS[check_choice("cell", cell, _CELLS)]
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

    def cell(self) -> nn.RNNCellBase:
        """The recurrence as a cell that takes one step, ``cell(x_t, h_{t-1}) -> h_t``, with the same
        weights (a copy): ``nn.GRUCell``, ``nn.LSTMCell`` or ``nn.RNNCell``. For a left-to-right
        encoder only; stepping it over a row's embedded tokens gives that row's states."""
        if self.rnn.bidirectional:
            raise ValueError("a bidirectional encoder is two recurrences; it has no single cell")
        kind = {nn.GRU: nn.GRUCell, nn.LSTM: nn.LSTMCell, nn.RNN: nn.RNNCell}[type(self.rnn)]
        options = {"nonlinearity": self.rnn.nonlinearity} if kind is nn.RNNCell else {}
        cell = kind(self.rnn.input_size, self.rnn.hidden_size, **options)
        # torch's layers name their weights weight_ih_l0 ...; its cells, weight_ih ...
        cell.load_state_dict({k.removesuffix("_l0"): v for k, v in self.rnn.state_dict().items()})
        return cell


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


def _per_model(name: str, value, models: int) -> list[bool]:
    """One bool for every model: ``value`` itself if it is a sequence of ``models`` bools, else ``models`` copies."""
    values = [value] * models if isinstance(value, bool) else list(value)
    if len(values) != models or not all(isinstance(v, bool) for v in values):
        raise ValueError(f"{name} must be a bool or {models} bools (one per model), got {value!r}")
    return values


class StackedSeq2Seq(nn.Module):
    """``M`` independent GRU encoder-decoders of one width, run side by side as one module.

    Every weight carries a leading model axis of size ``M``, so one forward pass, one backward
    pass and one Adam step advance all ``M`` models at once (the seeds of an experiment, or
    several variants of it), yet no number of one model ever enters another. ``from_models``
    stacks :class:`Seq2Seq` GRU models (the result computes what each of them computes);
    ``unstack(m)`` gives model m back.

    ``attention`` (one bool, or one per model) adds the dot-product attention read-out of
    Chapter 2 to a model's decoder: the state ``h_t`` scores every encoder state, the softmax of
    the scores weights them into a context ``c_t``, and ``logits_t = W [c_t ; h_t]``. A model
    without it has ``W = [0, W_out]`` and ``c_t = 0``, which is exactly the plain read-out
    ``W_out h_t`` (the zeros get no gradient). ``reverse_input`` (one bool, or one per model)
    feeds that model's source backwards, as :class:`Seq2Seq` does.

    The recurrence is written out with the GRU's equations (the gates r, z and the candidate n,
    as in :class:`torch.nn.GRU`); each row's encoder state stops changing after its last real
    token, as packing does for :class:`Encoder`. Decoding is the package's (``start`` and ``step`` for
    :mod:`attention_course.decoding`), over the rows of all M models at once.
    """

    def __init__(self, models: int, vocab_size: int, embed_dim: int = 16, hidden_dim: int = 64,
                 attention: bool | Sequence[bool] = False, reverse_input: bool | Sequence[bool] = False):
        super().__init__()
        M = positive_int("models", models)
        attention, reverse_input = _per_model("attention", attention, M), _per_model("reverse_input", reverse_input, M)
        plain = [Seq2Seq(vocab_size, embed_dim, hidden_dim, "gru", r) for r in reverse_input]
        self._build(plain, [nn.Linear(2 * hidden_dim, vocab_size) if a else None for a in attention])

    @classmethod
    def from_models(cls, models: Sequence[Seq2Seq],
                    attention_out: Sequence[nn.Linear | None] | None = None) -> StackedSeq2Seq:
        """Stack GRU :class:`Seq2Seq` models of one shape (copies of their weights). ``attention_out``,
        one entry per model, makes model m read through attention with the read-out
        ``attention_out[m]``, an ``nn.Linear(2 * hidden_dim, vocab_size)`` (None: the plain read-out)."""
        stacked = cls.__new__(cls)
        nn.Module.__init__(stacked)
        stacked._build(list(models), [None] * len(models) if attention_out is None else list(attention_out))
        return stacked

    def _build(self, models, attention_out):
        if not models or any(not isinstance(m, Seq2Seq) or not isinstance(m.encoder.rnn, nn.GRU) for m in models):
            raise ValueError("StackedSeq2Seq stacks one or more GRU Seq2Seq models")
        if len({tuple((n, p.shape) for n, p in m.named_parameters()) for m in models}) != 1:
            raise ValueError("StackedSeq2Seq needs models of one shape (same vocabulary, embed_dim, hidden_dim)")
        vocab, hidden = models[0].decoder.out.out_features, models[0].decoder.rnn.hidden_size
        if len(attention_out) != len(models) or any(o is not None and tuple(o.weight.shape) != (vocab, 2 * hidden)
                                                    for o in attention_out):
            raise ValueError(f"attention_out needs one entry per model, each None or nn.Linear({2 * hidden}, {vocab})")
        self.vocab_size, self.hidden_dim = vocab, hidden
        self.embed_dim = models[0].encoder.embed.embedding_dim
        self.register_buffer("attends", torch.tensor([o is not None for o in attention_out]))       # (M,)
        self.register_buffer("reverses", torch.tensor([m.reverse_input for m in models]))          # (M,)

        def stack(tensors):
            return nn.Parameter(torch.stack([t.detach().clone() for t in tensors]))

        for side in ("encoder", "decoder"):     # enc_embed (M, V, E), enc_weight_ih (M, 3H, E), ... as in nn.GRU
            halves = [getattr(m, side) for m in models]
            setattr(self, f"{side[:3]}_embed", stack(h.embed.weight for h in halves))
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                setattr(self, f"{side[:3]}_{name}", stack(getattr(h.rnn, f"{name}_l0") for h in halves))
        if self.attends.any():                  # (M, V, 2H): [context columns, state columns]
            weights = [o.weight if o is not None else torch.cat([torch.zeros_like(m.decoder.out.weight),
                                                                 m.decoder.out.weight], 1)
                       for m, o in zip(models, attention_out)]
            biases = [(o if o is not None else m.decoder.out).bias for m, o in zip(models, attention_out)]
        else:                                   # (M, V, H)
            weights, biases = [m.decoder.out.weight for m in models], [m.decoder.out.bias for m in models]
        self.out_weight, self.out_bias = stack(weights), stack(biases)

    @property
    def models(self) -> int:
        return self.enc_embed.shape[0]

    def unstack(self, m: int) -> Seq2Seq:
        """Model ``m`` as a separate :class:`Seq2Seq` (a plain one: attention has no Seq2Seq form)."""
        if not 0 <= m < self.models:
            raise ValueError(f"m must be in [0, {self.models}), got {m!r}")
        if self.attends[m]:
            raise ValueError(f"model {m} reads through attention, which has no plain Seq2Seq form")
        model = Seq2Seq(self.vocab_size, self.embed_dim, self.hidden_dim, "gru", bool(self.reverses[m]))
        with torch.no_grad():
            for side in ("encoder", "decoder"):
                getattr(model, side).embed.weight.copy_(getattr(self, f"{side[:3]}_embed")[m])
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    getattr(getattr(model, side).rnn, f"{name}_l0").copy_(getattr(self, f"{side[:3]}_{name}")[m])
            model.decoder.out.weight.copy_(self.out_weight[m, :, -self.hidden_dim:])
            model.decoder.out.bias.copy_(self.out_bias[m])
        return model.eval()

    def _check(self, src: torch.Tensor, lengths: torch.Tensor) -> None:
        if src.dim() != 3 or src.shape[0] != self.models:
            raise ValueError(f"src must have shape (models={self.models}, batch, S), got {tuple(src.shape)}")
        if lengths.shape != src.shape[:2]:
            raise ValueError(f"lengths must have shape {tuple(src.shape[:2])} (models, batch), got "
                             f"{tuple(lengths.shape)}")
        check_source(src.flatten(0, 1), lengths.flatten(), self.vocab_size)

    def _gru(self, prefix: str, x: torch.Tensor, h: torch.Tensor, valid: torch.Tensor | None = None):
        """Run one stacked GRU layer over x (M, B, T, E) from h (M, B, H); return (states (M, B, T, H), h)."""
        w_ih, w_hh = getattr(self, f"{prefix}_weight_ih"), getattr(self, f"{prefix}_weight_hh")
        b_ih, b_hh = getattr(self, f"{prefix}_bias_ih"), getattr(self, f"{prefix}_bias_hh")
        M, B, T, _ = x.shape
        gi = torch.baddbmm(b_ih[:, None], x.flatten(1, 2), w_ih.transpose(1, 2)).view(M, B, T, -1)   # (M, B, T, 3H)
        states = []
        for t, gi_t in enumerate(gi.unbind(2)):                 # unbind once: a select per step costs O(T) backward
            gh = torch.baddbmm(b_hh[:, None], h, w_hh.transpose(1, 2))                               # (M, B, 3H)
            H = h.shape[-1]
            r, z = torch.sigmoid(gi_t[..., :2 * H] + gh[..., :2 * H]).chunk(2, -1)                   # reset, update
            n = torch.tanh(gi_t[..., 2 * H:] + r * gh[..., 2 * H:])                                  # candidate
            h_new = n + z * (h - n)                                         # = (1 - z) n + z h   (M, B, H)
            if valid is not None:                                    # past a row's end: keep h, emit zeros
                h = torch.where(valid[:, :, t, None], h_new, h)
                states.append(h_new * valid[:, :, t, None])
            else:
                h = h_new
                states.append(h)
        return torch.stack(states, dim=2), h

    def _embed(self, table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Per-model lookup: table (M, V, E), ids (M, B, T) -> (M, B, T, E)."""
        return table[torch.arange(self.models, device=ids.device)[:, None, None], ids]

    def encode(self, src: torch.Tensor, lengths: torch.Tensor):
        """src (M, B, S), lengths (M, B) -> (hs (M, B, S, H), context (M, B, H), valid (M, B, S))."""
        self._check(src, lengths)
        valid = torch.arange(src.shape[2], device=src.device) < lengths.to(src.device)[..., None]    # (M, B, S)
        if self.reverses.any():
            backwards = reverse_padded(src.flatten(0, 1), lengths.flatten()).view_as(src)
            src = torch.where(self.reverses[:, None, None], backwards, src)
        h0 = src.new_zeros(*src.shape[:2], self.hidden_dim, dtype=self.enc_embed.dtype)
        hs, context = self._gru("enc", self._embed(self.enc_embed, src), h0, valid)
        return hs, context, valid

    def _read_out(self, h: torch.Tensor, hs: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Decoder states h (M, B, T, H) -> logits (M, B, T, V), through attention over hs if it is on."""
        if self.attends.any():
            scores = h @ hs.transpose(-1, -2)                                          # (M, B, T, S)
            weights = scores.masked_fill(~valid[:, :, None], float("-inf")).softmax(-1)
            context = (weights @ hs) * self.attends[:, None, None, None]               # (M, B, T, H); 0 if plain
            h = torch.cat([context, h], dim=-1)                                        # [c_t ; h_t] (M, B, T, 2H)
        return torch.einsum("mbth,mvh->mbtv", h, self.out_weight) + self.out_bias[:, None, None]

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher-forced logits (M, B, T, V) for decoder inputs ``tgt_in`` (M, B, T)."""
        hs, context, valid = self.encode(src, lengths)
        if tgt_in.dim() != 3 or tgt_in.shape[:2] != src.shape[:2]:
            raise ValueError(f"tgt_in must have shape {tuple(src.shape[:2])} + (T,), got {tuple(tgt_in.shape)}")
        check_token_ids("tgt_in", tgt_in.flatten(0, 1), self.vocab_size)
        h, _ = self._gru("dec", self._embed(self.dec_embed, tgt_in), context)
        return self._read_out(h, hs, valid)

    def start(self, src: torch.Tensor, lengths: torch.Tensor):
        """The decoding state (see :mod:`attention_course.decoding`) for a batch of rows that are (model,
        example) pairs, model-major: src (M * B, S) and lengths (M * B,), row m * B + b for model m. The
        state is (hs (M, B, S, H), the decoder's state (M, B, H), valid (M, B, S))."""
        if src.dim() != 2 or src.shape[0] % self.models:
            raise ValueError(f"src must have shape (models * batch, S) with models={self.models}, got "
                             f"{tuple(src.shape)}")
        return self.encode(src.reshape(self.models, -1, src.shape[1]), lengths.reshape(self.models, -1))

    def step(self, state, prev: torch.Tensor):
        """One output step of every model: ``prev`` (M * B,) the last tokens -> (logits (M * B, V), new state,
        no weights)."""
        hs, h, valid = state
        states, h = self._gru("dec", self._embed(self.dec_embed, prev.reshape(self.models, -1, 1)), h)  # (M, B, 1, H)
        return self._read_out(states, hs, valid)[:, :, 0].flatten(0, 1), (hs, h, valid), None

    def greedy_decode(self, src: torch.Tensor, lengths: torch.Tensor, max_len: int) -> torch.Tensor:
        """(M, B, max_len) token ids, each model's argmax fed back in; ``PAD`` after each ``EOS``. The loop is
        the package's :func:`~attention_course.decoding.greedy_decode`, over the M * B rows of all models."""
        max_len = positive_int("max_len", max_len)
        self._check(src, lengths)
        ids = greedy_decode(self, src.flatten(0, 1), lengths.flatten(), max_len)       # (M * B, max_len)
        return ids.view(*src.shape[:2], max_len)
