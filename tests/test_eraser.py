"""ERASER's comprehensiveness and sufficiency (DeYoung et al. 2020) of a token ranking (Chapter 7)."""

import math

import numpy as np
import pytest
import torch
from attention_course.analysis.importance import ERASER_BINS, eraser_faithfulness
from attention_course.models.classifier import AttentionClassifier
from attention_course.tasks.reviews import VOCAB, planted_reviews


@pytest.fixture(scope="module")
def setting():
    data = planted_reviews(np.random.default_rng(0), 6)
    torch.manual_seed(0)
    model = AttentionClassifier(len(VOCAB), 8, 8, "bilstm")
    scores = torch.rand(data.tokens.shape, generator=torch.Generator().manual_seed(1))
    return model, data.tokens, data.lengths, scores


def _by_hand(model, tokens, lengths, scores, bins):
    """One review at a time: sort its real tokens, delete the top ceil(q L) or keep only them."""
    comp, suff = [], []
    with torch.no_grad():
        for ids, L, s in zip(tokens, lengths, scores):
            ids, s = ids[:int(L)], s[:int(L)]
            p = torch.sigmoid(model(ids[None], torch.tensor([len(ids)]))[0]).item()
            y = p >= 0.5

            def prob(kept, y=y):
                kept = kept if len(kept) else torch.tensor([0])
                q = torch.sigmoid(model(kept[None], torch.tensor([len(kept)]))[0]).item()
                return q if y else 1 - q

            py = p if y else 1 - p
            c, u = [], []
            for q in bins:
                k = max(1, math.ceil(q * len(ids)))
                top = set(torch.argsort(s, descending=True, stable=True)[:k].tolist())
                c.append(py - prob(torch.tensor([w for t, w in enumerate(ids.tolist()) if t not in top])))
                u.append(py - prob(torch.tensor([w for t, w in enumerate(ids.tolist()) if t in top])))
            comp.append(np.mean(c))
            suff.append(np.mean(u))
    return torch.tensor(comp), torch.tensor(suff)


def test_matches_a_loop_over_reviews_and_bins(setting):
    model, tokens, lengths, scores = setting
    comp, suff = eraser_faithfulness(model, tokens, lengths, scores)
    by_hand = _by_hand(model, tokens, lengths, scores, ERASER_BINS)
    assert torch.allclose(comp, by_hand[0].float(), atol=1e-5) and torch.allclose(suff, by_hand[1].float(), atol=1e-5)


def test_the_whole_review_as_rationale_is_sufficient(setting):
    model, tokens, lengths, scores = setting
    comp, suff = eraser_faithfulness(model, tokens, lengths, scores, bins=(1.0,))
    assert suff.abs().max().item() < 1e-6                     # keeping every token changes nothing
    # deleting every token leaves one padding token: comprehensiveness is the drop to that input's prediction
    assert torch.allclose(comp, _by_hand(model, tokens, lengths, scores, (1.0,))[0].float(), atol=1e-5)


def test_padding_scores_are_never_ranked(setting):
    model, tokens, lengths, scores = setting
    loud = scores.clone()
    loud[torch.arange(tokens.shape[1])[None, :] >= lengths[:, None]] = 1e9   # padding scored highest
    quiet_scores = eraser_faithfulness(model, tokens, lengths, scores)
    for a, b in zip(quiet_scores, eraser_faithfulness(model, tokens, lengths, loud)):
        assert torch.equal(a, b)


def test_rejects_bad_input(setting):
    model, tokens, lengths, scores = setting
    with pytest.raises(ValueError, match="must match tokens"):
        eraser_faithfulness(model, tokens, lengths, scores[:, :3])
    with pytest.raises(ValueError, match="bins must be fractions"):
        eraser_faithfulness(model, tokens, lengths, scores, bins=(0.0,))
    with pytest.raises(ValueError, match="bins must be fractions"):
        eraser_faithfulness(model, tokens, lengths, scores, bins=())
    nan = scores.clone()
    nan[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN has no rank"):
        eraser_faithfulness(model, tokens, lengths, nan)
