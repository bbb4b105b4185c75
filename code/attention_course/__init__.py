"""attention_course: the tested code behind *Attention from the bottleneck up*, laid out by role.

    layers/       attention, masks, score functions, self- and cross-attention, multi-head attention
    models/       task-free networks: the encoder-decoders (seq2seq, rnn_attention, transformer), the
                  pronoun resolver, the explanation classifier, retrieval head, Set Transformer,
                  forecaster, convolution as attention
    decoding/     greedy decoding, written once over each model's ``start`` / ``step``
    train/        the one training loop (``fit``), the sequence-to-sequence trainer, and
                  ``run_parallel`` for independent runs (seeds, variants) side by side
    tasks/        generated data, each with its vocabulary: digits, dates, pronoun, reviews, views,
                  sets, series
    experiments/  a task joined to a model: date translation, the length experiment, ...
    analysis/     probes, gradients, importance, adversarial attention, CCA, retrieval analysis
    teaching/     exercise self-checks (checks/) and planted attention bugs (debugging)

Imports run downwards only (models never import tasks). At the top level: ``tokens`` (special ids,
batches), ``validate`` (the shared argument checks; book/bad_input.md), ``repro``, ``show``, ``viz``,
``claims``, ``provenance``. The book's own tooling is the separate package ``coursekit``.
"""

from .layers.attention import causal_mask, padding_mask, scaled_dot_product_attention
from .repro import seed_everything

__all__ = ["scaled_dot_product_attention", "causal_mask", "padding_mask", "seed_everything"]
__version__ = "0.1.0"
