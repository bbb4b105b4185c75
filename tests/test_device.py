"""Every model, decode loop, importance method and ``translate`` works on the device of its model
(issue 13, item 4), tested without a GPU.

Forward code: inside ``with torch.device("meta")`` every tensor created *without* an explicit
``device=`` lands on the meta device, while the model and its inputs stay on the CPU. Code that
allocates on the default device instead of its inputs' device then mixes meta and CPU tensors and
fails, as it would mix CPU and GPU tensors on a machine with a GPU.

Training loops: a spy model on the meta device records the device of every batch it is given.
"""

import contextlib
import importlib

import numpy as np
import pytest
import torch
from attention_course import causal_mask
from attention_course.analysis.adversarial import (
    adversarial_attention,
    adversarial_attention_search,
    permutation_output_change,
)
from attention_course.analysis.gradients import input_gradient_norms
from attention_course.analysis.importance import gradient_importance, leave_one_out_importance, precision_at_k
from attention_course.analysis.probes import linear_probe_accuracy
from attention_course.experiments.dates import (
    date_exact_match,
    train_date_transformer,
    train_date_translator,
    translate,
)
from attention_course.experiments.pronoun import pronoun_accuracy, train_pronoun_model
from attention_course.experiments.reviews import predict_proba, train_classifier
from attention_course.experiments.series import train_forecaster
from attention_course.experiments.sets import train_max_regression
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.layers.self_attention import CrossAttention, SelfAttention
from attention_course.models.classifier import AttentionClassifier
from attention_course.models.conv_attention import conv_as_attention
from attention_course.models.forecast import HorizonAttentionForecaster
from attention_course.models.pronoun import PronounResolver
from attention_course.models.retrieval import RetrievalHead, retrieval_loss, train_retrieval
from attention_course.models.rnn_attention import AttentionSeq2Seq
from attention_course.models.seq2seq import Seq2Seq, reverse_padded
from attention_course.models.set_transformer import ISAB, PMA, SAB, PooledSetModel, SetTransformerModel
from attention_course.models.transformer import Transformer
from attention_course.tasks.dates import SOURCE_VOCAB, TARGET_VOCAB
from attention_course.tasks.digits import DIGIT_VOCAB, digit_batch
from attention_course.tasks.pronoun import NAMES, pronoun_batch
from attention_course.tasks.pronoun import VOCAB as PRONOUN_VOCAB
from attention_course.tasks.reviews import VOCAB as REVIEW_VOCAB
from attention_course.tasks.reviews import planted_reviews
from attention_course.tasks.series import make_series, seasonal_naive
from attention_course.train.seq2seq import evaluate_by_length, train_seq2seq


def _digits():
    return digit_batch(np.random.default_rng(0), 3, 2, 5)


def _calls():
    """Models and inputs are made here, outside the meta context; only the calls run inside it."""
    torch.manual_seed(0)
    b = _digits()
    V = len(DIGIT_VOCAB)
    seq = Seq2Seq(V, 8, 16, reverse_input=True).eval()
    att = AttentionSeq2Seq(V, V, 8, 16, score="additive", bidirectional=True).eval()
    tr = Transformer(V, V, d_model=8, num_heads=2, num_layers=1, d_ff=16).eval()
    dates = AttentionSeq2Seq(len(SOURCE_VOCAB), len(TARGET_VOCAB), 8, 16).eval()
    x = torch.randn(2, 5, 8)
    pron = PronounResolver(len(PRONOUN_VOCAB), len(NAMES)).eval()
    pb = pronoun_batch(np.random.default_rng(0), 4)
    reviews = planted_reviews(np.random.default_rng(0), 4)
    clf = AttentionClassifier(len(REVIEW_VOCAB), 8, 8).eval()
    s, a = torch.randn(4, reviews.tokens.shape[1]), torch.softmax(torch.randn(4, reviews.tokens.shape[1]), -1)
    sets, set_mask = torch.rand(2, 4, 1), torch.tensor([[True, True, False, False], [True] * 4])
    x_mask = set_mask.repeat(1, 2)[:, :5]
    series = make_series(np.random.default_rng(0), 2, period=4, history=8, horizon=3)
    mask5 = causal_mask(5)
    layers = {"self": SelfAttention(8), "cross": CrossAttention(8, 8), "mha": MultiHeadAttention(8, 2),
              "uniform": AttentionClassifier(len(REVIEW_VOCAB), 8, 8, "average", "uniform"),
              "sab": SAB(8, 2), "isab": ISAB(8, 2, 3), "pma": PMA(8, 2), "set": SetTransformerModel(8, 2),
              "max": PooledSetModel("max", 8), "mean": PooledSetModel("mean", 8),
              "forecast": HorizonAttentionForecaster(8, 3, 8), "retrieval": RetrievalHead(3, 3, 2, hidden=4)}
    conv = [torch.randn(1, 2, 6), torch.randn(3, 2, 3), torch.randn(1, 2, 4, 4), torch.randn(3, 2, 3, 3),
            torch.randn(3)]
    pairs, features, classes = torch.randn(5, 3), torch.randn(20, 3), torch.arange(20) % 2
    return {
        "Seq2Seq": lambda: seq(b.src, b.lengths, b.decoder_input()),
        "Seq2Seq.greedy_decode": lambda: seq.greedy_decode(b.src, b.lengths, 4),
        "reverse_padded": lambda: reverse_padded(b.src, b.lengths),
        "AttentionSeq2Seq": lambda: att(b.src, b.lengths, b.decoder_input()),
        "AttentionSeq2Seq.greedy_decode": lambda: att.greedy_decode(b.src, b.lengths, 4, return_weights=True),
        "Transformer": lambda: tr(b.src, b.lengths, b.decoder_input()),
        "Transformer.greedy_decode": lambda: tr.greedy_decode(b.src, b.lengths, 4),
        "Transformer.attention_maps": lambda: tr.attention_maps(b.src, b.lengths, b.decoder_input()),
        "evaluate_by_length": lambda: evaluate_by_length(seq, lambda rng, L: digit_batch(rng, 2, L, L), [2],
                                                         np.random.default_rng(0)),
        "input_gradient_norms": lambda: input_gradient_norms(seq, b),
        "translate": lambda: translate(dates, ["3.8.1995", "Aug 03 1995"]),
        "date_exact_match": lambda: date_exact_match(dates, n=4),
        "SelfAttention": lambda: layers["self"](x, mask5),
        "CrossAttention": lambda: layers["cross"](x, x),
        "MultiHeadAttention": lambda: layers["mha"](x, x, x),
        "PronounResolver": lambda: pron(pb.tokens, pb.lengths, pb.pronoun_pos),
        "pronoun_accuracy": lambda: pronoun_accuracy(pron, pb),
        "AttentionClassifier": lambda: predict_proba(clf, reviews),
        "uniform AttentionClassifier": lambda: layers["uniform"](reviews.tokens, reviews.lengths),
        "gradient_importance": lambda: gradient_importance(clf, reviews.tokens, reviews.lengths),
        "leave_one_out_importance": lambda: leave_one_out_importance(clf, reviews.tokens, reviews.lengths),
        "precision_at_k": lambda: precision_at_k(s, reviews.evidence, reviews.lengths),
        "permutation_output_change": lambda: permutation_output_change(s, 0.1, a, reviews.lengths, 5),
        "adversarial_attention": lambda: adversarial_attention(s, 0.1, a, reviews.lengths),
        "adversarial_attention_search": lambda: adversarial_attention_search(s, 0.1, a, reviews.lengths, steps=2),
        "conv_as_attention 1-D": lambda: conv_as_attention(conv[0], conv[1], alpha=2.0),
        "conv_as_attention 2-D": lambda: conv_as_attention(conv[2], conv[3], conv[4], alpha=2.0),
        "SAB": lambda: layers["sab"](x, x_mask),
        "ISAB": lambda: layers["isab"](x),
        "PMA": lambda: layers["pma"](x),
        "SetTransformerModel": lambda: layers["set"](sets, set_mask),
        "PooledSetModel max": lambda: layers["max"](sets, set_mask),
        "PooledSetModel mean": lambda: layers["mean"](sets, set_mask),
        "HorizonAttentionForecaster": lambda: layers["forecast"](series.history, series.history_events,
                                                                 series.future_events),
        "seasonal_naive": lambda: seasonal_naive(series.history, 4, 6),
        "RetrievalHead": lambda: retrieval_loss(layers["retrieval"], pairs, pairs),
        "linear_probe_accuracy": lambda: linear_probe_accuracy(features, classes, steps=3),
    }


@pytest.mark.parametrize("name", list(_calls()))
def test_runs_where_its_inputs_are(name):
    call = _calls()[name]
    with torch.device("meta"):                                # the default device is now *not* the inputs' one
        out = call()
    tensors = [out] if isinstance(out, torch.Tensor) else [t for t in _flatten(out) if isinstance(t, torch.Tensor)]
    assert all(t.device.type == "cpu" for t in tensors)


def _flatten(out):
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for item in out:
            yield from _flatten(item)
    else:
        yield out


def test_causal_mask_is_made_on_the_given_device():
    assert causal_mask(4, device="meta").device.type == "meta"
    assert causal_mask(4).device.type == "cpu"


# --- training loops move each batch to the model's device ------------------------------------------

class DeviceSpy(torch.nn.Module):
    """A model on the meta device that records the devices of the inputs it is given."""

    def __init__(self, output, **attributes):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones((), device="meta"))
        self.output, self.seen = output, set()
        self.__dict__.update(attributes)

    def forward(self, *inputs):
        self.seen |= {t.device.type for t in inputs if isinstance(t, torch.Tensor)}
        return self.output(self.w, *inputs)


def _zeros(w, *shape, like):
    return w * torch.zeros(*shape, device=like.device)


def _trained_spies():
    rng = np.random.default_rng(0)
    V = len(DIGIT_VOCAB)
    reviews = planted_reviews(rng, 8)
    views = rng.standard_normal((8, 2))
    return {
        "train_seq2seq": (DeviceSpy(lambda w, src, lengths, tgt: _zeros(w, *tgt.shape, V, like=tgt)),
                          lambda m: train_seq2seq(m, lambda: digit_batch(rng, 2, 1, 3), 2)),
        "train_pronoun_model": (DeviceSpy(lambda w, tokens, lengths, pos: (_zeros(w, len(tokens), 12, like=tokens),
                                                                           None)),
                                lambda m: train_pronoun_model(m, steps=2, batch_size=2)),
        "train_classifier": (DeviceSpy(lambda w, tokens, lengths, a: (_zeros(w, len(tokens), like=tokens), None)),
                             lambda m: train_classifier(m, reviews, steps=2, batch_size=2)),
        "train_max_regression": (DeviceSpy(lambda w, x: _zeros(w, len(x), like=x)),
                                 lambda m: train_max_regression(m, rng, steps=2, batch_size=2)),
        "train_forecaster": (DeviceSpy(lambda w, h, he, fe: (_zeros(w, *fe.shape, like=fe), None), history=8,
                                       horizon=2),
                             lambda m: train_forecaster(m, rng, steps=2, batch_size=2, period=4)),
        "train_retrieval": (DeviceSpy(lambda w, x, y: (None, torch.softmax(_zeros(w, len(x), len(y), like=x), -1))),
                            lambda m: train_retrieval(m, views, views, steps=2, batch_size=4)),
    }


@pytest.mark.parametrize("name", list(_trained_spies()))
def test_training_loops_move_batches_to_the_model(name):
    spy, train = _trained_spies()[name]
    # A meta tensor has no value, so the loop stops where it logs the first loss; by then the
    # model has seen a batch, on its own device if the loop moved it there.
    with contextlib.suppress(RuntimeError, NotImplementedError):
        train(spy)
    assert spy.seen == {"meta"}


@pytest.mark.parametrize("train", [train_date_translator, train_date_transformer])
def test_model_building_trainers_take_a_device(train, monkeypatch):
    built = []
    module = importlib.import_module(train.__module__)
    monkeypatch.setattr(module, "train_seq2seq", lambda model, *a, **k: built.append(model) or {})
    train(steps=1, device="meta")
    train(steps=1)
    assert [next(m.parameters()).device.type for m in built] == ["meta", "cpu"]
