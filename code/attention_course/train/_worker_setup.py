"""Imported once by :mod:`~attention_course.train.parallel`'s fork server, never by user code.

Setting up a process as the chapters do (:func:`~attention_course.seed_everything`: one thread,
deterministic algorithms) costs more than a second the first time. Done here, in the server,
every worker forked from it starts set up.
"""

from ..repro import seed_everything

seed_everything()
