/* Kafka's zigzag varints and a v2 record's head, read with every byte bounds-checked: the record
 * loops' (records.c) and the capture JSON writer's (jsontext_records.h). Include after Python.h. */
#ifndef KIPWIRE_VARINT_H
#define KIPWIRE_VARINT_H

#include <stdint.h>

/* An unsigned varint of at most `max_bytes` bytes (5 for an int32, 10 for an int64, as Kafka's
 * ByteUtils) into *out; 0, or -1 when it runs past `end`, is longer, or does not fit the width. */
static inline int
read_uvarint(const unsigned char **at, const unsigned char *end, int max_bytes, uint64_t *out)
{
    const unsigned char *s = *at;
    if (s < end && *s < 0x80) { /* most varints in a batch are one byte: lengths, deltas */
        *out = *s;
        *at = s + 1;
        return 0;
    }
    uint64_t value = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (s >= end)
            return -1;
        unsigned char byte = *s++;
        uint64_t bits = byte & 0x7F;
        if (i == 9 && bits > 1) /* the tenth byte carries bit 63 only */
            return -1;
        value |= bits << (7 * i);
        if (byte < 0x80) {
            if (max_bytes == 5 && value >> 32)
                return -1;
            *out = value;
            *at = s;
            return 0;
        }
    }
    return -1;
}

/* A zigzag varint (int32) or varlong (int64), undone; 0 or -1 as read_uvarint. */
static inline int
read_varint(const unsigned char **at, const unsigned char *end, int max_bytes, int64_t *out)
{
    uint64_t z;
    if (read_uvarint(at, end, max_bytes, &z) < 0)
        return -1;
    int64_t value = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    *out = max_bytes == 5 ? (int32_t)value : value;
    return 0;
}

/* The smallest v2 record: length, attributes, timestamp and offset deltas, key and value lengths
 * and header count, one byte each (batch.py's _MIN_RECORD_SIZE). */
#define MIN_RECORD_SIZE 7

/* A v2 record's head from *at, which `end` (the records' end) bounds: its end, its offset, and
 * its timestamp (left alone when `has_fixed`: the log append time replaces it). *at is left at
 * the key's length. 0, or -1 for a length that does not fit or a delta that overflows (Python's
 * ints do not overflow: its path gives that record). */
static inline int
read_record_head(const unsigned char **at, const unsigned char *end, int64_t base_offset,
                 int64_t base_timestamp, int has_fixed, const unsigned char **record_end,
                 int64_t *offset, int64_t *timestamp)
{
    int64_t length, timestamp_delta, offset_delta;
    if (read_varint(at, end, 5, &length) < 0 || length < MIN_RECORD_SIZE - 1 ||
        length > end - *at)
        return -1;
    *record_end = *at + length;
    *at += 1; /* attributes: no bit is defined for records yet */
    if (read_varint(at, *record_end, 10, &timestamp_delta) < 0 ||
        read_varint(at, *record_end, 5, &offset_delta) < 0 ||
        __builtin_add_overflow(base_offset, offset_delta, offset))
        return -1;
    if (!has_fixed && __builtin_add_overflow(base_timestamp, timestamp_delta, timestamp))
        return -1;
    return 0;
}

#endif
