"""The one training loop (attention_course.train.fit) and the trainers built on it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from attention_course.models.seq2seq import Seq2Seq
from attention_course.tasks.digits import DIGIT_VOCAB, digit_batch
from attention_course.tokens import PAD
from attention_course.train import fit
from attention_course.train.seq2seq import train_seq2seq
from torch import nn


def reference_train_seq2seq(model, make_batch, steps, lr, clip, decay):
    """The loop train_seq2seq had before it called fit (Adam, clipping, linear decay). Its Adam is torch's
    default on the CPU, one tensor at a time; fit asks for foreach, which must give the same bits."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1 - i / steps if decay else 1.0)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    history = {"loss": [], "grad_norm": []}
    model.train()
    for _ in range(steps):
        batch = make_batch()
        logits = model(batch.src, batch.lengths, batch.decoder_input())
        loss = loss_fn(logits.flatten(0, 1), batch.target.flatten())
        opt.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), clip if clip is not None else float("inf"))
        opt.step()
        schedule.step()
        history["loss"].append(loss.item())
        history["grad_norm"].append(norm.item())
    model.eval()
    return history


@pytest.mark.parametrize("clip, decay", [(1.0, False), (None, True), (0.5, True)])
def test_train_seq2seq_trains_exactly_as_before(clip, decay):
    runs = []
    for train in (reference_train_seq2seq, train_seq2seq):
        torch.manual_seed(0)
        model = Seq2Seq(len(DIGIT_VOCAB), 8, 16)
        rng = np.random.default_rng(0)
        history = train(model, lambda rng=rng: digit_batch(rng, 8, 1, 5), 6, lr=3e-3, clip=clip, decay=decay)
        runs.append((history, [p.detach().clone() for p in model.parameters()]))
    (h1, p1), (h2, p2) = runs
    assert h1 == h2 and all(torch.equal(a, b) for a, b in zip(p1, p2))


def _regression():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(16, 3), torch.randn(16, 1)
    return model, lambda: ((model(x) - y) ** 2).mean()


def test_fit_decays_the_learning_rate_to_zero_and_leaves_eval_mode():
    model, loss = _regression()
    seen = []
    history = fit(model, loss, 4, lr=0.1, decay="linear", callback=lambda step: seen.append(model.training) or False,
                  every=2)
    assert len(history["loss"]) == 4 and "grad_norm" not in history
    assert seen == [False, False] and not model.training


def test_fit_stops_when_the_callback_says_so_and_records_norms_before_clipping():
    model, loss = _regression()
    history = fit(model, loss, 10, lr=0.1, clip=1e-3, record_grad_norm=True, callback=lambda step: step == 3, every=1)
    assert len(history["loss"]) == len(history["grad_norm"]) == 3
    assert all(n > 1e-3 for n in history["grad_norm"])


@pytest.mark.parametrize("steps", [0, -1, 2.0])
def test_fit_rejects_a_run_without_steps(steps):
    model, loss = _regression()
    with pytest.raises(ValueError, match="steps"):
        fit(model, loss, steps, lr=0.1, decay="linear")


@pytest.mark.parametrize("decay, last_lr", [("linear", 0.1 / 4), ("cosine", 0.1 * (1 + math.cos(math.pi * 3 / 4)) / 2),
                                            (None, 0.1)])
def test_fit_decays_as_asked(decay, last_lr):
    model, loss = _regression()
    rates = []
    original = torch.optim.Adam.step

    def spy(self, *args, **kwargs):
        rates.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    torch.optim.Adam.step = spy
    try:
        fit(model, loss, 4, lr=0.1, decay=decay)
    finally:
        torch.optim.Adam.step = original
    assert rates[0] == 0.1 and math.isclose(rates[-1], last_lr)


def test_fit_rejects_an_unknown_decay():
    model, loss = _regression()
    with pytest.raises(ValueError, match="decay must be None, 'linear' or 'cosine'"):
        fit(model, loss, 2, lr=0.1, decay="step")
