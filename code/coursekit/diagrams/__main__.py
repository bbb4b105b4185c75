"""``python -m coursekit.diagrams [--check] [--out book/diagrams]``: write every diagram, or check them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._cli import report_written
from . import stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coursekit.diagrams",
                                     description="Draw the course's diagrams into SVG files.")
    parser.add_argument("--out", type=Path, default=Path("book/diagrams"))
    parser.add_argument("--check", action="store_true",
                        help="only redraw in memory; exit 1 naming every SVG that is missing or out of date")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale(args.out)
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("run: python -m coursekit.diagrams  (make diagrams)", file=sys.stderr)
        return 1 if problems else 0
    return report_written(lambda: write(args.out))


if __name__ == "__main__":
    raise SystemExit(main())
