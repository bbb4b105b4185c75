"""Wiegreffe & Pinter's model-consistent adversary: its loss, the KL divergence and the trainer (Chapter 7)."""

import math

import numpy as np
import pytest
import torch
from attention_course.analysis.adversarial import (
    adversarial_attention,
    consistent_adversary_loss,
    js_divergence,
    kl_divergence,
)
from attention_course.experiments.reviews import (
    consistency,
    predict_proba,
    train_classifier,
    train_consistent_adversary,
)
from attention_course.models.classifier import AttentionClassifier
from attention_course.tasks.reviews import VOCAB, planted_reviews


def test_kl_divergence_by_hand():
    p = torch.tensor([0.5, 0.5, 0.0])
    q = torch.tensor([0.25, 0.25, 0.5])
    assert kl_divergence(p, q).item() == pytest.approx(math.log(2))          # 2 * 0.5 * ln(0.5 / 0.25)
    assert kl_divergence(q, q).item() == pytest.approx(0.0, abs=1e-7)
    # mass where q is 0 costs -log(floor) per unit, finite
    one_hot, other = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert kl_divergence(one_hot, other).item() == pytest.approx(-math.log(1e-10), rel=1e-5)
    assert torch.isfinite(kl_divergence(one_hot, other))


def test_kl_divergence_rejects_bad_input():
    with pytest.raises(ValueError, match="differ in shape"):
        kl_divergence(torch.ones(3) / 3, torch.ones(4) / 4)
    with pytest.raises(ValueError, match="non-negative"):
        kl_divergence(torch.tensor([1.5, -0.5]), torch.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="floor must be positive"):
        kl_divergence(torch.ones(2) / 2, torch.ones(2) / 2, floor=0.0)


def test_loss_is_tvd_minus_lambda_divergence():
    gen = torch.Generator().manual_seed(0)
    adv_p, base_p = torch.rand(6, generator=gen), torch.rand(6, generator=gen)
    adv_w = torch.softmax(torch.randn(6, 5, generator=gen), -1)
    base_w = torch.softmax(torch.randn(6, 5, generator=gen), -1)
    tvd = (adv_p - base_p).abs().mean()
    assert consistent_adversary_loss(adv_p, base_p, adv_w, base_w, 0.0).item() == pytest.approx(tvd.item())
    for divergence, fn in (("jsd", js_divergence), ("kl", kl_divergence)):
        loss = consistent_adversary_loss(adv_p, base_p, adv_w, base_w, 0.5, divergence)
        assert loss.item() == pytest.approx((tvd - 0.5 * fn(adv_w, base_w).mean()).item(), rel=1e-6)
    # identical models: nothing to pay, nothing to gain
    assert consistent_adversary_loss(base_p, base_p, base_w, base_w, 2.0, "jsd").item() == pytest.approx(0.0, abs=1e-6)


def test_loss_rejects_bad_input():
    p, w = torch.full((3,), 0.5), torch.full((3, 4), 0.25)
    with pytest.raises(ValueError, match="divergence must be one of"):
        consistent_adversary_loss(p, p, w, w, 1.0, "tvd")
    with pytest.raises(ValueError, match="lam must be a number >= 0"):
        consistent_adversary_loss(p, p, w, w, -1.0)
    with pytest.raises(ValueError, match="one \\(N,\\) shape"):
        consistent_adversary_loss(p, torch.full((4,), 0.5), w, w, 1.0)
    with pytest.raises(ValueError, match="one \\(N, T\\) shape"):
        consistent_adversary_loss(p, p, w, torch.full((3, 5), 0.2), 1.0)


@pytest.fixture(scope="module")
def tiny():
    """A small base BiLSTM trained on planted reviews, and its predictions and attention."""
    # short reviews with a single sentiment word (the deciding one): an easy task, quick to learn
    train = planted_reviews(np.random.default_rng(1), 400, length=(10, 16), n_sentiment=(1, 1))
    test = planted_reviews(np.random.default_rng(2), 100, length=(10, 16), n_sentiment=(1, 1))
    torch.manual_seed(0)
    base = AttentionClassifier(len(VOCAB), 16, 16, "bilstm")
    train_classifier(base, train, steps=150, batch_size=32, lr=2e-2)
    return train, test, base, predict_proba(base, train), predict_proba(base, test)


def _adversary(tiny, lam):
    """Train an adversary with weight ``lam``; (losses, mean JSD, mean TVD) on the reviews it was trained on."""
    train, _, _, base_train, _ = tiny
    torch.manual_seed(1)
    adversary = AttentionClassifier(len(VOCAB), 16, 16, "bilstm")
    history = train_consistent_adversary(adversary, train, *base_train, lam, steps=150, batch_size=32, lr=2e-2,
                                         seed=1, divergence="jsd")
    jsd, tvd = consistency(adversary, train, *base_train)
    return history, jsd.mean().item(), tvd.mean().item()


def test_consistency_of_a_model_with_itself_is_zero(tiny):
    _, test, base, _, base_test = tiny
    jsd, tvd = consistency(base, test, *base_test)
    assert jsd.abs().max().item() < 1e-6 and tvd.abs().max().item() < 1e-6


def test_lambda_zero_reproduces_the_base_predictions(tiny):
    train, _, _, base_train, _ = tiny
    torch.manual_seed(1)
    untrained = AttentionClassifier(len(VOCAB), 16, 16, "bilstm")
    _, tvd_untrained = consistency(untrained, train, *base_train)
    history, _, tvd = _adversary(tiny, 0.0)
    assert history[-1] < history[0]
    assert tvd < 0.03 and tvd_untrained.mean().item() > 0.2


def test_larger_lambda_raises_the_attention_distance(tiny):
    _, jsd_0, _ = _adversary(tiny, 0.0)
    _, jsd_1, tvd_1 = _adversary(tiny, 1.0)
    assert jsd_1 > jsd_0 + 0.05
    assert jsd_1 <= math.log(2) + 1e-6
    assert tvd_1 < 0.05                      # still close to the base predictions


def test_trainer_rejects_mismatched_targets(tiny):
    train, _, _, (probs, weights), _ = tiny
    model = AttentionClassifier(len(VOCAB), 8, 8, "bilstm")
    with pytest.raises(ValueError, match="must match the data's labels"):
        train_consistent_adversary(model, train, probs[:10], weights, 1.0, steps=1)
    with pytest.raises(ValueError, match="must match the data's labels"):
        train_consistent_adversary(model, train, probs, weights[:, :3], 1.0, steps=1)


def test_exact_adversary_does_not_depend_on_the_chunk():
    gen = torch.Generator().manual_seed(3)
    s = torch.randn(70, 9, generator=gen)
    a = torch.softmax(torch.randn(70, 9, generator=gen), -1)
    lengths = torch.randint(2, 10, (70,), generator=gen)
    a = a * (torch.arange(9)[None] < lengths[:, None])
    a = a / a.sum(1, keepdim=True)
    whole = adversarial_attention(s, 0.3, a, lengths, chunk=256)
    for chunk in (1, 7, 32):
        parts = adversarial_attention(s, 0.3, a, lengths, chunk=chunk)
        assert torch.equal(parts[0], whole[0]) and torch.equal(parts[1], whole[1])


def test_trained_adversary_passes_its_batch_and_learning_rate_on():
    from attention_course.experiments.reviews import trained_consistent_adversary
    data = planted_reviews(np.random.default_rng(0), 40)
    base_p, base_w = torch.full((40,), 0.5), data.tokens.ne(0).float() / data.lengths[:, None]
    job = dict(data=data, vocab_size=len(VOCAB), base_probs=base_p, base_weights=base_w, lam=1.0, seed=3, steps=2,
               batch_size=8)
    torch.manual_seed(3)
    fresh = AttentionClassifier(len(VOCAB), embed_dim=32, hidden_dim=32, encoder="bilstm")
    still = trained_consistent_adversary(**job, lr=0.0)                          # no step moves a weight
    moved = trained_consistent_adversary(**job, lr=0.05)
    assert all(torch.equal(p, q) for p, q in zip(fresh.parameters(), still.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(fresh.parameters(), moved.parameters()))
    with pytest.raises(ValueError, match="batch_size=41 exceeds the 40 examples"):
        trained_consistent_adversary(**dict(job, batch_size=41))
    with pytest.raises(ValueError, match="batch_size"):
        train_classifier(fresh, data, steps=1, batch_size=0)


def test_curve_records_the_trained_adversary_as_it_trains(tiny):
    from attention_course.experiments.reviews import consistent_adversary_curve, trained_consistent_adversary
    train, test, _, base_train, base_test = tiny
    job = dict(data=train, vocab_size=len(VOCAB), base_probs=base_train[0], base_weights=base_train[1], lam=1.0,
               seed=1, steps=60, divergence="jsd", embed_dim=16, hidden_dim=16, batch_size=32, lr=2e-2)
    curve = consistent_adversary_curve(test=test, test_probs=base_test[0], test_weights=base_test[1], every=20, **job)
    assert curve["steps"] == [0, 20, 40, 60]
    # the last point is the adversary that trained_consistent_adversary returns, measured on the test reviews
    same = trained_consistent_adversary(**job)
    assert all(torch.equal(p, q) for p, q in zip(same.parameters(), curve["model"].parameters()))
    jsd, tvd = consistency(same, test, *base_test)
    assert curve["jsd"][-1] == pytest.approx(jsd.mean().item()) and curve["tvd"][-1] == pytest.approx(tvd.mean().item())
    assert curve["jsd"][-1] > curve["jsd"][0] + 0.05          # lambda = 1 pushes the attention away from the base's
    assert len(curve["accuracy"]) == 4 and all(0 <= a <= 1 for a in curve["accuracy"])


def test_curve_rejects_bad_input(tiny):
    from attention_course.experiments.reviews import consistent_adversary_curve
    train, test, _, base_train, base_test = tiny
    job = dict(data=train, test=test, vocab_size=len(VOCAB), base_probs=base_train[0], base_weights=base_train[1],
               test_probs=base_test[0], test_weights=base_test[1], lam=0.0, steps=10, every=5, embed_dim=8,
               hidden_dim=8)
    with pytest.raises(ValueError, match="every must be a whole number of steps"):
        consistent_adversary_curve(**dict(job, every=11))
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match=r"every \(the steps between two measurements\) must be a positive int"):
            consistent_adversary_curve(**dict(job, every=bad))
    with pytest.raises(ValueError, match="must match the test data's labels"):
        consistent_adversary_curve(**dict(job, test_probs=base_test[0][:5]))


def test_curve_runs_one_forward_pass_per_checkpoint(tiny, monkeypatch):
    """Each measurement is one predict_proba on the test reviews, whose output and attention give all three
    numbers (the JSD, the TVD and the accuracy), equal to consistency's."""
    from attention_course.experiments import reviews
    train, test, _, base_train, base_test = tiny
    calls = []
    real = reviews.predict_proba
    monkeypatch.setattr(reviews, "predict_proba", lambda *a, **k: calls.append(1) or real(*a, **k))
    curve = reviews.consistent_adversary_curve(train, test, len(VOCAB), *base_train, *base_test, lam=0.5, seed=2,
                                               steps=30, every=10, embed_dim=8, hidden_dim=8, batch_size=16)
    assert len(calls) == len(curve["steps"]) == 4
    monkeypatch.undo()
    jsd, tvd = consistency(curve["model"], test, *base_test)
    probs, _ = real(curve["model"], test)
    assert curve["jsd"][-1] == jsd.mean().item() and curve["tvd"][-1] == tvd.mean().item()
    assert curve["accuracy"][-1] == reviews.accuracy(probs, test.labels)
