/* `Columns` (columns.h): a table's rows as one C array per column, for the local engine and the
 * Spark tasks' Parquet writes. Hand-written; a list of row dicts is the reference, and a
 * `Columns` gives the same table (`schema.to_table`).
 *
 * Columns(names) is empty; extend(rows) adds row dicts or another Columns (a name a row lacks
 * is None there, as dict.get gives); len() and columns[i] (a new dict of the row) read it as
 * rows; column(name) and set_column(name, values) read and replace a column; arrow(names,
 * kinds) is arrow_columns() for the held rows. The arrays never leave the object, and no Python
 * code runs while one is written or read, so every index is checked against `size` and `cap`
 * only where they change. */
#include "columns.h"

int
columns_reserve(columns_obj *self, Py_ssize_t n)
{
    if (n <= self->cap - self->size)
        return 0;
    if (n > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)sizeof(PyObject *) - self->size) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t cap = self->cap ? self->cap : 64;
    while (cap < self->size + n)
        cap *= 2;
    /* columns grown one by one: one that fails leaves the others larger, `cap` as it was */
    for (Py_ssize_t c = 0; c < self->width; c++) {
        PyObject **grown = PyMem_Realloc(self->cols[c], (size_t)cap * sizeof(PyObject *));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->cols[c] = grown;
    }
    self->cap = cap;
    return 0;
}

/* Drops the references of `values[0:n]` (taken off the table first: a value's finaliser may
 * run Python code). */
static void
release(PyObject **values, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(values[i]);
}

void
columns_cut(columns_obj *self, Py_ssize_t n)
{
    if (n < 0 || n >= self->size)
        return;
    Py_ssize_t gone = (self->size - n) * self->width;
    PyObject **held = PyMem_Malloc((size_t)(gone ? gone : 1) * sizeof(PyObject *));
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    if (held == NULL) { /* no room to hold them: leaked, not freed under a finaliser */
        self->size = n;
        PyErr_Restore(type, value, trace);
        return;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t c = 0; c < self->width; c++) {
        for (Py_ssize_t i = n; i < self->size; i++)
            held[k++] = self->cols[c][i];
    }
    self->size = n;
    release(held, k);
    PyMem_Free(held);
    PyErr_Restore(type, value, trace);
}

int
columns_append(columns_obj *self, PyObject **values)
{
    if (columns_reserve(self, 1) < 0) {
        release(values, self->width);
        return -1;
    }
    for (Py_ssize_t c = 0; c < self->width; c++)
        self->cols[c][self->size] = values[c];
    self->size++;
    return 0;
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
    self->index = PyDict_New();
    self->cols = PyMem_Calloc((size_t)(width ? width : 1), sizeof(PyObject **));
    if (self->names == NULL || self->index == NULL || self->cols == NULL) {
        if (self->cols == NULL)
            PyErr_NoMemory();
        goto error;
    }
    for (Py_ssize_t c = 0; c < width; c++) {
        PyObject *name = PyTuple_GET_ITEM(given, c);
        if (!PyUnicode_CheckExact(name)) {
            PyErr_SetString(PyExc_TypeError, "Columns() takes a tuple of str names");
            goto error;
        }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name); /* the rows' keys are interned: found by identity */
        PyTuple_SET_ITEM(self->names, c, name);
        PyObject *at = PyLong_FromSsize_t(c);
        int rc = at == NULL ? -1 : PyDict_SetItem(self->index, name, at);
        Py_XDECREF(at);
        if (rc < 0)
            goto error;
    }
    if (PyDict_GET_SIZE(self->index) != width) {
        PyErr_SetString(PyExc_ValueError, "Columns() takes each name once");
        goto error;
    }
    self->width = width;
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
    for (Py_ssize_t c = 0; c < self->width; c++) {
        for (Py_ssize_t i = 0; i < self->size; i++)
            Py_VISIT(self->cols[c][i]);
    }
    return 0;
}

/* A cycle can run only through the values: the rows are dropped. */
static int
columns_clear_refs(PyObject *op)
{
    columns_cut((columns_obj *)op, 0);
    return 0;
}

static void
columns_dealloc(PyObject *op)
{
    columns_obj *self = (columns_obj *)op;
    PyObject_GC_UnTrack(op);
    columns_cut(self, 0);
    for (Py_ssize_t c = 0; self->cols != NULL && c < self->width; c++)
        PyMem_Free(self->cols[c]);
    PyMem_Free(self->cols);
    Py_CLEAR(self->names);
    Py_CLEAR(self->index);
    Py_TYPE(op)->tp_free(op);
}

static Py_ssize_t
columns_len(PyObject *op)
{
    return ((columns_obj *)op)->size;
}

/* Row i as a new dict of every column. */
static PyObject *
columns_item(PyObject *op, Py_ssize_t i)
{
    columns_obj *self = (columns_obj *)op;
    if (i < 0 || i >= self->size) {
        PyErr_SetString(PyExc_IndexError, "Columns index out of range");
        return NULL;
    }
    /* values first: the dict's inserts may run no code, but hold them anyway */
    PyObject *row = PyDict_New();
    for (Py_ssize_t c = 0; row != NULL && c < self->width; c++) {
        if (i >= self->size ||
            PyDict_SetItem(row, PyTuple_GET_ITEM(self->names, c), self->cols[c][i]) < 0)
            Py_CLEAR(row);
    }
    if (row == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "Columns changed while a row was read");
    return row;
}

/* The position of column `name`, -1 when not held (-2 with an exception). */
static Py_ssize_t
column_at(columns_obj *self, PyObject *name)
{
    PyObject *at = PyDict_GetItemWithError(self->index, name);
    if (at == NULL)
        return PyErr_Occurred() ? -2 : -1;
    Py_ssize_t c = PyLong_AsSsize_t(at);
    return c >= 0 && c < self->width ? c : -2;
}

/* The position of column `name`, or -1 with KeyError. */
static Py_ssize_t
column_named(columns_obj *self, PyObject *name)
{
    Py_ssize_t c = column_at(self, name);
    if (c == -1 || (c == -2 && !PyErr_Occurred()))
        PyErr_SetObject(PyExc_KeyError, name);
    return c < 0 ? -1 : c;
}

static PyObject *
columns_column(PyObject *op, PyObject *name)
{
    columns_obj *self = (columns_obj *)op;
    Py_ssize_t c = column_named(self, name);
    if (c < 0)
        return NULL;
    PyObject *list = PyList_New(self->size);
    for (Py_ssize_t i = 0; list != NULL && i < self->size; i++)
        PyList_SET_ITEM(list, i, Py_NewRef(self->cols[c][i]));
    return list;
}

static PyObject *
columns_set_column(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    columns_obj *self = (columns_obj *)op;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_column(name, values)");
        return NULL;
    }
    Py_ssize_t c = column_named(self, args[0]);
    if (c < 0)
        return NULL;
    PyObject *values = PySequence_Tuple(args[1]); /* ours: no code runs while it is read */
    if (values == NULL)
        return NULL;
    if (PyTuple_GET_SIZE(values) != self->size) {
        Py_DECREF(values);
        PyErr_SetString(PyExc_ValueError, "set_column() takes one value per row");
        return NULL;
    }
    PyObject **old = PyMem_Malloc((size_t)(self->size ? self->size : 1) * sizeof(PyObject *));
    if (old == NULL) {
        Py_DECREF(values);
        return PyErr_NoMemory();
    }
    Py_ssize_t n = self->size;
    for (Py_ssize_t i = 0; i < n; i++) {
        old[i] = self->cols[c][i];
        self->cols[c][i] = Py_NewRef(PyTuple_GET_ITEM(values, i));
    }
    Py_DECREF(values);
    release(old, n);
    PyMem_Free(old);
    Py_RETURN_NONE;
}

/* Another Columns' rows appended: each of our columns from its column of that name, or None. */
static int
extend_columns(columns_obj *self, columns_obj *other)
{
    Py_ssize_t more = other->size, n = self->size;
    Py_ssize_t *from = PyMem_Malloc((size_t)(self->width ? self->width : 1) * sizeof(Py_ssize_t));
    if (from == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t c = 0; c < self->width; c++) {
        from[c] = column_at(other, PyTuple_GET_ITEM(self->names, c));
        if (from[c] == -2) {
            PyMem_Free(from);
            return -1;
        }
    }
    /* `other` may be this object: its arrays are read after they grow, by index */
    if (columns_reserve(self, more) < 0) {
        PyMem_Free(from);
        return -1;
    }
    for (Py_ssize_t c = 0; c < self->width; c++) {
        for (Py_ssize_t i = 0; i < more; i++)
            self->cols[c][n + i] = Py_NewRef(from[c] >= 0 ? other->cols[from[c]][i] : Py_None);
    }
    self->size = n + more;
    PyMem_Free(from);
    return 0;
}

/* One row mapping appended: each column's value under its name, None when it has none. The
 * lookups (which may run a key's __eq__) come before the table is touched. */
static int
extend_mapping(columns_obj *self, PyObject *row, PyObject **values)
{
    Py_ssize_t c = 0;
    for (; c < self->width; c++) {
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
    if (c == self->width)
        return columns_append(self, values);
    release(values, c);
    return -1;
}

int
columns_append_mapping(columns_obj *self, PyObject *row)
{
    PyObject **values = PyMem_Calloc((size_t)(self->width ? self->width : 1), sizeof(PyObject *));
    if (values == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int rc = extend_mapping(self, row, values);
    PyMem_Free(values);
    return rc;
}

static PyObject *
columns_extend(PyObject *op, PyObject *rows)
{
    columns_obj *self = (columns_obj *)op;
    if (PyObject_TypeCheck(rows, &columns_type)) {
        if (extend_columns(self, (columns_obj *)rows) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    /* a tuple of our own: a row's __getitem__ could change the caller's list */
    PyObject *held = PySequence_Tuple(rows);
    if (held == NULL)
        return NULL;
    PyObject **values = PyMem_Calloc((size_t)(self->width ? self->width : 1), sizeof(PyObject *));
    Py_ssize_t n = self->size;
    int rc = values == NULL ? -1 : 0;
    if (values == NULL)
        PyErr_NoMemory();
    for (Py_ssize_t i = 0; rc == 0 && i < PyTuple_GET_SIZE(held); i++)
        rc = extend_mapping(self, PyTuple_GET_ITEM(held, i), values);
    if (rc < 0)
        columns_cut(self, n);
    PyMem_Free(values);
    Py_DECREF(held);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* One column's Arrow answer (see columns_arrow); `values` NULL for a column not held. */
static PyObject *
column_arrow(PyObject **values, Py_ssize_t n, int kind)
{
    column_t col = {0};
    PyObject *result = NULL;
    int ok = column_start(&col, kind, n) == 0;
    if (ok && kind == C_STRING) {
        /* the string data's size first: one allocation, not a doubling per 4 KiB and up */
        Py_ssize_t total = 0, size;
        for (Py_ssize_t i = 0; values != NULL && i < n && total <= INT32_MAX; i++) {
            if (PyUnicode_CheckExact(values[i]) && PyUnicode_IS_COMPACT_ASCII(values[i]))
                total += PyUnicode_GET_LENGTH(values[i]);
            else if (PyUnicode_CheckExact(values[i]) &&
                     PyUnicode_AsUTF8AndSize(values[i], &size) != NULL)
                total += size;
            else
                PyErr_Clear(); /* column_put meets it again and decides */
        }
        if (total > PyBytes_GET_SIZE(col.data) && total <= INT32_MAX)
            ok = _PyBytes_Resize(&col.data, total) == 0;
    }
    if (ok) {
        Py_ssize_t i = 0;
        for (; col.kind != C_LIST && i < n; i++) {
            if (column_put(&col, i, values ? values[i] : NULL) < 0)
                break;
        }
        if (col.kind != C_LIST && i == n)
            result = column_buffers(&col);
        else if (col.kind == C_LIST && !PyErr_Occurred()) {
            result = PyList_New(n);
            for (Py_ssize_t k = 0; result != NULL && k < n; k++)
                PyList_SET_ITEM(result, k, Py_NewRef(values ? values[k] : Py_None));
        }
    }
    column_clear(&col);
    return result;
}

/* arrow(names, kinds): per name, its Arrow buffers or a list of its values (as arrow_columns()
 * gives them); a name not held is a column of nulls. column_put runs no Python code. */
static PyObject *
columns_arrow(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    columns_obj *self = (columns_obj *)op;
    if (nargs != 2 || !PyTuple_CheckExact(args[0]) || !PyTuple_CheckExact(args[1]) ||
        PyTuple_GET_SIZE(args[0]) != PyTuple_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "arrow() takes a tuple of names and one of kinds");
        return NULL;
    }
    Py_ssize_t width = PyTuple_GET_SIZE(args[0]);
    PyObject *out = PyList_New(width);
    for (Py_ssize_t c = 0; out != NULL && c < width; c++) {
        PyObject *kind_of = PyTuple_GET_ITEM(args[1], c);
        long kind = PyLong_Check(kind_of) ? PyLong_AsLong(kind_of) : -1;
        Py_ssize_t at = column_at(self, PyTuple_GET_ITEM(args[0], c));
        PyObject *result = NULL;
        if (kind < C_LIST || kind > C_STRING) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "arrow() takes kinds 0-4");
        }
        else if (at >= -1)
            result = column_arrow(at >= 0 ? self->cols[at] : NULL, self->size, (int)kind);
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
    .tp_doc = "Columns(names): a table's rows held as one array per column.",
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
