"""coursekit: the book's own tooling, apart from the package students import.

``student`` (the student edition, ``make student``), ``slides`` (offline reveal.js decks,
``make slides``), ``coursemap`` (the course-map page from the chapters' metadata, ``make coursemap``)
and ``benchmarks`` (timed measurements for ``make bench``). Each reads the chapters or calls
:mod:`attention_course`; nothing in :mod:`attention_course` imports it.
"""
