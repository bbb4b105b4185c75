"""Tests of the data generator, the plain encoder-decoder, training loop and gradient tools."""

import copy

import numpy as np
import pytest
import torch
from attention_course import seed_everything
from attention_course.analysis.gradients import input_gradient_norms, one_unit_rnn, set_recurrent_gain
from attention_course.experiments.length import (
    LengthProtocol,
    evaluate_stacked,
    run_length_experiment,
    run_stacked_length_experiment,
    train_stacked,
)
from attention_course.models.seq2seq import Seq2Seq, StackedSeq2Seq, reverse_padded
from attention_course.tasks.digits import DIGIT_VOCAB, decode_digits, digit_batch
from attention_course.tokens import BOS, EOS, PAD, pad_ids
from attention_course.train.seq2seq import accuracy, train_seq2seq


def test_digit_batch_layout():
    b = digit_batch(np.random.default_rng(0), 16, 2, 7)
    assert b.src.shape == (16, 7) and b.target.shape == (16, 8)
    for src, n, tgt in zip(b.src, b.lengths, b.target):
        assert (src[:n] >= 3).all() and (src[n:] == PAD).all()
        assert torch.equal(tgt[:n], src[:n]) and tgt[n] == EOS and (tgt[n + 1:] == PAD).all()
    assert (b.decoder_input()[:, 0] == BOS).all()


def test_pad_ids_pads_every_row_to_the_longest():
    ids, lengths = pad_ids([[5, 6, 7], [8], [9, 10]])
    assert ids.tolist() == [[5, 6, 7], [8, PAD, PAD], [9, 10, PAD]]
    assert lengths.tolist() == [3, 1, 2]
    assert ids.dtype == lengths.dtype == torch.int64
    empty, zero = pad_ids([[], []])                          # rows with no ids: width 0
    assert empty.shape == (2, 0) and zero.tolist() == [0, 0]


def test_decode_digits_stops_at_eos():
    b = digit_batch(np.random.default_rng(1), 4, 3, 5)
    for src, n, tgt in zip(b.src, b.lengths, b.target):
        assert decode_digits(tgt) == decode_digits(src)
        assert len(decode_digits(tgt)) == n


def test_digit_batch_is_seeded():
    a = digit_batch(np.random.default_rng(5), 8, 1, 9)
    b = digit_batch(np.random.default_rng(5), 8, 1, 9)
    assert all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("kwargs, message", [({"min_len": 0}, "min_len"), ({"min_len": 9}, "min_len")])
def test_digit_batch_bad_input(kwargs, message):
    args = {"batch_size": 2, "min_len": 1, "max_len": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        digit_batch(np.random.default_rng(0), **args)


def test_reverse_padded_keeps_padding():
    src = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    assert reverse_padded(src, torch.tensor([3, 2])).tolist() == [[5, 4, 3, 0], [7, 6, 0, 0]]


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_context_size_does_not_depend_on_length(cell):
    torch.manual_seed(0)
    model = Seq2Seq(len(DIGIT_VOCAB), 8, 16, cell)
    for n in (3, 40):
        b = digit_batch(np.random.default_rng(n), 2, n, n)
        hs, context, _ = model.encode(b.src, b.lengths)
        h = context[0] if cell == "lstm" else context
        assert hs.shape == (2, n, 16) and h.shape == (1, 2, 16)
        logits = model(b.src, b.lengths, b.decoder_input())
        assert logits.shape == (2, n + 1, len(DIGIT_VOCAB))


def test_encoder_ignores_padding():
    torch.manual_seed(0)
    model = Seq2Seq(len(DIGIT_VOCAB), 8, 16, "gru")
    src = torch.tensor([[3, 4, 5, 0, 0]])
    _, c1, _ = model.encode(src, torch.tensor([3]))
    _, c2, _ = model.encode(src[:, :3], torch.tensor([3]))
    assert torch.allclose(c1, c2)


def test_seq2seq_bad_input():
    model = Seq2Seq(len(DIGIT_VOCAB), 8, 16)
    with pytest.raises(ValueError, match="token ids"):
        model.encode(torch.zeros(2, 3), torch.tensor([3, 3]))
    with pytest.raises(ValueError, match=r"lengths must have shape \(2,\)"):
        model.encode(torch.zeros(2, 3, dtype=torch.long), torch.tensor([3]))
    with pytest.raises(ValueError, match="cell must be one of"):
        Seq2Seq(len(DIGIT_VOCAB), 8, 16, cell="transformer")


def test_accuracy_counts_eos_not_padding():
    target = torch.tensor([[3, 4, EOS, PAD], [5, EOS, PAD, PAD]])
    predicted = torch.tensor([[3, 9, EOS, 7], [5, EOS, PAD, PAD]])
    token, exact = accuracy(predicted, target)
    assert torch.allclose(token, torch.tensor([2 / 3, 1.0]))
    assert exact.tolist() == [0.0, 1.0]
    token_short, _ = accuracy(predicted[:, :1], target)
    assert torch.allclose(token_short, torch.tensor([1 / 3, 1 / 2]))


def test_training_learns_short_copy():
    """A small budget must take a GRU well above chance on 3-digit strings."""
    seed_everything(0)
    torch.manual_seed(0)
    model = Seq2Seq(len(DIGIT_VOCAB), 16, 32, "gru")
    protocol = LengthProtocol(min_len=1, max_len=3, steps=150, eval_lengths=(3,), eval_batch_size=128)
    history, result = run_length_experiment(model, protocol)
    assert history["loss"][-1] < history["loss"][0]
    assert result["token_accuracy"][0] > 0.6
    assert len(history["grad_norm"]) == 150


def test_gradient_norms_vanish_and_explode_with_gain():
    b = digit_batch(np.random.default_rng(3), 32, 20, 20)
    ratios = {}
    for gain in (0.5, 2.0):
        torch.manual_seed(0)
        model = Seq2Seq(len(DIGIT_VOCAB), 8, 32, "rnn")
        set_recurrent_gain(model.encoder.rnn, gain)
        g = input_gradient_norms(model, b)
        assert g.shape == (20,)
        ratios[gain] = g[0] / g[-1]
    assert ratios[0.5] < 1e-3 < 1 < ratios[2.0]


def test_one_unit_rnn_has_a_cliff():
    w = torch.linspace(4.0, 6.0, 2001, dtype=torch.float64, requires_grad=True)
    one_unit_rnn(w).sum().backward()
    g = w.grad.abs()
    assert g.max() > 1e3 * g.median()
    assert abs(w[g.argmax()].item() - 5.0) < 0.01


def test_seed_everything_is_reproducible():
    seed_everything(3)
    a = torch.randn(4)
    seed_everything(3)
    assert torch.equal(a, torch.randn(4))
    assert torch.get_num_threads() == 1
    with pytest.raises(ValueError, match="threads"):
        seed_everything(0, threads=0)


# ---- the stacked (batched-seeds) encoder-decoder and its trainer -------------------------------------------



def _models(n, hidden=16, seed=0):
    torch.manual_seed(seed)
    return [Seq2Seq(len(DIGIT_VOCAB), 8, hidden, "gru") for _ in range(n)]


def _stacked_input(n, rows=5, seed=0, max_len=9):
    b = digit_batch(np.random.default_rng(seed), n * rows, 1, max_len)
    return (b.src.view(n, rows, -1), b.lengths.view(n, rows), b.decoder_input().view(n, rows, -1),
            b.target.view(n, rows, -1))


@pytest.mark.parametrize("reverse", [False, True])
def test_stacked_computes_what_each_model_computes(reverse):
    models = _models(3)
    for model in models:
        model.reverse_input = reverse
    stacked = StackedSeq2Seq.from_models(models)
    src, lengths, tgt_in, _ = _stacked_input(3)
    logits = stacked(src, lengths, tgt_in)
    for m, model in enumerate(models):
        assert torch.allclose(logits[m], model(src[m], lengths[m], tgt_in[m]), atol=1e-5)
        assert torch.equal(stacked.greedy_decode(src, lengths, 10)[m], model.greedy_decode(src[m], lengths[m], 10))
    for a, b in zip((stacked.unstack(m) for m in range(3)), models):
        assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def _stacked_greedy_loop_of_before(stacked, src, lengths, max_len):
    """The stacked model's own greedy loop, as it stood before the model used attention_course.decoding
    (issue 33, item 10): the reference that the shared loop must reproduce bit for bit."""
    hs, h, valid = stacked.encode(src, lengths)
    token = torch.full(src.shape[:2], BOS, dtype=torch.long)
    done = torch.zeros(src.shape[:2], dtype=torch.bool)
    out = []
    for _ in range(max_len):
        states, h = stacked._gru("dec", stacked._embed(stacked.dec_embed, token[..., None]), h)   # (M, B, 1, H)
        token = stacked._read_out(states, hs, valid)[:, :, 0].argmax(-1)                       # (M, B)
        out.append(token.masked_fill(done, PAD))
        done |= token == EOS
    return torch.stack(out, dim=2)


def test_stacked_greedy_decoding_is_its_loop_of_before_bit_for_bit():
    """On a briefly trained stack of plain, attending and reversing models, greedy decoding gives, token for
    token, what the stacked model's own loop gave (the EOS of every row and the PAD after it included)."""
    models = _models(4)
    models[3].reverse_input = True
    torch.manual_seed(3)
    stacked = StackedSeq2Seq.from_models(models, attention_out=[None, torch.nn.Linear(32, len(DIGIT_VOCAB)), None,
                                                                torch.nn.Linear(32, len(DIGIT_VOCAB))])
    rng = np.random.default_rng(7)

    def batch():
        b = digit_batch(rng, 4 * 16, 1, 6)
        return b.src.view(4, 16, -1), b.lengths.view(4, 16), b.decoder_input().view(4, 16, -1), b.target.view(4, 16, -1)

    train_stacked(stacked, batch, 60, lr=1e-2)
    src, lengths, _, _ = _stacked_input(4, rows=32, seed=11, max_len=8)
    with torch.no_grad():
        before = _stacked_greedy_loop_of_before(stacked, src, lengths, 7)
    now = stacked.greedy_decode(src, lengths, 7)
    assert torch.equal(now, before)
    ended = (before == EOS).any(-1)
    assert ended.float().mean() > 0.5 and (before == PAD).any(), "the test needs rows that end early"
    assert not ended.all(), "and rows that do not end within max_len"


def test_stacked_models_do_not_interact():
    """Changing one model's weights changes that model's output only."""
    stacked = StackedSeq2Seq.from_models(_models(2))
    src, lengths, tgt_in, _ = _stacked_input(2)
    before = stacked(src, lengths, tgt_in).detach()
    with torch.no_grad():
        stacked.enc_weight_hh[1] += 0.5
    after = stacked(src, lengths, tgt_in).detach()
    assert torch.equal(before[0], after[0]) and not torch.allclose(before[1], after[1])


def test_stacked_attention_matches_a_direct_computation():
    models = _models(2)
    torch.manual_seed(1)
    outs = [torch.nn.Linear(32, len(DIGIT_VOCAB)) for _ in models]
    stacked = StackedSeq2Seq.from_models(models, attention_out=outs)
    src, lengths, tgt_in, _ = _stacked_input(2)
    logits = stacked(src, lengths, tgt_in)
    for m, (model, out) in enumerate(zip(models, outs)):
        hs, state, _ = model.encode(src[m], lengths[m])                       # (B, S, H), zero past each length
        h, _ = model.decoder.rnn(model.decoder.embed(tgt_in[m]), state)       # (B, T, H)
        scores = h @ hs.transpose(1, 2)
        pad = torch.arange(src.shape[2])[None, None] >= lengths[m][:, None, None]
        weights = scores.masked_fill(pad, float("-inf")).softmax(-1)
        expected = out(torch.cat([weights @ hs, h], -1))
        assert torch.allclose(logits[m], expected, atol=1e-5)
    with pytest.raises(ValueError, match="no plain Seq2Seq form"):
        stacked.unstack(0)


def test_stacked_mixes_plain_attention_and_reversed_models():
    """Plain, attending and reversing models in one stack each compute what they compute alone."""
    models = _models(3)
    models[2].reverse_input = True
    torch.manual_seed(2)
    out = torch.nn.Linear(32, len(DIGIT_VOCAB))
    mixed = StackedSeq2Seq.from_models(models, attention_out=[None, out, None])
    attending = StackedSeq2Seq.from_models(models[1:2], attention_out=[out])
    src, lengths, tgt_in, target = _stacked_input(3)
    logits = mixed(src, lengths, tgt_in)
    assert torch.allclose(logits[0], models[0](src[0], lengths[0], tgt_in[0]), atol=1e-5)
    assert torch.allclose(logits[1], attending(src[1:2], lengths[1:2], tgt_in[1:2])[0], atol=1e-5)
    assert torch.allclose(logits[2], models[2](src[2], lengths[2], tgt_in[2]), atol=1e-5)
    train_stacked(mixed, lambda: (src, lengths, tgt_in, target), 3, lr=1e-2)
    assert (mixed.out_weight[[0, 2], :, :16] == 0).all()        # a plain model's context columns stay zero
    assert (mixed.out_weight[1, :, :16] != 0).any()
    assert mixed.unstack(2).reverse_input and not mixed.unstack(0).reverse_input
    with pytest.raises(ValueError, match="attention must be a bool or 2 bools"):
        StackedSeq2Seq(2, len(DIGIT_VOCAB), 8, 16, attention=[True])


@pytest.mark.parametrize("clip", [0.2, None])
def test_train_stacked_is_training_each_model_alone(clip):
    steps, rows, seeds = 4, 16, [3, 4]
    models = _models(2, hidden=16)
    stacked = StackedSeq2Seq.from_models(models)
    rngs = [np.random.default_rng(s) for s in seeds]

    def stacked_batch():
        bs = [digit_batch(r, rows, 1, 6) for r in rngs]
        return tuple(torch.stack(t) for t in zip(*[(b.src, b.lengths, b.decoder_input(), b.target) for b in bs]))

    history = train_stacked(stacked, stacked_batch, steps, lr=1e-2, clip=clip)
    assert history["loss"].shape == history["grad_norm"].shape == (steps, 2)
    for m, (model, seed) in enumerate(zip(models, seeds)):
        rng = np.random.default_rng(seed)
        alone = train_seq2seq(model, lambda rng=rng: digit_batch(rng, rows, 1, 6), steps, lr=1e-2, clip=clip)
        assert np.allclose(history["loss"][:, m], alone["loss"], rtol=1e-4)
        assert np.allclose(history["grad_norm"][:, m], alone["grad_norm"], rtol=1e-4)
        trained = stacked.unstack(m)
        for a, b in zip(trained.parameters(), model.parameters()):
            assert torch.allclose(a, b, atol=1e-4)
    if clip is not None:
        assert (history["grad_norm"] > clip).any()          # so the clipping was exercised


def test_train_stacked_clips_each_model_by_its_own_norm():
    models = _models(1) * 2                                 # the same model twice: one clipped, one not
    stacked = StackedSeq2Seq.from_models(models)
    batch = _stacked_input(1, rows=16)
    both = tuple(torch.cat([t, t]) for t in batch)
    train_stacked(stacked, lambda: both, 1, lr=1e-2, clip=[1e-3, None])
    moved = [(stacked.dec_weight_hh[m] - models[0].decoder.rnn.weight_hh_l0).abs().max().item() for m in (0, 1)]
    assert moved[0] > 0 and moved[1] > 0
    # Adam's first step is about lr * sign(g) for both, so compare the second step instead:
    train_stacked(stacked, lambda: both, 1, lr=1e-2, clip=[1e-3, None])
    assert not torch.allclose(stacked.dec_weight_hh[0], stacked.dec_weight_hh[1])


def test_run_stacked_length_experiment_learns_and_is_seeded():
    protocol = LengthProtocol(min_len=1, max_len=3, steps=150, eval_lengths=(2, 3), eval_batch_size=64)
    models = _models(1, hidden=32)
    stacked = StackedSeq2Seq.from_models(models * 2)          # two copies, one data stream each, same seed
    history, result, curve = run_stacked_length_experiment(stacked, protocol, [5, 5], curve_every=50,
                                                           curve_examples=32)
    assert result["token_accuracy"].shape == (2, 2) and curve["token_accuracy"].shape == (3, 2)
    assert curve["step"].tolist() == [50, 100, 150]
    assert np.array_equal(history["loss"][:, 0], history["loss"][:, 1])        # same seed, same init
    assert (result["token_accuracy"] > 0.6).all()
    assert (history["loss"][-10:].mean(0) < history["loss"][:10].mean(0)).all()


def test_stacked_length_experiments_in_workers_come_back_trained_and_identical():
    from attention_course.experiments.length import trained_stacked_length_experiment
    from attention_course.train.parallel import run_parallel
    protocol = LengthProtocol(min_len=1, max_len=3, steps=5, eval_lengths=(2, 3), eval_batch_size=16)
    jobs = [dict(model=StackedSeq2Seq.from_models(_models(2, hidden=8)), protocol=protocol, data_seeds=[1, 2],
                 curve_every=5, curve_examples=8) for _ in range(2)]
    serial = run_stacked_length_experiment(copy.deepcopy(jobs[0]["model"]), protocol, [1, 2], curve_every=5,
                                           curve_examples=8)
    for model, history, result, curve in run_parallel(trained_stacked_length_experiment, jobs, workers=2):
        assert np.array_equal(history["loss"], serial[0]["loss"])
        assert np.array_equal(result["token_accuracy"], serial[1]["token_accuracy"])
        assert np.array_equal(curve["token_accuracy"], serial[2]["token_accuracy"])
        assert not torch.equal(model.dec_weight_hh, jobs[0]["model"].dec_weight_hh)       # trained, sent back


def test_stacked_bad_input():
    stacked = StackedSeq2Seq(2, len(DIGIT_VOCAB), 8, 16)
    src, lengths, tgt_in, _ = _stacked_input(2)
    with pytest.raises(ValueError, match=r"src must have shape \(models=2"):
        stacked(src[0], lengths[0], tgt_in[0])
    with pytest.raises(ValueError, match="lengths must have shape"):
        stacked(src, lengths[:, :2], tgt_in)
    with pytest.raises(ValueError, match="tgt_in must have shape"):
        stacked(src, lengths, tgt_in[:1])
    with pytest.raises(ValueError, match="token ids"):
        stacked(src.float(), lengths, tgt_in)
    with pytest.raises(ValueError, match="one or more GRU"):
        StackedSeq2Seq.from_models([Seq2Seq(len(DIGIT_VOCAB), 8, 16, "lstm")])
    with pytest.raises(ValueError, match="one shape"):
        StackedSeq2Seq.from_models([Seq2Seq(len(DIGIT_VOCAB), 8, 16), Seq2Seq(len(DIGIT_VOCAB), 8, 32)])
    with pytest.raises(ValueError, match="models must be a positive int"):
        StackedSeq2Seq(0, len(DIGIT_VOCAB), 8, 16)
    with pytest.raises(ValueError, match="clip must be"):
        train_stacked(stacked, lambda: _stacked_input(2), 1, clip=[1.0])
    with pytest.raises(ValueError, match="steps"):
        train_stacked(stacked, lambda: _stacked_input(2), 0)
    with pytest.raises(ValueError, match="one data seed per model"):
        run_stacked_length_experiment(stacked, LengthProtocol(steps=1), [0])
    with pytest.raises(ValueError, match="max_len"):
        stacked.greedy_decode(src, lengths, 0)
    with pytest.raises(ValueError, match="batch_size"):
        evaluate_stacked(stacked, [3], 0, np.random.default_rng(0))


def test_longest_copied():
    from attention_course.experiments.length import longest_copied
    lengths = [2, 4, 6, 8]
    assert longest_copied(lengths, [1.0, 0.95, 0.89, 0.95]) == 4          # the first failure ends the run
    assert longest_copied(lengths, [0.99, 0.98, 0.97, 0.96]) == 8
    assert longest_copied(lengths, [0.5, 0.4, 0.3, 0.2]) == 0
    assert longest_copied(lengths, [0.5, 0.4, 0.3, 0.2], threshold=0.45) == 2
    with pytest.raises(ValueError, match="one accuracy per length"):
        longest_copied(lengths, [1.0])
    with pytest.raises(ValueError, match="increase"):
        longest_copied([4, 2], [1.0, 1.0])
    with pytest.raises(ValueError, match="threshold"):
        longest_copied(lengths, [1.0] * 4, threshold=0)
