/* One direction's segments stitched into runs: `reassembly.py:_assemble_half`, compiled
 * (hand-written; the Python function is the reference and gives the same stream).
 *
 * assemble_half(segs, syn_seq, fin_seq, acks, Run) takes the half's (seq, ts, payload, wire_len)
 * tuples in capture order, the SYN's and FIN's sequence numbers (or None) and the sequence
 * numbers the peer acknowledged, and returns (runs, start, end, wire_bytes, retransmitted):
 * the runs made with `Run(offset, data, marks, stamps)`. Sequence numbers are unwrapped
 * against the previous segment, the data placed by (offset, capture order), the first copy of
 * a byte kept and the others counted as retransmitted, exactly as the Python code does. It
 * returns None for what it leaves to that code: a tuple that is not (int, int, bytes or a flat
 * byte memoryview, int), a number outside 64 bits, a sequence number outside 32 bits.
 */
#include "compiled.h"

#define MOD32 (INT64_C(1) << 32)
#define HALF32 (INT64_C(1) << 31)
#define ACKS_READ 8 /* acks arrive almost in order: the furthest one is among the last few */

typedef struct {
    int64_t off;
    Py_ssize_t index; /* capture order: ties on offset keep it */
    PyObject *ts;     /* borrowed from the segment's tuple */
    const char *data;
    Py_ssize_t len;
} placed_t;

/* Signed distance from sequence number b to a, modulo 2**32 (`reassembly._diff`). */
static inline int64_t
seq_diff(int64_t a, int64_t b)
{
    int64_t d = (a - b + HALF32) % MOD32;
    if (d < 0)
        d += MOD32;
    return d - HALF32;
}

/* An int that fits 64 bits into *out: 1; 0 when it is not one (no exception left set). */
static int
as_i64(PyObject *o, int64_t *out)
{
    if (!PyLong_Check(o))
        return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = v;
    return 1;
}

/* A sequence number (0 <= n < 2**32), or None when `none_ok`: 1 read (*present set), 0 not. */
static int
as_seq(PyObject *o, int none_ok, int64_t *out, int *present)
{
    if (o == Py_None && none_ok) {
        *present = 0;
        return 1;
    }
    *present = 1;
    return as_i64(o, out) && *out >= 0 && *out < MOD32;
}

/* The bytes of a payload: bytes, or a memoryview of plain bytes (1-D, contiguous); 0 if not. */
static int
payload_bytes(PyObject *o, const char **data, Py_ssize_t *len)
{
    if (PyBytes_CheckExact(o)) {
        *data = PyBytes_AS_STRING(o);
        *len = PyBytes_GET_SIZE(o);
        return 1;
    }
    if (!PyMemoryView_Check(o))
        return 0;
    Py_buffer *view = PyMemoryView_GET_BUFFER(o);
    if (view->buf == NULL && view->len != 0)
        return 0;
    if (view->itemsize != 1 || view->ndim > 1 || !PyBuffer_IsContiguous(view, 'C'))
        return 0;
    if (view->format != NULL && strcmp(view->format, "B") != 0 && strcmp(view->format, "b") != 0 &&
        strcmp(view->format, "c") != 0)
        return 0;
    *data = view->buf;
    *len = view->len;
    return 1;
}

static int
by_offset(const void *a, const void *b)
{
    const placed_t *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Appends Run(offset, data, marks, stamps) of the parts [first, last) of `placed` to runs. */
static int
emit_run(PyObject *runs, PyObject *run_type, int64_t offset, const placed_t *parts,
         const Py_ssize_t *skips, Py_ssize_t first, Py_ssize_t last, const int64_t *marks)
{
    Py_ssize_t size = 0;
    for (Py_ssize_t k = first; k < last; k++)
        size += parts[k].len - skips[k];
    PyObject *data = PyBytes_FromStringAndSize(NULL, size);
    PyObject *mark_list = PyList_New(last - first);
    PyObject *stamp_list = PyList_New(last - first);
    PyObject *off = PyLong_FromLongLong(offset);
    PyObject *run = NULL;
    if (data == NULL || mark_list == NULL || stamp_list == NULL || off == NULL)
        goto done;
    char *out = PyBytes_AS_STRING(data);
    for (Py_ssize_t k = first; k < last; k++) {
        Py_ssize_t n = parts[k].len - skips[k];
        if (n > 0)
            memcpy(out, parts[k].data + skips[k], n);
        out += n;
        PyObject *mark = PyLong_FromLongLong(marks[k]);
        if (mark == NULL)
            goto done;
        PyList_SET_ITEM(mark_list, k - first, mark);
        Py_INCREF(parts[k].ts);
        PyList_SET_ITEM(stamp_list, k - first, parts[k].ts);
    }
    PyObject *args[4] = {off, data, mark_list, stamp_list};
    run = PyObject_Vectorcall(run_type, args, 4, NULL);
done:
    Py_XDECREF(data);
    Py_XDECREF(mark_list);
    Py_XDECREF(stamp_list);
    Py_XDECREF(off);
    if (run == NULL)
        return -1;
    int rc = PyList_Append(runs, run);
    Py_DECREF(run);
    return rc;
}

/* The runs of the placed parts, stitched; the stream's end so far and its retransmitted
 * bytes through *pos and *retransmitted. */
static PyObject *
stitch(placed_t *placed, Py_ssize_t n, int64_t start, PyObject *run_type, int64_t *pos_out,
       int64_t *retransmitted)
{
    PyObject *runs = PyList_New(0);
    Py_ssize_t *skips = PyMem_Malloc((n ? n : 1) * sizeof(Py_ssize_t));
    int64_t *marks = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    /* the kept parts are compacted to the front of `placed`, with their skips and marks */
    Py_ssize_t kept = 0, run_first = 0;
    int64_t pos = start, run_off = start;
    if (runs == NULL || skips == NULL || marks == NULL) {
        if (runs != NULL)
            PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        placed_t seg = placed[k];
        if (seg.off + seg.len <= pos) {
            *retransmitted += seg.len;
            continue;
        }
        if (seg.off > pos) {
            if (kept > run_first &&
                emit_run(runs, run_type, run_off, placed, skips, run_first, kept, marks) < 0)
                goto fail;
            run_first = kept;
            run_off = pos = seg.off;
        }
        Py_ssize_t skip = (Py_ssize_t)(pos - seg.off);
        *retransmitted += skip;
        placed[kept] = seg;
        skips[kept] = skip;
        marks[kept] = pos;
        kept++;
        pos = seg.off + seg.len;
    }
    if (kept > run_first &&
        emit_run(runs, run_type, run_off, placed, skips, run_first, kept, marks) < 0)
        goto fail;
    PyMem_Free(skips);
    PyMem_Free(marks);
    *pos_out = pos;
    return runs;
fail:
    Py_XDECREF(runs);
    PyMem_Free(skips);
    PyMem_Free(marks);
    return NULL;
}

/* assemble_half(segs, syn_seq, fin_seq, acks, Run)
 *   -> (runs, start, end, wire_bytes, retransmitted), or None */
PyObject *
native_assemble_half(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5 || !PyList_Check(args[0]) || !PyList_Check(args[3]) ||
        !PyCallable_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "assemble_half(segs: list, syn_seq, fin_seq, acks: list, Run)");
        return NULL;
    }
    PyObject *segs = args[0], *acks = args[3];
    int64_t syn_seq = 0, fin_seq = 0;
    int syn, fin;
    if (!as_seq(args[1], 1, &syn_seq, &syn) || !as_seq(args[2], 1, &fin_seq, &fin))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(segs);
    if (n == 0)
        Py_RETURN_NONE; /* nothing to stitch: the Python code returns at once */
    placed_t *placed = PyMem_Malloc(n * sizeof(placed_t));
    if (placed == NULL)
        return PyErr_NoMemory();
    PyObject *result = NULL;
    Py_ssize_t count = 0;
    int sorted = 1;
    int64_t last_seq = 0, last_off = 0, data_min = 0, claimed_end = 0, wire_bytes = 0;
    int has_data = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(segs, i);
        int64_t seq, wire_len;
        int present;
        const char *data;
        Py_ssize_t len;
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 4 ||
            !as_seq(PyTuple_GET_ITEM(t, 0), 0, &seq, &present) ||
            !payload_bytes(PyTuple_GET_ITEM(t, 2), &data, &len) ||
            !as_i64(PyTuple_GET_ITEM(t, 3), &wire_len) || wire_len < 0 ||
            wire_len > (INT64_C(1) << 40))
            goto python;
        if (i == 0) {
            last_seq = syn ? syn_seq + 1 : seq;
            last_off = 0;
        }
        int64_t off = last_off + seq_diff(seq, last_seq);
        last_seq = seq;
        last_off = off;
        if (wire_len || len) {
            if (count > 0 && off < placed[count - 1].off)
                sorted = 0;
            placed[count++] = (placed_t){off, i, PyTuple_GET_ITEM(t, 1), data, len};
            if (!has_data || off < data_min)
                data_min = off;
            has_data = 1;
            wire_bytes += wire_len;
        }
        if (off + wire_len > claimed_end)
            claimed_end = off + wire_len;
    }
    int64_t start = syn ? 0 : (has_data ? data_min : 0);
    if (has_data && data_min < start)
        start = data_min; /* data before the SYN's ISN: trust the data */
    int64_t fin_off = fin ? last_off + seq_diff(fin_seq, last_seq) : 0;
    Py_ssize_t n_acks = PyList_GET_SIZE(acks);
    for (Py_ssize_t k = n_acks > ACKS_READ ? n_acks - ACKS_READ : 0; k < n_acks; k++) {
        int64_t ack;
        int present;
        if (!as_seq(PyList_GET_ITEM(acks, k), 0, &ack, &present))
            goto python;
        int64_t ack_off = last_off + seq_diff(ack, last_seq);
        if (fin && ack_off > fin_off)
            ack_off = fin_off;
        if (start <= ack_off && ack_off <= claimed_end + (INT64_C(1) << 30) &&
            ack_off > claimed_end)
            claimed_end = ack_off;
    }
    if (fin)
        claimed_end = fin_off; /* the ACKs after a FIN sit one past it, which is not data */
    if (!sorted)
        qsort(placed, count, sizeof(placed_t), by_offset);
    int64_t pos = start, retransmitted = 0;
    PyObject *runs = stitch(placed, count, start, args[4], &pos, &retransmitted);
    if (runs != NULL)
        result = Py_BuildValue("(NLLLL)", runs, (long long)start,
                               (long long)(pos > claimed_end ? pos : claimed_end),
                               (long long)wire_bytes, (long long)retransmitted);
    PyMem_Free(placed);
    return result;
python:
    PyMem_Free(placed);
    Py_RETURN_NONE;
}

/* take_plain(i, ts, seq, ack, flags, wire, from_a, pay, a_segs, b_segs, a_acks, b_acks)
 *   -> (i, a packets, b packets, last ts or None, has data)
 * `TcpReassembler._take` for a fragment's segments from i on (parallel lists, as
 * `add_fragment` takes them) while they carry no SYN, FIN or RST: each is appended to its
 * half's segments as (seq, ts, payload, wire_len), or (seq, ts, b"", 0) when it carries no
 * data, and its ACK to the other half's acks. It stops at the first other segment (or one
 * whose flags are not an int), which `_take` then takes, and returns where it stopped and
 * what the connection's counters gain. */
PyObject *
native_take_plain(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "take_plain() takes 12 arguments");
        return NULL;
    }
    for (int k = 1; k < 12; k++) {
        if (!PyList_Check(args[k])) {
            PyErr_SetString(PyExc_TypeError, "take_plain(i, *lists): lists after i");
            return NULL;
        }
    }
    Py_ssize_t i = PyLong_AsSsize_t(args[0]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    PyObject *ts_l = args[1], *seq_l = args[2], *ack_l = args[3], *flags_l = args[4];
    PyObject *wire_l = args[5], *from_l = args[6], *pay_l = args[7];
    PyObject *segs[2] = {args[8], args[9]}, *acks[2] = {args[10], args[11]};
    Py_ssize_t n = PyList_GET_SIZE(ts_l);
    long packets[2] = {0, 0};
    PyObject *last_ts = Py_None;
    int has_data = 0;
    for (; i >= 0 && i < n; i++) {
        if (i >= PyList_GET_SIZE(seq_l) || i >= PyList_GET_SIZE(ack_l) ||
            i >= PyList_GET_SIZE(flags_l) || i >= PyList_GET_SIZE(wire_l) ||
            i >= PyList_GET_SIZE(from_l) || i >= PyList_GET_SIZE(pay_l))
            break; /* lists of other lengths: zip(strict=True) in Python says so */
        PyObject *flags_o = PyList_GET_ITEM(flags_l, i);
        if (!PyLong_CheckExact(flags_o))
            break;
        long flags = PyLong_AsLong(flags_o);
        if (flags == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            break;
        }
        if (flags & (TCP_SYN | TCP_FIN | TCP_RST))
            break;
        int from_a = PyObject_IsTrue(PyList_GET_ITEM(from_l, i));
        if (from_a < 0)
            return NULL;
        int side = from_a ? 0 : 1;
        PyObject *ts = PyList_GET_ITEM(ts_l, i), *seq = PyList_GET_ITEM(seq_l, i);
        PyObject *wire = PyList_GET_ITEM(wire_l, i), *pay = PyList_GET_ITEM(pay_l, i);
        if (flags & TCP_ACK && PyList_Append(acks[1 - side], PyList_GET_ITEM(ack_l, i)) < 0)
            return NULL;
        int wired = PyObject_IsTrue(wire);
        if (wired < 0)
            return NULL;
        Py_ssize_t len = wired ? 1 : PyObject_Length(pay);
        if (len < 0)
            return NULL;
        PyObject *seg = (wired || len) ? PyTuple_Pack(4, seq, ts, pay, wire)
                                       : Py_BuildValue("(OOOi)", seq, ts, empty_bytes, 0);
        if (seg == NULL)
            return NULL;
        int rc = PyList_Append(segs[side], seg);
        Py_DECREF(seg);
        if (rc < 0)
            return NULL;
        has_data |= wired || len;
        packets[side]++;
        last_ts = ts;
    }
    return Py_BuildValue("(nllOO)", i, packets[0], packets[1], last_ts,
                         has_data ? Py_True : Py_False);
}

/* take_items: the open connections a call has at hand (connections interleave, a few at a
 * time), with the counters it owes them. */
#define HELD 8
typedef struct {
    PyObject *a_ip, *b_ip, *conn, *halves[2], *segs[2], *acks[2], *last_ts; /* strong */
    long a_port, b_port, packets[2];
    int has_data;
} held_t;

static void
held_clear(held_t *h)
{
    Py_CLEAR(h->a_ip);
    Py_CLEAR(h->b_ip);
    Py_CLEAR(h->conn);
    Py_CLEAR(h->last_ts);
    for (int k = 0; k < 2; k++) {
        Py_CLEAR(h->halves[k]);
        Py_CLEAR(h->segs[k]);
        Py_CLEAR(h->acks[k]);
    }
}

/* Two exact bytes objects hold the same bytes. */
static int
same_bytes(PyObject *x, PyObject *y)
{
    return x == y || (PyBytes_GET_SIZE(x) == PyBytes_GET_SIZE(y) &&
                      memcmp(PyBytes_AS_STRING(x), PyBytes_AS_STRING(y), PyBytes_GET_SIZE(x)) == 0);
}

/* obj.name += delta; 0 or -1 */
static int
add_to(PyObject *obj, const char *name, long delta)
{
    PyObject *old = PyObject_GetAttrString(obj, name);
    if (old == NULL)
        return -1;
    PyObject *d = PyLong_FromLong(delta);
    PyObject *sum = d == NULL ? NULL : PyNumber_Add(old, d);
    Py_DECREF(old);
    Py_XDECREF(d);
    if (sum == NULL)
        return -1;
    int rc = PyObject_SetAttrString(obj, name, sum);
    Py_DECREF(sum);
    return rc;
}

/* What a held connection gained goes to its objects, and it is let go; 0 or -1. */
static int
held_flush(held_t *h)
{
    int rc = 0;
    if (h->conn != NULL) {
        for (int k = 0; k < 2 && rc == 0; k++) {
            if (h->packets[k])
                rc = add_to(h->halves[k], "packets", h->packets[k]);
        }
        if (rc == 0 && h->last_ts != NULL)
            rc = PyObject_SetAttrString(h->conn, "last_ts", h->last_ts);
        if (rc == 0 && h->has_data)
            rc = PyObject_SetAttrString(h->conn, "has_data", Py_True);
    }
    held_clear(h);
    return rc;
}

/* The held connection of (a, b): 1 found or taken from `open`, 0 not open (or not of the
 * shape `_Conn` has: Python takes the segment), -1 on an error. */
static int
held_for(held_t *held, int *used, int *next, PyObject *a_ip, PyObject *a_port_o, long a_port,
         PyObject *b_ip, PyObject *b_port_o, long b_port, PyObject *open, held_t **out)
{
    for (int k = 0; k < *used; k++) {
        held_t *h = &held[k];
        if (h->a_port == a_port && h->b_port == b_port &&
            same_bytes(h->a_ip, a_ip) && same_bytes(h->b_ip, b_ip)) {
            *out = h;
            return 1;
        }
    }
    PyObject *key = Py_BuildValue("((OO)(OO))", a_ip, a_port_o, b_ip, b_port_o);
    if (key == NULL)
        return -1;
    held_t h = {0};
    int found = 0;
    PyObject *conn = PyDict_GetItemWithError(open, key);
    PyObject *halves = conn == NULL ? NULL : PyObject_GetAttrString(conn, "halves");
    if (halves != NULL && PyDict_CheckExact(halves)) {
        h.conn = conn;
        Py_INCREF(conn);
        found = 1;
        for (int k = 0; k < 2 && found == 1; k++) {
            PyObject *half = PyDict_GetItemWithError(halves, PyTuple_GET_ITEM(key, k));
            if (half == NULL) {
                found = PyErr_Occurred() ? -1 : 0;
                break;
            }
            Py_INCREF(half);
            h.halves[k] = half;
            h.segs[k] = PyObject_GetAttrString(half, "segs");
            h.acks[k] = PyObject_GetAttrString(half, "acks");
            if (h.segs[k] == NULL || h.acks[k] == NULL)
                found = -1;
            else if (!PyList_CheckExact(h.segs[k]) || !PyList_CheckExact(h.acks[k]))
                found = 0;
        }
    }
    else if (PyErr_Occurred())
        found = -1;
    Py_XDECREF(halves);
    Py_DECREF(key);
    if (found != 1) {
        held_clear(&h);
        return found;
    }
    held_t *slot = &held[*used < HELD ? *used : *next];
    if (*used == HELD) {
        *next = (*next + 1) % HELD;
        if (held_flush(slot) < 0) {
            held_clear(&h);
            return -1;
        }
    }
    else
        (*used)++;
    Py_INCREF(a_ip);
    Py_INCREF(b_ip);
    h.a_ip = a_ip;
    h.b_ip = b_ip;
    h.a_port = a_port;
    h.b_port = b_port;
    *slot = h;
    *out = slot;
    return 1;
}

/* take_items(items, i, open) -> i
 * `TcpReassembler.add_many` for the (ts, TcpSegment) items from i on whose connection is open
 * (in `open`, the reassembler's) and that carry no SYN, FIN or RST: each taken as `_take`
 * takes it (its half's segments, the other half's acks, the counters). It stops at the first
 * other item, which `add` then takes, so every segment is taken in capture order. */
PyObject *
native_take_items(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3 || !PyList_Check(args[0]) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "take_items(items: list, i, open: dict)");
        return NULL;
    }
    PyObject *items = args[0], *open = args[2];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    held_t held[HELD];
    int used = 0, next = 0;
    for (; i >= 0 && i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2)
            break;
        PyObject *ts = PyTuple_GET_ITEM(item, 0), *seg = PyTuple_GET_ITEM(item, 1);
        if (!PyTuple_Check(seg) || PyTuple_GET_SIZE(seg) != 9)
            break;
        PyObject *sip = PyTuple_GET_ITEM(seg, 0), *sport_o = PyTuple_GET_ITEM(seg, 1);
        PyObject *dip = PyTuple_GET_ITEM(seg, 2), *dport_o = PyTuple_GET_ITEM(seg, 3);
        PyObject *flags_o = PyTuple_GET_ITEM(seg, 6);
        if (!PyBytes_CheckExact(sip) || !PyBytes_CheckExact(dip) || !PyLong_CheckExact(sport_o) ||
            !PyLong_CheckExact(dport_o) || !PyLong_CheckExact(flags_o))
            break;
        long sport = PyLong_AsLong(sport_o), dport = PyLong_AsLong(dport_o);
        long flags = PyLong_AsLong(flags_o);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            break;
        }
        if (flags & (TCP_SYN | TCP_FIN | TCP_RST))
            break;
        /* (sip, sport) <= (dip, dport) as Python orders the tuples */
        Py_ssize_t ns = PyBytes_GET_SIZE(sip), nd = PyBytes_GET_SIZE(dip);
        int c = memcmp(PyBytes_AS_STRING(sip), PyBytes_AS_STRING(dip), ns < nd ? ns : nd);
        int src_is_a = c != 0 ? c < 0 : (ns != nd ? ns < nd : sport <= dport);
        held_t *h = NULL;
        int got = src_is_a ? held_for(held, &used, &next, sip, sport_o, sport, dip, dport_o,
                                      dport, open, &h)
                           : held_for(held, &used, &next, dip, dport_o, dport, sip, sport_o,
                                      sport, open, &h);
        if (got < 0)
            goto error;
        if (got == 0)
            break;
        int side = src_is_a ? 0 : 1;
        if (flags & TCP_ACK && PyList_Append(h->acks[1 - side], PyTuple_GET_ITEM(seg, 5)) < 0)
            goto error;
        PyObject *seq = PyTuple_GET_ITEM(seg, 4), *pay = PyTuple_GET_ITEM(seg, 7);
        PyObject *wire = PyTuple_GET_ITEM(seg, 8);
        int wired = PyObject_IsTrue(wire);
        Py_ssize_t len = wired ? 1 : (wired < 0 ? -1 : PyObject_Length(pay));
        if (len < 0)
            goto error;
        PyObject *t = (wired || len) ? PyTuple_Pack(4, seq, ts, pay, wire)
                                     : Py_BuildValue("(OOOi)", seq, ts, empty_bytes, 0);
        if (t == NULL)
            goto error;
        int rc = PyList_Append(h->segs[side], t);
        Py_DECREF(t);
        if (rc < 0)
            goto error;
        h->has_data |= wired || len;
        h->packets[side]++;
        Py_INCREF(ts);
        Py_XSETREF(h->last_ts, ts);
    }
    int rc = 0;
    for (int k = 0; k < used; k++) {
        if (held_flush(&held[k]) < 0)
            rc = -1;
    }
    return rc < 0 ? NULL : PyLong_FromSsize_t(i);
error:
    for (int k = 0; k < used; k++)
        held_clear(&held[k]);
    return NULL;
}
