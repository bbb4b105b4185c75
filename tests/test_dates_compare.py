"""Tests of the equal-budget comparison of the Transformer and the RNN with attention on dates."""

import numpy as np
import pytest
import torch
from attention_course.experiments import dates as dates_module
from attention_course.experiments.dates import translator_parameters
from attention_course.experiments.dates_compare import (
    COMPARE_RECIPES,
    KINDS,
    compare_transformer_rnn,
    compared_trainer,
    rnn_width_like_transformer,
    train_compared,
    transformer_parameters,
)
from attention_course.models.rnn_attention import AttentionSeq2Seq
from attention_course.models.transformer import Transformer


def test_parameter_counts_of_the_trained_models_are_within_five_percent(monkeypatch):
    built = []
    monkeypatch.setattr(dates_module, "train_seq2seq", lambda model, *a, **k: built.append(model) or {"loss": []})
    for kind in KINDS:
        compared_trainer(kind, steps=2)()
    n_tr, n_rnn = (sum(p.numel() for p in m.parameters()) for m in built)
    assert isinstance(built[0], Transformer) and isinstance(built[1], AttentionSeq2Seq)
    assert n_tr == transformer_parameters()
    assert abs(n_rnn - n_tr) / n_tr < 0.05
    # the width is the best even one: two features narrower or wider is farther from the Transformer's count
    h = rnn_width_like_transformer()
    assert all(abs(translator_parameters(w, bidirectional=True) - n_tr) >= abs(n_rnn - n_tr) for w in (h - 2, h + 2))
    assert translator_parameters(h, bidirectional=True) == n_rnn


def test_both_kinds_see_the_same_batches(monkeypatch):
    seen = {}

    def record(model, next_batch, steps, **kwargs):
        seen[type(model).__name__] = [next_batch().src.clone() for _ in range(steps)]
        return {"loss": []}

    monkeypatch.setattr(dates_module, "train_seq2seq", record)
    for kind in KINDS:
        compared_trainer(kind, seed=3, steps=3, batch_size=5)()
    first, second = seen["Transformer"], seen["AttentionSeq2Seq"]
    assert len(first) == 3 and all(torch.equal(a, b) for a, b in zip(first, second))


def test_short_comparison_returns_curves():
    result = compare_transformer_rnn(seeds=(0, 1), steps=4, batch_size=4, every=2, n_test=20)
    assert set(result) == set(KINDS)
    assert isinstance(result["transformer"]["models"][0], Transformer)
    assert isinstance(result["rnn"]["models"][1], AttentionSeq2Seq)
    for row in result.values():
        assert row["steps"] == [2, 4]
        assert row["exact"].shape == (2, 2)
        assert np.all((row["exact"] >= 0) & (row["exact"] <= 1))
    assert result["transformer"]["parameters"] == transformer_parameters()


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="kind must be one of"):
        compared_trainer("lstm")
    with pytest.raises(ValueError, match="multiple of every"):
        train_compared("rnn", 0, steps=5, batch_size=2, every=2, n_test=2)
    with pytest.raises(ValueError, match="at least one seed"):
        compare_transformer_rnn(seeds=())
    with pytest.raises(ValueError, match="steps"):
        compared_trainer("transformer", steps=0)


def test_transformer_warmup_is_passed_on_and_capped(monkeypatch):
    calls = []
    monkeypatch.setattr(dates_module, "train_seq2seq", lambda model, *a, **k: calls.append(k) or {"loss": []})
    dates_module.train_date_transformer(steps=200, warmup=50)
    dates_module.train_date_transformer(steps=10, warmup=50)      # a short run still trains: warm-up capped
    assert [k["warmup"] for k in calls] == [50, 9]


def test_the_compared_transformer_uses_its_recipe(monkeypatch):
    calls = []
    monkeypatch.setattr(dates_module, "train_seq2seq", lambda model, *a, **k: calls.append(k) or {"loss": []})
    compared_trainer("transformer", steps=100)()
    compared_trainer("rnn", steps=100)()
    assert calls[0]["lr"] == COMPARE_RECIPES["transformer"]["lr"] and calls[0]["warmup"] == 50
    assert calls[1]["lr"] == COMPARE_RECIPES["rnn"]["lr"] and calls[1]["warmup"] == 0
