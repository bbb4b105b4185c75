"""Benchmark: execute every notebook, time the book build, collect the chapters' metrics.

Writes ``_build/bench.json``::

    {"chapters": {"<notebook stem>": {"seconds": float, "peak_rss_mib": float,
                                      "kind": "lesson" | "evidence", "reading_minutes": float}},
     "notebooks_seconds": float,            # all notebooks together
     "book_build_seconds": float,
     "targets": {"<name>": number},         # TARGETS below
     "over": ["<what is over its target>", ...],
     "metrics": {"<name>": number},
     "cpu": "<model name>",                 # the CPU the benchmark ran on (lscpu's model name)
     "make_test": {"cpu": ..., "seconds": float, "steps": {"<step>": {"seconds": float, "status": int}}}}

``make_test`` is read from ``_build/test_steps.json``, which the last ``make test`` on this checkout wrote
(:mod:`coursekit.steps` times each of its steps); it is absent if ``make test`` has not run here.

``kind`` and ``reading_minutes`` (the page measure of :mod:`coursekit.lessons`: prose words / 200 +
visible code lines / 10, counted on the stored notebook) are given for every notebook; the reading
target applies to lessons. Targets on this 2-core machine: a lesson runs in <= 60 s, an evidence
notebook in <= 240 s, all notebooks together in <= 900 s, a lesson reads in <= 24 minutes. The
table printed at the end flags every value over its target (the run itself does not fail on them).

A chapter publishes a metric by gluing a number under a dotted name, for example
``glue("bottleneck.plain.token_accuracy.longest", 0.2, display=False)``; every glued number
whose name contains a dot is collected. Timed metrics, which must not be stored in a notebook,
come from :mod:`coursekit.benchmarks`. Run with ``make bench``; ``--chapters DIR``, ``--out FILE``,
``--no-book`` and ``--no-benchmarks`` run a part of it (for a quick look, or a test).
"""

from __future__ import annotations

import argparse
import ast
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GLUE_MIME = "application/papermill.record/text/plain"
TARGETS = {"lesson_seconds": 60.0, "evidence_seconds": 240.0, "notebooks_seconds": 900.0,
           "reading_minutes": 24.0, "peak_rss_mib": 2048.0, "book_build_seconds": 60.0}


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


def describe(path: Path) -> dict:
    """What the stored notebook says before it runs: its kind and its reading minutes."""
    from coursekit.lessons import is_evidence, read, reading_minutes

    nb = read(path)
    return {"kind": "evidence" if is_evidence(nb) else "lesson", "reading_minutes": round(reading_minutes(nb), 1)}


def _row_over(stem: str, row: dict) -> list[tuple[str, str]]:
    """``(flag, sentence)`` for each value of one notebook's row over its target."""
    limit, over = TARGETS[f"{row['kind']}_seconds"], []
    if row["seconds"] > limit:
        what = "a lesson" if row["kind"] == "lesson" else "an evidence notebook"
        over.append(("SLOW", f"{stem}: runs {row['seconds']:.1f} s, over the {limit:.0f} s of {what}"))
    if row["kind"] == "lesson" and row["reading_minutes"] > TARGETS["reading_minutes"]:
        over.append(("LONG READ", f"{stem}: reads in {row['reading_minutes']:.1f} min, over the "
                                  f"{TARGETS['reading_minutes']:.0f} of a lesson"))
    if row["peak_rss_mib"] > TARGETS["peak_rss_mib"]:
        over.append(("MEMORY", f"{stem}: peak {row['peak_rss_mib']:.0f} MiB, over {TARGETS['peak_rss_mib']:.0f}"))
    return over


def _totals(report: dict) -> list[tuple[str, float, float]]:
    """``(label, value, target)`` of the totals the report has so far."""
    return [(label, report[key], TARGETS[key]) for label, key in
            (("all notebooks", "notebooks_seconds"), ("book build", "book_build_seconds"))
            if report.get(key) is not None]


def over_targets(report: dict) -> list[str]:
    """One sentence for every value of the report over its target."""
    over = [sentence for stem, row in report["chapters"].items() for _, sentence in _row_over(stem, row)]
    return over + [f"{label}: {value:.1f} s, over {target:.0f} s" for label, value, target in _totals(report)
                   if value > target]


def table(report: dict) -> str:
    """The notebooks with kind, seconds, peak memory and reading minutes, each against its target and
    flagged when over it; then the totals."""
    lines = [f"{'notebook':34s} {'kind':8s} {'seconds':>8s} {'target':>7s} {'peak MiB':>9s} {'reading min':>12s}",
             f"{'':60s} {'<= ' + format(TARGETS['peak_rss_mib'], '.0f'):>9s} "
             f"{'<= ' + format(TARGETS['reading_minutes'], '.0f') + ' lesson':>12s}"]
    for stem, row in report["chapters"].items():
        flags = [flag for flag, _ in _row_over(stem, row)]
        limit = "<= " + format(TARGETS[f"{row['kind']}_seconds"], ".0f")
        lines.append(f"{stem:34s} {row['kind']:8s} {row['seconds']:8.1f} {limit:>7s} {row['peak_rss_mib']:9.0f} "
                     f"{row['reading_minutes']:12.1f}" + (f"   OVER: {', '.join(flags)}" if flags else ""))
    for label, value, target in _totals(report):
        lines.append(f"{label:34s} {'':8s} {value:8.1f} {'<= ' + format(target, '.0f'):>7s}"
                     + ("   OVER" if value > target else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--run-one":
        run_one(Path(argv[1]))
        return 0
    parser = argparse.ArgumentParser(prog="tests/bench.py", description="Time every notebook and the book build.")
    parser.add_argument("--chapters", type=Path, default=ROOT / "chapters")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "bench.json")
    parser.add_argument("--no-book", action="store_true", help="do not time the book build")
    parser.add_argument("--no-benchmarks", action="store_true", help="do not run coursekit.benchmarks")
    args = parser.parse_args(argv)
    from coursekit.steps import cpu_model

    report = {"chapters": {}, "notebooks_seconds": None, "book_build_seconds": None, "targets": TARGETS,
              "over": [], "metrics": {}, "cpu": cpu_model()}
    steps_log = ROOT / "_build" / "test_steps.json"
    if steps_log.is_file():
        report["make_test"] = json.loads(steps_log.read_text())
    for nb in sorted(args.chapters.glob("*.ipynb")):
        proc = subprocess.run([sys.executable, __file__, "--run-one", str(nb)], capture_output=True,
                              text=True, cwd=ROOT)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"executing {nb.name} failed")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        report["chapters"][nb.stem] = {**{k: round(result[k], 2) for k in ("seconds", "peak_rss_mib")},
                                       **describe(nb)}
        report["metrics"].update(result["metrics"])
    report["notebooks_seconds"] = round(sum(row["seconds"] for row in report["chapters"].values()), 2)
    if not args.no_benchmarks:
        from attention_course import seed_everything
        from coursekit.benchmarks import run_all

        seed_everything(0)
        report["metrics"].update(run_all())
    out = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    report["over"] = over_targets(report)
    out.write_text(json.dumps(report, indent=2) + "\n")        # kept even if the book build below fails
    if not args.no_book:
        jb = Path(sys.executable).with_name("jupyter-book")
        start = time.perf_counter()
        build = subprocess.run([str(jb), "build", str(ROOT), "--all", "-n", "-W", "--keep-going", "-q"],
                               cwd=ROOT, capture_output=True, text=True)
        if build.returncode != 0:
            print((build.stdout + build.stderr)[-3000:], file=sys.stderr)
            raise SystemExit(f"the book build failed; the notebooks' timings and metrics are in {out}")
        report["book_build_seconds"] = round(time.perf_counter() - start, 2)
        report["over"] = over_targets(report)
        out.write_text(json.dumps(report, indent=2) + "\n")

    print(table(report))
    if "make_test" in report:
        run = report["make_test"]
        print(f"\nthe last make test here ({run.get('cpu', '?')}): {run.get('seconds', 0):.0f} s")
        for step, row in run.get("steps", {}).items():
            print(f"  {step:14s} {row['seconds']:8.1f} s" + ("" if row["status"] == 0 else f"  (exit {row['status']})"))
    for name, value in sorted(report["metrics"].items()):
        print(f"{name:56s} {value}")
    if report["over"]:
        print(f"\n{len(report['over'])} over target:\n  " + "\n  ".join(report["over"]))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
