/* The records half of `jsontext.c`: a `records` blob's batches as the JSON text of
 * `codec.records.expand_records` (jsonview.py), written straight from the wire bytes.
 *
 * It reads what `stream.iter_batches` and `batch.RecordBatch` read, and the records as
 * `records.c` does (the same bounds and refusals: every byte is checked to be there before it is
 * read). It writes only what it reads exactly as the Python code does: uncompressed magic-2
 * batches that are not control batches, and batches cut short by the end of the blob. Anything
 * else (a legacy message set, compression, a control batch, a CRC mismatch, any malformed byte)
 * returns J_FALLBACK, and the caller hands the blob to `expand_records`, which gives the value or
 * the error the row keeps. The CRC-32C is the crc32c package's, as batch.py's.
 */
#ifndef KIPWIRE_JSONTEXT_RECORDS_H
#define KIPWIRE_JSONTEXT_RECORDS_H

enum { J_ERROR = -1, J_OK = 0, J_FALLBACK = 1 };

static PyObject *crc32c_fn; /* crc32c.crc32c */

#define LOG_OVERHEAD 12
#define HEADER_SIZE 61
#define MIN_BATCH_LENGTH (HEADER_SIZE - LOG_OVERHEAD)
#define CRC_START 21

static inline uint32_t
rd_be32(const unsigned char *s)
{
    return ((uint32_t)s[0] << 24) | ((uint32_t)s[1] << 16) | ((uint32_t)s[2] << 8) | s[3];
}

static inline int64_t
rd_be64(const unsigned char *s)
{
    return (int64_t)(((uint64_t)rd_be32(s) << 32) | rd_be32(s + 4));
}

#include "varint.h"

/* Whether `size` bytes are strict UTF-8 as bytes.decode() takes them: no overlong forms, no
 * surrogates, nothing above U+10FFFF. */
static int
utf8_valid(const unsigned char *s, Py_ssize_t size)
{
    const unsigned char *end = s + size;
    while (s < end) {
        unsigned char c = *s++;
        if (c < 0x80)
            continue;
        int more;
        uint32_t cp, least;
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1, cp = c & 0x1F, least = 0x80;
        }
        else if (c >= 0xE0 && c <= 0xEF) {
            more = 2, cp = c & 0x0F, least = 0x800;
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            more = 3, cp = c & 0x07, least = 0x10000;
        }
        else {
            return 0;
        }
        if (end - s < more)
            return 0;
        for (int i = 0; i < more; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3F);
        }
        s += more;
        if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
    }
    return 1;
}

/* A nullable byte string (key, value, header value) of `size` bytes at *at, written as base64
 * text or null; J_FALLBACK when the length is negative or runs past `end`. */
static inline int
write_field(jout *o, const unsigned char **at, const unsigned char *end, int64_t size)
{
    if (size == -1)
        return JOUT_LIT(o, "null") < 0 ? J_ERROR : J_OK;
    if (size < 0 || size > end - *at)
        return J_FALLBACK;
    const unsigned char *s = *at;
    *at += size;
    return jout_base64(o, s, (Py_ssize_t)size, 0) < 0 ? J_ERROR : J_OK;
}

/* A record's headers from its header count to `end` (the record's end), as
 * [["key", value], ...]. */
static int
write_headers(jout *o, const unsigned char **at, const unsigned char *end)
{
    int64_t count, size;
    if (read_varint(at, end, 5, &count) < 0 || count < 0 || 2 * count > end - *at)
        return J_FALLBACK;
    if (jout_char(o, '[') < 0)
        return J_ERROR;
    for (int64_t i = 0; i < count; i++) {
        if (read_varint(at, end, 5, &size) < 0 || size < 0 || size > end - *at ||
            !utf8_valid(*at, (Py_ssize_t)size))
            return J_FALLBACK;
        if ((i && jout_char(o, ',') < 0) || jout_char(o, '[') < 0 ||
            jout_text(o, (const char *)*at, (Py_ssize_t)size) < 0 || jout_char(o, ',') < 0)
            return J_ERROR;
        *at += size;
        if (read_varint(at, end, 5, &size) < 0)
            return J_FALLBACK;
        int rc = write_field(o, at, end, size);
        if (rc != J_OK)
            return rc;
        if (jout_char(o, ']') < 0)
            return J_ERROR;
    }
    return jout_char(o, ']') < 0 ? J_ERROR : J_OK;
}

/* One record from *at, bounded by `end` (the records' end), as jsonview's _record writes it;
 * `fixed` is the log append time every record takes, when `has_fixed`. */
static int
write_record(jout *o, const unsigned char **at, const unsigned char *end, int64_t base_offset,
             int64_t base_timestamp, int has_fixed, int64_t fixed)
{
    int64_t size, offset, timestamp = fixed;
    const unsigned char *s = *at, *record_end;
    if (read_record_head(&s, end, base_offset, base_timestamp, has_fixed, &record_end, &offset,
                         &timestamp) < 0)
        return J_FALLBACK;
    if (JOUT_LIT(o, "{\"offset\":") < 0 || jout_int64(o, offset) < 0 ||
        JOUT_LIT(o, ",\"timestamp\":") < 0 || jout_int64(o, timestamp) < 0 ||
        JOUT_LIT(o, ",\"key\":") < 0)
        return J_ERROR;
    int rc;
    if (read_varint(&s, record_end, 5, &size) < 0)
        return J_FALLBACK;
    if ((rc = write_field(o, &s, record_end, size)) != J_OK)
        return rc;
    if (JOUT_LIT(o, ",\"value\":") < 0)
        return J_ERROR;
    if (read_varint(&s, record_end, 5, &size) < 0)
        return J_FALLBACK;
    if ((rc = write_field(o, &s, record_end, size)) != J_OK)
        return rc;
    if (JOUT_LIT(o, ",\"headers\":") < 0)
        return J_ERROR;
    if (s < record_end && *s == 0) { /* no headers: the common case */
        if (JOUT_LIT(o, "[]") < 0)
            return J_ERROR;
        s++;
    }
    else if ((rc = write_headers(o, &s, record_end)) != J_OK) {
        return rc;
    }
    if (s != record_end)
        return J_FALLBACK;
    *at = record_end;
    return jout_char(o, '}') < 0 ? J_ERROR : J_OK;
}

/* A batch's header fields, in batch_to_json's order; Batch's defaults where a format (or a cut
 * batch) lacks them. */
typedef struct {
    int64_t base_offset, crc, base_timestamp, max_timestamp, producer_id;
    int64_t batch_length, partition_leader_epoch, magic, attributes, last_offset_delta;
    int64_t producer_epoch, base_sequence, record_count;
    int timestamp_type; /* -1 none, 0 create time, 1 log append time */
    int truncated;
} jbatch;

static void
jbatch_defaults(jbatch *b, int64_t base_offset, int64_t magic)
{
    *b = (jbatch){
        .base_offset = base_offset, .crc = -1, .base_timestamp = -1, .max_timestamp = -1,
        .producer_id = -1, .batch_length = -1, .partition_leader_epoch = -1, .magic = magic,
        .producer_epoch = -1, .base_sequence = -1, .timestamp_type = -1,
    };
}

static const char *const compression_names[] = {"none", "gzip", "snappy", "lz4", "zstd"};

/* The header fields and `"records":` of a batch whose compression code is known (0-4). */
static int
write_batch_head(jout *o, const jbatch *b)
{
    const char *ts_type = b->timestamp_type < 0    ? "NO_TIMESTAMP_TYPE"
                          : b->timestamp_type == 0 ? "CREATE_TIME"
                                                   : "LOG_APPEND_TIME";
    int64_t attributes = b->attributes;
#define FIELD(text, v) (JOUT_LIT(o, text) < 0 || jout_int64(o, (v)) < 0)
#define FLAG(text, bit) (JOUT_LIT(o, text) < 0 || (attributes & (bit) ? JOUT_LIT(o, "true") : \
                                                                         JOUT_LIT(o, "false")) < 0)
    const char *compression = compression_names[attributes & 7];
    if (FIELD("{\"base_offset\":", b->base_offset) ||
        FIELD(",\"batch_length\":", b->batch_length) ||
        FIELD(",\"partition_leader_epoch\":", b->partition_leader_epoch) ||
        FIELD(",\"magic\":", b->magic) || FIELD(",\"crc\":", b->crc) ||
        FIELD(",\"attributes\":", attributes) || JOUT_LIT(o, ",\"compression\":\"") < 0 ||
        jout_raw(o, compression, (Py_ssize_t)strlen(compression)) < 0 ||
        JOUT_LIT(o, "\",\"timestamp_type\":\"") < 0 || jout_raw(o, ts_type, strlen(ts_type)) < 0 ||
        jout_char(o, '"') < 0 || FLAG(",\"is_transactional\":", 0x10) ||
        FLAG(",\"is_control\":", 0x20) || FLAG(",\"has_delete_horizon\":", 0x40) ||
        FIELD(",\"last_offset_delta\":", b->last_offset_delta) ||
        FIELD(",\"base_timestamp\":", b->base_timestamp) ||
        FIELD(",\"max_timestamp\":", b->max_timestamp) ||
        FIELD(",\"producer_id\":", b->producer_id) ||
        FIELD(",\"producer_epoch\":", b->producer_epoch) ||
        FIELD(",\"base_sequence\":", b->base_sequence) ||
        FIELD(",\"record_count\":", b->record_count) || JOUT_LIT(o, ",\"truncated\":") < 0 ||
        (b->truncated ? JOUT_LIT(o, "true") : JOUT_LIT(o, "false")) < 0 ||
        JOUT_LIT(o, ",\"records\":") < 0)
        return J_ERROR;
#undef FIELD
#undef FLAG
    return J_OK;
}

/* Batch.cut: a batch cut short, with its base offset and length when they are there. */
static int
write_cut(jout *o, const unsigned char *raw, Py_ssize_t size, int64_t magic)
{
    jbatch b;
    jbatch_defaults(&b, size >= 8 ? rd_be64(raw) : -1, magic);
    if (size >= 12)
        b.batch_length = (int32_t)rd_be32(raw + 8);
    b.truncated = 1;
    b.attributes = 0;
    if (write_batch_head(o, &b) != J_OK)
        return J_ERROR;
    return JOUT_LIT(o, "[]}") < 0 ? J_ERROR : J_OK;
}

/* The 61-byte header of a magic-2 batch into `b`; J_FALLBACK where RecordBatch raises (an
 * unknown compression code, a negative record count). */
static int
read_batch_head(const unsigned char *raw, jbatch *b)
{
    jbatch_defaults(b, rd_be64(raw), (int8_t)raw[16]);
    b->batch_length = (int32_t)rd_be32(raw + 8);
    b->partition_leader_epoch = (int32_t)rd_be32(raw + 12);
    b->crc = rd_be32(raw + 17);
    b->attributes = (int16_t)((raw[21] << 8) | raw[22]);
    b->last_offset_delta = (int32_t)rd_be32(raw + 23);
    b->base_timestamp = rd_be64(raw + 27);
    b->max_timestamp = rd_be64(raw + 35);
    b->producer_id = rd_be64(raw + 43);
    b->producer_epoch = (int16_t)((raw[51] << 8) | raw[52]);
    b->base_sequence = (int32_t)rd_be32(raw + 53);
    b->record_count = (int32_t)rd_be32(raw + 57);
    b->timestamp_type = (b->attributes & 0x08) ? 1 : 0;
    if ((b->attributes & 7) > 4 || b->record_count < 0)
        return J_FALLBACK;
    return J_OK;
}

/* RecordBatch.truncated_at: the header fields when they are all there and readable, else cut. */
static int
write_truncated(jout *o, const unsigned char *raw, Py_ssize_t size)
{
    jbatch b;
    if (size < HEADER_SIZE || read_batch_head(raw, &b) != J_OK)
        return write_cut(o, raw, size, 2);
    b.truncated = 1;
    if (write_batch_head(o, &b) != J_OK)
        return J_ERROR;
    return JOUT_LIT(o, "[]}") < 0 ? J_ERROR : J_OK;
}

/* Whether the CRC-32C of `size` bytes at `s` is `crc`: 1, 0, or -1 with an exception. */
static int
crc_holds(const unsigned char *s, Py_ssize_t size, int64_t crc)
{
    PyObject *view = PyMemoryView_FromMemory((char *)s, size, PyBUF_READ);
    if (view == NULL)
        return -1;
    PyObject *actual = PyObject_CallOneArg(crc32c_fn, view);
    Py_DECREF(view);
    if (actual == NULL)
        return -1;
    long long value = PyLong_AsLongLong(actual);
    Py_DECREF(actual);
    if (value == -1 && PyErr_Occurred())
        return -1;
    return value == crc;
}

/* A whole uncompressed magic-2 batch of `size` bytes with its records. */
static int
write_batch(jout *o, const unsigned char *raw, Py_ssize_t size)
{
    jbatch b;
    if (read_batch_head(raw, &b) != J_OK || (b.attributes & 0x27)) /* compressed or control */
        return J_FALLBACK;
    int holds = crc_holds(raw + CRC_START, size - CRC_START, b.crc);
    if (holds <= 0)
        return holds < 0 ? J_ERROR : J_FALLBACK;
    const unsigned char *at = raw + HEADER_SIZE, *end = raw + size;
    if (b.record_count > (end - at) / MIN_RECORD_SIZE)
        return J_FALLBACK;
    if (write_batch_head(o, &b) != J_OK || jout_char(o, '[') < 0)
        return J_ERROR;
    for (int64_t i = 0; i < b.record_count; i++) {
        if (i && jout_char(o, ',') < 0)
            return J_ERROR;
        int rc = write_record(o, &at, end, b.base_offset, b.base_timestamp,
                              b.timestamp_type == 1, b.max_timestamp);
        if (rc != J_OK)
            return rc;
    }
    if (at != end)
        return J_FALLBACK;
    return JOUT_LIT(o, "]}") < 0 ? J_ERROR : J_OK;
}

/* expand_records(blob) as JSON text: the batches as stream.iter_batches finds them. */
static int
write_batches(jout *o, const unsigned char *b, Py_ssize_t n)
{
    if (jout_char(o, '[') < 0)
        return J_ERROR;
    Py_ssize_t pos = 0;
    int rc = J_OK;
    while (pos < n && rc == J_OK) {
        if (pos && jout_char(o, ',') < 0)
            return J_ERROR;
        const unsigned char *raw = b + pos;
        if (n - pos < 17) { /* not even the magic byte: nothing but the offsets to tell */
            rc = write_cut(o, raw, n - pos, -1);
            break;
        }
        int64_t length = (int32_t)rd_be32(raw + 8);
        int magic = raw[16];
        if (magic > 2 || length < (magic == 2 ? MIN_BATCH_LENGTH : magic == 1 ? 22 : 14))
            return J_FALLBACK;
        if (length + LOG_OVERHEAD > n - pos) {
            rc = magic == 2 ? write_truncated(o, raw, n - pos) : write_cut(o, raw, n - pos, magic);
            break;
        }
        if (magic != 2)
            return J_FALLBACK; /* legacy message sets: legacy.py reads them */
        rc = write_batch(o, raw, (Py_ssize_t)length + LOG_OVERHEAD);
        pos += (Py_ssize_t)length + LOG_OVERHEAD;
    }
    if (rc != J_OK)
        return rc;
    return jout_char(o, ']') < 0 ? J_ERROR : J_OK;
}

#endif
