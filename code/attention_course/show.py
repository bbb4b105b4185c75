"""Show the package's own source in a notebook, so the code a reader sees is the tested code."""

from __future__ import annotations

import inspect

from IPython.display import Markdown

__all__ = ["show_source"]


def show_source(obj) -> Markdown:
    """A Markdown code block holding ``obj``'s source, rendered by Jupyter and by the book."""
    return Markdown(f"```python\n{inspect.getsource(obj).rstrip()}\n```")
