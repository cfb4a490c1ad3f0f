/* The packet path on the compiled side: a pcap or pcapng buffer walked to TCP segments.
 *
 * Hand-written. `captures/reading/pcap.py` (the block and record readers) and `packets.py`
 * (`parse_tcp`) are the reference; `walk.py` calls in here when `kipwire.captures.reading.compiled`
 * is built (`compiled.c` holds its module definition). walk()
 * reads the plain blocks and records of a capture (a pcapng Enhanced Packet Block of a known
 * interface, a block type the reader skips, a whole classic pcap record) and parses their frames
 * down to TCP exactly as `parse_tcp` does. It stops at anything else (a section header, an
 * interface description, a simple or obsolete packet block, a block or record cut short or of a
 * bad length, a timestamp out of int64 range) and hands that block to the Python reader, which
 * gives the packet or the file issue. A frame that is not a TCP segment (its reason is a
 * message the Python parser writes) comes back as a packet for `parse_tcp`. So this file never
 * reads a capture differently from the Python code: it only leaves work to it. Every read is
 * checked against the buffer's length first.
 */
#include "compiled.h"

#define PCAPNG_SHB 0x0A0D0D0Au
#define BLOCK_IDB 1u
#define BLOCK_OPB 2u
#define BLOCK_SPB 3u
#define BLOCK_EPB 6u
#define MIN_EPB 32u
#define MAX_RECORD (64u * 1024u * 1024u) /* pcap.py's _MAX_RECORD */
#define MAX_IFACES 4096


typedef struct {
    long linktype;
    uint64_t units; /* timestamp ticks per second; 0: too large for here, Python reads it */
    int64_t offset_s;
} iface_t;

/* Addresses repeat on every packet of a connection: the last few bytes objects are reused. */
#define ADDR_CACHE 8
typedef struct {
    PyObject *items[ADDR_CACHE];
    int next;
} addr_cache_t;

static PyObject *
address(addr_cache_t *cache, const uint8_t *p, Py_ssize_t n)
{
    for (int i = 0; i < ADDR_CACHE; i++) {
        PyObject *o = cache->items[i];
        if (o != NULL && PyBytes_GET_SIZE(o) == n && memcmp(PyBytes_AS_STRING(o), p, n) == 0) {
            Py_INCREF(o);
            return o;
        }
    }
    PyObject *o = PyBytes_FromStringAndSize((const char *)p, n);
    if (o == NULL)
        return NULL;
    Py_XDECREF(cache->items[cache->next]);
    Py_INCREF(o);
    cache->items[cache->next] = o;
    cache->next = (cache->next + 1) % ADDR_CACHE;
    return o;
}

static inline uint32_t
rd32(const uint8_t *p, int little)
{
    return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24
                  : (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 |
                        (uint32_t)p[0] << 24;
}

static inline uint32_t
be32(const uint8_t *p)
{
    return rd32(p, 0);
}

static inline uint16_t
be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* A frame parsed to TCP, offsets from the frame's start: what `_tcp_segment` returns. */
typedef struct {
    const uint8_t *src, *dst;
    Py_ssize_t addr_len;
    uint16_t sport, dport;
    uint32_t seq, ack;
    uint8_t flags;
    Py_ssize_t start, stop; /* the payload kept: frame[start:stop], empty when start >= stop */
    Py_ssize_t wire_len;
} seg_t;

/* `_tcp_segment`: 1 with *s filled, 0 for a frame that is not a TCP segment. */
static int
tcp_segment(const uint8_t *f, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t ip_end, seg_t *s)
{
    if (n < pos + 20)
        return 0;
    const uint8_t *t = f + pos;
    Py_ssize_t data_off = (t[12] >> 4) * 4;
    if (data_off < 20)
        return 0;
    Py_ssize_t start = pos + data_off;
    Py_ssize_t wire_len = ip_end - start;
    if (wire_len < 0)
        return 0;
    s->sport = be16(t);
    s->dport = be16(t + 2);
    s->seq = be32(t + 4);
    s->ack = be32(t + 8);
    s->flags = t[13];
    s->start = start;
    s->stop = ip_end <= n ? ip_end : n;
    s->wire_len = wire_len;
    return 1;
}

static int
ipv4(const uint8_t *f, Py_ssize_t n, Py_ssize_t pos, seg_t *s)
{
    if (n < pos + 20)
        return 0;
    const uint8_t *h = f + pos;
    if (h[0] >> 4 != 4)
        return 0;
    Py_ssize_t ihl = (h[0] & 0x0F) * 4;
    if (ihl < 20 || h[9] != 6 || (be16(h + 6) & 0x3FFF))
        return 0;
    uint16_t total = be16(h + 2);
    s->src = h + 12;
    s->dst = h + 16;
    s->addr_len = 4;
    return tcp_segment(f, n, pos + ihl, total ? pos + total : n, s);
}

static int
ipv6(const uint8_t *f, Py_ssize_t n, Py_ssize_t pos, seg_t *s)
{
    if (n < pos + 40)
        return 0;
    const uint8_t *h = f + pos;
    if (h[0] >> 4 != 6)
        return 0;
    uint16_t plen = be16(h + 4);
    unsigned nxt = h[6];
    Py_ssize_t end = plen ? pos + 40 + plen : n;
    Py_ssize_t p = pos + 40;
    while (nxt == 0 || nxt == 43 || nxt == 60 || nxt == 51) {
        if (n < p + 2)
            return 0;
        Py_ssize_t len = nxt == 51 ? ((Py_ssize_t)f[p + 1] + 2) * 4 : ((Py_ssize_t)f[p + 1] + 1) * 8;
        nxt = f[p];
        p += len;
    }
    if (nxt != 6)
        return 0;
    s->src = h + 8;
    s->dst = h + 24;
    s->addr_len = 16;
    return tcp_segment(f, n, p, end, s);
}

static int
by_ethertype(const uint8_t *f, Py_ssize_t n, unsigned etype, Py_ssize_t pos, seg_t *s)
{
    if (etype == 0x0800)
        return ipv4(f, n, pos, s);
    if (etype == 0x86DD)
        return ipv6(f, n, pos, s);
    return 0;
}

/* `parse_tcp` for the frames it turns into segments; 0 for everything else. */
static int
parse_tcp(long linktype, const uint8_t *f, Py_ssize_t n, seg_t *s)
{
    switch (linktype) {
    case 1: { /* Ethernet, VLAN tags skipped */
        if (n < 14)
            return 0;
        unsigned etype = be16(f + 12);
        Py_ssize_t pos = 14;
        while (etype == 0x8100 || etype == 0x88A8 || etype == 0x9100 || etype == 0x9200) {
            if (n < pos + 4)
                return 0;
            etype = be16(f + pos + 2);
            pos += 4;
        }
        return by_ethertype(f, n, etype, pos, s);
    }
    case 113: /* Linux SLL */
        return n < 16 ? 0 : by_ethertype(f, n, be16(f + 14), 16, s);
    case 276: /* Linux SLL2 */
        return n < 20 ? 0 : by_ethertype(f, n, be16(f), 20, s);
    case 101: case 12: case 14: case 228: case 229: /* raw IP */
        if (n <= 0)
            return 0;
        if (f[0] >> 4 == 4)
            return ipv4(f, n, 0, s);
        if (f[0] >> 4 == 6)
            return ipv6(f, n, 0, s);
        return 0;
    case 0: case 108: { /* BSD loopback: the address family in host or network order */
        if (n < 4)
            return 0;
        uint32_t family = be32(f);
        if (linktype == 0) {
            family = rd32(f, 1);
            if (family > 0xFFFF)
                family = be32(f);
        }
        if (family == 2)
            return ipv4(f, n, 4, s);
        if (family == 24 || family == 28 || family == 30)
            return ipv6(f, n, 4, s);
        return 0;
    }
    default:
        return 0;
    }
}

/* The item of one packet: (ts, TcpSegment), or (ts, linktype, frame) for `parse_tcp`. */
static PyObject *
packet_item(PyObject *buf, const uint8_t *base, Py_ssize_t at, Py_ssize_t caplen, long linktype,
            long long ts, int copy, addr_cache_t *cache, long *tcp, long *truncated)
{
    seg_t s;
    const uint8_t *f = base + at;
    if (!parse_tcp(linktype, f, caplen, &s)) {
        PyObject *frame = PySequence_GetSlice(buf, at, at + caplen);
        if (frame == NULL)
            return NULL;
        return Py_BuildValue("(LlN)", ts, linktype, frame);
    }
    PyObject *payload;
    Py_ssize_t kept = s.start < s.stop ? s.stop - s.start : 0;
    if (kept == 0) {
        payload = empty_bytes;
        Py_INCREF(payload);
    }
    else if (copy)
        payload = PyBytes_FromStringAndSize((const char *)f + s.start, kept);
    else
        payload = PySequence_GetSlice(buf, at + s.start, at + s.stop);
    if (payload == NULL)
        return NULL;
    PyObject *fields[9] = {
        address(cache, s.src, s.addr_len),
        PyLong_FromLong(s.sport),
        address(cache, s.dst, s.addr_len),
        PyLong_FromLong(s.dport),
        PyLong_FromUnsignedLong(s.seq),
        PyLong_FromUnsignedLong(s.ack),
        PyLong_FromLong(s.flags),
        payload,
        PyLong_FromSsize_t(s.wire_len),
    };
    PyObject *seg = NULL;
    for (int i = 0; i < 9; i++) {
        if (fields[i] == NULL)
            goto fail;
    }
    /* a namedtuple is made as tuple.__new__ makes a subclass: tp_alloc, then its items */
    seg = segment_type->tp_alloc(segment_type, 9);
    if (seg == NULL)
        goto fail;
    for (int i = 0; i < 9; i++)
        PyTuple_SET_ITEM(seg, i, fields[i]);
    (*tcp)++;
    if (kept < s.wire_len)
        (*truncated)++;
    return Py_BuildValue("(LN)", ts, seg);
fail:
    for (int i = 0; i < 9; i++)
        Py_XDECREF(fields[i]);
    return NULL;
}

/* Interface ticks to epoch nanoseconds as `Interface.to_ns` computes them; 0 when the result
 * leaves int64 (the Python reader then takes the block). */
static int
to_ns(const iface_t *iface, uint64_t ticks, long long *out)
{
    __int128 ns;
    uint64_t units = iface->units;
    if (units <= 1000000000u && 1000000000u % units == 0)
        ns = (__int128)ticks * (__int128)(1000000000u / units);
    else
        ns = (__int128)ticks * 1000000000 / (__int128)units;
    ns += (__int128)iface->offset_s * 1000000000;
    if (ns > INT64_MAX || ns < INT64_MIN)
        return 0;
    *out = (long long)ns;
    return 1;
}

static int
read_ifaces(PyObject *seq, iface_t **out, Py_ssize_t *count)
{
    PyObject *fast = PySequence_Fast(seq, "interfaces must be a sequence");
    if (fast == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAX_IFACES)
        n = MAX_IFACES; /* an EPB naming a later one stops the walk: Python reads it */
    iface_t *ifaces = PyMem_Calloc(n ? n : 1, sizeof(iface_t));
    if (ifaces == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(fast, i);
        long linktype;
        PyObject *units, *offset;
        if (!PyArg_ParseTuple(t, "lOO", &linktype, &units, &offset))
            goto fail;
        ifaces[i].linktype = linktype;
        ifaces[i].units = PyLong_AsUnsignedLongLong(units);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            ifaces[i].units = 0;
        }
        int overflow = 0;
        ifaces[i].offset_s = PyLong_AsLongLongAndOverflow(offset, &overflow);
        if (PyErr_Occurred())
            goto fail;
        if (overflow)
            ifaces[i].units = 0;
    }
    Py_DECREF(fast);
    *out = ifaces;
    *count = n;
    return 0;
fail:
    Py_DECREF(fast);
    PyMem_Free(ifaces);
    return -1;
}

/* walk(buf, pos, end, pcapng, little, interfaces, copy, limit)
 *   -> (items, pos, packets, tcp, truncated, stopped) */
PyObject *
native_walk(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (segment_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "setup(TcpSegment) was not called");
        return NULL;
    }
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "walk() takes 8 arguments");
        return NULL;
    }
    PyObject *buf = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    int pcapng = PyObject_IsTrue(args[3]);
    int little = PyObject_IsTrue(args[4]);
    int copy = PyObject_IsTrue(args[6]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[7]);
    if (PyErr_Occurred() || pcapng < 0 || little < 0 || copy < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    iface_t *ifaces = NULL;
    Py_ssize_t n_ifaces = 0;
    if (read_ifaces(args[5], &ifaces, &n_ifaces) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (end > view.len)
        end = view.len;
    if (pos < 0)
        pos = end; /* nothing read: the Python reader decides what a bad start means */
    const uint8_t *b = view.buf;
    PyObject *items = PyList_New(0);
    addr_cache_t cache = {{NULL}, 0};
    long packets = 0, tcp = 0, truncated = 0;
    int stopped = 0;
    if (items == NULL)
        goto error;
    while (pos < end && PyList_GET_SIZE(items) < limit) {
        Py_ssize_t at, caplen, next;
        long linktype;
        long long ts;
        if (pcapng) {
            if (end - pos < 12) {
                stopped = 1;
                break;
            }
            uint32_t btype = rd32(b + pos, little), blen = rd32(b + pos + 4, little);
            if (blen < 12 || blen % 4 || blen > MAX_RECORD || (Py_ssize_t)blen > end - pos) {
                stopped = 1;
                break;
            }
            if (btype == PCAPNG_SHB || btype == BLOCK_IDB || btype == BLOCK_OPB ||
                btype == BLOCK_SPB) {
                stopped = 1;
                break;
            }
            next = pos + blen;
            if (btype != BLOCK_EPB) {
                pos = next; /* a block the reader skips: name resolution, statistics, ... */
                continue;
            }
            if (blen < MIN_EPB) {
                stopped = 1;
                break;
            }
            uint32_t if_id = rd32(b + pos + 8, little);
            uint64_t ticks = (uint64_t)rd32(b + pos + 12, little) << 32 | rd32(b + pos + 16, little);
            caplen = rd32(b + pos + 20, little);
            at = pos + 28;
            if (if_id >= n_ifaces || ifaces[if_id].units == 0 || caplen > (Py_ssize_t)blen - 32 ||
                !to_ns(&ifaces[if_id], ticks, &ts)) {
                stopped = 1;
                break;
            }
            linktype = ifaces[if_id].linktype;
        }
        else {
            /* a classic pcap record: 16 bytes of header, then `incl` bytes */
            if (end - pos < 16 || n_ifaces < 1 || ifaces[0].units == 0) {
                stopped = 1;
                break;
            }
            uint32_t sec = rd32(b + pos, little), frac = rd32(b + pos + 4, little);
            uint32_t incl = rd32(b + pos + 8, little);
            if (incl > MAX_RECORD || (Py_ssize_t)incl > end - pos - 16) {
                stopped = 1;
                break;
            }
            uint64_t scale = 1000000000u / ifaces[0].units;
            ts = (long long)sec * 1000000000LL + (long long)(frac * scale);
            at = pos + 16;
            caplen = incl;
            next = at + incl;
            linktype = ifaces[0].linktype;
        }
        PyObject *item = packet_item(buf, b, at, caplen, linktype, ts, copy, &cache, &tcp,
                                     &truncated);
        if (item == NULL)
            goto error;
        int rc = PyList_Append(items, item);
        Py_DECREF(item);
        if (rc < 0)
            goto error;
        packets++;
        pos = next;
    }
    for (int i = 0; i < ADDR_CACHE; i++)
        Py_XDECREF(cache.items[i]);
    PyMem_Free(ifaces);
    PyBuffer_Release(&view);
    return Py_BuildValue("(NnlllO)", items, pos, packets, tcp, truncated,
                         stopped ? Py_True : Py_False);
error:
    for (int i = 0; i < ADDR_CACHE; i++)
        Py_XDECREF(cache.items[i]);
    Py_XDECREF(items);
    PyMem_Free(ifaces);
    PyBuffer_Release(&view);
    return NULL;
}
