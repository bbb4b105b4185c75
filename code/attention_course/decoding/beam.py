"""Beam search: keep the ``beam_width`` most likely partial outputs at every step, not just one.

Greedy decoding commits to the most likely token at each step; a token that looked best may lead
to a worse output overall. Beam search keeps, for every source row, ``K = beam_width`` hypotheses
and their log-probabilities ``log p(y_1 .. y_t | x) = sum_s log p(y_s | y_<s, x)``. At each step every
hypothesis is extended by every token (K x V candidates), and the K best candidates survive. A
hypothesis that has written ``EOS`` is finished: it stays in the beam with its score unchanged.

Beam search is a heuristic, not an exact search. It can drop the greedy path: when the greedy
prefix falls below ``K`` others at some step, it is gone for good, and the hypotheses that pushed it
out may end less likely than greedy decoding's output (a *search error*: the model would have
preferred an output the search never finished). This is rare, and it is what plain beam search
does, so it is the default. ``include_greedy=True`` adds greedy decoding's output as one more
finished candidate at the end, which guarantees a result at least as likely as greedy's (under the
same ranking) at the cost of one extra greedy pass.

Log-probabilities only fall as tokens are added, so ranking finished outputs by raw score favours
short ones. With ``length_penalty = alpha`` the final choice ranks ``score / length ** alpha``
(``length`` counts the tokens up to and including ``EOS``): alpha = 0 is the raw score, alpha = 1
the mean log-probability per token.

Written against the step interface of :mod:`attention_course.decoding` (``model.start``,
``model.step``), so it serves every encoder-decoder of the course. Reordering the beams needs the
batch axis of every tensor in a model's decoding state; it is found by encoding one row and two
rows and seeing which axis grows (dim 0 for a Transformer's cache, dim 1 for an RNN's hidden state).
"""

from __future__ import annotations

import numbers

import torch

from ..tokens import BOS, EOS, PAD
from ..validate import positive_int
from .greedy import greedy_decode

__all__ = ["beam_search", "sequence_log_prob"]


def _batch_axes(model, src: torch.Tensor, lengths: torch.Tensor):
    """The decoding state's structure with each tensor replaced by its batch axis (None: no batch axis)."""
    if src.shape[0] >= 2:
        one, two = model.start(src[:1], lengths[:1]), model.start(src[:2], lengths[:2])
    else:
        one, two = model.start(src, lengths), model.start(src.repeat(2, 1), lengths.repeat(2))

    def axes(a, b):
        if isinstance(a, torch.Tensor):
            return next((i for i, (m, n) in enumerate(zip(a.shape, b.shape)) if m != n), None)
        if isinstance(a, (tuple, list)):
            items = [axes(x, y) for x, y in zip(a, b)]
            return type(a)(*items) if hasattr(a, "_fields") else type(a)(items)
        return None
    return axes(one, two)


def _select(state, axes, index: torch.Tensor):
    """``state`` with the rows ``index`` taken along each tensor's batch axis."""
    if isinstance(state, torch.Tensor):
        return state if axes is None else state.index_select(axes, index)
    if isinstance(state, (tuple, list)):
        items = [_select(s, a, index) for s, a in zip(state, axes)]
        return type(state)(*items) if hasattr(state, "_fields") else type(state)(items)
    return state


def _check_penalty(length_penalty) -> float:
    if isinstance(length_penalty, bool) or not isinstance(length_penalty, numbers.Real) or not length_penalty >= 0:
        raise ValueError(f"length_penalty must be a real number >= 0, got {length_penalty!r}")
    return float(length_penalty)


@torch.no_grad()
def beam_search(model, src: torch.Tensor, lengths: torch.Tensor, max_len: int, beam_width: int = 4,
                length_penalty: float = 0.0, chunk: int | None = None,
                include_greedy: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids (B, max_len), log_prob (B,))``: for each row the best of ``beam_width`` hypotheses
    (``PAD`` after its ``EOS``) and its log-probability under the model (summed over its tokens, ``EOS``
    included; not length-normalised). ``beam_width=1`` is greedy decoding.

    Plain beam search (the default) can drop the greedy path and, rarely, end with an output less
    likely than greedy decoding's. ``include_greedy=True`` adds greedy decoding's output as one more
    candidate, ranked like the beam's (with the same length normalisation), so that the result never
    ranks below greedy's. ``chunk`` rows at a time."""
    max_len, K = positive_int("max_len", max_len), positive_int("beam_width", beam_width)
    alpha = _check_penalty(length_penalty)
    if not isinstance(include_greedy, bool):
        raise ValueError(f"include_greedy must be True or False, got {include_greedy!r}")
    if chunk is not None and src.shape[0] > positive_int("chunk", chunk):
        parts = [beam_search(model, src[i:i + chunk], lengths[i:i + chunk], max_len, K, alpha,
                             include_greedy=include_greedy)
                 for i in range(0, src.shape[0], chunk)]
        return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    B, device = src.shape[0], src.device
    axes = _batch_axes(model, src, lengths)
    rows = torch.arange(B, device=device).repeat_interleave(K)                # (B K,): beam k of row b at b K + k
    state = _select(model.start(src, lengths), axes, rows)
    score = torch.full((B, K), float("-inf"), device=device)
    score[:, 0] = 0.0                                                        # one live hypothesis to start
    token = torch.full((B * K,), BOS, dtype=torch.long, device=device)
    finished = torch.zeros(B, K, dtype=torch.bool, device=device)
    length = torch.zeros(B, K, device=device)                                # tokens written up to EOS
    ids = torch.empty(B, K, 0, dtype=torch.long, device=device)
    for _ in range(max_len):
        logits, state, _ = model.step(state, token)                         # (B K, V)
        logp = logits.float().log_softmax(-1).view(B, K, -1)                 # (B, K, V)
        V = logp.shape[-1]
        logp = torch.where(finished[..., None], torch.full_like(logp, float("-inf")), logp)
        logp[..., PAD] = torch.where(finished, 0.0, logp[..., PAD])          # finished: only PAD, at no cost
        score, best = (score[..., None] + logp).view(B, K * V).topk(K, dim=-1)   # (B, K) each
        beam, token = best // V, best % V                                    # which hypothesis, which token
        pick = (torch.arange(B, device=device)[:, None] * K + beam).flatten()   # (B K,) rows of the state
        state = _select(state, axes, pick)
        ids = torch.cat([ids.gather(1, beam[..., None].expand(-1, -1, ids.shape[2])), token[..., None]], dim=2)
        was_finished = finished.gather(1, beam)
        length = length.gather(1, beam) + (~was_finished).float()
        finished = was_finished | (token == EOS)
        token = token.flatten()
        if finished.all():
            break
    choice = _normalised(score, length, alpha).argmax(-1)                 # (B,)
    out = ids[torch.arange(B, device=device), choice]                       # (B, t)
    if out.shape[1] < max_len:
        out = torch.cat([out, out.new_full((B, max_len - out.shape[1]), PAD)], dim=1)
    best, best_length = score[torch.arange(B, device=device), choice], length[torch.arange(B, device=device), choice]
    if K == 1 or not include_greedy:
        return out, best
    # The option: greedy's output as one more candidate, kept where it ranks above the beam's choice.
    greedy = greedy_decode(model, src, lengths, max_len)
    greedy_score = sequence_log_prob(model, src, lengths, greedy)
    ended = greedy == EOS
    greedy_length = torch.where(ended.any(1), ended.float().argmax(1) + 1, torch.full_like(ended[:, 0], max_len,
                                                                                            dtype=torch.long))
    better = _normalised(greedy_score, greedy_length.float(), alpha) > _normalised(best, best_length, alpha)
    return torch.where(better[:, None], greedy, out), torch.where(better, greedy_score, best)


def _normalised(score: torch.Tensor, length: torch.Tensor, alpha: float) -> torch.Tensor:
    """``score / length ** alpha``, the ranking of finished hypotheses (alpha = 0: the raw score)."""
    return score / length.clamp(min=1) ** alpha if alpha else score


@torch.no_grad()
def sequence_log_prob(model, src: torch.Tensor, lengths: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(B,) log-probability of the outputs ``ids`` (B, T) under ``model``, fed through ``start`` /
    ``step``: the sum over each row's tokens up to and including its first ``EOS`` (all T if none)."""
    if ids.dim() != 2 or ids.shape[0] != src.shape[0] or ids.dtype != torch.long:
        raise ValueError(f"ids must be (batch={src.shape[0]}, T) token ids (int64), got shape "
                         f"{tuple(ids.shape)} and dtype {ids.dtype}")
    state = model.start(src, lengths)
    token = torch.full((src.shape[0],), BOS, dtype=torch.long, device=src.device)
    alive = torch.ones(src.shape[0], dtype=torch.bool, device=src.device)
    total = torch.zeros(src.shape[0], device=src.device)
    for t in range(ids.shape[1]):
        logits, state, _ = model.step(state, token)
        logp = logits.float().log_softmax(-1).gather(1, ids[:, t:t + 1])[:, 0]
        total += torch.where(alive, logp, torch.zeros_like(logp))
        alive &= ids[:, t] != EOS
        token = ids[:, t]
    return total
