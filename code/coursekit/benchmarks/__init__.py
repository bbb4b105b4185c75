"""Timed measurements for ``make bench`` that must not live in a notebook's stored outputs.

Wall-clock times change from run to run, so a chapter never prints or glues them; instead a
module here, one per chapter, defines ``run() -> dict[str, float]`` returning metrics by their
dotted names, and ``tests/bench.py`` calls every such module. Deterministic metrics (accuracies)
are glued by the chapters themselves and collected from the executed notebooks.
"""

import importlib
import pkgutil


def run_all() -> dict[str, float]:
    """Run every benchmark module's ``run()`` and merge the metrics."""
    metrics: dict[str, float] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):          # helpers, not benchmarks
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        metrics.update(module.run())
    return metrics
