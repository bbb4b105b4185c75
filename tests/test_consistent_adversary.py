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


def test_kl_divergence_has_a_finite_gradient_where_attention_underflows():
    """A peaked softmax underflows to exact zeros; d/dp of p ln p is -inf there, and the softmax turns that
    into NaN. The floor inside the logarithm (Wiegreffe & Pinter's 1e-10) keeps the gradient finite."""
    scores = torch.tensor([[200.0, 0.0, -10.0], [0.0, 1.0, 2.0]], requires_grad=True)
    p = torch.softmax(scores, -1)
    assert (p == 0).any()
    q = torch.tensor([[0.1, 0.8, 0.1], [0.5, 0.25, 0.25]])
    kl_divergence(p, q).sum().backward()
    assert torch.isfinite(scores.grad).all()


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


def test_kl_is_the_default_attention_term_everywhere():
    """Wiegreffe & Pinter's loss, TVD - lambda KL, unless a caller asks for the JSD variant by name."""
    import inspect

    from attention_course.experiments import reviews
    for fn in (consistent_adversary_loss, reviews.train_consistent_adversary, reviews.trained_consistent_adversary,
               reviews.consistent_adversary_curve):
        assert inspect.signature(fn).parameters["divergence"].default == "kl", fn.__name__


def test_loss_rejects_bad_input():
    p, w = torch.full((3,), 0.5), torch.full((3, 4), 0.25)
    with pytest.raises(ValueError, match="divergence must be one of \\['jsd', 'kl'\\] \\(the attention term"):
        consistent_adversary_loss(p, p, w, w, 1.0, "tvd")
    with pytest.raises(ValueError, match="divergence must be one of"):
        consistent_adversary_loss(p, p, w, w, 1.0, "KL")
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
    with pytest.raises(ValueError, match="divergence must be one of \\['jsd', 'kl'\\]"):
        consistent_adversary_curve(**dict(job, divergence="js"))


def test_trainer_rejects_an_unknown_divergence_before_training(tiny):
    train, _, _, (probs, weights), _ = tiny
    model = AttentionClassifier(len(VOCAB), 8, 8, "bilstm")
    before = [p.clone() for p in model.parameters()]
    with pytest.raises(ValueError, match="divergence must be one of \\['jsd', 'kl'\\] .*, got 'cross-entropy'"):
        train_consistent_adversary(model, train, probs, weights, 1.0, steps=5, divergence="cross-entropy")
    assert all(torch.equal(p, q) for p, q in zip(before, model.parameters()))


def test_kl_adversary_moves_its_attention_and_keeps_the_outputs(tiny):
    """The published loss (KL, the default): at a small lambda the adversary copies the base model's outputs
    as closely as the control and attends farther from the base model than the control; at a large lambda
    the unbounded KL term outweighs the outputs' TVD (at most 1), and the adversary stops copying them."""
    train, _, _, base_train, _ = tiny
    runs = {}
    for lam in (0.0, 0.001, 1.0):
        torch.manual_seed(1)
        adversary = AttentionClassifier(len(VOCAB), 16, 16, "bilstm")
        train_consistent_adversary(adversary, train, *base_train, lam, steps=150, batch_size=32, lr=2e-2, seed=1)
        jsd, tvd = consistency(adversary, train, *base_train)
        runs[lam] = jsd.mean().item(), tvd.mean().item()
    assert runs[0.001][0] > runs[0.0][0] and runs[1.0][0] > math.log(2) - 0.01     # attention moved away
    assert runs[0.001][1] < 0.02 and runs[0.0][1] < 0.02                           # outputs copied
    assert runs[1.0][1] > 0.2                                                       # outputs given up


# --- when has a training curve flattened? -----------------------------------------------------------------

def test_relative_fall_is_the_change_of_the_median_relative_to_the_value():
    from attention_course.experiments.reviews import relative_fall
    curve = [0.5, 0.4, 0.3, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1]
    assert relative_fall(curve, window=3) == pytest.approx((0.2 - 0.1) / 0.1)
    assert relative_fall([2 * v for v in curve], window=3) == pytest.approx(1.0)      # scale-free
    assert relative_fall([0.1, 0.1, 0.2, 0.2], window=2) == pytest.approx(-0.5)       # it rose


def test_has_flattened_is_relative_and_two_sided():
    from attention_course.experiments.reviews import has_flattened
    rng = np.random.default_rng(0)
    settled = 0.006 * (1 + 0.05 * rng.standard_normal(20))            # a small value, noisy but settled
    assert has_flattened(settled)
    assert has_flattened(100 * settled)
    falling = 0.04 * np.exp(-np.arange(20) / 6)                        # all below 0.04, still halving
    assert not has_flattened(falling)
    jumped = np.r_[np.full(14, 0.03), np.full(6, 0.155)]              # jumped up over its last checkpoints
    assert not has_flattened(jumped)
    spike = np.r_[np.full(19, 0.02), 0.3]                             # one spike: the medians ignore it
    assert has_flattened(spike)


def test_has_flattened_rejects_bad_input():
    from attention_course.experiments.reviews import has_flattened
    with pytest.raises(ValueError, match="at least 2 \\* window = 10 checkpoints"):
        has_flattened([0.1] * 9)
    with pytest.raises(ValueError, match="NaN or inf"):
        has_flattened([0.1] * 9 + [float("nan")])
    with pytest.raises(ValueError, match="needs a positive value"):
        has_flattened([0.1] * 5 + [0.0] * 5)
    with pytest.raises(ValueError, match="tolerance must be a positive fraction"):
        has_flattened([0.1] * 10, tolerance=0)
    with pytest.raises(ValueError, match="window .* must be a positive int"):
        has_flattened([0.1] * 10, window=0)
