/* A decoded body's row facts and JSON text, in one walk written in C (hand-written).
 *
 * `captures/decoding/bodies.py` is the reference: facts_and_json() here returns exactly what its
 * facts_and_json() returns (the same facts tuple, the same text byte for byte), and body_json()
 * what its body_json() returns, for kipwire's own codec. The text is written straight from the
 * decoded values, without the intermediate tree of dicts and lists, and `records` blobs are
 * expanded straight from their bytes (jsontext_records.h).
 *
 * A function returns None for any body it does not write exactly as the Python code does: a type
 * it does not know (an enum, a tuple, a subclass), a key that is not a str (or an int, as
 * `_unknown_tags` has), a nesting deeper than MAX_DEPTH, a lone surrogate, a records blob too
 * deep to tell whether the body counts as having records. The Python code then answers for that
 * body, with the same value or the same exception. A records blob this file does not read
 * (compressed, legacy, control, malformed) goes to `expand_records` alone; when that raises, the
 * blob stays base64 text and the dict gets `records_error`, as in Python.
 *
 * Every read is bounds-checked; objects borrowed from the body are held while Python code runs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "jsontext_out.h"
#include "jsontext_records.h"

#define MAX_SCAN_DEPTH 6 /* bodies.py's _MAX_SCAN_DEPTH: deeper containers hold no fact */
#define MAX_DEPTH 64     /* deeper bodies go to the Python code */

/* set by setup() */
static PyTypeObject *container_type, *list_container_type, *uuid_type;
static PyObject *expand_fn, *error_text_fn;
/* interned keys */
static PyObject *s_error_code, *s_records, *s_records_error, *s_name, *s_topic, *s_topic_name,
    *s_topic_id, *s_int;

/* What the walk has found so far: bodies.py's _Acc. */
typedef struct {
    jout o;
    int scan;             /* facts_and_json: note the facts; body_json: only write */
    int expand;           /* body_json: expand every non-empty blob */
    PyObject *first_err;  /* a new reference: Python code may run before the walk ends */
    PyObject *topics, *seen, *ids, *seen_ids; /* new references, made on first use */
    int64_t records;
    int have_records, seen_records;
} walk_t;

static int write_dict(walk_t *w, PyObject *obj, int depth);
static int write_list(walk_t *w, PyObject *obj, int depth);

static inline int
is_dict(PyObject *v)
{
    return Py_IS_TYPE(v, &PyDict_Type) || Py_IS_TYPE(v, container_type);
}

static inline int
is_list(PyObject *v)
{
    return Py_IS_TYPE(v, &PyList_Type) || Py_IS_TYPE(v, list_container_type);
}

/* The bytes of a bytes, bytearray or one-dimensional contiguous byte memoryview; 0, 1 for any
 * other value (J_FALLBACK when it is some other bytes-like value). */
static int
blob_bytes(PyObject *v, const unsigned char **data, Py_ssize_t *size)
{
    if (PyBytes_CheckExact(v)) {
        *data = (const unsigned char *)PyBytes_AS_STRING(v);
        *size = PyBytes_GET_SIZE(v);
        return 0;
    }
    if (PyByteArray_CheckExact(v)) {
        *data = (const unsigned char *)PyByteArray_AS_STRING(v);
        *size = PyByteArray_GET_SIZE(v);
        return 0;
    }
    if (Py_IS_TYPE(v, &PyMemoryView_Type)) {
        if (((PyMemoryViewObject *)v)->flags & _Py_MEMORYVIEW_RELEASED)
            return 1; /* Python raises ValueError on it */
        Py_buffer *view = PyMemoryView_GET_BUFFER(v);
        if (view->buf == NULL && view->len != 0)
            return 1;
        if (view->ndim != 1 || view->itemsize != 1 || view->suboffsets != NULL ||
            (view->strides != NULL && view->strides[0] != 1) ||
            (view->format != NULL && strcmp(view->format, "B") != 0))
            return 1;
        *data = view->buf;
        *size = view->len;
        return 0;
    }
    return 1;
}

static inline int
is_blob_type(PyObject *v)
{
    return PyBytes_Check(v) || PyByteArray_Check(v) || PyMemoryView_Check(v);
}

#include "jsontext_facts.h"

/* -- values ---------------------------------------------------------------------------------- */

/* A plain JSON tree (what expand_records returns when the Python code reads a blob). */
static int
write_plain(walk_t *w, PyObject *v, int depth)
{
    jout *o = &w->o;
    if (depth > MAX_DEPTH)
        return J_FALLBACK;
    if (PyUnicode_CheckExact(v))
        return jout_str(o, v);
    if (PyLong_CheckExact(v))
        return jout_long(o, v) < 0 ? J_ERROR : J_OK;
    if (v == Py_None || v == Py_True || v == Py_False)
        return (v == Py_None ? JOUT_LIT(o, "null") : v == Py_True ? JOUT_LIT(o, "true")
                                                                    : JOUT_LIT(o, "false")) < 0
                   ? J_ERROR
                   : J_OK;
    if (PyFloat_CheckExact(v))
        return jout_float(o, v) < 0 ? J_ERROR : J_OK;
    int rc = J_OK;
    if (PyList_CheckExact(v)) {
        if (jout_char(o, '[') < 0)
            return J_ERROR;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v) && rc == J_OK; i++) {
            PyObject *item = PyList_GET_ITEM(v, i);
            Py_INCREF(item);
            rc = (i && jout_char(o, ',') < 0) ? J_ERROR : write_plain(w, item, depth + 1);
            Py_DECREF(item);
        }
        return rc != J_OK ? rc : jout_char(o, ']') < 0 ? J_ERROR : J_OK;
    }
    if (PyDict_CheckExact(v)) {
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *value;
        if (jout_char(o, '{') < 0)
            return J_ERROR;
        while (rc == J_OK && PyDict_Next(v, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key))
                return J_FALLBACK;
            Py_INCREF(key);
            Py_INCREF(value);
            rc = (i++ && jout_char(o, ',') < 0) ? J_ERROR : jout_str(o, key);
            if (rc == J_OK)
                rc = jout_char(o, ':') < 0 ? J_ERROR : write_plain(w, value, depth + 1);
            Py_DECREF(key);
            Py_DECREF(value);
        }
        return rc != J_OK ? rc : jout_char(o, '}') < 0 ? J_ERROR : J_OK;
    }
    return J_FALLBACK;
}

/* A records blob, expanded: in C when jsontext_records.h reads it, else by expand_records. When
 * that raises, the blob as base64 text and the error's text in *error (a new reference). */
static int
write_expanded(walk_t *w, const unsigned char *data, Py_ssize_t size,
               PyObject **error)
{
    Py_ssize_t mark = w->o.n;
    int rc = write_batches(&w->o, data, size);
    if (rc != J_FALLBACK)
        return rc;
    w->o.n = mark;
    /* Python code runs from here on: the blob's bytes are read from this copy only */
    PyObject *copy = PyBytes_FromStringAndSize((const char *)data, size);
    if (copy == NULL)
        return J_ERROR;
    PyObject *tree = PyObject_CallOneArg(expand_fn, copy);
    if (tree != NULL) {
        rc = write_plain(w, tree, 0);
        Py_DECREF(tree);
        Py_DECREF(copy);
        return rc;
    }
    rc = J_ERROR;
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        Py_XDECREF(type);
        Py_XDECREF(tb);
        if (value != NULL) {
            *error = PyObject_CallOneArg(error_text_fn, value);
            Py_DECREF(value);
        }
        if (*error != NULL && jout_base64(&w->o, (const unsigned char *)PyBytes_AS_STRING(copy),
                                          size, 0) == 0)
            rc = J_OK;
    }
    Py_DECREF(copy);
    return rc;
}

/* A value that is neither a dict nor a list, as codec.to_json converts it. */
static int
write_leaf(walk_t *w, PyObject *v)
{
    jout *o = &w->o;
    if (PyUnicode_CheckExact(v))
        return jout_str(o, v);
    if (PyLong_CheckExact(v))
        return jout_long(o, v) < 0 ? J_ERROR : J_OK;
    if (v == Py_None)
        return JOUT_LIT(o, "null") < 0 ? J_ERROR : J_OK;
    if (v == Py_True || v == Py_False)
        return (v == Py_True ? JOUT_LIT(o, "true") : JOUT_LIT(o, "false")) < 0 ? J_ERROR : J_OK;
    if (PyFloat_CheckExact(v))
        return jout_float(o, v) < 0 ? J_ERROR : J_OK;
    if (Py_IS_TYPE(v, uuid_type)) {
        unsigned char raw[16];
        int zero, rc = uuid_raw(v, raw, &zero);
        if (rc != J_OK)
            return rc;
        return jout_base64(o, raw, 16, 1) < 0 ? J_ERROR : J_OK;
    }
    const unsigned char *data;
    Py_ssize_t size;
    if (blob_bytes(v, &data, &size) != 0)
        return J_FALLBACK;
    return jout_base64(o, data, size, 0) < 0 ? J_ERROR : J_OK;
}

/* A `records` value that is a blob: counted when `scan`, expanded when the body has records. */
static int
write_records(walk_t *w, PyObject *v, int scan, PyObject **error)
{
    const unsigned char *data;
    Py_ssize_t size;
    if (blob_bytes(v, &data, &size) != 0)
        return J_FALLBACK;
    if (scan) {
        w->seen_records = 1;
        int64_t count;
        if (count_records(data, size, &count)) {
            w->records += count;
            w->have_records = 1;
        }
    }
    if (size == 0)
        return JOUT_LIT(&w->o, "\"\"") < 0 ? J_ERROR : J_OK;
    /* facts_and_json expands every blob once the walk has seen one at a depth it scans: one
     * deeper, before any, leaves the answer to the Python code */
    if (w->scan && !w->seen_records)
        return J_FALLBACK;
    if (!w->scan && !w->expand)
        return jout_base64(&w->o, data, size, 0) < 0 ? J_ERROR : J_OK;
    return write_expanded(w, data, size, error);
}

/* Whether the str `key` is `name` (interned: most keys are the same objects). */
static inline int
key_is(PyObject *key, PyObject *name)
{
    return key == name || (PyUnicode_GET_LENGTH(key) == PyUnicode_GET_LENGTH(name) &&
                           PyUnicode_Compare(key, name) == 0);
}

/* bodies.py's `"topic" in k or k == "responses"`, on the key's UTF-8 text. */
static int
names_topics(const char *k, Py_ssize_t size)
{
    if (size == 9 && memcmp(k, "responses", 9) == 0)
        return 1;
    for (Py_ssize_t i = 0; i + 5 <= size; i++) {
        if (k[i] == 't' && memcmp(k + i, "topic", 5) == 0)
            return 1;
    }
    return 0;
}

/* One item of a dict: `key` (a str) and its value, in bodies.py's _Walk.dict_ order of rules. */
static int
write_item(walk_t *w, PyObject *key, PyObject *v, int depth, int scan, PyObject **error)
{
    int is_records = key_is(key, s_records);
    if (is_records && v != Py_None && !PyLong_CheckExact(v) && !PyFloat_CheckExact(v) &&
        !PyBool_Check(v) && !is_dict(v) && !is_list(v))
        return is_blob_type(v) ? write_records(w, v, scan, error) : J_FALLBACK;
    if (scan && (PyLong_CheckExact(v) || PyBool_Check(v)) &&
        key_is(key, s_error_code))
        note_error_code(w, v);
    if (is_dict(v))
        return write_dict(w, v, depth + 1);
    if (is_list(v)) {
        if (scan) {
            Py_ssize_t size;
            const char *k = PyUnicode_AsUTF8AndSize(key, &size); /* written: it is UTF-8 */
            int rc = k == NULL ? J_ERROR : names_topics(k, size) ? note_topic_list(w, v) : J_OK;
            if (rc != J_OK)
                return rc;
        }
        return write_list(w, v, depth + 1);
    }
    if (PyDict_Check(v) || PyList_Check(v))
        return J_FALLBACK;
    return write_leaf(w, v);
}

/* A dict (Container) as _Walk.dict_ converts and scans it, then the JSON encoder writes it. */
static int
write_dict(walk_t *w, PyObject *obj, int depth)
{
    if (depth > MAX_DEPTH)
        return J_FALLBACK;
    jout *o = &w->o;
    int scan = w->scan && depth <= MAX_SCAN_DEPTH;
    int str_keys = 0, int_keys = 0, rc = J_OK;
    PyObject *key, *value, *error = NULL;
    Py_ssize_t pos = 0, i = 0;
    if (jout_char(o, '{') < 0)
        return J_ERROR;
    while (rc == J_OK && PyDict_Next(obj, &pos, &key, &value)) {
        Py_INCREF(key);
        Py_INCREF(value);
        if (i++ && jout_char(o, ',') < 0) {
            rc = J_ERROR;
        }
        else if (PyUnicode_CheckExact(key)) {
            str_keys = 1;
            rc = jout_str(o, key);
            if (rc == J_OK)
                rc = jout_char(o, ':') < 0 ? J_ERROR
                                           : write_item(w, key, value, depth, scan, &error);
        }
        else if (PyLong_CheckExact(key) && !(scan && PyList_Check(value))) {
            /* str(k), as `_unknown_tags` keys are written ("topic" in k would raise for a list) */
            int_keys = 1;
            rc = jout_char(o, '"') < 0 || jout_long(o, key) < 0 || JOUT_LIT(o, "\":") < 0
                     ? J_ERROR
                     : is_dict(value) ? write_dict(w, value, depth + 1)
                     : is_list(value) ? write_list(w, value, depth + 1)
                     : PyDict_Check(value) || PyList_Check(value) ? J_FALLBACK
                                                                   : write_leaf(w, value);
        }
        else {
            rc = J_FALLBACK;
        }
        Py_DECREF(key);
        Py_DECREF(value);
    }
    if (rc == J_OK && str_keys && int_keys) /* str(k) could meet a str key of the same text */
        rc = J_FALLBACK;
    if (rc == J_OK && error != NULL) {
        /* the blob stays base64 text; `records_error` follows the dict's own keys */
        int has = PyDict_Contains(obj, s_records_error);
        rc = has != 0 ? (has < 0 ? J_ERROR : J_FALLBACK)
             : (JOUT_LIT(o, ",\"records_error\":") < 0 ? J_ERROR : jout_str(o, error));
    }
    Py_XDECREF(error);
    if (rc != J_OK)
        return rc;
    return jout_char(o, '}') < 0 ? J_ERROR : J_OK;
}

/* A list as _Walk.list_ converts it: its dicts and lists walked, other values converted. */
static int
write_list(walk_t *w, PyObject *obj, int depth)
{
    if (depth > MAX_DEPTH)
        return J_FALLBACK;
    jout *o = &w->o;
    int rc = J_OK;
    if (jout_char(o, '[') < 0)
        return J_ERROR;
    for (Py_ssize_t i = 0; rc == J_OK && i < PyList_GET_SIZE(obj); i++) {
        PyObject *v = PyList_GET_ITEM(obj, i);
        Py_INCREF(v);
        if (i && jout_char(o, ',') < 0)
            rc = J_ERROR;
        else if (is_dict(v))
            rc = write_dict(w, v, depth + 1);
        else if (is_list(v))
            rc = write_list(w, v, depth + 1);
        else if (PyDict_Check(v) || PyList_Check(v))
            rc = J_FALLBACK;
        else
            rc = write_leaf(w, v);
        Py_DECREF(v);
    }
    if (rc != J_OK)
        return rc;
    return jout_char(o, ']') < 0 ? J_ERROR : J_OK;
}

/* -- the module ----------------------------------------------------------------------------- */

static void
walk_clear(walk_t *w)
{
    PyMem_Free(w->o.buf);
    Py_CLEAR(w->first_err);
    Py_CLEAR(w->topics);
    Py_CLEAR(w->seen);
    Py_CLEAR(w->ids);
    Py_CLEAR(w->seen_ids);
}

/* The text written so far as a str; NULL with an exception. */
static PyObject *
walk_text(walk_t *w)
{
    return PyUnicode_DecodeUTF8(w->o.buf ? w->o.buf : "", w->o.n, "strict");
}

static int
ready(void)
{
    if (container_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "jsontext.setup() was not called");
        return -1;
    }
    return 0;
}

/* Walks the dict `body` for its facts and text; with J_OK, *err is the facts' error code (a
 * top-level one first; borrowed from `body` or `w`, NULL for none). The caller holds `body`. */
static int
walk_facts(walk_t *w, PyObject *body, PyObject **err)
{
    int rc = write_dict(w, body, 0);
    if (rc != J_OK)
        return rc;
    PyObject *top = PyDict_GetItemWithError(body, s_error_code);
    if (top == NULL && PyErr_Occurred())
        return J_ERROR;
    *err = top != NULL && PyLong_Check(top) ? top : w->first_err;
    return J_OK;
}

/* facts_and_json(body): ((error code, topics, record count, has records, topic ids), text), or
 * None when bodies.py's Python code is to answer for this body. */
static PyObject *
facts_and_json(PyObject *self, PyObject *body)
{
    if (ready() < 0)
        return NULL;
    if (!is_dict(body))
        Py_RETURN_NONE;
    walk_t w = {.scan = 1};
    PyObject *result = NULL, *err = NULL;
    Py_INCREF(body);
    int rc = walk_facts(&w, body, &err);
    if (rc == J_OK) {
        PyObject *text = walk_text(&w);
        PyObject *records = w.have_records ? PyLong_FromLongLong(w.records) : Py_NewRef(Py_None);
        if (text != NULL && records != NULL)
            result = Py_BuildValue("((OOOOO)N)", err ? err : Py_None,
                                   w.topics ? w.topics : Py_None, records,
                                   w.seen_records ? Py_True : Py_False, w.ids ? w.ids : Py_None,
                                   text);
        else
            Py_XDECREF(text);
        Py_XDECREF(records);
        rc = result == NULL ? J_ERROR : J_OK;
    }
    Py_DECREF(body);
    walk_clear(&w);
    if (rc == J_FALLBACK) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return result;
}

/* body_json(body, has_records): bodies.body_json(codec, body, has_records), or None. */
static PyObject *
body_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "body_json(body, has_records)");
        return NULL;
    }
    if (ready() < 0)
        return NULL;
    PyObject *body = args[0];
    int expand = PyObject_IsTrue(args[1]);
    if (expand < 0)
        return NULL;
    if (!is_dict(body) && !is_list(body))
        Py_RETURN_NONE;
    walk_t w = {.expand = expand};
    Py_INCREF(body);
    int rc = is_dict(body) ? write_dict(&w, body, 0) : write_list(&w, body, 0);
    PyObject *text = rc == J_OK ? walk_text(&w) : NULL;
    Py_DECREF(body);
    walk_clear(&w);
    if (rc == J_FALLBACK) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return text;
}

#include "jsontext_frame.h"

static PyObject *
setup(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 || !PyType_Check(args[0]) || !PyType_Check(args[1]) ||
        !PyType_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "setup(Container, ListContainer, UUID, expand_records,"
                                         " error_text, crc32c)");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)args[0], &PyDict_Type) ||
        !PyType_IsSubtype((PyTypeObject *)args[1], &PyList_Type)) {
        PyErr_SetString(PyExc_TypeError, "Container must be a dict, ListContainer a list");
        return NULL;
    }
    for (int i = 0; i < 6; i++)
        Py_INCREF(args[i]);
    Py_XSETREF(container_type, (PyTypeObject *)args[0]);
    Py_XSETREF(list_container_type, (PyTypeObject *)args[1]);
    Py_XSETREF(uuid_type, (PyTypeObject *)args[2]);
    Py_XSETREF(expand_fn, args[3]);
    Py_XSETREF(error_text_fn, args[4]);
    Py_XSETREF(crc32c_fn, args[5]);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", (PyCFunction)(void (*)(void))setup, METH_FASTCALL,
     "setup(Container, ListContainer, UUID, expand_records, error_text, crc32c)."},
    {"facts_and_json", facts_and_json, METH_O,
     "facts_and_json(body): (facts, text) as bodies.facts_and_json gives them, or None."},
    {"body_json", (PyCFunction)(void (*)(void))body_json, METH_FASTCALL,
     "body_json(body, has_records): the text bodies.body_json gives, or None."},
    {"setup_frames", setup_frames, METH_O,
     "setup_frames(plan): plan(api_key, api_version, request) -> (body parser, header version)."},
    {"decode_frame", (PyCFunction)(void (*)(void))decode_frame, METH_FASTCALL,
     "decode_frame(row, frame, api_key, api_version, request): True with the row written."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "jsontext", "A decoded body's facts and JSON text (hand-written C).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit_jsontext(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } keys[] = {
        {&s_error_code, "error_code"}, {&s_records, "records"},
        {&s_records_error, "records_error"}, {&s_name, "name"}, {&s_topic, "topic"},
        {&s_topic_name, "topic_name"}, {&s_topic_id, "topic_id"}, {&s_int, "int"},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if ((*keys[i].slot = PyUnicode_InternFromString(keys[i].text)) == NULL)
            return NULL;
    }
    return PyModule_Create(&module);
}
