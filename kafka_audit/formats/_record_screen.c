/*
 * The record screen of kafka_audit.formats.default_record, compiled: exactly the answer of
 * screen_records_py() (see its docstring; tests/test_default_record.py holds the two to it), many
 * times faster. Optional: when this module is not built, the pure-Python screen runs instead.
 *
 * screen_records(data, base_timestamp, record_count, require_key, min_timestamp, max_timestamp)
 * returns True when the `record_count` magic v2 records in `data` (a batch's records,
 * decompressed) are well formed, fill `data` exactly, and every record has offset delta == its
 * index, a key when `require_key`, and base_timestamp + timestamp delta within
 * [min_timestamp, max_timestamp] where those are not None. Bad data answers False, never an
 * exception: the caller then decodes the batch in Python, which says what is wrong.
 *
 * Varints and fields: _record_grammar.h.
 */
#define PY_SSIZE_T_CLEAN
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

static PyObject *screen_records(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer buffer;
    long long base_timestamp, record_count;
    int require_key;
    PyObject *low_obj, *high_obj;
    if (!PyArg_ParseTuple(args, "y*LLpOO", &buffer, &base_timestamp, &record_count, &require_key, &low_obj,
                          &high_obj))
        return NULL;
    int has_low = 0, has_high = 0, ok = 0;
    wide low = 0, high = 0;
    if (!read_bound(low_obj, &has_low, &low) || !read_bound(high_obj, &has_high, &high)) {
        PyBuffer_Release(&buffer);
        return NULL;
    }
    const uint8_t *data = (const uint8_t *)buffer.buf;
    Py_ssize_t end = buffer.len;
    Py_BEGIN_ALLOW_THREADS
    ok = screen(data, end, (int64_t)base_timestamp, record_count, require_key, has_low, low, has_high, high);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buffer);
    return PyBool_FromLong(ok);
}

static PyMethodDef methods[] = {
    {"screen_records", screen_records, METH_VARARGS,
     "screen_records(data, base_timestamp, record_count, require_key, min_timestamp, max_timestamp) -> bool"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_screen", "The compiled record screen.", -1, methods, NULL, NULL, NULL, NULL,
};

/* The module carries the widths it was built with, so that a stale build can be told apart. */
PyMODINIT_FUNC PyInit__record_screen(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntMacro(m, MAX_VARINT_BYTES) < 0 || PyModule_AddIntMacro(m, MAX_VARLONG_BYTES) < 0
        || PyModule_AddIntMacro(m, MIN_HEADER_BYTES) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
