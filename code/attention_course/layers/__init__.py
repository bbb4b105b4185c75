"""Layers: the attention computations the chapters teach, each a function or an nn.Module.

``attention`` (scaled dot-product attention, masked softmax, masks), ``scores`` (dot, general and
additive score functions), ``self_attention`` (self- and cross-attention), ``multihead``.
"""
