/* The framing half of `records.c`, which includes it after its Record section: `frame()`, the
 * inverse of `read()`, writes the records of a magic-2 batch as batch.py's _encode_records does.
 */
#ifndef KIPWIRE_RECORDS_FRAME_H
#define KIPWIRE_RECORDS_FRAME_H

/* The output buffer: a bytes object grown by doubling, cut to its length at the end. */
typedef struct {
    PyObject *bytes;
    Py_ssize_t n;
    Py_ssize_t cap;
} wbuf;

static int
wbuf_reserve(wbuf *w, Py_ssize_t more)
{
    if (w->cap - w->n >= more)
        return 0;
    Py_ssize_t cap = w->cap;
    while (cap - w->n < more) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    if (_PyBytes_Resize(&w->bytes, cap) < 0)
        return -1;
    w->cap = cap;
    return 0;
}

static inline int
uvarint_size(uint64_t z)
{
    int n = 1;
    while (z >= 0x80) {
        z >>= 7;
        n++;
    }
    return n;
}

static inline uint64_t
zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* Writes the varint of `z`; the room was reserved. */
static inline void
put_uvarint(wbuf *w, uint64_t z)
{
    unsigned char *s = (unsigned char *)PyBytes_AS_STRING(w->bytes) + w->n;
    while (z >= 0x80) {
        *s++ = (unsigned char)(z | 0x80);
        z >>= 7;
    }
    *s++ = (unsigned char)z;
    w->n = s - (unsigned char *)PyBytes_AS_STRING(w->bytes);
}

static inline void
put_raw(wbuf *w, const char *data, Py_ssize_t size)
{
    memcpy(PyBytes_AS_STRING(w->bytes) + w->n, data, size);
    w->n += size;
}

/* A field given as bytes or None: the zigzag of its length (-1 for None), and its bytes. 0, or -1
 * for any other type (bytearray and memoryview too: the Python code has their rules). */
static inline int
field_bytes(PyObject *o, uint64_t *z, const char **data, Py_ssize_t *size)
{
    if (o == Py_None) {
        *z = 1;
        *data = "";
        *size = 0;
        return 0;
    }
    if (!PyBytes_CheckExact(o))
        return -1;
    *size = PyBytes_GET_SIZE(o);
    *data = PyBytes_AS_STRING(o);
    *z = zigzag(*size);
    return 0;
}

/* An int that fits int64 into *out; 0, or -1 (no exception) for anything else. */
static inline int
as_int64(PyObject *o, int64_t *out)
{
    if (!PyLong_CheckExact(o))
        return -1;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    *out = v;
    return 0;
}

/* Bytes the headers take (count and pairs), or -1 when one is not a (str, bytes | None) tuple or
 * its key is not valid UTF-8 text. `headers` is a list or tuple of at least one. */
static Py_ssize_t
headers_size(PyObject *headers)
{
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers);
    Py_ssize_t total = uvarint_size(zigzag(count));
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(headers, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyUnicode_CheckExact(PyTuple_GET_ITEM(pair, 0)))
            return -1;
        Py_ssize_t key_size, value_size;
        const char *data;
        uint64_t z;
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &key_size) == NULL) {
            PyErr_Clear(); /* a lone surrogate: the Python code names it */
            return -1;
        }
        if (field_bytes(PyTuple_GET_ITEM(pair, 1), &z, &data, &value_size) < 0)
            return -1;
        total += uvarint_size(zigzag(key_size)) + key_size + uvarint_size(z) + value_size;
    }
    return total;
}

/* Writes headers that headers_size() took; the room was reserved. */
static void
put_headers(wbuf *w, PyObject *headers)
{
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers);
    put_uvarint(w, zigzag(count));
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(headers, i);
        Py_ssize_t size;
        const char *data = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &size);
        uint64_t z = 0;
        put_uvarint(w, zigzag(size));
        put_raw(w, data, size);
        field_bytes(PyTuple_GET_ITEM(pair, 1), &z, &data, &size);
        put_uvarint(w, z);
        put_raw(w, data, size);
    }
}

/* A record's four fields (new references; None for a dict's missing key), from a Record or a
 * dict; -1 for anything else. The references are held because a dict lookup may run Python code
 * (a key's __eq__) that could drop what an earlier lookup returned. */
static inline int
record_fields(PyObject *r, PyObject *fields[4])
{
    if (Py_IS_TYPE(r, record_type)) {
        fields[0] = SLOT(r, at_key);
        fields[1] = SLOT(r, at_value);
        fields[2] = SLOT(r, at_headers);
        fields[3] = SLOT(r, at_timestamp);
        for (int i = 0; i < 4; i++) {
            if (fields[i] == NULL) { /* an unset slot: an AttributeError in Python */
                while (i-- > 0)
                    Py_CLEAR(fields[i]);
                return -1;
            }
            Py_INCREF(fields[i]);
        }
        return 0;
    }
    if (!PyDict_CheckExact(r))
        return -1;
    PyObject *names[4] = {s_key, s_value, s_headers, s_timestamp};
    for (int i = 0; i < 4; i++) {
        fields[i] = PyDict_GetItemWithError(r, names[i]);
        if (fields[i] == NULL && PyErr_Occurred()) {
            while (i-- > 0)
                Py_CLEAR(fields[i]);
            return -1;
        }
        fields[i] = fields[i] == NULL ? Py_None : fields[i];
        Py_INCREF(fields[i]);
    }
    return 0;
}

/* Frames one record with its four fields at offset delta `delta`; 0, or -1 to let the Python
 * code answer. */
static int
frame_fields(wbuf *w, PyObject *const fields[4], int64_t delta, int64_t now, int have_base,
             int64_t *base_timestamp, int64_t *max_timestamp)
{
    PyObject *key = fields[0], *value = fields[1], *headers = fields[2], *ts = fields[3];
    int64_t timestamp, ts_delta;
    if (ts == Py_None)
        timestamp = now;
    else if (as_int64(ts, &timestamp) < 0)
        return -1;
    if (!have_base)
        *base_timestamp = *max_timestamp = timestamp;
    else if (timestamp > *max_timestamp)
        *max_timestamp = timestamp;
    if (__builtin_sub_overflow(timestamp, *base_timestamp, &ts_delta))
        return -1;
    const char *key_data, *value_data;
    Py_ssize_t key_size, value_size, headers_bytes = 1;
    uint64_t key_z, value_z;
    if (field_bytes(key, &key_z, &key_data, &key_size) < 0 ||
        field_bytes(value, &value_z, &value_data, &value_size) < 0)
        return -1;
    /* The Python code writes headers when they are truthy: an empty list or tuple is none. */
    int has_headers = 0;
    if (headers != Py_None) {
        if (!PyList_CheckExact(headers) && !PyTuple_CheckExact(headers))
            return -1;
        has_headers = PySequence_Fast_GET_SIZE(headers) > 0;
        if (has_headers && (headers_bytes = headers_size(headers)) < 0)
            return -1;
    }
    uint64_t ts_z = zigzag(ts_delta), delta_z = zigzag(delta);
    Py_ssize_t size = 1 + uvarint_size(ts_z) + uvarint_size(delta_z) + uvarint_size(key_z) +
                      key_size + uvarint_size(value_z) + value_size + headers_bytes;
    if (wbuf_reserve(w, size + 10) < 0)
        return -1;
    put_uvarint(w, zigzag(size));
    PyBytes_AS_STRING(w->bytes)[w->n++] = 0; /* attributes */
    put_uvarint(w, ts_z);
    put_uvarint(w, delta_z);
    put_uvarint(w, key_z);
    put_raw(w, key_data, key_size);
    put_uvarint(w, value_z);
    put_raw(w, value_data, value_size);
    if (has_headers)
        put_headers(w, headers);
    else
        PyBytes_AS_STRING(w->bytes)[w->n++] = 0;
    return 0;
}

/* Frames the record `r`; 0, or -1 to let the Python code answer. */
static int
frame_record(wbuf *w, PyObject *r, int64_t delta, int64_t now, int have_base,
             int64_t *base_timestamp, int64_t *max_timestamp)
{
    PyObject *fields[4];
    Py_INCREF(r);
    int rc = record_fields(r, fields);
    if (rc == 0) {
        rc = frame_fields(w, fields, delta, now, have_base, base_timestamp, max_timestamp);
        for (int i = 0; i < 4; i++)
            Py_DECREF(fields[i]);
    }
    Py_DECREF(r);
    return rc;
}

/* frame(records, now, deltas, base): batch._encode_records, which returns the same
 * (bytes, base timestamp, max timestamp); None when that function is to answer instead. */
static PyObject *
frame_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || record_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "frame(records, now, deltas, base)");
        return NULL;
    }
    PyObject *records = args[0], *deltas = args[2];
    int64_t now, base_timestamp = 0, max_timestamp = 0;
    if (!PyList_CheckExact(records) || PyList_GET_SIZE(records) == 0 || as_int64(args[1], &now) < 0)
        Py_RETURN_NONE;
    Py_ssize_t count = PyList_GET_SIZE(records);
    if (deltas != Py_None && (!PyList_CheckExact(deltas) || PyList_GET_SIZE(deltas) != count))
        Py_RETURN_NONE;
    int have_base = args[3] != Py_None;
    if (have_base) {
        /* compaction's delete horizon takes the base timestamp's place (Kafka's KIP-534) */
        if (as_int64(args[3], &base_timestamp) < 0)
            Py_RETURN_NONE;
        max_timestamp = -1;
    }
    wbuf w = {NULL, 0, 64};
    if (count < PY_SSIZE_T_MAX / 128)
        w.cap += count * 32;
    w.bytes = PyBytes_FromStringAndSize(NULL, w.cap);
    if (w.bytes == NULL)
        return NULL;
    /* The lengths are checked on every turn: a dict key's __eq__ could change the lists. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(records); i++) {
        int64_t delta = i;
        if (PyList_GET_SIZE(records) != count)
            goto fallback;
        if (deltas != Py_None &&
            (PyList_GET_SIZE(deltas) != count || as_int64(PyList_GET_ITEM(deltas, i), &delta) < 0))
            goto fallback;
        if (frame_record(&w, PyList_GET_ITEM(records, i), delta, now, have_base || i > 0,
                         &base_timestamp, &max_timestamp) < 0)
            goto fallback;
    }
    if (_PyBytes_Resize(&w.bytes, w.n) < 0)
        return NULL;
    return Py_BuildValue("(NLL)", w.bytes, (long long)base_timestamp, (long long)max_timestamp);
fallback:
    Py_DECREF(w.bytes);
    PyErr_Clear();
    Py_RETURN_NONE;
}

#endif
