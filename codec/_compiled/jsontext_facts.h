/* The facts half of `jsontext.c`, which includes it after its walk state: what bodies.py's
 * _Acc notes while the body is written (the first error code, topic names and ids, the records
 * the batch headers count).
 */
#ifndef KIPWIRE_JSONTEXT_FACTS_H
#define KIPWIRE_JSONTEXT_FACTS_H

/* -- facts ----------------------------------------------------------------------------------- */

/* bodies.count_records: records counted from batch headers into *total (header counts may be
 * negative); 0 when they cannot be counted (a compressed legacy wrapper hides its count). */
static int
count_records(const unsigned char *b, Py_ssize_t n, int64_t *total)
{
    Py_ssize_t pos = 0;
    *total = 0;
    while (pos + 17 <= n) {
        int64_t length = (int32_t)rd_be32(b + pos + 8);
        if (length < 0 || length > n - pos - 12)
            break;
        if (b[pos + 16] == 2) {
            if (pos + 61 > n)
                break;
            *total += (int32_t)rd_be32(b + pos + 57);
        }
        else {
            if (pos + 22 > n || (b[pos + 21] & 0x07))
                return 0;
            *total += 1;
        }
        pos += 12 + (Py_ssize_t)length;
    }
    return 1;
}

/* _Acc.error_code: the first error code seen, or the first that is not NONE after NONE. */
static void
note_error_code(walk_t *w, PyObject *v)
{
    if (!PyLong_Check(v)) /* exact ints and bools only reach here */
        return;
    if (w->first_err == NULL || (PyObject_Not(w->first_err) && PyObject_IsTrue(v)))
        Py_XSETREF(w->first_err, Py_NewRef(v));
}

/* Adds `item` to `list` unless `seen` has it; 0 or -1. */
static int
note_once(PyObject **list, PyObject **seen, PyObject *item)
{
    if (*list == NULL && ((*list = PyList_New(0)) == NULL || (*seen = PySet_New(NULL)) == NULL))
        return -1;
    int found = PySet_Contains(*seen, item);
    if (found != 0)
        return found < 0 ? -1 : 0;
    if (PySet_Add(*seen, item) < 0)
        return -1;
    return PyList_Append(*list, item);
}

/* The 16 bytes of a UUID (its `int`, big-endian) into `raw`, as UUID.bytes gives them. */
static int
uuid_raw(PyObject *tid, unsigned char raw[16], int *zero)
{
    PyObject *value = PyObject_GetAttr(tid, s_int);
    if (value == NULL)
        return J_ERROR;
    int rc = J_FALLBACK; /* an int that is not 128 bits: the Python code says what it makes of it */
    if (PyLong_CheckExact(value) && _PyLong_Sign(value) >= 0 && _PyLong_NumBits(value) <= 128) {
        *zero = _PyLong_Sign(value) == 0;
#if PY_VERSION_HEX >= 0x030D0000
        rc = _PyLong_AsByteArray((PyLongObject *)value, raw, 16, 0, 0, 1) < 0 ? J_ERROR : J_OK;
#else
        rc = _PyLong_AsByteArray((PyLongObject *)value, raw, 16, 0, 0) < 0 ? J_ERROR : J_OK;
#endif
    }
    Py_DECREF(value);
    return rc;
}

/* _Acc.topic_list: the names and ids of a topic list's items, in order. */
static int
note_topic_list(walk_t *w, PyObject *items)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyDict_Check(item))
            continue;
        if (!is_dict(item))
            return J_FALLBACK;
        PyObject *keys[3] = {s_name, s_topic, s_topic_name}, *name = NULL;
        for (int k = 0; k < 3 && name == NULL; k++) {
            name = PyDict_GetItemWithError(item, keys[k]);
            if (name == NULL && PyErr_Occurred())
                return J_ERROR;
        }
        if (name != NULL && PyUnicode_Check(name)) {
            if (!PyUnicode_CheckExact(name))
                return J_FALLBACK;
            if (note_once(&w->topics, &w->seen, name) < 0)
                return J_ERROR;
        }
        PyObject *tid = PyDict_GetItemWithError(item, s_topic_id);
        if (tid == NULL && PyErr_Occurred())
            return J_ERROR;
        if (tid == NULL || !PyObject_TypeCheck(tid, uuid_type))
            continue;
        if (!Py_IS_TYPE(tid, uuid_type))
            return J_FALLBACK;
        unsigned char raw[16];
        int zero, rc = uuid_raw(tid, raw, &zero);
        if (rc != J_OK)
            return rc;
        if (zero)
            continue;
        char text[36]; /* str(uuid): 8-4-4-4-12 hex digits */
        for (int at = 0, b = 0; b < 16; b++) {
            if (b == 4 || b == 6 || b == 8 || b == 10)
                text[at++] = '-';
            text[at++] = hexdigits[raw[b] >> 4];
            text[at++] = hexdigits[raw[b] & 0xF];
        }
        PyObject *str = PyUnicode_FromStringAndSize(text, 36);
        if (str == NULL)
            return J_ERROR;
        rc = note_once(&w->ids, &w->seen_ids, str);
        Py_DECREF(str);
        if (rc < 0)
            return J_ERROR;
    }
    return J_OK;
}

#endif
