"""Chapter 1's sweep, copy demonstration and cell comparison (attention_course.experiments.length)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from attention_course import seed_everything
from attention_course.experiments.length import (
    CELL_PROTOCOL,
    SWEEP,
    SWEEP_RUNS,
    bottleneck_sweep,
    compare_cells,
    copies,
    sweep_parameters,
)
from attention_course.models.seq2seq import Seq2Seq
from attention_course.tasks.digits import DIGIT_VOCAB, digit_batch

TINY = dataclasses.replace(SWEEP, steps=4, eval_lengths=(2, 3), eval_batch_size=8, max_len=3)


@pytest.fixture(autouse=True)
def _one_thread():
    seed_everything(0)


def test_the_sweep_returns_every_configuration_with_its_seeds():
    out = bottleneck_sweep(seeds=(0, 1), protocol=TINY)
    assert tuple(out["runs"]) == SWEEP_RUNS and out["lengths"] == [2, 3]
    for r in out["runs"].values():
        assert r["acc"].shape == (2, 2) and r["exact"].shape == (2, 2)
        assert r["loss"].shape == (4, 2) and r["grad_norm"].shape == (4, 2) and r["curve"].shape == (0, 2)
    assert {k: m.models for k, m in out["models"].items()} == {16: 4, 32: 6, 64: 2}


def test_learning_curves_do_not_change_the_training():
    """The curve's tests draw on their own stream: the trained models are the same with or without them."""
    plain = bottleneck_sweep(seeds=(0,), protocol=TINY)
    curved = bottleneck_sweep(seeds=(0,), protocol=TINY, curve_every=2, curve_examples=4)
    assert curved["runs"]["plain d=16"]["curve"].shape == (2, 1)
    for name in SWEEP_RUNS:
        np.testing.assert_array_equal(plain["runs"][name]["loss"], curved["runs"][name]["loss"])
        np.testing.assert_array_equal(plain["runs"][name]["acc"], curved["runs"][name]["acc"])


def test_the_controls_start_from_the_plain_models_weights():
    """Same seed, same initial weights: the first step's loss of a control equals its plain model's."""
    out = bottleneck_sweep(seeds=(0, 1), protocol=TINY)
    runs = out["runs"]
    np.testing.assert_array_equal(runs["unclipped d=32"]["loss"][0], runs["plain d=32"]["loss"][0])
    np.testing.assert_array_equal(runs["attention d=16"]["loss"][0] != runs["plain d=16"]["loss"][0], [True, True])


def test_parameter_counts():
    V = len(DIGIT_VOCAB)
    assert sweep_parameters(32) == sum(p.numel() for p in Seq2Seq(V, 16, 32).parameters())
    assert sweep_parameters(16, attention=True) - sweep_parameters(16) == 16 * V


def test_an_empty_seed_list_is_refused():
    with pytest.raises(ValueError, match="at least one seed"):
        bottleneck_sweep(seeds=())


def test_copies_mark_every_wrong_or_missing_digit():
    torch.manual_seed(0)
    model = Seq2Seq(len(DIGIT_VOCAB), 16, 8)
    batch = digit_batch(np.random.default_rng(0), 5, 4, 6)
    rows = copies(model, batch)
    assert len(rows) == 5
    for source, copied, marks in rows:
        assert len(marks) == len(source)
        for i, ch in enumerate(source):
            assert (marks[i] == "^") == (i >= len(copied) or copied[i] != ch)


def test_compare_cells_gives_one_result_per_cell_and_seed():
    tiny = dataclasses.replace(CELL_PROTOCOL, steps=2, eval_lengths=(3,), eval_batch_size=4, max_len=4)
    out = compare_cells(seeds=(0, 1), cells=("rnn", "gru"), protocol=tiny)
    assert list(out) == ["rnn", "gru"] and all(len(v) == 2 for v in out.values())
    r = out["gru"][1]
    assert r["token_accuracy"].shape == (1,) and r["init"].shape == (4,) and r["trained"].shape == (4,)
    assert not np.array_equal(out["gru"][0]["init"], out["gru"][1]["init"])     # seeds differ
