/* Record batches' hot loops on the compiled path: reading the records of a magic-2 batch and
 * framing them (zigzag varints, keys, values, headers, offset and timestamp deltas).
 *
 * Hand-written, unlike the generated shards beside it; `codec/records/batch.py` is the reference
 * and calls in here when the compiled codec is active. A function returns None on anything it
 * does not read or write exactly as the Python code does (malformed input, a value of another
 * type, a number out of int64 range): the Python code then runs on the same arguments and gives
 * the value, or raises the DecodeError or EncodeError with its offset and field path. So this
 * file never accepts what the Python code refuses, checks every byte is there before it reads
 * it, and refuses a length or count the input cannot hold before allocating anything for it.
 * The batch header, compression and CRC-32C (the crc32c package) stay in Python: once per batch.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "structmember.h"
#include "varint.h" /* MIN_RECORD_SIZE too */

/* -- the Record type ------------------------------------------------------------------------ */

/* `codec.records.model.Record`, a slots dataclass: records are made as its __init__ makes them,
 * by storing the five fields in their slots, without running __init__ (a Python call per record
 * would cost more than reading it). setup() finds where each slot sits from the class's own
 * member descriptors, so the order of the fields does not matter here. */
static PyTypeObject *record_type;
static Py_ssize_t at_offset, at_timestamp, at_key, at_value, at_headers;

static PyObject *s_key, *s_value, *s_headers, *s_timestamp; /* the dict keys build_batch takes */

#define SLOT(o, at) (*(PyObject **)((char *)(o) + (at)))

/* Where the object slot `name` of `type` sits; -1 (with an exception) if it is not a plain one. */
static Py_ssize_t
slot_of(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY) || member->offset <= 0 ||
        member->offset + (Py_ssize_t)sizeof(PyObject *) > type->tp_basicsize) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot", type->tp_name, name);
        return -1;
    }
    return member->offset;
}

static PyObject *
setup(PyObject *self, PyObject *type)
{
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "setup() takes the Record class");
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)type;
    const char *names[5] = {"offset", "timestamp", "key", "value", "headers"};
    Py_ssize_t at[5];
    for (int i = 0; i < 5; i++) {
        if ((at[i] = slot_of(t, names[i])) < 0)
            return NULL; /* the class in use, if any, keeps its slots */
    }
    at_offset = at[0];
    at_timestamp = at[1];
    at_key = at[2];
    at_value = at[3];
    at_headers = at[4];
    Py_INCREF(type);
    Py_XSETREF(record_type, t);
    Py_RETURN_NONE;
}

/* A new Record owning the five references (stolen, even on failure); NULL on failure. */
static PyObject *
new_record(PyObject *offset, PyObject *timestamp, PyObject *key, PyObject *value,
           PyObject *headers)
{
    PyObject *r = NULL;
    if (offset != NULL && timestamp != NULL && key != NULL && value != NULL && headers != NULL)
        r = record_type->tp_alloc(record_type, 0);
    if (r == NULL) {
        Py_XDECREF(offset);
        Py_XDECREF(timestamp);
        Py_XDECREF(key);
        Py_XDECREF(value);
        Py_XDECREF(headers);
        return NULL;
    }
    SLOT(r, at_offset) = offset;
    SLOT(r, at_timestamp) = timestamp;
    SLOT(r, at_key) = key;
    SLOT(r, at_value) = value;
    SLOT(r, at_headers) = headers;
    return r;
}

/* -- reading -------------------------------------------------------------------------------- */

/* A nullable byte string (key, value, header value) of length `size` at *at: None for -1, a
 * new bytes object (None when not `make`: only checked), or NULL when the length is negative
 * or runs past `end`. */
static inline PyObject *
read_bytes(const unsigned char **at, const unsigned char *end, int64_t size, int make)
{
    if (size == -1)
        Py_RETURN_NONE;
    if (size < 0 || size > end - *at)
        return NULL;
    const char *s = (const char *)*at;
    *at += size;
    if (!make)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(s, (Py_ssize_t)size);
}

/* A record's headers, from its header count to `end` (the record's end): a new list of
 * (str, bytes | None) tuples (None when not `make`: only checked), or NULL. */
static PyObject *
read_headers(const unsigned char **at, const unsigned char *end, int make)
{
    int64_t count, size;
    if (read_varint(at, end, 5, &count) < 0)
        return NULL;
    /* Each header takes at least two bytes: a lying count is refused before the list grows. */
    if (count < 0 || 2 * count > end - *at)
        return NULL;
    PyObject *headers = make ? PyList_New((Py_ssize_t)count) : Py_NewRef(Py_None);
    if (headers == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (read_varint(at, end, 5, &size) < 0 || size < 0 || size > end - *at)
            goto fail;
        PyObject *key = PyUnicode_DecodeUTF8((const char *)*at, (Py_ssize_t)size, NULL);
        if (key == NULL)
            goto fail;
        *at += size;
        PyObject *value = NULL;
        if (read_varint(at, end, 5, &size) == 0)
            value = read_bytes(at, end, size, make);
        if (value == NULL || !make) { /* a check decodes the key all the same: is it UTF-8? */
            Py_DECREF(key);
            Py_XDECREF(value);
            if (value == NULL)
                goto fail;
            continue;
        }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, key);
        PyTuple_SET_ITEM(pair, 1, value);
        PyList_SET_ITEM(headers, i, pair);
    }
    return headers;
fail:
    Py_DECREF(headers);
    return NULL;
}

/* One record from *at, which `end` bounds (the records' end), at offset and timestamp deltas
 * from the batch's base; `fixed` (log append time) replaces every timestamp when not NULL. When
 * not `make`, the record is only checked (None, or NULL for what would fail), as stream() does.
 *
 * Every field is read within the record's own length: Python reads on to the records' end but
 * then refuses any record whose fields do not end exactly where its length says, so a field that
 * crosses the record's end is refused on both paths. */
static PyObject *
read_record(const unsigned char **at, const unsigned char *end, int64_t base_offset,
            int64_t base_timestamp, PyObject *fixed, int make)
{
    int64_t size, offset, timestamp = 0;
    const unsigned char *s = *at, *record_end;
    if (read_record_head(&s, end, base_offset, base_timestamp, fixed != NULL, &record_end, &offset,
                         &timestamp) < 0)
        return NULL;
    PyObject *key = NULL, *value = NULL, *headers = NULL;
    if (read_varint(&s, record_end, 5, &size) < 0 || (key = read_bytes(&s, record_end, size, make)) == NULL)
        return NULL;
    if (read_varint(&s, record_end, 5, &size) < 0 || (value = read_bytes(&s, record_end, size, make)) == NULL)
        goto fail;
    if (s < record_end && *s == 0) { /* no headers: the common case */
        headers = make ? PyList_New(0) : Py_NewRef(Py_None);
        s++;
    }
    else {
        headers = read_headers(&s, record_end, make);
    }
    if (headers == NULL || s != record_end)
        goto fail;
    *at = record_end;
    if (!make) {
        Py_DECREF(key);
        Py_DECREF(value);
        return headers; /* None */
    }
    PyObject *ts;
    if (fixed != NULL) {
        Py_INCREF(fixed);
        ts = fixed;
    }
    else {
        ts = PyLong_FromLongLong(timestamp);
    }
    return new_record(PyLong_FromLongLong(offset), ts, key, value, headers);
fail:
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(headers);
    return NULL;
}

/* The arguments read() and stream() take from batch.py: the records' bytes, how many records
 * the batch header counts, the base offset and timestamp, and the log append time or None. */
typedef struct {
    Py_ssize_t count;
    int64_t base_offset, base_timestamp;
    PyObject *fixed; /* borrowed; NULL when the records keep their own timestamps */
} batch_args;

/* 0, or -1 (no exception) for arguments batch.py does not pass, or a count the bytes (already
 * in `view`) cannot hold: a lying count is refused before anything is allocated for it. */
static int
parse_args(PyObject *const *args, Py_buffer *view, batch_args *a)
{
    long long count = PyLong_AsLongLong(args[1]);
    a->base_offset = PyLong_AsLongLong(args[2]);
    a->base_timestamp = PyLong_AsLongLong(args[3]);
    a->fixed = args[4] == Py_None ? NULL : args[4];
    if (PyErr_Occurred() || (a->fixed != NULL && !PyLong_CheckExact(a->fixed))) {
        PyErr_Clear();
        return -1;
    }
    if (count < 0 || count > view->len / MIN_RECORD_SIZE)
        return -1;
    a->count = (Py_ssize_t)count;
    return 0;
}

/* read(buf, count, base_offset, base_timestamp, fixed_timestamp): batch.decode_records, which
 * returns the same list; None when that function is to answer instead. */
static PyObject *
read_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || record_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "read(buf, count, base_offset, base_timestamp, fixed)");
        return NULL;
    }
    Py_buffer view;
    batch_args a;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *records = NULL;
    if (parse_args(args, &view, &a) < 0 || (records = PyList_New(a.count)) == NULL)
        goto done;
    const unsigned char *at = view.buf, *end = at + view.len;
    /* No collection while the records are made: each would walk every record made so far, all
     * alive, and move them on to older generations, whose collections walk the whole heap. No
     * Python code runs in this loop, so nothing sees the collector paused; the first collection
     * after it sees the batch once, and one that is dropped soon never reaches an old generation.
     */
    int collecting = PyGC_Disable();
    for (Py_ssize_t i = 0; i < a.count && records != NULL; i++) {
        PyObject *r = read_record(&at, end, a.base_offset, a.base_timestamp, a.fixed, 1);
        if (r == NULL)
            Py_CLEAR(records);
        else
            PyList_SET_ITEM(records, i, r);
    }
    if (collecting)
        PyGC_Enable();
    if (at != end)
        Py_CLEAR(records);
done:
    PyBuffer_Release(&view);
    if (records == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return records;
}

/* -- streaming ------------------------------------------------------------------------------ */

/* An iterator over a batch's records, made one at a time, as a consumer loop drops them: the
 * records were all checked when it was made, so it raises only on memory running out (or on
 * bytes changed under it, which it still reads with every bound checked). */
typedef struct {
    PyObject_HEAD
    Py_buffer view; /* the records' bytes, held while the iterator lives */
    const unsigned char *at, *end;
    Py_ssize_t left;
    batch_args a;
} stream_object;

static void
stream_dealloc(stream_object *it)
{
    if (it->view.obj != NULL)
        PyBuffer_Release(&it->view);
    Py_XDECREF(it->a.fixed);
    PyObject_Free(it);
}

static PyObject *
stream_next(stream_object *it)
{
    if (it->left == 0)
        return NULL;
    it->left--;
    PyObject *r = read_record(&it->at, it->end, it->a.base_offset, it->a.base_timestamp,
                              it->a.fixed, 1);
    if (r == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "the batch's bytes changed while it was iterated");
    return r;
}

static PyTypeObject stream_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kipwire.codec._compiled.records.stream",
    .tp_basicsize = sizeof(stream_object),
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A batch's records, made one at a time.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)stream_next,
};

/* stream(buf, count, base_offset, base_timestamp, fixed_timestamp): an iterator giving what
 * read() returns, record by record; None when batch.decode_records is to answer instead. */
static PyObject *
stream_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || record_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "stream(buf, count, base_offset, base_timestamp, fixed)");
        return NULL;
    }
    stream_object *it = PyObject_New(stream_object, &stream_type);
    if (it == NULL)
        return NULL;
    it->view.obj = NULL;
    it->a.fixed = NULL;
    if (PyObject_GetBuffer(args[0], &it->view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(it);
        return NULL;
    }
    batch_args a;
    if (parse_args(args, &it->view, &a) < 0)
        goto refuse;
    it->a = a;
    Py_XINCREF(it->a.fixed);
    it->at = it->view.buf;
    it->end = it->at + it->view.len;
    it->left = it->a.count;
    /* Every record is checked first, so a malformed batch fails before its first record, as
     * `Batch.records` does. */
    const unsigned char *at = it->at;
    for (Py_ssize_t i = 0; i < it->a.count; i++) {
        PyObject *checked = read_record(&at, it->end, it->a.base_offset, it->a.base_timestamp,
                                        it->a.fixed, 0);
        if (checked == NULL)
            goto refuse;
        Py_DECREF(checked);
    }
    if (at == it->end)
        return (PyObject *)it;
refuse:
    Py_DECREF(it);
    PyErr_Clear();
    Py_RETURN_NONE;
}

#include "records_frame.h"

/* -- the module ----------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"setup", setup, METH_O, "setup(Record): the class records are read into and framed from."},
    {"read", (PyCFunction)(void (*)(void))read_records, METH_FASTCALL,
     "read(buf, count, base_offset, base_timestamp, fixed): the records, or None."},
    {"stream", (PyCFunction)(void (*)(void))stream_records, METH_FASTCALL,
     "stream(buf, count, base_offset, base_timestamp, fixed): an iterator of them, or None."},
    {"frame", (PyCFunction)(void (*)(void))frame_records, METH_FASTCALL,
     "frame(records, now, deltas, base): (bytes, base timestamp, max timestamp), or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "records", "Record batches' hot loops, compiled (hand-written).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit_records(void)
{
    if ((s_key = PyUnicode_InternFromString("key")) == NULL ||
        (s_value = PyUnicode_InternFromString("value")) == NULL ||
        (s_headers = PyUnicode_InternFromString("headers")) == NULL ||
        (s_timestamp = PyUnicode_InternFromString("timestamp")) == NULL)
        return NULL;
    if (PyType_Ready(&stream_type) < 0)
        return NULL;
    return PyModule_Create(&module);
}
