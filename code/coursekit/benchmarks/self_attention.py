"""Chapter 3 benchmark: the package's attention against torch's fused function, side by side.

``sdpa.time_ratio_vs_torch`` is the median time of one forward plus backward pass of
:func:`attention_course.layers.attention.scaled_dot_product_attention` divided by the median time of the
same pass through ``torch.nn.functional.scaled_dot_product_attention``, at batch 8, T = 256,
d = 64, float32, no mask. The two are timed alternately in one run, so a busy machine slows both
alike. Target: at most 1.1. (Their outputs agree to 1e-6 in float64: a unit test checks that.)

``self_attention.two_threads.speedup.gru`` and ``self_attention.two_threads.speedup.attention``: how
many times faster a forward pass of a GRU layer and of a self-attention layer (Chapter 3's encoders:
batch 4, T = 1024, d = 64) runs on two threads than on one, the thread counts alternated in one run.
The recurrence's T small steps cannot be shared between threads; attention's few large matrix
products can, so the second should be the larger (on an otherwise idle machine).
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F
from attention_course.layers.attention import scaled_dot_product_attention
from attention_course.layers.self_attention import SelfAttention

from ._clock import median_backward_seconds

__all__ = ["run", "time_forward_backward", "thread_speedups"]

BATCH, T, D = 8, 256, 64


def _package(q, k, v):
    return scaled_dot_product_attention(q, k, v)[0]


def _torch(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)


def time_forward_backward(repeats: int = 30, warmup: int = 3, seed: int = 0) -> dict[str, float]:
    """Median seconds of forward + backward for each implementation, timed alternately."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(BATCH, T, D, generator=g).requires_grad_() for _ in range(3))
    grad_out = torch.randn(BATCH, T, D, generator=g)
    return median_backward_seconds({"package": lambda: _package(q, k, v), "torch": lambda: _torch(q, k, v)},
                                   (q, k, v), grad_out, repeats, warmup)


def thread_speedups(T: int = 1024, batch: int = 4, d: int = 64, repeats: int = 7,
                    seed: int = 0) -> dict[str, float]:
    """Median forward time on one thread / on two threads, for a GRU layer and a self-attention layer."""
    torch.manual_seed(seed)
    layers = {"gru": torch.nn.GRU(d, d, batch_first=True), "attention": SelfAttention(d)}
    x = torch.randn(batch, T, d)
    before = torch.get_num_threads()
    times: dict[tuple[str, int], list[float]] = {(name, n): [] for name in layers for n in (1, 2)}
    try:
        with torch.no_grad():
            for i in range(repeats + 1):                          # round 0 is a warm-up
                for n in (1, 2):
                    torch.set_num_threads(n)
                    for name, layer in layers.items():
                        start = time.perf_counter()
                        layer(x)
                        if i:
                            times[name, n].append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(before)
    med = {key: statistics.median(ts) for key, ts in times.items()}
    return {name: med[name, 1] / med[name, 2] for name in layers}


def run() -> dict[str, float]:
    med = time_forward_backward()
    speedup = thread_speedups()
    return {"sdpa.time_ratio_vs_torch": round(med["package"] / med["torch"], 3),
            "sdpa.package_ms": round(1e3 * med["package"], 3),
            "sdpa.torch_ms": round(1e3 * med["torch"], 3),
            "self_attention.two_threads.speedup.gru": round(speedup["gru"], 2),
            "self_attention.two_threads.speedup.attention": round(speedup["attention"], 2)}
