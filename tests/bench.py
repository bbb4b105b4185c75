"""Benchmark: execute every chapter, time the book build, collect the chapters' metrics.

Writes ``_build/bench.json``::

    {"chapters": {"<notebook stem>": {"seconds": float, "peak_rss_mib": float}},
     "book_build_seconds": float,
     "metrics": {"<name>": number}}

A chapter publishes a metric by gluing a number under a dotted name, for example
``glue("bottleneck.plain.token_accuracy.longest", 0.2, display=False)``; every glued number
whose name contains a dot is collected. Timed metrics, which must not be stored in a notebook,
come from :mod:`coursekit.benchmarks`. Run with ``make bench``.
"""

from __future__ import annotations

import ast
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GLUE_MIME = "application/papermill.record/text/plain"
TARGETS = {"seconds": 90.0, "peak_rss_mib": 2048.0, "book_build_seconds": 60.0}


def run_one(path: Path) -> None:
    """Child process: execute one notebook in memory, print timing, peak RSS and metrics as JSON."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    # The kernel is this process's child and has been reaped: its peak RSS is in RUSAGE_CHILDREN.
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    metrics = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name", "")
            text = out.get("data", {}).get(GLUE_MIME)
            if "." in name and text is not None:
                try:
                    value = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    continue
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    metrics[name] = value
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_kib / 1024, "metrics": metrics}))


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--run-one":
        run_one(Path(sys.argv[2]))
        return 0
    report = {"chapters": {}, "book_build_seconds": None, "metrics": {}}
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        proc = subprocess.run([sys.executable, __file__, "--run-one", str(nb)], capture_output=True,
                              text=True, cwd=ROOT)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"executing {nb.name} failed")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        report["chapters"][nb.stem] = {k: round(result[k], 2) for k in ("seconds", "peak_rss_mib")}
        report["metrics"].update(result["metrics"])
    from attention_course import seed_everything
    from coursekit.benchmarks import run_all

    seed_everything(0)
    report["metrics"].update(run_all())
    out = ROOT / "_build" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")        # kept even if the book build below fails
    jb = Path(sys.executable).with_name("jupyter-book")
    start = time.perf_counter()
    build = subprocess.run([str(jb), "build", str(ROOT), "--all", "-n", "-W", "--keep-going", "-q"],
                           cwd=ROOT, capture_output=True, text=True)
    if build.returncode != 0:
        print((build.stdout + build.stderr)[-3000:], file=sys.stderr)
        raise SystemExit(f"the book build failed; the chapters' figures are in {out.relative_to(ROOT)}")
    report["book_build_seconds"] = round(time.perf_counter() - start, 2)
    out.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{'chapter':32s} {'seconds':>8s} {'peak MiB':>9s}   (targets: <= 90 s, <= 2048 MiB)")
    for stem, row in report["chapters"].items():
        flag = "" if row["seconds"] <= TARGETS["seconds"] and row["peak_rss_mib"] <= TARGETS["peak_rss_mib"] \
            else "  OVER TARGET"
        print(f"{stem:32s} {row['seconds']:8.1f} {row['peak_rss_mib']:9.0f}{flag}")
    print(f"{'book build':32s} {report['book_build_seconds']:8.1f}             (target: <= 60 s)")
    for name, value in sorted(report["metrics"].items()):
        print(f"{name:56s} {value}")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
