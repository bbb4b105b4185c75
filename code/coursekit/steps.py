"""Time one step of ``make test`` and record it, so that ``make bench`` can report each step's time.

``python -m coursekit.steps --log _build/test_steps.json -- make --no-print-directory unit`` runs the
command, adds ``{"unit": seconds}`` (the command's last word names the step) to the log, with the
machine's CPU model, and exits with the command's status: a failed step still stops ``make test``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["cpu_model", "record", "main"]


def cpu_model() -> str:
    """The CPU's model name as lscpu reports it (from /proc/cpuinfo), or what the platform module knows."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def record(log: Path, step: str, seconds: float, status: int) -> dict:
    """Add one step to the log (created if missing); return the whole log."""
    data = json.loads(log.read_text()) if log.is_file() else {}
    data.setdefault("cpu", cpu_model())
    data.setdefault("steps", {})[step] = {"seconds": round(seconds, 1), "status": status}
    data["seconds"] = round(sum(s["seconds"] for s in data["steps"].values()), 1)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(json.dumps(data, indent=2) + "\n")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.steps", description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, required=True, help="the JSON file the times are added to")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command of the step")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the step's command after --")
    start = time.perf_counter()
    status = subprocess.call(command)
    seconds = time.perf_counter() - start
    record(args.log, command[-1], seconds, status)
    print(f"step {command[-1]}: {seconds:.0f} s" + ("" if status == 0 else f", exit status {status}"), file=sys.stderr)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
