"""Differential tests on a few hundred random, real-looking collections (tests/realistic.py).

Every line ``rpp eval -q`` prints is compared with (a) a slow, literal reading of contract §2-4
and §6 (asl) and (b) pytrec_eval called directly for the trec_eval measures
(tests/reference.py); the check is strict: every expected (measure, qid, run[, other]) line
is printed, nothing else is. The same collection written plainly and in the ugly style (CRLF,
BOM, gzip, tabs and runs of spaces, comments, other score notations) must give
byte-identical output, and the printed numbers follow contract §7 (counts as integers, no
negative zero).

Collections are seeded and deterministic: a failure names its seed; to look at the files,
``write_collection(generate(SEED), Path("/tmp/c"), "mixed")`` in tests/realistic.py.
"""
from __future__ import annotations

import os
import re

import pytest

from .conftest import rpp, tiered
from .realistic import generate, write_collection
from .reference import (EVAL_ARGS, SUMMED, compare, expected_output, order_problems,
                        parse_strict)

SEEDS = range(int(os.environ.get("RPP_DIFFERENTIAL_SEEDS", "300")))  # more for a deep run
STYLE_SEEDS = range(0, 300, 2)
FORMAT_SEEDS = range(0, 300, 10)


def _evaluate(tmp_path, coll, style):
    qrels, runs = write_collection(coll, tmp_path / style, style)
    res = rpp(*EVAL_ARGS, qrels, *runs)
    assert res.code == 0, f"seed {coll.seed} ({style}): exit {res.code}: {res.err.strip()}"
    assert "Traceback" not in res.err
    return res


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_every_value_matches_the_references(tmp_path, seed):
    coll = generate(seed)
    res = _evaluate(tmp_path, coll, "mixed")
    got, _, order = parse_strict(res.out)
    want = expected_output(coll.qrels, coll.runs, coll.file_names)
    problems = compare(got, want) + order_problems(order, coll.file_names)
    assert not problems, (f"seed {seed}: {len(problems)} problems, e.g.\n  "
                          + "\n  ".join(problems[:8]))


@pytest.mark.slow
@pytest.mark.parametrize("seed", STYLE_SEEDS)
def test_plain_and_ugly_files_give_identical_output(tmp_path, seed):
    coll = generate(seed)
    plain = _evaluate(tmp_path, coll, "plain")
    ugly = _evaluate(tmp_path, coll, "ugly")
    assert plain.out == ugly.out, f"seed {seed}: plain and ugly files print differently"


_NEGATIVE_ZERO = re.compile(r"-0(\.0*)?")


@pytest.fixture(scope="module")
def printed_texts(tmp_path_factory) -> dict[tuple, str]:
    """The value texts of every line printed for the FORMAT_SEEDS collections."""
    tmp_path = tmp_path_factory.mktemp("printed")
    texts = {}
    for seed in FORMAT_SEEDS:
        res = _evaluate(tmp_path / str(seed), generate(seed), "plain")
        texts.update({(seed, *k): t for k, t in parse_strict(res.out)[1].items()})
    return texts


def test_counts_print_as_integers(printed_texts):
    """contract §7: counts (num_*) print as integers, as trec_eval does, whatever --precision."""
    bad = {k: t for k, t in printed_texts.items()
           if k[1] in SUMMED and not re.fullmatch(r"\d+", t)}
    assert not bad, f"{len(bad)} counts not printed as integers, e.g. {next(iter(bad.items()))}"


def test_no_negative_zero(printed_texts):
    """contract §7: a negative zero prints as 0 (RPP(b, a) = -RPP(a, b) = -0.0 must not show)."""
    bad = {k: t for k, t in printed_texts.items() if _NEGATIVE_ZERO.fullmatch(t)}
    assert not bad, f"{len(bad)} values printed as negative zero, e.g. {next(iter(bad.items()))}"


def _renamed(text: str, rename: dict[str, str]) -> str:
    """``rpp eval`` output (and its notes) with each run name replaced by ``rename[name]``."""
    lines = []
    names = re.compile(r"(?<![\w.-])(" + "|".join(sorted(map(re.escape, rename), key=len,
                                                        reverse=True)) + r")(?![\w.-])")
    for line in text.splitlines(keepends=True):
        if line.startswith("rpp: note: "):  # a note names the runs it concerns
            lines.append(names.sub(lambda m: rename[m[1]], line))
        else:
            fields = line.split("\t")
            lines.append("\t".join(fields[:2] + [rename[f] for f in fields[2:-1]] + fields[-1:]))
    return "".join(lines)


@pytest.mark.parametrize("seed", tiered(FORMAT_SEEDS, fast=6))
def test_names_from_tag_changes_the_names_only(tmp_path, seed):
    """contract §1: ``--names-from tag`` prints each run's tag where the default prints its
    file name, in every line and note; nothing else changes."""
    coll = generate(seed)
    qrels, runs = write_collection(coll, tmp_path, "mixed")
    by_file = rpp(*EVAL_ARGS, qrels, *runs)
    by_tag = rpp(*EVAL_ARGS, "--names-from", "tag", qrels, *runs)
    rename = dict(zip(coll.file_names, coll.tags))
    assert by_file.code == by_tag.code == 0
    assert by_tag.out == _renamed(by_file.out, rename)
    assert by_tag.err == _renamed(by_file.err, rename)
