/* rpp's compiled data core: the loops over bytes and rows that numpy cannot vectorise.
 *
 *   split        whitespace-separated lines -> (start, length) of chosen fields, per line
 *   parse_floats tokens -> finite doubles (C's strtod in the "C" locale, whole token)
 *   gather       strings at offsets -> one after another (a column in a buffer of its own)
 *   rank         rows -> order by (query asc, score desc, docno desc by bytes)
 *   StrMap       exact dictionary (int64 key, bytes) -> dense code; identity is decided by
 *                comparing the bytes, the hash only finds candidates
 *   DocScores    one query's distinct docnos and their best scores, compact (a query too
 *                long to hold as rows), ranked in place
 *   interleave   offline interleaving of pairs of rankings: per query, the click-weighted
 *                preference of each balanced or team-draft interleaving
 *                (measures/interleaving.py)
 *   permuted_sums the per-trial sums of a randomized Tukey HSD (stats/paired.py)
 *   format_rows  the report's lines: names and values printed with fixed decimals
 *
 * Every function takes and fills flat buffers (numpy arrays, bytes) and knows nothing of
 * files or formats; the Python wrapper (rpp_cli/core) owns the semantics and the messages.
 * The heavy loops run with the GIL released, so a thread pool over runs uses every core.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __APPLE__
#include <xlocale.h>
#endif

/* ---------------------------------------------------------------- buffers */

/* A contiguous buffer of `count` items of `itemsize` bytes (itemsize 1: any bytes-like). */
static int get_array(PyObject *obj, Py_ssize_t itemsize, int writable, Py_buffer *view,
                     const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (itemsize > 1 && view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes, got %zd", what,
                     itemsize, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static Py_ssize_t count_of(const Py_buffer *v) { return v->len / (v->itemsize ? v->itemsize : 1); }

/* The buffers a call holds, released together on its one way out. */
typedef struct { Py_buffer v[8]; int n; } Views;

static Py_buffer *view(Views *vs, PyObject *obj, Py_ssize_t itemsize, int writable,
                       const char *what) {
    if (get_array(obj, itemsize, writable, &vs->v[vs->n], what) < 0) return NULL;
    return &vs->v[vs->n++];
}

static void release(Views *vs) {
    while (vs->n > 0) PyBuffer_Release(&vs->v[--vs->n]);
}

/* 1 when every x[i] is in [0, bound); else 0 with an IndexError saying `message`. */
static int all_in_range(const int64_t *x, Py_ssize_t n, int64_t bound, const char *message) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (x[i] < 0 || x[i] >= bound) {
            PyErr_SetString(PyExc_IndexError, message);
            return 0;
        }
    return 1;
}

/* ---------------------------------------------------------------- split */

enum { ERR_NONE = 0, ERR_CONTROL = 1, ERR_TOO_LONG = 2, ERR_CAPACITY = 3, ERR_UNSAFE = 4,
       ERR_LINE = 5 };

/* Byte classes of the tokenizer: part of a field, a blank (space, tab), a byte >= 0x80 (the
 * start of a UTF-8 sequence or a byte that is not UTF-8: looked at by high_field), or anything
 * else (LF, CR and the control bytes, each looked at by hand). */
enum { FIELD = 0, BLANK = 1, OTHER = 2, HIGH = 3 };
static unsigned char byte_class[256];

static void init_byte_class(void) {
    for (int c = 0; c < 256; c++)
        byte_class[c] = (c < 0x20 || c == 0x7f) ? OTHER : c >= 0x80 ? HIGH : FIELD;
    byte_class[' '] = byte_class['\t'] = BLANK;
}

/* The length of the valid UTF-8 sequence at p[0..n) (as Python's strict decoder accepts it:
 * no overlong form, no surrogate, at most U+10FFFF) and its code point; 0 when there is none. */
static Py_ssize_t utf8_at(const unsigned char *p, Py_ssize_t n, uint32_t *cp) {
    unsigned char c = p[0];
    Py_ssize_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    uint32_t v = c & (0x7F >> len);
    for (Py_ssize_t j = 1; j < len; j++) {
        if (j > 1 && (p[j] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (p[j] & 0x3F);
    }
    *cp = v;
    return len;
}

/* Characters refused in every field (contract §1): they would rewrite a terminal line or
 * reorder what a reader sees. C1 controls U+0080-U+009F, the line and paragraph separators
 * U+2028-U+2029, the bidirectional embeddings and overrides U+202A-U+202E and isolates
 * U+2066-U+2069. */
static inline int unsafe_char(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x2028 && cp <= 0x202E)
        || (cp >= 0x2066 && cp <= 0x2069);
}

/* The rest of a field from p[i] >= 0x80 on: the offset where it ends (the first blank, line
 * end or control byte), or -1 when a character in it is refused, with *at its offset, *cp its
 * code point and *lone 1 when it is a byte that starts no valid UTF-8 sequence: such a byte
 * stands for the Latin-1 character of its value, and 0x80-0x9F are C1 controls there too.
 * Out of line: the loop over ASCII fields stays as small as it was. */
static Py_ssize_t __attribute__((noinline))
high_field(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t *at, uint32_t *cp,
           int *lone) {
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            if (byte_class[c] != FIELD) break;
            i++;
            continue;
        }
        /* leads of which every valid sequence is allowed (U+00C0-U+07FF, U+1000-U+1FFF,
         * U+3000-U+CFFF, U+E000-U+FFFF): check the continuation bytes only */
        if (c >= 0xC3 && c <= 0xDF && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
            i += 2;
            continue;
        }
        if ((c == 0xE1 || (c >= 0xE3 && c <= 0xEC) || c >= 0xEE) && c <= 0xEF && i + 2 < n
            && (p[i + 1] & 0xC0) == 0x80 && (p[i + 2] & 0xC0) == 0x80) {
            i += 3;
            continue;
        }
        Py_ssize_t len = utf8_at(p + i, n - i, cp);
        *lone = len == 0;
        if (len == 0) {
            len = 1;
            *cp = p[i];
        }
        if (unsafe_char(*cp)) {
            *at = i;
            return -1;
        }
        i += len;
    }
    return i;
}

/* Whether the line starting at p[ls] has more than max_line bytes before its LF (or before
 * the data's end, where it has none): decided by its first max_line + 1 bytes alone, so that
 * a reader holding only those (a streamed file) decides it as one holding the whole line. */
static int line_too_long(const unsigned char *p, Py_ssize_t ls, Py_ssize_t n,
                         Py_ssize_t max_line) {
    return n - ls > max_line && memchr(p + ls, '\n', (size_t)max_line + 1) == NULL;
}

/* split(data, fields, max_token, max_line, nfields_out, starts_out, lens_out)
 *   -> (rows, error, error_offset, a, b)
 *
 * Lines end at LF; a CR directly before LF (or at the end of the data) is part of the line
 * end. Fields are separated by runs of spaces and tabs. A UTF-8 BOM at offset 0 is skipped.
 * Blank lines and lines whose first field starts with '#' are not rows. Any other byte below
 * 0x20, and 0x7f, stops with ERR_CONTROL (a = the byte); a character that high_field refuses
 * stops with ERR_UNSAFE (a = its code point, or the byte when it is not UTF-8; b = 1 for a
 * byte that is not UTF-8, else 0); a field longer than max_token stops
 * with ERR_TOO_LONG (a = 1-based field, b = its length). A line of more than max_line bytes
 * stops with ERR_LINE at its start, before any error within it. error_offset is the byte offset of
 * the error (its line is counted by the caller). For each row: its number of fields, and for
 * the fields listed in `fields` (0-based) start offset and length, column-major: field j of
 * row r at [j * capacity + r], -1 / 0 when the row has no such field. */
static PyObject *split(PyObject *self, PyObject *args) {
    PyObject *data_o, *fields_o, *nf_o, *st_o, *ln_o;
    Py_ssize_t max_token, max_line;
    if (!PyArg_ParseTuple(args, "OOnnOOO", &data_o, &fields_o, &max_token, &max_line, &nf_o,
                          &st_o, &ln_o))
        return NULL;
    Views vs = {.n = 0};
    PyObject *result = NULL;
    Py_buffer *data, *fields, *nf, *st, *ln;
    if (!(data = view(&vs, data_o, 1, 0, "data")) || !(fields = view(&vs, fields_o, 4, 0, "fields"))
        || !(nf = view(&vs, nf_o, 4, 1, "nfields")) || !(st = view(&vs, st_o, 8, 1, "starts"))
        || !(ln = view(&vs, ln_o, 4, 1, "lens")))
        goto done;

    const unsigned char *p = data->buf;
    const Py_ssize_t n = data->len;
    const int32_t *want = fields->buf;
    const Py_ssize_t k = count_of(fields);
    int32_t *nfields = nf->buf;
    int64_t *starts = st->buf;
    int32_t *lens = ln->buf;
    const Py_ssize_t cap = count_of(nf);
    int field_slot[256];
    for (int f = 0; f < 256; f++) field_slot[f] = -1;
    for (Py_ssize_t j = 0; j < k; j++)
        if (want[j] >= 0 && want[j] < 256) field_slot[want[j]] = (int)j;
    if (count_of(st) < cap * k || count_of(ln) < cap * k) {
        PyErr_SetString(PyExc_ValueError, "split: output arrays too small");
        goto done;
    }

    Py_ssize_t rows = 0, err_at = -1, err_a = 0, err_b = 0;
    int err = ERR_NONE;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t i = (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) ? 3 : 0;
    while (i < n && err == ERR_NONE) {
        /* one line: [i, end) */
        Py_ssize_t nfld = 0, ls = i;
        int comment = 0;
        if (rows >= cap) { err = ERR_CAPACITY; err_at = i; break; }
        for (Py_ssize_t j = 0; j < k; j++) {
            starts[j * cap + rows] = -1;
            lens[j * cap + rows] = 0;
        }
        for (;;) {
            while (i < n && byte_class[p[i]] == BLANK) i++;
            if (i >= n || p[i] == '\n') { /* the line's end: one compare, no second scan */
                if (i - ls > max_line) { err = ERR_LINE; err_at = ls; }
                if (i < n) i++;
                break;
            }
            unsigned char c = p[i];
            if (c == '\r' && (i + 1 == n || p[i + 1] == '\n')) { i++; continue; }
            /* a field: bytes of class FIELD, ended by a blank, a line end or the data end */
            Py_ssize_t s = i;
            while (i < n && byte_class[p[i]] == FIELD) i++;
            if (i < n && byte_class[p[i]] >= OTHER) { /* one test for ASCII fields, as before */
                if (byte_class[p[i]] == HIGH) {
                    uint32_t cp = 0;
                    int lone = 0;
                    i = high_field(p, i, n, &err_at, &cp, &lone);
                    if (i < 0) {
                        err = ERR_UNSAFE; err_a = cp; err_b = lone;
                        break;
                    }
                }
                if (i < n && byte_class[p[i]] == OTHER && p[i] != '\n'
                    && !(p[i] == '\r' && (i + 1 == n || p[i + 1] == '\n'))) {
                    err = ERR_CONTROL; err_at = i; err_a = p[i];
                    break;
                }
            }
            if (nfld == 0 && p[s] == '#') comment = 1;
            if (!comment && i - s > max_token) {
                err = ERR_TOO_LONG; err_at = s; err_a = nfld + 1; err_b = i - s;
                break;
            }
            if (!comment && nfld < 256 && field_slot[nfld] >= 0) {
                starts[field_slot[nfld] * cap + rows] = s;
                lens[field_slot[nfld] * cap + rows] = (int32_t)(i - s);
            }
            if (nfld < INT32_MAX) nfld++;
        }
        if (err != ERR_NONE && err != ERR_LINE && line_too_long(p, ls, n, max_line)) {
            err = ERR_LINE; err_at = ls; /* the line's length decides before what is in it */
        }
        if (err != ERR_NONE) break;
        if (nfld > 0 && !comment) nfields[rows++] = (int32_t)nfld;
    }
    Py_END_ALLOW_THREADS
    if (err == ERR_CAPACITY)
        PyErr_SetString(PyExc_ValueError, "split: more lines than the capacity given");
    else
        result = Py_BuildValue("nnnnn", rows, (Py_ssize_t)err, err_at, err_a, err_b);
done:
    release(&vs);
    return result;
}

/* count_lines(data) -> the number of LF bytes (memchr: vectorised by the C library). */
static PyObject *count_lines(PyObject *self, PyObject *arg) {
    Py_buffer data;
    if (get_array(arg, 1, 0, &data, "data") < 0) return NULL;
    Py_ssize_t count = 0;
    Py_BEGIN_ALLOW_THREADS
    const char *p = data.buf, *end = p + data.len;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        count++;
        p++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(count);
}

/* ---------------------------------------------------------------- numbers */

static locale_t c_locale;

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21,
                                 1e22};

/* Clinger's fast path: a plain decimal [+-]digits[.digits] with at most 15 significant digits
 * and 22 decimals is m / 10^k with both exact doubles, so one IEEE division gives the correctly
 * rounded value, which is what strtod returns. 0 when the token is anything else. */
static inline int plain_decimal(const char *p, int32_t n, double *out) {
    int32_t i = 0;
    int neg = 0, dot = 0, any = 0, digits = 0, decimals = 0;
    uint64_t m = 0;
    if (i < n && (p[i] == '-' || p[i] == '+')) neg = p[i++] == '-';
    for (; i < n; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9') {
            any = 1;
            decimals += dot;
            m = m * 10 + (uint64_t)(c - '0');
            if (m && ++digits > 15) return 0;
        } else if (c == '.' && !dot) {
            dot = 1;
        } else {
            return 0;
        }
    }
    if (!any || decimals > 22) return 0;
    double v = (double)m / POW10[decimals];
    *out = neg ? -v : v;
    return 1;
}

/* The arguments (data, starts, lens, out) of a function over strings at offsets: buffers of
 * bytes, int64, int32 and writable items of out_item bytes; -1 with an exception if not. */
static int strings_args(PyObject *args, Views *vs, Py_buffer **data, Py_buffer **st,
                        Py_buffer **ln, Py_buffer **out, Py_ssize_t out_item) {
    PyObject *data_o, *st_o, *ln_o, *out_o;
    if (!PyArg_ParseTuple(args, "OOOO", &data_o, &st_o, &ln_o, &out_o)) return -1;
    if (!(*data = view(vs, data_o, 1, 0, "data")) || !(*st = view(vs, st_o, 8, 0, "starts"))
        || !(*ln = view(vs, ln_o, 4, 0, "lens")) || !(*out = view(vs, out_o, out_item, 1, "out")))
        return -1;
    return 0;
}

/* The total length of the strings data[starts[r]:starts[r] + lens[r]] of n rows, or -1 with
 * a ValueError (``what``: the caller's name) when one lies outside the data. */
static Py_ssize_t strings_total(const Py_buffer *data, const int64_t *starts,
                                const int32_t *lens, Py_ssize_t n, const char *what) {
    Py_ssize_t total = 0;
    for (Py_ssize_t r = 0; r < n; r++) {
        if (starts[r] < 0 || lens[r] < 0 || starts[r] > data->len - lens[r]) {
            PyErr_Format(PyExc_ValueError, "%s: a string out of the data", what);
            return -1;
        }
        total += lens[r];
    }
    return total;
}

/* Those strings one after another at o (checked by strings_total; no Python calls: the caller
 * may have released the GIL). */
static void copy_strings(char *o, const char *p, const int64_t *starts, const int32_t *lens,
                         Py_ssize_t n) {
    for (Py_ssize_t r = 0; r < n; r++) {
        memcpy(o, p + starts[r], (size_t)lens[r]);
        o += lens[r];
    }
}

/* gather(data, starts, lens, out) -> None: the strings data[starts[r]:starts[r] + lens[r]]
 * one after another into out (bytes, exactly the sum of lens; each string in bounds). */
static PyObject *gather(PyObject *self, PyObject *args) {
    Views vs = {.n = 0};
    PyObject *result = NULL;
    Py_buffer *data, *st, *ln, *out;
    if (strings_args(args, &vs, &data, &st, &ln, &out, 1) < 0)
        goto done;
    const Py_ssize_t n = count_of(st);
    if (count_of(ln) != n) {
        PyErr_SetString(PyExc_ValueError, "gather: starts and lens of different lengths");
        goto done;
    }
    Py_ssize_t total = strings_total(data, st->buf, ln->buf, n, "gather");
    if (total < 0)
        goto done;
    if (total != out->len) {
        PyErr_SetString(PyExc_ValueError, "gather: out is not the size of the strings");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    copy_strings(out->buf, data->buf, st->buf, ln->buf, n);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(&vs);
    return result;
}

/* extend(buffer, data[, starts, lens]) -> None: ``buffer += data`` for a bytearray, or
 * ``+=`` the strings data[starts[r]:starts[r] + lens[r]] one after another (what gather
 * would give, without a copy between), the copy made without the GIL: readers grow their kept
 * columns by every window while other readers work. Everything is checked before the buffer
 * changes; its resize (a realloc) fails as ``+=`` does while it is exported (a live view). */
enum { EXTEND_NOGIL_BYTES = 1 << 16 };
static PyObject *extend(PyObject *self, PyObject *args) {
    PyObject *target, *st_o = NULL, *ln_o = NULL, *result = NULL;
    Py_buffer src;
    Views vs = {.n = 0};
    if (!PyArg_ParseTuple(args, "O!y*|OO", &PyByteArray_Type, &target, &src, &st_o, &ln_o))
        return NULL;
    const int64_t *starts = NULL;
    const int32_t *lens = NULL;
    Py_ssize_t n = 0, total = src.len;
    if (st_o || ln_o) {
        Py_buffer *st, *ln;
        if (!st_o || !ln_o) {
            PyErr_SetString(PyExc_TypeError, "extend: starts and lens go together");
            goto done;
        }
        if (!(st = view(&vs, st_o, 8, 0, "starts")) || !(ln = view(&vs, ln_o, 4, 0, "lens")))
            goto done;
        n = count_of(st);
        if (count_of(ln) != n) {
            PyErr_SetString(PyExc_ValueError, "extend: starts and lens of different lengths");
            goto done;
        }
        starts = st->buf;
        lens = ln->buf;
        if ((total = strings_total(&src, starts, lens, n, "extend")) < 0)
            goto done;
    }
    Py_ssize_t old = PyByteArray_GET_SIZE(target);
    if (total > PY_SSIZE_T_MAX - old) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyByteArray_Resize(target, old + total) < 0)
        goto done;
    char *dst = PyByteArray_AS_STRING(target) + old;
    /* A small copy keeps the GIL: handing it to another thread and back costs more than the
     * copy (a few lines of a small window, thousands of times a run). */
    PyThreadState *save = total + 16 * n >= EXTEND_NOGIL_BYTES ? PyEval_SaveThread() : NULL;
    if (starts)
        copy_strings(dst, src.buf, starts, lens, n);
    else
        memcpy(dst, src.buf, (size_t)total);
    if (save) PyEval_RestoreThread(save);
    result = Py_NewRef(Py_None);
done:
    release(&vs);
    PyBuffer_Release(&src);
    return result;
}

/* parse_floats(data, starts, lens, out) -> index of the first token that is not a finite
 * number as a whole (strtod, "C" locale), or -1. Absent tokens (start -1) are bad. */
static PyObject *parse_floats(PyObject *self, PyObject *args) {
    Views vs = {.n = 0};
    PyObject *result = NULL;
    Py_buffer *data, *st, *ln, *out;
    if (strings_args(args, &vs, &data, &st, &ln, &out, 8) < 0)
        goto done;
    Py_ssize_t n = count_of(out), bad = -1;
    if (count_of(st) != n || count_of(ln) != n) {
        PyErr_SetString(PyExc_ValueError, "parse_floats: arrays of different lengths");
        goto done;
    }
    const char *p = data->buf;
    const Py_ssize_t size = data->len;
    const int64_t *starts = st->buf;
    const int32_t *lens = ln->buf;
    double *values = out->buf;
    Py_BEGIN_ALLOW_THREADS
    char local[4097];
    for (Py_ssize_t r = 0; r < n; r++) {
        int64_t s = starts[r];
        int32_t len = lens[r];
        if (s < 0 || len <= 0 || len >= (int32_t)sizeof local || s > size - len) { bad = r; break; }
        if (plain_decimal(p + s, len, &values[r])) continue;
        memcpy(local, p + s, (size_t)len);
        local[len] = '\0';
        char *end;
        double v = strtod_l(local, &end, c_locale);
        if (end != local + len || !isfinite(v)) { bad = r; break; }
        values[r] = v;
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(bad);
done:
    release(&vs);
    return result;
}

/* ---------------------------------------------------------------- rank */

typedef struct {
    const unsigned char *data;
    const int64_t *start;
    const int32_t *len;
    const double *score;
} RankKeys;

/* <0 when row a goes before row b: score desc, then docno desc (bytes), then row. */
static inline int rank_cmp(const RankKeys *k, int64_t a, int64_t b) {
    double sa = k->score[a], sb = k->score[b];
    if (sa != sb) return sa > sb ? -1 : 1;
    int32_t la = k->len[a], lb = k->len[b];
    int c = memcmp(k->data + k->start[a], k->data + k->start[b], (size_t)(la < lb ? la : lb));
    if (c == 0) c = (la > lb) - (la < lb);
    if (c != 0) return -c;
    return (a > b) - (a < b);
}

/* A stable merge sort NAME(idx, tmp, n, keys) of idx[0:n] (items of type T; tmp has room for
 * n / 2 + 1), CMP(keys, a, b) < 0 when item a goes before item b: one definition for every
 * order the kernel sorts by (rows of a ranking, the entries of a DocScores). */
#define DEFINE_MERGE_SORT(NAME, T, KEYS, CMP)                                               \
static void NAME(T *idx, T *tmp, Py_ssize_t n, KEYS k) {                                     \
    if (n < 2) return;                                                                       \
    if (n <= 16) {                                                                           \
        for (Py_ssize_t i = 1; i < n; i++) {                                                 \
            T v = idx[i];                                                                    \
            Py_ssize_t j = i;                                                                \
            while (j > 0 && CMP(k, v, idx[j - 1]) < 0) { idx[j] = idx[j - 1]; j--; }         \
            idx[j] = v;                                                                      \
        }                                                                                    \
        return;                                                                              \
    }                                                                                        \
    Py_ssize_t h = n / 2;                                                                    \
    NAME(idx, tmp, h, k);                                                                    \
    NAME(idx + h, tmp, n - h, k);                                                            \
    if (CMP(k, idx[h - 1], idx[h]) <= 0) return;                                             \
    memcpy(tmp, idx, (size_t)h * sizeof *idx);                                               \
    Py_ssize_t a = 0, b = h, o = 0;                                                          \
    while (a < h && b < n) idx[o++] = CMP(k, idx[b], tmp[a]) < 0 ? idx[b++] : tmp[a++];      \
    while (a < h) idx[o++] = tmp[a++];                                                       \
}

DEFINE_MERGE_SORT(merge_sort, int64_t, const RankKeys *, rank_cmp)

/* rank(data, starts, lens, query, score, n_queries, order_out) -> 0 or -1 (no memory)
 * order_out: the rows grouped by query (ascending), within a query by score desc, docno desc.
 * Rows a system wrote in ranking order cost one linear pass. */
static PyObject *rank(PyObject *self, PyObject *args) {
    PyObject *data_o, *st_o, *ln_o, *q_o, *sc_o, *out_o;
    Py_ssize_t nq;
    if (!PyArg_ParseTuple(args, "OOOOOnO", &data_o, &st_o, &ln_o, &q_o, &sc_o, &nq, &out_o))
        return NULL;
    Views vs = {.n = 0};
    PyObject *result = NULL;
    int64_t *bound = NULL, *tmp = NULL;
    Py_buffer *data, *st, *ln, *qv, *sc, *out;
    if (!(data = view(&vs, data_o, 1, 0, "data")) || !(st = view(&vs, st_o, 8, 0, "starts"))
        || !(ln = view(&vs, ln_o, 4, 0, "lens")) || !(qv = view(&vs, q_o, 8, 0, "query"))
        || !(sc = view(&vs, sc_o, 8, 0, "score")) || !(out = view(&vs, out_o, 8, 1, "order")))
        goto done;
    Py_ssize_t n = count_of(qv);
    if (count_of(st) != n || count_of(ln) != n || count_of(sc) != n || count_of(out) != n
        || nq < 0) {
        PyErr_SetString(PyExc_ValueError, "rank: arrays of different lengths");
        goto done;
    }
    const int64_t *q = qv->buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (q[i] < 0 || q[i] >= nq) {
            PyErr_SetString(PyExc_ValueError, "rank: query index out of range");
            goto done;
        }
    int64_t *order = out->buf;
    bound = calloc((size_t)nq + 1, sizeof *bound);
    tmp = malloc(((size_t)n / 2 + 1) * sizeof *tmp);
    if (!bound || !tmp) { PyErr_NoMemory(); goto done; }
    RankKeys keys = {data->buf, st->buf, ln->buf, sc->buf};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) bound[q[i] + 1]++;
    for (Py_ssize_t j = 0; j < nq; j++) bound[j + 1] += bound[j];
    for (Py_ssize_t i = 0; i < n; i++) order[bound[q[i]]++] = i; /* counting sort, stable */
    for (Py_ssize_t j = nq; j > 0; j--) bound[j] = bound[j - 1];
    bound[0] = 0;
    for (Py_ssize_t j = 0; j < nq; j++) {
        int64_t *g = order + bound[j];
        Py_ssize_t m = bound[j + 1] - bound[j];
        Py_ssize_t i = 1;
        while (i < m && rank_cmp(&keys, g[i - 1], g[i]) < 0) i++;
        if (i < m) merge_sort(g, tmp, m, &keys);
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    free(bound);
    free(tmp);
    release(&vs);
    return result;
}

/* ---------------------------------------------------------------- dicts for pytrec_eval */

/* nested_dicts(keys, bounds, names, index, values, by_row=False) -> {keys[q]: {names[index[i]]:
 * v(i) for i in bounds[q]:bounds[q+1]}} with v(i) = values[i] (by_row) or values[i - bounds[q]]
 * (by position in the query): a run or qrels as pytrec_eval takes them, built from arrays with
 * one dict insert per row and no new object. */
static PyObject *nested_dicts(PyObject *self, PyObject *args) {
    PyObject *keys, *bounds_o, *names, *index_o, *values;
    int by_row = 0;
    if (!PyArg_ParseTuple(args, "O!OO!OO!|p", &PyList_Type, &keys, &bounds_o, &PyList_Type,
                          &names, &index_o, &PyList_Type, &values, &by_row))
        return NULL;
    Views vs = {.n = 0};
    PyObject *out = NULL;
    Py_buffer *bv, *iv;
    if (!(bv = view(&vs, bounds_o, 8, 0, "bounds")) || !(iv = view(&vs, index_o, 8, 0, "index")))
        goto done;
    const int64_t *bounds = bv->buf, *index = iv->buf;
    Py_ssize_t nq = PyList_GET_SIZE(keys), nn = PyList_GET_SIZE(names);
    Py_ssize_t nv = PyList_GET_SIZE(values), ni = count_of(iv);
    if (count_of(bv) != nq + 1) {
        PyErr_SetString(PyExc_ValueError, "nested_dicts: bounds must have len(keys) + 1 items");
        goto done;
    }
    for (Py_ssize_t q = 0; q < nq; q++)
        if (bounds[q] < 0 || bounds[q] > bounds[q + 1] || bounds[q + 1] > ni
            || (by_row ? bounds[q + 1] > nv : bounds[q + 1] - bounds[q] > nv)) {
            PyErr_SetString(PyExc_ValueError, "nested_dicts: bad bounds");
            goto done;
        }
    for (Py_ssize_t i = 0; i < ni; i++)
        if (index[i] < 0 || index[i] >= nn) {
            PyErr_SetString(PyExc_IndexError, "nested_dicts: name index out of range");
            goto done;
        }
    out = PyDict_New();
    for (Py_ssize_t q = 0; out && q < nq; q++) {
#if PY_VERSION_HEX < 0x030D0000
        PyObject *inner = _PyDict_NewPresized(bounds[q + 1] - bounds[q]);  /* no regrowth */
#else
        PyObject *inner = PyDict_New();
#endif
        if (!inner) { Py_CLEAR(out); break; }
        for (int64_t i = bounds[q]; i < bounds[q + 1]; i++)
            if (PyDict_SetItem(inner, PyList_GET_ITEM(names, index[i]),
                               PyList_GET_ITEM(values, by_row ? i : i - bounds[q])) < 0) {
                Py_CLEAR(inner);
                break;
            }
        if (!inner || PyDict_SetItem(out, PyList_GET_ITEM(keys, q), inner) < 0) Py_CLEAR(out);
        Py_XDECREF(inner);
    }
done:
    release(&vs);
    return out;
}

/* ---------------------------------------------------------------- interleave */

/* Add sign * (W[hi] - W[lo]) to out[0..m-1]: W holds m cumulative weight columns, row-major. */
static inline void add_stretch(double *out, const double *W, Py_ssize_t m, int64_t lo,
                               int64_t hi, int sign) {
    for (Py_ssize_t j = 0; j < m; j++) {
        double w = W[hi * m + j] - W[lo * m + j];
        out[j] += sign > 0 ? w : -w;
    }
}

/* The sums of one interleaving: the users who stop at positions lo+1..k so far prefer a run
 * by `sign`; each maximal run of one sign is added as one difference of the cumulative
 * weights (O(1) per click, not per position). */
typedef struct { double *out; const double *W; Py_ssize_t m; int64_t lo; int sign; } Stretch;

/* From position k on (until the next call), the users prefer by `sign`. */
static inline void sign_from(Stretch *s, int64_t k, int sign) {
    if (sign == s->sign) return;
    if (s->sign) add_stretch(s->out, s->W, s->m, s->lo, k - 1, s->sign);
    s->lo = k - 1;
    s->sign = sign;
}

/* The interleaving ends with N items: close the last stretch. */
static inline void stretch_end(Stretch *s, int64_t n) {
    if (s->sign) add_stretch(s->out, s->W, s->m, s->lo, n, s->sign);
}

static inline int sgn(int64_t x) { return (x > 0) - (x < 0); }

/* One team-draft interleaving of rankings A (na codes) and B (nb codes), strict alternation,
 * A first when a_first: in turn a team appends its best item not yet placed (taken[code] ==
 * stamp marks placed ones), the other team picking alone once one is exhausted. Every
 * relevant item placed is a click credited to its team; the users who stop at k prefer by
 * sgn(c_a(k) - c_b(k)). Returns N, the items placed. */
static int64_t team_draft_one(const int64_t *A, int64_t na, const int64_t *B, int64_t nb,
                              const uint8_t *rel, Stretch *s, uint32_t *taken, uint32_t stamp,
                              int a_first) {
    int64_t ia = 0, ib = 0, k = 0, d = 0;
    int turn_a = a_first;
    for (;;) {
        while (ia < na && taken[A[ia]] == stamp) ia++;
        while (ib < nb && taken[B[ib]] == stamp) ib++;
        if (ia == na && ib == nb) break;
        int pick_a = ia < na && (turn_a || ib == nb);
        int64_t code = pick_a ? A[ia++] : B[ib++];
        taken[code] = stamp;
        turn_a = !pick_a;
        k++;
        if (!rel[code]) continue;
        d += pick_a ? 1 : -1;
        sign_from(s, k, sgn(d));
    }
    return k;
}

/* Relevant items of R[from..to) that are placed: clicked items of R's top `to` that R's own
 * pointer (at `from`) has not reached yet. */
static inline int64_t placed_relevant(const int64_t *R, int64_t from, int64_t to,
                                      const uint8_t *rel, const uint32_t *taken, uint32_t stamp) {
    int64_t h = 0;
    for (int64_t t = from; t < to; t++) h += rel[R[t]] && taken[R[t]] == stamp;
    return h;
}

/* One balanced interleaving (Joachims 2003) of A and B, A first when a_first: the ranking
 * whose pointer is behind (A on equal pointers when a_first) offers its next item, which is
 * appended unless already placed; once one ranking is exhausted the other goes on alone.
 * The users who stop at k click the relevant items at 1..k; with the last click on item d
 * (placed by ranking X from its rank x), Eq. 2's cutoff is k_d = min(rank_A(d), rank_B(d)),
 * which is x: the other ranking's pointer is at x - 1 or x and has not reached d. They prefer
 * by sgn(h_a - h_b), h_R the clicked items in R's top k_d: the relevant items R's pointer
 * passed (all placed) plus the placed relevant ones between its pointer and k_d. Returns N. */
static int64_t balanced_one(const int64_t *A, int64_t na, const int64_t *B, int64_t nb,
                            const uint8_t *rel, Stretch *s, uint32_t *taken, uint32_t stamp,
                            int a_first) {
    int64_t ia = 0, ib = 0, ra = 0, rb = 0, k = 0;  /* ra, rb: relevant in A[0..ia), B[0..ib) */
    while (ia < na || ib < nb) {
        int from_a = ib == nb || (ia < na && (ia < ib || (ia == ib && a_first)));
        int64_t code = from_a ? A[ia++] : B[ib++];
        ra += from_a && rel[code];
        rb += !from_a && rel[code];
        if (taken[code] == stamp) continue;
        taken[code] = stamp;
        k++;
        if (!rel[code]) continue;
        int64_t cut = from_a ? ia : ib;
        int64_t ha = ra + placed_relevant(A, ia, cut < na ? cut : na, rel, taken, stamp);
        int64_t hb = rb + placed_relevant(B, ib, cut < nb ? cut : nb, rel, taken, stamp);
        sign_from(s, k, sgn(ha - hb));
    }
    return k;
}

typedef int64_t (*walk_fn)(const int64_t *, int64_t, const int64_t *, int64_t, const uint8_t *,
                           Stretch *, uint32_t *, uint32_t, int);

/* interleave(docs, bounds, n_queries, pairs, relevant, W, m, method, sums_out, n_out) -> None
 *
 * docs: int64 codes of every run's rows in ranking order; run r's rows of query q are
 * docs[bounds[r*(Q+1)+q] : bounds[r*(Q+1)+q+1]]. pairs: int64 (a, b) run indices, flat.
 * relevant: one byte per code. W: float64 cumulative weights, m columns row-major, W[0] = 0.
 * method: 0 balanced (Joachims), 1 team draft. For pair p, query q and column j:
 * sums_out[((p*Q+q)*2 + f)*m + j] = Σ_k w_j(k) · (the preference of the users who stop at k)
 * in the interleaving with a first (f = 0) or b first (f = 1), n_out[p*Q+q] = N. Every index
 * is checked before the loop, which runs without the GIL. */
static PyObject *interleave(PyObject *self, PyObject *args) {
    PyObject *docs_o, *bounds_o, *pairs_o, *rel_o, *w_o, *sums_o, *n_o;
    Py_ssize_t nq, m;
    int method;
    if (!PyArg_ParseTuple(args, "OOnOOOniOO", &docs_o, &bounds_o, &nq, &pairs_o, &rel_o, &w_o,
                          &m, &method, &sums_o, &n_o))
        return NULL;
    Views vs = {.n = 0};
    PyObject *result = NULL;
    uint32_t *taken = NULL;
    Py_buffer *dv, *bv, *pv, *rv, *wv, *sv, *nv;
    if (!(dv = view(&vs, docs_o, 8, 0, "docs")) || !(bv = view(&vs, bounds_o, 8, 0, "bounds"))
        || !(pv = view(&vs, pairs_o, 8, 0, "pairs")) || !(rv = view(&vs, rel_o, 1, 0, "relevant"))
        || !(wv = view(&vs, w_o, 8, 0, "W")) || !(sv = view(&vs, sums_o, 8, 1, "sums"))
        || !(nv = view(&vs, n_o, 8, 1, "n")))
        goto done;
    const int64_t *docs = dv->buf, *bounds = bv->buf, *pairs = pv->buf;
    const Py_ssize_t n_docs = count_of(dv), n_codes = rv->len;
    const Py_ssize_t n_pairs = count_of(pv) / 2;
    const Py_ssize_t n_w = m > 0 ? count_of(wv) / m : 0;  /* rows of W */
    if (method != 0 && method != 1) {
        PyErr_SetString(PyExc_ValueError,
                        "interleave: method must be 0 (balanced) or 1 (team draft)");
        goto done;
    }
    if (nq < 0 || m < 1 || count_of(wv) % m != 0 || count_of(bv) % (nq + 1) != 0
        || count_of(pv) % 2 != 0 || count_of(sv) != n_pairs * nq * 2 * m
        || count_of(nv) != n_pairs * nq || n_w < 1) {
        PyErr_SetString(PyExc_ValueError, "interleave: arrays of inconsistent lengths");
        goto done;
    }
    const Py_ssize_t n_runs = count_of(bv) / (nq + 1);
    for (Py_ssize_t i = 0; i < count_of(bv); i++)
        if (bounds[i] < 0 || bounds[i] > n_docs || (i % (nq + 1) && bounds[i] < bounds[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "interleave: bounds outside docs or decreasing");
            goto done;
        }
    if (!all_in_range(docs, n_docs, n_codes, "interleave: code outside relevant")
        || !all_in_range(pairs, 2 * n_pairs, n_runs, "interleave: run index out of range"))
        goto done;
    for (Py_ssize_t p = 0; p < n_pairs; p++)
        for (Py_ssize_t q = 0; q < nq; q++) {
            const int64_t *ba = bounds + pairs[2 * p] * (nq + 1) + q;
            const int64_t *bb = bounds + pairs[2 * p + 1] * (nq + 1) + q;
            if ((ba[1] - ba[0]) + (bb[1] - bb[0]) >= n_w) {
                PyErr_SetString(PyExc_ValueError, "interleave: W shorter than two rankings");
                goto done;
            }
        }
    taken = calloc((size_t)n_codes + 1, sizeof *taken);
    if (!taken) { PyErr_NoMemory(); goto done; }
    const uint8_t *rel = rv->buf;
    const double *W = wv->buf;
    double *sums = sv->buf;
    int64_t *n_out = nv->buf;
    const walk_fn walk = method == 0 ? balanced_one : team_draft_one;
    Py_BEGIN_ALLOW_THREADS
    uint32_t stamp = 0;
    for (Py_ssize_t p = 0; p < n_pairs; p++)
        for (Py_ssize_t q = 0; q < nq; q++) {
            const int64_t *ba = bounds + pairs[2 * p] * (nq + 1) + q;
            const int64_t *bb = bounds + pairs[2 * p + 1] * (nq + 1) + q;
            for (int f = 0; f < 2; f++) {
                if (++stamp == UINT32_MAX) {  /* every stamp used: start again from clean */
                    memset(taken, 0, ((size_t)n_codes + 1) * sizeof *taken);
                    stamp = 1;
                }
                Stretch st = {sums + ((p * nq + q) * 2 + f) * m, W, m, 0, 0};
                memset(st.out, 0, (size_t)m * sizeof *st.out);
                n_out[p * nq + q] = walk(docs + ba[0], ba[1] - ba[0], docs + bb[0],
                                         bb[1] - bb[0], rel, &st, taken, stamp, f == 0);
                stretch_end(&st, n_out[p * nq + q]);
            }
        }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    free(taken);
    release(&vs);
    return result;
}

/* ---------------------------------------------------------------- permuted_sums */

/* permuted_sums(values, perm, n_runs, n_trials, pairs, sums_out) -> None
 *
 * The per-trial sums of a randomized Tukey HSD (stats/paired.py): values is float64, Q blocks of
 * R*R (a preference measure's (run, run) matrix per query) or of R (a metric's value per
 * run); perm is int64 (Q, B, R), B = n_trials: perm[q, t] relabels the runs of query q in
 * trial t.
 * With pairs (int64 (a, b), flat; P pairs) and R*R blocks: sums_out[t*P + k] = Σ_q
 * values[q][perm[q,t,a_k]][perm[q,t,b_k]]; with no pairs and R blocks: sums_out[t*R + r] =
 * Σ_q values[q][perm[q,t,r]]. Each sum starts at 0.0 and adds the queries in ascending order,
 * the additions a numpy loop over the queries makes, so the sums are the same bits. Every
 * index is checked before the loop, which runs without the GIL. */
static PyObject *permuted_sums(PyObject *self, PyObject *args) {
    PyObject *val_o, *perm_o, *pairs_o, *sums_o;
    Py_ssize_t R, B;
    if (!PyArg_ParseTuple(args, "OOnnOO", &val_o, &perm_o, &R, &B, &pairs_o, &sums_o))
        return NULL;
    Views vs = {.n = 0};
    PyObject *result = NULL;
    Py_buffer *vv, *pv, *av, *sv;
    if (!(vv = view(&vs, val_o, 8, 0, "values")) || !(pv = view(&vs, perm_o, 8, 0, "perm"))
        || !(av = view(&vs, pairs_o, 8, 0, "pairs")) || !(sv = view(&vs, sums_o, 8, 1, "sums")))
        goto done;
    const double *values = vv->buf;
    const int64_t *perm = pv->buf, *pairs = av->buf;
    double *sums = sv->buf;
    const Py_ssize_t P = count_of(av) / 2, block = P ? R * R : R, W = P ? P : R;
    const Py_ssize_t Q = R > 0 ? count_of(vv) / block : 0;
    if (R < 1 || B < 0 || count_of(av) % 2 || count_of(vv) != Q * block
        || count_of(pv) != Q * B * R || count_of(sv) != B * W) {
        PyErr_SetString(PyExc_ValueError, "permuted_sums: arrays of inconsistent lengths");
        goto done;
    }
    if (!all_in_range(perm, count_of(pv), R, "permuted_sums: run index out of range")
        || !all_in_range(pairs, 2 * P, R, "permuted_sums: pair index out of range"))
        goto done;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < B; t++) {  /* a trial's row of sums stays in cache */
        double *row = sums + t * W;
        for (Py_ssize_t k = 0; k < W; k++) row[k] = 0.0;
        for (Py_ssize_t q = 0; q < Q; q++) {
            const int64_t *p = perm + (q * B + t) * R;
            const double *v = values + q * block;
            if (P)
                for (Py_ssize_t k = 0; k < P; k++)
                    row[k] += v[p[pairs[2 * k]] * R + p[pairs[2 * k + 1]]];
            else
                for (Py_ssize_t r = 0; r < R; r++) row[r] += v[p[r]];
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    release(&vs);
    return result;
}

/* ---------------------------------------------------------------- format_rows */

/* One value as the report prints it (contract §7), into buf (FORMAT_MAX bytes): fixed
 * decimals in the "C" locale; a count (a finite value of a count measure) as its integer
 * part; "nan" for any NaN; never a negative zero ("-0.0000" prints as "0.0000"). The length. */
enum { FORMAT_MAX = 400 };  /* 309 integer digits, a sign, a point and 17 decimals fit */

static int format_value(char *buf, double v, int count, int precision) {
    if (isnan(v)) {
        memcpy(buf, "nan", 3);
        return 3;
    }
    int n;
    if (count && isfinite(v)) {
        double t = trunc(v);
        n = t == 0 ? (buf[0] = '0', 1) : snprintf(buf, FORMAT_MAX, "%.0f", t);
    } else {
        n = snprintf(buf, FORMAT_MAX, "%.*f", precision, v);
    }
    if (buf[0] == '-' && strspn(buf + 1, "0.") == (size_t)(n - 1)) {  /* a negative zero */
        memmove(buf, buf + 1, (size_t)--n);
    }
    return n;
}

/* format_rows(m, q, r, o, values, names, offsets, count, precision) -> bytes: for every row
 * i, names m[i], q[i], r[i] and o[i] (indexes into the strings names[offsets[k]:offsets[k+1]],
 * each carrying its own tab, or empty) then values[i] as format_value prints it (count[m[i]]
 * says whether m[i] is a count measure) and a line end: the report's lines, in C because
 * Python's string building was a tenth of a whole evaluation. */
static PyObject *format_rows(PyObject *self, PyObject *args) {
    PyObject *obj[8];
    int precision;
    if (!PyArg_ParseTuple(args, "OOOOOOOOi", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4],
                          &obj[5], &obj[6], &obj[7], &precision))
        return NULL;
    Views vs = {.n = 0};
    PyObject *result = NULL;
    char *out = NULL;
    const char *what[4] = {"m", "q", "r", "o"};
    Py_buffer *idx[4], *val, *names, *off, *cnt;
    for (int c = 0; c < 4; c++)
        if (!(idx[c] = view(&vs, obj[c], 8, 0, what[c]))) goto done;
    if (!(val = view(&vs, obj[4], 8, 0, "values")) || !(names = view(&vs, obj[5], 1, 0, "names"))
        || !(off = view(&vs, obj[6], 8, 0, "offsets")) || !(cnt = view(&vs, obj[7], 1, 0, "count")))
        goto done;
    const Py_ssize_t n = count_of(val), k = count_of(off) - 1;
    const int64_t *o = off->buf;
    if (precision < 0 || precision > 17 || k < 0 || count_of(cnt) != k) {
        PyErr_SetString(PyExc_ValueError, "format_rows: bad precision, offsets or count");
        goto done;
    }
    for (Py_ssize_t j = 0; j < k; j++)
        if (o[j] < 0 || o[j] > o[j + 1] || o[j + 1] > names->len) {
            PyErr_SetString(PyExc_ValueError, "format_rows: offsets out of the names");
            goto done;
        }
    Py_ssize_t size = 0;  /* the names' bytes, then room for each value and its line end */
    for (int c = 0; c < 4; c++) {
        const int64_t *x = idx[c]->buf;
        if (count_of(idx[c]) != n) {
            PyErr_SetString(PyExc_ValueError, "format_rows: columns of different lengths");
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            if (x[i] < 0 || x[i] >= k) {
                PyErr_SetString(PyExc_ValueError, "format_rows: name index out of range");
                goto done;
            }
            size += o[x[i] + 1] - o[x[i]];
        }
    }
    Py_ssize_t cap = size + n * 24 + FORMAT_MAX + 1;  /* most values need under 24 bytes */
    if (!(out = malloc((size_t)cap))) {
        PyErr_NoMemory();
        goto done;
    }
    const int64_t *x[4] = {idx[0]->buf, idx[1]->buf, idx[2]->buf, idx[3]->buf};
    const double *v = val->buf;
    const char *text = names->buf;
    const uint8_t *is_count = cnt->buf;
    Py_ssize_t len = 0, left = size;  /* bytes written; names' bytes still to come */
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    locale_t before = uselocale(c_locale);
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        if (cap - len < left + FORMAT_MAX + 1) {  /* room for the rest of the names, a value */
            Py_ssize_t more = 2 * cap + FORMAT_MAX;
            char *grown = realloc(out, (size_t)more);
            if (!grown) { failed = 1; break; }
            out = grown;
            cap = more;
        }
        for (int c = 0; c < 4; c++) {
            int64_t a = o[x[c][i]], b = o[x[c][i] + 1];
            memcpy(out + len, text + a, (size_t)(b - a));
            len += b - a;
            left -= b - a;
        }
        len += format_value(out + len, v[i], is_count[x[0][i]], precision);
        out[len++] = '\n';
    }
    uselocale(before);
    Py_END_ALLOW_THREADS
    if (failed) PyErr_NoMemory();
    else result = PyBytes_FromStringAndSize(out, len);
done:
    free(out);
    release(&vs);
    return result;
}

/* ---------------------------------------------------------------- StrMap */

static inline uint64_t mix64(uint64_t h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

/* A 64-bit hash of (key, bytes). It only proposes candidates: equality is memcmp. */
static inline uint64_t hash_of(int64_t key, const unsigned char *p, Py_ssize_t n) {
    uint64_t h = mix64((uint64_t)key * 0x9E3779B97F4A7C15ULL + (uint64_t)n);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x100000001B3ULL;
        h ^= h >> 29;
        p += 8; n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    return mix64(h ^ w);
}

/* An item: one (key, bytes) entry as its key's table holds it. Its bytes end at `end` in the
 * table's arena and begin where the item before ends (items are added in arena order); with
 * them its code and the last batch that met it. */
typedef struct {
    uint32_t end;
    uint32_t code;
    int32_t stamp;
} Item;

/* A slot of a table's index: an item's hash (the hash's low bits, which also place it) and
 * its place + 1 (0: empty), so that a probe reads an item only when the hashes match. */
typedef struct {
    uint32_t hash;
    uint32_t item;
} Slot;
#define MAX_LEN (1 << 16)
#define MAX_CODES ((int64_t)UINT32_MAX)  /* codes are 0 .. MAX_CODES - 1 */

/* One table per key: its items, their bytes back to back in an arena, and an index of slots at
 * most 3/4 full, probed linearly. The strings of one query sit together, so rows that come
 * query by query (as ranked rows do) work in a small, cache-resident region. (A table holds
 * fewer than 2^31 items, as its arena stays under 4 GiB and few distinct strings are shorter
 * than 4 bytes: 32 bits number its slots.) */
typedef struct {
    Slot *slots;
    Item *items;
    unsigned char *arena;
    uint32_t mask;      /* slots - 1; no slots until the first insert */
    uint32_t count, items_cap, arena_cap;
} Table;

/* The key of every code (its table; there, the items' codes ascend, as a table's items are
 * added under its lock, so a code's item is found by bisection) lives in chunks that never
 * move: chunk c holds the keys of 2^c * CHUNK0 codes from CHUNK0 * (2^c - 1) on
 * (MAX_CHUNKS of them hold MAX_CODES). A new code comes from one atomic step, so threads
 * interning side by side never wait for each other but to add a chunk. Key k's table is
 * locked by stripe k % STRIPES: threads coding different queries rarely share one, and a
 * table costs no lock of its own. */
enum { CHUNK0 = 1024, MAX_CHUNKS = 23, STRIPES = 64 };

typedef struct {
    PyObject_HEAD
    uint32_t *chunks[MAX_CHUNKS];
    Table *tables;      /* one per key 0..n_keys-1 */
    int64_t n_keys;
    int frozen;
    int broken;         /* a code was taken but its key could not be stored (no memory) */
    pthread_mutex_t lock;  /* adding a chunk; frozen */
    pthread_mutex_t stripes[STRIPES];  /* the tables' locks, held by the intern working on one */
    /* entries (an atomic counter while interns run), 64 bytes past the fields every row
     * reads, so that threads adding entries do not evict them (the object is 16-byte aligned:
     * its line may also hold the end of a lock, taken only to change tables) */
    _Alignas(64) int64_t n;
    char pad_[64 - sizeof(int64_t)];
} StrMap;

/* The chunk of code e, and e's index in it. */
static inline int chunk_of(int64_t e, int64_t *index) {
    int c = 63 - __builtin_clzll((uint64_t)(e / CHUNK0 + 1));
    *index = e - CHUNK0 * (((int64_t)1 << c) - 1);
    return c;
}

/* The key of code e, one that exists. */
static inline uint32_t key_of(const StrMap *m, int64_t e) {
    int64_t i;
    int c = chunk_of(e, &i);
    return m->chunks[c][i];
}

/* The place of new code e's key, its chunk added if it is not there yet; NULL when out of
 * memory. */
static uint32_t *new_key(StrMap *m, int64_t e) {
    int64_t i;
    int c = chunk_of(e, &i);
    if (c >= MAX_CHUNKS) return NULL;
    uint32_t *chunk = __atomic_load_n(&m->chunks[c], __ATOMIC_ACQUIRE);
    if (!chunk) {
        pthread_mutex_lock(&m->lock);
        chunk = m->chunks[c];
        if (!chunk && (chunk = malloc(sizeof *chunk * ((size_t)CHUNK0 << c))))
            __atomic_store_n(&m->chunks[c], chunk, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&m->lock);
    }
    return chunk ? &chunk[i] : NULL;
}

/* The next code, or -1 when MAX_CODES are taken (the count never passes it). */
static int64_t new_code(StrMap *m) {
    int64_t e = __atomic_load_n(&m->n, __ATOMIC_RELAXED);
    do {
        if (e >= MAX_CODES) return -1;
    } while (!__atomic_compare_exchange_n(&m->n, &e, e + 1, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return e;
}

/* Room for `need` things of `size` bytes at *buf, which holds *cap: grown by a quarter (and
 * 16) at a time, so that a table's unused tail stays small; -1 when out of memory. */
static int reserve(void **buf, uint32_t *cap, uint64_t need, size_t size) {
    if (need <= *cap) return 0;
    uint64_t grown = (uint64_t)*cap + *cap / 4 + 16;
    if (grown < need) grown = need;
    if (grown > UINT32_MAX) grown = UINT32_MAX;
    void *p = realloc(*buf, (size_t)grown * size);
    if (!p) return -1;
    *buf = p;
    *cap = (uint32_t)grown;
    return 0;
}

/* Where item i's bytes begin in its table's arena. */
static inline uint32_t item_start(const Table *t, uint32_t i) {
    return i ? t->items[i - 1].end : 0;
}

/* The item of code e in its table t (the items' codes ascend). */
static uint32_t item_of(const Table *t, int64_t e) {
    uint32_t lo = 0, hi = t->count - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->items[mid].code < e) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Slots enough for `count` items (at least twice as many as now, 16 at first). */
static int grow_slots(Table *t, uint64_t count) {
    uint64_t size = t->slots ? 2 * ((uint64_t)t->mask + 1) : 16;
    while (4 * count > 3 * size) size *= 2;
    Slot *slots = calloc((size_t)size, sizeof *slots);
    if (!slots) return -1;
    uint32_t mask = (uint32_t)(size - 1);
    for (uint64_t i = 0; t->slots && i <= t->mask; i++) {
        if (!t->slots[i].item) continue;
        uint32_t j = t->slots[i].hash & mask;
        while (slots[j].item) j = (j + 1) & mask;
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

/* The item holding p[0:n] in table t, or -1; *at is the slot where it is or would go (when t
 * has slots). */
static inline int64_t find(const Table *t, uint32_t h, const unsigned char *p, int32_t n,
                           uint32_t *at) {
    if (!t->slots) return -1;
    for (uint32_t j = h & t->mask;; j = (j + 1) & t->mask) {
        Slot s = t->slots[j];
        *at = j;
        if (!s.item) return -1;
        if (s.hash != h) continue;
        uint32_t start = item_start(t, s.item - 1);
        if (t->items[s.item - 1].end - start == (uint32_t)n
            && memcmp(t->arena + start, p, (size_t)n) == 0)
            return s.item - 1;
    }
}

/* Insert (key, bytes), hash h, into t (the key's table, whose lock the caller holds) if
 * absent; its code, -1 when out of memory, -3 when a key's strings outgrow 4 GiB, -4 when
 * MAX_CODES are taken. With batch >= 0, *repeat tells whether this batch met the entry
 * before. */
static int64_t intern_one(StrMap *m, Table *t, int64_t key, const unsigned char *p, int32_t n,
                          uint32_t h, int64_t batch, uint8_t *repeat) {
    uint32_t at = 0;
    int64_t i = find(t, h, p, n, &at);
    if (i >= 0) {
        Item *x = &t->items[i];
        *repeat = batch >= 0 && x->stamp == batch;
        if (batch >= 0) x->stamp = batch;  /* no write otherwise: threads share clean lines */
        return x->code;
    }
    *repeat = 0;
    uint32_t len = item_start(t, t->count);
    if ((uint64_t)len + (uint64_t)n > UINT32_MAX) return -3;
    if (reserve((void **)&t->arena, &t->arena_cap, (uint64_t)len + (uint64_t)n, 1) < 0
        || reserve((void **)&t->items, &t->items_cap, (uint64_t)t->count + 1, sizeof(Item)) < 0)
        return -1;
    if (4 * ((uint64_t)t->count + 1) > 3 * ((uint64_t)t->mask + 1)) {  /* (no slots: mask 0) */
        if (grow_slots(t, (uint64_t)t->count + 1) < 0) return -1;
        find(t, h, p, n, &at);
    }
    int64_t e = new_code(m);
    if (e < 0) return -4;
    uint32_t *place = new_key(m, e);
    if (!place) {
        __atomic_store_n(&m->broken, 1, __ATOMIC_RELAXED);  /* code e has no key */
        return -1;
    }
    *place = (uint32_t)key;
    memcpy(t->arena + len, p, (size_t)n);
    t->items[t->count] = (Item){len + (uint32_t)n, (uint32_t)e, (int32_t)batch};
    t->slots[at] = (Slot){h, ++t->count};
    return e;
}

/* Items and slots in table t, still empty, for the rows of its key from row i on (keys k,
 * NULL: one key; n rows; STRETCH rows at most): a table filled at once, as a chunk of
 * judgments is, takes them once, not growth by growth (a table's first rows are mostly new).
 * Its arena grows as its strings come: sized at once, it left the allocator holes that cost
 * more than the growth. -1 when out of memory. */
enum { STRETCH = 4096 };
static int reserve_stretch(Table *t, const int64_t *k, Py_ssize_t i, Py_ssize_t n) {
    Py_ssize_t r = i;
    while (r < n && r - i < STRETCH && (!k || k[r] == k[i])) r++;
    return reserve((void **)&t->items, &t->items_cap, (uint64_t)(r - i), sizeof(Item)) < 0
           || grow_slots(t, (uint64_t)(r - i)) < 0 ? -1 : 0;
}

/* StrMap(n_keys=1): keys are 0 .. n_keys-1. */
static PyObject *StrMap_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    Py_ssize_t n_keys = 1;
    if (!PyArg_ParseTuple(args, "|n", &n_keys)) return NULL;
    if (n_keys < 1 || (uint64_t)n_keys > (uint64_t)UINT32_MAX + 1) {
        PyErr_SetString(PyExc_ValueError, "StrMap: n_keys must be 1 .. 2^32");
        return NULL;
    }
    StrMap *m = (StrMap *)type->tp_alloc(type, 0);
    if (!m) return NULL;
    pthread_mutex_init(&m->lock, NULL);
    for (int s = 0; s < STRIPES; s++) pthread_mutex_init(&m->stripes[s], NULL);
    m->tables = calloc((size_t)n_keys, sizeof *m->tables);
    if (!m->tables) { Py_DECREF(m); return PyErr_NoMemory(); }
    m->n_keys = n_keys;
    return (PyObject *)m;
}

static void StrMap_dealloc(StrMap *m) {
    for (int64_t k = 0; m->tables && k < m->n_keys; k++) {
        free(m->tables[k].slots);
        free(m->tables[k].items);
        free(m->tables[k].arena);
    }
    free(m->tables);
    for (int c = 0; c < MAX_CHUNKS; c++) free(m->chunks[c]);
    pthread_mutex_destroy(&m->lock);
    for (int s = 0; s < STRIPES; s++) pthread_mutex_destroy(&m->stripes[s]);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* Shared argument handling of intern/lookup: (data, starts, lens, keys or None, out
 * [, repeat, batch]); the buffers are held in ``vs`` (released by the caller). */
typedef struct {
    Views vs;
    const unsigned char *p;
    const int64_t *s, *k;   /* k NULL: every key is 0 */
    const int32_t *l;
    int64_t *out;
    uint8_t *repeat;        /* NULL unless a repeat array was given */
    int64_t batch;          /* -1 unless a repeat array was given */
    Py_ssize_t n;
} Batch;

static int batch_fill(PyObject *args, Batch *b);

/* The arguments of intern (``frozen`` 0) or lookup (1), or -1 with an exception and nothing
 * held, e.g. when the map is not in the state the call needs. */
/* A map that ran out of memory while numbering an entry has a code without one: every call
 * after that is an error, never a read of the missing entry. */
static int usable(const StrMap *m) {
    if (!__atomic_load_n(&m->broken, __ATOMIC_RELAXED)) return 1;
    PyErr_SetString(PyExc_MemoryError, "StrMap: unusable since it ran out of memory");
    return 0;
}

static int batch_get(const StrMap *m, int frozen, PyObject *args, Batch *b) {
    memset(b, 0, sizeof *b);
    if (!usable(m)) return -1;
    if (m->frozen != frozen) {
        PyErr_SetString(PyExc_RuntimeError, frozen ? "StrMap.lookup: freeze the map first"
                                                   : "StrMap.intern: the map is frozen");
        return -1;
    }
    if (batch_fill(args, b) < 0) {
        release(&b->vs);
        return -1;
    }
    return 0;
}

static int batch_fill(PyObject *args, Batch *b) {
    PyObject *data_o, *st_o, *ln_o, *k_o, *out_o, *repeat_o = Py_None;
    b->batch = -1;
    if (!PyArg_ParseTuple(args, "OOOOO|OL", &data_o, &st_o, &ln_o, &k_o, &out_o, &repeat_o,
                          &b->batch))
        return -1;
    Py_buffer *data, *st, *ln, *keys = NULL, *out, *rep = NULL;
    if (!(data = view(&b->vs, data_o, 1, 0, "data")) || !(st = view(&b->vs, st_o, 8, 0, "starts"))
        || !(ln = view(&b->vs, ln_o, 4, 0, "lens"))
        || (k_o != Py_None && !(keys = view(&b->vs, k_o, 8, 0, "keys")))
        || !(out = view(&b->vs, out_o, 8, 1, "out"))
        || (repeat_o != Py_None && !(rep = view(&b->vs, repeat_o, 1, 1, "repeat"))))
        return -1;
    b->n = count_of(out);
    if (count_of(st) != b->n || count_of(ln) != b->n || (keys && count_of(keys) != b->n)) {
        PyErr_SetString(PyExc_ValueError, "StrMap: arrays of different lengths");
        return -1;
    }
    if (rep && (rep->len != b->n || b->batch < 0 || b->batch > INT32_MAX)) {
        PyErr_SetString(PyExc_ValueError, "StrMap.intern: repeat needs n bytes and a batch >= 0");
        return -1;
    }
    if (!rep) b->batch = -1;
    b->p = data->buf;
    b->s = st->buf;
    b->l = ln->buf;
    b->k = keys ? keys->buf : NULL;
    b->out = out->buf;
    b->repeat = rep ? rep->buf : NULL;
    for (Py_ssize_t i = 0; i < b->n; i++)
        if (b->s[i] < 0 || b->l[i] < 0 || b->l[i] >= MAX_LEN || b->s[i] > data->len - b->l[i]) {
            PyErr_SetString(PyExc_ValueError, "StrMap: string outside the data or too long");
            return -1;
        }
    return 0;
}

/* How far ahead intern hashes a row and prefetches its slot (twice as far, the row's bytes;
 * half as far, the item its slot points to; a quarter, that item's bytes): a row's probe is
 * mostly cache misses, and the misses of rows ahead overlap. */
enum { AHEAD = 8, RING = 16 };

/* The first slot that row's probe reads in t, when the row was hashed ahead for t (ring_row
 * and ring_h: the rows hashed ahead and their hashes), else an empty one. */
static inline Slot slot_ahead(const Table *t, const int64_t *ring_row, const uint32_t *ring_h,
                              Py_ssize_t row) {
    if (!t->slots || ring_row[row % RING] != row) return (Slot){0, 0};
    return t->slots[ring_h[row % RING] & t->mask];
}

/* intern: rows are taken key by key under the lock of that key's table (rows come grouped by
 * query), so several threads intern side by side, each in its own key's table. */
static PyObject *StrMap_intern(StrMap *m, PyObject *args) {
    Batch b;
    if (batch_get(m, 0, args, &b) < 0) return NULL;
    const unsigned char *p = b.p;
    const int64_t *s = b.s, *k = b.k;
    const int32_t *l = b.l;
    int64_t *out = b.out;
    uint8_t scratch, *repeat = b.repeat;
    int64_t status = 0, ring_row[RING];
    uint32_t ring_h[RING];
    for (int r = 0; r < RING; r++) ring_row[r] = -1;
    Py_BEGIN_ALLOW_THREADS
    Table *tables = m->tables;
    pthread_mutex_t *held = NULL;
    const int64_t n_keys = m->n_keys;
    for (Py_ssize_t i = 0; i < b.n && status >= 0; i++) {
        int64_t key = k ? k[i] : 0;
        if (key < 0 || key >= n_keys) {
            status = -2;
            break;
        }
        Table *t = &tables[key];
        pthread_mutex_t *lock = &m->stripes[key % STRIPES];
        if (lock != held) {
            if (held) pthread_mutex_unlock(held);
            pthread_mutex_lock(lock);
            held = lock;
        }
        if (!t->slots && reserve_stretch(t, k, i, b.n) < 0) {
            status = -1;
            break;
        }
        if (i > 0 && l[i] == l[i - 1] && (!k || key == k[i - 1])
            && memcmp(p + s[i], p + s[i - 1], (size_t)l[i]) == 0) {
            out[i] = out[i - 1];  /* the same as the row before (a qid column, mostly) */
            if (repeat) repeat[i] = 1;
            continue;
        }
        Py_ssize_t j = i + AHEAD;
        if (j + AHEAD < b.n) __builtin_prefetch(p + s[j + AHEAD]);  /* the bytes to hash */
        if (j < b.n && (!k || k[j] == key)) {  /* the same table: its lock is held */
            ring_row[j % RING] = j;
            ring_h[j % RING] = (uint32_t)hash_of(key, p + s[j], l[j]);
            if (t->slots) __builtin_prefetch(&t->slots[ring_h[j % RING] & t->mask]);
        }
        Slot near = slot_ahead(t, ring_row, ring_h, i + AHEAD / 2);
        if (near.item) __builtin_prefetch(&t->items[near.item - 1]);
        near = slot_ahead(t, ring_row, ring_h, i + AHEAD / 4);
        if (near.item) __builtin_prefetch(t->arena + item_start(t, near.item - 1));
        uint32_t h = ring_row[i % RING] == i ? ring_h[i % RING]
                                             : (uint32_t)hash_of(key, p + s[i], l[i]);
        out[i] = intern_one(m, t, key, p + s[i], l[i], h, b.batch,
                            repeat ? repeat + i : &scratch);
        status = out[i];
    }
    if (held) pthread_mutex_unlock(held);
    Py_END_ALLOW_THREADS
    release(&b.vs);
    if (status == -2) {
        PyErr_SetString(PyExc_ValueError, "StrMap.intern: key out of range");
        return NULL;
    }
    if (status == -3 || status == -4) {
        PyErr_SetString(PyExc_OverflowError, status == -3
                        ? "StrMap.intern: over 4 GiB of strings for one key"
                        : "StrMap.intern: over 2^32 - 1 distinct strings");
        return NULL;
    }
    if (status < 0) return PyErr_NoMemory();
    return PyLong_FromLongLong(__atomic_load_n(&m->n, __ATOMIC_RELAXED));
}

static PyObject *StrMap_lookup(StrMap *m, PyObject *args) {
    Batch b;
    if (batch_get(m, 1, args, &b) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < b.n; i++) {
        int64_t key = b.k ? b.k[i] : 0, hit = -1;
        uint32_t at;
        const unsigned char *str = b.p + b.s[i];
        const Table *t = key < 0 || key >= m->n_keys ? NULL : &m->tables[key];
        if (t) hit = find(t, (uint32_t)hash_of(key, str, b.l[i]), str, b.l[i], &at);
        b.out[i] = hit < 0 ? -1 : (int64_t)t->items[hit].code;
    }
    Py_END_ALLOW_THREADS
    release(&b.vs);
    Py_RETURN_NONE;
}

static PyObject *StrMap_freeze(StrMap *m, PyObject *unused) {
    pthread_mutex_lock(&m->lock);
    m->frozen = 1;
    pthread_mutex_unlock(&m->lock);
    Py_RETURN_NONE;
}

/* keys() -> bytes holding the int64 key of every entry, in code order. */
static PyObject *StrMap_keys(StrMap *m, PyObject *unused) {
    if (!usable(m)) return NULL;
    pthread_mutex_lock(&m->lock);
    PyObject *r = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(m->n * 8));
    int64_t *out = r ? (int64_t *)PyBytes_AS_STRING(r) : NULL;
    for (int64_t e = 0; out && e < m->n; e++) out[e] = key_of(m, e);
    pthread_mutex_unlock(&m->lock);
    return r;
}

/* strings(codes=None) -> list of the bytes of those entries (all, in code order). */
static PyObject *StrMap_strings(StrMap *m, PyObject *args) {
    PyObject *codes_o = Py_None;
    if (!PyArg_ParseTuple(args, "|O", &codes_o) || !usable(m)) return NULL;
    Py_buffer codes;
    int has = codes_o != Py_None;
    if (has && get_array(codes_o, 8, 0, &codes, "codes") < 0) return NULL;
    pthread_mutex_lock(&m->lock);
    Py_ssize_t n = has ? count_of(&codes) : (Py_ssize_t)m->n;
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        int64_t e = has ? ((const int64_t *)codes.buf)[i] : i;
        if (e < 0 || e >= m->n) {
            PyErr_SetString(PyExc_IndexError, "StrMap.strings: code out of range");
            Py_CLEAR(list);
            break;
        }
        const Table *t = &m->tables[key_of(m, e)];
        uint32_t at = item_of(t, e), start = item_start(t, at);
        PyObject *item = PyBytes_FromStringAndSize((const char *)t->arena + start,
                                                   t->items[at].end - start);
        if (!item) { Py_CLEAR(list); break; }
        PyList_SET_ITEM(list, i, item);
    }
    pthread_mutex_unlock(&m->lock);
    if (has) PyBuffer_Release(&codes);
    return list;
}

/* nbytes() -> the bytes the map holds: its tables, their slots, items and arenas, and the
 * chunks of keys (what each allocation asked for, not the allocator's own overhead). */
static PyObject *StrMap_nbytes(StrMap *m, PyObject *unused) {
    int64_t total = (int64_t)sizeof *m + m->n_keys * (int64_t)sizeof(Table);
    for (int64_t k = 0; k < m->n_keys; k++) {
        const Table *t = &m->tables[k];
        if (t->slots) total += ((int64_t)t->mask + 1) * (int64_t)sizeof(Slot);
        total += (int64_t)t->items_cap * (int64_t)sizeof(Item) + t->arena_cap;
    }
    for (int c = 0; c < MAX_CHUNKS && m->chunks[c]; c++)
        total += (int64_t)sizeof *m->chunks[c] * ((int64_t)CHUNK0 << c);
    return PyLong_FromLongLong(total);
}

static Py_ssize_t StrMap_len(StrMap *m) { return (Py_ssize_t)m->n; }

static PyMethodDef StrMap_methods[] = {
    {"intern", (PyCFunction)StrMap_intern, METH_VARARGS,
     "intern(data, starts, lens, keys, out[, repeat, batch]) -> size: code of each (key, "
     "string), new ones numbered in order of first appearance; repeat[i] = 1 when an earlier "
     "row of the same batch had the same code"},
    {"lookup", (PyCFunction)StrMap_lookup, METH_VARARGS,
     "lookup(data, starts, lens, keys, out): code of each (key, string), -1 when absent"},
    {"freeze", (PyCFunction)StrMap_freeze, METH_NOARGS, "no more inserts; lookups allowed"},
    {"keys", (PyCFunction)StrMap_keys, METH_NOARGS, "int64 key of every entry (bytes)"},
    {"strings", (PyCFunction)StrMap_strings, METH_VARARGS, "bytes of the given entries"},
    {"nbytes", (PyCFunction)StrMap_nbytes, METH_NOARGS, "bytes held (tables, keys)"},
    {NULL}
};

static PySequenceMethods StrMap_seq = {.sq_length = (lenfunc)StrMap_len};

static PyTypeObject StrMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rpp_cli.core._kernel.StrMap",
    .tp_basicsize = sizeof(StrMap),
    .tp_dealloc = (destructor)StrMap_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "StrMap(n_keys=1): exact dictionary of (key in 0..n_keys-1, byte string) -> "
              "dense int64 code.",
    .tp_methods = StrMap_methods,
    .tp_as_sequence = &StrMap_seq,
    .tp_new = StrMap_new,
};

/* ---------------------------------------------------------------- DocScores */

/* One query's distinct docnos, each with its best score: what a query too long to hold as
 * rows keeps (rpp_cli/io/runs.py). An arena of entries [score f64][length][bytes] (a length
 * under 255 in one byte, else 255 and two more), one per distinct docno in order of first
 * appearance, and a hash index of 5 bytes a slot (a tag of 7 hash bits, 0 when empty, and
 * the entry's uint32 offset in the arena), at most 9/10 full and grown by half: a docno
 * costs its bytes, 9 bytes beside them and 5.6-8.3 bytes of index.
 * Identity is decided by comparing the bytes; a tag that differs spares a probe its look at
 * the arena. Ranking frees the index: no docno is added after. */
typedef struct {
    PyObject_HEAD
    unsigned char *arena;
    int64_t len, cap;       /* arena bytes used, allocated (offsets fit in 32 bits) */
    int64_t count;          /* entries */
    uint8_t *tags;
    uint32_t *offs;
    int64_t size;           /* slots (0: no index) */
    int ranked;             /* the index is freed: no more adds */
    int renumbered;         /* the scores were overwritten by positions */
    Py_ssize_t exports;     /* buffer views of the arena held (it must not move) */
} DocScores;

#define DS_MAX_ARENA ((int64_t)UINT32_MAX + 1)
#define DS_FULL(count, size) ((count) * 10 > (size) * 9)  /* the index is too full */

static inline double ds_score(const unsigned char *e) {
    double s;
    memcpy(&s, e, 8);
    return s;
}

static inline int32_t ds_len(const unsigned char *e) {
    return e[8] < 255 ? e[8] : e[9] | e[10] << 8;
}

/* Where an entry's docno starts, and the bytes of the whole entry. */
static inline const unsigned char *ds_text(const unsigned char *e) {
    return e + (e[8] < 255 ? 9 : 11);
}

static inline int64_t ds_size(const unsigned char *e) { return ds_text(e) - e + ds_len(e); }

static inline int64_t ds_home(uint64_t h, int64_t size) {
    return (int64_t)(((h & 0xffffffffULL) * (uint64_t)size) >> 32);
}

static inline uint8_t ds_tag(uint64_t h) { return (uint8_t)(0x80 | (h >> 57)); }

enum { DS_AHEAD = 8, DS_RING = 16 };  /* rows hashed ahead of their probe (see StrMap) */

static inline void ds_prefetch(const DocScores *d, uint64_t h) {
    int64_t j = ds_home(h, d->size);
    __builtin_prefetch(&d->tags[j], 1);
    __builtin_prefetch(&d->offs[j], 1);
}

/* A larger index (half again, or more), every entry placed anew from the arena, walked in
 * order; the old index is freed first, so the two are never held together. -1 when out of
 * memory. */
static int ds_grow(DocScores *d) {
    int64_t size = d->size > 64 ? d->size : 64;
    while (DS_FULL(d->count + 1, size)) size += size / 2;
    free(d->tags);
    free(d->offs);
    d->tags = calloc((size_t)size, 1);
    d->offs = malloc((size_t)size * sizeof *d->offs);
    d->size = size;
    if (!d->tags || !d->offs) {  /* no index: the next add builds one again */
        free(d->tags);
        free(d->offs);
        d->tags = NULL;
        d->offs = NULL;
        d->size = 0;
        return -1;
    }
    uint64_t ring_h[DS_RING];  /* entries are hashed DS_AHEAD ahead, their slots prefetched */
    uint32_t ring_off[DS_RING];
    int64_t next = 0, hashed = 0;  /* the next entry to hash: its offset, its number */
    for (int64_t k = 0; k < d->count; k++) {
        for (; hashed < d->count && hashed <= k + DS_AHEAD; hashed++) {
            const unsigned char *e = d->arena + next;
            ring_h[hashed % DS_RING] = hash_of(0, ds_text(e), ds_len(e));
            ring_off[hashed % DS_RING] = (uint32_t)next;
            ds_prefetch(d, ring_h[hashed % DS_RING]);
            next += ds_size(e);
        }
        uint64_t h = ring_h[k % DS_RING];
        int64_t j = ds_home(h, size);
        while (d->tags[j]) if (++j == size) j = 0;
        d->tags[j] = ds_tag(h);
        d->offs[j] = ring_off[k % DS_RING];
    }
    return 0;
}

/* The number of entries before offset `off` (an entry's place in order of first appearance). */
static int64_t ds_ordinal(const DocScores *d, int64_t off) {
    int64_t k = 0;
    for (int64_t at = 0; at < off; at += ds_size(d->arena + at)) k++;
    return k;
}

static PyObject *DocScores_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    if (!PyArg_ParseTuple(args, "")) return NULL;
    return type->tp_alloc(type, 0);  /* zeroed: no arena, no index */
}

static void DocScores_dealloc(DocScores *d) {
    free(d->arena);
    free(d->tags);
    free(d->offs);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static int ds_usable(const DocScores *d, int adding) {
    if (d->renumbered || (adding && d->ranked)) {
        PyErr_SetString(PyExc_RuntimeError, d->renumbered ? "DocScores: renumbered"
                                                          : "DocScores: ranked, no more adds");
        return 0;
    }
    if (adding && d->exports) {
        PyErr_SetString(PyExc_BufferError, "DocScores: the arena is viewed, it cannot grow");
        return 0;
    }
    return 1;
}

/* add(data, starts, lens, scores, dedup) -> (first, ordinal, repeats): the rows in order.
 * A docno already held is a repeat: without dedup adding stops there, first being its row and
 * ordinal its entry's place in order of first appearance (else -1, -1); with dedup its entry
 * keeps the higher score (the earlier row's on a tie) and repeats counts them. */
static PyObject *DocScores_add(DocScores *d, PyObject *args) {
    PyObject *data_o, *st_o, *ln_o, *sc_o;
    int dedup;
    if (!PyArg_ParseTuple(args, "OOOOp", &data_o, &st_o, &ln_o, &sc_o, &dedup)) return NULL;
    if (!ds_usable(d, 1)) return NULL;
    Views vs = {.n = 0};
    PyObject *result = NULL;
    Py_buffer *data, *st, *ln, *sc;
    if (!(data = view(&vs, data_o, 1, 0, "data")) || !(st = view(&vs, st_o, 8, 0, "starts"))
        || !(ln = view(&vs, ln_o, 4, 0, "lens")) || !(sc = view(&vs, sc_o, 8, 0, "scores")))
        goto done;
    const Py_ssize_t n = count_of(st);
    const unsigned char *p = data->buf;
    const int64_t *s = st->buf;
    const int32_t *l = ln->buf;
    const double *score = sc->buf;
    if (count_of(ln) != n || count_of(sc) != n) {
        PyErr_SetString(PyExc_ValueError, "DocScores.add: arrays of different lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] < 0 || l[i] < 0 || l[i] >= MAX_LEN || s[i] > data->len - l[i]) {
            PyErr_SetString(PyExc_ValueError, "DocScores.add: string outside the data or too long");
            goto done;
        }
    Py_ssize_t first = -1;
    int64_t found_at = -1, repeats = 0;
    int status = 0;
    uint64_t ring[DS_RING];  /* the hashes of rows i .. i + DS_AHEAD */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && i < DS_AHEAD; i++) ring[i] = hash_of(0, p + s[i], l[i]);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (DS_FULL(d->count + 1, d->size) && ds_grow(d) < 0) { status = -1; break; }
        if (i + DS_AHEAD < n) {
            uint64_t later = hash_of(0, p + s[i + DS_AHEAD], l[i + DS_AHEAD]);
            ring[(i + DS_AHEAD) % DS_RING] = later;
            ds_prefetch(d, later);
        }
        const unsigned char *q = p + s[i];
        const int32_t m = l[i];
        uint64_t h = ring[i % DS_RING];
        uint8_t tag = ds_tag(h);
        int64_t j = ds_home(h, d->size), hit = -1;
        for (; d->tags[j]; j = j + 1 == d->size ? 0 : j + 1) {
            const unsigned char *e = d->arena + d->offs[j];
            if (d->tags[j] == tag && ds_len(e) == m && memcmp(ds_text(e), q, (size_t)m) == 0) {
                hit = d->offs[j];
                break;
            }
        }
        if (hit >= 0) {
            if (!dedup) { first = i; found_at = hit; break; }
            repeats++;
            if (score[i] > ds_score(d->arena + hit)) memcpy(d->arena + hit, &score[i], 8);
            continue;
        }
        int head = m < 255 ? 9 : 11;
        int64_t need = d->len + head + m;
        if (need > DS_MAX_ARENA) { status = -3; break; }
        if (need > d->cap) {
            int64_t cap = d->cap ? d->cap : 4096;
            while (cap < need) cap *= 2;
            if (cap > DS_MAX_ARENA) cap = DS_MAX_ARENA;
            unsigned char *a = realloc(d->arena, (size_t)cap);
            if (!a) { status = -1; break; }
            d->arena = a;
            d->cap = cap;
        }
        unsigned char *e = d->arena + d->len;
        memcpy(e, &score[i], 8);
        e[8] = (unsigned char)(m < 255 ? m : 255);
        if (m >= 255) {
            e[9] = (unsigned char)(m & 0xff);
            e[10] = (unsigned char)(m >> 8);
        }
        memcpy(e + head, q, (size_t)m);
        d->tags[j] = tag;
        d->offs[j] = (uint32_t)d->len;
        d->len = need;
        d->count++;
    }
    Py_END_ALLOW_THREADS
    if (status == -3)
        PyErr_SetString(PyExc_MemoryError, "DocScores: over 4 GiB of docnos in one query");
    else if (status < 0)
        PyErr_NoMemory();
    else
        result = Py_BuildValue("nLL", first, first >= 0 ? (long long)ds_ordinal(d, found_at)
                               : -1LL, (long long)repeats);
done:
    release(&vs);
    return result;
}

/* The order of a ranking: score desc (the score cast to C float with `single`, as trec_eval
 * keeps it), docno desc by bytes; docnos are distinct, the offset only makes it total. */
typedef struct { const unsigned char *arena; int single; } DsKeys;

static inline int ds_cmp(const DsKeys *k, uint32_t a, uint32_t b) {
    const unsigned char *x = k->arena + a, *y = k->arena + b;
    double sa = ds_score(x), sb = ds_score(y);
    if (k->single) {
        sa = (float)sa;
        sb = (float)sb;
    }
    if (sa != sb) return sa > sb ? -1 : 1;
    int32_t la = ds_len(x), lb = ds_len(y);
    int c = memcmp(ds_text(x), ds_text(y), (size_t)(la < lb ? la : lb));
    if (c == 0) c = (la > lb) - (la < lb);
    if (c != 0) return -c;
    return (a > b) - (a < b);
}

DEFINE_MERGE_SORT(ds_sort, uint32_t, const DsKeys *, ds_cmp)

/* rank(out, single): out (uint32, one per entry) <- the entries' offsets in ranking order
 * (ds_cmp); the index is freed first (no add after). A query written in ranking order costs
 * one linear pass. */
static PyObject *DocScores_rank(DocScores *d, PyObject *args) {
    PyObject *out_o;
    int single;
    if (!PyArg_ParseTuple(args, "Op", &out_o, &single) || !ds_usable(d, 0)) return NULL;
    Py_buffer out;
    if (get_array(out_o, 4, 1, &out, "out") < 0) return NULL;
    if (count_of(&out) != d->count) {
        PyErr_SetString(PyExc_ValueError, "DocScores.rank: out must hold one item per entry");
        PyBuffer_Release(&out);
        return NULL;
    }
    free(d->tags);
    free(d->offs);
    d->tags = NULL;
    d->offs = NULL;
    d->size = 0;
    d->ranked = 1;
    uint32_t *idx = out.buf, *tmp = malloc(((size_t)d->count / 2 + 1) * sizeof *tmp);
    if (!tmp) {
        PyBuffer_Release(&out);
        return PyErr_NoMemory();
    }
    DsKeys keys = {d->arena, single};
    Py_BEGIN_ALLOW_THREADS
    int64_t k = 0;
    for (int64_t off = 0; off < d->len; off += ds_size(d->arena + off))
        idx[k++] = (uint32_t)off;
    Py_ssize_t i = 1;
    while (i < d->count && ds_cmp(&keys, idx[i - 1], idx[i]) < 0) i++;
    if (i < d->count) ds_sort(idx, tmp, d->count, &keys);
    Py_END_ALLOW_THREADS
    free(tmp);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* The entry offsets of `refs` (uint32) checked against the arena; NULL with an error. */
static const uint32_t *ds_refs(const DocScores *d, Py_buffer *refs, Py_ssize_t n) {
    const uint32_t *r = refs->buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t at = r[i];
        if (at + 9 > d->len || (d->arena[at + 8] == 255 && at + 11 > d->len)
            || at + ds_size(d->arena + at) > d->len) {
            PyErr_SetString(PyExc_IndexError, "DocScores: an offset outside the arena");
            return NULL;
        }
    }
    return r;
}

/* fill(refs, what, out...): for each entry offset of refs (uint32), what = 0: its score
 * (out float64); 1: where its docno is in the arena's buffer (out int64 starts, int32 lens);
 * 2: refs[i] <- the number renumber() gave that entry (in place). */
static PyObject *DocScores_fill(DocScores *d, PyObject *args) {
    PyObject *refs_o, *a_o = Py_None, *b_o = Py_None;
    int what;
    if (!PyArg_ParseTuple(args, "Oi|OO", &refs_o, &what, &a_o, &b_o)) return NULL;
    if (what == 0 && !ds_usable(d, 0)) return NULL;  /* (docnos outlive the scores) */
    if (what == 2 && !d->renumbered) {
        PyErr_SetString(PyExc_RuntimeError, "DocScores: not renumbered");
        return NULL;
    }
    Views vs = {.n = 0};
    PyObject *result = NULL;
    Py_buffer *refs, *a = NULL, *b = NULL;
    if (!(refs = view(&vs, refs_o, 4, what == 2, "refs"))
        || (what == 0 && !(a = view(&vs, a_o, 8, 1, "scores")))
        || (what == 1 && (!(a = view(&vs, a_o, 8, 1, "starts"))
                          || !(b = view(&vs, b_o, 4, 1, "lens")))))
        goto done;
    const Py_ssize_t n = count_of(refs);
    if ((a && count_of(a) != n) || (b && count_of(b) != n) || what < 0 || what > 2) {
        PyErr_SetString(PyExc_ValueError, "DocScores.fill: bad arguments");
        goto done;
    }
    const uint32_t *r = ds_refs(d, refs, n);
    if (!r) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *e = d->arena + r[i];
        if (what == 0) {
            ((double *)a->buf)[i] = ds_score(e);
        } else if (what == 1) {
            ((int64_t *)a->buf)[i] = ds_text(e) - d->arena;
            ((int32_t *)b->buf)[i] = ds_len(e);
        } else {
            int64_t k;
            memcpy(&k, e, 8);
            ((uint32_t *)refs->buf)[i] = (uint32_t)k;
        }
    }
    result = Py_NewRef(Py_None);
done:
    release(&vs);
    return result;
}

/* renumber(refs): the entry at refs[i] is numbered i (in place of its score, which is then
 * gone), so that fill(.., 2) maps another order's offsets to places in this one. */
static PyObject *DocScores_renumber(DocScores *d, PyObject *arg) {
    if (!ds_usable(d, 0)) return NULL;
    Py_buffer refs;
    if (get_array(arg, 4, 0, &refs, "refs") < 0) return NULL;
    Py_ssize_t n = count_of(&refs);
    const uint32_t *r = n == d->count ? ds_refs(d, &refs, n) : NULL;
    if (r) {
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t k = i;
            memcpy(d->arena + r[i], &k, 8);
        }
        d->renumbered = 1;
    } else if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "DocScores.renumber: one offset per entry");
    }
    PyBuffer_Release(&refs);
    if (!r) return NULL;
    Py_RETURN_NONE;
}

/* nbytes() -> the bytes held: the arena's used part and the index. */
static PyObject *DocScores_nbytes(DocScores *d, PyObject *unused) {
    return PyLong_FromLongLong((long long)(d->len + d->size * 5));
}

static Py_ssize_t DocScores_len(DocScores *d) { return (Py_ssize_t)d->count; }

/* The arena as a read-only buffer (a Column's data over the docnos of fill(.., 1)). */
static int DocScores_getbuffer(DocScores *d, Py_buffer *v, int flags) {
    if (PyBuffer_FillInfo(v, (PyObject *)d, d->arena ? d->arena : (void *)"", d->len, 1,
                          flags) < 0)
        return -1;
    d->exports++;
    return 0;
}

static void DocScores_releasebuffer(DocScores *d, Py_buffer *v) { d->exports--; }

static PyBufferProcs DocScores_buffer = {
    .bf_getbuffer = (getbufferproc)DocScores_getbuffer,
    .bf_releasebuffer = (releasebufferproc)DocScores_releasebuffer,
};

static PyMethodDef DocScores_methods[] = {
    {"add", (PyCFunction)DocScores_add, METH_VARARGS,
     "add(data, starts, lens, scores, dedup) -> (first repeat, its entry's ordinal, repeats)"},
    {"rank", (PyCFunction)DocScores_rank, METH_VARARGS,
     "rank(out, single): the entries' offsets in ranking order (frees the index)"},
    {"fill", (PyCFunction)DocScores_fill, METH_VARARGS,
     "fill(refs, what, out...): 0 scores, 1 docno starts and lens, 2 numbers (in place)"},
    {"renumber", (PyCFunction)DocScores_renumber, METH_O,
     "renumber(refs): entry refs[i] is numbered i (its score is gone)"},
    {"nbytes", (PyCFunction)DocScores_nbytes, METH_NOARGS, "bytes held: arena and index"},
    {NULL}
};

static PySequenceMethods DocScores_seq = {.sq_length = (lenfunc)DocScores_len};

static PyTypeObject DocScoresType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rpp_cli.core._kernel.DocScores",
    .tp_basicsize = sizeof(DocScores),
    .tp_dealloc = (destructor)DocScores_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DocScores(): one query's distinct docnos and their best scores, compact.",
    .tp_methods = DocScores_methods,
    .tp_as_sequence = &DocScores_seq,
    .tp_as_buffer = &DocScores_buffer,
    .tp_new = DocScores_new,
};

/* ---------------------------------------------------------------- module */

static PyMethodDef methods[] = {
    {"split", split, METH_VARARGS, "split lines into fields (see rpp_cli/core)"},
    {"count_lines", count_lines, METH_O, "number of LF bytes"},
    {"nested_dicts", nested_dicts, METH_VARARGS, "{key: {name: value}} from arrays"},
    {"gather", gather, METH_VARARGS, "strings at offsets -> one after another"},
    {"extend", extend, METH_VARARGS, "bytearray += bytes or strings, copied without the GIL"},
    {"parse_floats", parse_floats, METH_VARARGS, "tokens -> finite doubles"},
    {"rank", rank, METH_VARARGS, "order rows by query, score desc, docno desc"},
    {"interleave", interleave, METH_VARARGS, "offline interleaving of pairs of rankings"},
    {"permuted_sums", permuted_sums, METH_VARARGS, "randomized Tukey HSD: sums per trial"},
    {"format_rows", format_rows, METH_VARARGS, "report lines: names and formatted values"},
    {NULL}
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) {
    init_byte_class();

    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    if (!c_locale) return PyErr_NoMemory();
    if (PyType_Ready(&StrMapType) < 0 || PyType_Ready(&DocScoresType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&StrMapType);
    Py_INCREF(&DocScoresType);
    if (PyModule_AddObject(m, "StrMap", (PyObject *)&StrMapType) < 0) {
        Py_DECREF(&StrMapType);
        Py_DECREF(&DocScoresType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObject(m, "DocScores", (PyObject *)&DocScoresType) < 0) {
        Py_DECREF(&DocScoresType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
