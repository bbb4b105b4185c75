"""The two-lookup task and the one-query reader."""

import numpy as np
import pytest
import torch
from attention_course.experiments.lookup import lookup_error, marker_weights, train_marked_reader
from attention_course.models.lookup import MarkedReader
from attention_course.tasks.lookup import FIRST, NO_MARK, SECOND, two_lookup_batch


def test_batch_marks_two_distinct_items_and_answers_with_them():
    batch = two_lookup_batch(np.random.default_rng(0), 50, length=6, dim=3)
    assert batch.vectors.shape == (50, 6, 3) and batch.markers.shape == (50, 6) and batch.answer.shape == (50, 2, 3)
    assert ((batch.markers == FIRST).sum(1) == 1).all() and ((batch.markers == SECOND).sum(1) == 1).all()
    assert ((batch.markers == NO_MARK).sum(1) == 4).all()
    for row in range(50):
        for slot, mark in enumerate((FIRST, SECOND)):
            assert torch.equal(batch.answer[row, slot], batch.vectors[row, batch.markers[row].tolist().index(mark)])
    where = [batch.markers[:, t].eq(FIRST).float().mean().item() for t in range(6)]
    assert min(where) > 0.0                                                # the marker lands anywhere


@pytest.mark.parametrize("kwargs", [{"length": 1}, {"dim": 0}, {"batch_size": 0}])
def test_batch_rejects_bad_sizes(kwargs):
    args = {"batch_size": 4, **kwargs}
    with pytest.raises(ValueError):
        two_lookup_batch(np.random.default_rng(0), **args)


def test_parameters_do_not_depend_on_heads_and_bad_input_is_named():
    counts = {h: sum(p.numel() for p in MarkedReader(4, 3, 2, 32, h).parameters()) for h in (1, 2, 4)}
    assert len(set(counts.values())) == 1
    reader = MarkedReader(4, 3, 2, 32, 2)
    batch = two_lookup_batch(np.random.default_rng(0), 3)
    out, w = reader(batch.vectors, batch.markers)
    assert out.shape == (3, 2, 4) and w.shape == (3, 2, 1, 8)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        reader(batch.vectors, batch.markers + 3)
    with pytest.raises(ValueError, match="dim=4"):
        reader(batch.vectors[..., :3], batch.markers)


def test_two_heads_learn_what_one_head_cannot():
    one, _ = train_marked_reader(1, seed=0)
    two, _ = train_marked_reader(2, seed=0)
    assert lookup_error(one)["both"] > 0.3 and lookup_error(two)["both"] < 0.05
    w = marker_weights(two, n=500)                                        # (heads, 2)
    assert sorted(w.argmax(1).tolist()) == [0, 1]                         # each head reads a different mark


def test_the_held_out_seed_is_reserved():
    from attention_course.experiments.lookup import LOOKUP_TEST_SEED
    with pytest.raises(ValueError, match="reserved"):
        train_marked_reader(1, seed=LOOKUP_TEST_SEED)
