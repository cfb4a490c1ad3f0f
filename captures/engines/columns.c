/* Row dicts to columns for Arrow: `schema.to_table`'s itemgetter pass, compiled; and `Columns`,
 * rows held as columns from the start (columns.h).
 *
 * Hand-written; `engines/schema.py` is the reference. columns(rows, names) gives one list per
 * name holding every row's value under it (None where a row lacks the key, as dict.get does),
 * when every row is a dict; for anything else it returns None and the Python code answers. */
#include "columns.h"

/* The rows as a tuple of our own, or None (a new reference) when one is not a dict: a key's
 * __eq__ (a row may hold any keys) can run Python code, which could change the caller's list
 * but not this tuple. */
static PyObject *
dict_rows(PyObject *list)
{
    PyObject *rows = PyList_AsTuple(list);
    if (rows == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rows); i++) {
        if (!PyDict_CheckExact(PyTuple_GET_ITEM(rows, i))) {
            Py_DECREF(rows);
            Py_RETURN_NONE;
        }
    }
    return rows;
}

PyObject *
native_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "columns() takes a list of rows and a tuple of names");
        return NULL;
    }
    PyObject *names = args[1];
    Py_ssize_t width = PyTuple_GET_SIZE(names);
    for (Py_ssize_t c = 0; c < width; c++) {
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, c))) {
            PyErr_SetString(PyExc_TypeError, "columns() takes column names as str");
            return NULL;
        }
    }
    PyObject *rows = dict_rows(args[0]);
    if (rows == NULL || rows == Py_None)
        return rows;
    Py_ssize_t n = PyTuple_GET_SIZE(rows);
    PyObject *out = PyList_New(width);
    if (out == NULL) {
        Py_DECREF(rows);
        return NULL;
    }
    for (Py_ssize_t c = 0; c < width; c++) {
        PyObject *col = PyList_New(n);
        if (col == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < n; i++)
            PyList_SET_ITEM(col, i, Py_NewRef(Py_None));
        PyList_SET_ITEM(out, c, col);
    }
    /* a row at a time, each of its columns: a row's dict stays in cache while it is read */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyTuple_GET_ITEM(rows, i);
        Py_INCREF(row); /* a key's __eq__ could empty the dict, never free it */
        for (Py_ssize_t c = 0; c < width; c++) {
            PyObject *v = PyDict_GetItemWithError(row, PyTuple_GET_ITEM(names, c));
            if (v == NULL) {
                if (PyErr_Occurred()) {
                    Py_DECREF(row);
                    goto error;
                }
                continue; /* None already */
            }
            PyObject *col = PyList_GET_ITEM(out, c);
            PyObject *old = PyList_GET_ITEM(col, i);
            PyList_SET_ITEM(col, i, Py_NewRef(v));
            Py_DECREF(old);
        }
        Py_DECREF(row);
    }
    Py_DECREF(rows);
    return out;
error:
    Py_DECREF(rows);
    Py_DECREF(out);
    return NULL;
}

/* -- Arrow buffers ------------------------------------------------------------------------------
 *
 * arrow_columns(rows, names, kinds): as columns(), but a column of kind 1-4 (int16, int32,
 * int64 or a timestamp's int64, string) comes back as the buffers of its Arrow array,
 * (null count, validity bitmap or None, values or offsets, string data or None), which
 * `pa.Array.from_buffers` takes as they are: no Python list and no per-value conversion by
 * pyarrow. A column holding any value pa.array would not take the same way (not an exact int or
 * str, out of range, a str that is not UTF-8, string data past 2 GiB) comes back as columns()
 * gives it, and pa.array converts it (or raises) as before. Kind 0 columns likewise. */

void
column_clear(column_t *c)
{
    Py_CLEAR(c->validity);
    Py_CLEAR(c->values);
    Py_CLEAR(c->data);
}

/* Room for the column's buffers for n rows; 0 or -1. */
int
column_start(column_t *c, int kind, Py_ssize_t n)
{
    static const Py_ssize_t width[] = {0, 2, 4, 8, 4};
    c->kind = kind;
    if (kind == C_LIST)
        return 0;
    c->validity = PyBytes_FromStringAndSize(NULL, (n + 7) / 8);
    c->values = PyBytes_FromStringAndSize(NULL, (n + (kind == C_STRING)) * width[kind]);
    if (c->validity == NULL || c->values == NULL)
        return -1;
    memset(PyBytes_AS_STRING(c->validity), 0, (size_t)PyBytes_GET_SIZE(c->validity));
    if (kind == C_STRING) {
        c->data = PyBytes_FromStringAndSize(NULL, 4096);
        if (c->data == NULL)
            return -1;
        ((int32_t *)PyBytes_AS_STRING(c->values))[0] = 0;
    }
    return 0;
}

/* Row i's value `v` (NULL: the row lacks the key) into column c; 0, or -1 on error. A value the
 * buffers do not take turns the column to C_LIST. */
int
column_put(column_t *c, Py_ssize_t i, PyObject *v)
{
    char *values = PyBytes_AS_STRING(c->values);
    if (v == NULL || v == Py_None) {
        c->nulls++;
        if (c->kind == C_STRING)
            ((int32_t *)values)[i + 1] = (int32_t)c->used;
        else if (c->kind == C_INT16)
            ((int16_t *)values)[i] = 0;
        else if (c->kind == C_INT32)
            ((int32_t *)values)[i] = 0;
        else
            ((int64_t *)values)[i] = 0;
        return 0;
    }
    if (c->kind == C_STRING) {
        Py_ssize_t size;
        const char *text = PyUnicode_CheckExact(v) ? PyUnicode_AsUTF8AndSize(v, &size) : NULL;
        if (text == NULL) {
            if (PyErr_Occurred()) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeError))
                    return -1;
                PyErr_Clear();
            }
            c->kind = C_LIST;
            return 0;
        }
        if (size > INT32_MAX - c->used) {
            c->kind = C_LIST;
            return 0;
        }
        if (c->used + size > PyBytes_GET_SIZE(c->data)) {
            Py_ssize_t cap = PyBytes_GET_SIZE(c->data);
            while (cap < c->used + size)
                cap *= 2;
            if (_PyBytes_Resize(&c->data, cap) < 0)
                return -1;
        }
        memcpy(PyBytes_AS_STRING(c->data) + c->used, text, (size_t)size);
        c->used += size;
        ((int32_t *)values)[i + 1] = (int32_t)c->used;
    }
    else {
        if (!PyLong_CheckExact(v)) {
            c->kind = C_LIST;
            return 0;
        }
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (c->kind == C_INT16 && (x < INT16_MIN || x > INT16_MAX)) ||
            (c->kind == C_INT32 && (x < INT32_MIN || x > INT32_MAX))) {
            c->kind = C_LIST;
            return 0;
        }
        if (c->kind == C_INT16)
            ((int16_t *)values)[i] = (int16_t)x;
        else if (c->kind == C_INT32)
            ((int32_t *)values)[i] = (int32_t)x;
        else
            ((int64_t *)values)[i] = (int64_t)x;
    }
    PyBytes_AS_STRING(c->validity)[i / 8] |= (char)(1 << (i % 8));
    return 0;
}

/* The column's answer: its buffers as a tuple, or its values as a list; NULL on error. */
static PyObject *
column_finish(column_t *c, PyObject *rows, PyObject *name)
{
    Py_ssize_t n = PyTuple_GET_SIZE(rows);
    if (c->kind == C_LIST) {
        PyObject *col = PyList_New(n);
        for (Py_ssize_t i = 0; col != NULL && i < n; i++) {
            PyObject *v = PyDict_GetItemWithError(PyTuple_GET_ITEM(rows, i), name);
            if (v == NULL && PyErr_Occurred()) {
                Py_CLEAR(col);
                break;
            }
            PyList_SET_ITEM(col, i, Py_NewRef(v ? v : Py_None));
        }
        return col;
    }
    return column_buffers(c);
}

PyObject *
column_buffers(column_t *c)
{
    if (c->kind == C_STRING && _PyBytes_Resize(&c->data, c->used) < 0)
        return NULL;
    return Py_BuildValue("(nOOO)", c->nulls, c->nulls ? c->validity : Py_None, c->values,
                         c->kind == C_STRING ? c->data : Py_None);
}

PyObject *
native_arrow_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyTuple_CheckExact(args[1]) ||
        !PyTuple_CheckExact(args[2]) || PyTuple_GET_SIZE(args[1]) != PyTuple_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "arrow_columns() takes a list of rows, a tuple of names and their kinds");
        return NULL;
    }
    PyObject *names = args[1];
    Py_ssize_t width = PyTuple_GET_SIZE(names);
    for (Py_ssize_t c = 0; c < width; c++) {
        PyObject *kind = PyTuple_GET_ITEM(args[2], c);
        long k = PyLong_Check(kind) ? PyLong_AsLong(kind) : -1;
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, c)) || k < C_LIST || k > C_STRING) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "arrow_columns() takes str names and kinds 0-4");
            return NULL;
        }
    }
    PyObject *rows = dict_rows(args[0]);
    if (rows == NULL || rows == Py_None)
        return rows;
    Py_ssize_t n = PyTuple_GET_SIZE(rows);
    PyObject *out = NULL;
    column_t *cols = PyMem_Calloc((size_t)(width ? width : 1), sizeof(column_t));
    if (cols == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < width; c++) {
        if (column_start(&cols[c], (int)PyLong_AsLong(PyTuple_GET_ITEM(args[2], c)), n) < 0)
            goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyTuple_GET_ITEM(rows, i);
        Py_INCREF(row);
        for (Py_ssize_t c = 0; c < width; c++) {
            if (cols[c].kind == C_LIST)
                continue;
            PyObject *v = PyDict_GetItemWithError(row, PyTuple_GET_ITEM(names, c));
            if ((v == NULL && PyErr_Occurred()) || column_put(&cols[c], i, v) < 0) {
                Py_DECREF(row);
                goto done;
            }
        }
        Py_DECREF(row);
    }
    out = PyList_New(width);
    for (Py_ssize_t c = 0; out != NULL && c < width; c++) {
        PyObject *col = column_finish(&cols[c], rows, PyTuple_GET_ITEM(names, c));
        if (col == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, c, col);
    }
done:
    for (Py_ssize_t c = 0; cols != NULL && c < width; c++)
        column_clear(&cols[c]);
    PyMem_Free(cols);
    Py_DECREF(rows);
    return out;
}
