/*
 * The inflating half of _record_screen.c's screen_payload: a v2 batch's LZ4 or zstd payload
 * inflated as kafka_audit/record/lz4_frame.py and zstd_frame.py inflate it on their fast paths (the
 * frame walks of decompress_lz4 and _zstd_frames, then the same library calls, handed in from
 * Python), or not taken on (the quick path then decompresses in Python). A fast path only: it
 * decides nothing the audit reports; why a payload does not decompress is compression.py's to say.
 * Included by _record_screen.c only.
 */
#ifndef KAFKA_AUDIT_PAYLOAD_INFLATE_H
#define KAFKA_AUDIT_PAYLOAD_INFLATE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/* DefaultRecordBatch.RECORDS_OFFSET: where a v2 batch's records begin (record_batch.py; a test holds
 * the two equal through the module's constant). */
#define V2_RECORDS_OFFSET 61

#define XXH_P1 2654435761U
#define XXH_P2 2246822519U
#define XXH_P3 3266489917U
#define XXH_P4 668265263U
#define XXH_P5 374761393U

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

/* XXH32 with seed 0 of fewer than 16 bytes: an LZ4 frame descriptor is at most 14. */
static uint32_t xxh32_short(const uint8_t *p, Py_ssize_t len)
{
    const uint8_t *end = p + len;
    uint32_t h = XXH_P5 + (uint32_t)len;
    for (; p + 4 <= end; p += 4) {
        uint32_t v = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
        h = rotl32(h + v * XXH_P3, 17) * XXH_P4;
    }
    for (; p < end; p++)
        h = rotl32(h + (*p) * XXH_P5, 11) * XXH_P1;
    h ^= h >> 15;
    h *= XXH_P2;
    h ^= h >> 13;
    h *= XXH_P3;
    h ^= h >> 16;
    return h;
}

/* An inflated payload: PyMem memory of ours, or the bytes a library returned. */
typedef struct {
    uint8_t *mem;
    PyObject *owner;
    const uint8_t *data;
    Py_ssize_t len;
} payload_t;

static void payload_free(payload_t *out)
{
    PyMem_Free(out->mem);
    Py_XDECREF(out->owner);
}

/* 1 inflated, 0 not taken on (no exception set), -1 an exception that must propagate. An
 * exception of the library (an Exception subclass) is cleared: the Python path meets it again. */
static int library_failed(void)
{
    if (PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static inline uint32_t u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* lz4_frame.decompress_lz4 for magic v2, up to its independent-block path (_unlz4_independent). */
static int inflate_lz4(const uint8_t *data, Py_ssize_t n, long long max_size, PyObject *block_into, payload_t *out)
{
    static const Py_ssize_t block_sizes[8] = {0, 0, 0, 0, 64 * 1024, 256 * 1024, 1024 * 1024, 4 * 1024 * 1024};
    if (n < 7 || data[0] != 0x04 || data[1] != 0x22 || data[2] != 0x4d || data[3] != 0x18)
        return 0;
    uint8_t flg = data[4], bd = data[5];
    Py_ssize_t block_max = block_sizes[(bd >> 4) & 0x07];
    if (flg >> 6 != 1 || block_max == 0)
        return 0;
    int has_block_checksum = flg & 0x10, has_content_checksum = flg & 0x04;
    Py_ssize_t pos = 6 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0);
    if (pos >= n || data[pos] != ((xxh32_short(data + 4, pos - 4) >> 8) & 0xFF))
        return 0;
    pos += 1;
    Py_ssize_t first = pos, blocks = 0;
    long long bound = 0;
    for (;;) { /* the frame's blocks, bounded before anything is inflated */
        if (pos + 4 > n)
            return 0;
        uint32_t word = u32le(data + pos);
        pos += 4;
        if (word == 0)
            break;
        Py_ssize_t length = (Py_ssize_t)(word & 0x7FFFFFFFU);
        if (length > block_max)
            return 0;
        bound += (word & 0x80000000U) ? length : block_max;
        blocks++;
        pos += length + (has_block_checksum ? 4 : 0);
        if (pos > n)
            return 0;
    }
    if (has_content_checksum || has_block_checksum || bound > max_size || !((flg & 0x20) || blocks == 1))
        return 0; /* the Python path's other branches */
    out->mem = PyMem_Malloc(bound > 0 ? (size_t)bound : 1);
    if (out->mem == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = out->mem;
    for (pos = first;;) {
        uint32_t word = u32le(data + pos);
        pos += 4;
        if (word == 0)
            return 1;
        Py_ssize_t length = (Py_ssize_t)(word & 0x7FFFFFFFU);
        if (word & 0x80000000U) {
            memcpy(out->mem + out->len, data + pos, (size_t)length);
            out->len += length;
        } else {
            PyObject *in = PyMemoryView_FromMemory((char *)data + pos, length, PyBUF_READ);
            PyObject *to = in ? PyMemoryView_FromMemory((char *)out->mem + out->len, block_max, PyBUF_WRITE) : NULL;
            PyObject *size = to ? PyObject_CallFunctionObjArgs(block_into, in, to, NULL) : NULL;
            Py_XDECREF(in);
            Py_XDECREF(to);
            if (size == NULL)
                return library_failed();
            Py_ssize_t got = PyLong_Check(size) ? PyLong_AsSsize_t(size) : -1;
            Py_DECREF(size);
            if (got < 0 || got > block_max) {
                PyErr_Clear();
                return 0;
            }
            out->len += got;
        }
        pos += length;
    }
}

/* zstd_frame._zstd_frames: plain zstd frames back to back, each with the most it can inflate to. */
#define MAX_ZSTD_FRAMES 64
static Py_ssize_t zstd_frames(const uint8_t *data, Py_ssize_t end, Py_ssize_t *starts, Py_ssize_t *ends, long long *bound)
{
    static const int dict_id_bytes[4] = {0, 1, 2, 4}, content_size_bytes[4] = {0, 2, 4, 8};
    Py_ssize_t pos = 0, count = 0;
    *bound = 0;
    while (pos < end) {
        if (count == MAX_ZSTD_FRAMES || pos + 5 > end || data[pos] != 0x28 || data[pos + 1] != 0xb5
            || data[pos + 2] != 0x2f || data[pos + 3] != 0xfd)
            return 0;
        starts[count] = pos;
        uint8_t descriptor = data[pos + 4];
        if (descriptor & 0x08)
            return 0;
        int single_segment = descriptor & 0x20;
        int size_bytes = content_size_bytes[descriptor >> 6];
        if (size_bytes == 0 && single_segment)
            size_bytes = 1;
        pos += 5 + (single_segment ? 0 : 1) + dict_id_bytes[descriptor & 0x03] + size_bytes;
        for (;;) {
            if (pos + 3 > end)
                return 0;
            uint32_t header = (uint32_t)data[pos] | ((uint32_t)data[pos + 1] << 8) | ((uint32_t)data[pos + 2] << 16);
            uint32_t type = (header >> 1) & 0x03, size = header >> 3;
            pos += 3;
            if (type == 0) {
                *bound += size;
                pos += size;
            } else if (type == 1) {
                *bound += size;
                pos += 1;
            } else if (type == 2) {
                *bound += 128 * 1024;
                pos += size;
            } else {
                return 0;
            }
            if (header & 0x01)
                break;
        }
        if (descriptor & 0x04)
            pos += 4;
        if (pos > end)
            return 0;
        ends[count++] = pos;
    }
    return count;
}

static PyObject *zstd_key; /* the per-thread decompressor's key in the thread state dict */
/* Attribute and method names, interned once at import. */
enum { S_POSITION, S_SIZE, S_ATTRIBUTES, S_BASE_TIMESTAMP, S_RECORD_COUNT, S_REQUIRE_KEY, S_MIN_TIMESTAMP,
       S_MAX_TIMESTAMP, S_DECOMPRESSOBJ, S_DECOMPRESS, S_EOF, S_UNUSED_DATA, S_COUNT };
static const char *const name_text[S_COUNT] = {"position", "size", "attributes", "base_timestamp", "record_count",
    "require_key", "min_timestamp", "max_timestamp", "decompressobj", "decompress", "eof", "unused_data"};
static PyObject *names[S_COUNT];

/* At a module's import: intern zstd_key and the names. -1 with an exception set on failure. */
static int intern_names(void)
{
    zstd_key = PyUnicode_InternFromString("kafka_audit.record._record_screen.zstd_decompressor");
    if (zstd_key == NULL)
        return -1;
    for (int i = 0; i < S_COUNT; i++) {
        names[i] = PyUnicode_InternFromString(name_text[i]);
        if (names[i] == NULL)
            return -1;
    }
    return 0;
}

/* zstd_frame._unzstd_whole: each frame inflated in one decompressobj() call. */
static int inflate_zstd(const uint8_t *data, Py_ssize_t n, long long max_size, PyObject *factory, payload_t *out)
{
    Py_ssize_t starts[MAX_ZSTD_FRAMES], ends[MAX_ZSTD_FRAMES];
    long long bound;
    Py_ssize_t count = zstd_frames(data, n, starts, ends, &bound);
    if (count == 0 || bound > max_size)
        return 0;
    PyObject *state = PyThreadState_GetDict();
    if (state == NULL)
        return 0;
    PyObject *decompressor = PyDict_GetItemWithError(state, zstd_key);
    if (decompressor == NULL) {
        if (PyErr_Occurred())
            return -1;
        decompressor = PyObject_CallNoArgs(factory);
        if (decompressor == NULL)
            return library_failed();
        int stored = PyDict_SetItem(state, zstd_key, decompressor);
        Py_DECREF(decompressor);
        if (stored < 0)
            return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *inflater = PyObject_CallMethodObjArgs(decompressor, names[S_DECOMPRESSOBJ], NULL);
        if (inflater == NULL)
            return library_failed();
        PyObject *in = PyMemoryView_FromMemory((char *)data + starts[i], ends[i] - starts[i], PyBUF_READ);
        PyObject *part = in ? PyObject_CallMethodObjArgs(inflater, names[S_DECOMPRESS], in, NULL) : NULL;
        Py_XDECREF(in);
        PyObject *eof = part ? PyObject_GetAttr(inflater, names[S_EOF]) : NULL;
        PyObject *unused = eof ? PyObject_GetAttr(inflater, names[S_UNUSED_DATA]) : NULL;
        Py_DECREF(inflater);
        int whole = unused && PyBytes_Check(part) && eof == Py_True && PyBytes_Check(unused) && PyBytes_Size(unused) == 0;
        Py_XDECREF(eof);
        Py_XDECREF(unused);
        if (unused == NULL) {
            Py_XDECREF(part);
            return library_failed();
        }
        if (!whole) {
            Py_DECREF(part);
            return 0;
        }
        Py_ssize_t size = PyBytes_Size(part);
        if (count == 1) {
            out->owner = part;
            out->data = (const uint8_t *)PyBytes_AsString(part);
            out->len = size;
        } else {
            uint8_t *grown = PyMem_Realloc(out->mem, (size_t)(out->len + size + 1));
            if (grown == NULL) {
                Py_DECREF(part);
                PyErr_NoMemory();
                return -1;
            }
            out->mem = grown;
            memcpy(out->mem + out->len, PyBytes_AsString(part), (size_t)size);
            out->len += size;
            out->data = out->mem;
            Py_DECREF(part);
        }
    }
    return out->len <= max_size ? 1 : 0;
}

#endif
