/* Row dicts to columns for Arrow: `schema.to_table`'s itemgetter pass, compiled.
 *
 * Hand-written; `engines/schema.py` is the reference. columns(rows, names) gives one list per
 * name holding every row's value under it (None where a row lacks the key, as dict.get does),
 * when every row is a dict; for anything else it returns None and the Python code answers. */
#include "../reading/compiled.h"

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
    /* the rows held by a tuple of our own: a key's __eq__ (a row may hold any keys) can run
     * Python code, which could change the caller's list but not this tuple */
    PyObject *rows = PyList_AsTuple(args[0]);
    if (rows == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyDict_CheckExact(PyTuple_GET_ITEM(rows, i))) {
            Py_DECREF(rows);
            Py_RETURN_NONE;
        }
    }
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
