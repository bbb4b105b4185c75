"""Chapter 3 benchmark: the package's attention against torch's fused function, side by side.

``sdpa.time_ratio_vs_torch`` is the median time of one forward plus backward pass of
:func:`attention_course.attention.scaled_dot_product_attention` divided by the median time of the
same pass through ``torch.nn.functional.scaled_dot_product_attention``, at batch 8, T = 256,
d = 64, float32, no mask. The two are timed alternately in one run, so a busy machine slows both
alike. Target: at most 1.5. (Their outputs agree to 1e-6 in float64: a unit test checks that.)
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

from ..attention import scaled_dot_product_attention

__all__ = ["run", "time_forward_backward"]

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
    times: dict[str, list[float]] = {"package": [], "torch": []}
    fns = {"package": _package, "torch": _torch}
    for i in range(warmup + repeats):
        for name, fn in fns.items():
            q.grad = k.grad = v.grad = None
            start = time.perf_counter()
            fn(q, k, v).backward(grad_out)
            elapsed = time.perf_counter() - start
            if i >= warmup:
                times[name].append(elapsed)
    return {name: statistics.median(ts) for name, ts in times.items()}


def run() -> dict[str, float]:
    med = time_forward_backward()
    return {"sdpa.time_ratio_vs_torch": round(med["package"] / med["torch"], 3),
            "sdpa.package_ms": round(1e3 * med["package"], 3),
            "sdpa.torch_ms": round(1e3 * med["torch"], 3)}
