"""Experimentation console: the shared library (the core Lambda layer).

Kept import-light on purpose: CRUD functions import this package on cold start.
"""

__version__ = "0.1.0"
