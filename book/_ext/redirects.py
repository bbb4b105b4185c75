"""Keep old links working: a page that was renamed leaves behind a small HTML page that forwards to its new name.

``_config.yml`` lists the renames under ``sphinx: config: course_redirects`` as ``old: new`` document names
(without ``.html``). After an HTML build, each old name gets a page with a ``<meta http-equiv="refresh">``
and a plain link to the new one, relative, so it works on any host and from the file system. An old name
that is still a page of the book, or a new name that is not, fails the build.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from sphinx.errors import ConfigError

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Moved: {title}</title>
<link rel="canonical" href="{target}">
<meta http-equiv="refresh" content="0; url={target}">
</head>
<body>
<p>This page has moved to <a href="{target}">{title}</a>.</p>
</body>
</html>
"""


def _write(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    docs = set(app.env.found_docs)
    out = Path(app.outdir)
    for old, new in app.config.course_redirects.items():
        if old in docs:
            raise ConfigError(f"course_redirects: {old!r} is still a page of the book; remove its redirect")
        if new not in docs:
            raise ConfigError(f"course_redirects: {old!r} points to {new!r}, which is not a page of the book")
        page = out / f"{old}.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        target = os.path.relpath(out / f"{new}.html", page.parent).replace(os.sep, "/")
        page.write_text(_PAGE.format(target=html.escape(target), title=html.escape(new.rsplit("/", 1)[-1])),
                        encoding="utf-8")


def setup(app):
    app.add_config_value("course_redirects", {}, "html")
    app.connect("build-finished", _write)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
