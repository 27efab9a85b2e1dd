/*
 * The record screen itself (see _record_screen.c's comment for what it answers), written once for
 * the two extensions that run it: _record_screen.c (screen_records, screen_payload) and
 * _batch_walk.c (the segment step's compiled batch walk). Included after _record_grammar.h.
 */
#ifndef KAFKA_AUDIT_SCREEN_RECORDS_H
#define KAFKA_AUDIT_SCREEN_RECORDS_H

#include <Python.h>
#include <stdint.h>

#include "_record_grammar.h"

/* Timestamps are compared as Python compares them, without overflow: base timestamp plus delta
 * (two longs) always fits 128 bits, and a bound beyond a long is clamped to +-2^100, past any
 * such sum. */
typedef __int128 wide;
#define WIDE_LIMIT (((wide)1) << 100)

/* An optional timestamp bound: None, or an int. 0 (with an exception set) when it is neither. */
static int read_bound(PyObject *value, int *present, wide *bound)
{
    if (value == Py_None) {
        *present = 0;
        return 1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred())
        return 0;
    *present = 1;
    *bound = overflow > 0 ? WIDE_LIMIT : overflow < 0 ? -WIDE_LIMIT : (wide)v;
    return 1;
}

static int screen(const uint8_t *data, Py_ssize_t end, int64_t base_timestamp, long long record_count,
                  int require_key, int has_low, wide low, int has_high, wide high)
{
    Py_ssize_t pos = 0;
    int64_t v;
    if (record_count < 0)
        return 0;
    for (long long index = 0; index < record_count; index++) {
        if (!read_varint(data, end, &pos, MAX_VARINT_BYTES, &v))
            return 0;
        if (v <= 0 || v > end - pos)
            return 0;
        Py_ssize_t record_end = pos + (Py_ssize_t)v;
        pos += 1; /* attributes: no rule reads a v2 record's attributes */
        if (!read_varint(data, record_end, &pos, MAX_VARLONG_BYTES, &v))
            return 0;
        if (has_low || has_high) {
            wide timestamp = (wide)base_timestamp + (wide)v;
            if ((has_low && timestamp < low) || (has_high && timestamp > high))
                return 0;
        }
        if (!read_varint(data, record_end, &pos, MAX_VARINT_BYTES, &v) || v != index)
            return 0;
        if (!skip_bytes(data, record_end, &pos, !require_key) || !skip_bytes(data, record_end, &pos, 1))
            return 0; /* key, value */
        int64_t header_count;
        if (!read_varint(data, record_end, &pos, MAX_VARINT_BYTES, &header_count))
            return 0;
        if (header_count < 0 || MIN_HEADER_BYTES * header_count > record_end - pos)
            return 0;
        for (int64_t h = 0; h < header_count; h++) {
            if (!skip_bytes(data, record_end, &pos, 0) || !skip_bytes(data, record_end, &pos, 1))
                return 0; /* header key (never null), header value */
        }
        if (pos != record_end)
            return 0;
    }
    return pos == end;
}

#endif
