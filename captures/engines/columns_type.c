/* `Columns` (columns.h): a table's rows as one list per column, for the local engine and the
 * Spark tasks' Parquet writes. Hand-written; a list of row dicts is the reference, and a
 * `Columns` gives the same table (`schema.to_table`).
 *
 * Columns(names) is empty; extend(rows) adds a list of row dicts or another Columns (a
 * name a row lacks is None there, as dict.get gives); len() and columns[i] (a new dict of the
 * row) read it as rows; column(name) and set_column(name, values) read and replace a column;
 * arrow(names, kinds) is arrow_columns() for the held rows. The lists never leave the object,
 * so every column stays as long as the table. */
#include "columns.h"

Py_ssize_t
columns_rows(columns_obj *self)
{
    Py_ssize_t width = PyTuple_GET_SIZE(self->lists);
    return width ? PyList_GET_SIZE(PyTuple_GET_ITEM(self->lists, 0)) : 0;
}

static Py_ssize_t
columns_len(PyObject *op)
{
    return columns_rows((columns_obj *)op);
}

void
columns_cut(columns_obj *self, Py_ssize_t n)
{
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(self->lists); c++) {
        PyObject *list = PyTuple_GET_ITEM(self->lists, c);
        if (PyList_GET_SIZE(list) > n && PyList_SetSlice(list, n, PY_SSIZE_T_MAX, NULL) < 0)
            PyErr_Clear(); /* shrinking does not allocate */
    }
    PyErr_Restore(type, value, trace);
}

int
columns_append(columns_obj *self, PyObject **values)
{
    Py_ssize_t width = PyTuple_GET_SIZE(self->lists), n = columns_len((PyObject *)self);
    int rc = 0;
    for (Py_ssize_t c = 0; c < width; c++) {
        if (rc == 0 && PyList_Append(PyTuple_GET_ITEM(self->lists, c), values[c]) < 0)
            rc = -1;
        Py_DECREF(values[c]);
    }
    if (rc < 0)
        columns_cut(self, n);
    return rc;
}

static PyObject *
columns_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *given;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Columns() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!:Columns", &PyTuple_Type, &given))
        return NULL;
    Py_ssize_t width = PyTuple_GET_SIZE(given);
    columns_obj *self = (columns_obj *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->names = PyTuple_New(width);
    self->lists = PyTuple_New(width);
    self->index = PyDict_New();
    if (self->names == NULL || self->lists == NULL || self->index == NULL)
        goto error;
    for (Py_ssize_t c = 0; c < width; c++) {
        PyObject *name = PyTuple_GET_ITEM(given, c);
        if (!PyUnicode_CheckExact(name)) {
            PyErr_SetString(PyExc_TypeError, "Columns() takes a tuple of str names");
            goto error;
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name); /* the rows' keys are interned: found by identity */
        PyTuple_SET_ITEM(self->names, c, name);
        PyObject *list = PyList_New(0), *at = PyLong_FromSsize_t(c);
        if (list != NULL)
            PyTuple_SET_ITEM(self->lists, c, list);
        int rc = list == NULL || at == NULL ? -1 : PyDict_SetItem(self->index, name, at);
        Py_XDECREF(at);
        if (rc < 0)
            goto error;
    }
    if (PyDict_GET_SIZE(self->index) != width) {
        PyErr_SetString(PyExc_ValueError, "Columns() takes each name once");
        goto error;
    }
    return (PyObject *)self;
error:
    Py_DECREF(self);
    return NULL;
}

static int
columns_traverse(PyObject *op, visitproc visit, void *arg)
{
    columns_obj *self = (columns_obj *)op;
    Py_VISIT(self->names);
    Py_VISIT(self->index);
    Py_VISIT(self->lists);
    return 0;
}

/* A cycle can run only through the values: the columns are emptied, their lists kept. */
static int
columns_clear_refs(PyObject *op)
{
    columns_obj *self = (columns_obj *)op;
    for (Py_ssize_t c = 0; self->lists != NULL && c < PyTuple_GET_SIZE(self->lists); c++) {
        PyObject *list = PyTuple_GET_ITEM(self->lists, c);
        if (list != NULL && PyList_SetSlice(list, 0, PY_SSIZE_T_MAX, NULL) < 0)
            PyErr_Clear(); /* shrinking does not allocate */
    }
    return 0;
}

static void
columns_dealloc(PyObject *op)
{
    columns_obj *self = (columns_obj *)op;
    PyObject_GC_UnTrack(op);
    Py_CLEAR(self->names);
    Py_CLEAR(self->index);
    Py_CLEAR(self->lists);
    Py_TYPE(op)->tp_free(op);
}

/* Row i as a new dict of every column. */
static PyObject *
columns_item(PyObject *op, Py_ssize_t i)
{
    columns_obj *self = (columns_obj *)op;
    if (i < 0 || i >= columns_len(op)) {
        PyErr_SetString(PyExc_IndexError, "Columns index out of range");
        return NULL;
    }
    PyObject *row = PyDict_New();
    for (Py_ssize_t c = 0; row != NULL && c < PyTuple_GET_SIZE(self->lists); c++) {
        PyObject *list = PyTuple_GET_ITEM(self->lists, c);
        if (i >= PyList_GET_SIZE(list)) {
            PyErr_SetString(PyExc_ValueError, "Columns of different lengths");
            Py_CLEAR(row);
        }
        else if (PyDict_SetItem(row, PyTuple_GET_ITEM(self->names, c), PyList_GET_ITEM(list, i)) <
                 0)
            Py_CLEAR(row);
    }
    return row;
}

/* The position of column `name`, -1 when not held (-2 with an exception). */
static Py_ssize_t
column_at(columns_obj *self, PyObject *name)
{
    PyObject *at = PyDict_GetItemWithError(self->index, name);
    if (at == NULL)
        return PyErr_Occurred() ? -2 : -1;
    return PyLong_AsSsize_t(at);
}

static PyObject *
columns_column(PyObject *op, PyObject *name)
{
    columns_obj *self = (columns_obj *)op;
    Py_ssize_t c = column_at(self, name);
    if (c == -1)
        PyErr_SetObject(PyExc_KeyError, name);
    if (c < 0)
        return NULL;
    PyObject *list = PyTuple_GET_ITEM(self->lists, c);
    return PyList_GetSlice(list, 0, PyList_GET_SIZE(list));
}

static PyObject *
columns_set_column(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    columns_obj *self = (columns_obj *)op;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_column(name, values)");
        return NULL;
    }
    Py_ssize_t c = column_at(self, args[0]);
    if (c == -1)
        PyErr_SetObject(PyExc_KeyError, args[0]);
    if (c < 0)
        return NULL;
    PyObject *values = PySequence_List(args[1]);
    if (values == NULL)
        return NULL;
    if (PyList_GET_SIZE(values) != columns_len(op)) {
        Py_DECREF(values);
        PyErr_SetString(PyExc_ValueError, "set_column() takes one value per row");
        return NULL;
    }
    PyObject *old = PyTuple_GET_ITEM(self->lists, c);
    PyTuple_SET_ITEM(self->lists, c, values);
    Py_DECREF(old);
    Py_RETURN_NONE;
}

/* Another Columns' rows appended: each of our columns from its column of that name, or None. */
static int
append_columns(columns_obj *self, columns_obj *other)
{
    Py_ssize_t n = columns_len((PyObject *)self), more = columns_len((PyObject *)other);
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(self->lists); c++) {
        PyObject *list = PyTuple_GET_ITEM(self->lists, c), *from = NULL;
        Py_ssize_t at = column_at(other, PyTuple_GET_ITEM(self->names, c));
        int rc;
        if (at < -1)
            rc = -1;
        else if (at >= 0) {
            /* a copy first: `other` may be this object */
            from = PyTuple_GET_ITEM(other->lists, at);
            from = PyList_GetSlice(from, 0, more);
            rc = from == NULL ? -1 : PyList_SetSlice(list, n, n, from);
        }
        else {
            from = PyList_New(more);
            for (Py_ssize_t i = 0; from != NULL && i < more; i++)
                PyList_SET_ITEM(from, i, Py_NewRef(Py_None));
            rc = from == NULL ? -1 : PyList_SetSlice(list, n, n, from);
        }
        Py_XDECREF(from);
        if (rc < 0) {
            columns_cut(self, n);
            return -1;
        }
    }
    return 0;
}

/* One row mapping appended: each column's value under its name, None when it has none. */
static int
append_mapping(columns_obj *self, PyObject *row)
{
    Py_ssize_t width = PyTuple_GET_SIZE(self->lists);
    PyObject **values = PyMem_Calloc((size_t)(width ? width : 1), sizeof(PyObject *));
    if (values == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t c = 0;
    for (; c < width; c++) {
        PyObject *name = PyTuple_GET_ITEM(self->names, c), *v;
        if (PyDict_CheckExact(row)) {
            v = Py_XNewRef(PyDict_GetItemWithError(row, name));
        }
        else {
            v = PyObject_GetItem(row, name);
            if (v == NULL && PyErr_ExceptionMatches(PyExc_KeyError))
                PyErr_Clear();
        }
        if (v == NULL && PyErr_Occurred())
            break;
        values[c] = v ? v : Py_NewRef(Py_None);
    }
    int rc = -1;
    if (c == width)
        rc = columns_append(self, values);
    else {
        for (Py_ssize_t k = 0; k < c; k++)
            Py_DECREF(values[k]);
    }
    PyMem_Free(values);
    return rc;
}

static PyObject *
columns_extend(PyObject *op, PyObject *rows)
{
    columns_obj *self = (columns_obj *)op;
    if (PyObject_TypeCheck(rows, &columns_type)) {
        if (append_columns(self, (columns_obj *)rows) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    /* a tuple of our own: a row's __getitem__ could change the caller's list */
    PyObject *held = PySequence_Tuple(rows);
    if (held == NULL)
        return NULL;
    Py_ssize_t n = columns_len(op);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(held); i++) {
        if (append_mapping(self, PyTuple_GET_ITEM(held, i)) < 0) {
            columns_cut(self, n);
            Py_DECREF(held);
            return NULL;
        }
    }
    Py_DECREF(held);
    Py_RETURN_NONE;
}

/* arrow(names, kinds): per name, its Arrow buffers or a list of its values (as arrow_columns()
 * gives them); a name not held is a column of nulls. */
static PyObject *
columns_arrow(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    columns_obj *self = (columns_obj *)op;
    if (nargs != 2 || !PyTuple_CheckExact(args[0]) || !PyTuple_CheckExact(args[1]) ||
        PyTuple_GET_SIZE(args[0]) != PyTuple_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "arrow() takes a tuple of names and one of kinds");
        return NULL;
    }
    Py_ssize_t width = PyTuple_GET_SIZE(args[0]), n = columns_len(op);
    PyObject *out = PyList_New(width);
    for (Py_ssize_t c = 0; out != NULL && c < width; c++) {
        PyObject *kind_of = PyTuple_GET_ITEM(args[1], c);
        long kind = PyLong_Check(kind_of) ? PyLong_AsLong(kind_of) : -1;
        if (kind < C_LIST || kind > C_STRING) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "arrow() takes kinds 0-4");
            Py_CLEAR(out);
            break;
        }
        Py_ssize_t at = column_at(self, PyTuple_GET_ITEM(args[0], c));
        PyObject *list = at >= 0 ? PyTuple_GET_ITEM(self->lists, at) : NULL;
        if (at < -1 || (list != NULL && PyList_GET_SIZE(list) != n)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "Columns of different lengths");
            Py_CLEAR(out);
            break;
        }
        column_t col = {0};
        PyObject *result = NULL;
        if (column_start(&col, (int)kind, n) == 0) {
            Py_ssize_t i = 0;
            /* the list cannot change under this loop: column_put runs no Python code */
            for (; col.kind != C_LIST && i < n; i++) {
                if (column_put(&col, i, list ? PyList_GET_ITEM(list, i) : NULL) < 0)
                    break;
            }
            if (col.kind != C_LIST && i == n)
                result = column_buffers(&col);
            else if (col.kind == C_LIST && !PyErr_Occurred()) {
                result = PyList_New(n);
                for (Py_ssize_t k = 0; result != NULL && k < n; k++)
                    PyList_SET_ITEM(result, k,
                                    Py_NewRef(list ? PyList_GET_ITEM(list, k) : Py_None));
            }
        }
        column_clear(&col);
        if (result == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, c, result);
    }
    return out;
}

static PyObject *
columns_get_names(PyObject *op, void *closure)
{
    (void)closure;
    return Py_NewRef(((columns_obj *)op)->names);
}

static PyMethodDef columns_methods[] = {
    {"extend", columns_extend, METH_O,
     "extend(rows): row dicts (a name a row lacks is None there) or another Columns."},
    {"column", columns_column, METH_O, "column(name) -> a new list of the column's values."},
    {"set_column", (PyCFunction)(void (*)(void))columns_set_column, METH_FASTCALL,
     "set_column(name, values): the column replaced, one value per row."},
    {"arrow", (PyCFunction)(void (*)(void))columns_arrow, METH_FASTCALL,
     "arrow(names, kinds) -> per name its Arrow buffers or its values (see arrow_columns)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef columns_getset[] = {
    {"names", columns_get_names, NULL, "The column names, in order.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods columns_sequence = {
    .sq_length = columns_len,
    .sq_item = columns_item,
};

PyTypeObject columns_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kipwire.captures.reading.compiled.Columns",
    .tp_basicsize = sizeof(columns_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Columns(names): a table's rows held as one list per column.",
    .tp_new = columns_new,
    .tp_dealloc = columns_dealloc,
    .tp_traverse = columns_traverse,
    .tp_clear = columns_clear_refs,
    .tp_methods = columns_methods,
    .tp_getset = columns_getset,
    .tp_as_sequence = &columns_sequence,
};

int
columns_add_type(PyObject *module)
{
    if (PyType_Ready(&columns_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Columns", (PyObject *)&columns_type);
}
