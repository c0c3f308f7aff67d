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

# ASCII punctuation with a meaning within a line in CommonMark or GitHub's extensions (tables,
# strikethrough, autolinks, math); the rest of ASCII punctuation (, ( ) - + ' " / = ? ; %)
# means nothing there once these are escaped: a ( opens a link target only after a ], a - or +
# starts a list only at the start of a block.
MARKDOWN_SPECIAL = "\\`*_{}[]<>#!|~&$:@.^"
_MARKDOWN = str.maketrans({c: "\\" + c for c in MARKDOWN_SPECIAL})


def ident(text: str) -> str:
    """An id (bytes, held as UTF-8 text with undecodable bytes as surrogate escapes) as valid
    UTF-8 text, distinct ids staying distinct: a backslash is doubled and a byte that is not
    UTF-8 is written ``\\xHH`` (lowercase hex), everything else as it is."""
    if text.isascii() and "\\" not in text:
        return text
    raw = text.encode("utf-8", "surrogateescape").replace(b"\\", b"\\\\")
    return raw.decode("utf-8", "backslashreplace")


def markdown(text: str) -> str:
    """:data:`MARKDOWN_SPECIAL` backslash-escaped: CommonMark (and GitHub's Markdown) shows an
    escaped ASCII punctuation character as itself, never as markup, so a name cannot end a
    table cell (``|``), open a link, an image, HTML, an entity, a code span, emphasis, math
    (``$``) or an autolink (``:``, ``.``)."""
    return text.translate(_MARKDOWN)


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
