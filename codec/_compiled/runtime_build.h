/* The compiled codec's encoders' runtime: writers of Kafka's wire types into a growable buffer,
 * shared by every generated shard (`shard_*.c`), which includes it after runtime.h.
 *
 * A writer returns 0, or -1 when it does not take the value as it is (a type other than the
 * exact one the Python builder is sure to write the same way, a value out of range, a null the
 * version refuses, a key the struct does not know). The encoder object at the bottom then drops
 * what was written and hands the same arguments to the message's Python builder, which is the
 * reference: it writes the same bytes or raises the EncodeError with its path. So a writer must
 * never write what the Python builder would write differently or refuse.
 */
#ifndef KIPWIRE_COMPILED_RUNTIME_BUILD_H
#define KIPWIRE_COMPILED_RUNTIME_BUILD_H

#include "runtime.h"

/* Bytes written so far: first into `small`, then into a heap block that doubles as it fills. */
struct kw_wbuf {
    unsigned char *b;
    Py_ssize_t n, cap;
    unsigned char small[1024];
};

/* Return -1 from the enclosing writer when `x` is negative. */
#define KW_TRY(x)                                                                                \
    do {                                                                                         \
        if ((x) < 0)                                                                             \
            return -1;                                                                           \
    } while (0)

static PyObject *kw_empty_dict; /* the value a missing struct field is built from, as `{}` */

static void
kw_wbuf_init(kw_wbuf *w)
{
    w->b = w->small;
    w->n = 0;
    w->cap = sizeof w->small;
}

static void
kw_wbuf_free(kw_wbuf *w)
{
    if (w->b != w->small)
        PyMem_Free(w->b);
}

static int
kw_reserve(kw_wbuf *w, Py_ssize_t need)
{
    if (need > PY_SSIZE_T_MAX / 2 - w->n)
        return -1;
    Py_ssize_t cap = w->cap * 2;
    while (cap - w->n < need)
        cap *= 2;
    unsigned char *b = PyMem_Malloc(cap);
    if (b == NULL)
        return -1;
    memcpy(b, w->b, w->n);
    kw_wbuf_free(w);
    w->b = b;
    w->cap = cap;
    return 0;
}

/* Room for `need` more bytes, counted as written: where they go, or NULL. */
static inline unsigned char *
kw_room(kw_wbuf *w, Py_ssize_t need)
{
    if (w->cap - w->n < need && kw_reserve(w, need) < 0)
        return NULL;
    unsigned char *s = w->b + w->n;
    w->n += need;
    return s;
}

static inline int
kw_put_bytes(kw_wbuf *w, const void *data, Py_ssize_t size)
{
    unsigned char *s = kw_room(w, size);
    if (s == NULL)
        return -1;
    memcpy(s, data, size);
    return 0;
}

static inline int
kw_put_uvarint(kw_wbuf *w, uint64_t value)
{
    unsigned char *s = kw_room(w, 10);
    if (s == NULL)
        return -1;
    Py_ssize_t i = 0;
    while (value >= 0x80) {
        s[i++] = (unsigned char)(value | 0x80);
        value >>= 7;
    }
    s[i++] = (unsigned char)value;
    w->n -= 10 - i;
    return 0;
}

static inline int
kw_put_be(kw_wbuf *w, uint64_t value, int size)
{
    unsigned char *s = kw_room(w, size);
    if (s == NULL)
        return -1;
    for (int i = size - 1; i >= 0; i--, value >>= 8)
        s[i] = (unsigned char)value;
    return 0;
}

/* -- the struct's own keys -------------------------------------------------------------------- */

/* True for the mappings a builder reads with `o.get` exactly as PyDict_GetItem does. */
static inline int
kw_is_struct(PyObject *o)
{
    return PyDict_CheckExact(o) || Py_TYPE(o) == (PyTypeObject *)kw_container_type;
}

/* o[key], counted in *seen, or `dflt` when the key is missing (borrowed); NULL on an error. */
static inline PyObject *
kw_get(PyObject *o, PyObject *key, PyObject *dflt, Py_ssize_t *seen)
{
    PyObject *v = PyDict_GetItemWithError(o, key);
    if (v == NULL)
        return PyErr_Occurred() ? NULL : dflt;
    ++*seen;
    return v;
}

/* Every key of `o` was one of the struct's: anything else is for Python's check_keys to judge. */
static inline int
kw_done(PyObject *o, Py_ssize_t seen)
{
    return PyDict_GET_SIZE(o) == seen ? 0 : -1;
}

/* -- fixed-width values ----------------------------------------------------------------------- */

static inline int
kw_w_int(kw_wbuf *w, PyObject *v, long long lo, long long hi, int size)
{
    int overflow;
    if (v == NULL || !PyLong_Check(v))
        return -1;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || x < lo || x > hi || (x == -1 && PyErr_Occurred()))
        return -1;
    return kw_put_be(w, (uint64_t)x, size);
}

static int kw_w_int8(kw_wbuf *w, PyObject *v) { return kw_w_int(w, v, INT8_MIN, INT8_MAX, 1); }
static int kw_w_int16(kw_wbuf *w, PyObject *v) { return kw_w_int(w, v, INT16_MIN, INT16_MAX, 2); }
static int kw_w_int32(kw_wbuf *w, PyObject *v) { return kw_w_int(w, v, INT32_MIN, INT32_MAX, 4); }
static int kw_w_int64(kw_wbuf *w, PyObject *v) { return kw_w_int(w, v, INT64_MIN, INT64_MAX, 8); }
static int kw_w_uint16(kw_wbuf *w, PyObject *v) { return kw_w_int(w, v, 0, UINT16_MAX, 2); }
static int kw_w_uint32(kw_wbuf *w, PyObject *v) { return kw_w_int(w, v, 0, UINT32_MAX, 4); }

/* True or False; other values' truth is for the Python builder to take (it may run code). */
static int
kw_w_bool(kw_wbuf *w, PyObject *v)
{
    if (v != Py_True && v != Py_False)
        return -1;
    return kw_put_be(w, v == Py_True, 1);
}

static int
kw_w_float64(kw_wbuf *w, PyObject *v)
{
    if (v == NULL || !PyFloat_CheckExact(v))
        return -1;
    double d = PyFloat_AS_DOUBLE(v);
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return kw_put_be(w, bits, 8);
}

/* A uuid.UUID (its 128-bit `int`) or 16 bytes, as codec._wire.uuid_bytes takes them. */
static int
kw_w_uuid(kw_wbuf *w, PyObject *v)
{
    if (v == NULL)
        return -1;
    if (PyBytes_CheckExact(v) && PyBytes_GET_SIZE(v) == 16)
        return kw_put_bytes(w, PyBytes_AS_STRING(v), 16);
    if (Py_TYPE(v) != (PyTypeObject *)kw_uuid_type)
        return -1;
    PyObject *value = PyObject_GetAttr(v, kw_str_int);
    if (value == NULL)
        return -1;
    unsigned char *s = kw_room(w, 16);
    int rc = -1;
    if (s != NULL && PyLong_CheckExact(value) && _PyLong_Sign(value) >= 0) {
#if PY_VERSION_HEX >= 0x030D0000
        int flags = Py_ASNATIVEBYTES_BIG_ENDIAN | Py_ASNATIVEBYTES_UNSIGNED_BUFFER;
        Py_ssize_t size = PyLong_AsNativeBytes(value, s, 16, flags);
        rc = size >= 0 && size <= 16 ? 0 : -1;
#else
        rc = _PyLong_AsByteArray((PyLongObject *)value, s, 16, 0, 0);
#endif
    }
    Py_DECREF(value);
    return rc;
}

/* -- strings and bytes ------------------------------------------------------------------------ */

/* A length prefix: int16/int32 (width 2 or 4), or compact (width 0: uvarint of length + 1). */
static inline int
kw_w_length(kw_wbuf *w, Py_ssize_t n, int width)
{
    if (width == 0)
        return kw_put_uvarint(w, (uint64_t)n + 1);
    if (n > (width == 2 ? INT16_MAX : INT32_MAX))
        return -1;
    return kw_put_be(w, (uint64_t)n, width);
}

/* A null: -1 as a classic length, 0 as a compact one; refused where the version has none. */
static inline int
kw_w_null(kw_wbuf *w, int width, int nullable)
{
    if (!nullable)
        return -1;
    return width == 0 ? kw_put_be(w, 0, 1) : kw_put_be(w, UINT64_MAX, width);
}

static int
kw_w_text(kw_wbuf *w, PyObject *v, int width, int nullable)
{
    if (v == Py_None)
        return kw_w_null(w, width, nullable);
    if (v == NULL || !PyUnicode_CheckExact(v))
        return -1;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(v, &n);
    if (s == NULL || kw_w_length(w, n, width) < 0)
        return -1;
    return kw_put_bytes(w, s, n);
}

static int
kw_w_blob(kw_wbuf *w, PyObject *v, int width, int nullable)
{
    if (v == Py_None)
        return kw_w_null(w, width, nullable);
    if (v == NULL)
        return -1;
    const char *s;
    Py_ssize_t n;
    if (PyBytes_CheckExact(v)) {
        s = PyBytes_AS_STRING(v);
        n = PyBytes_GET_SIZE(v);
    } else if (PyByteArray_CheckExact(v)) {
        s = PyByteArray_AS_STRING(v);
        n = PyByteArray_GET_SIZE(v);
    } else {
        return -1;
    }
    if (kw_w_length(w, n, width) < 0)
        return -1;
    return kw_put_bytes(w, s, n);
}

static int kw_w_string(kw_wbuf *w, PyObject *v) { return kw_w_text(w, v, 2, 0); }
static int kw_w_nullable_string(kw_wbuf *w, PyObject *v) { return kw_w_text(w, v, 2, 1); }
static int kw_w_compact_string(kw_wbuf *w, PyObject *v) { return kw_w_text(w, v, 0, 0); }
static int kw_w_compact_nullable_string(kw_wbuf *w, PyObject *v) { return kw_w_text(w, v, 0, 1); }
static int kw_w_bytes(kw_wbuf *w, PyObject *v) { return kw_w_blob(w, v, 4, 0); }
static int kw_w_nullable_bytes(kw_wbuf *w, PyObject *v) { return kw_w_blob(w, v, 4, 1); }
static int kw_w_compact_bytes(kw_wbuf *w, PyObject *v) { return kw_w_blob(w, v, 0, 0); }
static int kw_w_compact_nullable_bytes(kw_wbuf *w, PyObject *v) { return kw_w_blob(w, v, 0, 1); }

/* -- arrays and nested structs ---------------------------------------------------------------- */

/* A list or tuple of elements written by `elem`; a null where the version allows one. */
static int
kw_w_array(kw_wbuf *w, PyObject *v, int compact, int nullable, kw_build_fn elem)
{
    if (v == Py_None)
        return kw_w_null(w, compact ? 0 : 4, nullable);
    if (v == NULL || !(PyList_CheckExact(v) || PyTuple_CheckExact(v)))
        return -1;
    Py_ssize_t n = Py_SIZE(v);
    if (kw_w_length(w, n, compact ? 0 : 4) < 0)
        return -1;
    /* Held, with each element, while the element is written: a key's __eq__ met in a dict
     * lookup is the only Python code that can run, and it must not free what is in use. */
    int rc = 0;
    Py_INCREF(v);
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        if (Py_SIZE(v) != n) {
            rc = -1;
            break;
        }
        PyObject *x = PySequence_Fast_ITEMS(v)[i];
        Py_INCREF(x);
        rc = elem(w, x);
        Py_DECREF(x);
    }
    Py_DECREF(v);
    return rc;
}

/* A struct: its builder on the value; null (0xff) or present (1) first when nullable. */
static inline int
kw_w_struct(kw_wbuf *w, PyObject *v, int nullable, kw_build_fn build)
{
    if (v == Py_None)
        return nullable ? kw_put_be(w, 0xFF, 1) : -1;
    if (v == NULL || (nullable && kw_put_be(w, 1, 1) < 0))
        return -1;
    Py_INCREF(v);
    int rc = build(w, v);
    Py_DECREF(v);
    return rc;
}

/* -- the encoder: a callable obj -> bytes (or obj, out -> None), as MessageCodec.build ------- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    kw_build_fn build;
    PyObject *fallback; /* the message version's Python `build` (or `build_into`) */
} kw_encoder;

/* Build `obj` into `w`; 0, or -1 (whatever was written then means nothing). */
static int
kw_encode(kw_encoder *e, PyObject *obj, kw_wbuf *w)
{
    kw_wbuf_init(w);
    return e->build(w, obj);
}

/* The fallback's answer, after the compiled path gave none (its exception, if any, dropped:
 * the Python builder raises the EncodeError). An interrupt is not swallowed. */
static PyObject *
kw_encode_fall_back(kw_encoder *e, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear();
    }
    return PyObject_Vectorcall(e->fallback, args, nargsf, kwnames);
}

/* encoder(obj) -> bytes, as MessageCodec.build. */
static PyObject *
kw_build_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    kw_encoder *e = (kw_encoder *)self;
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL) {
        kw_wbuf w;
        PyObject *out = NULL;
        if (kw_encode(e, args[0], &w) == 0)
            out = PyBytes_FromStringAndSize((const char *)w.b, w.n);
        kw_wbuf_free(&w);
        if (out != NULL)
            return out;
    }
    return kw_encode_fall_back(e, args, nargsf, kwnames);
}

/* encoder(obj, out) -> None, appending to the bytearray `out`, as MessageCodec.build_into. */
static PyObject *
kw_build_into_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    kw_encoder *e = (kw_encoder *)self;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && PyByteArray_CheckExact(args[1])) {
        kw_wbuf w;
        PyObject *out = args[1];
        int rc = kw_encode(e, args[0], &w);
        Py_ssize_t at = PyByteArray_GET_SIZE(out);
        if (rc == 0)
            rc = PyByteArray_Resize(out, at + w.n);
        if (rc == 0)
            memcpy(PyByteArray_AS_STRING(out) + at, w.b, w.n);
        kw_wbuf_free(&w);
        if (rc == 0)
            Py_RETURN_NONE;
    }
    return kw_encode_fall_back(e, args, nargsf, kwnames);
}

static void
kw_encoder_dealloc(PyObject *self)
{
    Py_XDECREF(((kw_encoder *)self)->fallback);
    PyObject_Free(self);
}

static PyTypeObject kw_encoder_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kipwire.codec._compiled.Encoder",
    .tp_doc = "A message version's compiled builder: obj -> bytes, or (obj, out) -> None.",
    .tp_basicsize = sizeof(kw_encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(kw_encoder, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = kw_encoder_dealloc,
};

/* encoder(message, version, fallback, into=False): the compiled builder of that message
 * version (with `into`, the one appending to a bytearray), or None. */
static PyObject *
kw_make_encoder(const kw_entry *const *tables, PyObject *args)
{
    const char *message;
    int version;
    PyObject *fallback;
    int into = 0;
    if (!PyArg_ParseTuple(args, "siO|p:encoder", &message, &version, &fallback, &into))
        return NULL;
    const kw_entry *e = kw_find(tables, message, version);
    if (e == NULL)
        Py_RETURN_NONE;
    kw_encoder *enc = PyObject_New(kw_encoder, &kw_encoder_type);
    if (enc == NULL)
        return NULL;
    enc->vectorcall = into ? kw_build_into_call : kw_build_call;
    enc->build = e->build;
    enc->fallback = Py_NewRef(fallback);
    return (PyObject *)enc;
}

/* What the encoders need beyond the decoders' set-up (kw_init). */
static int
kw_init_build(void)
{
    if (PyType_Ready(&kw_encoder_type) < 0)
        return -1;
    kw_empty_dict = PyDict_New();
    return kw_empty_dict != NULL ? 0 : -1;
}

#endif
