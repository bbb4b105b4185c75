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
def test_beam_with_greedy_returns_its_sequence_log_prob_and_beats_greedy(seed, width):
    """With include_greedy the greedy output is one of the candidates, so the beam can only do better."""
    src, lengths = _source(seed)
    for model in _models(seed):
        ids, log_prob = beam_search(model, src, lengths, MAX_LEN, beam_width=width, include_greedy=True)
        assert ids.shape == (6, MAX_LEN)
        assert torch.allclose(log_prob, sequence_log_prob(model, src, lengths, ids), atol=1e-5)
        greedy = sequence_log_prob(model, src, lengths, greedy_decode(model, src, lengths, MAX_LEN))
        assert (log_prob >= greedy - 1e-5).all(), type(model).__name__


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("width", [2, 4])
def test_plain_beam_returns_its_sequence_log_prob_and_the_option_only_adds_greedy(seed, width):
    """Plain beam search scores what it returns; include_greedy changes a row only to greedy's output,
    and only where that is more likely than the plain beam's choice."""
    src, lengths = _source(seed)
    for model in _models(seed):
        plain, plain_lp = beam_search(model, src, lengths, MAX_LEN, beam_width=width)
        assert torch.allclose(plain_lp, sequence_log_prob(model, src, lengths, plain), atol=1e-5)
        both, both_lp = beam_search(model, src, lengths, MAX_LEN, beam_width=width, include_greedy=True)
        greedy = greedy_decode(model, src, lengths, MAX_LEN)
        changed = (both != plain).any(1)
        assert torch.equal(both[changed], greedy[changed]), type(model).__name__
        assert (both_lp[changed] > plain_lp[changed]).all()
        assert torch.equal(both_lp[~changed], plain_lp[~changed])


# A table language model on which a beam of 2 drops the greedy path: after 'a' (0.55) every next token is
# about equally likely, after 'b' (0.45) two tokens share the mass, so 'ba' and 'bb' push 'aa' out of the beam,
# and both then end less likely than 'aa<eos>'.
SEARCH_ERROR_TABLE = {"": {"a": 0.55, "b": 0.45}, "a": {"a": 0.34, "b": 0.33, "<eos>": 0.33},
                      "b": {"a": 0.5, "b": 0.5}, "ba": {"<eos>": 0.5, "a": 0.5}, "bb": {"<eos>": 0.5, "a": 0.5}}


def test_plain_beam_can_end_less_likely_than_greedy_and_the_option_prevents_it():
    from attention_course.teaching.checks.multihead import TableLM
    model, src, lengths = TableLM(SEARCH_ERROR_TABLE), torch.zeros(1, 1, dtype=torch.long), torch.ones(1).long()
    greedy = greedy_decode(model, src, lengths, 5)
    greedy_lp = sequence_log_prob(model, src, lengths, greedy)
    plain, plain_lp = beam_search(model, src, lengths, 5, beam_width=2)
    assert plain_lp.item() < greedy_lp.item() - 0.1                   # a search error of plain beam search
    both, both_lp = beam_search(model, src, lengths, 5, beam_width=2, include_greedy=True)
    assert torch.equal(both, greedy) and torch.allclose(both_lp, greedy_lp)
    wide, wide_lp = beam_search(model, src, lengths, 5, beam_width=3)   # a wider beam keeps 'aa'
    assert wide_lp.item() >= greedy_lp.item() - 1e-6


def test_a_beam_wide_enough_for_every_hypothesis_finds_the_most_likely_output():
    """With every prefix in the beam, beam search is exhaustive: it returns the most likely output."""
    import itertools

    from attention_course.teaching.checks.multihead import BEAM_TABLE, BEAM_VOCAB, TableLM
    model, src, lengths = TableLM(BEAM_TABLE), torch.zeros(1, 1, dtype=torch.long), torch.ones(1).long()
    outputs = ["".join(t) for n in range(0, 4) for t in itertools.product("ab", repeat=n)]
    ids = [torch.tensor([[BEAM_VOCAB.index(c) for c in o] + [EOS] + [PAD] * (4 - len(o))]) for o in outputs]
    best = max(sequence_log_prob(model, src, lengths, i).item() for i in ids)
    _, lp = beam_search(model, src, lengths, 5, beam_width=64)
    assert abs(lp.item() - best) < 1e-5


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
    ids3, _ = beam_search(model, src, lengths, MAX_LEN, beam_width=3, chunk=4, include_greedy=True)
    assert torch.equal(ids3, beam_search(model, src, lengths, MAX_LEN, beam_width=3, include_greedy=True)[0])


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
                                             ({"chunk": 0}, "chunk must be a positive int"),
                                             ({"include_greedy": 1}, "include_greedy must be True or False")])
def test_bad_arguments_are_named(kwargs, message):
    src, lengths = _source(0)
    args = {"max_len": MAX_LEN, **kwargs}
    with pytest.raises(ValueError, match=message):
        beam_search(_models(0)[0], src, lengths, **args)


def test_sequence_log_prob_rejects_bad_ids():
    src, lengths = _source(0)
    with pytest.raises(ValueError, match="ids must be"):
        sequence_log_prob(_models(0)[0], src, lengths, torch.zeros(5, 3, dtype=torch.long))
