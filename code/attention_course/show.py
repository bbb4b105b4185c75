"""Show the package's own source in a notebook, so the code a reader sees is the tested code."""

from __future__ import annotations

import inspect
import textwrap

from IPython.display import Markdown

__all__ = ["show_source"]


def show_source(obj, start: str | None = None, lines: int | None = None) -> Markdown:
    """A Markdown code block holding ``obj``'s source, rendered by Jupyter and by the book.

    With ``start`` (and ``lines``), only the core of a long function: ``lines`` source lines (all the
    rest without ``lines``) from the first line containing ``start``, dedented."""
    source = inspect.getsource(obj).rstrip()
    if start is not None:
        body = source.splitlines()
        first = next((i for i, line in enumerate(body) if start in line), None)
        if first is None:
            raise ValueError(f"no line of {getattr(obj, '__qualname__', obj)!r} contains {start!r}")
        stop = len(body) if lines is None else first + lines
        source = textwrap.dedent("\n".join(body[first:stop]))
    return Markdown(f"```python\n{source}\n```")
