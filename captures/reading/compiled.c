/* The module `kipwire.captures.reading.compiled` (see compiled.h): its setup and its functions'
 * table. */
#include "compiled.h"
#include "../engines/columns.h"

PyTypeObject *segment_type;
PyObject *empty_bytes;

/* Is `type` a namedtuple of `fields` fields with nothing added (so tp_alloc makes one)? */
static int
plain_namedtuple(PyObject *type, Py_ssize_t fields)
{
    if (!PyType_Check(type) || ((PyTypeObject *)type)->tp_base != &PyTuple_Type ||
        ((PyTypeObject *)type)->tp_basicsize != PyTuple_Type.tp_basicsize)
        return 0;
    PyObject *names = PyObject_GetAttrString(type, "_fields");
    if (names == NULL) {
        PyErr_Clear();
        return 0;
    }
    int ok = PyTuple_Check(names) && PyTuple_GET_SIZE(names) == fields;
    Py_DECREF(names);
    return ok;
}

static PyObject *
setup(PyObject *self, PyObject *type)
{
    (void)self;
    if (!plain_namedtuple(type, 9)) {
        PyErr_SetString(PyExc_TypeError, "setup() takes TcpSegment, a 9-field namedtuple");
        return NULL;
    }
    Py_INCREF(type);
    Py_XSETREF(segment_type, (PyTypeObject *)type);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_O, "setup(TcpSegment): the class segments are made as."},
    {"walk", (PyCFunction)(void (*)(void))native_walk, METH_FASTCALL,
     "walk(buf, pos, end, pcapng, little, interfaces, copy, limit) -> "
     "(items, pos, packets, tcp, truncated, stopped)"},
    {"assemble_half", (PyCFunction)(void (*)(void))native_assemble_half, METH_FASTCALL,
     "assemble_half(segs, syn_seq, fin_seq, acks, Run) -> "
     "(runs, start, end, wire_bytes, retransmitted), or None"},
    {"take_plain", (PyCFunction)(void (*)(void))native_take_plain, METH_FASTCALL,
     "take_plain(i, ts, seq, ack, flags, wire, from_a, pay, a_segs, b_segs, a_acks, b_acks) -> "
     "(i, a packets, b packets, last ts or None, has data)"},
    {"take_items", (PyCFunction)(void (*)(void))native_take_items, METH_FASTCALL,
     "take_items(items, i, open) -> i"},
    {"frames", (PyCFunction)(void (*)(void))native_frames, METH_FASTCALL,
     "frames(items, mv, base, p, marks, stamps, j, min_size, max_frame, requests, FrameItem) -> "
     "(p, j, last request correlation id or None)"},
    {"group", (PyCFunction)(void (*)(void))native_group, METH_FASTCALL,
     "group(items, i, first0, open, Fragment, copy, max_segs, max_bytes) -> (i, full or None)"},
    {"pdu_rows", (PyCFunction)(void (*)(void))native_pdu_rows, METH_FASTCALL,
     "pdu_rows(blank, requests, responses, names, fast, slow, client_id, orphan, base"
     "[, pdu Columns[, pair Columns]]) -> (pdus, pairs, request PDUs, response PDUs), or None"},
    {"columns", (PyCFunction)(void (*)(void))native_columns, METH_FASTCALL,
     "columns(rows, names) -> a list per name of the rows' values, or None"},
    {"arrow_columns", (PyCFunction)(void (*)(void))native_arrow_columns, METH_FASTCALL,
     "arrow_columns(rows, names, kinds) -> per name its Arrow buffers or its values, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "compiled",
    "The capture pipeline's hot loops, compiled (hand-written).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit_compiled(void)
{
    empty_bytes = PyBytes_FromStringAndSize(NULL, 0);
    if (empty_bytes == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && columns_add_type(m) < 0)
        Py_CLEAR(m);
    return m;
}
