/* A connection's `pdus` and `pairs` rows from its frame items: the two loops of
 * `decoding/pairing.py:decode_connection`, compiled (hand-written; the Python loops are the
 * reference and give the same rows).
 *
 * pdu_rows(blank, requests, responses, names, fast, slow, client_id, orphan, pair_base) makes
 * each item's row as a copy of `blank`, pairs responses with requests by correlation id (first
 * come, first answered) and decodes every whole frame: with `fast` (jsontext.decode_frame) when
 * it takes the frame, else with `slow` (pairing._decode_into, bound). A truncated request's
 * client id comes from `client_id`, an orphan response's pair row from `orphan`; `pair_base`
 * holds the pair rows' (capture, file, flow_uid). It returns (pdus, pairs, request PDUs,
 * response PDUs), or None for items that are not FrameItems as framing.py makes them (the
 * Python loops then run).
 *
 * With a tenth argument, a `Columns` (engines/columns.h), the `pdus` rows are appended there, one
 * value per column, and it is the `pdus` returned: no dict per row (on an error or a give-back
 * it is cut back as it was); an eleventh, likewise for the `pairs` rows (a waiting pair is then
 * its row's index there, answered in place). The decoders still write a dict: one scratch dict
 * of the call, whose written values are laid over the row (rows_row.h).
 */
#include "../engines/columns.h"

enum { K_FRAME, K_TRUNCATED, K_GAP, K_SKIPPED };

static PyObject *k_direction, *k_pdu_index, *k_ts, *k_length, *k_decode_status, *k_decode_error,
    *k_stream_offset, *k_captured_bytes, *k_api_key, *k_api_name, *k_api_version,
    *k_correlation_id, *k_client_id, *k_capture, *k_file, *k_flow_uid, *k_request_ts,
    *k_response_ts, *k_rtt_ms, *k_request_length, *k_response_length, *k_error_code, *k_status;
static PyObject *v_request, *v_response, *v_kinds[4], *v_statuses[4], *v_ok, *v_no_response,
    *v_answered, *v_request_missing, *v_answered_, *v_million;

/* Interns the keys and values above once; 0 or -1. */
static int
rows_ready(void)
{
    if (v_million != NULL)
        return 0;
    struct {
        PyObject **slot;
        const char *text;
    } strs[] = {
        {&k_direction, "direction"}, {&k_pdu_index, "pdu_index"}, {&k_ts, "ts"},
        {&k_length, "length"}, {&k_decode_status, "decode_status"},
        {&k_decode_error, "decode_error"}, {&k_stream_offset, "stream_offset"},
        {&k_captured_bytes, "captured_bytes"}, {&k_api_key, "api_key"},
        {&k_api_name, "api_name"}, {&k_api_version, "api_version"},
        {&k_correlation_id, "correlation_id"}, {&k_client_id, "client_id"},
        {&k_capture, "capture"}, {&k_file, "file"}, {&k_flow_uid, "flow_uid"},
        {&k_request_ts, "request_ts"}, {&k_response_ts, "response_ts"}, {&k_rtt_ms, "rtt_ms"},
        {&k_request_length, "request_length"}, {&k_response_length, "response_length"},
        {&k_error_code, "error_code"}, {&k_status, "status"}, {&v_request, "request"},
        {&v_response, "response"}, {&v_kinds[K_FRAME], "frame"},
        {&v_kinds[K_TRUNCATED], "truncated"}, {&v_kinds[K_GAP], "gap"},
        {&v_kinds[K_SKIPPED], "skipped"}, {&v_statuses[K_FRAME], "ok"},
        {&v_statuses[K_TRUNCATED], "truncated"}, {&v_statuses[K_GAP], "gap"},
        {&v_statuses[K_SKIPPED], "malformed"}, {&v_ok, "ok"}, {&v_no_response, "no_response"},
        {&v_answered, "answered"}, {&v_request_missing, "request_missing"},
        {&v_answered_, "answered_"},
    };
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        if (*strs[i].slot == NULL &&
            (*strs[i].slot = PyUnicode_InternFromString(strs[i].text)) == NULL)
            return -1;
    }
    v_million = PyFloat_FromDouble(1e6);
    return v_million == NULL ? -1 : 0;
}

/* The kind of a FrameItem's first field (K_*), -1 for another value. */
static int
kind_of(PyObject *kind)
{
    for (int k = 0; k < 4; k++) {
        if (kind == v_kinds[k])
            return k;
    }
    if (!PyUnicode_CheckExact(kind))
        return -1;
    for (int k = 0; k < 4; k++) {
        if (PyUnicode_Compare(kind, v_kinds[k]) == 0)
            return k;
    }
    return -1;
}

/* The first bytes of a frame's data: how many there are (up to `want`) into `head`; -1 with an
 * exception when it is not a buffer. */
static Py_ssize_t
frame_head(PyObject *data, unsigned char *head, Py_ssize_t want, Py_ssize_t *size)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return -1;
    Py_ssize_t n = view.len < want ? view.len : want;
    memcpy(head, view.buf, (size_t)n);
    *size = view.len;
    PyBuffer_Release(&view);
    return n;
}

/* 1 (the Python loops are to run) after an exception they meet again; -1 for an interrupt. */
static int
give_back(void)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return 1;
}

static inline int32_t
be32(const unsigned char *s)
{
    return (int32_t)(((uint32_t)s[0] << 24) | ((uint32_t)s[1] << 16) | ((uint32_t)s[2] << 8) |
                     s[3]);
}

static inline int16_t
be16(const unsigned char *s)
{
    return (int16_t)((s[0] << 8) | s[1]);
}

#include "rows_row.h"

/* -- the loops ------------------------------------------------------------------------------ */

/* A FrameItem's columns in its new row (pairing._pdu_row); 0 or -1. */
static int
item_row(row_t *r, PyObject *it, int kind, PyObject *direction, Py_ssize_t index)
{
    PyObject *length = PyTuple_GET_ITEM(it, 3), *note = PyTuple_GET_ITEM(it, 6);
    if (row_set(r, R_DIRECTION, direction) < 0 ||
        row_put_new(r, R_PDU_INDEX, PyLong_FromSsize_t(index)) < 0 ||
        row_set(r, R_TS, PyTuple_GET_ITEM(it, 2)) < 0 || row_set(r, R_LENGTH, length) < 0 ||
        row_set(r, R_DECODE_STATUS, v_statuses[kind]) < 0)
        return -1;
    if (kind == K_SKIPPED) {
        if (row_put_new(r, R_DECODE_ERROR,
                        PyUnicode_FromFormat("%S bytes skipped: %S", length, note)) < 0)
            return -1;
    }
    else {
        int noted = PyObject_IsTrue(note);
        if (noted < 0 || (noted && row_set(r, R_DECODE_ERROR, note) < 0))
            return -1;
    }
    if (row_set(r, R_STREAM_OFFSET, PyTuple_GET_ITEM(it, 1)) < 0 ||
        row_set(r, R_CAPTURED_BYTES, PyTuple_GET_ITEM(it, 5)) < 0)
        return -1;
    return 0;
}

/* The kind of item `it` (K_*), -1 when it is not a FrameItem. */
static int
item_kind(PyObject *it)
{
    if (!PyTuple_Check(it) || PyTuple_GET_SIZE(it) != 7)
        return -1;
    return kind_of(PyTuple_GET_ITEM(it, 0));
}

/* Decodes a whole frame into the row: `fast` when it takes it, else `slow`; the status back (a
 * new reference), NULL on error. A row held as columns gets what the decoder wrote into a fresh
 * dict. */
static PyObject *
decode(PyObject *fast, PyObject *slow, row_t *r, PyObject *data, PyObject *key,
       PyObject *version, int request)
{
    PyObject *target = Py_NewRef(r->cols == NULL ? r->dict : r->scratch);
    if (target == NULL)
        return NULL;
    PyObject *args[5] = {target, data, key, version, request ? Py_True : Py_False};
    PyObject *status = NULL;
    if (fast != Py_None) {
        PyObject *taken = PyObject_Vectorcall(fast, args, 5, NULL);
        if (taken == NULL)
            goto done;
        int yes = PyObject_IsTrue(taken);
        Py_DECREF(taken);
        if (yes < 0)
            goto done;
        if (yes)
            status = Py_NewRef(v_ok);
    }
    if (status == NULL)
        status = PyObject_Vectorcall(slow, args, 5, NULL);
    if (status != NULL && r->cols != NULL && row_lay(r) < 0)
        Py_CLEAR(status);
done:
    Py_DECREF(target);
    return status;
}

/* The pair row of a request (its columns in PAIR_COLUMNS order): a new dict, or with the
 * pairs held as columns the row's index there (appended); a new reference or NULL. */
static PyObject *
request_pair(PyObject *base, row_t *r, PyObject *it, PyObject *corr, PyObject *key,
             PyObject *name, PyObject *version)
{
    PyObject *client = row_get(r, R_CLIENT_ID);
    if (client == NULL && PyErr_Occurred())
        return NULL;
    PyObject *values[P_COUNT] = {PyTuple_GET_ITEM(base, 0), PyTuple_GET_ITEM(base, 1),
                                 PyTuple_GET_ITEM(base, 2), corr, key, name, version,
                                 client ? client : Py_None, PyTuple_GET_ITEM(it, 2), Py_None,
                                 Py_None, PyTuple_GET_ITEM(it, 3), Py_None, Py_None,
                                 v_no_response};
    if (r->pcols != NULL)
        return pair_append(r, values);
    PyObject *pair = PyDict_New();
    for (int i = 0; pair != NULL && i < P_COUNT; i++) {
        if (PyDict_SetItem(pair, *pair_key[i], values[i]) < 0)
            Py_CLEAR(pair);
    }
    return pair;
}

/* Queues `pair` under its correlation id: `waiting` maps it to [next index, pair, pair, ...]. */
static int
wait_for(PyObject *waiting, PyObject *corr, PyObject *pair)
{
    PyObject *queue = PyDict_GetItemWithError(waiting, corr);
    if (queue != NULL)
        return PyList_Append(queue, pair);
    if (PyErr_Occurred())
        return -1;
    queue = PyList_New(2);
    if (queue == NULL)
        return -1;
    PyList_SET_ITEM(queue, 0, PyLong_FromLong(1));
    PyList_SET_ITEM(queue, 1, Py_NewRef(pair));
    if (PyList_GET_ITEM(queue, 0) == NULL) {
        Py_DECREF(queue);
        return -1;
    }
    int rc = PyDict_SetItem(waiting, corr, queue);
    Py_DECREF(queue);
    return rc;
}

/* The oldest unanswered pair of `corr` (borrowed, taken off the queue), NULL when none (or on
 * error, with an exception). */
static PyObject *
answer(PyObject *waiting, PyObject *corr)
{
    PyObject *queue = PyDict_GetItemWithError(waiting, corr);
    if (queue == NULL)
        return NULL;
    Py_ssize_t next = PyLong_AsSsize_t(PyList_GET_ITEM(queue, 0));
    if (next < 0 || next >= PyList_GET_SIZE(queue))
        return NULL;
    PyObject *after = PyLong_FromSsize_t(next + 1);
    if (after == NULL)
        return NULL;
    PyObject *pair = PyList_GET_ITEM(queue, next);
    PyList_SetItem(queue, 0, after); /* the queue holds the pair still */
    return pair;
}

/* What item_head returns when the frame's first bytes are in `head`. */
#define HEAD_READ 2

/* An item's row, and for a frame with at least `want` bytes those bytes in `head`: HEAD_READ,
 * else what an item function returns (0 done, 1 the Python loops are to run, -1 on error). */
static int
item_head(row_t *r, PyObject *it, int kind, PyObject *direction, Py_ssize_t i,
          Py_ssize_t *count, unsigned char *head, Py_ssize_t want)
{
    if (item_row(r, it, kind, direction, i) < 0)
        return -1;
    if (kind != K_FRAME && kind != K_TRUNCATED)
        return 0;
    *count += 1;
    Py_ssize_t size;
    if (frame_head(PyTuple_GET_ITEM(it, 4), head, want, &size) < 0)
        return give_back();
    return size < want ? 0 : HEAD_READ;
}

/* One request item's row and pair; 1 when the Python loops are to run, 0 done, -1 on error. */
static int
request_item(PyObject *const *args, row_t *r, PyObject *it, int kind, Py_ssize_t i,
             PyObject *pairs, PyObject *waiting, Py_ssize_t *count)
{
    PyObject *names = args[3], *fast = args[4], *slow = args[5], *client_id = args[6],
             *base = args[8];
    unsigned char head[8];
    int got = item_head(r, it, kind, v_request, i, count, head, 8);
    if (got != HEAD_READ)
        return got;
    PyObject *data = PyTuple_GET_ITEM(it, 4);
    PyObject *key = PyLong_FromLong(be16(head)), *version = PyLong_FromLong(be16(head + 2));
    PyObject *corr = PyLong_FromLong(be32(head + 4)), *pair = NULL;
    int rc = -1;
    if (key == NULL || version == NULL || corr == NULL)
        goto done;
    PyObject *name = PyDict_GetItemWithError(names, key);
    if (name == NULL && PyErr_Occurred())
        goto done;
    name = name ? name : Py_None;
    if (row_set(r, R_API_KEY, key) < 0 || row_set(r, R_API_NAME, name) < 0 ||
        row_set(r, R_API_VERSION, version) < 0 || row_set(r, R_CORRELATION_ID, corr) < 0)
        goto done;
    if (kind == K_FRAME) {
        PyObject *status = decode(fast, slow, r, data, key, version, 1);
        if (status == NULL)
            goto done;
        Py_DECREF(status);
    }
    else if (row_put_new(r, R_CLIENT_ID, PyObject_CallOneArg(client_id, data)) < 0) {
        goto done;
    }
    pair = request_pair(base, r, it, corr, key, name, version);
    if (pair != NULL && (r->pcols != NULL || PyList_Append(pairs, pair) == 0) &&
        wait_for(waiting, corr, pair) == 0)
        rc = 0;
done:
    Py_XDECREF(key);
    Py_XDECREF(version);
    Py_XDECREF(corr);
    Py_XDECREF(pair);
    return rc;
}

/* A response's columns from its request's pair, and the pair's from the response; 0 or -1. */
static int
answered(row_t *r, PyObject *pair, PyObject *it)
{
    static const int from_key[4] = {R_API_KEY, R_API_NAME, R_API_VERSION, R_CLIENT_ID};
    static const int from_pair[4] = {P_API_KEY, P_API_NAME, P_API_VERSION, P_CLIENT_ID};
    for (int i = 0; i < 4; i++) {
        PyObject *v = pair_get(r, pair, from_pair[i]);
        if (v == NULL && PyErr_Occurred())
            return -1;
        if (row_set(r, from_key[i], v ? v : Py_None) < 0)
            return -1;
    }
    PyObject *ts = PyTuple_GET_ITEM(it, 2);
    PyObject *request_ts = pair_get(r, pair, P_REQUEST_TS);
    if (request_ts == NULL && PyErr_Occurred())
        return -1;
    PyObject *rtt = Py_NewRef(Py_None);
    if (ts != Py_None && request_ts != NULL && request_ts != Py_None) {
        PyObject *diff = PyNumber_Subtract(ts, request_ts);
        Py_SETREF(rtt, diff == NULL ? NULL : PyNumber_TrueDivide(diff, v_million));
        Py_XDECREF(diff);
    }
    /* rtt first: pair_set takes it whatever happens */
    if (pair_set(r, pair, P_RTT_MS, rtt) < 0 ||
        pair_set(r, pair, P_RESPONSE_TS, Py_NewRef(ts)) < 0 ||
        pair_set(r, pair, P_RESPONSE_LENGTH, Py_NewRef(PyTuple_GET_ITEM(it, 3))) < 0 ||
        pair_set(r, pair, P_STATUS, Py_NewRef(v_answered)) < 0)
        return -1;
    return 0;
}

/* Decodes an answered response into the row and notes on its pair how that went; 0 or -1. */
static int
decode_answer(PyObject *fast, PyObject *slow, row_t *r, PyObject *pair, PyObject *data)
{
    PyObject *key = pair_get(r, pair, P_API_KEY);
    PyObject *version = key ? pair_get(r, pair, P_API_VERSION) : NULL;
    if (version == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_KeyError, "api_version");
        return -1;
    }
    /* the pair holds them, and Python code (slow) may change the pair */
    Py_INCREF(key);
    Py_INCREF(version);
    PyObject *status = decode(fast, slow, r, data, key, version, 0);
    Py_DECREF(key);
    Py_DECREF(version);
    if (status == NULL)
        return -1;
    int ok = PyObject_RichCompareBool(status, v_ok, Py_EQ);
    if (ok == 0) /* the pair holds a failed response */
        ok = pair_set(r, pair, P_STATUS, PyUnicode_Concat(v_answered_, status)) < 0 ? -1 : 1;
    Py_DECREF(status);
    if (ok < 0)
        return -1;
    PyObject *err = row_get(r, R_ERROR_CODE);
    if (err == NULL && PyErr_Occurred())
        return -1;
    return pair_set(r, pair, P_ERROR_CODE, Py_NewRef(err ? err : Py_None));
}

/* One response item's row, paired; as request_item. */
static int
response_item(PyObject *const *args, row_t *r, PyObject *it, int kind, Py_ssize_t i,
              PyObject *pairs, PyObject *waiting, Py_ssize_t *count)
{
    PyObject *fast = args[4], *slow = args[5], *orphan = args[7];
    unsigned char head[4];
    int got = item_head(r, it, kind, v_response, i, count, head, 4);
    if (got != HEAD_READ)
        return got;
    PyObject *data = PyTuple_GET_ITEM(it, 4);
    PyObject *corr = PyLong_FromLong(be32(head));
    if (row_put_new(r, R_CORRELATION_ID, Py_XNewRef(corr)) < 0) {
        Py_XDECREF(corr);
        return -1;
    }
    PyObject *pair = answer(waiting, corr);
    int rc = -1;
    if (pair == NULL) {
        if (PyErr_Occurred())
            goto done;
        if (kind == K_FRAME &&
            (row_set(r, R_DECODE_STATUS, v_request_missing) < 0 ||
             row_put_new(r, R_DECODE_ERROR,
                         PyUnicode_FromFormat("no captured request has correlation id %S",
                                              corr)) < 0))
            goto done;
        PyObject *call[2] = {corr, it};
        PyObject *lone = PyObject_Vectorcall(orphan, call, 2, NULL);
        if (lone != NULL && (r->pcols != NULL ? columns_append_mapping(r->pcols, lone)
                                              : PyList_Append(pairs, lone)) == 0)
            rc = 0;
        Py_XDECREF(lone);
        goto done;
    }
    Py_INCREF(pair);
    rc = answered(r, pair, it);
    if (rc == 0 && kind == K_FRAME)
        rc = decode_answer(fast, slow, r, pair, data);
    Py_DECREF(pair);
done:
    Py_DECREF(corr);
    return rc;
}

typedef int (*item_fn)(PyObject *const *, row_t *, PyObject *, int, Py_ssize_t, PyObject *,
                       PyObject *, Py_ssize_t *);

/* A loop over one direction's items; 1 when an item is not a FrameItem (or the Python loops
 * are to run), 0 done, -1 on error. */
static int
item_rows(PyObject *const *args, PyObject *items, item_fn each, row_t *r, PyObject *pairs,
          PyObject *waiting, Py_ssize_t *count)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *it = PyList_GET_ITEM(items, i);
        int kind = item_kind(it);
        if (kind < 0)
            return 1;
        if (row_begin(r) < 0)
            return -1;
        Py_INCREF(it); /* Python code below may change the list */
        int rc = each(args, r, it, kind, i, pairs, waiting, count);
        Py_DECREF(it);
        if (row_end(r, rc == 0) < 0)
            rc = -1;
        if (rc != 0)
            return rc;
    }
    return 0;
}

PyObject *
native_pdu_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 9 || nargs > 11 || !PyDict_CheckExact(args[0]) ||
        !PyList_CheckExact(args[1]) || !PyList_CheckExact(args[2]) || !PyDict_Check(args[3]) ||
        !PyCallable_Check(args[5]) || !PyCallable_Check(args[6]) ||
        !PyCallable_Check(args[7]) || (args[4] != Py_None && !PyCallable_Check(args[4])) ||
        !PyTuple_CheckExact(args[8]) || PyTuple_GET_SIZE(args[8]) != 3 ||
        (nargs >= 10 && !PyObject_TypeCheck(args[9], &columns_type)) ||
        (nargs == 11 && !PyObject_TypeCheck(args[10], &columns_type))) {
        PyErr_SetString(PyExc_TypeError, "pdu_rows(blank, requests, responses, names, fast, "
                                         "slow, client_id, orphan, (capture, file, flow_uid)"
                                         "[, pdus Columns[, pairs Columns]])");
        return NULL;
    }
    if (rows_ready() < 0)
        return NULL;
    columns_obj *cols = nargs >= 10 ? (columns_obj *)Py_NewRef(args[9]) : NULL;
    columns_obj *pcols = nargs == 11 ? (columns_obj *)Py_NewRef(args[10]) : NULL;
    Py_ssize_t had = cols != NULL ? cols->size : 0, had_pairs = pcols != NULL ? pcols->size : 0;
    row_t r;
    PyObject *pairs = pcols != NULL ? Py_NewRef(pcols) : PyList_New(0), *waiting = PyDict_New();
    PyObject *result = NULL;
    Py_ssize_t requests = 0, responses = 0;
    int rc = row_open(&r, args[0], cols, pcols);
    if (rc == 0 && pairs && waiting)
        rc = item_rows(args, args[1], request_item, &r, pairs, waiting, &requests);
    else
        rc = -1;
    if (rc == 0)
        rc = item_rows(args, args[2], response_item, &r, pairs, waiting, &responses);
    if (rc == 0)
        result = Py_BuildValue("(OOnn)", cols ? (PyObject *)cols : r.pdus, pairs, requests,
                               responses);
    else if (rc > 0)
        result = Py_NewRef(Py_None);
    if (result == Py_None || result == NULL) { /* the rows of this call taken back */
        if (cols != NULL)
            columns_cut(cols, had);
        if (pcols != NULL)
            columns_cut(pcols, had_pairs);
    }
    row_close(&r);
    Py_XDECREF(cols);
    Py_XDECREF(pcols);
    Py_XDECREF(pairs);
    Py_XDECREF(waiting);
    return result;
}
