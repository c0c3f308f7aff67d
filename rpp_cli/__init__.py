"""rpp: recall-paired preference (Diaz & Ferraro, SIGIR 2022) beside trec_eval's measures.

The Python API's names load on first use (PEP 562), so that the ``rpp`` command's entry point
(rpp_cli/__main__.py) runs before numpy and the rest are imported.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_HOMES = {"evaluate": ".api", "compare": ".api", "meta": ".api", "levels": ".api",
          "check": ".api_check", "Check": ".api_check",
          "RppNote": ".api", "MetaOptions": ".tasks.meta",
          "Results": ".results", "InputError": ".errors"}
__all__ = ["evaluate", "compare", "meta", "levels", "check", "Check", "MetaOptions", "Results",
           "InputError", "RppNote", "__version__"]

if TYPE_CHECKING:
    from .api import RppNote, compare, evaluate, levels, meta
    from .api_check import Check, check
    from .errors import InputError
    from .tasks.meta import MetaOptions
    from .results import Results


def __getattr__(name: str) -> Any:
    """The API's names, imported from their modules when first asked for."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The API's names, loaded or not, and the module's own dunders (tab completion)."""
    return sorted({*__all__, *(n for n in globals() if n.startswith("__"))})
