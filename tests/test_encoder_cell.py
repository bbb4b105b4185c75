"""``Encoder.cell()``: the encoder's recurrence as a one-step cell, which Chapter 1 steps by hand."""

from __future__ import annotations

import pytest
import torch
from attention_course.models.seq2seq import Encoder


@pytest.mark.parametrize("kind", ["rnn", "gru", "lstm"])
def test_stepping_the_cell_gives_the_encoders_states(kind):
    torch.manual_seed(0)
    encoder = Encoder(vocab_size=13, embed_dim=8, hidden_dim=6, cell=kind)
    src, lengths = torch.randint(3, 13, (2, 5)), torch.tensor([5, 3])
    with torch.no_grad():
        hs, _ = encoder(src, lengths)
        cell = encoder.cell()
        for b in range(2):
            h = torch.zeros(6)
            state = (h, torch.zeros(6))
            for t, x_t in enumerate(encoder.embed(src[b, : lengths[b]])):
                if kind == "lstm":
                    state = cell(x_t, state)
                    h = state[0]
                else:
                    h = cell(x_t, h)
                assert torch.allclose(h, hs[b, t], atol=1e-6)


def test_the_cell_is_a_copy():
    encoder = Encoder(vocab_size=13, embed_dim=8, hidden_dim=6)
    cell = encoder.cell()
    with torch.no_grad():
        cell.weight_hh.zero_()
    assert encoder.rnn.weight_hh_l0.abs().sum() > 0


def test_a_bidirectional_encoder_has_no_single_cell():
    with pytest.raises(ValueError, match="bidirectional"):
        Encoder(vocab_size=13, embed_dim=8, hidden_dim=6, bidirectional=True).cell()
