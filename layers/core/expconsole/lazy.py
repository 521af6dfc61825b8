"""A module imported at the first read of one of its attributes (the standard library's LazyLoader).

For a function's cold start: a module whose classes only some routes use (an entity's request
bodies) is named at import and created by the first request that needs it. The route handlers
name its classes in string annotations (`from __future__ import annotations`), which Powertools
evaluates when it first resolves that route, so a read never creates them.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """The module `name`: the one already imported, or one whose code runs at its first attribute read.

    The recipe of importlib's documentation ("Implementing lazy imports"): thread-safe since
    Python 3.12. A module that fails to import fails at that first read, with its own error."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
