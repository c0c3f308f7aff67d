"""rpp: recall-paired preference (Diaz & Ferraro, SIGIR 2022) beside trec_eval's measures."""
__version__ = "0.1.0"

from .api import compare, evaluate, meta  # noqa: E402  (the Python API)
from .errors import InputError  # noqa: E402
from .metaeval import MetaOptions  # noqa: E402
from .results import Results  # noqa: E402

__all__ = ["evaluate", "compare", "meta", "MetaOptions", "Results", "InputError", "__version__"]
