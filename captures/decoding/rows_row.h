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

/* The pair columns, in PAIR_COLUMNS order */
enum {
    P_CAPTURE,
    P_FILE,
    P_FLOW_UID,
    P_CORRELATION_ID,
    P_API_KEY,
    P_API_NAME,
    P_API_VERSION,
    P_CLIENT_ID,
    P_REQUEST_TS,
    P_RESPONSE_TS,
    P_RTT_MS,
    P_REQUEST_LENGTH,
    P_RESPONSE_LENGTH,
    P_ERROR_CODE,
    P_STATUS,
    P_COUNT
};

static PyObject **const pair_key[P_COUNT] = {
    &k_capture,     &k_file,        &k_flow_uid,      &k_correlation_id, &k_api_key,
    &k_api_name,    &k_api_version, &k_client_id,     &k_request_ts,     &k_response_ts,
    &k_rtt_ms,      &k_request_length, &k_response_length, &k_error_code, &k_status,
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
    columns_obj *pcols;     /* the pair rows as columns, or NULL: a pair is a dict */
    Py_ssize_t pat[P_COUNT]; /* the column of each P_ key in pcols, -1 when it has none */
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

/* The column of each of `keys` in `cols` into at[]; 0 or -1. */
static int
columns_of_keys(columns_obj *cols, PyObject **const *keys, int n, Py_ssize_t *at)
{
    for (int k = 0; k < n; k++) {
        PyObject *found = PyDict_GetItemWithError(cols->index, *keys[k]);
        at[k] = found == NULL ? -1 : PyLong_AsSsize_t(found);
        if ((found == NULL && PyErr_Occurred()) || at[k] < -1 ||
            at[k] >= PyTuple_GET_SIZE(cols->names)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a Columns' index is out of range");
            return -1;
        }
    }
    return 0;
}

/* Sets up `r` for rows as `cols` (NULL: rows as dicts) and pairs as `pcols` (NULL: dicts);
 * 0 or -1. */
static int
row_open(row_t *r, PyObject *blank, columns_obj *cols, columns_obj *pcols)
{
    memset(r, 0, sizeof(*r));
    r->blank = blank;
    r->pcols = pcols;
    if (pcols != NULL && columns_of_keys(pcols, pair_key, P_COUNT, r->pat) < 0)
        return -1;
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
    return columns_of_keys(cols, row_key, R_COUNT, r->at);
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

/* -- a pair row, a dict or a row of `pcols` (its index) ---------------------------------- */

/* A request's pair row appended to pcols from its values (borrowed, P_ order); its index (a
 * new reference) or NULL. */
static PyObject *
pair_append(row_t *r, PyObject **values)
{
    Py_ssize_t width = PyTuple_GET_SIZE(r->pcols->names);
    PyObject **row = PyMem_Calloc((size_t)(width ? width : 1), sizeof(PyObject *));
    if (row == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t c = 0; c < width; c++)
        row[c] = Py_NewRef(Py_None);
    for (int k = 0; k < P_COUNT; k++) {
        if (r->pat[k] >= 0)
            Py_SETREF(row[r->pat[k]], Py_NewRef(values[k]));
    }
    Py_ssize_t index = r->pcols->size;
    int rc = columns_append(r->pcols, row); /* takes the values */
    PyMem_Free(row);
    return rc < 0 ? NULL : PyLong_FromSsize_t(index);
}

/* Where column `key` of pair row `pair` (an index) is in pcols, NULL when it has none, or with
 * an exception when `pair` is no row there. */
static PyObject **
pair_slot(row_t *r, PyObject *pair, int key)
{
    Py_ssize_t i = PyLong_AsSsize_t(pair);
    if (i < 0 || i >= r->pcols->size) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_IndexError, "a pair row out of range");
        return NULL;
    }
    return r->pat[key] >= 0 ? &r->pcols->cols[r->pat[key]][i] : NULL;
}

/* Column `key` of a pair row, borrowed; NULL when it has none (with an exception on error). */
static PyObject *
pair_get(row_t *r, PyObject *pair, int key)
{
    if (r->pcols == NULL)
        return PyDict_GetItemWithError(pair, *pair_key[key]);
    PyObject **slot = pair_slot(r, pair, key);
    return slot == NULL ? NULL : *slot;
}

/* Sets column `key` of a pair row to `v`, a new reference (taken; NULL is an error passed on);
 * 0 or -1. */
static int
pair_set(row_t *r, PyObject *pair, int key, PyObject *v)
{
    if (v == NULL)
        return -1;
    if (r->pcols == NULL) {
        int rc = PyDict_SetItem(pair, *pair_key[key], v);
        Py_DECREF(v);
        return rc;
    }
    PyObject **slot = pair_slot(r, pair, key);
    if (slot == NULL) {
        Py_DECREF(v);
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_SETREF(*slot, v); /* the slot is set before the old value goes */
    return 0;
}

#endif
