/* Whole size-prefixed frames cut from a run: the common step of `framing.py:split_frames`'
 * frame loop, compiled (hand-written; the Python loop is the reference and the rest of it).
 *
 * frames(items, mv, base, p, marks, stamps, j, min_size, max_frame, requests, FrameItem) cuts
 * frames from run bytes `mv` (a memoryview of the run's bytes object) starting at p, while a
 * whole frame of a plausible size sits there: each becomes FrameItem("frame", base + p, ts,
 * size, mv[p + 4 : p + 4 + size], 4 + size) appended to `items`, ts the stamp of the last mark
 * at or before its first byte (marks[j] onward, j only grows). It stops at the first thing
 * that is not such a frame (a prefix cut short, a size out of range, a frame past the run's
 * end), which the Python loop then handles, and returns (p, j, the correlation id of the last
 * request frame cut or None).
 */
#include "../reading/compiled.h"

static PyObject *kind_frame, *no_note;

static inline int32_t
be_i32(const uint8_t *p)
{
    return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
}

/* marks[k] as a 64-bit int; 0 when it is not one (a TypeError or OverflowError set). */
static int
mark_at(PyObject *marks, Py_ssize_t k, long long *out)
{
    long long v = PyLong_AsLongLong(PyList_GET_ITEM(marks, k));
    if (v == -1 && PyErr_Occurred())
        return 0;
    *out = v;
    return 1;
}

PyObject *
native_frames(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (kind_frame == NULL && (kind_frame = PyUnicode_InternFromString("frame")) == NULL)
        return NULL;
    if (no_note == NULL && (no_note = PyUnicode_InternFromString("")) == NULL)
        return NULL;
    if (nargs != 11 || !PyList_Check(args[0]) || !PyMemoryView_Check(args[1]) ||
        !PyList_Check(args[4]) || !PyList_Check(args[5]) || !PyType_Check(args[10]) ||
        ((PyTypeObject *)args[10])->tp_base != &PyTuple_Type ||
        ((PyTypeObject *)args[10])->tp_basicsize != PyTuple_Type.tp_basicsize) {
        PyErr_SetString(PyExc_TypeError,
                        "frames(items: list, mv: memoryview, base, p, marks: list, stamps: list, "
                        "j, min_size, max_frame, requests, FrameItem)");
        return NULL;
    }
    PyObject *items = args[0], *mv = args[1], *marks = args[4], *stamps = args[5];
    PyTypeObject *item_type = (PyTypeObject *)args[10];
    long long base = PyLong_AsLongLong(args[2]);
    Py_ssize_t p = PyLong_AsSsize_t(args[3]);
    Py_ssize_t j = PyLong_AsSsize_t(args[6]);
    long long min_size = PyLong_AsLongLong(args[7]);
    long long max_frame = PyLong_AsLongLong(args[8]);
    int requests = PyObject_IsTrue(args[9]);
    if (PyErr_Occurred() || requests < 0)
        return NULL;
    Py_buffer *view = PyMemoryView_GET_BUFFER(mv);
    if (view->ndim > 1 || view->itemsize != 1 || !PyBuffer_IsContiguous(view, 'C')) {
        PyErr_SetString(PyExc_TypeError, "frames() takes a flat memoryview of bytes");
        return NULL;
    }
    Py_ssize_t n_marks = PyList_GET_SIZE(marks);
    if (n_marks == 0 || PyList_GET_SIZE(stamps) != n_marks || j < 0 || j >= n_marks || p < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "frames(): marks and stamps of the same length, j in them");
        return NULL;
    }
    if (requests && min_size < 8)
        min_size = 8; /* a request's correlation id is read from every frame cut */
    const uint8_t *buf = view->buf;
    Py_ssize_t end = view->len;
    long long next_mark;
    int has_next = j + 1 < n_marks;
    if (has_next && !mark_at(marks, j + 1, &next_mark))
        return NULL;
    int32_t corr = 0;
    int cut_request = 0;
    while (p < end && end - p >= 4) {
        int32_t size = be_i32(buf + p);
        if (size < min_size || size > max_frame || size > end - p - 4)
            break;
        long long off = base + p;
        while (has_next && next_mark <= off) {
            j++;
            has_next = j + 1 < n_marks;
            if (has_next && !mark_at(marks, j + 1, &next_mark))
                return NULL;
        }
        Py_ssize_t nxt = p + 4 + size;
        PyObject *fields[7] = {
            kind_frame,
            PyLong_FromLongLong(off),
            PyList_GET_ITEM(stamps, j),
            PyLong_FromLong(size),
            PySequence_GetSlice(mv, p + 4, nxt),
            PyLong_FromSsize_t(4 + (Py_ssize_t)size),
            no_note,
        };
        if (fields[1] == NULL || fields[3] == NULL || fields[4] == NULL || fields[5] == NULL) {
            for (int k = 1; k < 6; k++) {
                if (k != 2)
                    Py_XDECREF(fields[k]);
            }
            return NULL;
        }
        PyObject *item = item_type->tp_alloc(item_type, 7);
        if (item == NULL) {
            for (int k = 1; k < 6; k++) {
                if (k != 2)
                    Py_DECREF(fields[k]);
            }
            return NULL;
        }
        Py_INCREF(fields[0]);
        Py_INCREF(fields[2]);
        Py_INCREF(fields[6]);
        for (int k = 0; k < 7; k++)
            PyTuple_SET_ITEM(item, k, fields[k]);
        int rc = PyList_Append(items, item);
        Py_DECREF(item);
        if (rc < 0)
            return NULL;
        if (requests) {
            corr = be_i32(buf + p + 8);
            cut_request = 1;
        }
        p = nxt;
    }
    if (cut_request)
        return Py_BuildValue("(nni)", p, j, (int)corr);
    return Py_BuildValue("(nnO)", p, j, Py_None);
}
