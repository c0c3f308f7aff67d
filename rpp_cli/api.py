"""The Python API, for notebooks and scripts: the commands as functions over paths or
in-memory dicts, returning the one Results table (``.records()``, ``.to_pandas()``).

    import rpp_cli
    qrels = {"q1": {"d1": 1, "d2": 0}}
    runs = {"bm25": {"q1": {"d1": 1.2, "d2": 3.4}}, "dense": {"q1": {"d1": 9.0}}}
    rpp_cli.evaluate(qrels, runs, measures=["rpp", "map"]).records()

Dicts are the ranx / pytrec_eval shapes: qrels ``{qid: {docno: grade}}``, a run
``{qid: {docno: score}}``, several runs ``{name: run}``. pandas DataFrames are ir_measures' and
ranx's: columns ``query_id`` (or ``q_id``), ``doc_id`` and ``relevance`` (qrels; ranx's
``score`` too) or ``score`` (a run); other columns are ignored. Both are written to TREC text in
memory and read by the same reader as files, so every rule and every error is the command
line's; an id holding whitespace, which no file can hold, is an error.
"""
from __future__ import annotations

import itertools
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from .core.table import forget, remember
from .engine import default_jobs, session
from .errors import InputError
from .io.runs import NAME_SOURCES
from .report.levels import FIELDS as LEVEL_FIELDS
from .results import Results
from .settings import Options, trec_eval_release
from .stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from .tasks import Outcome
from .tasks import compare as compare_task
from .tasks import eval as eval_task
from .tasks import levels as levels_task
from .tasks import meta as meta_task
from .tasks.meta import MetaOptions, MetaRequest, require_analyses

_counter = itertools.count()
# the in-memory inputs of the call under way in this thread (see _inputs)
_PUT: ContextVar[list[str] | None] = ContextVar("rpp_api_inputs", default=None)


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
def _inputs() -> Iterator[None]:
    """Around one API call: what it put for the reader and the reader did not take (the call
    failed before reading it: a bad measure name) is dropped, not kept for good. An error
    names an in-memory input as the caller does (``run bm25, row 3``, not ``<run bm25 #4>:3``)
    and advises the API's keywords, not the command line's options."""
    token = _PUT.set([])
    try:
        yield
    except InputError as err:
        put = _PUT_NAME.fullmatch(err.path or "")
        if put is not None:
            err.path = put["what"] + ("" if err.line is None else f", row {err.line}")
            err.line = None
        err.message = _OPTION.sub(lambda m: _KEYWORDS[m[1]],
                                  _PUT_NAME.sub(lambda m: m["what"], err.message))
        err.args = (str(err),)
        raise
    finally:
        forget(_PUT.get() or [])
        _PUT.reset(token)


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


def _qrels_source(qrels) -> str:
    """A path, or the name under which in-memory qrels were put for the reader."""
    qrels = _plain(qrels, "relevance")
    if isinstance(qrels, (str, os.PathLike)):
        return str(qrels)
    if _is_frame(qrels):
        q, d, g = _frame_columns(qrels, "qrels", ("relevance", "score"))
        return _put("qrels", _lines("qrels", [q, ["0"] * len(q), d, g]))
    if not isinstance(qrels, Mapping):
        raise InputError("qrels: expected a path, a dict {qid: {docno: grade}} or a DataFrame "
                         "(query_id, doc_id, relevance)")
    _nested("qrels", qrels, "{qid: {docno: grade}}")
    rows = [(str(q), str(d), _grade_text(q, d, g)) for q, docs in qrels.items()
            for d, g in docs.items()]
    return _put("qrels", _lines("qrels", [[r[0] for r in rows], ["0"] * len(rows),
                                          [r[1] for r in rows], [r[2] for r in rows]]))


def _grade_text(qid, docno, grade) -> str:
    """A qrels dict's grade as text for the reader; a dict or a list there means the runs were
    given where the qrels belong, which the reader would report as a strange grade."""
    if isinstance(grade, (Mapping, list, tuple)):
        raise InputError(f"qrels: query {qid!r}, document {docno!r} holds a "
                         f"{type(grade).__name__}, not a grade: expected {{qid: {{docno: "
                         "grade}} (runs given where the qrels belong? the qrels come first)")
    return str(grade)


def _run_sources(runs) -> tuple[list[str], tuple[str | None, ...]]:
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
    """Put one run (a dict or a DataFrame) for the reader as TREC run text tagged ``name``."""
    if _is_frame(run):
        q, d, s = _frame_columns(run, f"run {name}", ("score",))
    elif isinstance(run, Mapping):
        _nested(f"run {name}", run, "{qid: {docno: score}}")
        q, d, s = _columns(run)
        s = _score_texts(name, q, d, s)
    else:
        raise InputError(f"run {name}: expected a dict {{qid: {{docno: score}}}} or a DataFrame")
    n = len(q)
    return _put(f"run {name}", _lines(f"run {name}", [q, ["Q0"] * n, d, ["0"] * n, s,
                                                      [str(name)] * n]))


def _nested(what: str, mapping: Mapping, shape: str) -> None:
    """Every value of a qrels or run dict is itself a dict (a list of pairs is not)."""
    for qid, docs in mapping.items():
        if not isinstance(docs, Mapping):
            raise InputError(f"{what}: query {qid!r} holds {type(docs).__name__}, not a dict: "
                             f"expected {shape}")


def _columns(nested: Mapping) -> tuple[list[str], list[str], list]:
    """The qid and docno (as text) and the raw value of every row of ``{qid: {docno: x}}``,
    in dict order, a column at a time (no Python call per row)."""
    qids: list[str] = []
    docnos: list[str] = []
    values: list = []
    for qid, docs in nested.items():
        qids += [str(qid)] * len(docs)
        docnos += map(str, docs)
        values += docs.values()
    return qids, docnos, values


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


def _frame_columns(frame, what: str, values: tuple[str, ...]) -> list[list[str]]:
    """The qid, docno and value columns of an ir_measures/ranx DataFrame, as text (numbers as
    Python prints them, so the reader parses the same double back)."""
    columns = [[c for c in _QID_COLUMNS if c in frame.columns], ["doc_id"],
               [c for c in values if c in frame.columns][:1]]  # the first present
    if not all(columns) or "doc_id" not in frame.columns:
        raise InputError(f"{what}: a DataFrame needs the columns query_id (or q_id), doc_id and "
                         f"{' or '.join(values)}; it has "
                         f"{', '.join(map(str, frame.columns)) or 'none'}")
    if len(columns[0]) > 1:
        raise InputError(f"{what}: a DataFrame with both query_id and q_id columns is ambiguous")
    return [frame[c[0]].to_numpy().astype(str).tolist() for c in columns]


_SPACE = re.compile(r"[ \t\r\n]")  # what separates fields and lines in TREC text
_FIELD, _ROW = "\x00", "\x01"  # separators no field can hold: the reader rejects them


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


def _put(what: str, text: str) -> str:
    """Hand ``text`` to the reader under a name no file has (``<what #n>``)."""
    name = f"<{what} #{next(_counter)}>"
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as err:  # a lone surrogate: no bytes could carry it
        raise InputError(f"{what}: {text[err.start:err.end]!r} is not text (a lone surrogate)"
                         ) from None
    remember(name, data)
    put = _PUT.get()
    if put is not None:
        put.append(name)
    return name


def _measure_names(measures) -> list[str] | None:
    """``measures`` as a list of names: one name (``"map"``) is one measure, not letters."""
    if measures is None:
        return None
    if isinstance(measures, str):
        return [measures]
    names = list(measures)
    if not all(isinstance(m, str) for m in names):
        raise InputError(f"measures: expected a name or a list of names (got {measures!r})")
    return names or None


def _options(level, corpus_size, dedup, jobs, names, subtopics, max_docs,
             names_from, trec_eval=None, binary=False) -> Options:
    """The command line's Options from the API's keyword arguments, checked as it checks them."""
    if names_from not in NAME_SOURCES:
        raise InputError(f"names_from: expected one of {', '.join(NAME_SOURCES)} "
                         f"(got {names_from!r})")
    if subtopics is not None and not isinstance(subtopics, (str, os.PathLike)):
        raise InputError("subtopics: expected the path of subtopic qrels")
    for what, value in (("max_docs", max_docs), ("corpus_size", corpus_size), ("jobs", jobs)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise InputError(f"{what}: expected a positive integer (got {value!r})")
    if level is not None and (isinstance(level, bool) or not isinstance(level, (int, float))):
        raise InputError(f"level: expected a number (got {level!r})")
    if isinstance(names, str) or not all(isinstance(n, str) or n is None for n in names or ()):
        raise InputError(f"names: expected a list of names, one per run (got {names!r})")
    if trec_eval is not None:
        trec_eval_release(trec_eval)  # a release rpp does not follow: its one-line error
    if not isinstance(binary, bool):
        raise InputError(f"binary: expected True or False (got {binary!r})")
    return Options(level, corpus_size, dedup, jobs or default_jobs(),
                   None if subtopics is None else str(subtopics), tuple(names or ()), max_docs,
                   names_from, trec_eval, binary)


@contextmanager
def _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
          names_from, trec_eval=None, binary=False) -> Iterator[tuple[list[str], Options]]:
    """One API call's runs and command-line Options, checked, with its in-memory inputs
    (:func:`_inputs`) and its engine (``jobs``) for the time of the call."""
    with _inputs():
        paths, given = _run_sources(runs)
        options = _options(level, corpus_size, dedup, jobs, names or given, subtopics,
                           max_docs, names_from, trec_eval, binary)
        with session(options.jobs):
            yield paths, options


class RppNote(UserWarning):
    """A note the command line prints on stderr (a judged query a run lacks, a level no
    judgment reaches), issued as a Python warning when the call gives no ``notes`` list."""


def _noted(task: Callable[[], Outcome], notes: list[str] | None) -> Outcome:
    """``task()``'s Outcome; its notes, those of a failed task too (``err.notes``, see
    :func:`.tasks.noting`), appended to the caller's ``notes``, or issued as RppNote
    warnings when it gives none (a notebook shows them; ``warnings`` filters them)."""
    try:
        outcome = task()
    except Exception as err:
        _tell(getattr(err, "notes", ()), notes)
        raise
    _tell(outcome.notes, notes)
    return outcome


def _tell(said: Iterable[str], notes: list[str] | None) -> None:
    if notes is not None:
        notes.extend(said)
        return
    for note in said:
        warnings.warn(note, RppNote, stacklevel=4)


def evaluate(qrels, runs, measures: Sequence[str] | str | None = None,
             per_query: bool = False, *,
             level: float | None = None, corpus_size: int | None = None, dedup: bool = False,
             jobs: int | None = None, names: Sequence[str] | None = None,
             names_from: str = "file", subtopics=None, max_docs: int | None = None,
             trec_eval: str | None = None,
             binary: bool = False,
             notes: list[str] | None = None) -> Results:
    """``rpp eval``: every measure (default: rpp's defaults) for every run and pair of runs.
    ``qrels``: a path, a dict or a DataFrame; ``runs``: paths, a run dict, a DataFrame or
    ``{name: run}``; ``subtopics``:
    the path of subtopic qrels; ``max_docs``: each run's top K per query (``-M K``). A run is
    named as on the command line (``names``: --name; ``names_from``: ``"file"`` or ``"tag"``),
    an in-memory run by its key (``run<i>`` in a list); ``binary``: a query's relevant items
    are one population, as pref_eval reads graded qrels (``--binary``).
    Notes the command line prints on stderr are appended to ``notes``."""
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, trec_eval, binary) as (paths, options):
        source = _qrels_source(qrels)
        request = eval_task.EvalRequest(tuple(_measure_names(measures) or ()), per_query)
        return _noted(lambda: eval_task.run(source, paths, request, options), notes).results


def compare(qrels, runs, measures: Sequence[str] | str | None = None, *,
            test: str = "randomization", correction: str = "none", permutations: int = 10000,
            seed: int = DEFAULT_SEED, ci: float | None = None, interval: str = "t",
            resamples: int = DEFAULT_RESAMPLES, level: float | None = None,
            corpus_size: int | None = None, dedup: bool = False, jobs: int | None = None,
            names: Sequence[str] | None = None, names_from: str = "file", subtopics=None,
            max_docs: int | None = None, trec_eval: str | None = None,
            binary: bool = False,
            notes: list[str] | None = None) -> Results:
    """``rpp compare``: the mean effect and p-value of every pair of runs on every measure;
    with ``ci`` (a level, 0.95) the interval rows and effect sizes too, by ``interval`` (t,
    percentile or bca; ``resamples`` bootstrap draws). The input arguments are
    :func:`evaluate`'s."""
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, trec_eval, binary) as (paths, options):
        source = _qrels_source(qrels)
        request = compare_task.CompareRequest(tuple(_measure_names(measures) or ()), test,
                                              correction, permutations, seed, ci, interval,
                                              resamples)
        return _noted(lambda: compare_task.run(source, paths, request, options), notes).results


def meta(qrels, runs, measures: Sequence[str] | str | None = None, *,
         options: MetaOptions | None = None, level: float | None = None,
         corpus_size: int | None = None, dedup: bool = False, jobs: int | None = None,
         names: Sequence[str] | None = None, names_from: str = "file", subtopics=None,
         max_docs: int | None = None,
         trec_eval: str | None = None,
         binary: bool = False,
         notes: list[str] | None = None) -> Results:
    """``rpp meta``: discriminative power, agreement, robustness and predictive power of the
    measures (``options``: the analyses and their settings, rpp meta's defaults if None)."""
    options = options or MetaOptions()
    require_analyses(options)
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, trec_eval, binary) as (paths, inputs):
        source = _qrels_source(qrels)
        request = MetaRequest(tuple(_measure_names(measures) or ()), options)
        return _noted(lambda: meta_task.run(source, paths, request, inputs), notes).results


def levels(qrels, runs, *, query: str | None = None, summary: bool = True,
           level: float | None = None, corpus_size: int | None = None, dedup: bool = False,
           jobs: int | None = None, names: Sequence[str] | None = None,
           names_from: str = "file", subtopics=None, max_docs: int | None = None,
           binary: bool = False,
           notes: list[str] | None = None) -> list[dict]:
    """``rpp levels``: for the two ``runs`` (RUN_A, RUN_B), every query's, population's and
    recall level's worst-case positions and the sign of f_i(B) - f_i(A) (with ``summary``, the
    shares of levels where each run is ahead), as dicts keyed as the jsonl lines are
    (measure, qid, run, other, population, level, run_position, other_position, value)."""
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, binary=binary) as (paths, options):
        source = _qrels_source(qrels)
        request = levels_task.LevelsRequest(query)
        found = _noted(lambda: levels_task.run(source, paths, request, options), notes)
        return [dict(zip(LEVEL_FIELDS, row))
                for row in levels_task.rows(found.extras["levels"], summary)]


__all__ = ["evaluate", "compare", "meta", "levels", "Results", "MetaOptions", "InputError",
           "RppNote"]
