"""Self-checks for Chapter 5, the Transformer: positions, the KV cache and beam search.

The checks of positions, of the KV cache and of the beam prediction live in :mod:`.multihead` (where
Chapter 4 of the course kept them before the Transformer became a chapter of its own) and are
re-exported here; the search-error exercise is new.
"""

from __future__ import annotations

import math
import numbers

import torch

from ...decoding import beam_search, greedy_decode, sequence_log_prob
from ...tokens import EOS
from ._base import CheckFailed, ok
from .multihead import (
    BEAM_TABLE,
    BEAM_VOCAB,
    BEAM_WIDTH,
    KV_SETUP,
    TableLM,
    check_beam_prediction,
    check_kv_cache_prediction,
    check_positions,
    kv_cache_counts,
)

__all__ = ["check_search_error", "SEARCH_WIDTH", "SEARCH_MAX_LEN", "decode_table", "every_output", "BEAM_TABLE",
           "BEAM_WIDTH",
           "TableLM", "check_beam_prediction", "check_kv_cache_prediction", "check_positions", "kv_cache_counts",
           "KV_SETUP"]

SEARCH_WIDTH, SEARCH_MAX_LEN = 2, 5          # the beam of the search-error exercise, and the longest output
_TOKENS = [t for t in BEAM_VOCAB if t in ("a", "b", "<eos>")]


def _as_table(table) -> dict[str, dict[str, float]]:
    """The student's table, validated: prefixes of 'a' and 'b' -> next-token probabilities summing to 1."""
    if not isinstance(table, dict) or not table:
        raise CheckFailed(f"expected a table as a dict {{prefix: {{token: probability}}}}, like BEAM_TABLE, got "
                          f"{type(table).__name__}")
    clean = {}
    for prefix, dist in table.items():
        if not isinstance(prefix, str) or set(prefix) - {"a", "b"} or len(prefix) >= SEARCH_MAX_LEN:
            raise CheckFailed(f"prefix {prefix!r}: a prefix is a string of the letters 'a' and 'b' ('' for the "
                              f"start), shorter than {SEARCH_MAX_LEN} tokens")
        if not isinstance(dist, dict) or not dist:
            raise CheckFailed(f"the entry of prefix {prefix!r} must be a dict {{token: probability}}")
        unknown = [t for t in dist if t not in _TOKENS]
        if unknown:
            raise CheckFailed(f"prefix {prefix!r}: unknown tokens {unknown}; the tokens are {_TOKENS}")
        probs = {}
        for token, p in dist.items():
            if isinstance(p, torch.Tensor) and p.numel() == 1:      # a probability kept in a tensor
                p = p.item()
            if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p <= 1:
                raise CheckFailed(f"prefix {prefix!r}: P({token}) = {p!r} is not a probability")
            probs[token] = float(p)
        if abs(sum(probs.values()) - 1) > 1e-6:
            raise CheckFailed(f"prefix {prefix!r}: the probabilities sum to {sum(probs.values()):.6f}, not 1")
        clean[prefix] = probs
    return clean


def every_output(table) -> dict[str, float]:
    """Every output a table language model (as ``BEAM_TABLE``) can write, with its log-probability: ``{text
    before <eos>: log p(text <eos>)}``, one factor per token, ``<eos>`` included; outputs of probability 0
    are left out. A prefix that is not listed ends with certainty."""
    table = _as_table(table)
    out: dict[str, float] = {}
    todo = [("", 0.0)]
    while todo:
        prefix, log_p = todo.pop()
        for token, p in table.get(prefix, {"<eos>": 1.0}).items():
            if p <= 0:
                continue
            if token == "<eos>":
                out[prefix] = log_p + math.log(p)
            else:
                todo.append((prefix + token, log_p + math.log(p)))
    return out


def decode_table(table, beam_width: int = SEARCH_WIDTH, include_greedy: bool = False) -> dict[str, tuple[str, float]]:
    """Greedy decoding and beam search on a table language model (as ``BEAM_TABLE``), with the package's
    :func:`greedy_decode` and :func:`beam_search`: ``{"greedy": (output, log p), "beam": (output, log p)}``,
    both log-probabilities computed by :func:`sequence_log_prob`, in one precision."""
    model = TableLM(_as_table(table))
    src, lengths = torch.zeros(1, 1, dtype=torch.long), torch.ones(1, dtype=torch.long)

    def text_and_score(ids: torch.Tensor) -> tuple[str, float]:
        out = []
        for i in ids[0].tolist():
            if i == EOS:
                break
            out.append(BEAM_VOCAB[i])
        return "".join(out), float(sequence_log_prob(model, src, lengths, ids)[0])

    greedy = greedy_decode(model, src, lengths, SEARCH_MAX_LEN)
    beam, _ = beam_search(model, src, lengths, SEARCH_MAX_LEN, beam_width, include_greedy=include_greedy)
    return {"greedy": text_and_score(greedy), "beam": text_and_score(beam)}


def check_search_error(table, beam_width: int = SEARCH_WIDTH) -> None:
    """A table language model (same form as ``BEAM_TABLE``: prefix -> next-token probabilities; a prefix not
    listed ends with certainty) on which plain beam search of width ``beam_width`` (default ``SEARCH_WIDTH``)
    returns an output the model finds less likely than greedy decoding's. Run with the package's decoders."""
    if isinstance(beam_width, bool) or not isinstance(beam_width, int) or beam_width < 2:
        raise CheckFailed(f"beam_width must be an integer of at least 2 (a beam of 1 is greedy decoding), "
                          f"got {beam_width!r}")
    result = decode_table(table, beam_width)
    (g_text, g_lp), (b_text, b_lp) = result["greedy"], result["beam"]
    if not b_lp < g_lp - 1e-4:
        verdict = "the same output" if b_text == g_text else "an output at least as likely"
        raise CheckFailed(
            f"on this table the beam of {beam_width} returns {verdict}: greedy '{g_text}<eos>' has log p = "
            f"{g_lp:.3f}, the beam's '{b_text}<eos>' {b_lp:.3f}. For a search error the greedy prefix must fall "
            f"out of the beam at some step (pushed out by {beam_width} prefixes that are more likely so far), "
            f"and those must then end less likely than the greedy output does.")
    if math.isinf(g_lp):
        raise CheckFailed("greedy decoding's output has probability 0 on this table; give every listed token a "
                          "probability above 0")
    with_greedy = decode_table(table, beam_width, include_greedy=True)["beam"]
    if with_greedy[0] != g_text:
        raise CheckFailed(f"with include_greedy=True the beam should return greedy's output, got '{with_greedy[0]}'")
    ok("on your table plain beam search drops the greedy path and ends with an output the model finds less likely "
       "than greedy decoding's: a search error; with include_greedy the greedy output comes back.")
