"""The Python API's inputs: paths as they are, and dicts, ranx and ir_measures objects and pandas
DataFrames written to TREC text in memory, for the same reader as files (:mod:`.api`).

Dicts are the ranx / pytrec_eval shapes: qrels ``{qid: {docno: grade}}``, a run
``{qid: {docno: score}}``, several runs ``{name: run}``. DataFrames are ir_measures' and
ranx's: columns ``query_id`` (or ``q_id``), ``doc_id`` and ``relevance`` (qrels; ranx's
``score`` too) or ``score`` (a run); other columns are ignored. Every rule and every error is
the command line's; an id holding whitespace, which no file can hold, is an error. The text
is built a column at a time (:mod:`.api_text`); where that finds a field that is not one
(whitespace, nothing), the text is built a row at a time (:func:`_lines`), which names it.
Each text is made when the reader reads it, in the reader's thread (:func:`_put`), and a call
raises the error it would raise were every text made before reading (:func:`made`).
"""
from __future__ import annotations

import itertools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar

import numpy as np

from . import api_text
from .core.table import forget, remember
from .errors import InputError

_counter = itertools.count()
# the in-memory inputs of the call under way in this thread, in the order put (see inputs)
_PUT: ContextVar[list[_Text] | None] = ContextVar("rpp_api_inputs", default=None)

# An in-memory input's name for the reader (see _put), and the command line's options that
# errors advise, as the API's keywords.
_PUT_NAME = re.compile(r"<(?P<what>[^<>]+) #[0-9]+>")
_KEYWORDS = {"--names-from tag": "names_from='tag'", "--names-from": "names_from=",
             "--name": "names=", "--dedup": "dedup=True",
             "--corpus-size": "corpus_size=", "--subtopics": "subtopics=",
             "--max-docs": "max_docs=", "--level": "level=", "--jobs": "jobs=",
             "--compat": "trec_eval="}
_OPTION = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, _KEYWORDS)) + r")(?![\w-])")


@contextmanager
def inputs() -> Iterator[None]:
    """Around one API call: the call's error is the one it raised were every in-memory text
    made before reading (:func:`made`); what it put for the reader and the reader did not
    take (the call failed before reading it: a bad measure name) is dropped, not kept for
    good. An error names an in-memory input as the caller does (``run bm25, row 3``, not
    ``<run bm25 #4>:3``) and advises the API's keywords, not the command line's options."""
    token = _PUT.set([])
    try:
        try:
            yield
        except Exception:
            made()
            raise
        made()
    except InputError as err:
        put = _PUT_NAME.fullmatch(err.path or "")
        if put is not None:
            err.path = put["what"] + ("" if err.line is None else f", row {err.line}")
            err.line = None
        err.message = as_given(err.message)
        err.args = (str(err),)
        raise
    finally:
        forget([text.name for text in _PUT.get() or ()])
        _PUT.reset(token)


def as_given(text: str) -> str:
    """An error's or a note's text in the API's words: each in-memory input named as the
    caller named it (``run bm25``, not the reader's ``<run bm25 #4>``), and the command line's
    options as the API's keywords."""
    return _OPTION.sub(lambda m: _KEYWORDS[m[1]], _PUT_NAME.sub(lambda m: m["what"], text))


def made() -> None:
    """Raise what the call under way raised when every in-memory input's text was made before
    its reading began: the error of the first input, in the order they were put (the runs,
    then the qrels), whose text cannot be made. A text no reader took (the call failed before
    reading it, or read only some runs) is made here, and dropped."""
    for text in _PUT.get() or ():
        failed = text.failure()
        if failed is not None:
            raise failed from None


class _Text:
    """An in-memory input's TREC text for the reader (:func:`.core.table.remember`): made by
    ``make`` when called, in the reader's thread, once; its error kept for :func:`made`."""

    def __init__(self, name: str, what: str, make: Callable[[], str | bytes]) -> None:
        self.name, self.what = name, what
        self._make: Callable[[], str | bytes] | None = make
        self.failed: Exception | None = None

    def __call__(self) -> bytes:
        make, self._make = self._make, None  # what it is made of is not held after
        try:
            return _encoded(self.what, make())
        except Exception as err:
            self.failed = err
            raise

    def failure(self) -> Exception | None:
        """The error of making the text, made now (and dropped) if no reader took it."""
        forget([self.name])
        if self._make is not None:
            with suppress(Exception):  # (kept in self.failed)
                self()
        return self.failed


def _plain(obj, value: str):
    """ranx's Qrels and Run (``to_dict()``) and ir_measures' iterables of named tuples
    (``query_id, doc_id, relevance`` or ``score``) as ``{qid: {docno: value}}``; anything else
    as it is."""
    if isinstance(obj, (str, os.PathLike, Mapping)) or _is_frame(obj):
        return obj
    if callable(getattr(obj, "to_dict", None)):
        return obj.to_dict()
    if isinstance(obj, Iterable) and not isinstance(obj, (bytes, Sequence)) or \
            isinstance(obj, Sequence) and obj and _is_row(obj[0]):
        rows = list(obj)
        if rows and all(_is_row(r) for r in rows):
            out: dict = {}
            for row in rows:
                out.setdefault(row.query_id, {})[row.doc_id] = getattr(row, value)
            return out
        return rows
    return obj


def _is_row(obj) -> bool:
    """An ir_measures row: a named tuple with query_id and doc_id."""
    return hasattr(obj, "query_id") and hasattr(obj, "doc_id")


def qrels_source(qrels) -> str:
    """A path, or the name under which in-memory qrels were put for the reader, their text
    made when it reads them (:func:`_qrels_text`)."""
    qrels = _plain(qrels, "relevance")
    if isinstance(qrels, (str, os.PathLike)):
        return str(qrels)
    if _is_frame(qrels):
        columns = _frame_columns(qrels, "qrels", ("relevance", "score"))
        return _put("qrels", lambda: _qrels_text(qrels, columns))
    if isinstance(qrels, Mapping):
        _nested("qrels", qrels, "{qid: {docno: grade}}")
        return _put("qrels", lambda: _qrels_text(qrels, None))
    raise InputError("qrels: expected a path, a dict {qid: {docno: grade}} or a DataFrame "
                     "(query_id, doc_id, relevance)")


def _qrels_text(qrels, columns: list[str] | None) -> str | bytes:
    """The TREC text of in-memory qrels: a DataFrame (``columns``: its qid, docno and grade
    columns) or, with None, a dict."""
    if columns is not None:
        q, d, g = _arrays(qrels, columns)
        block = api_text.int_block(g) if g.dtype.kind == "i" else None
        data = None if block is None else api_text.nested_rows(*_stretches(q, d), " 0 ", block)
        if data is None:
            qids, docnos, texts = _texts(q), _texts(d), _texts(g)
    else:
        grades = list(itertools.chain.from_iterable(docs.values() for docs in qrels.values()))
        kinds = set(map(type, grades))
        if any(issubclass(k, (Mapping, list, tuple)) for k in kinds):
            for qid, docs in qrels.items():  # the first that is no grade, named
                for docno, grade in docs.items():
                    _grade_text(qid, docno, grade)
        block = api_text.int_block(grades) if kinds <= {int} else None
        data = None if block is None else \
            api_text.nested_rows(list(map(str, qrels)), list(qrels.values()), " 0 ", block)
        if data is None:
            qids, docnos, grades = _columns(qrels)
            qids, texts = _per_row(qids), list(map(str, grades))
    if data is None:  # grades that are not integers, or a field to name
        data = api_text.rows([qids, b" 0 ", docnos, b" ", texts, b"\n"], len(docnos))
    return data if data is not None else \
        _lines("qrels", [qids, ["0"] * len(docnos), docnos, texts])


def _grade_text(qid, docno, grade) -> str:
    """A qrels dict's grade as text for the reader; a dict or a list there means the runs were
    given where the qrels belong, which the reader would report as a strange grade."""
    if isinstance(grade, (Mapping, list, tuple)):
        raise InputError(f"qrels: query {qid!r}, document {docno!r} holds a "
                         f"{type(grade).__name__}, not a grade: expected {{qid: {{docno: "
                         "grade}} (runs given where the qrels belong? the qrels come first)")
    return str(grade)


def run_sources(runs) -> tuple[list[str], tuple[str | None, ...]]:
    """Paths (or in-memory names) of the runs, and the name of each in-memory run: its key in
    ``{name: run}``, else ``run`` or ``run<i>`` (i: its place in the list); None for a path,
    which ``names_from`` names as on the command line."""
    runs = _plain(runs, "score")
    if isinstance(runs, (str, os.PathLike)):
        return [str(runs)], (None,)
    if _is_frame(runs):
        return [_run_text("run", runs)], ("run",)
    if isinstance(runs, Mapping):
        if not runs:
            raise InputError("runs: no run given")
        runs = {name: _plain(run, "score") for name, run in runs.items()}
        if all(isinstance(v, (str, os.PathLike)) or _is_frame(v) or isinstance(v, Mapping)
               and all(isinstance(x, Mapping) for x in v.values()) for v in runs.values()):
            names = tuple(str(n) for n in runs)  # {name: path, run dict or DataFrame}
            return [_run_path(name, run) for name, run in runs.items()], names
        return [_run_text("run", runs)], ("run",)  # one run {qid: {docno: score}}
    if isinstance(runs, Sequence):
        named = [(str(r), None) if isinstance(r, (str, os.PathLike))
                 else (_run_text(f"run{i}", _plain(r, "score")), f"run{i}")
                 for i, r in enumerate(runs)]
        return [path for path, _ in named], tuple(name for _, name in named)
    raise InputError("runs: expected paths, a run dict, a DataFrame (query_id, doc_id, score) "
                     "or {name: run}")


def _run_path(name: str, run) -> str:
    """A run of ``{name: run}``: its path as given, or the name of its text put for the
    reader."""
    return str(run) if isinstance(run, (str, os.PathLike)) else _run_text(name, run)


def _run_text(name: str, run) -> str:
    """Put one run (a dict or a DataFrame) for the reader, its TREC run text made when it
    reads it (:func:`_run_lines`)."""
    what = f"run {name}"
    if _is_frame(run):
        columns: list[str] | None = _frame_columns(run, what, ("score",))
    elif isinstance(run, Mapping):
        _nested(what, run, "{qid: {docno: score}}")
        columns = None
    else:
        raise InputError(f"{what}: expected a dict {{qid: {{docno: score}}}} or a DataFrame")
    return _put(what, lambda: _run_lines(name, run, columns))


def _run_lines(name: str, run, columns: list[str] | None) -> str | bytes:
    """The TREC run text of a DataFrame (``columns``: its qid, docno and score columns) or,
    with None, a dict, tagged ``name`` when the name is one token (a name with a space is no
    tag; the run is named by its key). Scores are written as numbers the reader parses back
    exactly (:func:`.api_text.score_block`) when all are finite numbers."""
    what, tag = f"run {name}", api_text.token(name)
    data = None
    if columns is not None:
        q, d, scores = _arrays(run, columns)
        exact = scores.dtype == np.float64 or scores.dtype.kind in "iu"
        values = scores.astype(np.float64) if exact else None
        if values is not None and np.isfinite(values).all():
            data = api_text.nested_rows(*_stretches(q, d), " Q0 ",
                                        api_text.score_block(values, tag))
        if data is None:  # a field to name, or scores as Python prints them
            qids, docnos, scores = _texts(q), _texts(d), _texts(scores)
    else:
        values = _score_array(run)
        if values is not None and np.isfinite(values).all():
            data = api_text.nested_rows(list(map(str, run)), list(run.values()),
                                        " Q0 ", api_text.score_block(values, tag))
        if data is None:  # a field or a score to name, or a score that is not finite
            qids, docnos, scores = _columns(run)
            qids = _per_row(qids)
            scores = _score_texts(name, qids, docnos, scores)
    if data is not None:
        return data
    n = len(docnos)
    return _lines(what, [qids, ["Q0"] * n, docnos, ["0"] * n, scores,
                         *([[name] * n] if tag else [])])


def _stretches(qids: np.ndarray, docnos: np.ndarray) -> tuple[list[str], list[list]]:
    """The stretches of a DataFrame's rows with one qid (it lists a query's rows together, or
    not): the qid of each as text and its docnos (``str()`` makes text of any that is not,
    as numpy's ``astype(str)`` would)."""
    if len(qids) == 0:
        return [], []
    starts = np.flatnonzero(np.concatenate(([True], qids[1:] != qids[:-1])))
    ends = [*starts[1:].tolist(), len(qids)]
    docs = docnos.tolist()
    return _texts(qids[starts]), [docs[a:b] for a, b in zip(starts.tolist(), ends)]


def _nested(what: str, mapping: Mapping, shape: str) -> None:
    """Every value of a qrels or run dict is itself a dict (a list of pairs is not)."""
    for qid, docs in mapping.items():
        if not isinstance(docs, Mapping):
            raise InputError(f"{what}: query {qid!r} holds {type(docs).__name__}, not a dict: "
                             f"expected {shape}")


class _Counted(list):
    """The qids of a nested dict, one a query, with ``counts``: the rows of each."""

    counts: list[int]


def _columns(nested: Mapping) -> tuple[_Counted, list[str], list]:
    """Of ``{qid: {docno: x}}`` in dict order: the qids as text (one a query, with their row
    counts), each row's docno as text and its raw value."""
    qids = _Counted(map(str, nested))
    qids.counts = [len(docs) for docs in nested.values()]
    docnos = list(itertools.chain.from_iterable(nested.values()))
    if set(map(type, docnos)) - {str}:
        docnos = list(map(str, docnos))
    values = list(itertools.chain.from_iterable(docs.values() for docs in nested.values()))
    return qids, docnos, values


def _per_row(qids: list[str]) -> list[str]:
    """The qid of each row (of a nested dict's :class:`_Counted`, or as they are)."""
    if not isinstance(qids, _Counted):
        return qids
    rows: list[str] = []
    for qid, count in zip(qids, qids.counts):
        rows += [qid] * count
    return rows


def _score_array(run: Mapping) -> np.ndarray | None:
    """A run dict's scores as float64, each what ``float()`` makes of it (what the reader
    parses back from :func:`_score_text`); None where one is a bool, a dict, a list or
    anything ``float()`` refuses (:func:`_score_texts` names it)."""
    def scores() -> Iterator:
        return itertools.chain.from_iterable(docs.values() for docs in run.values())
    kinds = set(map(type, scores()))
    if any(issubclass(k, (bool, Mapping, list, tuple)) for k in kinds):
        return None
    n = sum(map(len, run.values()))
    try:  # float and int as they are (numpy reads them as float() does)
        return np.fromiter(scores() if kinds <= {float, int} else map(float, scores()),
                           np.float64, n)
    except (TypeError, ValueError, OverflowError):
        return None


_PLAIN_NUMBERS = (float, int)  # what repr(float(x)) takes as it is (bool aside)


def _score_texts(name: str, qids: list[str], docnos: list[str], scores: list) -> list[str]:
    """Every score as :func:`_score_text` writes it: plain Python numbers in one pass, and
    anything else (numpy's scalars, numeric text, what is not a number) one by one, so that
    each gets the same text or the same error."""
    kinds = set(map(type, scores))
    if all(issubclass(k, _PLAIN_NUMBERS) and not issubclass(k, bool) for k in kinds):
        try:
            return list(map(repr, map(float, scores)))
        except OverflowError:  # an int past a double: named below
            pass
    return [_score_text(name, q, d, x) for q, d, x in zip(qids, docnos, scores)]


def _score_text(name: str, qid, docno, score) -> str:
    """A run dict's score as text the reader parses back to the same double; anything that is
    not a number (a bool, a word) is the reader's InputError, not Python's ValueError."""
    if isinstance(score, (Mapping, list, tuple)):
        raise InputError(f"run {name}: query {qid!r}, document {docno!r} holds a "
                         f"{type(score).__name__}, not a score: expected {{qid: {{docno: "
                         "score}}, or {name: {qid: {docno: score}}} for several runs")
    try:
        if isinstance(score, bool):
            raise TypeError
        return repr(float(score))
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int past a double
        raise InputError(f"run {name}: score {score!r} of query {qid}, document {docno} is not "
                         "a number a double holds") from None


def _is_frame(obj) -> bool:
    """True for a pandas DataFrame (pandas is optional: imported only by whoever made one)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(obj, pandas.DataFrame)


_QID_COLUMNS = ("query_id", "q_id")  # ir_measures', ranx's


def _frame_columns(frame, what: str, values: tuple[str, ...]) -> list[str]:
    """The qid, docno and value columns of an ir_measures/ranx DataFrame (``values``: the
    value column's names, the first present taken)."""
    columns = [[c for c in _QID_COLUMNS if c in frame.columns], ["doc_id"],
               [c for c in values if c in frame.columns][:1]]  # the first present
    if not all(columns) or "doc_id" not in frame.columns:
        raise InputError(f"{what}: a DataFrame needs the columns query_id (or q_id), doc_id and "
                         f"{' or '.join(values)}; it has "
                         f"{', '.join(map(str, frame.columns)) or 'none'}")
    if len(columns[0]) > 1:
        raise InputError(f"{what}: a DataFrame with both query_id and q_id columns is ambiguous")
    return [c[0] for c in columns]


def _arrays(frame, columns: list[str]) -> list[np.ndarray]:
    """A DataFrame's ``columns`` as numpy arrays."""
    return [frame[c].to_numpy() for c in columns]


def _texts(column: np.ndarray) -> list[str]:
    """A DataFrame column's values as ``str()`` writes them (numpy's ``astype(str)``): an
    object column (pandas' strings) a value at a time, not through a fixed-width array as
    wide as its longest value."""
    if column.dtype != object:
        return column.astype(str).tolist()
    values = column.tolist()
    return list(map(str, values)) if set(map(type, values)) - {str} else values


_SPACE = re.compile(r"[ \t\r\n]")  # what separates fields and lines in TREC text
_FIELD, _ROW = "\x00", api_text.SEPARATOR  # no field holds them: the reader rejects them


def _lines(what: str, fields: list[list[str]]) -> str:
    """Rows of TREC text from columns of fields. A field that is empty or holds whitespace
    would drop, split or add a field or a line, or change an id: an InputError naming it.
    Fields are joined with separators no field may hold, so one search of the whole text
    finds any such field."""
    n = len(fields[0])
    text = _ROW.join(map(_FIELD.join, zip(*fields)))
    if _SPACE.search(text) or text.count(_FIELD) != n * (len(fields) - 1) \
            or text.count(_ROW) != max(n - 1, 0) or f"{_FIELD}{_FIELD}" in text \
            or text.startswith(_FIELD) or text.endswith(_FIELD) or _ROW + _FIELD in text \
            or _FIELD + _ROW in text:
        bad = next(v for col in fields for v in col
                   if not v or _SPACE.search(v) or _FIELD in v or _ROW in v)
        raise InputError(f"{what}: {bad!r} is empty or holds whitespace: an id or a value in "
                         "TREC text is one token")
    return text.replace(_FIELD, " ").replace(_ROW, "\n") + ("\n" if n else "")


def _put(what: str, make: Callable[[], str | bytes]) -> str:
    """Hand the reader, under a name no file has (``<what #n>``), what makes ``what``'s text
    when it reads it: in its thread, so that one input's text is made while another is read,
    and only the texts being read are held."""
    text = _Text(f"<{what} #{next(_counter)}>", what, make)
    remember(text.name, text)
    put = _PUT.get()
    if put is not None:
        put.append(text)
    return text.name


def _encoded(what: str, text: str | bytes) -> bytes:
    """``text`` as the reader's bytes (UTF-8, surrogateescape)."""
    try:
        return text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as err:  # a lone surrogate: no bytes could carry it
        raise InputError(f"{what}: {text[err.start:err.end]!r} is not text (a lone surrogate)"
                         ) from None
