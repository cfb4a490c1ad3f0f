/* The output half of `jsontext.c`: a growable UTF-8 buffer and the JSON text of each value
 * as the json module's encoder writes it with separators (",", ":") and ensure_ascii=False:
 * strings with only '"', '\\' and the control characters escaped, ints as int.__repr__, floats as
 * float.__repr__ (NaN and the infinities as json writes them), bytes as standard base64 and UUIDs
 * as `codec.to_json` writes them (URL-safe base64 of the 16 bytes, without padding).
 */
#ifndef KIPWIRE_JSONTEXT_OUT_H
#define KIPWIRE_JSONTEXT_OUT_H

typedef struct {
    char *buf;
    Py_ssize_t n;
    Py_ssize_t cap;
} jout;

/* Room for `more` bytes after the last one written; 0, or -1 with MemoryError. */
static int
jout_grow(jout *o, Py_ssize_t more)
{
    Py_ssize_t cap = o->cap ? o->cap : 1024;
    while (cap - o->n < more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *buf = PyMem_Realloc(o->buf, (size_t)cap);
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = buf;
    o->cap = cap;
    return 0;
}

static inline int
jout_reserve(jout *o, Py_ssize_t more)
{
    return (o->cap - o->n >= more) ? 0 : jout_grow(o, more);
}

static inline int
jout_raw(jout *o, const char *s, Py_ssize_t size)
{
    if (jout_reserve(o, size) < 0)
        return -1;
    memcpy(o->buf + o->n, s, (size_t)size);
    o->n += size;
    return 0;
}

static inline int
jout_char(jout *o, char c)
{
    if (jout_reserve(o, 1) < 0)
        return -1;
    o->buf[o->n++] = c;
    return 0;
}

#define JOUT_LIT(o, text) jout_raw((o), (text), (Py_ssize_t)(sizeof(text) - 1))

static inline int
jout_int64(jout *o, int64_t v)
{
    char tmp[24];
    char *end = tmp + sizeof(tmp), *s = end;
    /* through uint64_t: -INT64_MIN does not fit int64_t */
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--s = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--s = '-';
    return jout_raw(o, s, end - s);
}

static const char hexdigits[] = "0123456789abcdef";

/* The UTF-8 text `s` as a JSON string: quotes, and '"', '\\' and characters below 0x20 escaped
 * as the json module's C encoder escapes them (every other character as it is). */
static int
jout_text(jout *o, const char *s, Py_ssize_t size)
{
    /* at most 6 bytes per input byte (\u00XX) and the quotes */
    if (size > (PY_SSIZE_T_MAX - 2) / 6 || jout_reserve(o, 6 * size + 2) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    char *d = o->buf + o->n;
    *d++ = '"';
    for (Py_ssize_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') {
            *d++ = (char)c;
            continue;
        }
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        default:
            *d++ = 'u';
            *d++ = '0';
            *d++ = '0';
            *d++ = hexdigits[c >> 4];
            *d++ = hexdigits[c & 0xF];
        }
    }
    *d++ = '"';
    o->n = d - o->buf;
    return 0;
}

/* A str object as a JSON string; 1 (no exception) for one UTF-8 cannot carry (a lone
 * surrogate), which the Python code writes as it is into its text. */
static int
jout_str(jout *o, PyObject *str)
{
    Py_ssize_t size;
    const char *s = PyUnicode_AsUTF8AndSize(str, &size);
    if (s == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return -1;
        PyErr_Clear();
        return 1;
    }
    return jout_text(o, s, size);
}

static const char b64_standard[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_urlsafe[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* `size` bytes as base64 text in quotes: standard with padding, or `url` (URL-safe, unpadded). */
static int
jout_base64(jout *o, const unsigned char *s, Py_ssize_t size, int url)
{
    if (size > (PY_SSIZE_T_MAX - 8) / 2 || jout_reserve(o, (size + 2) / 3 * 4 + 2) < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    const char *abc = url ? b64_urlsafe : b64_standard;
    char *d = o->buf + o->n;
    *d++ = '"';
    Py_ssize_t i = 0;
    for (; size - i >= 3; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        *d++ = abc[v >> 18];
        *d++ = abc[(v >> 12) & 0x3F];
        *d++ = abc[(v >> 6) & 0x3F];
        *d++ = abc[v & 0x3F];
    }
    if (size - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        *d++ = abc[v >> 18];
        *d++ = abc[(v >> 12) & 0x3F];
        if (!url) {
            *d++ = '=';
            *d++ = '=';
        }
    }
    else if (size - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        *d++ = abc[v >> 18];
        *d++ = abc[(v >> 12) & 0x3F];
        *d++ = abc[(v >> 6) & 0x3F];
        if (!url)
            *d++ = '=';
    }
    *d++ = '"';
    o->n = d - o->buf;
    return 0;
}

/* An exact int as int.__repr__ writes it. */
static int
jout_long(jout *o, PyObject *v)
{
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow) {
        if (x == -1 && PyErr_Occurred())
            return -1;
        return jout_int64(o, x);
    }
    PyObject *text = PyLong_Type.tp_repr(v);
    if (text == NULL)
        return -1;
    Py_ssize_t size;
    const char *s = PyUnicode_AsUTF8AndSize(text, &size);
    int rc = s == NULL ? -1 : jout_raw(o, s, size);
    Py_DECREF(text);
    return rc;
}

/* An exact float as json writes it (float.__repr__, or NaN, Infinity, -Infinity). */
static int
jout_float(jout *o, PyObject *v)
{
    double x = PyFloat_AS_DOUBLE(v);
    if (!isfinite(x)) {
        if (isnan(x))
            return JOUT_LIT(o, "NaN");
        return x > 0 ? JOUT_LIT(o, "Infinity") : JOUT_LIT(o, "-Infinity");
    }
    char *text = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (text == NULL)
        return -1;
    int rc = jout_raw(o, text, (Py_ssize_t)strlen(text));
    PyMem_Free(text);
    return rc;
}

#endif
