"""report/escape.py: each format's escape by hand-computed examples, and the properties that
make it safe: nothing a name holds becomes syntax, and distinct names stay distinct."""
from __future__ import annotations

import csv
import io
import json
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.report import escape

HOSTILE = ["evil|rpp|PASS|looks-fine|", "%", "&", "\\input", "=cmd", "@SUM(A1)", "$\\foo$",
           "$\\frac{1}{2}$", "+1", "-2", "'quoted", "[x](http://e.vil)", "<b>bold</b>",
           "**strong**", "`code`", "&#124;", "a--b", "``q''", "[5cm]", "*star", "_under_",
           "https://e.vil", "www.e.vil", "@user", ":rocket:", "#12", "~~x~~", "x^2", "{}",
           "Zürich_Straße", "東京"]


# -- ident: ids as injective UTF-8 text ----------------------------------------------------

def as_text(raw: bytes) -> str:
    """An id as the readers hold it (io/qrels.py to_text)."""
    return raw.decode("utf-8", "surrogateescape")


def test_ident_by_hand():
    """A byte that is not UTF-8 becomes four characters ``\\xHH``, a backslash two; the rest
    (ASCII, UTF-8 such as é = c3 a9) is kept as it is."""
    assert escape.ident(as_text(b"q\xff\xfe")) == "q\\xff\\xfe"
    assert escape.ident(as_text(b"q\\xff")) == "q\\\\xff"  # the 5 characters q \ x f f
    assert escape.ident(as_text(b"caf\xc3\xa9")) == "café"
    assert escape.ident(as_text(b"caf\xe9")) == "caf\\xe9"  # Latin-1 é
    assert escape.ident("106_1") == "106_1"
    assert escape.ident(as_text(b"\xe2\x80")) == "\\xe2\\x80"  # a cut sequence: two bytes


def unescape_ident(text: str) -> bytes:
    """The inverse of ident: ``\\\\`` is one backslash, ``\\xHH`` one byte."""
    return re.sub(rb"\\(\\|x[0-9a-f]{2})",
                  lambda m: b"\\" if m[1] == b"\\" else bytes([int(m[1][1:], 16)]),
                  text.encode("utf-8"))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.binary(min_size=1, max_size=12),
                          st.text(min_size=1, max_size=6).map(
                              lambda t: t.encode("utf-8", "surrogatepass")),
                          st.sampled_from([b"\\", b"\\x", b"\\xff", b"\xff", b"\\\xff"])),
                max_size=6).map(b"".join))
@pytest.mark.slow
def test_ident_is_valid_utf8_and_injective(raw):
    """Any bytes: the text encodes as strict UTF-8 (no surrogate left) and decodes back to
    exactly the bytes, so two distinct ids never print alike."""
    text = escape.ident(as_text(raw))
    encoded = text.encode("utf-8")  # strict: raises on a lone surrogate
    assert unescape_ident(text) == raw
    assert json.loads(json.dumps(text)).encode("utf-8") == encoded


# -- markdown ------------------------------------------------------------------------------

def gfm_cells(row: str) -> list[str]:
    """A GitHub table row's cells, split as GFM splits them: at every ``|`` that is not
    backslash-escaped (the leading and trailing pipes removed)."""
    cells, cell, i = [], "", 0
    body = row.strip()[1:-1]
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            cell += body[i:i + 2]
            i += 2
            continue
        if body[i] == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += body[i]
        i += 1
    return cells + [cell]


def test_markdown_by_hand():
    assert escape.markdown("evil|rpp|PASS|looks-fine|") == \
        "evil\\|rpp\\|PASS\\|looks-fine\\|"
    assert escape.markdown("[x](http://e.vil)") == "\\[x\\](http\\://e\\.vil)"
    assert escape.markdown("effect -0.5, p 0.01 (ttest): worse") == \
        "effect -0.5, p 0.01 (ttest): worse"  # nothing there starts markup
    assert escape.markdown("$\\frac{1}{2}$") == "\\$\\\\frac\\{1\\}\\{2\\}\\$"
    assert escape.markdown("Zürich東京7") == "Zürich東京7"
    assert escape.markdown("ndcg_cut.10") == "ndcg_cut.10"  # '_' inside a word, no link
    assert escape.markdown("P@10 _x_ me@host.org") == "P\\@10 \\_x\\_ me\\@host\\.org"
    assert escape.markdown("see www.x.io") == "see www\\.x\\.io"


@pytest.mark.parametrize("name", HOSTILE)
def test_markdown_cell_is_one_cell_of_literal_text(name):
    """In a table row, the escaped name is one cell; no character with a Markdown meaning is
    left bare, so no markup can start; unescaping gives the name back."""
    row = f"| {escape.markdown(name)} | FAIL |"
    cells = gfm_cells(row)
    assert len(cells) == 2 and cells[1].strip() == "FAIL"
    bare = re.sub(r"\\[" + re.escape(string.punctuation) + "]", "\0", cells[0])
    assert not set(bare) & set(escape.MARKDOWN_SPECIAL), (name, cells[0])
    for i in [i for i, c in enumerate(bare) if c == "_"]:  # '_' bare only inside a word
        assert 0 < i < len(bare) - 1 and bare[i - 1].isalnum() and bare[i + 1].isalnum(), \
            (name, cells[0])
    if re.search(r"www\.|://|@[^@\s]*\.", name, re.IGNORECASE):  # an autolink's marks
        assert not set(bare) & set(".:@"), (name, cells[0])
    assert re.sub(r"\\(.)", r"\1", cells[0].strip()) == name


# -- latex ---------------------------------------------------------------------------------

def test_latex_by_hand():
    assert escape.latex("\\input{/etc/passwd}") == \
        "\\textbackslash{}input\\{/etc/passwd\\}"
    assert escape.latex("a&b%c$d#e_f~g^h") == \
        "a\\&b\\%c\\$d\\#e\\_f\\textasciitilde{}g\\textasciicircum{}h"
    assert escape.latex("<|>") == "\\textless{}\\textbar{}\\textgreater{}"
    assert escape.latex("[5cm]*") == "{[}5cm{]}{*}"  # not the optional argument of \\
    assert escape.latex("a--b---c") == "a-{}-b-{}-{}-c"  # no en or em dash
    assert escape.latex("``q''") == \
        "\\textasciigrave{}\\textasciigrave{}q'{}'"  # no curly quote marks
    assert escape.latex('"u') == "\\textquotedbl{}u"  # not babel's shorthand for ü
    assert escape.latex("Zürich") == "Zürich"


@pytest.mark.parametrize("name", HOSTILE)
def test_latex_has_no_live_special(name):
    """After escaping, every special character is escaped or inside one of the text
    commands; no control word but those can appear (``\\input`` is text)."""
    text = escape.latex(name)
    words = set(re.findall(r"\\([a-zA-Z]+)", text))
    assert words <= {"textbackslash", "textasciitilde", "textasciicircum", "textless",
                     "textgreater", "textbar", "textquotedbl", "textasciigrave"}
    bare = re.sub(r"\\text[a-z]+\{\}|\\[&%$#_{}]|\{[][*]?\}", "", text)
    assert not re.search(r"[\\&%$#_{}~^\[\]*<>|\"`]", bare), (name, text)


# -- csv -----------------------------------------------------------------------------------

@pytest.mark.parametrize("name, field", [
    ("=cmd", "'=cmd"), ("@SUM(A1)", "'@SUM(A1)"), ("+1", "'+1"), ("-2", "'-2"),
    ("'quoted", "''quoted"),
    ('=HYPERLINK("http://e.vil","x")', '"\'=HYPERLINK(""http://e.vil"",""x"")"'),
    ("a,b", '"a,b"'), ("a=b", "a=b"), ("bm25", "bm25")])
def test_csv_by_hand(name, field):
    """A leading = + - @ (or ') gets a ' in front; RFC 4180 quotes a field with , or "."""
    assert escape.csv_field(name) == field


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="=+-@'\",a\t\r", min_size=1, max_size=5), min_size=1,
                max_size=5))
def test_csv_fields_never_start_a_formula_and_parse_back(names):
    """No parsed field starts with a formula character; one leading ' removed gives each
    name back, so distinct names stay distinct."""
    line = ",".join(escape.csv_field(n) for n in names)
    fields = next(csv.reader(io.StringIO(line)))
    assert not any(f.startswith(("=", "+", "-", "@", "\t", "\r")) for f in fields)
    assert [f[1:] if f.startswith("'") else f for f in fields] == names


# -- json and plot labels ------------------------------------------------------------------

def test_json_string_is_ascii_json():
    text = escape.json_string("evil\"|東京\\")
    assert text.isascii() and json.loads(text) == "evil\"|東京\\"


def test_plot_label_escapes_every_dollar():
    assert escape.plot_label("$\\frac{1}{2}$") == "\\$\\frac{1}{2}\\$"
    assert escape.plot_label("a\\$b") == "a\\\\$b"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["$\\foo$", "$\\frac{1}{2}$", "a\\$b$", "$x$ $y$", "_hidden"])
def test_plot_label_is_drawn_as_written(tmp_path, name):
    """matplotlib draws the escaped label as the name itself, never as mathtext (``$\\foo$``
    would fail, ``$\\frac{1}{2}$`` would be a fraction): the SVG holds the text literally."""
    from rpp_cli.report import plot
    import matplotlib
    plt = plot._pyplot()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig, ax = plt.subplots()
        line = ax.plot([0, 1], [0, 1], label=escape.plot_label(name))
        ax.axhline(0.5)  # a reference line: not in the legend
        plot._legend(ax, line)
        ax.set_title(escape.plot_label(name))
        out = tmp_path / "label.svg"
        fig.savefig(out)
        plt.close(fig)
    svg = out.read_text()
    shown = name.replace("&", "&amp;").replace("<", "&lt;")
    assert svg.count(f">{shown}<") == 2  # the title and the legend entry, as text
