"""What a run's reader (io/runs.py RunStream) holds until it hands it on: the rows of queries
not closed yet, as they were read (:class:`Pending`), and a query too long for that, in
compact form (:class:`LongQuery`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core import Column, QueryDocs
from ..core.table import Growing, GrowingColumn, Table, packed_column

if TYPE_CHECKING:
    from .runs import Run


class Pending:
    """The rows a RunStream holds: stretches of one qid, in file order, with the file row
    each stretch starts at. A row costs its docno's bytes, 2 bytes of length and 8 of score
    (and its rank's bytes and 2 more for ndeval)."""

    def __init__(self, keep_rank: bool) -> None:
        self.keep_rank = keep_rank
        self.open = -1  # the qid code of the file's last row (its query may go on)
        self._empty()

    def _empty(self) -> None:
        """No row held, in new buffers."""
        self.docno, self.rank = GrowingColumn(), GrowingColumn()
        self.score = Growing(np.float64)
        self.qid, self.start, self.row = Growing(np.int32), Growing(np.int64), Growing(np.int64)
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, table: Table, kept: np.ndarray, score: np.ndarray, code: np.ndarray,
            new: np.ndarray, row0: int) -> None:
        """Hold ``table``'s rows ``kept`` (file rows row0 + kept), ``new`` the kept rows
        that start a stretch (the first continues the last stretch unless it is in ``new``)."""
        whole = len(kept) == len(table)
        self.docno.append(table.column(2) if whole else table.column(2).take(kept))
        if self.keep_rank:
            self.rank.append(table.column(3) if whole else table.column(3).take(kept))
        self.score.append(score if whole else score[kept])
        self.qid.append(code[kept[new]])
        self.start.append(new + self.n)
        self.row.append(kept[new] + row0)
        self.n += len(kept)

    def closed(self) -> Run | None:
        """The longest prefix of stretches whose queries have no stretch after it and are
        closed (not the file's last qid), taken out as a batch (a Run); None when there is
        none."""
        qid = self.qid.array()
        last = np.zeros(int(qid.max()) + 1, dtype=np.int64)
        np.maximum.at(last, qid, np.arange(len(qid)))
        reach = np.maximum.accumulate(last[qid])
        ok = np.flatnonzero(reach == np.arange(len(qid)))
        ok = ok[qid[ok] != self.open] if len(ok) else ok
        del qid
        if len(ok) == 0:
            return None
        return self._take(int(ok[-1]) + 1)

    def all(self) -> Run:
        """Every row held, as a Run."""
        return self._take(len(self.qid.array()))

    def _take(self, stretches: int) -> Run:
        """The first ``stretches`` stretches as a Run, in the buffers they were held in
        (cut off, not copied); the rest stay, copied into buffers of their own."""
        from .runs import Run  # (runs.py imports this module: the other way, when it runs)

        start = self.start.array()
        rows = int(start[stretches]) if stretches < len(start) else self.n
        del start
        lens = _cut(self.docno.lens, rows)
        docno = _cut_bytes(self.docno.data, int(lens.sum(dtype=np.int64)))
        rank = None
        if self.keep_rank:
            rank_lens = _cut(self.rank.lens, rows)
            rank = packed_column(_cut_bytes(self.rank.data, int(rank_lens.sum(dtype=np.int64))),
                                 rank_lens)
        run = Run("", None, _cut(self.qid, stretches), _cut(self.start, stretches), [], docno,
                  lens, _cut(self.score, rows), None, rank,  # type: ignore[arg-type]
                  first_rows=_cut(self.row, stretches))
        self.start.buffer = bytearray(memoryview(self.start.array() - rows).cast("B"))
        self.n -= rows
        return run

    def extract(self, qid: int) -> tuple[Column, np.ndarray, np.ndarray, np.ndarray]:
        """Take the rows of ``qid`` out: their docnos, their scores, and the file row and
        length of each of their stretches; the other rows stay, in order, in buffers of
        their own (a copy of what stays, once per query that grows long)."""
        qid_of, start, row = self.qid.array(), self.start.array(), self.row.array()
        length = np.diff(start, append=self.n)
        mine = qid_of == qid
        rows = np.repeat(mine, length)
        docno = packed_column(self.docno.data.buffer, self.docno.lens.array().copy())
        rank = packed_column(self.rank.data.buffer, self.rank.lens.array().copy())
        score = self.score.array()
        taken = (docno.take(np.flatnonzero(rows)), score[rows], row[mine].copy(),
                 length[mine].copy())
        stay = np.flatnonzero(~rows)
        kept = (qid_of[~mine].copy(), row[~mine].copy(), length[~mine], score[stay].copy())
        del qid_of, start, row, score
        self._empty()
        qids, rows_at, lengths, scores = kept
        self.docno.append(docno.take(stay))
        if self.keep_rank:
            self.rank.append(rank.take(stay))
        self.score.append(scores)
        self.qid.append(qids)
        self.start.append(np.cumsum(lengths) - lengths)
        self.row.append(rows_at)
        self.n = len(stay)
        return taken


def _cut_bytes(grown: Growing, n: int) -> bytearray:
    """The first ``n`` bytes of ``grown``'s buffer: that buffer itself, cut short (its bytes
    are not copied); ``grown`` keeps the rest, in a buffer of its own."""
    held = grown.buffer
    grown.buffer = held[n:]
    del held[n:]
    return held


def _cut(grown: Growing, n: int) -> np.ndarray:
    """The first ``n`` values of ``grown`` as an array (see :func:`_cut_bytes`)."""
    return np.frombuffer(_cut_bytes(grown, n * grown.dtype.itemsize), dtype=grown.dtype)


class LongQuery:
    """A query of too many rows to hold as rows until it closes (LONG_ROWS in io/runs.py):
    its distinct docnos and their best scores in compact form (:class:`QueryDocs`), so that a
    repeated docno is found as its line is read, and each stretch of its rows (the place of
    its first row among the query's rows, and its file row) for the lines of messages.
    ``query``: its index among the qrels' queries."""

    def __init__(self, qid: int, query: int, dedup: bool) -> None:
        self.qid, self.query, self.dedup = qid, query, dedup
        self.docs = QueryDocs()
        self.rows = 0  # rows added
        self._place, self._row = Growing(np.int64), Growing(np.int64)  # of each stretch

    def add(self, docno: Column, score: np.ndarray, first_rows: np.ndarray,
            lengths: np.ndarray) -> tuple[int, int, str] | None:
        """Add rows in file order (stretches of ``lengths`` rows from file rows
        ``first_rows``). A docno added before (without ``dedup``): (its file row, its first
        copy's file row, the docno), and nothing more is added."""
        self._place.append(np.cumsum(lengths) - lengths + self.rows)
        self._row.append(first_rows)
        first, ordinal = self.docs.add(docno, score, self.dedup)
        if first < 0:
            self.rows += len(docno)
            return None
        # without dedup every docno before the repeat was new: the ordinal is a row's place
        return self._file_row(self.rows + first), self._file_row(ordinal), docno.text(first)

    def _file_row(self, place: int) -> int:
        """The file row of the query's row ``place``."""
        places = self._place.array()
        k = int(np.searchsorted(places, place, side="right")) - 1
        return int(self._row.array()[k]) + place - int(places[k])
