/* The `pdus` row half of `rows.c`, which includes it after its interned keys: a row being made
 * is a dict (the rows as a list of dicts) or one value per column of a `Columns`
 * (engines/columns.h), and the loops write it through row_set and read it through row_get. */
#ifndef KIPWIRE_ROWS_ROW_H
#define KIPWIRE_ROWS_ROW_H

/* The row columns the loops write */
enum {
    R_DIRECTION,
    R_PDU_INDEX,
    R_TS,
    R_LENGTH,
    R_DECODE_STATUS,
    R_DECODE_ERROR,
    R_STREAM_OFFSET,
    R_CAPTURED_BYTES,
    R_API_KEY,
    R_API_NAME,
    R_API_VERSION,
    R_CORRELATION_ID,
    R_CLIENT_ID,
    R_ERROR_CODE,
    R_COUNT
};

static PyObject **const row_key[R_COUNT] = {
    &k_direction,     &k_pdu_index,  &k_ts,          &k_length,         &k_decode_status,
    &k_decode_error,  &k_stream_offset, &k_captured_bytes, &k_api_key,   &k_api_name,
    &k_api_version,   &k_correlation_id, &k_client_id, &k_error_code,
};

typedef struct {
    PyObject *blank;        /* every row starts as its copy */
    PyObject *pdus;         /* the rows as dicts (a list), or NULL: they go to `cols` */
    PyObject *dict;         /* the row being made, as a dict (borrowed: `pdus` holds it) */
    columns_obj *cols;      /* the rows as columns, or NULL */
    Py_ssize_t width;       /* cols' columns */
    PyObject **base;        /* the blank's value of each column (new references) */
    PyObject **vals;        /* the row being made, one value per column (new references) */
    Py_ssize_t at[R_COUNT]; /* the column of each R_ key, -1 when cols has none */
    PyObject *scratch;      /* what the decoders write into: every column, `unset` until then */
    PyObject *unset;        /* a value no decoder writes */
} row_t;

/* Sets column `key` of the row to `v` (borrowed); 0 or -1. */
static int
row_set(row_t *r, int key, PyObject *v)
{
    if (r->cols == NULL)
        return PyDict_SetItem(r->dict, *row_key[key], v);
    Py_ssize_t c = r->at[key];
    if (c >= 0)
        Py_SETREF(r->vals[c], Py_NewRef(v));
    return 0;
}

/* As row_set with a new reference (taken; NULL is an error passed on). */
static int
row_put_new(row_t *r, int key, PyObject *v)
{
    if (v == NULL)
        return -1;
    int rc = row_set(r, key, v);
    Py_DECREF(v);
    return rc;
}

/* Column `key` of the row, borrowed; NULL when the row has none (with an exception on error). */
static PyObject *
row_get(row_t *r, int key)
{
    if (r->cols == NULL)
        return PyDict_GetItemWithError(r->dict, *row_key[key]);
    Py_ssize_t c = r->at[key];
    return c >= 0 ? r->vals[c] : NULL;
}

/* A fresh scratch dict: every column name, in order, mapped to `unset`; 0 or -1. */
static int
new_scratch(row_t *r)
{
    Py_CLEAR(r->scratch);
    r->scratch = PyDict_New();
    for (Py_ssize_t c = 0; r->scratch != NULL && c < r->width; c++) {
        if (PyDict_SetItem(r->scratch, PyTuple_GET_ITEM(r->cols->names, c), r->unset) < 0)
            Py_CLEAR(r->scratch);
    }
    return r->scratch == NULL ? -1 : 0;
}

/* Sets up the columns' side of `r` for `cols` (NULL: rows as dicts); 0 or -1. */
static int
row_open(row_t *r, PyObject *blank, columns_obj *cols)
{
    memset(r, 0, sizeof(*r));
    r->blank = blank;
    if (cols == NULL) {
        r->pdus = PyList_New(0);
        return r->pdus == NULL ? -1 : 0;
    }
    r->cols = cols;
    r->width = PyTuple_GET_SIZE(cols->names);
    r->base = PyMem_Calloc((size_t)(r->width ? r->width : 1), sizeof(PyObject *));
    r->vals = PyMem_Calloc((size_t)(r->width ? r->width : 1), sizeof(PyObject *));
    if (r->base == NULL || r->vals == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t c = 0; c < r->width; c++) {
        PyObject *v = PyDict_GetItemWithError(blank, PyTuple_GET_ITEM(cols->names, c));
        if (v == NULL && PyErr_Occurred())
            return -1;
        r->base[c] = Py_NewRef(v ? v : Py_None);
    }
    r->unset = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (r->unset == NULL || new_scratch(r) < 0)
        return -1;
    for (int k = 0; k < R_COUNT; k++) {
        PyObject *at = PyDict_GetItemWithError(cols->index, *row_key[k]);
        r->at[k] = at == NULL ? -1 : PyLong_AsSsize_t(at);
        if ((at == NULL && PyErr_Occurred()) || r->at[k] < -1 || r->at[k] >= r->width) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a Columns' index is out of range");
            return -1;
        }
    }
    return 0;
}

static void
row_close(row_t *r)
{
    Py_CLEAR(r->pdus);
    Py_CLEAR(r->scratch);
    Py_CLEAR(r->unset);
    for (Py_ssize_t c = 0; r->cols != NULL && c < r->width; c++) {
        if (r->base != NULL)
            Py_CLEAR(r->base[c]);
        if (r->vals != NULL)
            Py_CLEAR(r->vals[c]);
    }
    PyMem_Free(r->base);
    PyMem_Free(r->vals);
    r->base = r->vals = NULL;
}

/* A new row, a copy of the blank: appended to the list of dicts now, or to the columns by
 * row_end; 0 or -1. */
static int
row_begin(row_t *r)
{
    if (r->cols == NULL) {
        PyObject *row = PyDict_Copy(r->blank);
        if (row == NULL)
            return -1;
        int rc = PyList_Append(r->pdus, row);
        Py_DECREF(row); /* the list holds it */
        r->dict = rc < 0 ? NULL : row;
        return rc;
    }
    for (Py_ssize_t c = 0; c < r->width; c++)
        r->vals[c] = Py_NewRef(r->base[c]);
    return 0;
}

/* The row made (`keep`) or dropped; 0 or -1. */
static int
row_end(row_t *r, int keep)
{
    if (r->cols == NULL)
        return 0;
    if (keep) {
        int rc = columns_append(r->cols, r->vals); /* takes the values */
        memset(r->vals, 0, (size_t)r->width * sizeof(PyObject *));
        return rc;
    }
    for (Py_ssize_t c = 0; c < r->width; c++)
        Py_CLEAR(r->vals[c]);
    return 0;
}

/* What a decoder wrote into the scratch dict laid over the row's values, the scratch set back
 * to `unset` (a key that is no column is dropped, as schema.to_table drops it, and the scratch
 * made again); 0 or -1. The dict keeps its keys in insertion order, so the i-th is column i. */
static int
row_lay(row_t *r)
{
    Py_ssize_t pos = 0;
    PyObject *key, *v;
    while (PyDict_Next(r->scratch, &pos, &key, &v)) {
        if (v == r->unset)
            continue;
        Py_ssize_t c = pos - 1;
        if (c >= r->width || key != PyTuple_GET_ITEM(r->cols->names, c)) {
            PyObject *at = PyDict_GetItemWithError(r->cols->index, key);
            if (at == NULL) {
                if (PyErr_Occurred())
                    return -1;
                continue;
            }
            c = PyLong_AsSsize_t(at);
            if (c < 0 || c >= r->width) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_ValueError, "a Columns' index is out of range");
                return -1;
            }
        }
        Py_SETREF(r->vals[c], Py_NewRef(v));
        /* a value replaced, the keys unchanged: allowed while PyDict_Next walks the dict */
        if (PyDict_SetItem(r->scratch, key, r->unset) < 0)
            return -1;
    }
    return PyDict_GET_SIZE(r->scratch) == r->width ? 0 : new_scratch(r);
}

#endif
