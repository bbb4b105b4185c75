"""Measuring vanishing and exploding gradients in recurrent encoders.

The question "does the loss still feel token t?" has a number: the norm of the gradient of
the loss with respect to the encoder's input embedding at position t. In a plain tanh RNN that
norm shrinks (or grows) geometrically with the distance from the end of the source, because
backpropagation multiplies one recurrent Jacobian per step.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..tokens import PAD, Batch

__all__ = ["input_gradient_norms", "set_recurrent_gain", "one_unit_rnn"]


def input_gradient_norms(model: nn.Module, batch: Batch) -> np.ndarray:
    """(S,) mean over the batch of ||d loss / d embedding_t|| for each source position t.

    ``model`` is a :class:`~attention_course.models.seq2seq.Seq2Seq` (its encoder has ``embed``);
    the loss is the teacher-forced cross-entropy of the whole target. Use a batch whose
    sources all have the same length so that position t means the same thing in every row.
    """
    captured = {}

    def keep(module, inputs, output):
        output.retain_grad()
        captured["emb"] = output

    batch = batch.to(next(model.parameters()).device)
    handle = model.encoder.embed.register_forward_hook(keep)
    try:
        model.zero_grad()
        logits = model(batch.src, batch.lengths, batch.decoder_input())    # (B, T, V)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), batch.target.flatten(),
                                           ignore_index=PAD)
        loss.backward()
    finally:
        handle.remove()
    grad = captured["emb"].grad                                            # (B, S, E)
    model.zero_grad()
    return grad.norm(dim=-1).mean(0).cpu().numpy()


@torch.no_grad()
def set_recurrent_gain(rnn: nn.RNNBase, gain: float) -> None:
    """Set every hidden-to-hidden matrix of ``rnn`` to ``gain`` times a random orthogonal
    matrix, so each step's linear part scales a state by exactly ``gain``."""
    for name, w in rnn.named_parameters():
        if name.startswith("weight_hh"):
            nn.init.orthogonal_(w, gain=gain)


def one_unit_rnn(w: torch.Tensor, b: float = -2.5, T: int = 50, h0: float = 0.0) -> torch.Tensor:
    """Final state h_T of the one-unit RNN h_t = w * sigmoid(h_{t-1}) + b (Pascanu et al. 2013).

    ``w`` may be a scalar or a (N,) tensor of weights, giving (N,) final states. Near the
    weight where the map gains a second stable state the final state jumps: the loss surface
    has a cliff and the gradient with respect to ``w`` explodes there.
    """
    h = torch.full_like(w, h0)
    for _ in range(T):
        h = w * torch.sigmoid(h) + b
    return h
