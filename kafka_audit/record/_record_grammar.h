/*
 * DefaultRecord's varint grammar for the C extensions (record/_record_screen.c, _record_text.c),
 * written once. Varints follow org.apache.kafka.common.utils.ByteUtils: readVarint reads at most
 * MAX_VARINT_BYTES bytes into a Java int, readVarlong at most MAX_VARLONG_BYTES into a long, then
 * zig-zag decodes. The widths are those of kafka_audit/record/default_record.py, the grammar's
 * one home: setup.py reads them there and passes them as macros.
 */
#ifndef KAFKA_AUDIT_RECORD_GRAMMAR_H
#define KAFKA_AUDIT_RECORD_GRAMMAR_H

#include <Python.h>
#include <stdint.h>

#if !defined(MAX_VARINT_BYTES) || !defined(MAX_VARLONG_BYTES) || !defined(MIN_HEADER_BYTES)
#error "build with setup.py: it defines the grammar's widths from kafka_audit/record/default_record.py"
#endif

/* A zig-zag varint of at most `max_bytes` bytes at *pos, not past `end`; 0 when it does not end. */
static inline int read_varint(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos, int max_bytes, int64_t *out)
{
    uint64_t raw = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (*pos >= end)
            return 0;
        uint8_t b = data[(*pos)++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (max_bytes == MAX_VARINT_BYTES) {
                uint32_t raw32 = (uint32_t)raw; /* a Java int keeps the low 32 bits */
                *out = (int64_t)(int32_t)((raw32 >> 1) ^ (uint32_t)(-(int32_t)(raw32 & 1)));
            } else {
                *out = (int64_t)((raw >> 1) ^ (uint64_t)(-(int64_t)(raw & 1)));
            }
            return 1;
        }
        shift += 7;
    }
    return 0;
}

/* A field of DefaultRecord's grammar: a varint size, then that many bytes within the record; the
 * size -1 (null) passes only when `null_ok`. 0 rejects. */
static inline int skip_bytes(const uint8_t *data, Py_ssize_t record_end, Py_ssize_t *pos, int null_ok)
{
    int64_t size;
    if (!read_varint(data, record_end, pos, MAX_VARINT_BYTES, &size))
        return 0;
    if (size >= 0) {
        if (size > record_end - *pos)
            return 0;
        *pos += (Py_ssize_t)size;
        return 1;
    }
    return size == -1 && null_ok;
}

#endif
