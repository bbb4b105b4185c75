"""Unit and property tests of the forecasting pieces (tasks.series, models.forecast, experiments.series):
the synthetic series, the seasonal-naive
baseline, and the horizon-query attention forecaster."""

import numpy as np
import pytest
import torch
from attention_course.experiments.series import mean_absolute_error, train_forecaster
from attention_course.layers.multihead import MultiHeadAttention
from attention_course.models.forecast import HorizonAttentionForecaster
from attention_course.tasks.series import make_series, seasonal_naive
from hypothesis import given, settings
from hypothesis import strategies as st


def test_series_shapes_and_determinism():
    b = make_series(np.random.default_rng(0), 5, period=6, history=18, horizon=4)
    assert b.history.shape == (5, 18) and b.history_events.shape == (5, 18)
    assert b.future_events.shape == (5, 4) and b.target.shape == (5, 4) and b.uplift.shape == (5,)
    assert set(torch.cat([b.history_events, b.future_events], 1).unique().tolist()) <= {0.0, 1.0}
    again = make_series(np.random.default_rng(0), 5, period=6, history=18, horizon=4)
    assert torch.equal(b.history, again.history) and torch.equal(b.target, again.target)


def test_noise_free_series_is_periodic_plus_events():
    b = make_series(np.random.default_rng(1), 8, period=5, history=20, horizon=5, noise=0.0, event_rate=0.2)
    y = torch.cat([b.history, b.target], 1).double()
    e = torch.cat([b.history_events, b.future_events], 1).double()
    seasonal_difference = y[:, 5:] - y[:, :-5]
    expected = b.uplift[:, None].double() * (e[:, 5:] - e[:, :-5])
    assert torch.allclose(seasonal_difference, expected, atol=1e-4)


@settings(max_examples=25, deadline=None)
@given(period=st.integers(1, 6), extra=st.integers(0, 6), horizon=st.integers(1, 15), seed=st.integers(0, 1000))
def test_seasonal_naive_is_exact_on_a_periodic_series(period, extra, horizon, seed):
    L = period + extra
    profile = torch.randn(period, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    series = profile[torch.arange(L + horizon) % period][None]
    assert torch.equal(seasonal_naive(series[:, :L], period, horizon), series[:, L:])


def test_seasonal_naive_indices():
    history = torch.arange(10.0)[None]
    assert seasonal_naive(history, 4, 9).tolist() == [[6, 7, 8, 9, 6, 7, 8, 9, 6]]
    with pytest.raises(ValueError, match=r"period must be an int in \[1, L=10\]"):
        seasonal_naive(history, 11, 3)
    with pytest.raises(ValueError, match=r"\(batch, L\)"):
        seasonal_naive(torch.arange(10.0), 4, 3)


def test_forecaster_shapes_and_weights():
    torch.manual_seed(0)
    model = HorizonAttentionForecaster(history=24, horizon=6, d_model=8, num_heads=2)
    assert isinstance(model.attention, MultiHeadAttention)
    b = make_series(np.random.default_rng(0), 3, period=6, history=24, horizon=6)
    forecast, weights = model(b.history, b.history_events, b.future_events)
    assert forecast.shape == (3, 6) and weights.shape == (3, 2, 6, 24)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 2, 6))


@settings(max_examples=10, deadline=None)
@given(shift=st.floats(-50, 50), seed=st.integers(0, 1000))
def test_forecast_moves_with_the_level(shift, seed):
    """The model scales each series by its own history: adding a constant to the history adds it to the forecast."""
    torch.manual_seed(seed)
    model = HorizonAttentionForecaster(history=12, horizon=4, d_model=8).double()
    b = make_series(np.random.default_rng(seed), 2, period=4, history=12, horizon=4)
    h, he, fe = b.history.double(), b.history_events.double(), b.future_events.double()
    f1, _ = model(h, he, fe)
    f2, _ = model(h + shift, he, fe)
    assert torch.allclose(f2, f1 + shift, atol=1e-9)


def test_bad_inputs_raise():
    model = HorizonAttentionForecaster(history=12, horizon=4, d_model=8)
    with pytest.raises(ValueError, match=r"future_events must have shape \(2, 4\)"):
        model(torch.randn(2, 12), torch.zeros(2, 12), torch.zeros(2, 5))
    with pytest.raises(ValueError, match=r"history must have shape \(2, 12\)"):
        model(torch.randn(2, 10), torch.zeros(2, 12), torch.zeros(2, 4))
    with pytest.raises(ValueError, match="must cover at least one period"):
        make_series(np.random.default_rng(0), 2, period=12, history=8)
    with pytest.raises(ValueError, match="event_rate"):
        make_series(np.random.default_rng(0), 2, event_rate=1.5)
    with pytest.raises(ValueError, match="differ in shape"):
        mean_absolute_error(torch.zeros(2, 3), torch.zeros(3, 2))


def test_short_training_lowers_the_loss():
    torch.manual_seed(0)
    model = HorizonAttentionForecaster(history=24, horizon=6, d_model=16)
    losses = train_forecaster(model, np.random.default_rng(0), steps=40, batch_size=16, period=6)
    assert len(losses) == 40 and np.mean(losses[-10:]) < np.mean(losses[:10])
