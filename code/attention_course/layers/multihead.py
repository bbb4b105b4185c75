"""Multi-head attention: several attentions side by side, each on its own slice of the features.

Heads split the *embedding* (feature) axis, not time. With ``embed_dim = E`` and ``num_heads =
H`` every head gets ``d_head = E / H`` consecutive features of the projected queries, keys and
values, and runs scaled dot-product attention on them alone:

    q = query W_Q    (B, T_q, E)  --split_heads-->  (B, H, T_q, d_head)
    k = key   W_K    (B, T_k, E)  --split_heads-->  (B, H, T_k, d_head)
    v = value W_V    (B, T_k, E)  --split_heads-->  (B, H, T_k, d_head)
    out, weights = scaled_dot_product_attention(q, k, v)   (B, H, T_q, d_head), (B, H, T_q, T_k)
    output = merge_heads(out) W_O                          (B, T_q, E)

Because q . k = sum over features, the full-width score matrix is the sum of the heads' block
scores; multi-head attention softmaxes each block separately instead, so each head can look at
different positions. The heads never read each other's features, so they run in parallel as
one batched matrix product (the head axis is just another batch axis). The projections are
E x E whatever H is, so the parameter count does not depend on the number of heads.

For decoding one token at a time, :meth:`MultiHeadAttention.heads_kv` projects and splits keys and
values once, and :meth:`MultiHeadAttention.attend` lets new queries attend to such cached heads (the
KV cache of :class:`~attention_course.models.transformer.Transformer`).

The layer computes what ``torch.nn.MultiheadAttention`` computes, and :meth:`MultiHeadAttention.from_torch`
copies a torch module's weights in. The two differ in the mask convention, in what a query with no visible
key gets, in the weights returned, in the layout of inputs and parameters, in initialisation and in dropout:
the docstring of :class:`MultiHeadAttention` lists every difference.
"""

from __future__ import annotations

import torch
from torch import nn

from ..validate import broadcasts_to, check_bool_mask, check_matches_module
from .attention import scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "MultiHeadAttention"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """(B, T, E) -> (B, H, T, E / H): head h gets features h*d_head .. (h+1)*d_head - 1.

    Reshape first (the feature axis E becomes H x d_head), then move the head axis in front of
    time. Reshaping (B, T, E) straight to (B, H, T, d_head) would mix time steps into heads.
    """
    if x.dim() != 3:
        raise ValueError(f"split_heads expects (batch, T, embed_dim), got shape {tuple(x.shape)}")
    if not isinstance(num_heads, int) or num_heads < 1 or x.shape[-1] % num_heads:
        raise ValueError(f"embed_dim={x.shape[-1]} is not divisible by num_heads={num_heads!r}")
    B, T, d_m = x.shape
    return x.view(B, T, num_heads, d_m // num_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, d_head) -> (B, T, H * d_head), the inverse of :func:`split_heads`."""
    if x.dim() != 4:
        raise ValueError(f"merge_heads expects (batch, heads, T, d_head), got shape {tuple(x.shape)}")
    B, n_h, T, d_head = x.shape
    return x.transpose(1, 2).reshape(B, T, n_h * d_head)


class MultiHeadAttention(nn.Module):
    """``num_heads`` attention heads over ``embed_dim`` features, batch-first.

    ``forward(query (B, T_q, E), key (B, T_k, E), value (B, T_k, E), mask=None)`` returns
    ``(output (B, T_q, E), weights (B, H, T_q, T_k))``, one weight matrix per head.

    ``mask`` is boolean, True = may attend, shaped like the scores of one head, broadcastable
    to (B, T_q, T_k): ``causal_mask(T)`` (T, T), ``padding_mask(lengths, T_k)`` (B, 1, T_k), or
    both combined with ``&``; the same mask then applies to every head. A 4-D mask
    broadcastable to (B, H, T_q, T_k) can differ per head. A query whose keys are all masked gets
    a row of zero weights and a zero vector before ``W_O``, so its output is ``W_O``'s bias (zeros
    with ``bias=False``), never NaN.

    **The same as** ``torch.nn.MultiheadAttention`` (checked against torch 2.13): the projections
    ``x W^T + b`` of query, key and value, heads of ``E / H`` consecutive features, scores scaled by
    ``1 / sqrt(d_head)``, softmax, weighted sum, heads concatenated, output projection; the number
    of parameters; ``bias=True`` by default, and ``bias=False`` drops all four biases in both. With
    torch's weights copied in (:meth:`from_torch` does this; torch stacks the three input
    projections row-wise in one matrix)::

        W_Q.weight, W_K.weight, W_V.weight = in_proj_weight[:E], in_proj_weight[E:2E], in_proj_weight[2E:]
        W_Q.bias,   W_K.bias,   W_V.bias   = in_proj_bias[:E],   in_proj_bias[E:2E],   in_proj_bias[2E:]
        W_O.weight, W_O.bias               = out_proj.weight,    out_proj.bias

    the outputs agree to rounding for every query that can see at least one key, in eval mode or
    with ``dropout=0``, and ``weights`` equals torch's weights with ``average_attn_weights=False``.
    Masks translate as: ``mask=causal_mask(T)`` is ``attn_mask=~causal_mask(T)``;
    ``mask=padding_mask(lengths, T_k)`` (B, 1, T_k) is ``key_padding_mask=~mask[:, 0]`` (B, T_k);
    ``mask=a & b`` is both at once; a per-head mask (B, H, T_q, T_k) is
    ``attn_mask=~mask.flatten(0, 1)`` (B * H, T_q, T_k).

    **The differences** (``tests/test_multihead.py`` pins every one that a test can show):

    - *Mask convention.* True means "may attend" here, as everywhere in this package; in torch's
      boolean ``attn_mask`` and ``key_padding_mask`` True means "may *not* attend". Here one
      boolean mask; torch takes two, also accepts float masks added to the scores, and has an
      ``is_causal`` hint.
    - *A query with no visible key.* Here zero weights and ``W_O``'s bias as output. Torch 2.13 (CPU) gives
      NaN weights and a NaN output row with its default ``need_weights=True``, and a NaN output in its
      inference fast path (eval mode, autograd off, ``query is key is value``, ``batch_first``, with
      biases, an even number of heads); only with ``need_weights=False`` off the fast path does it
      return ``out_proj.bias``, as here.
    - *NaN and inf.* Here a NaN or inf in a masked key or value cannot reach the output, and one
      that a query may see raises ValueError. In torch a NaN in any key or value of a sequence,
      masked or not, makes that sequence's whole output NaN.
    - *Weights returned.* Always one matrix per head, (B, H, T_q, T_k). Torch returns their mean
      over heads, (B, T_q, T_k), by default; per head only with ``average_attn_weights=False``;
      None with ``need_weights=False``.
    - *Layout of inputs.* Batch-first and batched (3-D) only. Torch defaults to
      ``batch_first=False``, (T, B, E), and also takes unbatched (T, E) inputs.
    - *Layout of parameters.* Four ``nn.Linear`` layers here; torch packs the input projections
      into ``in_proj_weight`` (3E, E) and ``in_proj_bias`` (3E,), so state dicts differ.
    - *Initialisation.* Here every projection has ``nn.Linear``'s default: weights and biases
      uniform on +-1/sqrt(E). Torch draws ``in_proj_weight`` Xavier-uniform over the stacked
      (3E, E) matrix, uniform on +-sqrt(6 / (E + 3E)) = +-sqrt(1.5 / E), about 1.22 times as wide;
      its ``out_proj.weight`` is uniform on +-1/sqrt(E) as here; all its biases start at zero.
    - *Dropout.* None here. Torch's ``dropout`` acts on the attention weights in training mode and
      returns the dropped weights.
    - *Not supported here:* ``kdim``/``vdim`` (keys and values of another width), ``add_bias_kv``,
      ``add_zero_attn``, nested tensors. :meth:`from_torch` refuses modules that use the first three.
    - *Only here:* :meth:`heads_kv` and :meth:`attend` for a KV cache, and errors that name the
      problem (torch raises AssertionError when ``embed_dim`` is not divisible by ``num_heads``).
    """

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True):
        super().__init__()
        for name, size in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"{name} must be a positive int, got {size!r}")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}: each head needs "
                             f"an equal share of the features ({embed_dim} / {num_heads} = "
                             f"{embed_dim / num_heads:.3g})")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.W_Q = nn.Linear(embed_dim, embed_dim, bias=bias)   # query (.., E) -> all heads' q (.., E)
        self.W_K = nn.Linear(embed_dim, embed_dim, bias=bias)   # key   (.., E) -> all heads' k (.., E)
        self.W_V = nn.Linear(embed_dim, embed_dim, bias=bias)   # value (.., E) -> all heads' v (.., E)
        self.W_O = nn.Linear(embed_dim, embed_dim, bias=bias)   # concatenated heads (.., E) -> output (.., E)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        self._check(query, key, value, mask)
        if mask is not None and mask.dim() <= 3:                 # one mask for every head: (B or 1, 1, .., T_k)
            mask = mask.reshape((1,) * (3 - mask.dim()) + tuple(mask.shape)).unsqueeze(1)
        q = split_heads(self.W_Q(query), self.num_heads)  # (B, n_h, T_q, d_head)
        k = split_heads(self.W_K(key), self.num_heads)    # (B, n_h, T_k, d_head)
        v = split_heads(self.W_V(value), self.num_heads)  # (B, n_h, T_k, d_head)
        # every head at once; weights (B, n_h, T_q, T_k), one matrix per head
        out, weights = scaled_dot_product_attention(q, k, v, mask)
        return self.W_O(merge_heads(out)), weights        # (B, T_q, d_m)

    def heads_kv(self, key: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values projected and split into heads, ``(k, v)`` each (B, H, T_k, d_head): what a
        KV cache keeps so that later queries need not project the same positions again."""
        self._check(key, key, value, None)
        return split_heads(self.W_K(key), self.num_heads), split_heads(self.W_V(value), self.num_heads)

    def attend(self, query: torch.Tensor, kv: tuple[torch.Tensor, torch.Tensor],
               mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``forward`` with keys and values already in heads, ``kv = heads_kv(key, value)``:
        ``query`` (B, T_q, E) -> ``(output (B, T_q, E), weights (B, H, T_q, T_k))``, the same numbers
        as ``forward(query, key, value, mask)``."""
        k, v = kv
        if k.dim() != 4 or k.shape != v.shape or k.shape[1] != self.num_heads or k.shape[3] != self.head_dim:
            raise ValueError(f"kv must be two tensors (batch, heads={self.num_heads}, T_k, d_head={self.head_dim}), "
                             f"got {tuple(k.shape)} and {tuple(v.shape)}")
        stand_in = query.new_empty(1, 1, 1).expand(k.shape[0], k.shape[2], self.embed_dim)   # keys' shape, no memory
        self._check(query, stand_in, stand_in, mask)
        if mask is not None and mask.dim() <= 3:
            mask = mask.reshape((1,) * (3 - mask.dim()) + tuple(mask.shape)).unsqueeze(1)
        q = split_heads(self.W_Q(query), self.num_heads)                 # (B, H, T_q, d_head)
        out, weights = scaled_dot_product_attention(q, k, v, mask)       # (B, H, T_q, d_head), (B, H, T_q, T_k)
        return self.W_O(merge_heads(out)), weights                      # (B, T_q, E)

    def _check(self, query, key, value, mask) -> None:
        E = self.embed_dim
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            if t.dim() != 3 or t.shape[-1] != E:
                raise ValueError(f"{name} must have shape (batch, T, embed_dim={E}), got {tuple(t.shape)}")
        check_matches_module(self, query=query, key=key, value=value)
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(f"query, key and value must share the batch size, got {query.shape[0]}, "
                             f"{key.shape[0]} and {value.shape[0]}")
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"key and value must have the same length T_k, got {key.shape[1]} and {value.shape[1]}")
        if mask is None:
            return
        check_bool_mask(mask)
        B, T_q, T_k, H = query.shape[0], query.shape[1], key.shape[1], self.num_heads
        if not broadcasts_to(mask.shape, (B, T_q, T_k) if mask.dim() <= 3 else (B, H, T_q, T_k)):
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to (batch, T_q, T_k) = "
                             f"{(B, T_q, T_k)} nor to (batch, heads, T_q, T_k) = {(B, H, T_q, T_k)}")

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """A :class:`MultiHeadAttention` holding a copy of ``module``'s weights.

        ``module`` must use one width for queries, keys and values (no ``kdim``/``vdim``) and
        neither ``add_bias_kv`` nor ``add_zero_attn``. Its dropout is not copied (this layer has
        none), so outputs agree with ``module`` in eval mode or with ``dropout=0``. The copy is batch-first
        whatever ``module.batch_first`` says: the weights do not depend on the layout of the inputs.
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"expected a torch.nn.MultiheadAttention, got {type(module).__name__}")
        if not module._qkv_same_embed_dim:
            raise ValueError(f"kdim={module.kdim} and vdim={module.vdim} must equal embed_dim={module.embed_dim}")
        if module.bias_k is not None or module.add_zero_attn:
            raise ValueError("add_bias_kv and add_zero_attn are not supported")
        has_bias = module.in_proj_bias is not None
        layer = cls(module.embed_dim, module.num_heads, bias=has_bias)
        layer = layer.to(dtype=module.in_proj_weight.dtype, device=module.in_proj_weight.device)
        E = module.embed_dim
        with torch.no_grad():
            # torch stacks the three input projections in one (3E, E) matrix: rows [W_Q; W_K; W_V].
            for i, linear in enumerate((layer.W_Q, layer.W_K, layer.W_V)):
                linear.weight.copy_(module.in_proj_weight[i * E:(i + 1) * E])
                if has_bias:
                    linear.bias.copy_(module.in_proj_bias[i * E:(i + 1) * E])
            layer.W_O.weight.copy_(module.out_proj.weight)
            if has_bias:
                layer.W_O.bias.copy_(module.out_proj.bias)
        return layer
