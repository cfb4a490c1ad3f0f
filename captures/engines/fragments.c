/* A batch of segments grouped into fragments: the loop of `fragments.py:fragment_groups`,
 * compiled (hand-written; the Python loop is the reference and takes what this leaves).
 *
 * group(items, i, first0, open, Fragment, copy, max_segs, max_bytes) takes the (ts, TcpSegment)
 * items from i on: each goes to the fragment of its connection key in `open` (made as
 * Fragment(a, b, first0 + its index) when there is none), its fields appended to the
 * fragment's lists and its payload's length to `nbytes`, exactly as the Python loop does. It
 * returns (i, fragment) after a segment that filled its fragment (max_segs segments or
 * max_bytes bytes: the caller closes it), else (i, None) where it stopped: at the end, or at an
 * item that is not such a segment (addresses not bytes, ports not ints, a fragment whose lists
 * are not lists), which the Python loop then takes.
 */
#include "../reading/compiled.h"

#define SLOTS 8 /* connections interleave, but a batch holds few at a time */

enum { L_TS, L_SEQ, L_ACK, L_FLAGS, L_WIRE, L_FROM_A, L_PAY, N_LISTS };
static const char *const list_names[N_LISTS] = {"ts", "seq", "ack", "flags", "wire", "from_a",
                                                "pay"};

typedef struct {
    PyObject *a_ip, *b_ip; /* strong references, as is frag */
    long a_port, b_port;
    PyObject *frag;
    PyObject *lists[N_LISTS]; /* strong references */
    long long nbytes;
    int dirty; /* nbytes changed since read */
} slot_t;

typedef struct {
    slot_t slots[SLOTS];
    int used, next;
} slots_t;

static int
same_ip(PyObject *x, PyObject *y)
{
    return x == y || (PyBytes_GET_SIZE(x) == PyBytes_GET_SIZE(y) &&
                      memcmp(PyBytes_AS_STRING(x), PyBytes_AS_STRING(y), PyBytes_GET_SIZE(x)) == 0);
}

/* (ip, port) <= (ip', port') as Python compares the tuples (bytes, then int). */
static int
endpoint_le(PyObject *ip, long port, PyObject *ip2, long port2)
{
    Py_ssize_t n = PyBytes_GET_SIZE(ip), n2 = PyBytes_GET_SIZE(ip2);
    int c = memcmp(PyBytes_AS_STRING(ip), PyBytes_AS_STRING(ip2), n < n2 ? n : n2);
    if (c != 0)
        return c < 0;
    if (n != n2)
        return n < n2;
    return port <= port2;
}

/* Writes the slot's byte count back to its fragment; 0 or -1. */
static int
flush_slot(slot_t *s)
{
    if (!s->dirty)
        return 0;
    PyObject *n = PyLong_FromLongLong(s->nbytes);
    if (n == NULL)
        return -1;
    int rc = PyObject_SetAttrString(s->frag, "nbytes", n);
    Py_DECREF(n);
    s->dirty = 0;
    return rc;
}

static void
drop_slot(slot_t *s)
{
    for (int k = 0; k < N_LISTS; k++)
        Py_CLEAR(s->lists[k]);
    Py_CLEAR(s->a_ip);
    Py_CLEAR(s->b_ip);
    Py_CLEAR(s->frag);
}

static int
flush_all(slots_t *c)
{
    int rc = 0;
    for (int k = 0; k < c->used; k++) {
        if (flush_slot(&c->slots[k]) < 0)
            rc = -1;
        drop_slot(&c->slots[k]);
    }
    return rc;
}

/* Fills a slot with frag's lists and byte count: 1; 0 when they are not lists and an int,
 * -1 on an error (the lists taken are released either way but the first). */
static int
fill_slot(slot_t *s, PyObject *frag)
{
    int ok = 1;
    for (int k = 0; k < N_LISTS && ok > 0; k++) {
        s->lists[k] = PyObject_GetAttrString(frag, list_names[k]);
        ok = s->lists[k] == NULL ? -1 : PyList_CheckExact(s->lists[k]);
    }
    if (ok > 0) {
        PyObject *nb = PyObject_GetAttrString(frag, "nbytes");
        if (nb == NULL)
            ok = -1;
        else if (PyLong_CheckExact(nb)) {
            int overflow = 0;
            s->nbytes = PyLong_AsLongLongAndOverflow(nb, &overflow);
            ok = overflow ? 0 : 1;
        }
        else
            ok = 0;
        Py_XDECREF(nb);
    }
    if (ok <= 0) {
        for (int k = 0; k < N_LISTS; k++)
            Py_CLEAR(s->lists[k]);
    }
    return ok;
}

/* The slot of the connection (a, b): from the cache, `open`, or a new fragment. NULL with an
 * exception set on error, NULL without one for a fragment the Python loop must take. */
static slot_t *
slot_for(slots_t *c, PyObject *a_ip, PyObject *a_port_o, long a_port, PyObject *b_ip,
         PyObject *b_port_o, long b_port, PyObject *open, PyObject *frag_type, long long first)
{
    for (int k = 0; k < c->used; k++) {
        slot_t *s = &c->slots[k];
        if (s->a_port == a_port && s->b_port == b_port && same_ip(s->a_ip, a_ip) &&
            same_ip(s->b_ip, b_ip))
            return s;
    }
    PyObject *key = Py_BuildValue("((OO)(OO))", a_ip, a_port_o, b_ip, b_port_o);
    if (key == NULL)
        return NULL;
    PyObject *frag = PyDict_GetItemWithError(open, key);
    if (frag != NULL)
        Py_INCREF(frag);
    else if (!PyErr_Occurred()) {
        PyObject *first_o = PyLong_FromLongLong(first);
        if (first_o != NULL) {
            frag = PyObject_CallFunctionObjArgs(frag_type, PyTuple_GET_ITEM(key, 0),
                                                PyTuple_GET_ITEM(key, 1), first_o, NULL);
            Py_DECREF(first_o);
        }
        if (frag != NULL && PyDict_SetItem(open, key, frag) < 0)
            Py_CLEAR(frag);
    }
    Py_DECREF(key);
    if (frag == NULL)
        return NULL;
    slot_t fresh = {a_ip, b_ip, a_port, b_port, frag, {NULL}, 0, 0};
    int filled = fill_slot(&fresh, frag);
    if (filled <= 0) {
        Py_DECREF(frag); /* not cached: the Python loop takes this fragment */
        return NULL;
    }
    slot_t *s = &c->slots[c->used < SLOTS ? c->used : c->next];
    if (c->used == SLOTS) {
        c->next = (c->next + 1) % SLOTS;
        if (flush_slot(s) < 0) {
            Py_DECREF(frag);
            return NULL;
        }
        drop_slot(s);
    }
    else
        c->used++;
    Py_INCREF(a_ip);
    Py_INCREF(b_ip);
    *s = fresh;
    return s;
}

/* group(items, i, first0, open, Fragment, copy, max_segs, max_bytes) -> (i, full or None) */
PyObject *
native_group(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (segment_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup(TcpSegment) was not called");
        return NULL;
    }
    if (nargs != 8 || !PyList_Check(args[0]) || !PyDict_Check(args[3]) ||
        !PyCallable_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "group(items: list, i, first0, open: dict, Fragment, "
                                         "copy, max_segs, max_bytes)");
        return NULL;
    }
    PyObject *items = args[0], *open = args[3], *frag_type = args[4];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    long long first0 = PyLong_AsLongLong(args[2]);
    int copy = PyObject_IsTrue(args[5]);
    Py_ssize_t max_segs = PyLong_AsSsize_t(args[6]);
    long long max_bytes = PyLong_AsLongLong(args[7]);
    if (PyErr_Occurred() || copy < 0)
        return NULL;
    slots_t cache;
    cache.used = cache.next = 0;
    PyObject *held = NULL;
    PyObject *full = Py_None;
    for (; i >= 0 && i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2)
            break;
        if (held != NULL)
            Py_DECREF(held);
        held = item; /* making a fragment runs Python code: the item stays ours till then */
        Py_INCREF(held);
        PyObject *ts = PyTuple_GET_ITEM(item, 0), *seg = PyTuple_GET_ITEM(item, 1);
        if (Py_TYPE(seg) != segment_type || PyTuple_GET_SIZE(seg) != 9)
            break;
        PyObject *sip = PyTuple_GET_ITEM(seg, 0), *sport_o = PyTuple_GET_ITEM(seg, 1);
        PyObject *dip = PyTuple_GET_ITEM(seg, 2), *dport_o = PyTuple_GET_ITEM(seg, 3);
        if (!PyBytes_CheckExact(sip) || !PyBytes_CheckExact(dip) || !PyLong_CheckExact(sport_o) ||
            !PyLong_CheckExact(dport_o))
            break;
        long sport = PyLong_AsLong(sport_o), dport = PyLong_AsLong(dport_o);
        if ((sport == -1 || dport == -1) && PyErr_Occurred()) {
            PyErr_Clear();
            break;
        }
        int from_a = endpoint_le(sip, sport, dip, dport);
        slot_t *s = from_a ? slot_for(&cache, sip, sport_o, sport, dip, dport_o, dport, open,
                                      frag_type, first0 + i)
                           : slot_for(&cache, dip, dport_o, dport, sip, sport_o, sport, open,
                                      frag_type, first0 + i);
        if (s == NULL) {
            if (PyErr_Occurred())
                goto error;
            break;
        }
        PyObject *payload = PyTuple_GET_ITEM(seg, 7);
        if (copy && !PyBytes_CheckExact(payload))
            payload = PyBytes_FromObject(payload);
        else
            Py_INCREF(payload);
        if (payload == NULL)
            goto error;
        Py_ssize_t len = PyObject_Length(payload);
        PyObject *values[N_LISTS] = {ts,
                                     PyTuple_GET_ITEM(seg, 4),
                                     PyTuple_GET_ITEM(seg, 5),
                                     PyTuple_GET_ITEM(seg, 6),
                                     PyTuple_GET_ITEM(seg, 8),
                                     from_a ? Py_True : Py_False,
                                     payload};
        int rc = len < 0 ? -1 : 0;
        for (int k = 0; k < N_LISTS && rc == 0; k++)
            rc = PyList_Append(s->lists[k], values[k]);
        Py_DECREF(payload);
        if (rc < 0)
            goto error;
        s->nbytes += len;
        s->dirty = 1;
        if (PyList_GET_SIZE(s->lists[L_PAY]) >= max_segs || s->nbytes >= max_bytes) {
            full = s->frag;
            i++;
            break;
        }
    }
    Py_XDECREF(held);
    Py_INCREF(full);
    if (flush_all(&cache) < 0) {
        Py_DECREF(full);
        return NULL;
    }
    return Py_BuildValue("(nN)", i, full);
error:
    Py_XDECREF(held);
    flush_all(&cache);
    return NULL;
}
