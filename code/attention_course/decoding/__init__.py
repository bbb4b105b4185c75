"""Decoding for every encoder-decoder of the course, written once against the step interface.

A model that decodes implements two methods::

    state = model.start(src, lengths)                   # encode the source (B, S) once
    logits, state, weights = model.step(state, prev)    # prev (B,) the tokens just written ->
                                                        # logits (B, V) for the next one, the new state,
                                                        # attention over the source (B, S) or None

``greedy`` feeds each step's argmax back in; beam search and cached decoding reuse the same steps.
"""

from .beam import beam_search, sequence_log_prob
from .greedy import greedy_decode

__all__ = ["greedy_decode", "beam_search", "sequence_log_prob"]
