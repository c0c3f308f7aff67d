"""Random, real-looking small TREC collections (pure Python, seeded ``random.Random``).

The property tests in ``test_properties.py`` draw docnos from eight names of one to three
bytes; real collections do not look like that, and bugs hide in the difference (docnos of
different lengths that failed to join were missed). Here a collection mixes, within and
across its files:

- docnos of 1-100 bytes in many styles (``7``, ``MARCO_D1234567``, ``msmarco_passage_12_345678``,
  ``clueweb09-en0000-00-00000``, 40-byte hex, ``Zürich_Straße``, ``東京``, URLs) with many shared
  prefixes (``doc1``, ``doc10``, ``doc100``; long prefixes differing only in the last byte,
  around the 8-byte word boundaries);
- qids numeric and string (``7``, ``007``, ``106_1``, ``q-α``);
- scores coarse and tied (multiples of 0.5), negative, tiny and large, printed in scientific
  notation (``1e-3``, ``2.5E+2``);
- graded qrels 0-3 with some negative grades and docnos judged twice (the larger grade counts);
- runs that miss judged queries, retrieve unjudged docs and queries the qrels do not have.

:func:`generate` returns a :class:`Collection` (the data as Python dicts, which is what a
reference implementation reads); :func:`write_collection` writes it to files in one of three
styles: ``plain`` (one space between fields, LF, what systems usually write), ``ugly`` (tabs and
runs of spaces mixed between fields, leading and trailing whitespace, CRLF, a UTF-8 BOM, gzip
by magic bytes with a name without ``.gz``, ``#`` comments and blank lines, scores in other
notations) or ``mixed`` (each of those choices made at random per file). Every style encodes
exactly the same collection: evaluating it must give byte-identical output.

Every collection is a valid input (contract §1): no docno repeats within one query of one run,
each run has a distinct tag in column 6, at least one query has a relevant item, and each run
retrieves something for at least one query with a relevant item.
"""
from __future__ import annotations

import gzip
import random
from dataclasses import dataclass, field
from pathlib import Path

STYLES = ("plain", "ugly", "mixed")

# ---------------------------------------------------------------------------------------------
# ids

_UTF8_WORDS = ["Zürich_Straße", "東京", "Ελληνικά", "naïve_café", "Москва", "ß", "é", "日本語文書",
               "Åland", "ça", "Ωmega", "München", "😀", "北京大学", "Ñandú"]
_URL_WORDS = ["wiki", "Main_Page", "index.html", "news", "2009", "article", "p=123", "en",
              "Special:Random", "a-b-c", "docs", "Python_(language)", "%C3%BC", "archive"]
_FAMILY_ROOTS = ["doc", "d", "D", "WTX", "LA", "FT"]
_TAGS = ["bm25", "bm25.rm3", "monoT5", "dpr_v2", "SPLADE++", "colbert-e2e", "run7", "qld",
         "UMass_1", "ielab-x", "uogTr", "QL", "tct_colbert", "RM3.k10", "sys-A"]


def _numeric(rng: random.Random) -> str:
    return str(rng.randint(0, 10 ** rng.randint(1, 8)))


def _marco_doc(rng: random.Random) -> str:
    return f"MARCO_D{rng.randint(0, 10 ** rng.randint(1, 7))}"


def _marco_passage(rng: random.Random) -> str:
    return f"msmarco_passage_{rng.randint(0, 69):02d}_{rng.randint(0, 10 ** rng.randint(1, 9))}"


def _clueweb(rng: random.Random) -> str:
    return (f"clueweb09-en{rng.randint(0, 9999):04d}-{rng.randint(0, 99):02d}-"
            f"{rng.randint(0, 99999):05d}")


def _gov2(rng: random.Random) -> str:
    return f"GX{rng.randint(0, 272):03d}-{rng.randint(0, 99):02d}-{rng.randint(0, 9999999):07d}"


def _hex40(rng: random.Random) -> str:
    return f"{rng.getrandbits(160):040x}"


def _utf8(rng: random.Random) -> str:
    word = rng.choice(_UTF8_WORDS)
    return word if rng.random() < 0.4 else f"{word}_{rng.randint(0, 999)}"


def _url(rng: random.Random) -> str:
    parts = [rng.choice(_URL_WORDS) for _ in range(rng.randint(1, 12))]
    url = f"http://{rng.choice(['en.wikipedia.org', 'example.com', 'www.gov.uk'])}/" + \
        "/".join(parts)
    return url[:rng.randint(20, 100)]


def _short(rng: random.Random) -> str:
    return "".join(rng.choice("aAbzZ09_") for _ in range(rng.randint(1, 3)))


def _family(rng: random.Random) -> str:
    """Many shared prefixes: doc1, doc10, doc100, doc1000, doc11, ..."""
    root = rng.choice(_FAMILY_ROOTS)
    digits = rng.choice(["1", "10", "100", "1000", "11", "2", "20", "200", "9", "99999999"])
    return root + digits + ("" if rng.random() < 0.6 else str(rng.randint(0, 99)))


def _boundary_maker(rng: random.Random):
    """Docnos sharing one long prefix, of lengths around the 8-byte word boundaries, that
    differ only in their last byte (``xxxxxxxa``, ``xxxxxxxb``, ``xxxxxxxxa``, ...)."""
    base = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") for _ in range(100))

    def make(rng: random.Random) -> str:
        n = rng.choice([1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 63, 64, 65, 99, 100])
        return base[:n - 1] + rng.choice("abcXYZ019")
    return make


DOCNO_STYLES = {
    "numeric": _numeric, "marco_doc": _marco_doc, "marco_passage": _marco_passage,
    "clueweb": _clueweb, "gov2": _gov2, "hex40": _hex40, "utf8": _utf8, "url": _url,
    "short": _short, "family": _family, "boundary": None,  # made per collection
}

_QID_STYLES = [
    lambda rng: str(rng.randint(1, 999)),  # 7, 301
    lambda rng: f"{rng.randint(1, 99):03d}",  # 007
    lambda rng: f"{rng.randint(100, 120)}_{rng.randint(1, 9)}",  # 106_1
    lambda rng: f"q-{rng.choice('αβγ')}{rng.choice(['', '1', '12'])}",  # q-α
    lambda rng: f"MB{rng.randint(1, 60):02d}",
    lambda rng: str(rng.randint(1000000, 1200000)),  # MS MARCO style
]


# ---------------------------------------------------------------------------------------------
# the collection


@dataclass
class Collection:
    """One random collection.

    ``qrels[qid][docno]`` is the effective grade (the larger one of a docno judged twice);
    ``judgments`` lists every qrels line, duplicates included; ``runs[r][qid]`` is that run's
    list of (docno, score), best first as a system writes it (ties in arbitrary order);
    ``tags[r]`` is its tag. ``seed`` reproduces it.
    """

    seed: int
    qrels: dict[str, dict[str, int]]
    judgments: list[tuple[str, str, int]]
    runs: list[dict[str, list[tuple[str, float]]]]
    tags: list[str]
    notes: dict[str, object] = field(default_factory=dict)

    @property
    def file_names(self) -> list[str]:
        """The runs' file names in :func:`write_collection`, which are their names in rpp
        (contract §1; ``--names-from tag`` names them by ``tags``)."""
        return [f"run{r}" for r in range(len(self.runs))]

    @property
    def evaluated(self) -> list[str]:
        """Queries with a relevant item, in trec_eval order (byte order of the qid)."""
        return sorted((q for q, docs in self.qrels.items() if any(g > 0 for g in docs.values())),
                      key=lambda q: q.encode())


def _docnos(rng: random.Random, styles: list, k: int) -> list[str]:
    """``k`` distinct docnos of 1-100 bytes drawn from ``styles``."""
    out: dict[str, None] = {}
    while len(out) < k:
        d = rng.choice(styles)(rng)
        if 1 <= len(d.encode()) <= 100:
            out[d] = None
    return list(out)


def _score_values(rng: random.Random, style: str, k: int) -> list[float]:
    """``k`` scores best first in one of the styles real systems print."""
    if style == "coarse":  # many ties
        vals = [rng.randint(-4, 30) * 0.5 for _ in range(k)]
    elif style == "logprob":  # negative
        vals = [-rng.randint(1, 400) * 0.25 for _ in range(k)]
    elif style == "tiny":  # 1e-3, 2.5e-4: exact values of their scientific form
        vals = [float(f"{rng.randint(1, 40)}e-{rng.randint(2, 5)}") for _ in range(k)]
    elif style == "large":  # 2.5E+2
        vals = [float(f"{rng.randint(1, 40) * 0.5}e{rng.randint(1, 4)}") for _ in range(k)]
    elif style == "constant":  # every score tied: the docno decides
        vals = [rng.choice([0.0, 1.0, -1.0, 7.5])] * k
    elif style == "float32":  # distinct doubles, equal as C floats: trec_eval ties them
        base = [rng.randint(1, 400) + 0.5 for _ in range(max(1, k // 4))]
        vals = [rng.choice(base) + rng.randint(0, 9) * 1e-9 for _ in range(k)]
    else:  # "fine": 4 decimals, a few ties, either sign
        vals = [round(rng.uniform(-20, 40), rng.choice([1, 2, 4])) for _ in range(k)]
    return sorted(vals, reverse=True)


def generate(seed: int) -> Collection:
    """A random collection, a pure function of ``seed``."""
    rng = random.Random(seed)
    makers = {name: fn for name, fn in DOCNO_STYLES.items() if fn is not None}
    makers["boundary"] = _boundary_maker(rng)
    names = sorted(makers)
    chosen = names if rng.random() < 0.3 else rng.sample(names, rng.randint(1, 5))
    styles = [makers[n] for n in chosen]

    # queries: some judged, some only in runs
    n_judged = rng.randint(1, 6)
    qids: dict[str, None] = {}
    while len(qids) < n_judged + rng.randint(0, 2):
        q = rng.choice(_QID_STYLES)(rng)
        qids.setdefault(q)
    qid_list = list(qids)
    judged_q, run_only_q = qid_list[:n_judged], qid_list[n_judged:]

    # a docno universe shared by the queries (the same docno may appear under several)
    universe = _docnos(rng, styles, rng.randint(5, 80))
    pools = {q: rng.sample(universe, rng.randint(1, min(len(universe), 45))) for q in qid_list}

    grades = [0] * 45 + [1] * 25 + [2] * 15 + [3] * 8 + [-1] * 4 + [-2] * 3
    qrels: dict[str, dict[str, int]] = {}
    judgments: list[tuple[str, str, int]] = []
    for q in judged_q:
        pool = pools[q]
        judged = rng.sample(pool, rng.randint(1, len(pool)))
        if rng.random() < 0.3:  # judged docs no run can retrieve
            judged += [d for d in _docnos(rng, styles, rng.randint(1, 4)) if d not in pool]
        qrels[q] = {}
        for d in judged:
            g = rng.choice(grades)
            judgments.append((q, d, g))
            qrels[q][d] = g
            if rng.random() < 0.06:  # judged twice: the larger grade counts
                g2 = rng.choice(grades)
                judgments.append((q, d, g2))
                qrels[q][d] = max(g, g2)
    evaluated = [q for q in judged_q if any(g > 0 for g in qrels[q].values())]
    if not evaluated:
        q = rng.choice(judged_q)
        d = rng.choice(list(qrels[q]))
        judgments.append((q, d, 1))
        qrels[q][d] = max(qrels[q][d], 1)
        evaluated = [q]

    n_runs = rng.randint(2, 5)
    tags = rng.sample(_TAGS, n_runs)
    runs: list[dict[str, list[tuple[str, float]]]] = []
    for _ in range(n_runs):
        wanted = [q for q in qid_list if rng.random() < 0.8]
        if not any(q in evaluated for q in wanted):
            wanted.append(rng.choice(evaluated))
        score_style = rng.choice(["coarse", "logprob", "tiny", "large", "constant", "fine",
                                  "float32"])
        run: dict[str, list[tuple[str, float]]] = {}
        for q in wanted:
            pool = pools[q]
            rel = [d for d in pool if qrels.get(q, {}).get(d, 0) > 0]
            k = rng.randint(1, min(len(pool), 30))
            if rel and rng.random() < 0.5:  # a good run: relevant items first in line
                head = rng.sample(rel, rng.randint(1, len(rel)))
                rest = [d for d in pool if d not in head]
                docs = (head + rng.sample(rest, len(rest)))[:k]
            else:
                docs = rng.sample(pool, k)
            style = score_style if rng.random() < 0.9 else rng.choice(["coarse", "fine"])
            run[q] = list(zip(docs, _score_values(rng, style, k)))
        runs.append(run)
    rng.shuffle(judgments)
    return Collection(seed, qrels, judgments, runs, tags,
                      {"docno_styles": chosen, "run_only_queries": run_only_q})


# ---------------------------------------------------------------------------------------------
# writing


def _score_text(rng: random.Random, value: float, ugly: bool) -> str:
    """A text that parses back to exactly ``value`` (plain: ``repr``)."""
    if not ugly:
        return repr(value)
    candidates = [repr(value), f"{value:e}", f"{value:E}", f"{value:g}", f"{value:.10f}",
                  f"{value:.3e}", f"{value:.1E}", f"{value:.6G}"]
    if value == int(value) and abs(value) < 1e9:
        candidates += [str(int(value)), f"{int(value)}.", f"{int(value)}.000"]
    ok = [c for c in candidates if float(c) == value]
    return rng.choice(ok)


_SEPS = [" ", "\t", "  ", " \t", "\t ", "\t\t", "   \t  "]


def _encode_file(rng: random.Random, lines: list[list[str]], ugly: dict[str, bool],
                 comment: str) -> bytes:
    """Join fields and lines; ``ugly`` switches each kind of ugliness on or off."""
    out = []
    for fields in lines:
        if ugly["comments"] and rng.random() < 0.05:
            out.append(rng.choice(["", f"# {comment}", "#", "#\tcomment with\ttabs"]))
        if ugly["seps"]:
            text = "".join(f + rng.choice(_SEPS) for f in fields[:-1]) + fields[-1]
            if rng.random() < 0.2:
                text = rng.choice([" ", "\t", "  \t"]) + text
            if rng.random() < 0.2:
                text += rng.choice([" ", "\t", " \t "])
        else:
            text = " ".join(fields)
        out.append(text)
    if ugly["comments"]:
        out.insert(0, f"# {comment}")
        out.append("")
    eol = "\r\n" if ugly["crlf"] else "\n"
    body = "".join(line + (rng.choice(["\r\n", "\n"]) if ugly["mixed_eol"] else eol)
                   for line in out)
    if ugly["no_final_eol"]:
        body = body.rstrip("\r\n")
    data = body.encode("utf-8")
    if ugly["bom"]:
        data = b"\xef\xbb\xbf" + data
    if ugly["gzip"]:
        data = gzip.compress(data, mtime=0)
    return data


def _ugliness(rng: random.Random, style: str) -> dict[str, bool]:
    kinds = ["seps", "comments", "crlf", "mixed_eol", "no_final_eol", "bom", "gzip", "scores",
             "shuffle"]
    if style == "plain":
        return dict.fromkeys(kinds, False)
    if style == "ugly":
        return dict.fromkeys(kinds, True)
    return {k: rng.random() < 0.5 for k in kinds}


def write_collection(coll: Collection, directory: Path, style: str = "mixed",
                     seed: int = 0) -> tuple[Path, list[Path]]:
    """Write ``coll`` into ``directory`` as ``qrels`` and ``run<i>`` files in ``style``
    (see the module docstring); returns the qrels path and the run paths in run order.

    Gzip-compressed files keep names without ``.gz`` (detection is by magic bytes).
    """
    if style not in STYLES:
        raise ValueError(style)
    rng = random.Random(f"{coll.seed}/{style}/{seed}")
    directory.mkdir(parents=True, exist_ok=True)
    ugly = _ugliness(rng, style)
    rows = list(coll.judgments)
    if not ugly["shuffle"]:
        rows.sort(key=lambda r: (r[0].encode(), r[1].encode()))
    qlines = []
    for q, d, g in rows:
        it = rng.choice(["0", "Q0", "1"]) if ugly["seps"] else "0"
        gt = str(g) if not ugly["scores"] or rng.random() < 0.9 else f"{g}.0"
        qlines.append([q, it, d, gt])
    qrels_path = directory / "qrels"
    qrels_path.write_bytes(_encode_file(rng, qlines, ugly, "qrels written by realistic.py"))
    paths = []
    for run, tag, name in zip(coll.runs, coll.tags, coll.file_names):
        ugly = _ugliness(rng, style)
        lines = []
        for q, docs in run.items():
            for i, (d, s) in enumerate(docs):
                lines.append([q, "Q0", d, str(i + 1), _score_text(rng, s, ugly["scores"]), tag])
        path = directory / name
        path.write_bytes(_encode_file(rng, lines, ugly, f"run {tag} (système)"))
        paths.append(path)
    return qrels_path, paths
