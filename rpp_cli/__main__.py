"""The ``rpp`` command's entry point, also ``python -m rpp_cli``.

Ctrl-C while the modules load, before the CLI puts its own handler in place, ends rpp as
SIGINT's default does (status 130 in a shell), not with a traceback from whichever module was
loading: the package's ``__init__`` loads nothing heavy, so this runs first.
"""
import signal

if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run() -> None:
    """Load the CLI and run it."""
    from .cli import main

    main()


if __name__ == "__main__":
    run()
