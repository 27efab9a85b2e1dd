/*
 * The record screen of kafka_audit.record.record_screen, compiled: exactly the answer of the
 * pure-Python reference screen_records_py() in tests/support/record_screen_reference.py (see its
 * docstring; tests/test_default_record.py and test_properties.py hold the two to it). Required:
 * the audit's fast path has no other implementation (setup.py fails clearly without a compiler).
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
#include <string.h>

#include "_record_grammar.h"
#include "_payload_inflate.h"

#include "_screen_records.h"

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


/* ---- screen_payload: a v2 batch's payload inflated (none, lz4, zstd) and screened in one call ----
 *
 * screen_payload(buf, batch, screen, max_size, want_record, lz4_block_into, zstd_factory) answers
 * exactly what screen_payload_py() in file_records.py answers, or None where this code does not
 * take the batch on (an unknown or other codec, framing the fast paths of compression.py would not
 * take, any library error, a bound past max_size): the caller then runs the Python path, whose
 * result and error messages stay the only ones. True/False: the records inflated as compression.py
 * inflates them (the same library calls: lz4_block_into is cramjam.lz4.decompress_block_into into
 * a block of the frame's maximum size, zstd frames go through decompressobj() of a per-thread
 * zstd_factory() instance) and passed / failed the record screen. With want_record, a batch of one
 * record that passes answers (key, value) of that record instead of True. */

/* The key and value of the one record in `data` (already screened: its grammar holds). */
static PyObject *first_record(const uint8_t *data, Py_ssize_t end)
{
    Py_ssize_t pos = 0;
    int64_t v = 0;
    PyObject *field[2] = {NULL, NULL};
    read_varint(data, end, &pos, MAX_VARINT_BYTES, &v);
    pos += 1;
    read_varint(data, end, &pos, MAX_VARLONG_BYTES, &v);
    read_varint(data, end, &pos, MAX_VARINT_BYTES, &v);
    for (int i = 0; i < 2; i++) {
        read_varint(data, end, &pos, MAX_VARINT_BYTES, &v);
        if (v < 0) {
            field[i] = Py_NewRef(Py_None);
        } else {
            field[i] = PyBytes_FromStringAndSize((const char *)data + pos, (Py_ssize_t)v);
            if (field[i] == NULL) {
                Py_XDECREF(field[0]);
                return NULL;
            }
            pos += (Py_ssize_t)v;
        }
    }
    PyObject *pair = PyTuple_Pack(2, field[0], field[1]);
    Py_DECREF(field[0]);
    Py_DECREF(field[1]);
    return pair;
}

static int long_attr(PyObject *obj, int name, long long *out)
{
    PyObject *value = PyObject_GetAttr(obj, names[name]);
    if (value == NULL)
        return 0;
    *out = value == Py_None ? 0 : PyLong_AsLongLong(value);
    Py_DECREF(value);
    return !(*out == -1 && PyErr_Occurred());
}

static PyObject *screen_payload(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "screen_payload(buf, batch, screen, max_size, want_record, lz4_block_into, zstd_factory)");
        return NULL;
    }
    PyObject *batch = args[1], *screen_obj = args[2];
    long long position, size, attributes, base_timestamp, record_count, max_size;
    if (!long_attr(batch, S_POSITION, &position) || !long_attr(batch, S_SIZE, &size)
        || !long_attr(batch, S_ATTRIBUTES, &attributes) || !long_attr(batch, S_BASE_TIMESTAMP, &base_timestamp)
        || !long_attr(batch, S_RECORD_COUNT, &record_count))
        return NULL;
    max_size = PyLong_AsLongLong(args[3]);
    int want_record = PyObject_IsTrue(args[4]);
    if ((max_size == -1 || want_record < 0) && PyErr_Occurred())
        return NULL;
    PyObject *require = PyObject_GetAttr(screen_obj, names[S_REQUIRE_KEY]);
    PyObject *low_obj = require ? PyObject_GetAttr(screen_obj, names[S_MIN_TIMESTAMP]) : NULL;
    PyObject *high_obj = low_obj ? PyObject_GetAttr(screen_obj, names[S_MAX_TIMESTAMP]) : NULL;
    int require_key = high_obj ? PyObject_IsTrue(require) : -1;
    int has_low = 0, has_high = 0, ok = require_key >= 0;
    wide low = 0, high = 0;
    ok = ok && read_bound(low_obj, &has_low, &low) && read_bound(high_obj, &has_high, &high);
    Py_XDECREF(require);
    Py_XDECREF(low_obj);
    Py_XDECREF(high_obj);
    if (!ok)
        return NULL;
    Py_buffer buffer;
    if (PyObject_GetBuffer(args[0], &buffer, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t start = (Py_ssize_t)position + V2_RECORDS_OFFSET, stop = (Py_ssize_t)(position + size);
    PyObject *result = NULL;
    payload_t out = {NULL, NULL, NULL, 0};
    int inflated = 0;
    if (position < 0 || start > stop || stop > buffer.len) {
        inflated = 0;
    } else if ((attributes & 0x07) == 0) {
        out.data = (const uint8_t *)buffer.buf + start;
        out.len = stop - start;
        inflated = 1;
    } else if ((attributes & 0x07) == 3) {
        inflated = inflate_lz4((const uint8_t *)buffer.buf + start, stop - start, max_size, args[5], &out);
    } else if ((attributes & 0x07) == 4) {
        inflated = inflate_zstd((const uint8_t *)buffer.buf + start, stop - start, max_size, args[6], &out);
    }
    if (inflated == 1) {
        int passed;
        Py_BEGIN_ALLOW_THREADS
        passed = screen(out.data, out.len, (int64_t)base_timestamp, record_count, require_key, has_low, low, has_high,
                        high);
        Py_END_ALLOW_THREADS
        if (passed && want_record && record_count == 1)
            result = first_record(out.data, out.len);
        else
            result = PyBool_FromLong(passed);
    } else if (inflated == 0) {
        result = Py_NewRef(Py_None);
    }
    payload_free(&out);
    PyBuffer_Release(&buffer);
    return result;
}

static PyMethodDef methods[] = {
    {"screen_records", screen_records, METH_VARARGS,
     "screen_records(data, base_timestamp, record_count, require_key, min_timestamp, max_timestamp) -> bool"},
    {"screen_payload", (PyCFunction)(void (*)(void))screen_payload, METH_FASTCALL,
     "screen_payload(buf, batch, screen, max_size, want_record, lz4_block_into, zstd_factory) -> bool | tuple | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_screen", "The compiled record screen.", -1, methods, NULL, NULL, NULL, NULL,
};

/* The module carries the widths it was built with, so that a stale build can be told apart. */
PyMODINIT_FUNC PyInit__record_screen(void)
{
    if (intern_names() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntMacro(m, MAX_VARINT_BYTES) < 0 || PyModule_AddIntMacro(m, MAX_VARLONG_BYTES) < 0
        || PyModule_AddIntMacro(m, MIN_HEADER_BYTES) < 0
        || PyModule_AddIntMacro(m, V2_RECORDS_OFFSET) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
