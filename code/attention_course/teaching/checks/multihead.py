"""Self-checks for Chapter 4, multi-head attention, and for Chapter 5's positions, KV cache and beam
prediction (re-exported by :mod:`.transformer`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from ...decoding import beam_search, greedy_decode, sequence_log_prob
from ...layers.multihead import MultiHeadAttention, merge_heads, split_heads
from ...models.transformer import Transformer, sinusoidal_positions
from ...tokens import BOS, EOS, PAD
from ._base import CheckFailed, as_float, as_tensor, call, first_wrong, ok

__all__ = ["check_split_heads", "check_split_heads_time_first", "check_merge_detector", "WRONG_MERGES",
           "check_split_identity", "CANDIDATE_SPLITS", "check_beam_prediction", "BEAM_TABLE", "TableLM",
           "check_to_torch", "check_positions", "check_three_lookup", "check_kv_cache_prediction", "KV_SETUP",
           "kv_cache_counts"]


def _shape(x) -> str:
    return str(tuple(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__


# Exercise 4.1: split the features into heads, of a batch-first or a time-first tensor -----------

# For each input layout: its axes, and what a shape with two axes swapped, a straight reshape and a
# strided split of the features mean there.
_SPLIT_LAYOUTS = {
    "batch-first": {
        "axes": "(B, T, d_m)",
        "swapped": "(batch, T, heads, d_head): the features are split, but the head axis must come before time; "
                   "move it with transpose(1, 2)",
        "straight": "you reshaped (B, T, d_m) straight to (B, n_h, T, d_head): the memory order is time-major, so "
                    "head 1 now holds pieces of several time steps. View as (B, T, n_h, d_head) first, then "
                    "transpose(1, 2)",
        "strided": "head h got the strided features h, h+n_h, h+2n_h, ...: a valid split, but not the one the package "
                   "and torch use (consecutive blocks), so weights copied from torch would land in the wrong heads",
        "praise": "each head holds a block of consecutive features, at every time step."},
    "time-first": {
        "axes": "(T, B, d_m)",
        "swapped": "(T, heads, batch, d_head): the input is time-first (T, B, d_m), so batch and time are swapped; "
                   "bring the batch axis to the front",
        "straight": "you reshaped (T, B, d_m) straight to (B, n_h, T, d_head): memory is read in its stored order, so "
                    "a 'head' holds pieces of several positions and examples. Split the feature axis first, "
                    "(T, B, n_h, d_head), then permute the axes",
        "strided": "head h got the strided features h, h+n_h, h+2n_h, ...: split the feature axis as (n_h, d_head), "
                   "not (d_head, n_h)",
        "praise": "batch first, then each head holds a block of consecutive features at every time step."},
}


def _check_split(fn: Callable[[torch.Tensor, int], torch.Tensor], layout: str) -> None:
    """Both split-heads checks: ``fn(x, H)`` on an x whose entries count up in memory order, laid out as
    ``_SPLIT_LAYOUTS[layout]`` says. The diagnosis: a shape with two axes swapped, then the shape, then the
    known wrong splits in order, then the first entry that differs, named by its place in x."""
    B, T, E, H = 2, 5, 12, 3
    d = E // H
    time_first, says = layout == "time-first", _SPLIT_LAYOUTS[layout]
    x = torch.arange(B * T * E, dtype=torch.float32).reshape((T, B, E) if time_first else (B, T, E))
    got = as_float(call(fn, x.clone(), H), "the heads")
    x = x.double()
    x_bte = x.transpose(0, 1) if time_first else x                          # (B, T, E)
    want = split_heads(x_bte, H)
    if got.shape == ((T, H, B, d) if time_first else (B, T, H, d)):
        raise CheckFailed(f"shape {_shape(got)} is {says['swapped']}")
    if got.shape != want.shape:
        raise CheckFailed(f"for x of shape {says['axes']} = {tuple(x.shape)} and {H} heads expected shape "
                          f"(batch, heads, T, d_head) = {tuple(want.shape)}, got {_shape(got)}")
    if torch.equal(got, want):
        ok(says["praise"])
        return
    for wrong, message in ((x.reshape(B, H, T, d), says["straight"]),
                           (x_bte.reshape(B, T, d, H).permute(0, 3, 1, 2), says["strided"])):
        if torch.equal(got, wrong):
            raise CheckFailed(message)
    b, h, t, f = (got != want).nonzero()[0].tolist()
    place = f"x[{t}, {b}, {h * d + f}]" if time_first else f"x[{b}, {t}, {h * d + f}]"
    raise CheckFailed(f"at index [batch {b}, head {h}, time {t}, feature {f}] (from 0): "
                      f"got {got[b, h, t, f].item():g}, expected {want[b, h, t, f].item():g} ({place})")


def check_split_heads(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``fn(x (B, T, E), num_heads) -> (B, H, T, E / H)``, head h holding features h*d .. (h+1)*d - 1."""
    _check_split(fn, "batch-first")


# Exercise 4.2: the other direction of from_torch -------------------------------------------------

def check_to_torch(fn: Callable[[MultiHeadAttention], nn.MultiheadAttention]) -> None:
    """``fn(layer)`` must return a ``torch.nn.MultiheadAttention`` computing what ``layer`` computes."""
    torch.manual_seed(4)
    E, H = 16, 4
    layer = MultiHeadAttention(E, H)
    got = call(fn, layer)
    if not isinstance(got, nn.MultiheadAttention):
        raise CheckFailed(f"expected a torch.nn.MultiheadAttention, got {type(got).__name__}")
    if (got.embed_dim, got.num_heads) != (E, H):
        raise CheckFailed(f"expected embed_dim={E}, num_heads={H}, got embed_dim={got.embed_dim}, "
                          f"num_heads={got.num_heads}")
    if not got.batch_first:
        raise CheckFailed("batch_first is False: torch would read the inputs as (T, batch, d_m); the package's layer "
                          "is batch-first, so create the torch module with batch_first=True")
    def same(a, b) -> bool:                     # exact values, whatever float dtype the copy has
        return a is not None and b is not None and torch.equal(a.detach().double().cpu(), b.detach().double())

    W = [lin.weight for lin in (layer.W_Q, layer.W_K, layer.W_V)]
    stacked = got.in_proj_weight
    if stacked is None or stacked.shape != (3 * E, E):
        shape = None if stacked is None else tuple(stacked.shape)
        raise CheckFailed(f"in_proj_weight should be (3 d_m, d_m) = {(3 * E, E)}, got {shape}")
    blocks = list(stacked.split(E))
    if all(same(b, w.T) for b, w in zip(blocks, W)):
        raise CheckFailed("the projection blocks are transposed: nn.Linear and in_proj_weight both store "
                          "(out_features, in_features); copy the weights as they are")
    if not all(same(b, w) for b, w in zip(blocks, W)):
        if all(any(same(b, w) for w in W) for b in blocks):
            raise CheckFailed("the three projections are in the wrong order: in_proj_weight stacks the rows "
                              "[W_Q; W_K; W_V]")
        raise CheckFailed("in_proj_weight is not [W_Q.weight; W_K.weight; W_V.weight] (did you copy inside "
                          "torch.no_grad(), into the module's own parameters?)")
    if not same(got.in_proj_bias, torch.cat([lin.bias for lin in (layer.W_Q, layer.W_K, layer.W_V)])):
        raise CheckFailed("in_proj_bias is not [W_Q.bias; W_K.bias; W_V.bias]")
    if not (same(got.out_proj.weight, layer.W_O.weight) and same(got.out_proj.bias, layer.W_O.bias)):
        raise CheckFailed("out_proj does not hold W_O's weight and bias")
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 3, E, generator=g), torch.randn(2, 6, E, generator=g)
    param = got.in_proj_weight
    with torch.no_grad():
        want, _ = layer(q, k, k)
        out, _ = call(got.eval(), q.to(param), k.to(param), k.to(param))
        out = as_float(out, "the module's output").to(torch.float32)
    if not torch.allclose(out, want, atol=1e-5):
        raise CheckFailed(f"the weights match but the outputs differ by up to {(out - want).abs().max().item():.3g}"
                          f" (dropout={got.dropout}? it must be 0 or the module in eval mode)")
    ok("torch's module holds the same four projections and gives the same outputs.")


# Exercise 4.3: sinusoidal positional encoding ----------------------------------------------------

def check_positions(fn: Callable[[int, int], torch.Tensor]) -> None:
    """``fn(max_len, d_model) -> (max_len, d_model)``: PE[t, 2i] = sin(t w_i), PE[t, 2i+1] = cos(t w_i),
    w_i = 10000^(-2i / d_model)."""
    max_len, d = 50, 16
    want = sinusoidal_positions(max_len, d).double()
    got = as_float(call(fn, max_len, d), "the positional encoding")
    if got.shape == (d, max_len):
        raise CheckFailed(f"shape {_shape(got)} is transposed: one row per position, (max_len, d_model) = "
                          f"{(max_len, d)}")
    if got.shape != want.shape:
        raise CheckFailed(f"expected shape (max_len, d_model) = {(max_len, d)}, got {_shape(got)}")
    if torch.allclose(got, want, atol=1e-5):
        ok("your encoding matches the package's sinusoidal positions at every position and feature.")
        return
    t = torch.arange(max_len, dtype=torch.float64)[:, None]
    i = torch.arange(d // 2, dtype=torch.float64)
    if torch.allclose(got[:, 0::2], want[:, 1::2], atol=1e-5) and torch.allclose(got[:, 1::2], want[:, 0::2],
                                                                                   atol=1e-5):
        raise CheckFailed("sines and cosines are swapped: even features (0, 2, ...) are sines")
    if torch.allclose(got, torch.cat([want[:, 0::2], want[:, 1::2]], 1), atol=1e-5):
        raise CheckFailed("you put all the sines first and all the cosines after: the same numbers, but feature "
                          "2i must be the sine and feature 2i+1 the cosine of frequency i (interleave them)")
    if torch.allclose(got[:, 0::2], torch.sin(t * 10000.0 ** (-i / d)), atol=1e-5):
        raise CheckFailed("the frequencies decay too slowly: the exponent is -2i/d_model where i counts the "
                          "(sin, cos) pairs, not -i/d_model")
    if not torch.allclose(got[0], want[0], atol=1e-5):
        raise CheckFailed(f"position 0 should be [0, 1, 0, 1, ...] (sin 0, cos 0), got {got[0, :4].tolist()}...")
    t_bad, f_bad = (~torch.isclose(got, want, atol=1e-5)).nonzero()[0].tolist()
    raise CheckFailed(f"position {t_bad}, feature {f_bad}: got {got[t_bad, f_bad].item():.4f}, expected "
                      f"{want[t_bad, f_bad].item():.4f}")


# Exercise 4.1: split a time-first tensor into heads ----------------------------------------------

def check_split_heads_time_first(fn: Callable[[torch.Tensor, int], torch.Tensor]) -> None:
    """``fn(x (T, B, E), num_heads) -> (B, H, T, E / H)``: torch's time-first layout into the package's heads,
    head h holding features h*d .. (h+1)*d - 1 of every position."""
    _check_split(fn, "time-first")


# Exercise 4.2: find the head-merge bug -----------------------------------------------------------

def _merge_straight(x: torch.Tensor) -> torch.Tensor:
    """A plausible wrong merge: reshape (B, H, T, d) straight to (B, T, H d), no transpose."""
    B, H, T, d = x.shape
    return x.reshape(B, T, H * d)


def _merge_strided(x: torch.Tensor) -> torch.Tensor:
    """A wrong merge that interleaves the heads' features: feature f of head h lands at f H + h."""
    B, H, T, d = x.shape
    return x.permute(0, 2, 3, 1).reshape(B, T, H * d)


def _merge_permute_first(x: torch.Tensor) -> torch.Tensor:
    B, H, T, d = x.shape
    return x.reshape(B, H * d, T).transpose(1, 2)


WRONG_MERGES = {"reshaped straight, no transpose": _merge_straight, "heads interleaved": _merge_strided,
                "transposed after the reshape": _merge_permute_first}


def check_merge_detector(fn: Callable[[Callable[[torch.Tensor], torch.Tensor]], bool]) -> None:
    """``fn(merge) -> bool``: True if ``merge`` (B, H, T, d_head) -> (B, T, H d_head) is the inverse of
    :func:`split_heads`, False for a merge that returns the right shape with the wrong content. Run on the
    package's merge and on the wrong merges of ``WRONG_MERGES``, which a shape check cannot tell apart."""
    verdict = call(fn, merge_heads)
    if verdict is not True and verdict is not False:
        raise CheckFailed(f"your detector must return True or False, got {verdict!r}")
    if not verdict:
        raise CheckFailed("your detector rejects the package's merge_heads, which is correct")
    for name, wrong in WRONG_MERGES.items():
        if call(fn, wrong) is not False:
            raise CheckFailed(f"your detector accepts a wrong merge ({name}); its output has the right shape, so "
                              f"compare contents: give it a tensor whose entries name their head, position and "
                              f"feature")
    ok("your detector accepts merge_heads and catches every wrong merge.")


# Exercise 4.4: build the three-lookup task -------------------------------------------------------

def check_three_lookup(fn: Callable[[np.random.Generator, int], tuple]) -> None:
    """``fn(rng, n) -> (vectors (n, 8, 4), markers (n, 8), answer (n, 3, 4))``: three distinct items
    marked 1, 2, 3 (0 elsewhere), the answer their vectors in the order of the marks."""
    n = 400
    out = call(fn, np.random.default_rng(0), n)
    if not isinstance(out, (tuple, list)) or len(out) != 3:
        raise CheckFailed(f"expected a tuple (vectors, markers, answer), got {type(out).__name__}")
    vectors, markers, answer = (as_float(out[0], "vectors"), as_tensor(out[1], "markers"),
                                as_float(out[2], "answer"))
    expected = (("vectors", vectors, (n, 8, 4)), ("markers", markers, (n, 8)), ("answer", answer, (n, 3, 4)))
    for what, t, shape in expected:
        if tuple(t.shape) != shape:
            raise CheckFailed(f"{what} should have shape {shape}, got {_shape(t)}")
    markers = markers.long()
    for mark in (1, 2, 3):
        counts = (markers == mark).sum(1)
        if not (counts == 1).all():
            row = int((counts != 1).nonzero()[0])
            raise CheckFailed(f"row {row} has {int(counts[row])} items marked {mark}: each mark goes on exactly one "
                              f"item (draw three distinct positions, e.g. from a permutation)")
    if not ((markers >= 0) & (markers <= 3)).all():
        raise CheckFailed("markers must be 0 (unmarked) or 1, 2, 3")
    rows = torch.arange(n)
    for slot in range(3):
        at = (markers == slot + 1).long().argmax(1)
        if not torch.allclose(answer[:, slot], vectors[rows, at], atol=1e-6):
            raise CheckFailed(f"answer[:, {slot}] is not the vector of the item marked {slot + 1}")
    where = (markers == 1).long().argmax(1)
    if len(set(where.tolist())) < 8 or (where == 0).float().mean() > 0.3:
        raise CheckFailed("the item marked 1 is not placed at random positions: with fixed positions the task "
                          "could be solved from position alone")
    if vectors.std() < 0.5:
        raise CheckFailed(f"the vectors hardly vary (standard deviation {vectors.std().item():.3f}): draw them at "
                          f"random, e.g. standard normal")
    ok("three distinct marked items at random positions, and the answer reads them in the order of the marks.")


# Exercise ex-block-identity: which cuts keep QK^T = sum_h Q_h K_h^T? -------------------------------------------

def _feature_blocks(x: torch.Tensor, H: int) -> torch.Tensor:
    """Consecutive feature blocks, the package's split: head h gets features h d .. (h+1) d - 1."""
    T, E = x.shape
    return x.view(T, H, E // H).transpose(0, 1)


def _strided_features(x: torch.Tensor, H: int) -> torch.Tensor:
    """Head h gets features h, h + H, h + 2H, ..."""
    T, E = x.shape
    return x.view(T, E // H, H).permute(2, 0, 1)


_SHUFFLE = torch.randperm(8, generator=torch.Generator().manual_seed(3))


def _shuffled_features(x: torch.Tensor, H: int) -> torch.Tensor:
    """Shuffle the feature axis by one fixed permutation, then cut it into consecutive blocks."""
    return _feature_blocks(x[:, _SHUFFLE], H)


def _time_halves(x: torch.Tensor, H: int) -> torch.Tensor:
    """Head h gets positions h T/H .. (h+1) T/H - 1 with all their features."""
    T, E = x.shape
    return x.view(H, T // H, E)


def _reshaped_straight(x: torch.Tensor, H: int) -> torch.Tensor:
    """(T, E) read straight into (H, T, E / H): the reshape bug of Section 4.2."""
    T, E = x.shape
    return x.reshape(H, T, E // H)


def _overlapping_blocks(x: torch.Tensor, H: int) -> torch.Tensor:
    """Blocks of E / H + 1 features that share one feature with the next block (windows wrap round)."""
    T, E = x.shape
    d = E // H
    return torch.stack([x[:, [(h * d + f) % E for f in range(d + 1)]] for h in range(H)])


CANDIDATE_SPLITS = {"feature blocks": _feature_blocks, "strided features": _strided_features,
                    "shuffled features": _shuffled_features, "time halves": _time_halves,
                    "reshaped straight": _reshaped_straight, "overlapping blocks": _overlapping_blocks}

_WHY = {"feature blocks": "the H blocks are a partition of the feature index set, so the sum over f can be "
                          "taken block by block",
        "strided features": "the features h, h+H, ... of the H heads are a partition too: any grouping of the "
                            "terms of a sum gives the same sum",
        "shuffled features": "a permutation followed by blocks is still a partition of the features",
        "time halves": "each head holds only T/H positions, so its products are (T/H) x (T/H) corners: the "
                       "scores between positions of different heads are never computed",
        "reshaped straight": "row i of a head holds half of the features of another position (row i of head 0 is "
                             "half of position i // 2), so Q_h K_h^T pairs up pieces of the wrong positions",
        "overlapping blocks": "the shared features are counted twice in the sum"}


def _split_identity_holds(split, Q: torch.Tensor, K: torch.Tensor, H: int) -> bool:
    Qh, Kh = split(Q, H), split(K, H)
    total = (Qh @ Kh.transpose(1, 2)).sum(0)                     # sum over heads of Q_h K_h^T
    full = Q @ K.T
    return total.shape == full.shape and bool(torch.allclose(total, full, rtol=0, atol=1e-10))


def check_split_identity(prediction) -> None:
    """``prediction``: the names of ``CANDIDATE_SPLITS`` for which sum_h Q_h K_h^T equals Q K^T (a set, list or
    tuple of names). Checked on random Q, K (T = 6 positions, E = 8 features, H = 2 heads)."""
    if isinstance(prediction, str) or not isinstance(prediction, (set, frozenset, list, tuple)):
        raise CheckFailed(f"expected a set of names from CANDIDATE_SPLITS, got {type(prediction).__name__} "
                          f"{prediction!r}")
    unknown = [p for p in prediction if p not in CANDIDATE_SPLITS]
    if unknown:
        raise CheckFailed(f"{unknown!r} not among the candidates; the names are {list(CANDIDATE_SPLITS)}")
    g = torch.Generator().manual_seed(41)
    Q, K = (torch.randn(6, 8, generator=g, dtype=torch.float64) for _ in range(2))
    holds = {name: _split_identity_holds(split, Q, K, 2) for name, split in CANDIDATE_SPLITS.items()}
    predicted = set(prediction)
    wrongly_in = [n for n in CANDIDATE_SPLITS if n in predicted and not holds[n]]
    wrongly_out = [n for n in CANDIDATE_SPLITS if n not in predicted and holds[n]]
    if wrongly_in or wrongly_out:
        lines = [f"'{n}': the sum differs from QK^T, because {_WHY[n]}" for n in wrongly_in]
        lines += [f"'{n}': the identity holds, because {_WHY[n]}" for n in wrongly_out]
        raise CheckFailed("; ".join(lines))
    ok("your set is exactly the candidates for which the identity holds.")


# Exercise ex-beam-predict: predict what beam search returns ----------------------------------------------------

BEAM_VOCAB = ["<pad>", "<bos>", "<eos>", "a", "b"]

# A language model given as a table: the prefix written so far -> the next token's probabilities.
# A prefix that is not in the table is followed by <eos> with probability 1.
BEAM_TABLE = {"": {"a": 0.55, "b": 0.45},
              "a": {"a": 0.40, "b": 0.35, "<eos>": 0.25},
              "b": {"<eos>": 0.50, "a": 0.30, "b": 0.20},
              "aa": {"a": 0.50, "<eos>": 0.30, "b": 0.20},
              "aaa": {"<eos>": 0.60, "a": 0.20, "b": 0.20},
              "ab": {"<eos>": 0.90, "a": 0.05, "b": 0.05}}
BEAM_WIDTH, BEAM_MAX_LEN = 3, 5


class TableLM:
    """``BEAM_TABLE`` behind the ``start`` / ``step`` interface of :mod:`attention_course.decoding`, so the
    package's own greedy decoding and beam search run on it. The state is the (B, t) tokens written so far."""

    def __init__(self, table: dict[str, dict[str, float]]):
        self.table = table

    def start(self, src: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return src.new_zeros((src.shape[0], 0))

    def step(self, state: torch.Tensor, prev: torch.Tensor):
        ids = state if state.shape[1] == 0 and bool((prev == BOS).all()) else torch.cat([state, prev[:, None]], 1)
        rows = []
        for row in ids.tolist():
            ended = any(i in (EOS, PAD) for i in row)
            dist = {} if ended else self.table.get("".join(BEAM_VOCAB[i] for i in row), {})
            p = torch.full((len(BEAM_VOCAB),), 1e-12, dtype=torch.float64)      # "impossible", but finite
            for token, prob in (dist or {"<eos>": 1.0}).items():
                p[BEAM_VOCAB.index(token)] = prob
            rows.append(p.log())
        return torch.stack(rows).float(), ids, None


def _as_output(answer, what: str) -> str:
    if not isinstance(answer, str):
        raise CheckFailed(f"expected {what} as a string of tokens such as 'ab' (without <eos>), got "
                          f"{type(answer).__name__} {answer!r}")
    text = answer.replace("<eos>", "").strip()
    if not text or set(text) - {"a", "b"}:
        raise CheckFailed(f"{what} {answer!r}: an output is one or more of the letters 'a' and 'b' (the <eos> "
                          f"after them is implied)")
    return text


def check_beam_prediction(greedy, beam, beam_normalised) -> None:
    """The outputs (strings of 'a' and 'b', before <eos>) that greedy decoding, beam search with
    ``BEAM_WIDTH`` hypotheses and no length normalisation, and the same beam with ``length_penalty=1``
    return for ``BEAM_TABLE``; computed with the package's :func:`greedy_decode` and :func:`beam_search`."""
    got = {"greedy": _as_output(greedy, "greedy"), "beam": _as_output(beam, "beam"),
           "beam_normalised": _as_output(beam_normalised, "beam_normalised")}
    model, src, lengths = TableLM(BEAM_TABLE), torch.zeros(1, 1, dtype=torch.long), torch.ones(1, dtype=torch.long)

    def text(ids: torch.Tensor) -> str:
        out = []
        for i in ids.tolist():
            if i == EOS:
                break
            out.append(BEAM_VOCAB[i])
        return "".join(out)

    def log_p(output: str) -> float:
        ids = torch.tensor([[BEAM_VOCAB.index(c) for c in output] + [EOS]])
        return float(sequence_log_prob(model, src, lengths, ids)[0])

    want = {"greedy": text(greedy_decode(model, src, lengths, BEAM_MAX_LEN)[0]),
            "beam": text(beam_search(model, src, lengths, BEAM_MAX_LEN, BEAM_WIDTH)[0][0]),
            "beam_normalised": text(beam_search(model, src, lengths, BEAM_MAX_LEN, BEAM_WIDTH, 1.0)[0][0])}

    def scores(output: str) -> str:
        lp = log_p(output)
        return f"'{output}<eos>': log p = {lp:.3f}, per token {lp / (len(output) + 1):.3f}"

    greedy_hint = (f" Beam search keeps the greedy path only while it ranks among the best {BEAM_WIDTH} partial "
                   f"outputs." if got["beam"] == want["greedy"] else "")
    first_wrong(got, want, {
        "greedy": lambda: (f"greedy decoding returns '{want['greedy']}', not '{got['greedy']}': it takes the most "
                           f"likely next token at every step and never looks back ({scores(want['greedy'])})"),
        "beam": lambda: (f"without length normalisation the beam returns '{want['beam']}', not '{got['beam']}': "
                         f"of the finished outputs it keeps, it takes the largest summed log-probability "
                         f"({scores(want['beam'])}; {scores(got['beam'])}).{greedy_hint}"),
        "beam_normalised": lambda: (f"with length_penalty = 1 the beam returns '{want['beam_normalised']}', not "
                                    f"'{got['beam_normalised']}': it ranks the finished outputs by log p divided by "
                                    f"their length, <eos> included ({scores(want['beam_normalised'])}; "
                                    f"{scores(got['beam_normalised'])})")})
    ok("all three outputs match what the package's greedy decoding and beam search return.")


# Exercise: predict what the KV cache holds and saves ---------------------------------------------

# The decoder whose cache the exercise asks about: batch, source length, output steps, model sizes.
KV_SETUP = {"batch": 2, "source_len": 7, "steps": 5, "d_model": 16, "num_heads": 4, "num_layers": 2}


def _kv_model(kv_cache: bool):
    torch.manual_seed(0)
    s = KV_SETUP
    return Transformer(11, 11, s["d_model"], s["num_heads"], s["num_layers"], 2 * s["d_model"], max_len=16,
                       kv_cache=kv_cache).eval()


def _row_counter(rows: dict, key: str):
    """A forward hook adding the rows (examples x positions) of a linear layer's input to ``rows[key]``."""
    def hook(module, inputs, output):
        rows[key] += inputs[0].shape[0] * inputs[0].shape[1]
    return hook


def kv_cache_counts() -> dict:
    """Measured on the package's :class:`~attention_course.models.transformer.Transformer` of ``KV_SETUP``,
    running ``steps`` calls of ``step`` with and without the cache: the shape of the first decoder layer's
    self-attention key cache at the end, and how many rows (positions x examples) that layer's self-attention
    and cross-attention ``W_K`` projected in all, counted with forward hooks."""
    s = KV_SETUP
    src = torch.randint(3, 11, (s["batch"], s["source_len"]), generator=torch.Generator().manual_seed(1))
    lengths = torch.full((s["batch"],), s["source_len"])
    counts = {}
    for cached in (True, False):
        model = _kv_model(cached)
        rows = {"self": 0, "cross": 0}
        layer = model.decoder[0]
        hooks = [layer.self_attn.W_K.register_forward_hook(_row_counter(rows, "self")),
                 layer.cross_attn.W_K.register_forward_hook(_row_counter(rows, "cross"))]
        with torch.no_grad():
            state = model.start(src, lengths)
            prev = torch.full((s["batch"],), BOS)
            for _ in range(s["steps"]):
                logits, state, _ = model.step(state, prev)
                prev = logits.argmax(-1)
        for h in hooks:
            h.remove()
        key = "cached" if cached else "recomputed"
        counts[key] = dict(rows)
        if cached:
            counts["cache_shape"] = tuple(state.self_kv[0][0].shape)
    return counts


def _as_shape(answer) -> tuple:
    if not isinstance(answer, (tuple, list, torch.Size)) or not all(isinstance(n, (int, np.integer)) for n in answer):
        raise CheckFailed(f"expected the cache's shape as a tuple of ints such as (1, 2, 3, 4), got {answer!r}")
    return tuple(int(n) for n in answer)


def _as_count(answer, what: str) -> int:
    value = as_float(answer, what) if not isinstance(answer, (int, np.integer)) else torch.tensor(float(answer))
    if value.numel() != 1 or float(value) != round(float(value)):
        raise CheckFailed(f"expected {what} as a whole number, got {answer!r}")
    return int(round(float(value)))


def check_kv_cache_prediction(cache_shape, self_rows_cached, self_rows_recomputed, cross_rows_recomputed) -> None:
    """Predictions for the decoder of ``KV_SETUP`` after ``steps`` output steps: the shape of the first decoder
    layer's self-attention key cache, and how many rows (positions x examples) that layer's self-attention
    ``W_K`` projects in all with the cache and without it, and its cross-attention ``W_K`` without it. Checked
    against :func:`kv_cache_counts`, measured on the package's model."""
    s = KV_SETUP
    got = {"cache_shape": _as_shape(cache_shape),
           "self_cached": _as_count(self_rows_cached, "self_rows_cached"),
           "self_recomputed": _as_count(self_rows_recomputed, "self_rows_recomputed"),
           "cross_recomputed": _as_count(cross_rows_recomputed, "cross_rows_recomputed")}
    m = kv_cache_counts()
    want = {"cache_shape": m["cache_shape"], "self_cached": m["cached"]["self"],
            "self_recomputed": m["recomputed"]["self"], "cross_recomputed": m["recomputed"]["cross"]}
    B, S, T, H = s["batch"], s["source_len"], s["steps"], s["num_heads"]
    shape = got["cache_shape"]
    shape_hint = (" The cache is kept per head: (batch, heads, positions so far, d_head)."
                  if len(shape) != 4 or shape[1] != H else
                  " After the last step the cache holds every position fed in so far, the last one included.")
    first_wrong(got, want, {
        "cache_shape": lambda: f"the key cache has shape {want['cache_shape']}, not {shape}.{shape_hint}",
        "self_cached": lambda: (f"with the cache the self-attention projects {want['self_cached']} rows, not "
                                f"{got['self_cached']}: each of the {T} steps projects only the newest position, "
                                f"for each of the {B} examples"),
        "self_recomputed": lambda: (f"without the cache the self-attention projects {want['self_recomputed']} rows, "
                                    f"not {got['self_recomputed']}: step t re-reads all t positions so far, so the "
                                    f"steps project 1 + 2 + ... + {T} positions per example"),
        "cross_recomputed": lambda: (f"without the cache the cross-attention projects {want['cross_recomputed']} "
                                     f"rows, not {got['cross_recomputed']}: every step projects the whole source ({S} "
                                     f"positions per example) again; with the cache it is projected once, "
                                     f"{m['cached']['cross']} rows")})
    ok("the cache's shape and all three row counts match those measured on the package's model.")
