"""`rpp check` on what a CI job meets: gates that could not fail (another collection's runs),
notes before verdicts, the input files' SHA-256 in jsonl and csv, the Python API's check,
and the GitHub Action beside the gate (action.yml's steps run as GitHub runs them)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import rpp_cli

from .conftest import DEMO, ROOT, rpp, write_qrels, write_run

QRELS = DEMO / "qrels"
BM25 = DEMO / "runs" / "bm25"
DPR = DEMO / "runs" / "dpr"


def renamed(src: Path, path: Path) -> Path:
    """``src`` with every docno renamed (another collection's ids): nothing it ranks is
    judged, though its queries are the qrels'."""
    rows = [line.split() for line in src.read_text().splitlines()]
    path.write_text("".join(f"{q} Q0 X-{d} {r} {s} {t}\n" for q, _, d, r, s, t in rows))
    return path


def non_relevant(path: Path, tag: str, flip: bool = False) -> Path:
    """A run of the judged non-relevant documents of the demo qrels only, in file order
    (``flip``: reversed): judged, but no relevant document anywhere."""
    docs: dict[str, list[str]] = {}
    for line in QRELS.read_text().splitlines():
        q, _, d, g = line.split()
        if float(g) <= 0:
            docs.setdefault(q, []).append(d)
    return write_run(path, {q: d[::-1] if flip else d for q, d in docs.items()}, tag)


@pytest.mark.parametrize("role", ["baseline", "candidate"])
@pytest.mark.parametrize("gate", [(), ("--max-drop", "map=0.01"), ("-m", "P.10", "-m", "ndcg")])
def test_a_run_of_another_collection_is_refused_whatever_q_says(tmp_path, role, gate):
    other = renamed(DPR, tmp_path / "passage bm25.run")
    base, cand = (other, BM25) if role == "baseline" else (BM25, other)
    out = rpp("check", "-Q", *gate, "--baseline", base, QRELS, DPR, cand)
    assert out.code == 2 and out.out == ""
    line = f"{'the baseline' if role == 'baseline' else 'candidate'} 'passage bm25.run' ranks"
    assert out.err.count("\n") == 1 and out.err.startswith(f"rpp: {line}")
    assert "another collection's ids" in out.err and "could not fail" in out.err


def test_string_qids_and_mixed_docnos_from_another_collection(tmp_path):
    """Realistic ids (106_1, docnos of mixed lengths, ties): a run whose queries are the
    qrels' but whose docnos are a passage collection's is refused by name."""
    qrels = write_qrels(tmp_path / "qrels", [("106_1", "D1", 2), ("106_1", "clueweb-9", 0),
                                             ("106_2", "D22", 1), ("106_2", "x", 0)])
    good = write_run(tmp_path / "doc.run", {"106_1": ["D1", "clueweb-9"], "106_2": ["x", "D22"]},
                     scores={"106_1": [2.0, 1.0], "106_2": [1.0, 1.0]})
    bad = write_run(tmp_path / "passage.run", {"106_1": ["7#0", "D1#1"], "106_2": ["D22#3"]})
    out = rpp("check", "--max-drop", "map=0.1", "--baseline", good, qrels, bad)
    assert out.code == 2 and out.err.startswith("rpp: candidate 'passage.run' ranks no")


def test_no_query_can_tell_two_runs_without_a_relevant_document_apart(tmp_path):
    a = non_relevant(tmp_path / "a.run", "a")
    b = non_relevant(tmp_path / "b.run", "b", flip=True)
    for gate in [(), ("-m", "map", "--max-drop", "P.10=0")]:
        out = rpp("check", "-Q", *gate, "--baseline", a, QRELS, b)
        assert out.code == 2, out.err
        assert out.err == ("rpp: neither the baseline 'a.run' nor candidate 'b.run' ranks a "
                              "relevant document, so no query can tell them apart and the gate "
                              "could not fail (another collection's ids, or the wrong "
                              "qrels?)\n")


def test_a_gate_that_can_see_a_difference_is_not_refused(tmp_path):
    """Without relevant documents, a count of retrieved documents still tells runs apart;
    and a candidate that reaches relevant documents against such a baseline is judged."""
    a = non_relevant(tmp_path / "a.run", "a")
    short = tmp_path / "short.run"
    short.write_text("".join(a.read_text().splitlines(keepends=True)[::2]))
    out = rpp("check", "-Q", "--max-drop", "num_ret=0", "--baseline", a, QRELS, short)
    assert out.code == 1 and "FAIL\tshort.run\tnum_ret\tdrop +" in out.err
    out = rpp("check", "-Q", "--baseline", a, QRELS, DPR)
    assert out.code == 0 and out.err.startswith("PASS\tdpr\trpp\teffect +")


def test_identical_runs_are_a_tie_the_gate_saw_and_pass(tmp_path):
    """The candidate of a change that does not touch ranking is the baseline byte for byte:
    a tie on every query, not a blind gate (the same gate fails a worse candidate)."""
    copy = tmp_path / "dpr-copy"
    shutil.copy(DPR, copy)
    out = rpp("check", "--max-drop", "map=0", "--baseline", DPR, QRELS, copy)
    assert out.code == 0
    assert out.err.splitlines()[-2:] == [
        "PASS\tdpr-copy\trpp\teffect +0.0000, p 1.0000 (randomization, alpha 0.05)",
        "PASS\tdpr-copy\tmap\tdrop +0.0000 (allowed 0)"]


def test_notes_come_before_every_verdict_line(tmp_path):
    out = rpp("check", "--permutations", "200", "-m", "rpp", "-m", "map", "--baseline", DPR,
              QRELS, BM25, DEMO / "runs" / "colbert")
    lines = out.err.splitlines()
    notes = [i for i, line in enumerate(lines) if line.startswith("rpp: note:")]
    verdicts = [i for i, line in enumerate(lines) if line.startswith(("PASS", "FAIL"))]
    assert notes and len(verdicts) == 4 and max(notes) < min(verdicts)
    assert len(lines) == len(notes) + len(verdicts)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_jsonl_and_csv_carry_each_input_files_sha256(tmp_path):
    """An input row per file, qrels, baseline, candidates in order, just before the overall
    verdict row; stdin has no digest (null, an empty field)."""
    odd = tmp_path / "run, with \"quotes\""
    shutil.copy(BM25, odd)
    out = rpp("check", "-Q", "--format", "jsonl", "--baseline", DPR, QRELS, odd)
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert out.code == 1 and rows[-1]["measure"] == "verdict"
    assert rows[-4:-1] == [{"measure": "input", "qid": "all", "run": str(p), "other": None,
                            "value": None, "verdict": None, "sha256": sha(p)}
                           for p in (QRELS, DPR, odd)]
    assert sum(r["measure"] == "input" for r in rows) == 3
    out = rpp("check", "-Q", "--format", "csv", "--baseline", DPR, QRELS, "-",
              stdin=BM25.read_bytes())
    lines = out.out.splitlines()
    assert lines[0] == "measure,qid,run,other,value,verdict"
    assert lines[-4:] == [f"input,all,{QRELS},,,{sha(QRELS)}", f"input,all,{DPR},,,{sha(DPR)}",
                          "input,all,'-,,,", "verdict,all,,dpr,,FAIL"]
    assert sha(QRELS) == "69102f31f1eda276625a5397be680e2c5853b38e0fdbdf080840eba057c862b9"


def test_check_as_a_function_gives_the_command_lines_verdicts():
    runs = {"dpr": DPR, "bm25": BM25, "colbert": DEMO / "runs" / "colbert"}
    notes: list[str] = []
    found = rpp_cli.check(QRELS, runs, baseline="dpr", measures=["rpp", "map"],
                          max_drops={"P.10": 0.01}, permutations=200, notes=notes)
    out = rpp("check", "--permutations", "200", "-m", "rpp", "-m", "map", "--max-drop",
              "P.10=0.01", "--format", "jsonl", "--baseline", DPR, QRELS, BM25, runs["colbert"])
    assert out.code == 1 and found.passed is False and notes
    lines = [line.split("\t") for line in out.err.splitlines() if line[:4] in ("PASS", "FAIL")]
    assert [(v["candidate"], v["measure"], v["passed"]) for v in found.verdicts] == \
        [(c, m, w == "PASS") for w, c, m, _ in lines]
    first = found.verdicts[0]
    assert first["gate"] == "significance" and set(first) == {
        "candidate", "measure", "gate", "passed", "effect", "p"}
    assert re.search(f"effect {first['effect']:+.4f}, p {first['p']:.4f}", lines[0][3])
    drop = found.verdicts[2]
    assert (drop["gate"], drop["delta"]) == ("max_drop", 0.01)
    assert f"drop {drop['drop']:+.4f}" in lines[2][3]
    evidence = [json.loads(line) for line in out.out.splitlines()]
    printed = [r for r in evidence if r["run"] is not None and r["measure"] != "input"]
    assert [(r["measure"], r["run"], r["other"]) for r in found.results.records()] == \
        [(r["measure"], r["run"], r["other"]) for r in printed]
    assert [r["value"] for r in found.results.records()] == pytest.approx(
        [r["value"] for r in printed], abs=5e-5)  # jsonl: 4 decimals, p-values in full


def test_check_as_a_function_refuses_as_the_command_line_does(tmp_path):
    other = renamed(DPR, tmp_path / "other.run")
    with pytest.raises(rpp_cli.InputError, match="candidate 'other' ranks no document judged"):
        rpp_cli.check(QRELS, {"dpr": DPR, "other": other}, baseline="dpr", notes=[])
    with pytest.raises(rpp_cli.InputError, match="baseline 'bm25': not among the runs"):
        rpp_cli.check(QRELS, {"dpr": DPR}, baseline="bm25", notes=[])
    found = rpp_cli.check(QRELS, [DPR, BM25], baseline=str(BM25), candidates=[str(DPR)],
                          max_drops={"map": 0.5}, confidence=0.9, notes=[])
    assert found.passed and [v["candidate"] for v in found.verdicts] == ["dpr", "dpr"]
    assert found.verdicts[1]["bound"] < 0.5 and found.verdicts[1]["confidence"] == 0.9


def action_step_env(inputs: dict[str, str], step: dict) -> dict[str, str]:
    """A composite step's env with ``${{ inputs.X }}`` replaced as GitHub replaces it."""
    return {k: re.sub(r"\$\{\{\s*inputs\.(\w+)\s*\}\}", lambda m: inputs.get(m[1], ""), v)
            for k, v in step.get("env", {}).items()}


@pytest.mark.slow
@pytest.mark.parametrize("candidate,code", [(DEMO / "runs" / "colbert", 0), (BM25, 1),
                                            (None, 2)])
def test_the_github_action_runs_the_gate_on_the_step_summary(tmp_path, candidate, code):
    """action.yml's steps: rpp installed from the action's own checkout, then its gate step
    run by bash as GitHub runs it, with a step summary file and rpp on PATH."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert set(action["inputs"]) == {"qrels", "baseline", "candidates", "args"}
    install, gate = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    assert install["run"] == 'python -m pip install --quiet "$GITHUB_ACTION_PATH"'
    if candidate is None:
        candidate = renamed(DPR, tmp_path / "other.run")
    inputs = {"qrels": str(QRELS), "baseline": str(DPR),
              "candidates": f"{DEMO / 'runs' / 'monot5'}\n {candidate}",
              "args": "--permutations 500 -m rpp --max-drop map=0.05"}
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    env = {**os.environ, **action_step_env(inputs, gate), "GITHUB_ACTION_PATH": str(ROOT),
           "GITHUB_STEP_SUMMARY": str(summary),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    res = subprocess.run([gate["shell"], "-c", gate["run"]], env=env, capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == code, res.stderr
    text = summary.read_text()
    if code == 2:
        assert text == "earlier step\n" and "'other.run' ranks no document judged" in res.stderr
        return
    assert text.startswith(f"earlier step\n### rpp check: {'PASS' if code == 0 else 'FAIL'} "
                           "(baseline dpr)\n")
    assert text.count("| monot5 |") == 2 and text.count(f"| {candidate.name} |") == 2
    assert res.stdout.count("rpp_p ") == 2 and "map_drop" in res.stdout


def test_a_p_value_below_the_printed_digits_reads_as_a_bound():
    """A verdict never says 'p 0.0000': a t-test's p of ~1e-9 reads 'p < 0.0001'; one the
    digits hold prints as it is."""
    from rpp_cli.report.common import p_text

    assert p_text(1e-9, 4) == "p < 0.0001" and p_text(0.031, 4) == "p 0.0310"
    assert p_text(5e-5, 4) == "p 0.0001" and p_text(0.0, 6) == "p < 0.000001"
    res = rpp("check", "-Q", "--test", "ttest", "-m", "map", "--baseline",
              DEMO / "runs" / "bm25", DEMO / "qrels", DEMO / "runs" / "monot5")
    assert res.code == 0 and "effect +0.3650, p < 0.0001 (ttest, alpha 0.05)" in res.err
