/* The compiled codec's encoders' tagged-field section, shared by every generated shard, which
 * includes it after runtime_build.h.
 *
 * Kafka writes a tagged field only when it differs from its default, and the section lists the
 * fields by ascending tag with their sizes in front; the project keeps tags it does not know in
 * `_unknown_tags` and writes them back among the known ones. A builder writes its known tagged
 * fields' bytes after its other fields (kw_tag_open/kw_tag_close record where), and kw_w_tags
 * moves them behind the section's header. As in runtime_build.h, -1 hands the value to the
 * Python builder (write_tags in codec/_wire.py is the reference).
 */
#ifndef KIPWIRE_COMPILED_RUNTIME_TAGS_H
#define KIPWIRE_COMPILED_RUNTIME_TAGS_H

#include "runtime_build.h"

/* -- tagged fields ---------------------------------------------------------------------------- */

typedef struct {
    uint64_t tag;
    const unsigned char *data; /* NULL: `size` bytes at `at` in the tagged fields' scratch copy */
    Py_ssize_t at, size;
} kw_tag_entry;

/* A struct's known tagged fields, written after its other fields and moved into place at the
 * end: `e` has room for every tagged field the struct has. */
typedef struct {
    Py_ssize_t start;
    int k;
    kw_tag_entry *e;
} kw_tags;

static inline void
kw_tag_open(kw_tags *t, kw_wbuf *w, uint64_t tag)
{
    t->e[t->k].tag = tag;
    t->e[t->k].data = NULL;
    t->e[t->k].at = w->n;
}

static inline void
kw_tag_close(kw_tags *t, kw_wbuf *w)
{
    t->e[t->k].size = w->n - t->e[t->k].at;
    t->k++;
}

/* Kafka writes a tagged field only when it differs from its default: 1 when `v` does, 0 when
 * not, -1 when the comparison is not one of the plain ones Python's `v != default` makes. */
static int
kw_differs(PyObject *v, PyObject *dflt)
{
    if (v == NULL)
        return -1;
    if (v == dflt)
        return 0;
    PyTypeObject *t = Py_TYPE(v);
    if (t == (PyTypeObject *)kw_uuid_type && Py_TYPE(dflt) == t) {
        /* UUID.__eq__ compares the `int`s of two UUIDs. */
        PyObject *a = PyObject_GetAttr(v, kw_str_int);
        PyObject *b = a == NULL ? NULL : PyObject_GetAttr(dflt, kw_str_int);
        int rc = b == NULL ? -1 : PyObject_RichCompareBool(a, b, Py_NE);
        Py_XDECREF(a);
        Py_XDECREF(b);
        return rc;
    }
    int same = t == Py_TYPE(dflt) || (PyLong_Check(v) && PyLong_Check(dflt));
    if (!same || !(t->tp_richcompare == PyLong_Type.tp_richcompare || t == &PyUnicode_Type
                   || t == &PyBytes_Type || t == &PyFloat_Type))
        return -1;
    return PyObject_RichCompareBool(v, dflt, Py_NE);
}

/* A tagged array is written when it is null or not empty (an absent key is the empty default). */
static inline int
kw_array_wanted(PyObject *v)
{
    if (v == Py_None)
        return 1;
    if (v == NULL || !(PyList_CheckExact(v) || PyTuple_CheckExact(v)))
        return -1;
    return Py_SIZE(v) > 0;
}

/* The encoding of a struct at its defaults, made once, for a tagged struct to compare with. */
typedef struct {
    kw_build_fn build;
    PyObject *bytes;
} kw_default;

/* Drop the tagged struct just written when its bytes are its default's. */
static int
kw_tag_close_unless_default(kw_tags *t, kw_wbuf *w, kw_default *d)
{
    if (d->bytes == NULL) {
        kw_wbuf dw;
        kw_wbuf_init(&dw);
        if (d->build(&dw, kw_empty_dict) == 0)
            d->bytes = PyBytes_FromStringAndSize((const char *)dw.b, dw.n);
        kw_wbuf_free(&dw);
        if (d->bytes == NULL)
            return -1;
    }
    Py_ssize_t at = t->e[t->k].at, size = w->n - at;
    const char *dflt = PyBytes_AS_STRING(d->bytes);
    if (size == PyBytes_GET_SIZE(d->bytes) && memcmp(w->b + at, dflt, size) == 0)
        w->n = at;
    else
        kw_tag_close(t, w);
    return 0;
}

/* Insertion sort by tag: stable, as Python's sort of the known and unknown fields is. */
static void
kw_sort_tags(kw_tag_entry *e, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++) {
        kw_tag_entry x = e[i];
        Py_ssize_t j = i;
        for (; j > 0 && e[j - 1].tag > x.tag; j--)
            e[j] = e[j - 1];
        e[j] = x;
    }
}

/* Take o['_unknown_tags'] (a dict of int tag to bytes) into `e` after the `k` known fields. */
static int
kw_unknown_entries(PyObject *u, kw_tag_entry *e, Py_ssize_t k)
{
    Py_ssize_t pos = 0;
    PyObject *key, *raw;
    while (PyDict_Next(u, &pos, &key, &raw)) {
        if (!PyLong_CheckExact(key))
            return -1;
        unsigned long long tag = PyLong_AsUnsignedLongLong(key);
        if (tag == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        kw_tag_entry *x = &e[k++];
        x->tag = tag;
        if (PyBytes_CheckExact(raw)) {
            x->data = (const unsigned char *)PyBytes_AS_STRING(raw);
            x->size = PyBytes_GET_SIZE(raw);
        } else if (PyByteArray_CheckExact(raw)) {
            x->data = (const unsigned char *)PyByteArray_AS_STRING(raw);
            x->size = PyByteArray_GET_SIZE(raw);
        } else {
            return -1;
        }
    }
    return 0;
}

/* Write the sorted fields of a tagged section; the known ones' bytes are in `scratch`. */
static int
kw_w_tag_entries(kw_wbuf *w, kw_tag_entry *e, Py_ssize_t n, const unsigned char *scratch)
{
    KW_TRY(kw_put_uvarint(w, (uint64_t)n));
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i > 0 && e[i].tag == e[i - 1].tag)
            return -1; /* a tag twice: the Python builder raises the EncodeError */
        KW_TRY(kw_put_uvarint(w, e[i].tag));
        KW_TRY(kw_put_uvarint(w, (uint64_t)e[i].size));
        KW_TRY(kw_put_bytes(w, e[i].data ? e[i].data : scratch + e[i].at, e[i].size));
    }
    return 0;
}

/* A flexible struct's tagged-field section: the known fields in `t` (NULL when the struct has
 * none) that differ from their defaults, already written after the others, and the preserved
 * o['_unknown_tags'], tags ascending; after checking `o` has no key the struct lacks. */
static int
kw_w_tags(kw_wbuf *w, PyObject *o, Py_ssize_t seen, kw_tags *t)
{
    PyObject *u = kw_get(o, k__unknown_tags, Py_None, &seen);
    if (u == NULL || kw_done(o, seen) < 0)
        return -1;
    Py_ssize_t k = t == NULL ? 0 : t->k, nu = 0;
    if (u != Py_None) {
        if (!PyDict_CheckExact(u))
            return -1;
        nu = PyDict_GET_SIZE(u);
    }
    if (k == 0 && nu == 0)
        return kw_put_be(w, 0, 1);
    /* The known fields' bytes move out of the way of the section's header. */
    Py_ssize_t start = k ? t->start : w->n, size = w->n - start;
    kw_tag_entry *e = PyMem_Malloc((k + nu) * sizeof *e + size);
    if (e == NULL)
        return -1;
    unsigned char *scratch = (unsigned char *)(e + k + nu);
    memcpy(scratch, w->b + start, size);
    w->n = start;
    for (Py_ssize_t i = 0; i < k; i++) {
        e[i] = t->e[i];
        e[i].at -= start;
    }
    int rc = kw_unknown_entries(u, e, k);
    if (rc == 0) {
        kw_sort_tags(e, k + nu);
        rc = kw_w_tag_entries(w, e, k + nu, scratch);
    }
    PyMem_Free(e);
    return rc;
}

#endif
