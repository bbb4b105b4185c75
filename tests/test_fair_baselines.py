"""Tests of Chapter 8's fair baselines, the real series, ablations, and the learned attention on digits."""

import numpy as np
import pytest
import torch
from attention_course.experiments.images import digit_accuracy, train_digit_classifier
from attention_course.experiments.series import (
    fit_least_squares,
    mean_absolute_error,
    new_forecaster,
    train_forecaster,
    train_on_windows,
    trained_forecaster,
    trained_on_windows,
)
from attention_course.models.ablation import mix_values, replaced_weights, shuffled_weights, uniform_weights
from attention_course.models.forecast import HorizonAttentionForecaster, LinearForecaster, RecurrentForecaster
from attention_course.models.image_attention import DigitClassifier, RelativePositionAttention, local_fraction
from attention_course.models.set_transformer import MAB, SetTransformerModel
from attention_course.tasks.handwritten import load_handwritten_digits
from attention_course.tasks.series import (
    event_effect,
    harmonic_regression,
    load_electricity_demand,
    make_series,
    seasonal_naive,
    seasonal_naive_with_events,
    windows,
)
from attention_course.train.parallel import run_parallel


def test_event_baselines_are_exact_on_noise_free_series():
    b = make_series(np.random.default_rng(0), 64, period=6, history=24, horizon=6, noise=0.0, event_rate=0.2)
    effect = event_effect(b.history, b.history_events, 6, default=float("nan"))
    seen = ~torch.isnan(effect)
    assert seen.sum() > 40
    assert torch.allclose(effect[seen], b.uplift[seen], atol=1e-4)      # the uplift, recovered from history alone
    exact = seasonal_naive_with_events(b.history, b.history_events, b.future_events, 6, b.uplift)
    assert torch.allclose(exact, b.target, atol=1e-4)
    plain = seasonal_naive(b.history, 6, 6)
    assert torch.equal(seasonal_naive_with_events(b.history, b.history_events, b.future_events, 6, 0.0), plain)


def test_harmonic_regression_recovers_its_own_form():
    b = make_series(np.random.default_rng(1), 32, period=12, history=48, horizon=12, noise=0.0, event_rate=0.1)
    forecast = harmonic_regression(b.history, b.history_events, b.future_events, 12, harmonics=2)
    has_event = b.history_events.sum(1) > 0
    assert torch.allclose(forecast[has_event], b.target[has_event], atol=1e-3)
    with pytest.raises(ValueError, match="period"):
        harmonic_regression(b.history, b.history_events, b.future_events, 48)
    with pytest.raises(ValueError, match="history_events"):
        harmonic_regression(b.history, b.history_events[:, :10], b.future_events, 12)


def test_linear_forecaster_least_squares_is_exact_on_a_linear_rule():
    b = make_series(np.random.default_rng(2), 2000, period=6, history=12, horizon=6, noise=0.0, event_rate=0.0)
    model = fit_least_squares(LinearForecaster(history=12, horizon=6), b, ridge=1e-9)
    with torch.no_grad():
        forecast, _ = model(b.history, b.history_events, b.future_events)
    assert mean_absolute_error(forecast, b.target) < 1e-2          # noise-free periodic: y_{t+h} = y_{t+h-6}
    with pytest.raises(ValueError, match="ridge"):
        fit_least_squares(model, b, ridge=-1.0)


def test_recurrent_forecaster_and_window_training():
    b = make_series(np.random.default_rng(3), 256, period=6, history=12, horizon=6)
    torch.manual_seed(0)
    gru = RecurrentForecaster(history=12, horizon=6, d_model=8, hidden=8)
    forecast, none = gru(b.history, b.history_events, b.future_events)
    assert forecast.shape == (256, 6) and none is None
    losses = train_on_windows(gru, b, steps=60, batch_size=32, lr=1e-2, seed=0)
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    with pytest.raises(ValueError, match="batch_size"):
        train_on_windows(gru, b, steps=1, batch_size=1000)
    with pytest.raises(ValueError, match="history must have shape"):
        gru(b.history[:, :5], b.history_events, b.future_events)


def test_electricity_demand_loader_and_windows():
    d = load_electricity_demand()
    assert d.values.shape == (2016,) and d.weekend.shape == (2016,) and d.period == 24
    assert d.weekend[:5 * 24].sum() == 0 and d.weekend[5 * 24:7 * 24].all()     # Monday..Friday, then a weekend
    assert 15 < d.values.min() < d.values.max() < 45                           # gigawatts
    weekday = d.values[d.weekend == 0].mean()
    assert d.values[d.weekend == 1].mean() < weekday - 2                       # demand drops at weekends
    w = windows(d.values, d.weekend, 48, 24, [48, 100])
    assert w.history.shape == (2, 48) and w.target.shape == (2, 24) and torch.isnan(w.uplift).all()
    assert w.target[1, 0].item() == pytest.approx(d.values[100], rel=1e-6)
    assert w.history[1, -1].item() == pytest.approx(d.values[99], rel=1e-6)
    with pytest.raises(ValueError, match="origins"):
        windows(d.values, d.weekend, 48, 24, [10])


def test_missing_data_packages_give_clear_errors(monkeypatch):
    import importlib.metadata

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(RuntimeError, match="pip install --no-deps pmdarima"):
        load_electricity_demand()
    with pytest.raises(RuntimeError, match="scikit-learn"):
        load_handwritten_digits()


def test_ablation_with_own_weights_changes_nothing_and_restores():
    b = make_series(np.random.default_rng(4), 16, period=6, history=12, horizon=6)
    torch.manual_seed(0)
    model = HorizonAttentionForecaster(history=12, horizon=6, d_model=8, num_heads=2)
    with torch.no_grad():
        own, w = model(b.history, b.history_events, b.future_events)
        with replaced_weights(model, lambda x: x):                     # identity: mix_values reproduces the layer
            same, _ = model(b.history, b.history_events, b.future_events)
        with replaced_weights(model, uniform_weights):
            flat, w_flat = model(b.history, b.history_events, b.future_events)
        after, _ = model(b.history, b.history_events, b.future_events)
    assert torch.allclose(own, same, atol=1e-5) and torch.equal(own, after) and model.weights_transform is None
    assert torch.allclose(w_flat, torch.full_like(w_flat, 1 / 12)) and not torch.allclose(own, flat)
    g = torch.Generator().manual_seed(0)
    shuffled = shuffled_weights(w, g)
    assert torch.allclose(shuffled.sum(-1), torch.ones(()), atol=1e-6)
    assert torch.allclose(shuffled.sort(-1).values, w.sort(-1).values)       # the same weights, other keys
    with pytest.raises(TypeError, match="weights_transform"):
        with replaced_weights(torch.nn.Linear(2, 2), uniform_weights):
            pass
    with pytest.raises(ValueError, match="weights must have shape"):
        mix_values(model.attention, w[:, :1], torch.zeros(16, 12, 8))


def test_set_transformer_pma_ablation():
    torch.manual_seed(0)
    model = SetTransformerModel()
    x = 10 * torch.rand(4, 5, 1)
    with torch.no_grad():
        model.pool.seeds.mul_(100.0)                                   # far from uniform weights
        own = model(x)
        with replaced_weights(model.pool.mab, lambda w: w):
            same = model(x)
        with replaced_weights(model.pool.mab, uniform_weights):
            flat = model(x)
    assert torch.allclose(own, same, atol=1e-6) and not torch.allclose(own, flat)
    mab = MAB(4, 2)
    with replaced_weights(mab, uniform_weights), pytest.raises(ValueError, match="mask=None"):
        mab(torch.rand(1, 3, 4), torch.rand(1, 3, 4), torch.ones(1, 3, dtype=torch.bool))


def test_relative_position_attention_and_local_fraction():
    layer = RelativePositionAttention((4, 4), 1, 3, num_heads=2)
    with torch.no_grad():
        layer.centres.copy_(torch.tensor([[0.0, 1.0], [3.0, 3.0]]))
        layer.raw_alpha.fill_(20.0)                                    # very sharp: one key per query
    w = layer.weights()
    assert w.shape == (2, 16, 16) and torch.allclose(w.sum(-1), torch.ones(2, 16))
    assert w[0, 5].argmax().item() == 6                                # query (1, 1) -> key (1, 2)
    frac = local_fraction(w, (4, 4))
    assert frac[0] > 0.7 and frac[1] < 0.3                             # an offset of (0, 1) is local, (3, 3) is not
    x = torch.rand(2, 16, 1)
    out = layer(x)
    expected = torch.einsum("hqk,bkc,hco->bqo", w, x, layer.W_V) + layer.bias
    assert torch.allclose(out, expected, atol=1e-6)
    uniform = local_fraction(torch.full((1, 64, 64), 1 / 64), (8, 8))
    assert uniform.item() == pytest.approx((9 * 36 + 6 * 24 + 4 * 4) / 64 / 64)   # interior, edge, corner pixels
    with pytest.raises(ValueError, match="x must have shape"):
        layer(torch.rand(2, 15, 1))


def test_digits_loader_and_a_short_training():
    d = load_handwritten_digits()
    assert d.images.shape == (1797, 8, 8) and d.labels.shape == (1797,)
    assert 0 <= d.images.min() and d.images.max() <= 1 and set(d.labels.unique().tolist()) == set(range(10))
    train, test = d.split(297, seed=0)
    assert len(test.labels) == 297 and len(train.labels) == 1500
    torch.manual_seed(0)
    conv = DigitClassifier("conv")
    train_digit_classifier(conv, train, steps=150, batch_size=64, lr=1e-2, seed=0)
    assert digit_accuracy(conv, test) > 0.4                           # chance is 0.1
    with pytest.raises(ValueError, match="mixer"):
        DigitClassifier("pool")
    with pytest.raises(ValueError, match="images must have shape"):
        conv(torch.rand(2, 7, 8))


def test_seed_sweep_runs_are_the_runs_of_a_plain_loop_wherever_they_train():
    b = make_series(np.random.default_rng(4), 128, period=6, history=12, horizon=6)
    options = dict(history=12, horizon=6, d_model=8)
    jobs = [dict(kind="GRU", seed=seed, data=b, steps=5, batch_size=16, hidden=8, **options) for seed in (0, 1)]
    for job, model in zip(jobs, run_parallel(trained_on_windows, jobs, workers=2)):
        by_hand = new_forecaster("GRU", job["seed"], hidden=8, **options)
        train_on_windows(by_hand, b, steps=5, batch_size=16, seed=job["seed"])
        assert all(torch.equal(p, q) for p, q in zip(model.parameters(), by_hand.parameters()))
    model = trained_forecaster("attention", seed=3, steps=3, batch_size=8, period=6, num_heads=2, **options)
    by_hand = new_forecaster("attention", 3, num_heads=2, **options)
    train_forecaster(by_hand, np.random.default_rng(3), steps=3, batch_size=8, period=6)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), by_hand.parameters()))
    with pytest.raises(ValueError, match="kind must be one of"):
        new_forecaster("lstm", 0)


def test_trained_digit_classifier_is_the_chapters_run_and_can_go_to_a_worker():
    from attention_course import seed_everything
    from attention_course.experiments.images import trained_digit_classifier
    train, _ = load_handwritten_digits().split(n_test=497, seed=0)
    seed_everything(1)
    by_hand = DigitClassifier("attention")
    train_digit_classifier(by_hand, train, steps=5, batch_size=16, lr=1e-2, seed=1)
    job = dict(mixer="attention", data=train, seed=1, steps=5, batch_size=16)
    for model in (trained_digit_classifier(**job), run_parallel(trained_digit_classifier, [job], workers=2)[0]):
        assert all(torch.equal(p, q) for p, q in zip(by_hand.state_dict().values(), model.state_dict().values()))
