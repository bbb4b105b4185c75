"""Chapter 5: decoding with a KV cache against recomputing the decoder over the whole output at every step.

``kv_cache.speedup.T<n>``  seconds of greedy decoding of ``n`` output tokens with full recomputation
    divided by the seconds with the KV cache, same model, same source, same tokens (checked), median of
    alternate repeats. The model is the package's :class:`~attention_course.models.transformer.Transformer`
    at the date model's size (d_model 64, 4 heads, 2 + 2 layers, d_ff 128), untrained (the cost of a step
    does not depend on the weights), batch 16, sources of 16 tokens, so decoding dominates. Every step
    runs: greedy decoding goes on to ``n`` tokens whether or not a row has ended. Target: at least 3 at
    the longest ``n``.
"""

from __future__ import annotations

import statistics
import time

import torch
from attention_course.models.transformer import Transformer

__all__ = ["run", "time_decoding", "LENGTHS"]

LENGTHS = (16, 64, 256)
VOCAB, BATCH, SOURCE_LEN = 20, 16, 16


def time_decoding(n: int, repeats: int = 3, seed: int = 0) -> dict[str, float]:
    """Median seconds of ``greedy_decode`` to ``n`` tokens, with and without the cache, timed alternately."""
    torch.manual_seed(seed)
    model = Transformer(VOCAB, VOCAB, max_len=max(LENGTHS) + 1).eval()
    src = torch.randint(3, VOCAB, (BATCH, SOURCE_LEN), generator=torch.Generator().manual_seed(seed))
    lengths = torch.full((BATCH,), SOURCE_LEN)
    times: dict[str, list[float]] = {"cache": [], "recompute": []}
    ids = {}
    for _ in range(repeats):
        for name, cache in (("cache", True), ("recompute", False)):
            model.kv_cache = cache
            start = time.perf_counter()
            ids[name] = model.greedy_decode(src, lengths, n)
            times[name].append(time.perf_counter() - start)
    if not torch.equal(ids["cache"], ids["recompute"]):
        raise AssertionError(f"cached and recomputed decoding disagree at n={n}")
    return {name: statistics.median(t) for name, t in times.items()}


def run() -> dict[str, float]:
    metrics = {}
    for n in LENGTHS:
        med = time_decoding(n)
        metrics[f"kv_cache.speedup.T{n}"] = round(med["recompute"] / med["cache"], 2)
        metrics[f"kv_cache.cache_ms.T{n}"] = round(1e3 * med["cache"], 2)
    return metrics
