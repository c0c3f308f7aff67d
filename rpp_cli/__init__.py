"""rpp: recall-paired preference (Diaz & Ferraro, SIGIR 2022) beside trec_eval's measures."""
__version__ = "0.1.0"

from .api import compare, evaluate, meta  # noqa: E402  (the Python API)
from .results import Results  # noqa: E402

__all__ = ["evaluate", "compare", "meta", "Results", "__version__"]
