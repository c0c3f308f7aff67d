"""Merge realistic collections (tests/realistic.py) into one graded collection where many
queries lack grade 3 and some have no relevant item: ``python tests/golden/levels/make.py DIR``
from the repository root writes DIR/qrels and the runs DIR/bm25, DIR/dpr, DIR/splade."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.realistic import generate  # noqa: E402

TAGS = ["bm25", "dpr", "splade"]
out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
qrels, runs = [], {t: [] for t in TAGS}
for seed in range(1, 40):
    c = generate(seed)
    if len(c.runs) < 3:
        continue
    pre = f"{seed}_" if seed % 2 else f"q{seed}-"
    for q in sorted(c.qrels, key=str.encode):  # one line per judged docno (trec_eval 9.0.8
        for d, g in c.qrels[q].items():       # rejects a docno judged twice): its larger grade
            qrels.append(f"{pre}{q} 0 {d} {g}")
    for t, run in zip(TAGS, c.runs):
        for q, docs in run.items():
            for i, (d, s) in enumerate(docs):
                runs[t].append(f"{pre}{q} Q0 {d} {i + 1} {s!r} {t}")
    if len(qrels) > 400:
        break
(out / "qrels").write_text("\n".join(qrels) + "\n")
for t in TAGS:
    (out / t).write_text("\n".join(runs[t]) + "\n")
