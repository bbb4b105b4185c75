"""Small Transformers trained to copy digit strings (:mod:`attention_course.tasks.digits`): how much
the position information and the place of the layer norms matter, at equal budgets.

Copying needs order: the encoder must say which digit stands where, and without positions its
self-attention sees the source as a bag of digits (permuting the tokens permutes its outputs). The
same task, with a deeper stack and a high learning rate, shows why the original post-LN Transformer
needed a learning-rate warm-up and what pre-LN changes.

    result = compare_copy_transformers(POSITION_VARIANTS, seeds=(0, 1, 2), **POSITION_BUDGET)
    result["none"]["exact"]     # one exact-match rate per seed, on COPY_TEST_SIZE held-out strings
"""

from __future__ import annotations

import numpy as np
import torch

from ..models.transformer import Transformer
from ..repro import shifted_seed
from ..tasks.digits import DIGIT_VOCAB, digit_batch
from ..train.parallel import run_parallel
from ..train.seq2seq import accuracy, train_seq2seq
from ..validate import check_steps

__all__ = ["COPY_TEST_SEED", "COPY_TEST_SIZE", "COPY_LENGTHS", "COPY_MODEL", "POSITION_VARIANTS", "POSITION_BUDGET",
           "NORM_VARIANTS", "NORM_BUDGET", "train_copy_transformer", "copy_accuracy", "copy_run",
           "compare_copy_transformers"]

COPY_TEST_SEED = 4_242             # held-out strings are drawn with this seed; training never uses it
COPY_TEST_SIZE = 1000
COPY_LENGTHS = (6, 10)             # string lengths, uniform in this range, for training and test
COPY_MODEL = {"d_model": 32, "num_heads": 2, "d_ff": 64}
MAX_LEN = 16                       # rows of the position table: longer than any string + EOS

# Three ways to give the model positions (one layer each), same steps, batch and learning rate.
POSITION_VARIANTS = {"none": {"positions": "none"}, "sinusoidal": {"positions": "sinusoidal"},
                     "learned": {"positions": "learned"}}
POSITION_BUDGET = {"steps": 200, "batch_size": 64, "lr": 3e-3, "num_layers": 1}
# Where the layer norms sit, and a warm-up, at a learning rate high enough to matter (two layers).
NORM_VARIANTS = {"post-LN": {"norm": "post"}, "post-LN + warm-up": {"norm": "post", "warmup": 50},
                 "pre-LN": {"norm": "pre"}, "pre-LN + warm-up": {"norm": "pre", "warmup": 50}}
NORM_BUDGET = {"steps": 150, "batch_size": 64, "lr": 3e-2, "num_layers": 2}


def train_copy_transformer(seed: int = 0, steps: int = 200, batch_size: int = 64, lr: float = 3e-3, warmup: int = 0,
                           num_layers: int = 1, **model_options):
    """Seed, build a :class:`Transformer` of the :data:`COPY_MODEL` sizes (``model_options`` may add
    ``positions``, ``norm``, ``scale_embeddings`` or override a size) and train it to copy digit strings
    with Adam, gradient clipping at 1, ``warmup`` steps of rising learning rate and a linear decay to 0.
    Returns ``(model, history)``."""
    check_steps(steps)
    if seed == COPY_TEST_SEED:
        raise ValueError(f"seed {seed} is reserved for the held-out strings")
    torch.manual_seed(shifted_seed(seed))
    model = Transformer(len(DIGIT_VOCAB), len(DIGIT_VOCAB), max_len=MAX_LEN, num_layers=num_layers,
                        **{**COPY_MODEL, **model_options})
    rng = np.random.default_rng(shifted_seed(seed))
    history = train_seq2seq(model, lambda: digit_batch(rng, batch_size, *COPY_LENGTHS), steps, lr=lr, clip=1.0,
                            decay=True, warmup=warmup)
    return model, history


@torch.no_grad()
def copy_accuracy(model: Transformer, n: int = COPY_TEST_SIZE) -> tuple[float, float]:
    """(token accuracy, exact match) of greedy copies of ``n`` held-out strings."""
    test = digit_batch(np.random.default_rng(COPY_TEST_SEED), n, *COPY_LENGTHS)
    ids = model.greedy_decode(test.src, test.lengths, COPY_LENGTHS[1] + 1)
    token, exact = accuracy(ids, test.target)
    return token.mean().item(), exact.mean().item()


def copy_run(seed: int = 0, **options) -> dict:
    """One run of :func:`compare_copy_transformers`: :func:`train_copy_transformer` scored by :func:`copy_accuracy`.
    Returns ``token``, ``exact``, ``final_loss`` (mean loss of the last 20 steps), ``loss`` and ``parameters``."""
    model, history = train_copy_transformer(seed=seed, **options)
    token, exact = copy_accuracy(model)
    return {"token": token, "exact": exact, "final_loss": float(np.mean(history["loss"][-20:])),
            "loss": history["loss"], "parameters": sum(p.numel() for p in model.parameters())}


def compare_copy_transformers(variants: dict[str, dict], seeds=(0, 1, 2), workers: int | None = None,
                              **budget) -> dict[str, dict]:
    """Train every variant (keyword arguments of :func:`train_copy_transformer`) once per seed under the
    same ``budget``, the runs side by side in ``workers`` processes (:func:`~attention_course.train.parallel.
    run_parallel`); return per variant ``parameters``, ``token`` and ``exact`` (one rate per seed, on the same
    held-out strings), ``final_loss`` (per seed) and ``loss`` (the loss curves, seed order)."""
    names = [(name, seed) for name in variants for seed in seeds]
    runs = run_parallel(copy_run, [dict(seed=seed, **{**budget, **variants[name]}) for name, seed in names], workers)
    results = {name: {"token": [], "exact": [], "final_loss": [], "loss": []} for name in variants}
    for (name, _), run in zip(names, runs):
        for key in ("token", "exact", "final_loss", "loss"):
            results[name][key].append(run[key])
        results[name]["parameters"] = run["parameters"]
    return results
