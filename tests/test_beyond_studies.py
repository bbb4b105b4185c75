"""The multi-seed studies of Chapter 8: what training changes in the digit heads, and max regression by seed."""

import numpy as np
import pytest
import torch
from attention_course.experiments.images import centre_study, trained_digit_classifier
from attention_course.experiments.sets import pma_ablation, pma_reading, set_study, trained_set_model
from attention_course.tasks.handwritten import load_handwritten_digits
from attention_course.tasks.sets import max_regression_test_set


@pytest.fixture(scope="module")
def digits():
    return load_handwritten_digits().split(n_test=497, seed=0)


def test_frozen_positions_keep_the_start_and_train_the_rest(digits):
    train, _ = digits
    frozen = trained_digit_classifier("attention", train, seed=3, steps=5, train_positions=False)
    start = trained_digit_classifier("attention", train, seed=3, steps=1, lr=0.0)
    moved = trained_digit_classifier("attention", train, seed=3, steps=5)
    assert torch.equal(frozen.mix.centres, start.mix.centres) and torch.equal(frozen.mix.alpha, start.mix.alpha)
    assert not torch.equal(frozen.mix.W_V, start.mix.W_V)
    assert not torch.equal(moved.mix.centres, start.mix.centres)


def test_frozen_positions_need_attention(digits):
    with pytest.raises(ValueError, match="freezes attention centres"):
        trained_digit_classifier("conv", digits[0], steps=1, train_positions=False)


def test_centre_study_measures_shift_from_the_run_start(digits):
    train, test = digits
    r = centre_study(train, test, seeds=(0, 1), steps=3)
    assert r["start"].shape == r["end"].shape == (2, 9, 2)
    np.testing.assert_allclose(r["shift"], np.linalg.norm(r["end"] - r["start"], axis=-1))
    first = trained_digit_classifier("attention", train, seed=0, steps=1, lr=0.0)
    np.testing.assert_allclose(r["start"][0], first.mix.centres.detach().numpy())
    np.testing.assert_allclose(r["alpha_start"], 0.5, rtol=1e-6)
    assert (r["other_start"] > 0).all() and set(r["acc"]) == {"attention", "frozen positions", "conv"}
    assert all(len(v) == 2 and ((v >= 0) & (v <= 1)).all() for v in r["acc"].values())
    with pytest.raises(ValueError, match="at least one seed"):
        centre_study(train, test, seeds=())


def test_pma_reading_finds_the_head_on_the_largest_element():
    model = trained_set_model("set_transformer", seed=0, steps=2, batch_size=8)
    x = torch.tensor([[[1.0], [5.0], [2.0]], [[9.0], [0.0], [3.0]]])
    r = pma_reading(model, x)
    heads = r["weights"].shape[1]
    assert r["weights"].shape == (2, heads, 3) and r["by_rank"].shape == (heads, 3)
    np.testing.assert_allclose(r["weights"].sum(-1).numpy(), 1.0, rtol=1e-5)
    w = r["weights"].numpy()
    np.testing.assert_allclose(r["weight_on_max"], (w[0, :, 1] + w[1, :, 0]) / 2, rtol=1e-5)
    assert r["best_head"] == int(np.argmax(r["weight_on_max"]))
    with pytest.raises(ValueError, match="SetTransformerModel"):
        pma_reading(trained_set_model("mean", steps=1), x)
    with pytest.raises(ValueError, match=r"shape \(B, n, 1\)"):
        pma_reading(model, x[..., 0])


def test_pma_ablation_changes_the_error_and_restores_the_model():
    model = trained_set_model("set_transformer", seed=0, steps=20, batch_size=16)
    test = max_regression_test_set(seed=1, per_size=8, max_size=4)
    from attention_course.experiments.sets import max_regression_mae
    before = max_regression_mae(model, test)
    ablated = pma_ablation(model, test)
    assert set(ablated) == {"uniform", "shuffled"}
    assert max_regression_mae(model, test) == before


def test_set_study_runs_every_model_for_every_seed():
    test = max_regression_test_set(seed=1, per_size=8, max_size=4)
    r = set_study(test, seeds=(0, 1), scale=100.0, steps=3, batch_size=8)
    assert set(r["mae"]) == {"mean", "sum", "max", "set_transformer"}
    assert all(v.shape == (2,) for v in r["mae"].values())
    assert r["on_max"].shape == r["weight_on_max"].shape == r["ablated"]["uniform"].shape == (2,)
    with pytest.raises(ValueError, match="at least one seed"):
        set_study(test, seeds=())


def test_fresh_classifier_is_the_start_of_the_run(digits):
    from attention_course.experiments.images import fresh_digit_classifier
    start = fresh_digit_classifier("attention", seed=4)
    untouched = trained_digit_classifier("attention", digits[0], seed=4, steps=1, lr=0.0)
    assert all(torch.equal(a, b) for a, b in zip(start.parameters(), untouched.parameters()))
