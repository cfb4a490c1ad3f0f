/* The frame half of `jsontext.c`, which includes it after its walk: one call decodes a whole
 * request or response frame (header, compiled body parse, facts and JSON text) into its `pdus`
 * row, as `captures/decoding/pairing.py:_decode_into` would for a frame that decodes.
 *
 * Only the common case is taken: a frame whose (API key, version) has a plan (see
 * frame_plan_of), a header without tagged fields, a body the compiled parser reads and the walk
 * writes. For anything else decode_frame() returns False without touching the row, and the
 * Python path (the reference) decodes the frame, with its statuses and error texts.
 */
#ifndef KIPWIRE_JSONTEXT_FRAME_H
#define KIPWIRE_JSONTEXT_FRAME_H

#define PLAN_KEYS 128    /* API keys with a plan slot; others take the Python path */
#define PLAN_VERSIONS 64 /* versions likewise */

/* set by setup_frames(): plan(api_key, api_version, request) -> (body parser, header version)
 * or None (the Python path decodes that frame) */
static PyObject *plan_fn;
/* plan_fn's answers, made on first use: new references, Py_None for "the Python path" */
static PyObject *plans[2][PLAN_KEYS][PLAN_VERSIONS];
/* interned row keys and the "ok" status */
static PyObject *r_client_id, *r_api_version, *r_trailing_bytes, *r_header_version,
    *r_decode_status, *r_decode_error, *r_topics, *r_record_count, *r_topic_ids, *r_body_json,
    *r_ok;

/* Whether `v` is a header version: an int 0-2. */
static int
header_version_ok(PyObject *v)
{
    int overflow = 0;
    long hv = PyLong_CheckExact(v) ? PyLong_AsLongAndOverflow(v, &overflow) : -1;
    return !overflow && hv >= 0 && hv <= 2;
}

/* The plan of a frame (borrowed), Py_None for the Python path; NULL with an exception. */
static PyObject *
frame_plan_of(long key, long version, int request)
{
    if (key < 0 || key >= PLAN_KEYS || version < 0 || version >= PLAN_VERSIONS)
        return Py_None;
    PyObject **slot = &plans[request][key][version];
    if (*slot != NULL)
        return *slot;
    PyObject *plan = PyObject_CallFunction(plan_fn, "llO", key, version,
                                           request ? Py_True : Py_False);
    if (plan == NULL)
        return NULL;
    if (plan != Py_None &&
        (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 2 ||
         !PyCallable_Check(PyTuple_GET_ITEM(plan, 0)) ||
         !header_version_ok(PyTuple_GET_ITEM(plan, 1)))) {
        Py_DECREF(plan);
        PyErr_SetString(PyExc_TypeError,
                        "a frame plan is (body parser, header version 0-2) or None");
        return NULL;
    }
    *slot = plan;
    return plan;
}

/* The header's end in `b[0:n]` and, for a request of header v1+, its client id (a new
 * reference, Py_None when null); -1 when the Python path is to read it (cut short, a length or
 * text it refuses, tagged fields). */
static Py_ssize_t
frame_header(const unsigned char *b, Py_ssize_t n, int request, long hv, PyObject **client)
{
    Py_ssize_t p = request ? 8 : 4;
    if (n < p)
        return -1;
    if (request && hv >= 1) {
        if (n - p < 2)
            return -1;
        int16_t size = (int16_t)((b[p] << 8) | b[p + 1]);
        p += 2;
        if (size == -1) {
            *client = Py_NewRef(Py_None);
        }
        else {
            if (size < 0 || n - p < size)
                return -1;
            *client = PyUnicode_DecodeUTF8((const char *)b + p, size, "strict");
            if (*client == NULL)
                return -1;
            p += size;
        }
    }
    /* request header v2, response header v1: tagged fields, taken here only when there are none */
    if ((request && hv >= 2) || (!request && hv >= 1)) {
        if (p >= n || b[p] != 0) {
            Py_CLEAR(*client);
            return -1;
        }
        p += 1;
    }
    return p;
}

/* Writes the frame's decoded columns into `row`; 0, or -1 with an exception. */
static int
frame_fill(PyObject *row, PyObject *api_version, int request, PyObject *client,
           Py_ssize_t trailing, long hv, walk_t *w, PyObject *err)
{
    PyObject *text = walk_text(w);
    PyObject *records = w->have_records ? PyLong_FromLongLong(w->records) : Py_NewRef(Py_None);
    PyObject *trail = PyLong_FromSsize_t(trailing);
    PyObject *version = PyLong_FromLong(hv);
    int rc = -1;
    if (text != NULL && records != NULL && trail != NULL && version != NULL &&
        (request ? PyDict_SetItem(row, r_client_id, client ? client : Py_None)
                 : PyDict_SetItem(row, r_api_version, api_version)) == 0 &&
        PyDict_SetItem(row, r_trailing_bytes, trail) == 0 &&
        PyDict_SetItem(row, r_header_version, version) == 0 &&
        PyDict_SetItem(row, r_decode_status, r_ok) == 0 &&
        PyDict_SetItem(row, r_decode_error, Py_None) == 0 &&
        PyDict_SetItem(row, s_error_code, err ? err : Py_None) == 0 &&
        PyDict_SetItem(row, r_topics, w->topics ? w->topics : Py_None) == 0 &&
        PyDict_SetItem(row, r_record_count, records) == 0 &&
        PyDict_SetItem(row, r_topic_ids, w->ids ? w->ids : Py_None) == 0 &&
        PyDict_SetItem(row, r_body_json, text) == 0)
        rc = 0;
    Py_XDECREF(text);
    Py_XDECREF(records);
    Py_XDECREF(trail);
    Py_XDECREF(version);
    return rc;
}

/* Clears an exception the Python path is to meet again (it raises it with its own text); an
 * interrupt or a MemoryError stays. 0 when cleared, -1 when it stays. */
static int
frame_give_back(void)
{
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_Exception) || PyErr_ExceptionMatches(PyExc_MemoryError))
            return -1;
        PyErr_Clear();
    }
    return 0;
}

/* decode_frame(row, frame, api_key, api_version, request): True with the row's decoded columns
 * written, as pairing._decode_into writes a frame that decodes; False (the row untouched) when
 * the Python path is to decode the frame. */
static PyObject *
decode_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyDict_CheckExact(args[0]) || !PyLong_Check(args[2]) ||
        !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_frame(row, frame, api_key, api_version, request)");
        return NULL;
    }
    if (ready() < 0)
        return NULL;
    if (plan_fn == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "jsontext.setup_frames() was not called");
        return NULL;
    }
    PyObject *row = args[0], *frame = args[1];
    int request = PyObject_IsTrue(args[4]);
    long key = PyLong_AsLong(args[2]), version = PyLong_AsLong(args[3]);
    if (request < 0 || ((key == -1 || version == -1) && PyErr_Occurred()))
        return NULL;
    if (!PyBytes_CheckExact(frame) && !PyMemoryView_Check(frame))
        Py_RETURN_FALSE;
    PyObject *plan = frame_plan_of(key, version, request);
    if (plan == NULL)
        return NULL;
    if (plan == Py_None)
        Py_RETURN_FALSE;
    Py_INCREF(plan); /* Python code runs below; setup_frames() may drop the table's reference */
    long hv = PyLong_AsLong(PyTuple_GET_ITEM(plan, 1));
    PyObject *client = NULL, *parsed = NULL, *result = NULL;
    walk_t w = {.scan = 1};
    Py_buffer view;
    if (PyObject_GetBuffer(frame, &view, PyBUF_ND | PyBUF_FORMAT) < 0) {
        result = frame_give_back() < 0 ? NULL : Py_NewRef(Py_False);
        Py_DECREF(plan);
        return result;
    }
    if (view.ndim != 1 || view.itemsize != 1 ||
        (view.format != NULL && strcmp(view.format, "B") != 0)) {
        /* the Python readers index a view of other items as numbers of another kind */
        PyBuffer_Release(&view);
        Py_DECREF(plan);
        Py_RETURN_FALSE;
    }
    Py_ssize_t size = view.len;
    Py_ssize_t at = frame_header(view.buf, size, request, hv, &client);
    PyBuffer_Release(&view);
    if (at < 0)
        goto give_back;
    PyObject *start = PyLong_FromSsize_t(at);
    if (start == NULL)
        goto give_back;
    PyObject *call[2] = {frame, start};
    parsed = PyObject_Vectorcall(PyTuple_GET_ITEM(plan, 0), call, 2, NULL);
    Py_DECREF(start);
    if (parsed == NULL || !PyTuple_CheckExact(parsed) || PyTuple_GET_SIZE(parsed) != 2 ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(parsed, 1)))
        goto give_back;
    PyObject *body = PyTuple_GET_ITEM(parsed, 0);
    Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(parsed, 1));
    if ((end == -1 && PyErr_Occurred()) || end < at || end > size || !is_dict(body))
        goto give_back;
    PyObject *err = NULL;
    int rc = walk_facts(&w, body, &err);
    if (rc == J_FALLBACK)
        goto give_back;
    if (rc == J_OK && frame_fill(row, args[3], request, client, size - end, hv, &w, err) == 0)
        result = Py_NewRef(Py_True);
    goto done;
give_back:
    if (frame_give_back() == 0)
        result = Py_NewRef(Py_False);
done:
    walk_clear(&w);
    Py_XDECREF(parsed);
    Py_XDECREF(client);
    Py_DECREF(plan);
    return result;
}

/* setup_frames(plan): the callable that gives each (API key, version, request)'s plan; the
 * plans made so far are dropped. */
static PyObject *
setup_frames(PyObject *self, PyObject *plan)
{
    if (!PyCallable_Check(plan)) {
        PyErr_SetString(PyExc_TypeError, "setup_frames(plan): plan is a callable");
        return NULL;
    }
    struct {
        PyObject **slot;
        const char *text;
    } keys[] = {
        {&r_client_id, "client_id"}, {&r_api_version, "api_version"},
        {&r_trailing_bytes, "trailing_bytes"},
        {&r_header_version, "header_version"}, {&r_decode_status, "decode_status"},
        {&r_decode_error, "decode_error"}, {&r_topics, "topics"},
        {&r_record_count, "record_count"}, {&r_topic_ids, "topic_ids"},
        {&r_body_json, "body_json"}, {&r_ok, "ok"},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (*keys[i].slot == NULL &&
            (*keys[i].slot = PyUnicode_InternFromString(keys[i].text)) == NULL)
            return NULL;
    }
    Py_INCREF(plan);
    Py_XSETREF(plan_fn, plan);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < PLAN_KEYS; k++)
            for (int v = 0; v < PLAN_VERSIONS; v++)
                Py_CLEAR(plans[r][k][v]);
    Py_RETURN_NONE;
}

#endif
