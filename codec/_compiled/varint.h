/* Kafka's zigzag varints, read with every byte bounds-checked: the record loops' (records.c) and
 * the capture JSON writer's (jsontext_records.h). Include after Python.h. */
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

#endif
