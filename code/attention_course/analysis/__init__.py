"""Measurements on trained models and data: ``probes``, ``gradients``, ``importance``, ``adversarial``
(is attention explanation?), ``cca`` (canonical correlation analysis), ``retrieval`` (a retrieval
head against CCA).
"""
