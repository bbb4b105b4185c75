"""Chapter 7's package code: planted reviews, the attention classifier, importance, adversaries."""

import math

import numpy as np
import pytest
import torch
from attention_course.analysis.adversarial import (
    adversarial_attention,
    adversarial_attention_search,
    js_divergence,
    permutation_output_change,
    total_variation,
)
from attention_course.analysis.importance import (
    gradient_importance,
    kendall_tau,
    leave_one_out_importance,
    precision_at_k,
)
from attention_course.experiments.reviews import accuracy, predict_proba, train_classifier
from attention_course.models.classifier import AttentionClassifier, uniform_weights
from attention_course.tasks.reviews import NEGATIVE, POSITIVE, VOCAB, WORD_ID, decode, encode_review, planted_reviews
from hypothesis import given, settings
from hypothesis import strategies as st


@pytest.fixture(scope="module")
def data():
    return planted_reviews(np.random.default_rng(0), 64)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return AttentionClassifier(len(VOCAB), 8, 8, "bilstm").eval()


# planted reviews -----------------------------------------------------------------------------

def test_the_first_sentiment_word_after_but_decides_the_label(data):
    pos, neg = {WORD_ID[w] for w in POSITIVE}, {WORD_ID[w] for w in NEGATIVE}
    assert data.tokens.shape == data.evidence.shape == data.distractor.shape == (64, 36)
    assert data.tokens.dtype == torch.long and data.labels.dtype == torch.float32
    for n in range(len(data)):
        L = int(data.lengths[n])
        assert 20 <= L <= 36
        ids = data.tokens[n, :L].tolist()
        assert ids.count(WORD_ID["but"]) == 1 and 0 not in ids
        marker = ids.index(WORD_ID["but"])
        sentiment = [t for t, i in enumerate(ids) if i in pos or i in neg]
        assert 3 <= len(sentiment) <= 5
        first_after = min(t for t in sentiment if t > marker)
        assert data.evidence[n].nonzero().flatten().tolist() == [first_after]          # exactly one token
        assert data.labels[n] == (ids[first_after] in pos)
        assert data.distractor[n].nonzero().flatten().tolist() == [t for t in sentiment if t != first_after]
        opposite = neg if data.labels[n] == 1 else pos
        assert bool(data.contrast[n]) == any(ids[t] in opposite for t in sentiment if t != first_after)
        assert (data.tokens[n, L:] == 0).all() and not (data.evidence[n, L:] | data.distractor[n, L:]).any()


def test_distractors_say_nothing_about_the_label():
    # 20,000 reviews hold about 60,000 distractors. If their polarity is independent of the label, each
    # has the label's polarity with probability 1/2, independently (every polarity is a fair coin):
    # the fraction's standard deviation is at most sqrt(1/4 / 20,000) = 0.0035 within either label,
    # so 0.02 is more than 5 standard deviations; a dependence of 2 points or more would show.
    big = planted_reviews(np.random.default_rng(5), 20_000, length=(10, 12))
    pos_ids = torch.tensor([WORD_ID[w] for w in POSITIVE])
    positive = torch.isin(big.tokens, pos_ids)
    same = (positive == (big.labels[:, None] == 1)) & big.distractor
    for label in (0, 1):
        rows = big.labels == label
        share = same[rows].sum().item() / big.distractor[rows].sum().item()
        assert abs(share - 0.5) < 0.02, (label, share)
    assert abs(big.labels.mean().item() - 0.5) < 0.02
    # every count of distractors of the opposite polarity occurs, so most reviews are contrast reviews
    assert 0.75 < big.contrast.float().mean().item() < 0.9


def test_planted_reviews_are_reproducible_and_validated():
    a, b = planted_reviews(np.random.default_rng(3), 10), planted_reviews(np.random.default_rng(3), 10)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    short = planted_reviews(np.random.default_rng(3), 50, length=(4, 6), n_sentiment=(1, 3))
    assert short.tokens.shape == (50, 6) and (short.evidence.sum(1) == 1).all()
    assert (short.distractor.sum(1) <= 2).all() and (short.distractor.sum(1) == 0).any()
    with pytest.raises(ValueError, match="n must be"):
        planted_reviews(np.random.default_rng(0), 0)
    with pytest.raises(ValueError, match="length must have low <= high"):
        planted_reviews(np.random.default_rng(0), 5, length=(40, 30))
    with pytest.raises(ValueError, match="length must be an int >= 6"):
        planted_reviews(np.random.default_rng(0), 5, length=(5, 30))          # 5 sentiment words and "but"
    with pytest.raises(ValueError, match="n_sentiment must be a pair"):
        planted_reviews(np.random.default_rng(0), 5, n_sentiment=3)
    with pytest.raises(ValueError, match="n_sentiment must be a positive int"):
        planted_reviews(np.random.default_rng(0), 5, n_sentiment=(0, 2))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        planted_reviews(0, 5)


def test_encode_review_round_trip():
    tokens, lengths = encode_review("the plot was a waste", max_len=8)
    assert tokens.shape == (1, 8) and lengths.tolist() == [5]
    assert decode(tokens[0]) == ["the", "plot", "was", "a", "waste"]
    with pytest.raises(ValueError, match="not in the task's vocabulary"):
        encode_review("the plot was a catastrophe")


# the classifier ------------------------------------------------------------------------------

def test_attention_is_a_distribution_over_real_tokens(model, data):
    logits, weights = model(data.tokens, data.lengths)
    assert logits.shape == (len(data),) and weights.shape == data.tokens.shape
    assert torch.allclose(weights.sum(1), torch.ones(len(data)))
    real = torch.arange(data.tokens.shape[1])[None] < data.lengths[:, None]
    assert (weights[~real] == 0).all()


def test_logit_is_attention_weighted_token_logits(model, data):
    logits, weights = model(data.tokens, data.lengths)
    hs = model.states(model.embed(data.tokens), data.lengths)
    again = (weights * model.token_logits(hs)).sum(1) + model.out.bias
    assert torch.allclose(logits, again, atol=1e-5)


def test_imposed_and_uniform_weights(model, data):
    u = uniform_weights(data.lengths, data.tokens.shape[1])
    assert torch.allclose(u.sum(1), torch.ones(len(data)))
    logits, used = model(data.tokens, data.lengths, u)
    assert torch.equal(used, u)
    uniform_model = AttentionClassifier(len(VOCAB), 8, 8, "average", "uniform")
    assert torch.equal(uniform_model(data.tokens, data.lengths)[1], u)


def test_bad_inputs_are_named(model, data):
    with pytest.raises(ValueError, match="int64"):
        model(data.tokens.float(), data.lengths)
    with pytest.raises(ValueError, match="lengths must have shape"):
        model(data.tokens, data.lengths[:3])
    with pytest.raises(ValueError, match="weights must have shape"):
        model(data.tokens, data.lengths, torch.ones(2, 2))
    with pytest.raises(ValueError, match="encoder must be one of"):
        AttentionClassifier(10, encoder="cnn")


def test_training_learns_the_reviews_without_contrast():
    # a context-free model can count sentiment words: right wherever every sentiment word agrees
    train = planted_reviews(np.random.default_rng(1), 500)
    torch.manual_seed(0)
    m = AttentionClassifier(len(VOCAB), 16, 16, "average")
    history = train_classifier(m, train, steps=200, batch_size=32, lr=2e-2)
    assert np.mean(history[-10:]) < np.mean(history[:10]) - 0.1
    test = planted_reviews(np.random.default_rng(2), 400)
    probs, _ = predict_proba(m, test)
    agree = ~test.contrast
    assert accuracy(probs[agree], test.labels[agree]) > 0.9


# importance ----------------------------------------------------------------------------------

def test_leave_one_out_matches_a_loop(model, data):
    sub = data.subset(slice(0, 5))
    got = leave_one_out_importance(model, sub.tokens, sub.lengths)
    for n in range(5):
        L = int(sub.lengths[n])
        ids = sub.tokens[n, :L]
        with torch.no_grad():
            full = torch.sigmoid(model(ids[None], torch.tensor([L]))[0])
        for t in range(L):
            short = torch.cat([ids[:t], ids[t + 1:]])[None]
            with torch.no_grad():
                p = torch.sigmoid(model(short, torch.tensor([L - 1]))[0])
            assert math.isclose(float(got[n, t]), float((p - full).abs()), abs_tol=1e-6)
        assert (got[n, L:] == 0).all()


def test_gradient_importance_matches_autograd_per_token(model, data):
    sub = data.subset(slice(0, 3))
    got = gradient_importance(model, sub.tokens, sub.lengths)
    assert got.shape == sub.tokens.shape and (got >= 0).all()
    e = model.embed(sub.tokens[:1]).detach().requires_grad_(True)
    hs = model.states(e, sub.lengths[:1])
    p = torch.sigmoid(model.head(hs, model.attend(hs, sub.lengths[:1]).detach()))
    p.sum().backward()
    assert torch.allclose(got[0], (e.grad * e).sum(-1).abs()[0] * (torch.arange(e.shape[1]) < sub.lengths[0]))


def test_kendall_tau_and_precision():
    a = torch.tensor([[0.1, 0.4, 0.3, 0.0], [0.5, 0.5, 0.0, 0.0]])
    lengths = torch.tensor([3, 2])
    taus = kendall_tau(a, a * 2, lengths)
    assert taus[0] == pytest.approx(1.0) and np.isnan(taus[1])        # constant row: no ranking
    assert kendall_tau(a, -a, lengths)[0] == pytest.approx(-1.0)
    evidence = torch.tensor([[False, True, False, False], [True, False, False, False]])
    assert precision_at_k(a, evidence, lengths).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="boolean"):
        precision_at_k(a, evidence.float(), lengths)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 8), st.integers(1, 4), st.integers(0, 10_000))
def test_precision_at_k_matches_a_loop(T, N, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(N, T, generator=g)
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    evidence = (torch.rand(N, T, generator=g) < 0.4) & (torch.arange(T)[None] < lengths[:, None])
    got = precision_at_k(scores, evidence, lengths)
    for n in range(N):
        L, k = int(lengths[n]), int(evidence[n].sum())
        if k == 0:
            assert math.isnan(got[n])
            continue
        top = torch.sort(scores[n, :L], descending=True, stable=True).indices[:k]
        assert float(got[n]) == pytest.approx(float(evidence[n, top].sum()) / k)


# distances and adversaries --------------------------------------------------------------------

@settings(max_examples=50, deadline=None)
@given(st.integers(1, 10), st.integers(0, 10_000))
def test_jsd_is_symmetric_and_bounded(T, seed):
    g = torch.Generator().manual_seed(seed)
    p = torch.softmax(4 * torch.randn(3, T, generator=g, dtype=torch.float64), -1)
    q = torch.softmax(4 * torch.randn(3, T, generator=g, dtype=torch.float64), -1)
    d = js_divergence(p, q)
    assert torch.allclose(d, js_divergence(q, p))
    assert (d >= -1e-12).all() and (d <= math.log(2) + 1e-12).all()
    assert torch.allclose(js_divergence(p, p), torch.zeros(3, dtype=torch.float64), atol=1e-12)


def test_jsd_extremes_and_errors():
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert float(js_divergence(p, q)) == pytest.approx(math.log(2))
    assert float(total_variation(torch.tensor(0.7), torch.tensor(0.2))) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="differ in shape"):
        js_divergence(p, torch.ones(3) / 3)
    with pytest.raises(ValueError, match="non-negative"):
        js_divergence(torch.tensor([1.5, -0.5]), q)


def test_permutation_of_uniform_attention_changes_nothing():
    s = torch.randn(4, 6)
    lengths = torch.tensor([6, 3, 1, 5])
    change = permutation_output_change(s, 0.3, uniform_weights(lengths, 6), lengths, 20,
                                       torch.Generator().manual_seed(0))
    assert torch.allclose(change, torch.zeros(4), atol=1e-6)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 9), st.integers(0, 10_000), st.floats(0.005, 0.2))
def test_exact_adversary_is_feasible_and_beats_search(T, seed, epsilon):
    g = torch.Generator().manual_seed(seed)
    N = 5
    s = 3 * torch.randn(N, T, generator=g)
    lengths = torch.randint(1, T + 1, (N,), generator=g)
    mask = torch.arange(T)[None] < lengths[:, None]
    a = torch.softmax(torch.randn(N, T, generator=g).masked_fill(~mask, -1e9), -1)
    bias = 0.2
    adv, jsd = adversarial_attention(s, bias, a, lengths, epsilon)
    assert torch.allclose(adv.sum(1), torch.ones(N), atol=1e-6) and (adv[~mask] == 0).all()
    base = torch.sigmoid((a * s).sum(1) + bias)
    assert ((torch.sigmoid((adv * s).sum(1) + bias) - base).abs() <= epsilon + 1e-6).all()
    assert torch.allclose(jsd, js_divergence(adv, a), atol=1e-6)
    _, found = adversarial_attention_search(s, bias, a, lengths, epsilon, steps=30)
    assert (found <= jsd + 1e-4).all()       # the exact search stays 1e-6 inside the bound


def test_exact_adversary_against_brute_force_on_a_grid():
    s = torch.tensor([[2.0, -1.0, 0.5]], dtype=torch.float64)
    a = torch.tensor([[0.2, 0.3, 0.5]], dtype=torch.float64)
    lengths, eps = torch.tensor([3]), 0.05
    _, jsd = adversarial_attention(s, 0.0, a, lengths, eps)
    grid = torch.linspace(0, 1, 301, dtype=torch.float64)
    x, y = torch.meshgrid(grid, grid, indexing="ij")
    keep = x + y <= 1
    cand = torch.stack([x[keep], y[keep], 1 - x[keep] - y[keep]], -1).clamp(min=0)
    base = torch.sigmoid((a * s).sum())
    ok = (torch.sigmoid(cand @ s[0]) - base).abs() <= eps
    best = js_divergence(cand[ok], a.expand(int(ok.sum()), 3)).max()
    assert float(jsd) >= float(best) - 1e-9 and float(jsd) - float(best) < 5e-3


@pytest.mark.parametrize("T", [17, 20, 40])
def test_precision_at_k_breaks_ties_towards_the_earlier_position(T):
    # Chapter 7's uniform baseline ties every token; from T = 17 on torch's default (unstable) sort
    # no longer returns tied entries in order, so only a stable sort gives the documented answer.
    scores = torch.zeros(2, T)
    evidence = torch.zeros(2, T, dtype=torch.bool)
    evidence[0, :3] = True                                  # the first three tokens: all in the top 3
    evidence[1, -3:] = True                                 # the last three: none in the top 3
    assert precision_at_k(scores, evidence, torch.tensor([T, T])).tolist() == [1.0, 0.0]


def test_precision_at_k_ranks_in_the_scores_own_precision():
    # 1 + 1e-10 and 1 are one float32: converting would tie them and hand the top place to position 0.
    scores = torch.tensor([[1.0, 1.0 + 1e-10]], dtype=torch.float64)
    evidence = torch.tensor([[False, True]])
    assert precision_at_k(scores, evidence, torch.tensor([2])).tolist() == [1.0]


def test_sweep_runs_are_the_runs_of_a_plain_loop_in_any_process():
    from attention_course.experiments.reviews import (
        train_consistent_adversary,
        trained_classifier,
        trained_consistent_adversary,
    )
    from attention_course.train.parallel import run_parallel
    data = planted_reviews(np.random.default_rng(0), 64)
    jobs = [dict(data=data, vocab_size=len(VOCAB), seed=seed, encoder="average", steps=3, batch_size=8)
            for seed in (0, 1)]
    for job, model in zip(jobs, run_parallel(trained_classifier, jobs, workers=2)):
        torch.manual_seed(job["seed"])
        by_hand = AttentionClassifier(len(VOCAB), encoder="average")
        train_classifier(by_hand, data, steps=3, batch_size=8, seed=job["seed"])
        assert all(torch.equal(p, q) for p, q in zip(model.parameters(), by_hand.parameters()))
    probs, weights = predict_proba(model, data)
    adversary = trained_consistent_adversary(data, len(VOCAB), probs, weights, 0.5, seed=7, steps=2,
                                             divergence="jsd")
    torch.manual_seed(7)
    by_hand = AttentionClassifier(len(VOCAB), encoder="bilstm")
    train_consistent_adversary(by_hand, data, probs, weights, 0.5, steps=2, seed=7, divergence="jsd")
    assert all(torch.equal(p, q) for p, q in zip(adversary.parameters(), by_hand.parameters()))
