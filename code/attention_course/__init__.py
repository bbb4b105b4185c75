"""attention_course: the tested code behind *Attention from the bottleneck up*.

One module per idea: ``attention`` (scaled dot-product attention and masks), ``data``
(generated tasks), ``seq2seq`` (the plain RNN encoder-decoder), ``training`` (loops and
metrics), ``gradients`` (measuring vanishing and exploding gradients), ``checks`` (exercise
self-checks), ``repro`` (seeds and threads).
"""

from .attention import causal_mask, padding_mask, scaled_dot_product_attention
from .repro import seed_everything

__all__ = ["scaled_dot_product_attention", "causal_mask", "padding_mask", "seed_everything"]
__version__ = "0.1.0"
