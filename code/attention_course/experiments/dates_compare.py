"""The Transformer against the RNN with attention on dates, at equal parameters, steps and data.

    result = compare_transformer_rnn(seeds=(0, 1, 2), **COMPARE_BUDGET)
    result["transformer"]["exact"]     # (seeds, checkpoints) greedy exact match on held-out dates
    result["rnn"]["steps"]             # the checkpoints, in training steps

Both models are trained by :func:`~attention_course.experiments.dates.train_on_dates`: for one seed
they see the same training batches in the same order, for the same number of steps, each with its
own learning rate (``COMPARE_RECIPES``; the Transformer with a warm-up). The RNN's width is the one whose
parameter count is closest to the Transformer's (:func:`rnn_width_like_transformer`). Every
``every`` steps both are scored on the same ``n_test`` held-out dates, so the result is a pair of
learning curves in steps; ``make bench`` times the same runs in seconds
(:mod:`coursekit.benchmarks.transformer`).
"""

from __future__ import annotations

import inspect

import numpy as np

from ..models.transformer import Transformer
from ..tasks.dates import MAX_SOURCE_LEN, SOURCE_VOCAB, TARGET_LEN, TARGET_VOCAB
from ..train.parallel import run_parallel
from ..validate import check_choice, check_steps, positive_int
from .dates import date_exact_match, train_date_transformer, train_date_translator, width_for_parameters

__all__ = ["COMPARE_BUDGET", "COMPARE_RECIPES", "KINDS", "transformer_parameters", "rnn_width_like_transformer",
           "compared_trainer", "train_compared", "compare_transformer_rnn"]

# A budget small enough that neither model is at the ceiling: the curves separate.
COMPARE_BUDGET = {"steps": 150, "batch_size": 64, "every": 25, "n_test": 500}
KINDS = ("transformer", "rnn")


def _defaults(fn) -> dict:
    return {k: v.default for k, v in inspect.signature(fn).parameters.items()}


# Each model's learning rate for this short budget, named so that the chapter can print it: each trainer's
# default (for the Transformer, with its warm-up).
COMPARE_RECIPES = {"transformer": {k: _defaults(train_date_transformer)[k] for k in ("lr", "warmup")},
                   "rnn": {"lr": _defaults(train_date_translator)["lr"]}}


def transformer_parameters() -> int:
    """Parameter count of the Transformer that :func:`train_date_transformer` builds with its defaults."""
    d = _defaults(train_date_transformer)
    model = Transformer(len(SOURCE_VOCAB), len(TARGET_VOCAB), d["d_model"], d["num_heads"], d["num_layers"],
                        d["d_ff"], max_len=max(MAX_SOURCE_LEN, TARGET_LEN + 1), positions=d["positions"])
    return sum(p.numel() for p in model.parameters())


def rnn_width_like_transformer() -> int:
    """The ``hidden_dim`` of :func:`train_date_translator` (its other defaults kept) whose parameter
    count is closest to :func:`transformer_parameters`."""
    d = _defaults(train_date_translator)
    options = {k: d[k] for k in ("embed_dim", "score", "bidirectional", "decoder", "attentional", "input_feeding")}
    return width_for_parameters(transformer_parameters(), **options)


def compared_trainer(kind: str, seed: int = 0, steps: int = COMPARE_BUDGET["steps"],
                     batch_size: int = COMPARE_BUDGET["batch_size"]):
    """``train(callback=None, every=100) -> (model, history)``: the training run of one model of ``kind``
    ("transformer", :func:`train_date_transformer` at its default sizes, or "rnn", :func:`train_date_translator`
    at :func:`rnn_width_like_transformer`) for ``steps`` steps of ``batch_size`` from ``seed``, with the
    kind's ``COMPARE_RECIPES``."""
    check_choice("kind", kind, KINDS)
    steps, batch_size = check_steps(steps), positive_int("batch_size", batch_size)
    if kind == "transformer":
        return lambda **cb: train_date_transformer(steps=steps, batch_size=batch_size, seed=seed,
                                                   **COMPARE_RECIPES[kind], **cb)
    width = rnn_width_like_transformer()
    return lambda **cb: train_date_translator(steps=steps, batch_size=batch_size, seed=seed, hidden_dim=width,
                                              **COMPARE_RECIPES[kind], **cb)


def train_compared(kind: str, seed: int, steps: int, batch_size: int, every: int, n_test: int):
    """Run :func:`compared_trainer` and every ``every`` steps record the greedy exact match on ``n_test``
    held-out dates. Returns ``(model, steps at the checkpoints, exact matches)``."""
    train = compared_trainer(kind, seed, steps, batch_size)
    every, n_test = positive_int("every", every), positive_int("n_test", n_test)
    if steps % every:
        raise ValueError(f"steps={steps} must be a multiple of every={every}, so the last checkpoint is the end")
    marks, curve = [], []

    def record(step, model):
        marks.append(step)
        curve.append(date_exact_match(model, n_test))
        return False

    model, _ = train(callback=record, every=every)
    return model, marks, curve


def compare_transformer_rnn(seeds=(0, 1, 2), steps: int = COMPARE_BUDGET["steps"],
                            batch_size: int = COMPARE_BUDGET["batch_size"], every: int = COMPARE_BUDGET["every"],
                            n_test: int = COMPARE_BUDGET["n_test"]) -> dict[str, dict]:
    """Both models, one run per seed under the same budget (the runs spread over the cores by
    :func:`~attention_course.train.parallel.run_parallel`). Returns per kind ``parameters``, ``steps``
    (the checkpoints), ``exact`` (array (seeds, checkpoints)) and ``models`` (trained, seed order)."""
    if not len(seeds):
        raise ValueError("compare_transformer_rnn needs at least one seed")
    jobs = [dict(kind=kind, seed=seed, steps=steps, batch_size=batch_size, every=every, n_test=n_test)
            for kind in KINDS for seed in seeds]
    done = iter(run_parallel(train_compared, jobs))              # independent runs, side by side
    result = {}
    for kind in KINDS:
        runs = [next(done) for _ in seeds]
        result[kind] = {"parameters": sum(p.numel() for p in runs[0][0].parameters()), "steps": runs[0][1],
                        "exact": np.array([curve for _, _, curve in runs]), "models": [m for m, _, _ in runs]}
    return result
