"""Beam search (attention_course.decoding.beam) on the RNN decoders and the Transformer."""

import pytest
import torch
from attention_course.decoding import beam_search, greedy_decode, sequence_log_prob
from attention_course.models.rnn_attention import AttentionSeq2Seq
from attention_course.models.seq2seq import Seq2Seq
from attention_course.models.transformer import Transformer
from attention_course.tokens import EOS, PAD

V, MAX_LEN = 8, 12


def _models(seed):
    torch.manual_seed(seed)
    return [Transformer(V, V, d_model=16, num_heads=2, num_layers=2, d_ff=32).eval(),
            Transformer(V, V, d_model=16, num_heads=2, num_layers=1, d_ff=32, kv_cache=False).eval(),
            AttentionSeq2Seq(V, V, 8, 16, bidirectional=bool(seed % 2)).eval(),
            Seq2Seq(V, 8, 16, cell="lstm" if seed % 2 else "gru").eval()]


def _source(seed, batch=6, S=7):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, S + 1, (batch,), generator=g)
    lengths[0] = S
    src = torch.randint(3, V, (batch, S), generator=g)
    src[torch.arange(S)[None, :] >= lengths[:, None]] = PAD
    return src, lengths


@pytest.mark.parametrize("seed", range(4))
def test_beam_width_one_is_greedy(seed):
    src, lengths = _source(seed)
    for model in _models(seed):
        ids, log_prob = beam_search(model, src, lengths, MAX_LEN, beam_width=1)
        greedy = greedy_decode(model, src, lengths, MAX_LEN)
        assert torch.equal(ids, greedy), type(model).__name__
        assert torch.allclose(log_prob, sequence_log_prob(model, src, lengths, greedy), atol=1e-5)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("width", [2, 4])
def test_beam_returns_its_sequence_log_prob_and_beats_greedy(seed, width):
    """The greedy output is one of the candidates, so the beam can only do better."""
    src, lengths = _source(seed)
    for model in _models(seed):
        ids, log_prob = beam_search(model, src, lengths, MAX_LEN, beam_width=width)
        assert ids.shape == (6, MAX_LEN)
        assert torch.allclose(log_prob, sequence_log_prob(model, src, lengths, ids), atol=1e-5)
        greedy = sequence_log_prob(model, src, lengths, greedy_decode(model, src, lengths, MAX_LEN))
        assert (log_prob >= greedy - 1e-5).all(), type(model).__name__


def test_padding_after_eos_and_chunks_agree():
    src, lengths = _source(3, batch=9)
    model = _models(3)[0]
    ids, log_prob = beam_search(model, src, lengths, MAX_LEN, beam_width=3)
    for row in ids:
        ended = (row == EOS).nonzero()
        if len(ended):
            assert (row[ended[0, 0] + 1:] == PAD).all()
    ids2, log_prob2 = beam_search(model, src, lengths, MAX_LEN, beam_width=3, chunk=4)
    assert torch.equal(ids, ids2) and torch.allclose(log_prob, log_prob2, atol=1e-6)


def test_length_penalty_prefers_longer_outputs():
    src, lengths = _source(1, batch=20)
    model = _models(1)[0]
    short, _ = beam_search(model, src, lengths, MAX_LEN, beam_width=4, length_penalty=0.0)
    long, _ = beam_search(model, src, lengths, MAX_LEN, beam_width=4, length_penalty=2.0)
    assert (long != PAD).sum() >= (short != PAD).sum()


@pytest.mark.parametrize("kwargs, message", [({"beam_width": 0}, "beam_width must be a positive int"),
                                             ({"beam_width": 2.5}, "beam_width must be a positive int"),
                                             ({"max_len": 0}, "max_len must be a positive int"),
                                             ({"length_penalty": -1}, "length_penalty must be a real number"),
                                             ({"length_penalty": float("nan")}, "length_penalty must be"),
                                             ({"chunk": 0}, "chunk must be a positive int")])
def test_bad_arguments_are_named(kwargs, message):
    src, lengths = _source(0)
    args = {"max_len": MAX_LEN, **kwargs}
    with pytest.raises(ValueError, match=message):
        beam_search(_models(0)[0], src, lengths, **args)


def test_sequence_log_prob_rejects_bad_ids():
    src, lengths = _source(0)
    with pytest.raises(ValueError, match="ids must be"):
        sequence_log_prob(_models(0)[0], src, lengths, torch.zeros(5, 3, dtype=torch.long))
