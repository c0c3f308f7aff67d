"""What every engine shares: the :class:`Engine` interface, :class:`Lazy` shards, the
:class:`Inline` engine and the engine of the command being run (:func:`current`)."""
from __future__ import annotations

from typing import Callable, Iterator, Protocol, Sequence, TypeVar

from ..errors import EXIT_WORKER_DIED, InputError
from ..progress import progress

T = TypeVar("T")
U = TypeVar("U")


class WorkerDied(InputError):
    """A worker process (or Dask worker) died while it held a shard: never a hang."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=EXIT_WORKER_DIED)


class Engine(Protocol):
    """Runs a pure function over shards; ``workers`` is how many run at once."""

    workers: int

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` of every shard, yielded in shard order."""


class Lazy(Sequence):
    """``size`` shards built on demand by ``build(i)`` (in the worker that runs shard i)."""

    def __init__(self, size: int, build: Callable[[int], object]) -> None:
        self.size, self.build = size, build

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i):  # type: ignore[override]
        if not 0 <= i < self.size:
            raise IndexError(i)
        return self.build(i)


class Inline:
    """Every shard in the calling thread, one after the other (``-j 1``)."""

    workers = 1

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` in order, in this thread."""
        made = (fn(shards[i]) for i in range(len(shards)))
        return progress(made, label, length=len(shards)) if label else made


_ENGINE: list[Engine] = []  # the active engine (a stack of one; empty: Inline)


def current() -> Engine:
    """The engine of the command being run (Inline outside :func:`~rpp_cli.engine.session`)."""
    return _ENGINE[-1] if _ENGINE else Inline()
