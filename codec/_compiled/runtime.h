/* The compiled codec's runtime: bounds-checked readers of Kafka's wire types, shared by every
 * generated shard (`shard_*.c`, written by `python -m kipwire.generator build`).
 *
 * A reader returns a new reference, or NULL when the input is malformed (or memory runs out);
 * the NULL carries no promise about which exception is set. The decoder object at the bottom then
 * hands the same arguments to the message's Python parser, which is the reference: it returns the
 * same value or raises the DecodeError with the exact offset and field path. So this file must
 * never accept what the Python path refuses, and never read a byte before checking it is there.
 */
#ifndef KIPWIRE_COMPILED_RUNTIME_H
#define KIPWIRE_COMPILED_RUNTIME_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const unsigned char *b; /* the input's bytes */
    Py_ssize_t n;           /* how many there are */
    Py_ssize_t p;           /* where the next read starts */
    PyObject *src;          /* the input object: `bytes` fields are slices of it, as in Python */
    int is_bytes;           /* src is a bytes object: slices are made without a call */
} kw_reader;

typedef PyObject *(*kw_parse_fn)(kw_reader *r);

/* The encoders' output buffer (runtime_build.h) and a struct's builder: 0, or -1 to fall back. */
typedef struct kw_wbuf kw_wbuf;
typedef int (*kw_build_fn)(kw_wbuf *w, PyObject *o);

/* One message version's compiled parser and builder. */
typedef struct {
    const char *message;
    int version;
    kw_parse_fn parse;
    kw_build_fn build;
} kw_entry;

typedef struct {
    PyObject **slot;
    const char *text;
} kw_key;

/* A constant value a default needs: 's' str, 'b' bytes, 'u' uuid (32 hex digits), 'i' int and
 * 'f' float (their decimal text). */
typedef struct {
    PyObject **slot;
    char kind;
    const char *data;
    Py_ssize_t size;
} kw_const;

static PyObject *kw_container_type; /* construct.Container */
static PyObject *kw_uuid_type;      /* uuid.UUID */
static PyObject *kw_uuid_unknown;   /* uuid.SafeUUID.unknown */
static PyObject *kw_zero_uuid;      /* kipwire.codec._wire.ZERO_UUID, the default Python shares */
static PyObject *kw_empty_tuple;
static PyObject *k__unknown_tags, *kw_str_int, *kw_str_is_safe;

#define KW_LEFT(r) ((r)->n - (r)->p)

/* An empty Container. kw_init checked it is a dict subclass that adds no state of its own to
 * set up, so dict's constructor and item assignment build it as Container() and o[k] = v do. */
static inline PyObject *
kw_container(void)
{
    PyTypeObject *type = (PyTypeObject *)kw_container_type;
    return type->tp_new(type, kw_empty_tuple, NULL);
}

/* Store `v` (a new reference, or NULL after a failed read) under `key`; -1 on failure. */
static inline int
kw_put(PyObject *o, PyObject *key, PyObject *v)
{
    if (v == NULL)
        return -1;
    int rc = PyDict_SetItem(o, key, v);
    Py_DECREF(v);
    return rc;
}

/* -- fixed-width values ----------------------------------------------------------------------- */

static inline uint16_t
kw_be16(const unsigned char *s)
{
    return (uint16_t)((s[0] << 8) | s[1]);
}

static inline uint32_t
kw_be32(const unsigned char *s)
{
    return ((uint32_t)s[0] << 24) | ((uint32_t)s[1] << 16) | ((uint32_t)s[2] << 8) | s[3];
}

static inline uint64_t
kw_be64(const unsigned char *s)
{
    return ((uint64_t)kw_be32(s) << 32) | kw_be32(s + 4);
}

#define KW_FIXED(name, size, make)                                                               \
    static PyObject *name(kw_reader *r)                                                          \
    {                                                                                            \
        if (KW_LEFT(r) < (size))                                                                 \
            return NULL;                                                                         \
        const unsigned char *s = r->b + r->p;                                                    \
        r->p += (size);                                                                          \
        return make;                                                                             \
    }

KW_FIXED(kw_int8, 1, PyLong_FromLong((int8_t)s[0]))
KW_FIXED(kw_int16, 2, PyLong_FromLong((int16_t)kw_be16(s)))
KW_FIXED(kw_int32, 4, PyLong_FromLong((int32_t)kw_be32(s)))
KW_FIXED(kw_int64, 8, PyLong_FromLongLong((int64_t)kw_be64(s)))
KW_FIXED(kw_uint16, 2, PyLong_FromLong(kw_be16(s)))
KW_FIXED(kw_uint32, 4, PyLong_FromUnsignedLong(kw_be32(s)))
KW_FIXED(kw_bool, 1, PyBool_FromLong(s[0] != 0))

static PyObject *
kw_float64(kw_reader *r)
{
    if (KW_LEFT(r) < 8)
        return NULL;
    uint64_t bits = kw_be64(r->b + r->p);
    double d;
    memcpy(&d, &bits, sizeof d);
    r->p += 8;
    return PyFloat_FromDouble(d);
}

/* A uuid.UUID made as codec._wire.uuid_from_bytes makes it: no argument checks. */
static PyObject *
kw_uuid(kw_reader *r)
{
    if (KW_LEFT(r) < 16)
        return NULL;
    PyObject *value = _PyLong_FromByteArray(r->b + r->p, 16, 0, 0);
    if (value == NULL)
        return NULL;
    r->p += 16;
    PyObject *u = PyBaseObject_Type.tp_new((PyTypeObject *)kw_uuid_type, kw_empty_tuple, NULL);
    if (u == NULL || PyObject_GenericSetAttr(u, kw_str_int, value) < 0
        || PyObject_GenericSetAttr(u, kw_str_is_safe, kw_uuid_unknown) < 0) {
        Py_XDECREF(u);
        Py_DECREF(value);
        return NULL;
    }
    Py_DECREF(value);
    return u;
}

/* -- varints and lengths ---------------------------------------------------------------------- */

/* An unsigned varint of at most 5 bytes whose value fits in 32 bits (codec._wire.read_uvarint). */
static inline int
kw_uvarint(kw_reader *r, uint32_t *out)
{
    uint64_t value = 0;
    for (int i = 0; i < 5; i++) {
        if (r->p >= r->n)
            return -1;
        unsigned char byte = r->b[r->p++];
        value |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            if (value >> 32)
                return -1;
            *out = (uint32_t)value;
            return 0;
        }
    }
    return -1;
}

/* A length prefix: classic int16/int32, or compact (uvarint of length + 1). Sets *n to the length,
 * or to -1 for null when `nullable`; refuses a null otherwise, and any length longer than the
 * bytes left (checked before anything is allocated). */
static int
kw_length(kw_reader *r, int width, int nullable, Py_ssize_t *n)
{
    Py_ssize_t len;
    if (width == 0) {
        uint32_t v;
        if (kw_uvarint(r, &v) < 0)
            return -1;
        len = (Py_ssize_t)v - 1;
    } else if (width == 2) {
        if (KW_LEFT(r) < 2)
            return -1;
        len = (int16_t)kw_be16(r->b + r->p);
        r->p += 2;
    } else {
        if (KW_LEFT(r) < 4)
            return -1;
        len = (int32_t)kw_be32(r->b + r->p);
        r->p += 4;
    }
    if (len < 0) {
        if (len != -1 || !nullable)
            return -1;
    } else if (len > KW_LEFT(r)) {
        return -1;
    }
    *n = len;
    return 0;
}

/* -- strings and bytes ------------------------------------------------------------------------ */

static PyObject *
kw_text(kw_reader *r, int width, int nullable)
{
    Py_ssize_t n;
    if (kw_length(r, width, nullable, &n) < 0)
        return NULL;
    if (n < 0)
        Py_RETURN_NONE;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)r->b + r->p, n, NULL);
    r->p += n;
    return s;
}

static PyObject *
kw_blob(kw_reader *r, int width, int nullable)
{
    Py_ssize_t n;
    if (kw_length(r, width, nullable, &n) < 0)
        return NULL;
    if (n < 0)
        Py_RETURN_NONE;
    Py_ssize_t at = r->p;
    r->p += n;
    if (r->is_bytes)
        return PyBytes_FromStringAndSize((const char *)r->b + at, n);
    return PySequence_GetSlice(r->src, at, at + n);
}

static PyObject *kw_string(kw_reader *r) { return kw_text(r, 2, 0); }
static PyObject *kw_nullable_string(kw_reader *r) { return kw_text(r, 2, 1); }
static PyObject *kw_compact_string(kw_reader *r) { return kw_text(r, 0, 0); }
static PyObject *kw_compact_nullable_string(kw_reader *r) { return kw_text(r, 0, 1); }
static PyObject *kw_bytes(kw_reader *r) { return kw_blob(r, 4, 0); }
static PyObject *kw_nullable_bytes(kw_reader *r) { return kw_blob(r, 4, 1); }
static PyObject *kw_compact_bytes(kw_reader *r) { return kw_blob(r, 0, 0); }
static PyObject *kw_compact_nullable_bytes(kw_reader *r) { return kw_blob(r, 0, 1); }

/* -- arrays and nested structs ---------------------------------------------------------------- */

/* An array (compact or classic int32 count) of elements read by `elem`; None when null. */
static PyObject *
kw_array(kw_reader *r, int compact, int nullable, kw_parse_fn elem)
{
    Py_ssize_t n;
    if (kw_length(r, compact ? 0 : 4, nullable, &n) < 0)
        return NULL;
    if (n < 0)
        Py_RETURN_NONE;
    PyObject *list = PyList_New(n);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = elem(r);
        if (x == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, x);
    }
    return list;
}

/* A nullable struct: a first byte with its high bit set is null, any other starts the struct. */
static PyObject *
kw_nullable_struct(kw_reader *r, kw_parse_fn parse)
{
    if (KW_LEFT(r) < 1)
        return NULL;
    if (r->b[r->p++] & 0x80)
        Py_RETURN_NONE;
    return parse(r);
}

/* -- tagged fields ---------------------------------------------------------------------------- */

/* One tagged field's header: its tag and size; the size must fit in the bytes left. */
static inline int
kw_tag_head(kw_reader *r, uint32_t *tag, Py_ssize_t *end)
{
    uint32_t size;
    if (kw_uvarint(r, tag) < 0 || kw_uvarint(r, &size) < 0 || (Py_ssize_t)size > KW_LEFT(r))
        return -1;
    *end = r->p + size;
    return 0;
}

/* Keep a tag this version does not know as bytes in o['_unknown_tags'], as Python does. */
static int
kw_unknown_tag(kw_reader *r, PyObject *o, uint32_t tag, Py_ssize_t end)
{
    PyObject *u = PyDict_GetItemWithError(o, k__unknown_tags);
    if (u == NULL) {
        if (PyErr_Occurred())
            return -1;
        u = PyDict_New();
        if (kw_put(o, k__unknown_tags, u) < 0)
            return -1;
        u = PyDict_GetItemWithError(o, k__unknown_tags);
        if (u == NULL)
            return -1;
    }
    PyObject *t = PyLong_FromUnsignedLong(tag);
    PyObject *raw = PyBytes_FromStringAndSize((const char *)r->b + r->p, end - r->p);
    r->p = end;
    int rc = (t == NULL || raw == NULL) ? -1 : PyDict_SetItem(u, t, raw);
    Py_XDECREF(t);
    Py_XDECREF(raw);
    return rc;
}

/* -- the decoder: a callable (data, offset) -> (value, end), as a generated Python parser is -- */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    kw_parse_fn parse;
    PyObject *fallback; /* the message version's Python parser */
} kw_decoder;

/* Run `parse` over `data` from `at`: (value, end), or with `whole` the value of a message that
 * fills `data` exactly; NULL when the compiled path cannot give the answer. */
static PyObject *
kw_decode(kw_parse_fn parse, PyObject *data, Py_ssize_t at, int whole)
{
    Py_buffer view;
    kw_reader r;
    int is_bytes = PyBytes_Check(data);
    if (is_bytes) {
        r.b = (const unsigned char *)PyBytes_AS_STRING(data);
        r.n = PyBytes_GET_SIZE(data);
    } else {
        if (!PyByteArray_Check(data) && !PyMemoryView_Check(data))
            return NULL;
        if (PyObject_GetBuffer(data, &view, PyBUF_FULL_RO) < 0)
            return NULL;
        /* Only a flat buffer of bytes indexes as Python's b[p] does. */
        if (view.itemsize != 1 || view.ndim > 1 || !PyBuffer_IsContiguous(&view, 'C')
            || (view.format != NULL && strcmp(view.format, "B") != 0)) {
            PyBuffer_Release(&view);
            return NULL;
        }
        r.b = view.buf;
        r.n = view.len;
    }
    r.p = at;
    r.src = data;
    r.is_bytes = is_bytes;
    PyObject *value = at <= r.n ? parse(&r) : NULL;
    if (!is_bytes)
        PyBuffer_Release(&view);
    if (value == NULL)
        return NULL;
    if (whole) {
        if (r.p == r.n)
            return value;
        Py_DECREF(value); /* trailing bytes: the fallback raises the DecodeError */
        return NULL;
    }
    PyObject *end = PyLong_FromSsize_t(r.p);
    if (end == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) {
        Py_DECREF(value);
        Py_DECREF(end);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, value);
    PyTuple_SET_ITEM(pair, 1, end);
    return pair;
}

/* The fallback's answer, after the compiled path gave none (its exception, if any, dropped). */
static PyObject *
kw_fall_back(kw_decoder *d, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    /* Malformed input or a failed allocation: the Python parser gives the answer, or the
     * DecodeError with its offset and path. An interrupt is not swallowed. */
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception))
            return NULL;
        PyErr_Clear();
    }
    return PyObject_Vectorcall(d->fallback, args, nargsf, kwnames);
}

/* decoder(data, offset) -> (value, end), as a generated Python parser. */
static PyObject *
kw_decoder_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    kw_decoder *d = (kw_decoder *)self;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && PyLong_CheckExact(args[1])) {
        Py_ssize_t at = PyLong_AsSsize_t(args[1]);
        PyObject *pair = at < 0 ? NULL : kw_decode(d->parse, args[0], at, 0);
        if (pair != NULL)
            return pair;
    }
    return kw_fall_back(d, args, nargsf, kwnames);
}

/* decoder(data) -> value of a message filling `data` exactly, as MessageCodec.parse. */
static PyObject *
kw_whole_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    kw_decoder *d = (kw_decoder *)self;
    if (PyVectorcall_NARGS(nargsf) == 1 && kwnames == NULL) {
        PyObject *value = kw_decode(d->parse, args[0], 0, 1);
        if (value != NULL)
            return value;
    }
    return kw_fall_back(d, args, nargsf, kwnames);
}

static void
kw_decoder_dealloc(PyObject *self)
{
    Py_XDECREF(((kw_decoder *)self)->fallback);
    PyObject_Free(self);
}

static PyTypeObject kw_decoder_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kipwire.codec._compiled.Decoder",
    .tp_doc = "A message version's compiled parser: (data, offset) -> (value, end).",
    .tp_basicsize = sizeof(kw_decoder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(kw_decoder, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_dealloc = kw_decoder_dealloc,
};

/* The table entry of a message version, or NULL. */
static const kw_entry *
kw_find(const kw_entry *const *tables, const char *message, int version)
{
    for (const kw_entry *const *table = tables; *table != NULL; table++) {
        for (const kw_entry *e = *table; e->message != NULL; e++) {
            if (e->version == version && strcmp(e->message, message) == 0)
                return e;
        }
    }
    return NULL;
}

/* decoder(message, version, fallback, whole=False): the compiled parser of that message version
 * (with `whole`, of a message filling its input), or None. */
static PyObject *
kw_make_decoder(const kw_entry *const *tables, PyObject *args)
{
    const char *message;
    int version;
    PyObject *fallback;
    int whole = 0;
    if (!PyArg_ParseTuple(args, "siO|p:decoder", &message, &version, &fallback, &whole))
        return NULL;
    const kw_entry *e = kw_find(tables, message, version);
    if (e == NULL)
        Py_RETURN_NONE;
    kw_decoder *d = PyObject_New(kw_decoder, &kw_decoder_type);
    if (d == NULL)
        return NULL;
    d->vectorcall = whole ? kw_whole_call : kw_decoder_call;
    d->parse = e->parse;
    d->fallback = Py_NewRef(fallback);
    return (PyObject *)d;
}

/* -- module set-up ---------------------------------------------------------------------------- */

static PyObject *
kw_attr(const char *module, const char *name)
{
    PyObject *m = PyImport_ImportModule(module);
    if (m == NULL)
        return NULL;
    PyObject *value = PyObject_GetAttrString(m, name);
    Py_DECREF(m);
    return value;
}

static PyObject *
kw_make_const(const kw_const *c)
{
    if (c->kind == 's')
        return PyUnicode_DecodeUTF8(c->data, c->size, NULL);
    if (c->kind == 'b')
        return PyBytes_FromStringAndSize(c->data, c->size);
    if (c->kind == 'i')
        return PyLong_FromString(c->data, NULL, 10);
    if (c->kind == 'f') {
        double d = PyOS_string_to_double(c->data, NULL, NULL);
        return d == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(d);
    }
    return PyObject_CallFunction(kw_uuid_type, "s", c->data);
}

/* Import what the readers build values with, and make the shard's keys and constants. */
static int
kw_init(const kw_key *keys, const kw_const *consts)
{
    if (PyType_Ready(&kw_decoder_type) < 0)
        return -1;
    kw_container_type = kw_attr("construct", "Container");
    kw_uuid_type = kw_attr("uuid", "UUID");
    PyObject *safe = kw_attr("uuid", "SafeUUID");
    kw_uuid_unknown = safe ? PyObject_GetAttrString(safe, "unknown") : NULL;
    Py_XDECREF(safe);
    kw_zero_uuid = kw_attr("kipwire.codec._wire", "ZERO_UUID");
    kw_empty_tuple = PyTuple_New(0);
    k__unknown_tags = PyUnicode_InternFromString("_unknown_tags");
    kw_str_int = PyUnicode_InternFromString("int");
    kw_str_is_safe = PyUnicode_InternFromString("is_safe");
    if (!kw_container_type || !kw_uuid_type || !kw_uuid_unknown || !kw_zero_uuid
        || !kw_empty_tuple || !k__unknown_tags || !kw_str_int || !kw_str_is_safe)
        return -1;
    PyTypeObject *box = (PyTypeObject *)kw_container_type;
    if (!PyType_Check(kw_container_type) || !PyType_IsSubtype(box, &PyDict_Type)
        || box->tp_new != PyDict_Type.tp_new
        || box->tp_as_mapping->mp_ass_subscript != PyDict_Type.tp_as_mapping->mp_ass_subscript) {
        PyErr_SetString(PyExc_ImportError, "construct.Container: not the dict subclass expected");
        return -1;
    }
    for (const kw_key *k = keys; k->slot != NULL; k++)
        if ((*k->slot = PyUnicode_InternFromString(k->text)) == NULL)
            return -1;
    for (const kw_const *c = consts; c->slot != NULL; c++)
        if ((*c->slot = kw_make_const(c)) == NULL)
            return -1;
    return 0;
}

#endif
