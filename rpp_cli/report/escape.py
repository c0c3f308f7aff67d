"""Text fields as each output format must carry them (contract §7): one function per format,
used by every writer of that format, so that no name or id read from a file can add a cell, a
row, a formula, markup or math to what rpp writes, and every output is valid UTF-8.

An id (qid, docno, subtopic) is bytes; :func:`ident` gives its one text form for every format
but trec text (which writes the bytes themselves, as trec_eval does). Run and measure names are
text already (contract §1 keeps them printable UTF-8), so only the format's own escape applies.
"""
from __future__ import annotations

import csv
import io
import json
import re

# ASCII punctuation that can start markup wherever it stands in CommonMark or GitHub's
# extensions (a cell's end, links, images, HTML, entities, code spans, * emphasis,
# strikethrough, math): always escaped. The rest (, ( ) - + ' " / = ? ; %) means nothing
# within a line once these are escaped.
MARKDOWN_SPECIAL = "\\`*{}[]<>#!|~&$^"
_MARKDOWN = str.maketrans({c: "\\" + c for c in MARKDOWN_SPECIAL})
# '_' opens emphasis only beside what is not a letter or digit (GFM's flanking rules): escaped
# there, never inside a word (ndcg_cut, P_10).
_LONE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
# GitHub's autolinks (www., a scheme's ://, an e-mail address): '.', ':' and '@' are escaped in
# a text that holds one, and only there, so P@10 and 0.25 read as themselves.
_AUTOLINK = re.compile(r"www\.|://|@[^@\s]*\.", re.IGNORECASE)
_LINK_PUNCTUATION = str.maketrans({c: "\\" + c for c in ".:@"})


def ident(text: str) -> str:
    """An id (bytes, held as UTF-8 text with undecodable bytes as surrogate escapes) as valid
    UTF-8 text, distinct ids staying distinct: a backslash is doubled and a byte that is not
    UTF-8 is written ``\\xHH`` (lowercase hex), everything else as it is."""
    if text.isascii() and "\\" not in text:
        return text
    raw = text.encode("utf-8", "surrogateescape").replace(b"\\", b"\\\\")
    return raw.decode("utf-8", "backslashreplace")


def markdown(text: str) -> str:
    """``text`` as literal Markdown, escaped only where its syntax needs it: CommonMark (and
    GitHub's Markdown) shows an escaped ASCII punctuation character as itself, so a name
    cannot end a table cell (``|``), open a link, an image, HTML, an entity, a code span,
    emphasis, math (``$``) or an autolink; ``.``, ``_`` and ``@`` stay bare where they start
    nothing (``ndcg_cut.10``, ``P@10``)."""
    escaped = _LONE_UNDERSCORE.sub(r"\\_", text.translate(_MARKDOWN))
    return escaped.translate(_LINK_PUNCTUATION) if _AUTOLINK.search(text) else escaped


_LATEX = str.maketrans({
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
    '"': r"\textquotedbl{}", "`": r"\textasciigrave{}",
    "[": "{[}", "]": "{]}", "*": "{*}"})
_LIGATURE = re.compile(r"(?<=[-',!?])(?=[-',])")  # after translation: no backquote left


def latex(text: str) -> str:
    """``text`` safe in LaTeX text mode and typeset as written: the ten specials escaped (so
    ``\\input`` is text), ``< > | " ` `` as text symbols (a ``"`` is also babel's shorthand:
    ``"u`` would be ü), ``[ ] *`` braced (after a row's ``\\\\`` they would be read as its
    optional argument or star), and ``{}`` between characters that the fonts would join into
    a ligature (``--`` is a dash, two quotes one quote mark)."""
    return _LIGATURE.sub("{}", text.translate(_LATEX))


FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_field(text: str) -> str:
    """``text`` as one CSV field (RFC 4180 quoting where it needs it); a text that a
    spreadsheet would take as a formula (starting ``= + - @``, tab or CR: OWASP's list) gets a
    ``'`` in front, and so does one starting with ``'`` itself, so that removing one leading
    ``'`` gives every text back."""
    if text.startswith(FORMULA_START):
        text = "'" + text
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerow([text])  # CR and LF in a field: quoted
    return buf.getvalue()[:-2]


def json_string(text: str) -> str:
    """``text`` as a JSON string, non-ASCII as ``\\u`` escapes: valid JSON and plain ASCII."""
    return json.dumps(text)


def plot_label(text: str) -> str:
    """``text`` for a matplotlib label, drawn as written: ``$`` escaped, so that no name turns
    into mathtext (``$\\frac{1}{2}$`` is not drawn as a fraction, ``$\\foo$`` does not fail)."""
    return text.replace("$", r"\$")
