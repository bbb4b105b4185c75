"""Experiments: the functions that join a task and a model, one module per task.

``length`` (the length experiment on digit strings), ``dates`` (the date translator and the date
Transformer), ``pronoun``, ``reviews``, ``sets``, ``series``.
"""
