"""rpp: recall-paired preference (Diaz & Ferraro, SIGIR 2022) beside trec_eval's measures."""
__version__ = "0.1.0"
