"""attention_course: the tested code behind *Attention from the bottleneck up*.

One module per idea. The core: ``attention`` (scaled dot-product attention, masked softmax,
masks), ``validate`` (the argument checks every public function shares; book/bad_input.md lists
what bad input gets), ``repro`` (seeds and threads), ``show`` (package source in a notebook),
``viz`` (the offline attention explorer). By chapter:

1. ``data`` (digit strings), ``seq2seq`` (the plain RNN encoder-decoder), ``training``,
   ``experiments`` (the length experiment), ``gradients`` (vanishing and exploding gradients);
2. ``dates`` (generated dates), ``rnn_attention`` (scores and the attention decoder),
   ``translator`` (the date translator), ``probes`` (linear probes);
3. ``self_attention`` (self- and cross-attention layers), ``pronoun`` (the "He" task);
4. ``multihead`` (multi-head attention), ``transformer`` (a small encoder-decoder Transformer);
5. ``cca`` (canonical correlation analysis), ``retrieval`` (one attention head trained to retrieve);
6. ``explain_data``, ``explain_model``, ``importance``, ``adversarial`` (is attention explanation?);
7. ``conv_attention``, ``set_transformer``, ``forecast``.

Teaching: ``checks`` (exercise self-checks, one module per chapter), ``debugging`` (planted
attention bugs and the checks that catch them), ``student``, ``slides``, ``coursemap``,
``provenance``. Timed measurements for ``make bench`` live in ``benchmarks``.
"""

from .attention import causal_mask, padding_mask, scaled_dot_product_attention
from .repro import seed_everything

__all__ = ["scaled_dot_product_attention", "causal_mask", "padding_mask", "seed_everything"]
__version__ = "0.1.0"
