"""``python -m rpp_cli``."""
from .cli import main

main()
