"""What the tools' command lines share: run a writer, report what it wrote or why it could not."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def report_written(write: Callable[[], list[Path]], errors: tuple[type[Exception], ...] = (ValueError,)) -> int:
    """Call ``write()``; print each path it returns and give exit status 0, or print the error (one of
    ``errors``) and give 1."""
    try:
        written = write()
    except errors as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0
