"""Chapter 7: one seed of Wiegreffe & Pinter's counter-tests in one job (experiments.reviews.counter_test_run)
is the notebook's loop over the same trainers, and rejects data it cannot tabulate."""

import numpy as np
import pytest
import torch
from attention_course.analysis.adversarial import adversarial_attention, js_divergence
from attention_course.experiments.reviews import counter_test_run, predict_proba, trained_classifier
from attention_course.tasks.reviews import VOCAB, planted_reviews


def _scores(model, data, weights=None):
    probs, _ = predict_proba(model, data, weights)
    c = data.contrast
    hit = ((probs >= 0.5).float() == data.labels).float()
    return hit.mean().item(), hit[~c].mean().item(), hit[c].mean().item()


def test_counter_test_run_is_the_loop_over_the_trainers():
    train, test = planted_reviews(np.random.default_rng(1), 96), planted_reviews(np.random.default_rng(2), 40)
    budget = dict(vocab_size=len(VOCAB), seed=3, steps=4, batch_size=16, lr=1e-2)
    run = counter_test_run(train, test, **budget)
    bilstm = trained_classifier(train, encoder="bilstm", **budget)
    uniform = trained_classifier(train, encoder="bilstm", attention="uniform", **budget)
    _, w_train = predict_proba(bilstm, train)
    _, w_test = predict_proba(bilstm, test)

    def exact(data, w):
        with torch.no_grad():
            s = bilstm.token_logits(bilstm.states(bilstm.embed(data.tokens), data.lengths))
        return adversarial_attention(s, bilstm.out.bias.item(), w, data.lengths, 0.01)

    adv_train, _ = exact(train, w_train)
    adv_test, adv_jsd = exact(test, w_test)
    mlp_lstm = trained_classifier(train, encoder="average", weights=w_train, **budget)
    mlp_adv = trained_classifier(train, encoder="average", weights=adv_train, **budget)
    mlp_uniform = trained_classifier(train, encoder="average", attention="uniform", **budget)
    assert run["acc"] == {"BiLSTM": pytest.approx(_scores(bilstm, test)),
                          "uniform BiLSTM": pytest.approx(_scores(uniform, test))}
    assert run["diagnostic"]["uniform"] == pytest.approx(_scores(mlp_uniform, test))
    assert run["diagnostic"]["BiLSTM's"] == pytest.approx(_scores(mlp_lstm, test, w_test))
    assert run["diagnostic"]["adversarial"] == pytest.approx(_scores(mlp_adv, test, adv_test))
    assert torch.equal(run["attention"], w_test) and torch.equal(run["adversary_jsd"], adv_jsd)
    assert torch.allclose(js_divergence(adv_test, w_test), adv_jsd, atol=1e-6)


def test_counter_test_run_rejects_bad_input():
    train = planted_reviews(np.random.default_rng(1), 32)
    with pytest.raises(ValueError, match="needs planted reviews"):
        counter_test_run(train, object(), len(VOCAB), steps=1, batch_size=8)
    with pytest.raises(ValueError, match="steps"):
        counter_test_run(train, train, len(VOCAB), steps=0, batch_size=8)
    with pytest.raises(ValueError, match="batch_size=64 exceeds the 32 examples"):
        counter_test_run(train, train, len(VOCAB), steps=1)
