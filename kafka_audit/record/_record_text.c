/*
 * The record lines of `kafka-audit dump --records [--print-data]` for one magic v2 data batch,
 * compiled: exactly the text kafka_audit.report.dump's Python path prints for the same records (see
 * kafka_audit/report/dump.py, _record_text; tests/test_dump.py holds the two to it), many times faster.
 * Optional: when this module is not built, the Python path runs.
 *
 * record_text(data, base_offset, base_timestamp, log_append_time, timestamp_type, base_sequence,
 *             record_count, print_data) -> str | None
 *
 * `data` is the batch's records, decompressed. One line per record, each ending in "\n":
 *   | offset: O <timestamp_type>: T keySize: K valueSize: V sequence: S headerKeys: [h1,h2]
 * and with `print_data` " key: <key> payload: <value>" (shown as escape_text of
 * kafka_audit.report.safe_text shows data: undecodable bytes and control characters as \xNN,
 * bidi controls as \uNNNN, a backslash doubled, runner commands broken; "null" for a null key or
 * value). Header keys are
 * listed only with `print_data`, as the Python decoder keeps headers only then.
 *
 * None when the records are not exactly what decode_records() reads without error (a record that
 * does not parse, bytes left over, a count that does not match), when a number leaves a long, or
 * when a header key is not valid UTF-8: the caller then runs the Python path, which says what is
 * wrong in Kafka's words. Varints and fields: record/_record_grammar.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_record_grammar.h"

typedef struct {
    char *buf;
    size_t len;
    size_t cap;
} out_t;

static int reserve(out_t *out, size_t more)
{
    if (out->len + more <= out->cap)
        return 1;
    size_t cap = out->cap ? out->cap : 4096;
    while (cap < out->len + more)
        cap *= 2;
    char *grown = PyMem_Realloc(out->buf, cap);
    if (grown == NULL)
        return 0;
    out->buf = grown;
    out->cap = cap;
    return 1;
}

static inline void put(out_t *out, const char *text, size_t n)
{
    memcpy(out->buf + out->len, text, n);
    out->len += n;
}

#define PUT_LITERAL(out, s) put((out), (s), sizeof(s) - 1)

static inline void put_int(out_t *out, int64_t value)
{
    char digits[24];
    int n = 0;
    uint64_t magnitude = value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0)
        out->buf[out->len++] = '-';
    while (n)
        out->buf[out->len++] = digits[--n];
}

/* The length of the valid UTF-8 sequence at `s` (Python's strict decoder: no surrogates, no
 * overlong forms, nothing above U+10FFFF), or 0 when the byte at `s` starts none. */
static inline int utf8_sequence(const uint8_t *s, const uint8_t *end)
{
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (end - s >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (end - s < 3)
            return 0;
        uint8_t lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return (s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (end - s < 4)
            return 0;
        uint8_t lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return (s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80) ? 4 : 0;
    }
    return 0;
}

/* Whether code point `c` is one of the bidi controls (U+061C, U+200E-U+200F, U+202A-U+202E,
 * U+2066-U+2069) that kafka_audit.report.safe_text.escape_text writes as \uNNNN. */
static int is_bidi_control(uint32_t c)
{
    return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

static void put_escape(out_t *out, const char *format_hex, uint32_t c, int digits)
{
    static const char hex[] = "0123456789abcdef";
    out->buf[out->len++] = '\\';
    out->buf[out->len++] = format_hex[0];
    for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4)
        out->buf[out->len++] = hex[(c >> shift) & 15];
}

/* escape_text(bytes.decode("utf-8", errors="surrogateescape")) of kafka_audit.report.safe_text:
 * valid sequences as they are, every byte of an invalid one as \xNN (byte by byte gives Python's
 * text: an error range holds a start byte and continuation bytes, none of which starts a valid
 * sequence on its own); a backslash doubled; C0, DEL and C1 controls as \xNN, bidi controls as
 * \uNNNN; a ':' before ':' and a '#' before "#[" followed by a backslash (no GitHub runner
 * command, "::cmd" or "##[cmd]", can start from data). At most 4 output bytes per input byte. */
static int put_text(out_t *out, const uint8_t *s, Py_ssize_t n)
{
    if (!reserve(out, (size_t)n * 4))
        return 0;
    const uint8_t *end = s + n;
    while (s < end) {
        uint8_t c = *s;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F)
                put_escape(out, "x", c, 2);
            else {
                out->buf[out->len++] = (char)c;
                if (c == '\\' || (c == ':' && s + 1 < end && s[1] == ':')
                    || (c == '#' && s + 2 < end && s[1] == '#' && s[2] == '['))
                    out->buf[out->len++] = '\\';
            }
            s++;
            continue;
        }
        int length = utf8_sequence(s, end);
        uint32_t point = 0;
        if (length == 2)
            point = ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
        else if (length == 3)
            point = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        if (!length)
            put_escape(out, "x", c, 2);
        else if (length == 2 && point <= 0x9F)
            put_escape(out, "x", point, 2);
        else if (length <= 3 && is_bidi_control(point))
            put_escape(out, "u", point, 4);
        else
            put(out, (const char *)s, (size_t)length);
        s += length ? length : 1;
    }
    return 1;
}

static int valid_utf8(const uint8_t *s, Py_ssize_t n)
{
    const uint8_t *end = s + n;
    while (s < end) {
        int length = utf8_sequence(s, end);
        if (!length)
            return 0;
        s += length;
    }
    return 1;
}

/* 1: formatted; 0: not formattable here (the Python path decides); -1: out of memory. */
static int format_records(out_t *out, const uint8_t *data, Py_ssize_t end, int64_t base_offset,
                          int64_t base_timestamp, int has_append_time, int64_t append_time, const char *ts_name,
                          Py_ssize_t ts_name_len, int64_t base_sequence, long long record_count, int print_data)
{
    Py_ssize_t pos = 0;
    int64_t v;
    if (record_count < 0)
        return 0;
    for (long long index = 0; index < record_count; index++) {
        if (!read_varint(data, end, &pos, MAX_VARINT_BYTES, &v) || v <= 0 || v > end - pos)
            return 0;
        Py_ssize_t record_end = pos + (Py_ssize_t)v;
        pos += 1; /* attributes */
        int64_t timestamp_delta, offset_delta, key_size, value_size, header_count;
        if (!read_varint(data, record_end, &pos, MAX_VARLONG_BYTES, &timestamp_delta))
            return 0;
        if (!read_varint(data, record_end, &pos, MAX_VARINT_BYTES, &offset_delta))
            return 0;
        if (!read_varint(data, record_end, &pos, MAX_VARINT_BYTES, &key_size))
            return 0;
        Py_ssize_t key_at = pos;
        if (key_size >= 0) {
            if (key_size > record_end - pos)
                return 0;
            pos += (Py_ssize_t)key_size;
        } else if (key_size != -1) {
            return 0;
        }
        if (!read_varint(data, record_end, &pos, MAX_VARINT_BYTES, &value_size))
            return 0;
        Py_ssize_t value_at = pos;
        if (value_size >= 0) {
            if (value_size > record_end - pos)
                return 0;
            pos += (Py_ssize_t)value_size;
        } else if (value_size != -1) {
            return 0;
        }
        if (!read_varint(data, record_end, &pos, MAX_VARINT_BYTES, &header_count))
            return 0;
        if (header_count && (header_count < 0 || MIN_HEADER_BYTES * header_count > record_end - pos))
            return 0;
        Py_ssize_t headers_at = pos;
        Py_ssize_t header_key_bytes = 0;
        for (int64_t h = 0; h < header_count; h++) {
            if (!read_varint(data, record_end, &pos, MAX_VARINT_BYTES, &v) || v < 0 || v > record_end - pos)
                return 0;
            if (print_data && !valid_utf8(data + pos, (Py_ssize_t)v))
                return 0;
            header_key_bytes += (Py_ssize_t)v + 1;
            pos += (Py_ssize_t)v;
            if (!skip_bytes(data, record_end, &pos, 1))
                return 0; /* header value */
        }
        if (pos != record_end)
            return 0;
        int64_t offset, timestamp;
        if (__builtin_add_overflow(base_offset, offset_delta, &offset))
            return 0;
        if (has_append_time)
            timestamp = append_time;
        else if (__builtin_add_overflow(base_timestamp, timestamp_delta, &timestamp))
            return 0;
        int64_t sequence = base_sequence < 0 ? -1 : base_sequence + index;

        if (!reserve(out, 200 + (size_t)ts_name_len + (size_t)header_key_bytes))
            return -1;
        PUT_LITERAL(out, "| offset: ");
        put_int(out, offset);
        out->buf[out->len++] = ' ';
        put(out, ts_name, (size_t)ts_name_len);
        PUT_LITERAL(out, ": ");
        put_int(out, timestamp);
        PUT_LITERAL(out, " keySize: ");
        put_int(out, key_size);
        PUT_LITERAL(out, " valueSize: ");
        put_int(out, value_size);
        PUT_LITERAL(out, " sequence: ");
        put_int(out, sequence);
        PUT_LITERAL(out, " headerKeys: [");
        if (print_data) {
            Py_ssize_t at = headers_at;
            for (int64_t h = 0; h < header_count; h++) {
                read_varint(data, record_end, &at, MAX_VARINT_BYTES, &v);
                if (h && !reserve(out, 1))
                    return -1;
                if (h)
                    out->buf[out->len++] = ',';
                if (!put_text(out, data + at, (Py_ssize_t)v))
                    return -1;
                at += (Py_ssize_t)v;
                read_varint(data, record_end, &at, MAX_VARINT_BYTES, &v);
                if (v > 0)
                    at += (Py_ssize_t)v;
            }
        }
        /* put_text reserves only its own text: room for what follows a header key */
        if (!reserve(out, 16))
            return -1;
        out->buf[out->len++] = ']';
        if (print_data) {
            PUT_LITERAL(out, " key: ");
            if (key_size < 0)
                PUT_LITERAL(out, "null");
            else if (!put_text(out, data + key_at, (Py_ssize_t)key_size))
                return -1;
            if (!reserve(out, 16))
                return -1;
            PUT_LITERAL(out, " payload: ");
            if (value_size < 0)
                PUT_LITERAL(out, "null");
            else if (!put_text(out, data + value_at, (Py_ssize_t)value_size))
                return -1;
        }
        if (!reserve(out, 8))
            return -1;
        out->buf[out->len++] = '\n';
    }
    return pos == end;
}

static PyObject *record_text(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer buffer;
    long long base_offset, base_timestamp, base_sequence, record_count;
    PyObject *append_obj, *ts_obj;
    int print_data;
    if (!PyArg_ParseTuple(args, "y*LLOULLp", &buffer, &base_offset, &base_timestamp, &append_obj, &ts_obj,
                          &base_sequence, &record_count, &print_data))
        return NULL;
    int has_append_time = append_obj != Py_None;
    long long append_time = 0;
    if (has_append_time) {
        append_time = PyLong_AsLongLong(append_obj);
        if (append_time == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&buffer);
            return NULL;
        }
    }
    Py_ssize_t ts_len;
    const char *ts_name = PyUnicode_AsUTF8AndSize(ts_obj, &ts_len);
    if (ts_name == NULL) {
        PyBuffer_Release(&buffer);
        return NULL;
    }
    out_t out = {NULL, 0, 0};
    int done = format_records(&out, (const uint8_t *)buffer.buf, buffer.len, base_offset, base_timestamp,
                              has_append_time, append_time, ts_name, ts_len, base_sequence, record_count, print_data);
    PyBuffer_Release(&buffer);
    PyObject *result;
    if (done < 0)
        result = PyErr_NoMemory();
    else if (done == 0) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = PyUnicode_DecodeUTF8(out.buf ? out.buf : "", (Py_ssize_t)out.len, "strict");
    }
    PyMem_Free(out.buf);
    return result;
}

static PyMethodDef methods[] = {
    {"record_text", record_text, METH_VARARGS,
     "record_text(data, base_offset, base_timestamp, log_append_time, timestamp_type, base_sequence, "
     "record_count, print_data) -> str | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_record_text", "The compiled record lines of kafka-audit dump.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__record_text(void) { return PyModule_Create(&module); }
