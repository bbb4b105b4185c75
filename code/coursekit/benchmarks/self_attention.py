"""Chapter 3 benchmark: the package's attention against torch's fused function, side by side.

``sdpa.time_ratio_vs_torch`` is the median time of one forward plus backward pass of
:func:`attention_course.layers.attention.scaled_dot_product_attention` divided by the median time of the
same pass through ``torch.nn.functional.scaled_dot_product_attention``, at batch 8, T = 256,
d = 64, float32, no mask. The two are timed alternately in one run, so a busy machine slows both
alike. Target: at most 1.5. (Their outputs agree to 1e-6 in float64: a unit test checks that.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from attention_course.layers.attention import scaled_dot_product_attention

from ._clock import median_backward_seconds

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
    return median_backward_seconds({"package": lambda: _package(q, k, v), "torch": lambda: _torch(q, k, v)},
                                   (q, k, v), grad_out, repeats, warmup)


def run() -> dict[str, float]:
    med = time_forward_backward()
    return {"sdpa.time_ratio_vs_torch": round(med["package"] / med["torch"], 3),
            "sdpa.package_ms": round(1e3 * med["package"], 3),
            "sdpa.torch_ms": round(1e3 * med["torch"], 3)}
