"""Unit and property tests of attention_course.models.set_transformer: SAB and ISAB are permutation-equivariant,
PMA and the whole models permutation-invariant; masks hide padding; the max-regression pieces."""

import numpy as np
import pytest
import torch
from attention_course.experiments.sets import max_regression_mae, train_max_regression
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.models.set_transformer import ISAB, MAB, PMA, SAB, PooledSetModel, SetTransformerModel
from attention_course.tasks.sets import max_regression_batch, max_regression_test_set
from hypothesis import given, settings
from hypothesis import strategies as st

D = 8


def _set(seed, B, n, d=D):
    return torch.randn(B, n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _perm(seed, n):
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed + 1))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), B=st.integers(1, 3), n=st.integers(1, 9), layer_norm=st.booleans())
def test_sab_and_isab_are_permutation_equivariant(seed, B, n, layer_norm):
    torch.manual_seed(seed)
    x, perm = _set(seed, B, n), _perm(seed, n)
    for block in (SAB(D, 2, layer_norm).double(), ISAB(D, 2, num_inducing=3, layer_norm=layer_norm).double()):
        assert torch.allclose(block(x[:, perm]), block(x)[:, perm], atol=1e-10)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), B=st.integers(1, 3), n=st.integers(1, 9), k=st.integers(1, 3))
def test_pma_is_permutation_invariant(seed, B, n, k):
    torch.manual_seed(seed)
    pma = PMA(D, 2, num_seeds=k).double()
    x, perm = _set(seed, B, n), _perm(seed, n)
    out = pma(x)
    assert out.shape == (B, k, D)
    assert torch.allclose(pma(x[:, perm]), out, atol=1e-10)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 8))
def test_models_are_permutation_invariant(seed, n):
    torch.manual_seed(seed)
    x, perm = 100 * torch.rand(3, n, 1, dtype=torch.float64), _perm(seed, n)
    for model in (SetTransformerModel().double(), PooledSetModel("mean").double(),
                  PooledSetModel("sum").double(), PooledSetModel("max").double()):
        out = model(x)
        assert out.shape == (3,)
        assert torch.allclose(model(x[:, perm]), out, atol=1e-9)


def test_the_attention_is_the_packages_multihead_attention():
    mab = MAB(D, 4)
    assert isinstance(mab.attention, MultiHeadAttention)
    x, y = _set(0, 2, 3).float(), _set(1, 2, 5).float()
    assert mab(x, y).shape == (2, 3, D)
    assert mab.last_weights.shape == (2, 4, 3, 5)
    assert torch.allclose(mab.last_weights.sum(-1), torch.ones(2, 4, 3))


def test_isab_scores_are_n_by_m():
    isab = ISAB(D, 2, num_inducing=3)
    isab(_set(0, 2, 7).float())
    assert isab.mab_in.last_weights.shape == (2, 2, 3, 7)     # inducing points attend to the set
    assert isab.mab_out.last_weights.shape == (2, 2, 7, 3)    # the set attends to the inducing points


def test_masks_hide_padded_elements():
    torch.manual_seed(0)
    x = _set(0, 2, 6)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    junk = x.clone()
    junk[1, 4:] = 1e3
    for block in (SAB(D, 2).double(), ISAB(D, 2, 3).double()):
        assert torch.allclose(block(junk, mask)[:, :4], block(x, mask)[:, :4], atol=1e-10)
    pma = PMA(D, 2).double()
    assert torch.allclose(pma(junk, mask), pma(x, mask), atol=1e-10)
    assert torch.allclose(pma(x, mask)[1], pma(x[1:, :4])[0], atol=1e-10)     # padding == a shorter set
    for model in (SetTransformerModel().double(), PooledSetModel("mean").double(), PooledSetModel("max").double()):
        xs = 100 * torch.rand(2, 6, 1, dtype=torch.float64)
        short = model(xs[1:, :4])
        xs[1, 4:] = -50.0
        assert torch.allclose(model(xs, mask)[1], short[0], atol=1e-9)


@pytest.mark.parametrize("call, match", [
    (lambda: SAB(D, 2)(torch.randn(2, 3, D + 1)), r"X must be a batch of sets \(batch, n, dim=8\)"),
    (lambda: MAB(D, 2)(torch.randn(2, 3, D), torch.randn(2, 5)), "Y must be a batch of sets"),
    (lambda: SAB(D, 2)(torch.randn(2, 3, D), torch.ones(2, 4, dtype=torch.bool)), r"boolean \(batch, n\)"),
    (lambda: SAB(D, 2)(torch.randn(2, 3, D), torch.ones(2, 3)), "mask must be a boolean"),
    (lambda: PMA(D, 2, num_seeds=0), "num_seeds"),
    (lambda: ISAB(D, 2, num_inducing=0), "num_inducing"),
    (lambda: PooledSetModel("median"), "pool must be"),
    (lambda: SetTransformerModel()(torch.randn(2, 3)), r"x must be a batch of sets \(batch, n, dim=1\)"),
    (lambda: MAB(D, 3), "not divisible"),
])
def test_bad_inputs_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_max_regression_data():
    x, y = max_regression_batch(np.random.default_rng(0), 5, 4)
    assert x.shape == (5, 4, 1) and y.shape == (5,)
    assert torch.equal(y, x[..., 0].max(1).values) and x.min() >= 0 and x.max() < 100
    test = max_regression_test_set(per_size=3, max_size=4)
    assert [t[0].shape[1] for t in test] == [1, 2, 3, 4]
    assert torch.equal(test[2][0], max_regression_test_set(per_size=3, max_size=4)[2][0])
    with pytest.raises(ValueError, match="set size n"):
        max_regression_batch(np.random.default_rng(0), 5, 0)


def test_training_runs_and_checks_the_output_shape():
    torch.manual_seed(0)
    model = PooledSetModel("max", dim=8)
    losses = train_max_regression(model, np.random.default_rng(0), steps=30, batch_size=16, scale=100.0)
    assert len(losses) == 30 and all(np.isfinite(losses))
    assert max_regression_mae(model, max_regression_test_set(per_size=4), scale=100.0) >= 0

    class Wrong(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

        def forward(self, x):
            return x.amax(1) + self.w          # (B, 1) instead of (B,): would broadcast to (B, B)

    with pytest.raises(ValueError, match="one number per set"):
        train_max_regression(Wrong(), np.random.default_rng(0), steps=1)


def test_trained_set_model_is_the_chapters_run_and_names_bad_models():
    from attention_course import seed_everything
    from attention_course.experiments.sets import trained_set_model
    seed_everything(0)
    by_hand = SetTransformerModel()
    train_max_regression(by_hand, np.random.default_rng(0), steps=4, batch_size=8, scale=100.0)
    model = trained_set_model("set_transformer", seed=0, steps=4, batch_size=8, scale=100.0)
    assert all(torch.equal(p, q) for p, q in zip(by_hand.state_dict().values(), model.state_dict().values()))
    assert isinstance(trained_set_model("max", steps=2, batch_size=4), PooledSetModel)
    with pytest.raises(ValueError, match="name must be one of"):
        trained_set_model("median")
