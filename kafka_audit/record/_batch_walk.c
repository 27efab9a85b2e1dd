/*
 * The segment step's batch walk, compiled (issue 34): a run of magic v2 batches with nothing to
 * report, walked and summarised in one call, as columns. It only ever decides "nothing to report":
 * it stops at the first batch it does not take, and the Python walk (file_records.iter_batches,
 * SegmentAuditor._quick_summary / _audit_batch, the one implementation of the rules) reads that
 * batch. kafka_audit/record/batch_walk.py is its Python side, tests/test_batch_walk.py holds the
 * two walks equal.
 *
 * walk(buf, start, stop, limit, max_batch_bytes, max_inflated, create_screen, append_screen,
 *      lz4_block_into, zstd_factory) -> (columns: bytes, count: int, position: int, want: int)
 *
 * From `start`, batch after batch while a batch begins before `stop` and ends within
 * buf[:limit], it takes a batch when (FileLogInputStream.nextBatch, DefaultRecordBatch,
 * LogValidator.validateBatch, UnifiedLog.append):
 *   - magic 2, a size of at least the v2 header, the batch (log overhead included) at most
 *     max_batch_bytes (max.message.bytes, segment.bytes and the streaming bound, the least);
 *   - its CRC-32C (attributes to the end) equals the stored CRC;
 *   - the record count equals lastOffsetDelta + 1 and is positive, base offset + lastOffsetDelta
 *     fits a long; a data batch with a producer id >= 0 has a base sequence >= 0; a control batch
 *     is transactional, of one record, with a producer id >= 0, and its record a well-formed
 *     ABORT or COMMIT marker (the others take the Python walk);
 *   - its payload is uncompressed, LZ4 or zstd, inflates within max_inflated as
 *     _payload_inflate.h inflates it, and its records pass the record screen (_screen_records.h)
 *     of its timestamp type (create_screen / append_screen: RecordScreen objects).
 * It returns the columns of the batches taken (COLUMNS below, struct of arrays, in one bytes
 * object), how many, the position it stopped at, and `want`: where the batch at `position` ends
 * (or its header, when that is cut by `limit`) when only `limit` kept it from being judged;
 * `position` itself when the run is full (MAX_ROWS batches: call again from there); else 0 (the
 * batch at `position` is not taken, or `position` reached `stop`). Every length read is bounded
 * by `limit`, itself bounded by the buffer's length.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_record_grammar.h"
#include "_payload_inflate.h"
#include "_screen_records.h"

#define LOG_OVERHEAD 12
#define V2_ATTRIBUTES_OFFSET 21
#define CONTROL_FLAG 0x20
#define TRANSACTIONAL_FLAG 0x10
#define TIMESTAMP_TYPE_FLAG 0x08
#define MAX_ROWS 65536

/* ---- CRC-32C (Castagnoli), as the crc32c package computes it ---- */

static uint32_t crc_table[8][256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78U : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++)
            crc_table[t][n] = (crc_table[t - 1][n] >> 8) ^ crc_table[0][crc_table[t - 1][n] & 0xFF];
}

static uint32_t crc32c_soft(const uint8_t *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFU;
    for (; n >= 8; n -= 8, p += 8) {
        c ^= (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        c = crc_table[7][c & 0xFF] ^ crc_table[6][(c >> 8) & 0xFF] ^ crc_table[5][(c >> 16) & 0xFF]
            ^ crc_table[4][c >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]]
            ^ crc_table[0][p[7]];
    }
    for (; n > 0; n--, p++)
        c = crc_table[0][(c ^ *p) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFU;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(const uint8_t *p, Py_ssize_t n)
{
    uint64_t c = 0xFFFFFFFFU;
    for (; n >= 8; n -= 8, p += 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n > 0; n--, p++)
        c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32 ^ 0xFFFFFFFFU;
}
static int have_sse42;
#define CRC32C(p, n) (have_sse42 ? crc32c_sse42((p), (n)) : crc32c_soft((p), (n)))
#define CRC_DETECT() (__builtin_cpu_init(), have_sse42 = __builtin_cpu_supports("sse4.2"))
#else
#define CRC32C(p, n) crc32c_soft((p), (n))
#define CRC_DETECT() ((void)0)
#endif

/* ---- the columns: names as BatchSummary's fields, widths descending (each column aligned) ---- */

enum { C_POSITION, C_BASE_OFFSET, C_LAST_OFFSET, C_PRODUCER_ID, C_MAX_TIMESTAMP, C_CRC, C_SIZE,
       C_BASE_SEQUENCE, C_LAST_SEQUENCE, C_RECORD_COUNT, C_COORDINATOR_EPOCH, C_PARTITION_LEADER_EPOCH,
       C_PRODUCER_EPOCH, C_CONTROL_TYPE,
       C_MAGIC, C_VALID, C_IS_TRANSACTIONAL, C_IS_CONTROL, C_CRC_VALID, C_COMPRESSION, C_COUNT };
static const char *const column_name[C_COUNT] = {
    "position", "base_offset", "last_offset", "producer_id", "max_timestamp", "crc", "size",
    "base_sequence", "last_sequence", "record_count", "coordinator_epoch", "partition_leader_epoch",
    "producer_epoch", "control_type",
    "magic", "valid", "is_transactional", "is_control", "crc_valid", "compression"};
static const char column_type[C_COUNT + 1] = "qqqqqqqiiiiihhbbbbbb";
static int column_width(int c) { return c < C_BASE_SEQUENCE ? 8 : c < C_PRODUCER_EPOCH ? 4 : c < C_MAGIC ? 2 : 1; }

/* One batch's row, before it is written into the columns. */
typedef struct {
    int64_t v[C_COUNT];
} row_t;

static void put(uint8_t *columns, Py_ssize_t capacity, Py_ssize_t *offsets, Py_ssize_t index, const row_t *row)
{
    for (int c = 0; c < C_COUNT; c++) {
        uint8_t *at = columns + offsets[c] * capacity + index * column_width(c);
        int64_t v = row->v[c];
        int32_t v32 = (int32_t)v;
        int16_t v16 = (int16_t)v;
        int8_t v8 = (int8_t)v;
        switch (column_width(c)) {
        case 8: memcpy(at, &v, 8); break;
        case 4: memcpy(at, &v32, 4); break;
        case 2: memcpy(at, &v16, 2); break;
        default: memcpy(at, &v8, 1); break;
        }
    }
}

static inline int64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}
static inline int32_t be32(const uint8_t *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}
static inline int16_t be16(const uint8_t *p) { return (int16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]); }

/* A RecordScreen object's three fields. */
typedef struct {
    int require_key, has_low, has_high;
    wide low, high;
} screen_t;

static int read_screen(PyObject *obj, screen_t *s)
{
    PyObject *require = PyObject_GetAttr(obj, names[S_REQUIRE_KEY]);
    PyObject *low = require ? PyObject_GetAttr(obj, names[S_MIN_TIMESTAMP]) : NULL;
    PyObject *high = low ? PyObject_GetAttr(obj, names[S_MAX_TIMESTAMP]) : NULL;
    s->require_key = high ? PyObject_IsTrue(require) : -1;
    int ok = s->require_key >= 0 && read_bound(low, &s->has_low, &s->low) && read_bound(high, &s->has_high, &s->high);
    Py_XDECREF(require);
    Py_XDECREF(low);
    Py_XDECREF(high);
    return ok;
}

/* DefaultRecordBatch.lastSequence: base sequence + lastOffsetDelta, wrapping at 2^31-1. */
static int64_t last_sequence(int64_t base_sequence, int64_t delta)
{
    if (base_sequence == -1)
        return -1;
    if (base_sequence > 0x7FFFFFFFLL - delta)
        return delta - (0x7FFFFFFFLL - base_sequence) - 1;
    return base_sequence + delta;
}

/* The one record of a screened control batch, when it is a well-formed transaction marker
 * (control_record.parse_control_key_value): a key of version 0 and type ABORT (0) or COMMIT (1)
 * (ControlRecordType), a value of EndTransactionMarker version >= 0; extra bytes are ignored, as
 * Kafka ignores them. Anything else is the Python walk's to judge. */
static int transaction_marker(const uint8_t *data, Py_ssize_t end, int64_t *type, int64_t *coordinator_epoch)
{
    Py_ssize_t pos = 0;
    int64_t v = 0, key_size, value_size;
    read_varint(data, end, &pos, MAX_VARINT_BYTES, &v); /* length, attributes: the screen held them */
    pos += 1;
    read_varint(data, end, &pos, MAX_VARLONG_BYTES, &v);
    read_varint(data, end, &pos, MAX_VARINT_BYTES, &v);
    if (!read_varint(data, end, &pos, MAX_VARINT_BYTES, &key_size) || key_size < 4 || key_size > end - pos)
        return 0;
    const uint8_t *key = data + pos;
    pos += (Py_ssize_t)key_size;
    if (!read_varint(data, end, &pos, MAX_VARINT_BYTES, &value_size) || value_size < 6 || value_size > end - pos)
        return 0;
    const uint8_t *value = data + pos;
    if (be16(key) != 0 || be16(key + 2) < 0 || be16(key + 2) > 1 || be16(value) < 0)
        return 0;
    *type = be16(key + 2);
    *coordinator_epoch = be32(value + 2);
    return 1;
}

typedef struct {
    const uint8_t *buf;
    Py_ssize_t stop, limit, max_batch, max_inflated;
    screen_t screens[2];
    PyObject *lz4_block_into, *zstd_factory;
} walk_t;

/* 1: the batch at `pos` is taken (its row filled, *next past it); 0: not taken (*want set when
 * only the limit kept it); -1: an exception to propagate. */
static int take_batch(const walk_t *w, Py_ssize_t pos, row_t *row, Py_ssize_t *next, Py_ssize_t *want)
{
    const uint8_t *p = w->buf + pos;
    Py_ssize_t left = w->limit - pos;
    if (left < V2_RECORDS_OFFSET) {
        *want = pos + V2_RECORDS_OFFSET;
        return 0;
    }
    int64_t size = be32(p + 8);
    if (p[16] != 2 || size < V2_RECORDS_OFFSET - LOG_OVERHEAD || size + LOG_OVERHEAD > w->max_batch)
        return 0;
    Py_ssize_t entry = (Py_ssize_t)size + LOG_OVERHEAD;
    if (entry > left) {
        *want = pos + entry;
        return 0;
    }
    uint32_t stored_crc = (uint32_t)be32(p + 17);
    int attributes = (uint16_t)be16(p + 21);
    int64_t base_offset = be64(p), delta = be32(p + 23), count = be32(p + 57);
    int64_t producer_id = be64(p + 43), base_sequence = be32(p + 53), last_offset;
    int codec = attributes & 0x07, control = (attributes & CONTROL_FLAG) != 0;
    if (count != delta + 1 || count <= 0 || __builtin_add_overflow(base_offset, delta, &last_offset)
        || !(codec == 0 || codec == 3 || codec == 4))
        return 0;
    /* LogValidator.validateBatch's origin rules: a control batch is the broker's when
     * transactional (taken only as one marker of a producer); a producer id needs a sequence. */
    if (control ? !(attributes & TRANSACTIONAL_FLAG) || count != 1 || producer_id < 0
                : producer_id >= 0 && base_sequence < 0)
        return 0;
    if (CRC32C(p + V2_ATTRIBUTES_OFFSET, entry - V2_ATTRIBUTES_OFFSET) != stored_crc)
        return 0;
    int64_t base_timestamp = be64(p + 27);
    const uint8_t *payload = p + V2_RECORDS_OFFSET;
    Py_ssize_t payload_len = entry - V2_RECORDS_OFFSET;
    payload_t out = {NULL, NULL, NULL, 0};
    int inflated = 1;
    if (codec == 0) {
        out.data = payload;
        out.len = payload_len;
    } else if (codec == 3) {
        inflated = inflate_lz4(payload, payload_len, w->max_inflated, w->lz4_block_into, &out);
    } else {
        inflated = inflate_zstd(payload, payload_len, w->max_inflated, w->zstd_factory, &out);
    }
    /* A control record is no compacted topic's record: no key rule (control_record_screen). */
    const screen_t *s = &w->screens[(attributes & TIMESTAMP_TYPE_FLAG) ? 1 : 0];
    int passed = inflated == 1
        && screen(out.data, out.len, base_timestamp, count, s->require_key && !control, s->has_low, s->low,
                  s->has_high, s->high);
    int64_t control_type = -1, coordinator_epoch = -1;
    if (passed && control)
        passed = transaction_marker(out.data, out.len, &control_type, &coordinator_epoch);
    payload_free(&out);
    if (inflated < 0)
        return -1;
    if (!passed)
        return 0;
    int64_t *v = row->v;
    v[C_POSITION] = pos;
    v[C_BASE_OFFSET] = base_offset;
    v[C_LAST_OFFSET] = last_offset;
    v[C_PRODUCER_ID] = producer_id;
    v[C_MAX_TIMESTAMP] = be64(p + 35);
    v[C_CRC] = stored_crc;
    v[C_BASE_SEQUENCE] = base_sequence;
    v[C_LAST_SEQUENCE] = last_sequence(base_sequence, delta);
    v[C_RECORD_COUNT] = count;
    v[C_SIZE] = entry;
    v[C_COORDINATOR_EPOCH] = coordinator_epoch;
    v[C_PARTITION_LEADER_EPOCH] = be32(p + 12);
    v[C_PRODUCER_EPOCH] = be16(p + 51);
    v[C_CONTROL_TYPE] = control_type;
    v[C_MAGIC] = 2;
    v[C_VALID] = 1;
    v[C_IS_TRANSACTIONAL] = (attributes & TRANSACTIONAL_FLAG) != 0;
    v[C_IS_CONTROL] = control;
    v[C_CRC_VALID] = 1;
    v[C_COMPRESSION] = codec;
    *next = pos + entry;
    return 1;
}

static PyObject *walk(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "walk(buf, start, stop, limit, max_batch_bytes, max_inflated, create_screen, "
                                         "append_screen, lz4_block_into, zstd_factory)");
        return NULL;
    }
    walk_t w;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    w.stop = PyLong_AsSsize_t(args[2]);
    w.limit = PyLong_AsSsize_t(args[3]);
    w.max_batch = PyLong_AsSsize_t(args[4]);
    w.max_inflated = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred() || !read_screen(args[6], &w.screens[0]) || !read_screen(args[7], &w.screens[1]))
        return NULL;
    w.lz4_block_into = args[8];
    w.zstd_factory = args[9];
    Py_buffer buffer;
    if (PyObject_GetBuffer(args[0], &buffer, PyBUF_SIMPLE) < 0)
        return NULL;
    w.buf = (const uint8_t *)buffer.buf;
    if (w.limit > buffer.len)
        w.limit = buffer.len;
    if (start < 0)
        start = w.limit;
    /* Every batch taken fills at least a v2 header of [start, limit): no more rows than that, and
     * at most MAX_ROWS in one run (its columns at most a few MB whatever the buffer). */
    Py_ssize_t capacity = start < w.limit ? (w.limit - start) / V2_RECORDS_OFFSET + 1 : 1;
    if (capacity > MAX_ROWS)
        capacity = MAX_ROWS;
    Py_ssize_t offsets[C_COUNT], row_bytes = 0;
    for (int c = 0; c < C_COUNT; c++) {
        offsets[c] = row_bytes;
        row_bytes += column_width(c);
    }
    uint8_t *columns = PyMem_Malloc((size_t)(capacity * row_bytes));
    PyObject *result = NULL;
    if (columns == NULL) {
        PyBuffer_Release(&buffer);
        return PyErr_NoMemory();
    }
    Py_ssize_t pos = start, count = 0, want = 0;
    row_t row;
    int taken = 0;
    while (pos < w.stop) {
        if (count == capacity) {
            want = pos; /* full: walk on from here in another run */
            break;
        }
        Py_ssize_t next = pos;
        taken = take_batch(&w, pos, &row, &next, &want);
        if (taken != 1)
            break;
        put(columns, capacity, offsets, count++, &row);
        pos = next;
    }
    if (taken >= 0) {
        PyObject *data = PyBytes_FromStringAndSize(NULL, count * row_bytes);
        if (data != NULL) {
            uint8_t *to = (uint8_t *)PyBytes_AsString(data);
            for (int c = 0; c < C_COUNT; c++)
                memcpy(to + offsets[c] * count, columns + offsets[c] * capacity, (size_t)(count * column_width(c)));
            result = Py_BuildValue("(Nnnn)", data, count, pos, want);
        }
    }
    PyMem_Free(columns);
    PyBuffer_Release(&buffer);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL,
     "walk(buf, start, stop, limit, max_batch_bytes, max_inflated, create_screen, append_screen, lz4_block_into, "
     "zstd_factory) -> (columns, count, position, want)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_batch_walk", "The compiled batch walk.", -1, methods, NULL, NULL, NULL, NULL,
};

/* COLUMNS: ((name, array typecode), ...) in the order and widths of the columns bytes. */
PyMODINIT_FUNC PyInit__batch_walk(void)
{
    crc_init();
    CRC_DETECT();
    if (intern_names() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    PyObject *columns = m ? PyTuple_New(C_COUNT) : NULL;
    if (columns == NULL) {
        Py_XDECREF(m);
        return NULL;
    }
    for (int c = 0; c < C_COUNT; c++) {
        PyObject *pair = Py_BuildValue("(sC)", column_name[c], column_type[c]);
        if (pair == NULL) {
            Py_DECREF(columns);
            Py_DECREF(m);
            return NULL;
        }
        if (PyTuple_SetItem(columns, c, pair) < 0) {
            Py_DECREF(columns);
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddObject(m, "COLUMNS", columns) < 0 || PyModule_AddIntMacro(m, V2_RECORDS_OFFSET) < 0) {
        Py_DECREF(columns);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
