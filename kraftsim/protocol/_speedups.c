/*
 * kraftsim.protocol._speedups: the C fast path of kraftsim's protocol layer.
 *
 * What is here
 *   - CRC-32C (SSE4.2 instruction when the CPU has it, slicing-by-8 tables otherwise);
 *   - v2 record parsing (the records section of a batch);
 *   - an interpreter for "programs": flat descriptions of one (struct, version) of the
 *     compact message encoding, compiled on the Python side by fastpath.py from the same
 *     schemas the pure-Python codec (codec.py) compiles from;
 *   - batched entry points for the hot paths: decode every data batch of a buffer
 *     (split + CRC + records + framing + message) and encode a whole data batch.
 *
 * The contract with the Python side is "same answer or no answer": whenever the input is
 * anything but the common, valid case (a malformed byte, a header, a value that needs
 * more than 64 bits, an object of an unexpected type, ...), the C code gives up (raises
 * the private `Fallback`, returns None or stops at a position) and fastpath.py re-runs the
 * pure-Python code, which then produces the exact value or the exact error. The C code
 * therefore never composes an error message of its own.
 *
 * Plain CPython C API, no dependencies. Module state is process-global (single-phase
 * init): this module is not meant for sub-interpreters.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define KS_X86_CRC 1
#endif

/* ------------------------------------------------------------------------ type codes */

enum {
    K_BOOL = 1, K_INT8, K_INT16, K_INT32, K_INT64, K_UINT16, K_UINT32, K_FLOAT64,
    K_UUID, K_STRING, K_BYTES, K_STRUCT, K_MAX
};

static const int FIXED_SIZE[K_MAX] = {0, 1, 1, 2, 4, 8, 2, 4, 8, 16, 0, 0, 0};

#define IS_FIXED(t) ((t) >= K_BOOL && (t) <= K_FLOAT64)

/* ------------------------------------------------------------------------ globals */

static PyObject *Fallback = NULL;          /* _speedups.Fallback */
static PyTypeObject *UuidType = NULL;      /* kraftsim.protocol.primitives.Uuid */
static int uuid_direct = 0;                /* build Uuids by tp_alloc + memcpy */
static PyTypeObject *RecordNT = NULL;      /* batch.Record */
static PyTypeObject *LogEntryNT = NULL;    /* entries.LogEntry */
static PyTypeObject *PayloadNT = NULL;     /* entries.Payload */
static PyTypeObject *MetadataRecordNT = NULL; /* framing.MetadataRecord */
static PyTypeObject *PrebuiltNT = NULL;    /* entries.PrebuiltPartition */
static int record_direct = 0, logentry_direct = 0, mdrecord_direct = 0, prebuilt_direct = 0;
static int g_enabled = 1;
/* Untrack (from the cycle collector) the lists the decoder builds inside messages and the
 * LogEntry / Record tuples. Their items are ints, strings, bytes, Uuids, record types and
 * gc=False message Structs, so they cannot be part of a cycle unless user code later puts
 * one there (which then leaks instead of being collected: the same trade-off msgspec's
 * gc=False already makes for the messages). Without this, the collector's passes over
 * millions of young lists cost more than decoding them. configure(untrack=False) turns
 * it off. */
static int g_untrack = 1;
/* Ask the kernel for the pages of large fresh memory in one call (see populate_for_write
 * and arena_hook_install); configure(populate=False) turns it off. */
static int g_populate = 1;
static PyObject *str_record_type = NULL, *str_version = NULL, *str_message = NULL, *str_fast_attr = NULL;

#define UUID_CACHE_SIZE 256
static PyObject *uuid_cache[UUID_CACHE_SIZE];

/* Raise the private signal that means "let the pure-Python path do this". */
static inline void *fallback_null(void) {
    PyErr_SetNone(Fallback);
    return NULL;
}
static inline int fallback_int(void) {
    PyErr_SetNone(Fallback);
    return -1;
}

/* The error of a call made before configure() gave the classes to build; releases view. */
static PyObject *not_configured(Py_buffer *view) {
    PyBuffer_Release(view);
    PyErr_SetString(PyExc_RuntimeError, "_speedups.configure() was not called");
    return NULL;
}

/* An error that must not be swallowed by a fallback (interrupts, exits, memory). */
static int error_is_fatal(void) {
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return 1;
    if (PyErr_ExceptionMatches(PyExc_MemoryError))
        return 1;
    return 0;
}

/* The decoders run no Python code and create no cyclic garbage (what they build is
 * untracked or referenced from the result), so the cycle collector is paused for the
 * duration of one call: its passes would only find nothing. */
static inline int gc_pause(void) { return PyGC_Disable(); }
static inline void gc_resume(int was_enabled) {
    if (was_enabled)
        PyGC_Enable();
}

/* While a large decode runs, the arenas Python's small-object allocator maps for the
 * objects it builds are filled completely and at once, so each new arena's pages are
 * requested from the kernel in one call (MADV_POPULATE_WRITE, Linux 5.14+) instead of
 * one page fault per page: the same pages, fewer kernel entries, and the decoder is not
 * interrupted. The allocator's own functions still map and unmap every arena; this only
 * adds the populate call, between arena_hook_install() and arena_hook_remove(). (Should
 * another thread allocate in that window, its new arenas are populated too: harmless.) */
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
static PyObjectArenaAllocator arena_orig;
static int arena_hooked = 0;

static void *arena_alloc_populated(void *ctx, size_t size) {
    void *p = arena_orig.alloc(arena_orig.ctx, size);
    if (p)
        (void)madvise(p, size, MADV_POPULATE_WRITE);
    return p;
}

static void arena_free_orig(void *ctx, void *ptr, size_t size) { arena_orig.free(arena_orig.ctx, ptr, size); }

static int arena_hook_install(void) {
    if (arena_hooked || !g_populate)
        return 0;
    PyObject_GetArenaAllocator(&arena_orig);
    PyObjectArenaAllocator hook = {NULL, arena_alloc_populated, arena_free_orig};
    PyObject_SetArenaAllocator(&hook);
    arena_hooked = 1;
    return 1;
}

static void arena_hook_remove(int installed) {
    if (installed && arena_hooked) {
        PyObject_SetArenaAllocator(&arena_orig);
        arena_hooked = 0;
    }
}
#else
static int arena_hook_install(void) { return 0; }
static void arena_hook_remove(int installed) { (void)installed; }
#endif

/* Freed arenas kept for reuse. Python's small-object allocator returns an arena to the
 * kernel as soon as it is empty (keeping one), so a loop that decodes a batch of tens of
 * thousands of records and then drops them maps, faults in (and has the kernel zero) and
 * unmaps tens of MiB per batch: on a 1M-record snapshot that system time was as large as
 * the decoding itself. With configure(arena_cache=N) up to N freed arenas are kept mapped
 * and handed back on the next request of the same size, as a JVM keeps its heap. The
 * cost is at most N arenas of resident memory that Python has freed; 0 (the default)
 * gives every one back at once and restores the allocator found at the first install. */
#define ARENA_CACHE_LIMIT 1024
static PyObjectArenaAllocator arena_base;
static int arena_cache_on = 0;
static int arena_cache_max = 0, arena_cache_n = 0;
static void *arena_cache_ptr[ARENA_CACHE_LIMIT];
static size_t arena_cache_size[ARENA_CACHE_LIMIT];

static void *arena_cached_alloc(void *ctx, size_t size) {
    (void)ctx;
    for (int i = arena_cache_n - 1; i >= 0; i--) {
        if (arena_cache_size[i] == size) {
            void *p = arena_cache_ptr[i];
            arena_cache_n--;
            arena_cache_ptr[i] = arena_cache_ptr[arena_cache_n];
            arena_cache_size[i] = arena_cache_size[arena_cache_n];
            return p;
        }
    }
    return arena_base.alloc(arena_base.ctx, size);
}

static void arena_cached_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    if (arena_cache_n < arena_cache_max) {
        arena_cache_ptr[arena_cache_n] = ptr;
        arena_cache_size[arena_cache_n] = size;
        arena_cache_n++;
        return;
    }
    arena_base.free(arena_base.ctx, ptr, size);
}

/* Keep up to n freed arenas (0: none, and the original allocator back when it is still
 * the one in place). Called with the GIL held, outside any decode call. */
static void arena_cache_set(int n) {
    if (n < 0)
        n = 0;
    if (n > ARENA_CACHE_LIMIT)
        n = ARENA_CACHE_LIMIT;
    arena_cache_max = n;
    if (n > 0 && !arena_cache_on) {
        PyObject_GetArenaAllocator(&arena_base);
        PyObjectArenaAllocator mine = {NULL, arena_cached_alloc, arena_cached_free};
        PyObject_SetArenaAllocator(&mine);
        arena_cache_on = 1;
    }
    while (arena_cache_n > n) {
        arena_cache_n--;
        arena_base.free(arena_base.ctx, arena_cache_ptr[arena_cache_n], arena_cache_size[arena_cache_n]);
    }
    if (n == 0 && arena_cache_on) {
        PyObjectArenaAllocator now;
        PyObject_GetArenaAllocator(&now);
        if (now.alloc == arena_cached_alloc) { /* nobody installed another on top: step out */
            PyObject_SetArenaAllocator(&arena_base);
            arena_cache_on = 0;
        }
    }
}

/* ------------------------------------------------------------------------ CRC-32C */

static uint32_t crc_table[8][256];
static int crc_hw = 0;
static void crc_combine_init(void);

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xff];
    crc_combine_init();
#ifdef KS_X86_CRC
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#endif
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n) {
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = ((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24)) ^ crc;
        uint32_t hi = (uint32_t)p[4] | ((uint32_t)p[5] << 8) | ((uint32_t)p[6] << 16) | ((uint32_t)p[7] << 24);
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
              crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}

/* GF(2) arithmetic modulo the (reflected) CRC-32C polynomial, to combine the CRC
 * states of independent streams: state(S, A || B) = shift(state(S, A), |B|) ^ state(0, B),
 * where shifting by n bytes multiplies by x^(8n) mod P. */
static uint32_t multmodp(uint32_t a, uint32_t b) {
    uint32_t m = (uint32_t)1 << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
    }
    return p;
}

static uint32_t xpow8n(size_t n) { /* x^(8n) mod P */
    uint32_t x2k[32], p = (uint32_t)1 << 31; /* x^0 */
    x2k[0] = (uint32_t)1 << 30;                /* x^1 */
    for (int k = 1; k < 32; k++)
        x2k[k] = multmodp(x2k[k - 1], x2k[k - 1]);
    unsigned k = 3; /* n bytes = n * 2^3 bits */
    while (n) {
        if (n & 1)
            p = multmodp(x2k[k & 31], p);
        n >>= 1;
        k++;
    }
    return p;
}

#define CRC_LONG 8192
#define CRC_SHORT 256
static uint32_t crc_shift_long[2][4][256], crc_shift_short[2][4][256];

static void crc_shift_init(uint32_t tab[4][256], uint32_t k) {
    for (int j = 0; j < 4; j++)
        for (uint32_t i = 0; i < 256; i++)
            tab[j][i] = multmodp(k, i << (8 * j));
}

static inline uint32_t crc_shift(uint32_t tab[4][256], uint32_t c) {
    return tab[0][c & 0xff] ^ tab[1][(c >> 8) & 0xff] ^ tab[2][(c >> 16) & 0xff] ^ tab[3][c >> 24];
}

static void crc_combine_init(void) {
    crc_shift_init(crc_shift_long[0], xpow8n(CRC_LONG));
    crc_shift_init(crc_shift_long[1], xpow8n(2 * CRC_LONG));
    crc_shift_init(crc_shift_short[0], xpow8n(CRC_SHORT));
    crc_shift_init(crc_shift_short[1], xpow8n(2 * CRC_SHORT));
}

#ifdef KS_X86_CRC
/* Three independent crc32q streams hide the instruction's latency (3 cycles, 1 per
 * cycle throughput); their states are combined with the shift tables above. */
#define CRC_3WAY(BLK, TAB)                                                                  \
    while (n >= 3 * (BLK)) {                                                                \
        uint64_t c1 = 0, c2 = 0;                                                            \
        for (size_t i = 0; i < (BLK); i += 8) {                                             \
            uint64_t wa, wb, wc;                                                            \
            memcpy(&wa, p + i, 8);                                                          \
            memcpy(&wb, p + (BLK) + i, 8);                                                  \
            memcpy(&wc, p + 2 * (BLK) + i, 8);                                              \
            c = _mm_crc32_u64(c, wa);                                                       \
            c1 = _mm_crc32_u64(c1, wb);                                                     \
            c2 = _mm_crc32_u64(c2, wc);                                                     \
        }                                                                                   \
        c = crc_shift(TAB[1], (uint32_t)c) ^ crc_shift(TAB[0], (uint32_t)c1) ^ (uint32_t)c2; \
        p += 3 * (BLK);                                                                     \
        n -= 3 * (BLK);                                                                     \
    }

__attribute__((target("sse4.2")))
static uint32_t crc_x86(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = (uint32_t)~crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    CRC_3WAY(CRC_LONG, crc_shift_long)
    CRC_3WAY(CRC_SHORT, crc_shift_short)
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c = _mm_crc32_u8((uint32_t)c, *p++);
    return ~(uint32_t)c;
}
#endif

static inline uint32_t crc32c(const uint8_t *p, size_t n) {
#ifdef KS_X86_CRC
    if (crc_hw)
        return crc_x86(0, p, n);
#endif
    return crc_sw(0, p, n);
}

/* ------------------------------------------------------------------------ byte helpers */

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)0)
#endif

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}
static inline uint64_t be64(const uint8_t *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }
static inline void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }

/* The 61-byte header of a v2 data batch of `n` records, `size` bytes in all, at `h` (whose
 * records follow it): one timestamp, no producer, CRC-32C over attributes..end last. */
static void put_data_batch_header(uint8_t *h, int64_t base_offset, int64_t epoch, int64_t ts, Py_ssize_t n,
                                  size_t size) {
    put64(h, (uint64_t)base_offset);
    put32(h + 8, (uint32_t)(size - 12));
    put32(h + 12, (uint32_t)(int32_t)epoch);
    h[16] = 2;
    put16(h + 21, 0);                          /* attributes */
    put32(h + 23, (uint32_t)(int32_t)(n - 1)); /* last offset delta */
    put64(h + 27, (uint64_t)ts);               /* base timestamp */
    put64(h + 35, (uint64_t)ts);               /* max timestamp */
    put64(h + 43, (uint64_t)(int64_t)-1);      /* producer id */
    put16(h + 51, (uint16_t)(int16_t)-1);      /* producer epoch */
    put32(h + 53, (uint32_t)(int32_t)-1);      /* base sequence */
    put32(h + 57, (uint32_t)n);                /* records count */
    put32(h + 17, crc32c(h + 21, size - 21));
}

/* The unsigned varint loop of rd_uvarint and rd_varlong: bytes up to a shift of
 * max_shift, and no bit past the 64th (a 10th byte above 1). -1: give up. */
static inline int rd_unsigned(const uint8_t *b, int64_t len, int64_t *ppos, int max_shift, uint64_t *out) {
    int64_t pos = *ppos;
    uint64_t r = 0;
    int shift = 0;
    for (;;) {
        if (pos >= len)
            return -1;
        uint8_t c = b[pos++];
        if (shift == 63 && (c & 0x7f) > 1)
            return -1;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) {
            *ppos = pos;
            *out = r;
            return 0;
        }
        shift += 7;
        if (shift > max_shift)
            return -1;
    }
}

/* Unsigned varint of at most 5 bytes (primitives.read_uvarint): value up to 2**35-1. */
static inline int rd_uvarint(const uint8_t *b, int64_t len, int64_t *ppos, int64_t *out) {
    uint64_t r;
    if (rd_unsigned(b, len, ppos, 28, &r) < 0)
        return -1;
    *out = (int64_t)r;
    return 0;
}

/* Zig-zag varint of v2 records (read_varint). */
static inline int rd_varint(const uint8_t *b, int64_t len, int64_t *ppos, int64_t *out) {
    int64_t raw;
    if (rd_uvarint(b, len, ppos, &raw) < 0)
        return -1;
    *out = (int64_t)((uint64_t)raw >> 1) ^ -(raw & 1);
    return 0;
}

/* Zig-zag varlong (read_varlong): up to 10 bytes. Python accepts raw values of up to 70
 * bits; those that do not fit 64 bits are left to Python (-1 as well). */
static inline int rd_varlong(const uint8_t *b, int64_t len, int64_t *ppos, int64_t *out) {
    uint64_t r;
    if (rd_unsigned(b, len, ppos, 63, &r) < 0)
        return -1;
    *out = (int64_t)(r >> 1) ^ -(int64_t)(r & 1);
    return 0;
}

static inline int uvarint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline int add_overflows(int64_t a, int64_t b, int64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, out);
#else
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return 1;
    *out = a + b;
    return 0;
#endif
}

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

/* ------------------------------------------------------------------------ writer */

typedef struct {
    uint8_t *buf;
    int64_t len;
    int64_t cap;
    PyObject *bytes; /* when set, buf is this bytes object's storage (built in place) */
} Writer;

static int w_grow(Writer *w, int64_t need) {
    int64_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + need)
        cap *= 2;
    if (w->bytes) {
        if (_PyBytes_Resize(&w->bytes, (Py_ssize_t)cap) < 0) {
            w->buf = NULL;
            w->cap = 0;
            return -1;
        }
        w->buf = (uint8_t *)PyBytes_AS_STRING(w->bytes);
        w->cap = cap;
        return 0;
    }
    uint8_t *nb = PyMem_Realloc(w->buf, (size_t)cap);
    if (!nb) {
        PyErr_NoMemory();
        return -1;
    }
    w->buf = nb;
    w->cap = cap;
    return 0;
}

/* Ask the kernel for the pages of a fresh, large buffer in one call rather than one
 * page fault per page (Linux 5.14+; elsewhere, or on failure, the faults happen as usual). */
static void populate_for_write(uint8_t *buf, int64_t n) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    if (!g_populate || n < (int64_t)1 << 16)
        return;
    uintptr_t page = 4096, lo = ((uintptr_t)buf + page - 1) & ~(page - 1), hi = ((uintptr_t)buf + (uintptr_t)n) & ~(page - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)buf;
    (void)n;
#endif
}

/* Start building a bytes object of about `hint` bytes in place. */
static int w_bytes_start(Writer *w, int64_t hint) {
    if (hint < 64)
        hint = 64;
    w->bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)hint);
    if (!w->bytes)
        return -1;
    w->buf = (uint8_t *)PyBytes_AS_STRING(w->bytes);
    populate_for_write(w->buf, hint);
    w->len = 0;
    w->cap = hint;
    return 0;
}

/* The finished bytes object (new reference), or NULL. */
static PyObject *w_bytes_finish(Writer *w) {
    PyObject *b = w->bytes;
    w->bytes = NULL;
    w->buf = NULL;
    w->cap = 0;
    if (!b)
        return NULL;
    if (_PyBytes_Resize(&b, (Py_ssize_t)w->len) < 0)
        return NULL;
    w->len = 0;
    return b;
}

#define W_RESERVE(w, n) (((w)->len + (int64_t)(n) <= (w)->cap) ? 0 : w_grow((w), (int64_t)(n)))

static inline void w_uvarint_unchecked(Writer *w, uint64_t v) {
    while (v >= 0x80) {
        w->buf[w->len++] = (uint8_t)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    w->buf[w->len++] = (uint8_t)v;
}

static inline int w_uvarint(Writer *w, uint64_t v) {
    if (W_RESERVE(w, 10) < 0)
        return -1;
    w_uvarint_unchecked(w, v);
    return 0;
}

static inline int w_bytes(Writer *w, const void *p, int64_t n) {
    if (W_RESERVE(w, n) < 0)
        return -1;
    memcpy(w->buf + w->len, p, (size_t)n);
    w->len += n;
    return 0;
}

static inline int w_byte(Writer *w, uint8_t c) {
    if (W_RESERVE(w, 1) < 0)
        return -1;
    w->buf[w->len++] = c;
    return 0;
}

static void w_free(Writer *w) {
    if (w->bytes)
        Py_CLEAR(w->bytes);
    else
        PyMem_Free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

/* ------------------------------------------------------------------------ object helpers */

/* A NamedTuple instance from n items (references stolen), left untracked by the cycle
 * collector when `untrack` (see g_untrack). In direct mode it is allocated as
 * tuple.__new__ would (tp_alloc of a tuple subclass is a GC allocation of the same
 * size), but without the zeroing and the track/untrack round trip. */
static PyObject *new_ntuple(PyTypeObject *t, int direct, PyObject **items, Py_ssize_t n, int untrack) {
    PyObject *o;
    Py_ssize_t i;
    /* direct: allocated as tuple.__new__ would; else a plain tuple to call tuple.__new__ with */
    PyObject *filled = direct ? (PyObject *)PyObject_GC_NewVar(PyObject, t, n) : PyTuple_New(n);
    if (!filled) {
        for (i = 0; i < n; i++)
            Py_DECREF(items[i]);
        return NULL;
    }
    for (i = 0; i < n; i++)
        PyTuple_SET_ITEM(filled, i, items[i]);
    if (direct) {
        if (!untrack)
            PyObject_GC_Track(filled);
        return filled;
    }
    PyObject *args = PyTuple_Pack(1, filled);
    Py_DECREF(filled);
    if (!args)
        return NULL;
    o = PyTuple_Type.tp_new(t, args, NULL);
    Py_DECREF(args);
    if (o && untrack && PyObject_GC_IsTracked(o))
        PyObject_GC_UnTrack(o);
    return o;
}

/* A list of n items to be filled by the caller (PyList_SET_ITEM), untracked by the
 * cycle collector when g_untrack. If the caller fails half way, it sets the size to the
 * number of items filled (Py_SET_SIZE) before releasing the list. */
static PyObject *new_list(Py_ssize_t n) {
    if (!g_untrack)
        return PyList_New(n);
    PyListObject *l = PyObject_GC_New(PyListObject, &PyList_Type);
    if (!l)
        return NULL;
    l->ob_item = n ? PyMem_Malloc((size_t)n * sizeof(PyObject *)) : NULL;
    if (n && !l->ob_item) {
        Py_SET_SIZE(l, 0);
        l->allocated = 0;
        Py_DECREF(l);
        return PyErr_NoMemory();
    }
    Py_SET_SIZE(l, n);
    l->allocated = n;
    return (PyObject *)l;
}

/* Whether instances of t (a subclass of base: tuple for NamedTuples, bytes for Uuid) have
 * base's layout, so that they can be built directly. */
static int same_layout_subtype(PyTypeObject *t, PyTypeObject *base) {
#if PY_VERSION_HEX < 0x030E0000
    return PyType_IsSubtype(t, base) && t->tp_basicsize == base->tp_basicsize && t->tp_itemsize == base->tp_itemsize &&
           t->tp_dictoffset == 0 && t->tp_alloc != NULL;
#else
    (void)t;
    (void)base;
    return 0;
#endif
}

static int ntuple_direct_ok(PyTypeObject *t) { return same_layout_subtype(t, &PyTuple_Type); }

static int uuid_direct_ok(PyTypeObject *t) { return same_layout_subtype(t, &PyBytes_Type); }

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
/* A Uuid from 16 bytes. Uuids are immutable, so equal ones may be shared: a small
 * direct-mapped cache makes repeated topic and directory ids one object each. */
static PyObject *make_uuid(const uint8_t *p) {
    if (!UuidType)
        return fallback_null();
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + 8, 8);
    uint32_t h = (uint32_t)(((a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full)) >> 56) & (UUID_CACHE_SIZE - 1);
    PyObject *c = uuid_cache[h];
    if (c && memcmp(PyBytes_AS_STRING(c), p, 16) == 0) {
        Py_INCREF(c);
        return c;
    }
    PyObject *o;
    if (uuid_direct) {
        o = UuidType->tp_alloc(UuidType, 16);
        if (!o)
            return NULL;
        memcpy(PyBytes_AS_STRING(o), p, 16);
        PyBytes_AS_STRING(o)[16] = '\0';
#if PY_VERSION_HEX < 0x030E0000
        ((PyBytesObject *)o)->ob_shash = -1;
#endif
    } else {
        PyObject *raw = PyBytes_FromStringAndSize((const char *)p, 16);
        if (!raw)
            return NULL;
        o = PyObject_CallOneArg((PyObject *)UuidType, raw);
        Py_DECREF(raw);
        if (!o)
            return NULL;
    }
    Py_INCREF(o);
    Py_XSETREF(uuid_cache[h], o);
    return o;
}
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* Python's `a != b` (no identity shortcut, except for types where it cannot matter). */
static int not_equal(PyObject *a, PyObject *b) {
    if (a == b && (a == Py_None || PyLong_CheckExact(a) || PyUnicode_CheckExact(a) || PyBytes_CheckExact(a) ||
                   PyBool_Check(a) || Py_TYPE(a) == UuidType))
        return 0;
    PyObject *r = PyObject_RichCompare(a, b, Py_NE);
    if (!r)
        return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* ------------------------------------------------------------------------ programs */

typedef struct Program Program;

typedef struct {
    int slot;
    int type;
    int is_array;
    int nullable;
    int64_t tag;
    Program *sub;     /* struct / []struct element program (borrowed from spec) */
    int cond_null;    /* tagged: written iff not None (else iff != dflt) */
    PyObject *dflt;   /* tagged: default compared against (borrowed from spec) */
    int kind;         /* OPK_*: which specialised encoder path may apply */
} FieldOp;

/* Field shapes with a specialised encoder path (the general one is enc_value). */
enum { OPK_GENERIC = 0, OPK_INT, OPK_UUID, OPK_INT_ARRAY, OPK_UUID_ARRAY, OPK_STRING };

static int op_kind(const FieldOp *op) {
    int is_int = op->type >= K_INT8 && op->type <= K_UINT32;
    if (op->is_array)
        return is_int ? OPK_INT_ARRAY : op->type == K_UUID ? OPK_UUID_ARRAY : OPK_GENERIC;
    return is_int ? OPK_INT : op->type == K_UUID ? OPK_UUID : op->type == K_STRING ? OPK_STRING : OPK_GENERIC;
}

typedef struct {
    int slot;
    int kind; /* 0 constant, 1 call obj(), 2 list(obj) */
    PyObject *obj;
} DefaultOp;

typedef struct {
    int slot;
    PyObject *dflt;
} AbsentOp;

struct Program {
    PyObject_HEAD
    PyObject *spec;
    PyObject *cls;
    int flexible;
    Py_ssize_t nslots;      /* fields, not counting _unknown */
    PyObject **names;       /* nslots + 1 interned attribute names */
    Py_ssize_t *offsets;    /* member slot offsets in cls */
    int offsets_ok;
    int direct_new;         /* decode by filling a fresh instance's slots (see Program_new) */
    Py_ssize_t n_untagged, n_tagged, n_defaults, n_absent;
    FieldOp *untagged;
    FieldOp *tagged;
    DefaultOp *defaults;
    AbsentOp *absent;
    int64_t minsize;        /* fewest bytes one encoded instance can take */
};

static PyTypeObject ProgramType;

static void Program_dealloc(Program *p) {
    PyMem_Free(p->names);
    PyMem_Free(p->offsets);
    PyMem_Free(p->untagged);
    PyMem_Free(p->tagged);
    PyMem_Free(p->defaults);
    PyMem_Free(p->absent);
    Py_XDECREF(p->spec);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static int as_int(PyObject *o, long lo, long hi, long *out) {
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "program: expected an int");
        return -1;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "program: %ld out of range [%ld, %ld]", v, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* The slot of a default or absent op: a tuple of `size` items, the first a field slot. */
static int slot_op(PyObject *t, Py_ssize_t size, const char *bad, Py_ssize_t nslots, int *slot) {
    long v;
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != size) {
        PyErr_SetString(PyExc_TypeError, bad);
        return -1;
    }
    if (as_int(PyTuple_GET_ITEM(t, 0), 0, (long)nslots - 1, &v) < 0)
        return -1;
    *slot = (int)v;
    return 0;
}

static int64_t field_minsize(const FieldOp *op, int flexible) {
    if (op->is_array)
        return flexible ? 1 : 4;
    if (IS_FIXED(op->type) || op->type == K_UUID)
        return FIXED_SIZE[op->type];
    if (op->type == K_STRING)
        return flexible ? 1 : 2;
    if (op->type == K_BYTES)
        return flexible ? 1 : 4;
    return op->sub->minsize;
}

/* op tuple: (slot, type, is_array, nullable, sub) or tagged
 * (tag, slot, type, is_array, nullable, sub, cond_null, default). */
static int parse_op(PyObject *t, int tagged, Py_ssize_t nslots, FieldOp *op) {
    Py_ssize_t want = tagged ? 8 : 5;
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != want) {
        PyErr_SetString(PyExc_TypeError, "program: bad field op");
        return -1;
    }
    long v;
    int i = 0;
    memset(op, 0, sizeof(*op));
    if (tagged) {
        if (as_int(PyTuple_GET_ITEM(t, i++), 0, 0x7fffffffL, &v) < 0)
            return -1;
        op->tag = v;
    }
    if (as_int(PyTuple_GET_ITEM(t, i++), 0, (long)nslots - 1, &v) < 0)
        return -1;
    op->slot = (int)v;
    if (as_int(PyTuple_GET_ITEM(t, i++), K_BOOL, K_STRUCT, &v) < 0)
        return -1;
    op->type = (int)v;
    if (as_int(PyTuple_GET_ITEM(t, i++), 0, 1, &v) < 0)
        return -1;
    op->is_array = (int)v;
    if (as_int(PyTuple_GET_ITEM(t, i++), 0, 1, &v) < 0)
        return -1;
    op->nullable = (int)v;
    PyObject *sub = PyTuple_GET_ITEM(t, i++);
    if (op->type == K_STRUCT) {
        if (!PyObject_TypeCheck(sub, &ProgramType)) {
            PyErr_SetString(PyExc_TypeError, "program: a struct field needs a sub-program");
            return -1;
        }
        op->sub = (Program *)sub;
    } else if (sub != Py_None) {
        PyErr_SetString(PyExc_TypeError, "program: only struct fields have a sub-program");
        return -1;
    }
    if (tagged) {
        if (as_int(PyTuple_GET_ITEM(t, i++), 0, 1, &v) < 0)
            return -1;
        op->cond_null = (int)v;
        op->dflt = PyTuple_GET_ITEM(t, i++);
    }
    op->kind = op_kind(op);
    return 0;
}

/* Where instances of `cls` keep attribute `name`: the offset of its object member slot
 * (a T_OBJECT_EX member descriptor of cls or a base), or -1 (any other kind of attribute). */
static Py_ssize_t member_offset(PyObject *cls, PyObject *name) {
    PyObject *descr = PyObject_GetAttr(cls, name);
    if (!descr) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *md = ((PyMemberDescrObject *)descr)->d_member;
        PyTypeObject *owner = ((PyDescrObject *)descr)->d_type;
        if (md->type == T_OBJECT_EX && PyType_IsSubtype((PyTypeObject *)cls, owner))
            offset = md->offset;
    }
    Py_DECREF(descr);
    return offset;
}

/* Whether instances of `cls` can be built by allocating one and filling the member slots at
 * `offsets` (n of them): a msgspec Struct whose construction does nothing else (no
 * cycle-collector tracking (gc=False), no __post_init__, not abstract, every slot inside the
 * instance). */
static int fillable_struct(PyObject *cls, const Py_ssize_t *offsets, Py_ssize_t n) {
    PyTypeObject *t = (PyTypeObject *)cls;
    for (Py_ssize_t i = 0; i < n; i++)
        if (offsets[i] < (Py_ssize_t)sizeof(PyObject) || offsets[i] + (Py_ssize_t)sizeof(PyObject *) > t->tp_basicsize)
            return 0;
    if ((t->tp_flags & (Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IS_ABSTRACT)) || !t->tp_alloc || t->tp_itemsize != 0)
        return 0;
    return PyObject_HasAttrString(cls, "__struct_fields__") && !PyObject_HasAttrString(cls, "__post_init__");
}

static PyObject *Program_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *spec;
    static char *kwlist[] = {"spec", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!:Program", kwlist, &PyTuple_Type, &spec))
        return NULL;
    if (PyTuple_GET_SIZE(spec) != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "program spec: (cls, flexible, names, untagged, tagged, defaults, absent)");
        return NULL;
    }
    PyObject *cls = PyTuple_GET_ITEM(spec, 0);
    PyObject *flex = PyTuple_GET_ITEM(spec, 1);
    PyObject *names = PyTuple_GET_ITEM(spec, 2);
    PyObject *untagged = PyTuple_GET_ITEM(spec, 3);
    PyObject *tagged = PyTuple_GET_ITEM(spec, 4);
    PyObject *defaults = PyTuple_GET_ITEM(spec, 5);
    PyObject *absent = PyTuple_GET_ITEM(spec, 6);
    if (!PyType_Check(cls) || !PyTuple_Check(names) || PyTuple_GET_SIZE(names) < 1 || !PyTuple_Check(untagged) ||
        !PyTuple_Check(tagged) || !PyTuple_Check(defaults) || !PyTuple_Check(absent)) {
        PyErr_SetString(PyExc_TypeError, "program spec: bad item types");
        return NULL;
    }
    Program *p = (Program *)type->tp_alloc(type, 0);
    if (!p)
        return NULL;
    Py_INCREF(spec);
    p->spec = spec;
    p->cls = cls;
    p->flexible = PyObject_IsTrue(flex);
    if (p->flexible < 0)
        goto error;
    p->nslots = PyTuple_GET_SIZE(names) - 1;
    Py_ssize_t n = p->nslots + 1, i;
    p->names = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    p->offsets = PyMem_Calloc((size_t)n, sizeof(Py_ssize_t));
    p->n_untagged = PyTuple_GET_SIZE(untagged);
    p->n_tagged = PyTuple_GET_SIZE(tagged);
    p->n_defaults = PyTuple_GET_SIZE(defaults);
    p->n_absent = PyTuple_GET_SIZE(absent);
    p->untagged = PyMem_Calloc((size_t)p->n_untagged + 1, sizeof(FieldOp));
    p->tagged = PyMem_Calloc((size_t)p->n_tagged + 1, sizeof(FieldOp));
    p->defaults = PyMem_Calloc((size_t)p->n_defaults + 1, sizeof(DefaultOp));
    p->absent = PyMem_Calloc((size_t)p->n_absent + 1, sizeof(AbsentOp));
    if (!p->names || !p->offsets || !p->untagged || !p->tagged || !p->defaults || !p->absent) {
        PyErr_NoMemory();
        goto error;
    }
    /* Field names, and the offsets of their member slots for direct reads. */
    p->offsets_ok = 1;
    for (i = 0; i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_CheckExact(name)) {
            PyErr_SetString(PyExc_TypeError, "program spec: field names must be str");
            goto error;
        }
        p->names[i] = name;
        p->offsets[i] = member_offset(cls, name);
        if (p->offsets[i] < 0)
            p->offsets_ok = 0;
    }
    /* Instances can be built without calling the class when it is a msgspec Struct
     * whose construction does nothing but allocate and set the fields: no cycle-collector
     * tracking (gc=False), no __post_init__, not abstract, every field a member slot
     * inside the instance. */
    p->direct_new = p->offsets_ok && fillable_struct(cls, p->offsets, n);
    p->minsize = p->flexible ? 1 : 0;
    for (i = 0; i < p->n_untagged; i++) {
        if (parse_op(PyTuple_GET_ITEM(untagged, i), 0, p->nslots, &p->untagged[i]) < 0)
            goto error;
        p->minsize += field_minsize(&p->untagged[i], p->flexible);
    }
    for (i = 0; i < p->n_tagged; i++)
        if (parse_op(PyTuple_GET_ITEM(tagged, i), 1, p->nslots, &p->tagged[i]) < 0)
            goto error;
    for (i = 0; i < p->n_defaults; i++) {
        PyObject *t = PyTuple_GET_ITEM(defaults, i);
        long v;
        if (slot_op(t, 3, "program: bad default op", p->nslots, &p->defaults[i].slot) < 0)
            goto error;
        if (as_int(PyTuple_GET_ITEM(t, 1), 0, 2, &v) < 0)
            goto error;
        p->defaults[i].kind = (int)v;
        p->defaults[i].obj = PyTuple_GET_ITEM(t, 2);
    }
    for (i = 0; i < p->n_absent; i++) {
        PyObject *t = PyTuple_GET_ITEM(absent, i);
        if (slot_op(t, 2, "program: bad absent op", p->nslots, &p->absent[i].slot) < 0)
            goto error;
        p->absent[i].dflt = PyTuple_GET_ITEM(t, 1);
    }
    return (PyObject *)p;
error:
    Py_DECREF(p);
    return NULL;
}

/* ------------------------------------------------------------------------ decoding */

static PyObject *dec_struct(Program *p, const uint8_t *b, int64_t len, int64_t *ppos);

/* A length prefix: -1 for null. kind 0 = string (int16 when not flexible), 1 = other (int32). */
static inline int rd_len(int flexible, int kind, const uint8_t *b, int64_t len, int64_t *ppos, int64_t *n) {
    int64_t pos = *ppos;
    if (flexible) {
        if (pos >= len)
            return -1;
        uint8_t c = b[pos];
        if (c < 128) {
            *n = (int64_t)c - 1;
            *ppos = pos + 1;
            return 0;
        }
        int64_t v;
        if (rd_uvarint(b, len, ppos, &v) < 0)
            return -1;
        *n = v - 1;
        return 0;
    }
    if (kind == 0) {
        if (pos + 2 > len)
            return -1;
        *n = (int16_t)be16(b + pos);
        *ppos = pos + 2;
    } else {
        if (pos + 4 > len)
            return -1;
        *n = (int32_t)be32(b + pos);
        *ppos = pos + 4;
    }
    return 0;
}

/* CPython's shared small ints (-5..256), held here so that decoding one is a table read. */
#define SMALL_INT_MIN (-5)
#define SMALL_INT_MAX 256
static PyObject *small_ints[SMALL_INT_MAX - SMALL_INT_MIN + 1];

static int small_ints_init(void) {
    for (long v = SMALL_INT_MIN; v <= SMALL_INT_MAX; v++)
        if (!(small_ints[v - SMALL_INT_MIN] = PyLong_FromLong(v)))
            return -1;
    return 0;
}

/* An integer field (int8 .. uint32, big-endian at p) as a Python int. */
static inline PyObject *read_int(int type, const uint8_t *p) {
    long long v;
    switch (type) {
    case K_INT8:
        v = (int8_t)p[0];
        break;
    case K_INT16:
        v = (int16_t)be16(p);
        break;
    case K_INT32:
        v = (int32_t)be32(p);
        break;
    case K_INT64:
        v = (int64_t)be64(p);
        break;
    case K_UINT16:
        v = be16(p);
        break;
    case K_UINT32:
        v = be32(p);
        break;
    default:
        return fallback_null();
    }
    if (v >= SMALL_INT_MIN && v <= SMALL_INT_MAX) {
        PyObject *o = small_ints[v - SMALL_INT_MIN];
        Py_INCREF(o);
        return o;
    }
    return PyLong_FromLongLong(v);
}

static inline PyObject *read_fixed(int type, const uint8_t *p) {
    switch (type) {
    case K_BOOL:
        return PyBool_FromLong(p[0] != 0);
    case K_INT8:
        return PyLong_FromLong((int8_t)p[0]);
    case K_INT16:
        return PyLong_FromLong((int16_t)be16(p));
    case K_INT32:
        return PyLong_FromLong((int32_t)be32(p));
    case K_INT64:
        return PyLong_FromLongLong((long long)(int64_t)be64(p));
    case K_UINT16:
        return PyLong_FromLong(be16(p));
    case K_UINT32:
        return PyLong_FromUnsignedLong(be32(p));
    case K_FLOAT64: {
        double d = PyFloat_Unpack8((const char *)p, 0);
        if (d == -1.0 && PyErr_Occurred())
            return NULL;
        return PyFloat_FromDouble(d);
    }
    }
    return fallback_null();
}

/* A string or bytes value (not null) of n bytes at pos. */
static inline PyObject *read_str_or_bytes(int type, const uint8_t *b, int64_t len, int64_t *ppos, int64_t n) {
    int64_t pos = *ppos;
    if (pos + n > len)
        return fallback_null();
    PyObject *v = type == K_STRING ? PyUnicode_DecodeUTF8((const char *)b + pos, (Py_ssize_t)n, NULL)
                                   : PyBytes_FromStringAndSize((const char *)b + pos, (Py_ssize_t)n);
    if (v)
        *ppos = pos + n;
    return v;
}

/* A value whose length prefix said null (ending at pos): None where the field is nullable. */
static inline PyObject *dec_null(const FieldOp *op, int64_t pos, int64_t *ppos) {
    if (!op->nullable)
        return fallback_null();
    *ppos = pos;
    Py_RETURN_NONE;
}

static PyObject *dec_value(const FieldOp *op, int flexible, const uint8_t *b, int64_t len, int64_t *ppos) {
    int64_t pos = *ppos, n, i;
    int type = op->type;
    PyObject *v;
    if (op->is_array) {
        if (rd_len(flexible, 1, b, len, &pos, &n) < 0)
            return fallback_null();
        if (n < 0)
            return dec_null(op, pos, ppos);
        if (IS_FIXED(type) || type == K_UUID) {
            int w = FIXED_SIZE[type];
            if (pos + n * w > len)
                return fallback_null();
            v = new_list((Py_ssize_t)n);
            if (!v)
                return NULL;
            for (i = 0; i < n; i++) {
                PyObject *item = type == K_UUID                         ? make_uuid(b + pos)
                                 : (type >= K_INT8 && type <= K_UINT32) ? read_int(type, b + pos)
                                                                         : read_fixed(type, b + pos);
                if (!item) {
                    Py_SET_SIZE(v, (Py_ssize_t)i);
                    Py_DECREF(v);
                    return NULL;
                }
                PyList_SET_ITEM(v, (Py_ssize_t)i, item);
                pos += w;
            }
        } else if (type == K_STRING || type == K_BYTES) {
            if (n > len - pos) /* every element takes at least one byte */
                return fallback_null();
            v = new_list((Py_ssize_t)n);
            if (!v)
                return NULL;
            for (i = 0; i < n; i++) {
                int64_t m;
                PyObject *item;
                if (rd_len(flexible, type == K_STRING ? 0 : 1, b, len, &pos, &m) < 0 || m < 0) {
                    Py_SET_SIZE(v, (Py_ssize_t)i);
                    Py_DECREF(v);
                    return fallback_null();
                }
                item = read_str_or_bytes(type, b, len, &pos, m);
                if (!item) {
                    Py_SET_SIZE(v, (Py_ssize_t)i);
                    Py_DECREF(v);
                    return NULL;
                }
                PyList_SET_ITEM(v, (Py_ssize_t)i, item);
            }
        } else { /* struct elements */
            int64_t ms = op->sub->minsize;
            if (ms > 0) {
                if (n > (len - pos) / ms)
                    return fallback_null();
                v = new_list((Py_ssize_t)n);
                if (!v)
                    return NULL;
                for (i = 0; i < n; i++) {
                    PyObject *item = dec_struct(op->sub, b, len, &pos);
                    if (!item) {
                        Py_SET_SIZE(v, (Py_ssize_t)i);
                        Py_DECREF(v);
                        return NULL;
                    }
                    PyList_SET_ITEM(v, (Py_ssize_t)i, item);
                }
            } else {
                v = new_list(0);
                if (!v)
                    return NULL;
                for (i = 0; i < n; i++) {
                    PyObject *item = dec_struct(op->sub, b, len, &pos);
                    if (!item || PyList_Append(v, item) < 0) {
                        Py_XDECREF(item);
                        Py_DECREF(v);
                        return NULL;
                    }
                    Py_DECREF(item);
                }
            }
        }
        *ppos = pos;
        return v;
    }
    if (IS_FIXED(type)) {
        int w = FIXED_SIZE[type];
        if (pos + w > len)
            return fallback_null();
        v = read_fixed(type, b + pos);
        if (v)
            *ppos = pos + w;
        return v;
    }
    switch (type) {
    case K_UUID:
        if (pos + 16 > len)
            return fallback_null();
        v = make_uuid(b + pos);
        if (v)
            *ppos = pos + 16;
        return v;
    case K_STRING:
    case K_BYTES:
        if (rd_len(flexible, type == K_STRING ? 0 : 1, b, len, &pos, &n) < 0)
            return fallback_null();
        if (n < 0)
            return dec_null(op, pos, ppos);
        v = read_str_or_bytes(type, b, len, &pos, n);
        if (v)
            *ppos = pos;
        return v;
    case K_STRUCT:
        v = dec_struct(op->sub, b, len, &pos);
        if (v)
            *ppos = pos;
        return v;
    }
    return fallback_null();
}

#define STACK_SLOTS 48

static PyObject *dec_struct(Program *p, const uint8_t *b, int64_t len, int64_t *ppos) {
    PyObject *stackvals[STACK_SLOTS];
    PyObject **vals = stackvals;
    Py_ssize_t n = p->nslots + 1, i;
    PyObject *res = NULL, *unknown = NULL, *obj = NULL;
    int64_t pos = *ppos;

    /* A field's place: the new instance's (zeroed) slot in direct mode, else vals[]. */
#define SLOT(k) (*(obj ? (PyObject **)((char *)obj + p->offsets[(k)]) : &vals[(k)]))
    if (p->direct_new) {
        obj = ((PyTypeObject *)p->cls)->tp_alloc((PyTypeObject *)p->cls, 0);
        if (!obj)
            return NULL;
    } else if (n > STACK_SLOTS) {
        vals = PyMem_Calloc((size_t)n, sizeof(PyObject *));
        if (!vals)
            return PyErr_NoMemory();
    } else {
        memset(vals, 0, (size_t)n * sizeof(PyObject *));
    }
    for (i = 0; i < p->n_untagged; i++) {
        const FieldOp *op = &p->untagged[i];
        PyObject *v;
        if (op->kind == OPK_INT) { /* the commonest fields, inline */
            int w = FIXED_SIZE[op->type];
            if (pos + w > len) {
                fallback_null();
                goto done;
            }
            v = read_int(op->type, b + pos);
            pos += w;
        } else if (op->kind == OPK_UUID) {
            if (pos + 16 > len) {
                fallback_null();
                goto done;
            }
            v = make_uuid(b + pos);
            pos += 16;
        } else {
            v = dec_value(op, p->flexible, b, len, &pos);
        }
        if (!v)
            goto done;
        Py_XSETREF(SLOT(op->slot), v);
    }
    for (i = 0; i < p->n_defaults; i++) {
        const DefaultOp *d = &p->defaults[i];
        PyObject *v;
        if (d->kind == 0) {
            v = d->obj;
            Py_INCREF(v);
        } else if (d->kind == 1) {
            v = PyObject_CallNoArgs(d->obj);
        } else {
            v = PySequence_List(d->obj);
        }
        if (!v)
            goto done;
        Py_XSETREF(SLOT(d->slot), v);
    }
    if (p->flexible) {
        if (pos >= len) {
            fallback_null();
            goto done;
        }
        if (b[pos] == 0) {
            pos++;
        } else {
            int64_t ntags, k;
            if (rd_uvarint(b, len, &pos, &ntags) < 0) {
                fallback_null();
                goto done;
            }
            for (k = 0; k < ntags; k++) {
                int64_t tag, size, end;
                const FieldOp *op = NULL;
                if (rd_uvarint(b, len, &pos, &tag) < 0 || rd_uvarint(b, len, &pos, &size) < 0) {
                    fallback_null();
                    goto done;
                }
                end = pos + size;
                if (end > len) {
                    fallback_null();
                    goto done;
                }
                for (Py_ssize_t j = 0; j < p->n_tagged; j++) {
                    if (p->tagged[j].tag == tag) {
                        op = &p->tagged[j];
                        break;
                    }
                }
                if (op) {
                    PyObject *v = dec_value(op, 1, b, len, &pos);
                    if (!v)
                        goto done;
                    if (pos != end) {
                        Py_DECREF(v);
                        fallback_null();
                        goto done;
                    }
                    Py_XSETREF(SLOT(op->slot), v);
                } else {
                    PyObject *item;
                    if (!unknown && !(unknown = PyList_New(0)))
                        goto done;
                    item = Py_BuildValue("(Ly#)", (long long)tag, (const char *)b + pos, (Py_ssize_t)size);
                    if (!item)
                        goto done;
                    if (PyList_Append(unknown, item) < 0) {
                        Py_DECREF(item);
                        goto done;
                    }
                    Py_DECREF(item);
                    pos = end;
                }
            }
        }
    }
    if (unknown && PyList_GET_SIZE(unknown) > 0) {
        SLOT(p->nslots) = PyList_AsTuple(unknown);
        if (!SLOT(p->nslots))
            goto done;
    } else {
        SLOT(p->nslots) = PyTuple_New(0);
        if (!SLOT(p->nslots))
            goto done;
    }
    for (i = 0; i < n; i++) {
        if (!SLOT(i)) { /* a slot no op filled: the spec is inconsistent */
            PyErr_SetString(PyExc_SystemError, "program: a field has neither a reader nor a default");
            goto done;
        }
    }
    res = obj ? obj : PyObject_Vectorcall(p->cls, vals, (size_t)n, NULL);
    if (res)
        *ppos = pos;
done:
    if (obj) {
        if (!res)
            Py_DECREF(obj); /* its deallocator releases the slots filled so far */
    } else {
        for (i = 0; i < n; i++)
            Py_XDECREF(vals[i]);
        if (vals != stackvals)
            PyMem_Free(vals);
    }
    Py_XDECREF(unknown);
    return res;
#undef SLOT
}

/* ------------------------------------------------------------------------ encoding */

static int enc_struct(Program *p, PyObject *m, Writer *w);

/* A field's value: a direct slot read for an instance of exactly the program's class,
 * getattr otherwise. New reference. */
static inline PyObject *get_field(Program *p, PyObject *m, Py_ssize_t slot, int direct) {
    if (direct) {
        PyObject *v = *(PyObject **)((char *)m + p->offsets[slot]);
        if (!v)
            return fallback_null();
        Py_INCREF(v);
        return v;
    }
    return PyObject_GetAttr(m, p->names[slot]);
}

/* The value of an int that fits one machine word without a function call, when CPython's
 * representation says so (1 on success). */
static inline int long_compact(PyObject *v, long long *out) {
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)v)) {
        *out = (long long)PyUnstable_Long_CompactValue((PyLongObject *)v);
        return 1;
    }
#else
    Py_ssize_t size = Py_SIZE(v);
    if (size == 0) {
        *out = 0;
        return 1;
    }
    if (size == 1) {
        *out = (long long)((PyLongObject *)v)->ob_digit[0];
        return 1;
    }
    if (size == -1) {
        *out = -(long long)((PyLongObject *)v)->ob_digit[0];
        return 1;
    }
#endif
    return 0;
}

/* x written as integer type `type` (big-endian): 1 when done, 0 when x is out of the
 * type's range or the type is not an integer type. */
static inline int put_int_in_range(int type, long long x, uint8_t *dst) {
    switch (type) {
    case K_INT32:
        if (x < INT32_MIN || x > INT32_MAX)
            return 0;
        put32(dst, (uint32_t)(int32_t)x);
        return 1;
    case K_INT64:
        put64(dst, (uint64_t)x);
        return 1;
    case K_INT16:
        if (x < -32768 || x > 32767)
            return 0;
        put16(dst, (uint16_t)(int16_t)x);
        return 1;
    case K_INT8:
        if (x < -128 || x > 127)
            return 0;
        dst[0] = (uint8_t)(int8_t)x;
        return 1;
    case K_UINT16:
        if (x < 0 || x > 65535)
            return 0;
        put16(dst, (uint16_t)x);
        return 1;
    case K_UINT32:
        if (x < 0 || x > 4294967295LL)
            return 0;
        put32(dst, (uint32_t)x);
        return 1;
    }
    return 0;
}

/* The common case of pack_fixed, inlined: an exact int that fits a machine word, in
 * range for an integer type. 1 when done, 0 when pack_fixed must decide. */
static inline int pack_int_fast(int type, PyObject *v, uint8_t *dst) {
    long long x;
    return PyLong_CheckExact(v) && long_compact(v, &x) && put_int_in_range(type, x, dst);
}

/* struct.pack of one fixed-width value, big-endian, with struct's range rules. */
static int pack_fixed(int type, PyObject *v, uint8_t *dst) {
    if (type == K_BOOL) {
        int t = PyObject_IsTrue(v);
        if (t < 0)
            return -1;
        dst[0] = (uint8_t)t;
        return 0;
    }
    if (type == K_FLOAT64) {
        double d;
        if (PyFloat_CheckExact(v))
            d = PyFloat_AS_DOUBLE(v);
        else if (PyLong_Check(v)) {
            d = PyLong_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred())
                return -1;
        } else
            return fallback_int();
        return PyFloat_Pack8(d, (char *)dst, 0);
    }
    if (!PyLong_Check(v))
        return fallback_int();
    long long x;
    if (!long_compact(v, &x)) {
        int overflow = 0;
        x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow)
            return fallback_int();
        if (x == -1 && PyErr_Occurred())
            return -1;
    }
    return put_int_in_range(type, x, dst) ? 0 : fallback_int();
}

/* A length prefix: flexible uvarint(n + 1), else int16 (strings) or int32. */
static inline int w_len(Writer *w, int flexible, int kind, int64_t n) {
    if (flexible)
        return w_uvarint(w, (uint64_t)(n + 1));
    if (W_RESERVE(w, 4) < 0)
        return -1;
    if (kind == 0) {
        if (n < -32768 || n > 32767)
            return fallback_int();
        put16(w->buf + w->len, (uint16_t)(int16_t)n);
        w->len += 2;
    } else {
        if (n < INT32_MIN || n > INT32_MAX)
            return fallback_int();
        put32(w->buf + w->len, (uint32_t)(int32_t)n);
        w->len += 4;
    }
    return 0;
}

static int w_str_or_bytes(Writer *w, int flexible, int type, PyObject *v) {
    const char *data;
    Py_ssize_t n;
    if (type == K_STRING) {
        if (!PyUnicode_CheckExact(v))
            return fallback_int();
        data = PyUnicode_AsUTF8AndSize(v, &n);
        if (!data)
            return -1;
        if (w_len(w, flexible, 0, n) < 0)
            return -1;
    } else {
        if (!PyBytes_CheckExact(v))
            return fallback_int();
        data = PyBytes_AS_STRING(v);
        n = PyBytes_GET_SIZE(v);
        if (w_len(w, flexible, 1, n) < 0)
            return -1;
    }
    return w_bytes(w, data, n);
}

static int enc_value(const FieldOp *op, int flexible, PyObject *v, Writer *w) {
    int type = op->type;
    if (op->is_array || type == K_STRING || type == K_BYTES) {
        if (v == Py_None) {
            if (!op->nullable)
                return fallback_int();
            return w_len(w, flexible, (!op->is_array && type == K_STRING) ? 0 : 1, -1);
        }
    }
    if (op->is_array) {
        Py_ssize_t n, i;
        if (!PyList_CheckExact(v))
            return fallback_int();
        n = PyList_GET_SIZE(v);
        if (w_len(w, flexible, 1, n) < 0)
            return -1;
        if (IS_FIXED(type)) {
            int width = FIXED_SIZE[type];
            if (W_RESERVE(w, (int64_t)n * width) < 0)
                return -1;
            for (i = 0; i < n; i++) {
                if (i >= PyList_GET_SIZE(v))
                    return fallback_int();
                PyObject *item = PyList_GET_ITEM(v, i);
                if (pack_int_fast(type, item, w->buf + w->len)) { /* runs no Python code */
                    w->len += width;
                    continue;
                }
                int rc;
                Py_INCREF(item);
                rc = pack_fixed(type, item, w->buf + w->len);
                Py_DECREF(item);
                if (rc < 0)
                    return -1;
                w->len += width;
            }
            if (n != PyList_GET_SIZE(v))
                return fallback_int();
            return 0;
        }
        for (i = 0; i < n; i++) {
            if (i >= PyList_GET_SIZE(v))
                return fallback_int();
            PyObject *item = PyList_GET_ITEM(v, i);
            int rc;
            Py_INCREF(item);
            if (type == K_UUID) {
                if (PyBytes_Check(item) && PyBytes_GET_SIZE(item) == 16 && W_RESERVE(w, 16) == 0) {
                    memcpy(w->buf + w->len, PyBytes_AS_STRING(item), 16);
                    w->len += 16;
                    rc = 0;
                } else {
                    rc = PyBytes_Check(item) ? w_bytes(w, PyBytes_AS_STRING(item), PyBytes_GET_SIZE(item))
                                             : fallback_int();
                }
            } else if (type == K_STRING || type == K_BYTES) {
                rc = w_str_or_bytes(w, flexible, type, item);
            } else {
                rc = enc_struct(op->sub, item, w);
            }
            Py_DECREF(item);
            if (rc < 0)
                return -1;
        }
        if (n != PyList_GET_SIZE(v))
            return fallback_int();
        return 0;
    }
    if (IS_FIXED(type)) {
        int width = FIXED_SIZE[type];
        if (W_RESERVE(w, width) < 0)
            return -1;
        if (!pack_int_fast(type, v, w->buf + w->len) && pack_fixed(type, v, w->buf + w->len) < 0)
            return -1;
        w->len += width;
        return 0;
    }
    switch (type) {
    case K_UUID:
        if (!PyBytes_Check(v))
            return fallback_int();
        if (PyBytes_GET_SIZE(v) == 16) {
            if (W_RESERVE(w, 16) < 0)
                return -1;
            memcpy(w->buf + w->len, PyBytes_AS_STRING(v), 16);
            w->len += 16;
            return 0;
        }
        return w_bytes(w, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
    case K_STRING:
    case K_BYTES:
        return w_str_or_bytes(w, flexible, type, v);
    case K_STRUCT:
        return enc_struct(op->sub, v, w);
    }
    return fallback_int();
}

typedef struct {
    int64_t tag;
    Py_ssize_t idx;
    const uint8_t *ptr; /* unknown-field payload (owned by the message's tuple) */
    int64_t off;        /* or offset into the scratch writer */
    int64_t len;
} TagEntry;

static int tag_cmp(const void *a, const void *b) {
    const TagEntry *x = a, *y = b;
    if (x->tag != y->tag)
        return x->tag < y->tag ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/* Check the message's _unknown tuple: ((int tag >= 0, bytes payload), ...). */
static int unknown_ok(PyObject *unknown) {
    if (!PyTuple_CheckExact(unknown))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(unknown); i++) {
        PyObject *e = PyTuple_GET_ITEM(unknown, i);
        if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 2)
            return 0;
        PyObject *t = PyTuple_GET_ITEM(e, 0);
        if (!PyLong_CheckExact(t) || !PyBytes_CheckExact(PyTuple_GET_ITEM(e, 1)))
            return 0;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(t, &overflow);
        if (overflow || v < 0)
            return 0;
    }
    return 1;
}

/* The specialised paths below read objects without taking references: they run no
 * Python code, so nothing can change or free what they read. Each returns 0 when it
 * wrote the field, 1 when the general path (enc_value) must handle it, -1 on error. */

/* w_len for a length known to fit, into space already reserved (5 bytes). */
static inline void w_len_unchecked(Writer *w, int flexible, int kind, Py_ssize_t n) {
    if (flexible) {
        w_uvarint_unchecked(w, (uint64_t)n + 1);
    } else if (kind == 0) {
        put16(w->buf + w->len, (uint16_t)n);
        w->len += 2;
    } else {
        put32(w->buf + w->len, (uint32_t)n);
        w->len += 4;
    }
}

/* A list of ints that fit the field's type (compact ints, the common case). */
static int enc_int_list(const FieldOp *op, int flexible, PyObject *v, Writer *w) {
    Py_ssize_t n = PyList_GET_SIZE(v), i;
    PyObject **items = ((PyListObject *)v)->ob_item;
    int width = FIXED_SIZE[op->type];
    if (!flexible && n > INT32_MAX)
        return 1;
    if (W_RESERVE(w, 5 + (int64_t)n * width) < 0)
        return -1;
    int64_t start = w->len;
    w_len_unchecked(w, flexible, 1, n);
    uint8_t *dst = w->buf + w->len;
    if (op->type == K_INT32) {
        for (i = 0; i < n; i++) {
            PyObject *item = items[i];
            long long x;
            if (!PyLong_CheckExact(item) || !long_compact(item, &x) || x < INT32_MIN || x > INT32_MAX)
                goto general;
            put32(dst, (uint32_t)(int32_t)x);
            dst += 4;
        }
    } else {
        for (i = 0; i < n; i++) {
            if (!pack_int_fast(op->type, items[i], dst))
                goto general;
            dst += width;
        }
    }
    w->len = dst - w->buf;
    return 0;
general:
    w->len = start;
    return 1;
}

/* A list of Uuids (16-byte bytes objects). */
static int enc_uuid_list(int flexible, PyObject *v, Writer *w) {
    Py_ssize_t n = PyList_GET_SIZE(v), i;
    PyObject **items = ((PyListObject *)v)->ob_item;
    if (!flexible && n > INT32_MAX)
        return 1;
    for (i = 0; i < n; i++)
        if (!PyBytes_Check(items[i]) || PyBytes_GET_SIZE(items[i]) != 16)
            return 1;
    if (W_RESERVE(w, 5 + (int64_t)n * 16) < 0)
        return -1;
    w_len_unchecked(w, flexible, 1, n);
    uint8_t *dst = w->buf + w->len;
    for (i = 0; i < n; i++, dst += 16)
        memcpy(dst, PyBytes_AS_STRING(items[i]), 16);
    w->len = dst - w->buf;
    return 0;
}

/* A non-null field of an instance of exactly the program's class, by its OPK_* kind. */
static inline int enc_special(const FieldOp *op, int flexible, PyObject *v, Writer *w) {
    switch (op->kind) {
    case OPK_INT:
        if (W_RESERVE(w, 8) < 0)
            return -1;
        if (!pack_int_fast(op->type, v, w->buf + w->len))
            return 1;
        w->len += FIXED_SIZE[op->type];
        return 0;
    case OPK_UUID:
        if (!PyBytes_Check(v) || PyBytes_GET_SIZE(v) != 16)
            return 1;
        if (W_RESERVE(w, 16) < 0)
            return -1;
        memcpy(w->buf + w->len, PyBytes_AS_STRING(v), 16);
        w->len += 16;
        return 0;
    case OPK_INT_ARRAY:
        return PyList_CheckExact(v) ? enc_int_list(op, flexible, v, w) : 1;
    case OPK_UUID_ARRAY:
        return PyList_CheckExact(v) ? enc_uuid_list(flexible, v, w) : 1;
    case OPK_STRING:
        if (PyUnicode_CheckExact(v) && PyUnicode_IS_COMPACT_ASCII(v)) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(v);
            if (!flexible && n > 32767)
                return 1;
            if (W_RESERVE(w, 5 + (int64_t)n) < 0)
                return -1;
            w_len_unchecked(w, flexible, 0, n);
            memcpy(w->buf + w->len, PyUnicode_DATA(v), (size_t)n);
            w->len += n;
            return 0;
        }
        return 1;
    }
    return 1;
}

/* Whether a tagged field holds its default, decided without running Python code:
 * 1 yes, 0 no or cannot tell (the general path then decides). */
static inline int tagged_is_default(const FieldOp *op, PyObject *v) {
    if (op->cond_null)
        return v == Py_None;
    return v == op->dflt && (v == Py_None || PyLong_CheckExact(v) || PyUnicode_CheckExact(v) ||
                             PyBytes_CheckExact(v) || PyBool_Check(v) || Py_TYPE(v) == UuidType);
}

static int enc_struct(Program *p, PyObject *m, Writer *w) {
    int direct = p->offsets_ok && Py_TYPE(m) == (PyTypeObject *)p->cls;
    Py_ssize_t i;
    PyObject *v, *unknown = NULL;
    int rc = -1;
    TagEntry stack_entries[16];
    TagEntry *entries = stack_entries;
    Writer scratch = {NULL, 0, 0, NULL};

    for (i = 0; i < p->n_absent; i++) {
        int ne;
        v = get_field(p, m, p->absent[i].slot, direct);
        if (!v)
            return -1;
        ne = not_equal(v, p->absent[i].dflt);
        Py_DECREF(v);
        if (ne != 0)
            return ne < 0 ? -1 : fallback_int(); /* Python raises UnsupportedVersionException */
    }
    for (i = 0; i < p->n_untagged; i++) {
        const FieldOp *op = &p->untagged[i];
        int r;
        if (direct && op->kind != OPK_GENERIC) {
            PyObject *b = *(PyObject **)((char *)m + p->offsets[op->slot]);
            if (b) {
                r = enc_special(op, p->flexible, b, w);
                if (r <= 0) {
                    if (r < 0)
                        return -1;
                    continue;
                }
            }
        }
        v = get_field(p, m, op->slot, direct);
        if (!v)
            return -1;
        r = enc_value(op, p->flexible, v, w);
        Py_DECREF(v);
        if (r < 0)
            return -1;
    }
    if (!p->flexible)
        return 0;

    if (direct) { /* the common case: no unknown tagged fields, every tagged field at its default */
        PyObject *u = *(PyObject **)((char *)m + p->offsets[p->nslots]);
        if (u && PyTuple_CheckExact(u) && PyTuple_GET_SIZE(u) == 0) {
            for (i = 0; i < p->n_tagged; i++) {
                PyObject *t = *(PyObject **)((char *)m + p->offsets[p->tagged[i].slot]);
                if (!t || !tagged_is_default(&p->tagged[i], t))
                    break;
            }
            if (i == p->n_tagged)
                return w_byte(w, 0);
        }
    }
    unknown = get_field(p, m, p->nslots, direct);
    if (!unknown)
        return -1;
    int has_unknown = (PyTuple_CheckExact(unknown) && PyTuple_GET_SIZE(unknown) == 0) ? 0 : PyObject_IsTrue(unknown);
    if (has_unknown < 0)
        goto done;
    if (has_unknown && !unknown_ok(unknown)) {
        fallback_int();
        goto done;
    }
    Py_ssize_t nu = has_unknown ? PyTuple_GET_SIZE(unknown) : 0, count = 0;
    if (p->n_tagged == 0 && nu == 0) {
        rc = w_byte(w, 0);
        goto done;
    }
    if (nu + p->n_tagged > 16) {
        entries = PyMem_Malloc(sizeof(TagEntry) * (size_t)(nu + p->n_tagged));
        if (!entries) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (i = 0; i < nu; i++) {
        PyObject *e = PyTuple_GET_ITEM(unknown, i);
        PyObject *payload = PyTuple_GET_ITEM(e, 1);
        entries[count].tag = PyLong_AsLongLong(PyTuple_GET_ITEM(e, 0));
        entries[count].idx = count;
        entries[count].ptr = (const uint8_t *)PyBytes_AS_STRING(payload);
        entries[count].off = 0;
        entries[count].len = PyBytes_GET_SIZE(payload);
        count++;
    }
    for (i = 0; i < p->n_tagged; i++) {
        const FieldOp *op = &p->tagged[i];
        int write, r;
        v = get_field(p, m, op->slot, direct);
        if (!v)
            goto done;
        if (op->cond_null)
            write = v != Py_None;
        else
            write = not_equal(v, op->dflt);
        if (write < 0) {
            Py_DECREF(v);
            goto done;
        }
        if (write) {
            int64_t start = scratch.len;
            r = enc_value(op, 1, v, &scratch);
            if (r < 0) {
                Py_DECREF(v);
                goto done;
            }
            entries[count].tag = op->tag;
            entries[count].idx = count;
            entries[count].ptr = NULL;
            entries[count].off = start;
            entries[count].len = scratch.len - start;
            count++;
        }
        Py_DECREF(v);
    }
    if (count == 0) {
        rc = w_byte(w, 0);
        goto done;
    }
    if (p->n_tagged > 0 && count > 1) /* Python sorts (stably, by tag) only when the version has tagged fields */
        qsort(entries, (size_t)count, sizeof(TagEntry), tag_cmp);
    if (w_uvarint(w, (uint64_t)count) < 0)
        goto done;
    for (i = 0; i < count; i++) {
        const uint8_t *src = entries[i].ptr ? entries[i].ptr : scratch.buf + entries[i].off;
        if (w_uvarint(w, (uint64_t)entries[i].tag) < 0 || w_uvarint(w, (uint64_t)entries[i].len) < 0 ||
            w_bytes(w, src, entries[i].len) < 0)
            goto done;
    }
    rc = 0;
done:
    Py_XDECREF(unknown);
    if (entries != stack_entries)
        PyMem_Free(entries);
    w_free(&scratch);
    return rc;
}

/* ------------------------------------------------------------------------ Program methods */

static PyObject *Program_decode(Program *p, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    Py_ssize_t pos = 0;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "decode(buf, pos=0)");
        return NULL;
    }
    if (nargs == 2) {
        pos = PyLong_AsSsize_t(args[1]);
        if (pos == -1 && PyErr_Occurred())
            return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (pos < 0 || pos > view.len) {
        PyBuffer_Release(&view);
        return fallback_null();
    }
    int64_t p64 = pos;
    PyObject *msg = dec_struct(p, view.buf, view.len, &p64);
    PyBuffer_Release(&view);
    if (!msg)
        return NULL;
    PyObject *pos_obj = PyLong_FromLongLong(p64);
    if (!pos_obj) {
        Py_DECREF(msg);
        return NULL;
    }
    PyObject *res = PyTuple_Pack(2, msg, pos_obj);
    Py_DECREF(msg);
    Py_DECREF(pos_obj);
    return res;
}

static PyObject *Program_encode(Program *p, PyObject *msg) {
    Writer w = {NULL, 0, 0, NULL};
    if (enc_struct(p, msg, &w) < 0) {
        w_free(&w);
        return NULL;
    }
    PyObject *res = PyBytes_FromStringAndSize((const char *)w.buf, (Py_ssize_t)w.len);
    w_free(&w);
    return res;
}

static PyObject *Program_get_minsize(Program *p, void *closure) { return PyLong_FromLongLong(p->minsize); }
static PyObject *Program_get_direct(Program *p, void *closure) { return PyBool_FromLong(p->offsets_ok); }
static PyObject *Program_get_direct_new(Program *p, void *closure) { return PyBool_FromLong(p->direct_new); }
static PyObject *Program_get_spec(Program *p, void *closure) {
    Py_INCREF(p->spec);
    return p->spec;
}

static PyMethodDef Program_methods[] = {
    {"decode", (PyCFunction)(void (*)(void))Program_decode, METH_FASTCALL,
     "decode(buf, pos=0) -> (message, pos); raises Fallback when the bytes need the pure-Python decoder."},
    {"encode", (PyCFunction)Program_encode, METH_O,
     "encode(message) -> bytes; raises Fallback when the message needs the pure-Python encoder."},
    {NULL}};

static PyGetSetDef Program_getset[] = {
    {"minsize", (getter)Program_get_minsize, NULL, "fewest bytes one encoded value takes", NULL},
    {"direct_slots", (getter)Program_get_direct, NULL, "whether fields are read from member slots", NULL},
    {"direct_new", (getter)Program_get_direct_new, NULL, "whether decoded instances are built without calling the class", NULL},
    {"spec", (getter)Program_get_spec, NULL, "the spec tuple this program was built from", NULL},
    {NULL}};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kraftsim.protocol._speedups.Program",
    .tp_basicsize = sizeof(Program),
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One (struct, version) of the compact message encoding, compiled for the C interpreter.",
    .tp_methods = Program_methods,
    .tp_getset = Program_getset,
    .tp_new = Program_new,
};

/* ------------------------------------------------------------------------ FastDecoder / FastEncoder */

/* Drop-in replacements for the codec's generated functions: same signature, same result;
 * when the C program gives up, they call the pure-Python function they wrap. */
typedef struct {
    PyObject_HEAD
    Program *program;
    PyObject *pure;
    vectorcallfunc vectorcall;
} FastCodec;

static void FastCodec_dealloc(FastCodec *f) {
    Py_XDECREF(f->program);
    Py_XDECREF(f->pure);
    Py_TYPE(f)->tp_free((PyObject *)f);
}

static PyObject *call_pure(FastCodec *f, PyObject *const *args, size_t nargsf) {
    return PyObject_Vectorcall(f->pure, args, nargsf, NULL);
}

static PyObject *FastDecoder_vectorcall(FastCodec *f, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames || nargs != 2 || !g_enabled || !PyBytes_CheckExact(args[0]) || !PyLong_CheckExact(args[1]))
        return PyObject_Vectorcall(f->pure, args, nargsf, kwnames);
    PyObject *buf = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return call_pure(f, args, nargsf);
    }
    if (pos < 0 || pos > PyBytes_GET_SIZE(buf))
        return call_pure(f, args, nargsf);
    int64_t p64 = pos;
    PyObject *msg = dec_struct(f->program, (const uint8_t *)PyBytes_AS_STRING(buf), PyBytes_GET_SIZE(buf), &p64);
    if (!msg) {
        if (error_is_fatal())
            return NULL;
        PyErr_Clear();
        return call_pure(f, args, nargsf);
    }
    PyObject *pos_obj = PyLong_FromLongLong(p64);
    if (!pos_obj) {
        Py_DECREF(msg);
        return NULL;
    }
    PyObject *res = PyTuple_New(2);
    if (!res) {
        Py_DECREF(msg);
        Py_DECREF(pos_obj);
        return NULL;
    }
    PyTuple_SET_ITEM(res, 0, msg);
    PyTuple_SET_ITEM(res, 1, pos_obj);
    return res;
}

static PyObject *FastEncoder_vectorcall(FastCodec *f, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames || nargs != 2 || !g_enabled || !PyByteArray_CheckExact(args[1]))
        return PyObject_Vectorcall(f->pure, args, nargsf, kwnames);
    Writer w = {NULL, 0, 0, NULL};
    if (enc_struct(f->program, args[0], &w) < 0) {
        w_free(&w);
        if (error_is_fatal())
            return NULL;
        PyErr_Clear();
        return call_pure(f, args, nargsf);
    }
    PyObject *out = args[1];
    Py_ssize_t old = PyByteArray_GET_SIZE(out);
    if (PyByteArray_Resize(out, old + (Py_ssize_t)w.len) < 0) {
        w_free(&w);
        return NULL;
    }
    if (w.len)
        memcpy(PyByteArray_AS_STRING(out) + old, w.buf, (size_t)w.len);
    w_free(&w);
    Py_RETURN_NONE;
}

static PyObject *FastCodec_new_common(PyTypeObject *type, PyObject *args, vectorcallfunc vc) {
    PyObject *program, *pure;
    if (!PyArg_ParseTuple(args, "O!O:FastCodec", &ProgramType, &program, &pure))
        return NULL;
    FastCodec *f = (FastCodec *)type->tp_alloc(type, 0);
    if (!f)
        return NULL;
    Py_INCREF(program);
    Py_INCREF(pure);
    f->program = (Program *)program;
    f->pure = pure;
    f->vectorcall = vc;
    return (PyObject *)f;
}

static PyObject *FastDecoder_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    return FastCodec_new_common(type, args, (vectorcallfunc)FastDecoder_vectorcall);
}
static PyObject *FastEncoder_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    return FastCodec_new_common(type, args, (vectorcallfunc)FastEncoder_vectorcall);
}

static PyObject *FastCodec_get_program(FastCodec *f, void *c) {
    Py_INCREF(f->program);
    return (PyObject *)f->program;
}
static PyObject *FastCodec_get_pure(FastCodec *f, void *c) {
    Py_INCREF(f->pure);
    return f->pure;
}
static PyGetSetDef FastCodec_getset[] = {
    {"program", (getter)FastCodec_get_program, NULL, NULL, NULL},
    {"pure", (getter)FastCodec_get_pure, NULL, "the pure-Python function used as the fallback", NULL},
    {NULL}};

/* FastDecoder and FastEncoder: one FastCodec layout, each with its own vectorcall. */
#define FAST_CODEC_TYPE(NAME, DOC, NEW)                                                                             \
    {                                                                                                               \
        PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kraftsim.protocol._speedups." NAME,                               \
        .tp_basicsize = sizeof(FastCodec), .tp_dealloc = (destructor)FastCodec_dealloc,                             \
        .tp_vectorcall_offset = offsetof(FastCodec, vectorcall), .tp_call = PyVectorcall_Call,                      \
        .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, .tp_doc = DOC, .tp_getset = FastCodec_getset,  \
        .tp_new = NEW,                                                                                              \
    }

static PyTypeObject FastDecoderType = FAST_CODEC_TYPE(
    "FastDecoder", "FastDecoder(program, pure) -> callable (buf, pos) -> (message, pos), falling back to pure.",
    FastDecoder_new);

static PyTypeObject FastEncoderType = FAST_CODEC_TYPE(
    "FastEncoder", "FastEncoder(program, pure) -> callable (message, out: bytearray) -> None, falling back to pure.",
    FastEncoder_new);

/* ------------------------------------------------------------------------ records */

typedef struct {
    int64_t offset_delta;
    int64_t ts_delta;
    int attributes;
    int64_t key_off, key_len; /* key_len < 0: null */
    int64_t val_off, val_len;
} RecInfo;

/* One v2 record as batch.parse_records reads it; -1 when Python must take over (any
 * anomaly, any header, a timestamp delta beyond 64 bits). Reads are bounded by `end`,
 * the end of the records section, exactly as in Python. */
/* A record's key or value: its length (-1: null) and, when not null, where it starts. */
static inline int rd_record_bytes(const uint8_t *b, int64_t end, int64_t *ppos, int64_t *n, int64_t *off) {
    if (rd_varint(b, end, ppos, n) < 0)
        return -1;
    if (*n >= 0) {
        if (*ppos + *n > end)
            return -1;
        *off = *ppos;
        *ppos += *n;
    }
    return 0;
}

static int parse_record(const uint8_t *b, int64_t end, int64_t *ppos, RecInfo *r) {
    int64_t pos = *ppos, length, rec_end, n_headers;
    if (rd_varint(b, end, &pos, &length) < 0)
        return -1;
    rec_end = pos + length;
    if (length < 0 || rec_end > end)
        return -1;
    if (pos >= end)
        return -1;
    r->attributes = b[pos++];
    if (rd_varlong(b, end, &pos, &r->ts_delta) < 0)
        return -1;
    if (rd_varint(b, end, &pos, &r->offset_delta) < 0)
        return -1;
    if (rd_record_bytes(b, end, &pos, &r->key_len, &r->key_off) < 0)
        return -1;
    if (rd_record_bytes(b, end, &pos, &r->val_len, &r->val_off) < 0)
        return -1;
    if (rd_varint(b, end, &pos, &n_headers) < 0 || n_headers != 0)
        return -1;
    if (pos != rec_end)
        return -1;
    *ppos = pos;
    return 0;
}

static PyObject *py_parse_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "y*n:parse_records", &view, &count))
        return NULL;
    if (!RecordNT)
        return not_configured(&view);
    const uint8_t *b = view.buf;
    int64_t end = view.len, pos = 0;
    PyObject *list = NULL, *empty = NULL;
    if (count < 0 || count > end) /* each record takes at least one byte */
        goto fallback;
    list = PyList_New(count);
    empty = PyTuple_New(0);
    if (!list || !empty)
        goto error;
    for (Py_ssize_t i = 0; i < count; i++) {
        RecInfo r;
        PyObject *items[6];
        if (parse_record(b, end, &pos, &r) < 0)
            goto fallback;
        items[0] = PyLong_FromLongLong(r.offset_delta);
        items[1] = PyLong_FromLongLong(r.ts_delta);
        items[2] = r.key_len < 0 ? (Py_INCREF(Py_None), Py_None)
                                 : PyBytes_FromStringAndSize((const char *)b + r.key_off, (Py_ssize_t)r.key_len);
        items[3] = r.val_len < 0 ? (Py_INCREF(Py_None), Py_None)
                                 : PyBytes_FromStringAndSize((const char *)b + r.val_off, (Py_ssize_t)r.val_len);
        Py_INCREF(empty);
        items[4] = empty;
        items[5] = PyLong_FromLong(r.attributes);
        if (!items[0] || !items[1] || !items[2] || !items[3] || !items[5]) {
            for (int k = 0; k < 6; k++)
                Py_XDECREF(items[k]);
            goto error;
        }
        PyObject *rec = new_ntuple(RecordNT, record_direct, items, 6, g_untrack);
        if (!rec)
            goto error;
        PyList_SET_ITEM(list, i, rec);
    }
    if (pos != end)
        goto fallback;
    PyBuffer_Release(&view);
    Py_DECREF(empty);
    return list;
fallback:
    PyBuffer_Release(&view);
    Py_XDECREF(list);
    Py_XDECREF(empty);
    Py_RETURN_NONE;
error:
    PyBuffer_Release(&view);
    Py_XDECREF(list);
    Py_XDECREF(empty);
    return NULL;
}

/* ------------------------------------------------------------------------ framed metadata records */

/* A table entry: (record_type, api_key, lo, hi, programs) with programs[v] for versions
 * up to len(programs) - 1 and programs[-1] standing for every later version. */
typedef struct {
    PyObject *rt;
    int64_t api_key;
    int64_t lo, hi;
    PyObject *programs;
} Entry;

static int read_entry(PyObject *t, Entry *e) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5 || !PyTuple_Check(PyTuple_GET_ITEM(t, 4)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(t, 4)) == 0) {
        PyErr_SetString(PyExc_TypeError, "bad record-type entry");
        return -1;
    }
    e->rt = PyTuple_GET_ITEM(t, 0);
    e->api_key = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 1));
    e->lo = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 2));
    e->hi = PyLong_AsLongLong(PyTuple_GET_ITEM(t, 3));
    if (PyErr_Occurred())
        return -1;
    e->programs = PyTuple_GET_ITEM(t, 4);
    return 0;
}

static inline Program *entry_program(const Entry *e, int64_t version) {
    if (version < e->lo || version > e->hi)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(e->programs);
    PyObject *p = PyTuple_GET_ITEM(e->programs, version < n ? (Py_ssize_t)version : n - 1);
    return Py_IS_TYPE(p, &ProgramType) ? (Program *)p : NULL;
}

/* framing.read_frame_header: a uvarint that must fit 15 bits. */
static inline int rd_short_uvarint(const uint8_t *b, int64_t len, int64_t *ppos, int64_t *out) {
    if (rd_uvarint(b, len, ppos, out) < 0 || *out > 0x7fff)
        return -1;
    return 0;
}

static PyObject *pb_build(const uint8_t *b, int64_t len, int64_t pos, int64_t version);

/* Decode a framed metadata record value [b, b+len) with a decode table (a list indexed by
 * apiKey). Returns the message (new ref) and sets *entry_out / *version_out, or NULL with
 * an exception (Fallback for anything Python must handle). With `build_rt` (NULL: off) a
 * record of that type in its usual shape comes back as a PrebuiltPartition instead, and
 * *built is set (see pb_build). */
static PyObject *decode_framed_value(const uint8_t *b, int64_t len, PyObject *table, Entry *entry_out,
                                     int64_t *version_out, PyObject **last_t, PyObject *build_rt, int *built) {
    int64_t pos = 0, frame, api_key, version;
    if (rd_short_uvarint(b, len, &pos, &frame) < 0 || frame != 1)
        return fallback_null();
    if (rd_short_uvarint(b, len, &pos, &api_key) < 0 || rd_short_uvarint(b, len, &pos, &version) < 0)
        return fallback_null();
    if (api_key >= PyList_GET_SIZE(table))
        return fallback_null();
    PyObject *t = PyList_GET_ITEM(table, (Py_ssize_t)api_key);
    if (t == Py_None)
        return fallback_null();
    if (!last_t || *last_t != t) { /* consecutive records are mostly of one type */
        if (read_entry(t, entry_out) < 0)
            return NULL;
        if (last_t)
            *last_t = t;
    }
    Program *prog = entry_program(entry_out, version);
    if (!prog)
        return fallback_null();
    if (build_rt && entry_out->rt == build_rt) {
        PyObject *pb = pb_build(b, len, pos, version);
        if (pb) {
            *built = 1;
            *version_out = version;
            return pb;
        }
        PyErr_Clear();  /* (declined: decoded as always) */
    }
    PyObject *msg = dec_struct(prog, b, len, &pos);
    if (!msg)
        return NULL;
    if (pos != len) {
        Py_DECREF(msg);
        return fallback_null();
    }
    *version_out = version;
    return msg;
}

static PyObject *py_decode_framed(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer view;
    PyObject *table;
    if (nargs != 2 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "decode_framed(value, table: list)");
        return NULL;
    }
    table = args[1];
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Entry e;
    int64_t version;
    PyObject *msg = decode_framed_value(view.buf, view.len, table, &e, &version, NULL, NULL, NULL);
    PyBuffer_Release(&view);
    if (!msg) {
        if (error_is_fatal())
            return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *items[3];
    Py_INCREF(e.rt);
    items[0] = e.rt;
    items[1] = PyLong_FromLongLong(version);
    items[2] = msg;
    if (!items[1]) {
        Py_DECREF(e.rt);
        Py_DECREF(msg);
        return NULL;
    }
    if (MetadataRecordNT)
        return new_ntuple(MetadataRecordNT, mdrecord_direct, items, 3, 0);
    PyObject *res = PyTuple_New(3);
    if (!res) {
        for (int k = 0; k < 3; k++)
            Py_DECREF(items[k]);
        return NULL;
    }
    for (int k = 0; k < 3; k++)
        PyTuple_SET_ITEM(res, k, items[k]);
    return res;
}

/* Decode every record of a data batch's records section [start, end) into LogEntry
 * objects appended to out. 0 on success; -1 with an exception set otherwise (Fallback or
 * a data error, which the caller turns into "let Python do this batch"). */
static int decode_records_into(const uint8_t *b, int64_t start, int64_t end, int64_t count, int64_t base_offset,
                               PyObject *epoch_obj, int64_t base_ts, PyObject *base_ts_obj, PyObject *table,
                               PyObject *out, PyObject *build_rt) {
    int64_t pos = start;
    Entry e;
    PyObject *last_t = NULL; /* the table is not changed during the call: e stays valid */
    if (count < 0 || count > end - start)
        return fallback_int();
    for (int64_t i = 0; i < count; i++) {
        RecInfo r;
        int64_t version, offset, ts;
        if (parse_record(b, end, &pos, &r) < 0)
            return fallback_int();
        if (r.val_len < 0)
            return fallback_int();
        if (add_overflows(base_offset, r.offset_delta, &offset) || add_overflows(base_ts, r.ts_delta, &ts))
            return fallback_int();
        int built = 0;
        PyObject *msg = decode_framed_value(b + r.val_off, r.val_len, table, &e, &version, &last_t, build_rt, &built);
        if (!msg)
            return -1;
        if (built) {
            int bad = PyList_Append(out, msg);
            Py_DECREF(msg);
            if (bad < 0)
                return -1;
            continue;
        }
        PyObject *items[7];
        items[0] = PyLong_FromLongLong(offset);
        Py_INCREF(epoch_obj);
        items[1] = epoch_obj;
        if (r.ts_delta == 0) {
            Py_INCREF(base_ts_obj);
            items[2] = base_ts_obj;
        } else {
            items[2] = PyLong_FromLongLong(ts);
        }
        Py_INCREF(Py_False);
        items[3] = Py_False;
        Py_INCREF(e.rt);
        items[4] = e.rt;
        if (version <= SMALL_INT_MAX) { /* versions are 0..0x7fff */
            items[5] = small_ints[version - SMALL_INT_MIN];
            Py_INCREF(items[5]);
        } else {
            items[5] = PyLong_FromLongLong(version);
        }
        items[6] = msg;
        if (!items[0] || !items[2] || !items[5]) {
            for (int k = 0; k < 7; k++)
                Py_XDECREF(items[k]);
            return -1;
        }
        PyObject *entry = new_ntuple(LogEntryNT, logentry_direct, items, 7, g_untrack);
        if (!entry)
            return -1;
        if (PyList_Append(out, entry) < 0) {
            Py_DECREF(entry);
            return -1;
        }
        Py_DECREF(entry);
    }
    if (pos != end)
        return fallback_int();
    return 0;
}

static void truncate_list(PyObject *list, Py_ssize_t n) {
    if (PyList_GET_SIZE(list) > n)
        PyList_SetSlice(list, n, PyList_GET_SIZE(list), NULL);
}

/* decode_records(buf, start, end, count, base_offset, epoch, base_timestamp, table[, build])
 *   -> list[LogEntry | PrebuiltPartition] | None   (None: let Python decode this batch)
 * build: a record type whose records in their usual shape come back as PrebuiltPartitions
 * (pb_build; only the loader's snapshot path asks), or None. */
static PyObject *py_decode_records(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t start, end;
    long long count, base_offset, base_ts;
    PyObject *epoch_obj, *table, *base_ts_obj, *build_rt = Py_None;
    if (!PyArg_ParseTuple(args, "y*nnLLO!OO!|O:decode_records", &view, &start, &end, &count, &base_offset,
                          &PyLong_Type, &epoch_obj, &base_ts_obj, &PyList_Type, &table, &build_rt))
        return NULL;
    if (!LogEntryNT)
        return not_configured(&view);
    if (!PyLong_CheckExact(base_ts_obj) || start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    base_ts = PyLong_AsLongLong(base_ts_obj);
    if (base_ts == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(0);
    if (!out) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int gc_was = gc_pause();
    int rc = decode_records_into(view.buf, start, end, count, base_offset, epoch_obj, base_ts, base_ts_obj, table,
                                 out, build_rt == Py_None ? NULL : build_rt);
    gc_resume(gc_was);
    PyBuffer_Release(&view);
    if (rc < 0) {
        Py_DECREF(out);
        if (error_is_fatal())
            return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return out;
}

/* decode_log(data, pos, table, out, min_records=-1) -> position
 *
 * Walk the batches of data from pos, appending the LogEntry of every record of every
 * uncompressed data batch that passes Python's checks (size, magic, record count,
 * CRC-32C) and decodes fully. Stops at the first batch it does not handle (a torn tail, a
 * bad batch, a control or compressed batch, a record the C decoder gives up on) and
 * returns its position, so that Python handles that one batch and calls again. With
 * min_records >= 0 it also stops (between batches) once it has appended that many. */
static PyObject *py_decode_log(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, min_records = -1;
    PyObject *table, *out;
    if (!PyArg_ParseTuple(args, "y*nO!O!|n:decode_log", &view, &pos, &PyList_Type, &table, &PyList_Type, &out,
                          &min_records))
        return NULL;
    if (!LogEntryNT)
        return not_configured(&view);
    const uint8_t *b = view.buf;
    int64_t len = view.len, p = pos < 0 ? len : pos;
    PyObject *epoch_obj = NULL, *ts_obj = NULL;
    int32_t last_epoch = 0;
    int64_t last_ts = 0;
    Py_ssize_t first = PyList_GET_SIZE(out);
    int gc_was = gc_pause();
    int hooked = len - p > ((int64_t)1 << 22) ? arena_hook_install() : 0;
    while (p < len) {
        if (min_records >= 0 && PyList_GET_SIZE(out) - first >= min_records)
            break;
        int64_t remaining = len - p, size;
        if (remaining < 12)
            break;
        size = (int64_t)(int32_t)be32(b + p + 8) + 12;
        if (size < 61 || size > remaining)
            break;
        const uint8_t *h = b + p;
        int64_t base_offset = (int64_t)be64(h);
        int32_t epoch = (int32_t)be32(h + 12);
        int8_t magic = (int8_t)h[16];
        uint32_t crc = be32(h + 17);
        int16_t attributes = (int16_t)be16(h + 21);
        int64_t base_ts = (int64_t)be64(h + 27);
        int32_t count = (int32_t)be32(h + 57);
        if (magic != 2 || count < 0)
            break;
        if (crc32c(h + 21, (size_t)(size - 21)) != crc)
            break;
        if (attributes & (0x07 | 0x20)) /* compressed or control: Python */
            break;
        if (!epoch_obj || epoch != last_epoch) {
            Py_XSETREF(epoch_obj, PyLong_FromLong(epoch));
            if (!epoch_obj)
                goto error;
            last_epoch = epoch;
        }
        if (!ts_obj || base_ts != last_ts) {
            Py_XSETREF(ts_obj, PyLong_FromLongLong(base_ts));
            if (!ts_obj)
                goto error;
            last_ts = base_ts;
        }
        Py_ssize_t mark = PyList_GET_SIZE(out);
        if (decode_records_into(b, p + 61, p + size, count, base_offset, epoch_obj, base_ts, ts_obj, table, out, NULL) < 0) {
            truncate_list(out, mark);
            if (error_is_fatal())
                goto error;
            PyErr_Clear();
            break;
        }
        p += size;
    }
    arena_hook_remove(hooked);
    gc_resume(gc_was);
    Py_XDECREF(epoch_obj);
    Py_XDECREF(ts_obj);
    PyBuffer_Release(&view);
    return PyLong_FromLongLong(p);
error:
    arena_hook_remove(hooked);
    gc_resume(gc_was);
    Py_XDECREF(epoch_obj);
    Py_XDECREF(ts_obj);
    PyBuffer_Release(&view);
    return NULL;
}

/* ------------------------------------------------------------------------ encoding batches */

#define RT_CACHE 16

typedef struct {
    PyObject *resolve;
    int n;
    PyObject *keys[RT_CACHE];   /* owned record types */
    PyObject *vals[RT_CACHE];   /* owned entry tuples */
    Entry entries[RT_CACHE];    /* parsed from vals (borrowing from them) */
} RtCache;

static void rtc_clear(RtCache *c) {
    for (int i = 0; i < c->n; i++) {
        Py_DECREF(c->keys[i]);
        Py_DECREF(c->vals[i]);
    }
    c->n = 0;
}

/* The entry tuple of a record type: from this call's cache, else from the attribute
 * fastpath.py caches on the RecordType (`_kraftsim_fastpath`), else by asking Python
 * (resolve), which compiles the programs and sets that attribute. */
static int rtc_get(RtCache *c, PyObject *rt, Entry *e) {
    for (int i = 0; i < c->n; i++)
        if (c->keys[i] == rt) {
            *e = c->entries[i];
            return 0;
        }
    PyObject *t = PyObject_GetAttr(rt, str_fast_attr);
    if (!t) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
    } else if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 5 || PyTuple_GET_ITEM(t, 0) != rt) {
        Py_CLEAR(t); /* e.g. copied from another record type: ask again */
    }
    if (!t)
        t = PyObject_CallOneArg(c->resolve, rt);
    if (!t)
        return -1;
    if (t == Py_None) {
        Py_DECREF(t);
        return fallback_int();
    }
    if (read_entry(t, e) < 0) {
        Py_DECREF(t);
        return -1;
    }
    if (c->n == RT_CACHE) { /* full: drop the oldest */
        Py_DECREF(c->keys[0]);
        Py_DECREF(c->vals[0]);
        memmove(c->keys, c->keys + 1, sizeof(PyObject *) * (RT_CACHE - 1));
        memmove(c->vals, c->vals + 1, sizeof(PyObject *) * (RT_CACHE - 1));
        memmove(c->entries, c->entries + 1, sizeof(Entry) * (RT_CACHE - 1));
        c->n--;
    }
    Py_INCREF(rt);
    c->keys[c->n] = rt;
    c->vals[c->n] = t; /* e points into t, which the cache now owns */
    c->entries[c->n] = *e;
    c->n++;
    return 0;
}

/* The framed value of one payload; the caller holds a reference to `payload`. An exact
 * Payload is a tuple, whose items cannot change: they are borrowed, which also spares a
 * write to every message's (otherwise only read) memory. */
static int encode_payload(PyObject *payload, RtCache *c, Writer *w, Program **prog_out) {
    PyObject *rt, *version, *msg;
    int rc = -1, borrowed = 0;
    if (PayloadNT && Py_TYPE(payload) == PayloadNT && PyTuple_GET_SIZE(payload) == 3) {
        rt = PyTuple_GET_ITEM(payload, 0);
        version = PyTuple_GET_ITEM(payload, 1);
        msg = PyTuple_GET_ITEM(payload, 2);
        borrowed = 1;
    } else {
        rt = PyObject_GetAttr(payload, str_record_type);
        msg = rt ? PyObject_GetAttr(payload, str_message) : NULL;
        version = msg ? PyObject_GetAttr(payload, str_version) : NULL;
        if (!version) {
            Py_XDECREF(rt);
            Py_XDECREF(msg);
            return -1;
        }
    }
    Entry e;
    long long v;
    if (!PyLong_CheckExact(version) || !long_compact(version, &v)) {
        fallback_int();
        goto done;
    }
    if (rtc_get(c, rt, &e) < 0)
        goto done;
    Program *prog = entry_program(&e, v);
    if (!prog || e.api_key < 0) {
        fallback_int();
        goto done;
    }
    if (W_RESERVE(w, 21) < 0)
        goto done;
    w->buf[w->len++] = 1;
    w_uvarint_unchecked(w, (uint64_t)e.api_key);
    w_uvarint_unchecked(w, (uint64_t)v);
    if (prog_out)
        *prog_out = prog;
    rc = enc_struct(prog, msg, w);
done:
    if (!borrowed) {
        Py_DECREF(rt);
        Py_DECREF(version);
        Py_DECREF(msg);
    }
    return rc;
}

/* encode_values(payloads, resolve) -> list[bytes] | None */
static PyObject *py_encode_values(PyObject *self, PyObject *args) {
    PyObject *payloads, *resolve;
    if (!PyArg_ParseTuple(args, "OO:encode_values", &payloads, &resolve))
        return NULL;
    if (!PyList_CheckExact(payloads) && !PyTuple_CheckExact(payloads))
        Py_RETURN_NONE;
    PyObject *seq = payloads;
    Py_INCREF(seq);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(0);
    RtCache c = {resolve, 0};
    Writer w = {NULL, 0, 0, NULL};
    if (!out)
        goto error;
    for (Py_ssize_t i = 0; i < n && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *p = PySequence_Fast_GET_ITEM(seq, i);
        Py_INCREF(p);
        w.len = 0;
        int rc = encode_payload(p, &c, &w, NULL);
        Py_DECREF(p);
        if (rc < 0)
            goto fail;
        PyObject *b = PyBytes_FromStringAndSize((const char *)w.buf, (Py_ssize_t)w.len);
        if (!b || PyList_Append(out, b) < 0) {
            Py_XDECREF(b);
            goto error;
        }
        Py_DECREF(b);
    }
    if (n != PySequence_Fast_GET_SIZE(seq)) {
        fallback_int();
        goto fail;
    }
    rtc_clear(&c);
    w_free(&w);
    Py_DECREF(seq);
    return out;
fail:
    if (error_is_fatal())
        goto error;
    PyErr_Clear();
    rtc_clear(&c);
    w_free(&w);
    Py_DECREF(seq);
    Py_XDECREF(out);
    Py_RETURN_NONE;
error:
    rtc_clear(&c);
    w_free(&w);
    Py_DECREF(seq);
    Py_XDECREF(out);
    return NULL;
}

static int as_i64(PyObject *o, int64_t lo, int64_t hi, int64_t *out) {
    if (!PyLong_Check(o))
        return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return -1;
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Prefetching for the encoders: their inputs are large graphs of Python objects that
 * do not fit in the cache, so the next payload tuples and messages are fetched ahead.
 * Only object headers and the items of type-checked tuples are read. */
static inline PyObject *payload_message(PyObject *p) {
    return (PayloadNT && Py_TYPE(p) == PayloadNT && PyTuple_GET_SIZE(p) == 3) ? PyTuple_GET_ITEM(p, 2) : NULL;
}

static inline void prefetch_records(PyObject **items, Py_ssize_t i, Py_ssize_t n, Program *prog) {
    if (i + 6 < n)
        PREFETCH(items[i + 6]);
    if (i + 3 < n) {
        PyObject *m = payload_message(items[i + 3]);
        if (m) {
            PREFETCH(m);
            PREFETCH((char *)m + 64);
            PREFETCH((char *)m + 128);
        }
    }
    (void)prog;
}

/* One data batch as entries.encode_data_batch writes it, appended to w (which holds
 * nothing else from `start`); val is scratch space. 0, or -1 with an exception set. */
static int write_data_batch(Writer *w, Writer *val, int64_t base_offset, PyObject *payloads, int64_t epoch, int64_t ts,
                            RtCache *c) {
    PyObject *seq = payloads;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int64_t start = w->len;
    if (n > INT32_MAX)
        return fallback_int();
    if (W_RESERVE(w, 61 + n * 16) < 0)
        return -1;
    memset(w->buf + start, 0, 61);
    w->len += 61;
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Program *prog = NULL;
    int len_sz = 1, vl_sz = 1;
    (void)val;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (n != PySequence_Fast_GET_SIZE(seq))
            return fallback_int();
        items = PySequence_Fast_ITEMS(seq);
        prefetch_records(items, i, n, prog);
        PyObject *p = items[i];
        /* The record is [length][0][0][offset delta][0x01][value length][value][0]: the
         * value is encoded in place after a header whose varint sizes are guessed from
         * the previous record, and moved only when the guess was wrong. */
        uint64_t od = zigzag(i);
        int od_sz = uvarint_size(od);
        int64_t rec_start = w->len;
        int guess = len_sz + 3 + od_sz + vl_sz;
        if (W_RESERVE(w, guess + 64) < 0)
            return -1;
        Writer vw = {w->buf, rec_start + guess, w->cap, w->bytes}; /* shares w's buffer */
        Py_INCREF(p);
        int rc = encode_payload(p, c, &vw, &prog);
        Py_DECREF(p);
        w->buf = vw.buf; /* the buffer may have moved */
        w->cap = vw.cap;
        w->bytes = vw.bytes;
        if (rc < 0)
            return -1;
        int64_t vlen = vw.len - rec_start - guess;
        uint64_t vl = zigzag(vlen);
        int64_t body = 1 + 1 + od_sz + 1 + uvarint_size(vl) + vlen + 1;
        len_sz = uvarint_size(zigzag(body));
        vl_sz = uvarint_size(vl);
        int header = len_sz + 3 + od_sz + vl_sz;
        /* room for a longer header and the trailing headers-count byte */
        if (W_RESERVE(&vw, (header > guess ? header - guess : 0) + 1) < 0) {
            w->buf = vw.buf;
            w->cap = vw.cap;
            w->bytes = vw.bytes;
            return -1;
        }
        w->buf = vw.buf;
        w->cap = vw.cap;
        w->bytes = vw.bytes;
        if (header != guess)
            memmove(w->buf + rec_start + header, w->buf + rec_start + guess, (size_t)vlen);
        w->len = rec_start;
        w_uvarint_unchecked(w, zigzag(body));
        w->buf[w->len++] = 0; /* attributes */
        w->buf[w->len++] = 0; /* timestamp delta 0 */
        w_uvarint_unchecked(w, od);
        w->buf[w->len++] = 1; /* null key (-1) */
        w_uvarint_unchecked(w, vl);
        w->len += vlen;
        w->buf[w->len++] = 0; /* no headers */
    }
    if (n != PySequence_Fast_GET_SIZE(seq) || w->len - start - 12 > INT32_MAX)
        return fallback_int();
    uint8_t *h = w->buf + start;
    put_data_batch_header(h, base_offset, epoch, ts, n, (size_t)(w->len - start));
    return 0;
}

/* encode_data_batch(base_offset, payloads, epoch, timestamp, resolve) -> bytes | None
 *
 * entries.encode_data_batch in one call: frame and encode every message, write the v2
 * records (offset delta i, timestamp delta 0, null key, no headers) and the batch header
 * (CREATE_TIME, producer id -1, base = max timestamp, CRC-32C). */
static PyObject *py_encode_data_batch(PyObject *self, PyObject *args) {
    PyObject *base_obj, *payloads, *epoch_obj, *ts_obj, *resolve;
    if (!PyArg_ParseTuple(args, "OOOOO:encode_data_batch", &base_obj, &payloads, &epoch_obj, &ts_obj, &resolve))
        return NULL;
    int64_t base_offset, epoch, ts;
    if (as_i64(base_obj, INT64_MIN, INT64_MAX, &base_offset) < 0 || as_i64(epoch_obj, INT32_MIN, INT32_MAX, &epoch) < 0 ||
        as_i64(ts_obj, INT64_MIN, INT64_MAX, &ts) < 0)
        Py_RETURN_NONE;
    if (!PyList_CheckExact(payloads) && !PyTuple_CheckExact(payloads))
        Py_RETURN_NONE;
    RtCache c = {resolve, 0};
    Writer w = {NULL, 0, 0, NULL}, val = {NULL, 0, 0, NULL};
    PyObject *res = NULL;
    Py_INCREF(payloads);
    if (w_bytes_start(&w, 61 + 64 * PySequence_Fast_GET_SIZE(payloads)) < 0) {
        Py_DECREF(payloads);
        return NULL;
    }
    if (write_data_batch(&w, &val, base_offset, payloads, epoch, ts, &c) == 0) {
        res = w_bytes_finish(&w);
    } else if (!error_is_fatal()) {
        PyErr_Clear();
        res = Py_None;
        Py_INCREF(res);
    }
    Py_DECREF(payloads);
    rtc_clear(&c);
    w_free(&w);
    w_free(&val);
    return res;
}

/* changed_positions(new, old, twins) -> (list[int], list) | None
 *
 * Where `new` holds items that are neither the same object nor equal (==) to those of
 * `old`, given `twins`: per position an item equal to old's there (another object, or the
 * same). Position i is unchanged when new[i] is old[i] or twins[i] (no look at the items),
 * or new[i] == old[i]. Returns the changed positions and the twins for `new` (an item
 * equal to new[i]: twins[i] when new[i] is old[i], else old[i] where unchanged, else new[i]).
 * None for anything but three lists of one length. */
static PyObject *py_changed_positions(PyObject *self, PyObject *args) {
    PyObject *a, *b, *t;
    if (!PyArg_ParseTuple(args, "OOO:changed_positions", &a, &b, &t))
        return NULL;
    if (!PyList_CheckExact(a) || !PyList_CheckExact(b) || !PyList_CheckExact(t) ||
        PyList_GET_SIZE(a) != PyList_GET_SIZE(b) || PyList_GET_SIZE(a) != PyList_GET_SIZE(t))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(a);
    PyObject *out = PyList_New(0), *twins = PyList_New(n);
    if (!out || !twins)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyList_GET_SIZE(a) != n || PyList_GET_SIZE(b) != n || PyList_GET_SIZE(t) != n) { /* (an __eq__ changed them) */
            Py_DECREF(out);
            Py_DECREF(twins);
            Py_RETURN_NONE;
        }
        PyObject *x = PyList_GET_ITEM(a, i), *y = PyList_GET_ITEM(b, i), *z = PyList_GET_ITEM(t, i), *twin;
        if (x == y) {
            twin = z;
        } else if (x == z) {
            twin = y;
        } else {
            Py_INCREF(x);
            Py_INCREF(y);
            int same = PyObject_RichCompareBool(x, y, Py_EQ);
            Py_DECREF(x);
            Py_DECREF(y);
            if (same < 0)
                goto error;
            if (PyList_GET_SIZE(a) != n || PyList_GET_SIZE(b) != n) {
                Py_DECREF(out);
                Py_DECREF(twins);
                Py_RETURN_NONE;
            }
            y = PyList_GET_ITEM(b, i);
            x = PyList_GET_ITEM(a, i);
            if (same) {
                twin = y;
            } else {
                twin = x;
                PyObject *idx = PyLong_FromSsize_t(i);
                if (!idx || PyList_Append(out, idx) < 0) {
                    Py_XDECREF(idx);
                    goto error;
                }
                Py_DECREF(idx);
            }
        }
        Py_INCREF(twin);
        PyList_SET_ITEM(twins, i, twin);
    }
    PyObject *res = PyTuple_Pack(2, out, twins);
    Py_DECREF(out);
    Py_DECREF(twins);
    return res;
error:
    Py_XDECREF(out);
    Py_XDECREF(twins); /* unfilled items are NULL: list_dealloc skips them */
    return NULL;
}

/* Whether CPython's rule lets a tuple leave the cycle collector's lists (see untracked_tuple). */
static int untrackable_tuple(PyObject *t) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); i++) {
        PyObject *x = PyTuple_GET_ITEM(t, i);
        if (PyObject_IS_GC(x) && (!PyTuple_CheckExact(x) || PyObject_GC_IsTracked(x)))
            return 0;
    }
    return 1;
}

/* untracked_tuple(list) -> tuple
 *
 * tuple(list), taken off the cycle collector's lists at once when none of its items can be
 * tracked: CPython's own rule (_PyTuple_MaybeUntrack: every item is of a type without GC
 * support, or an untracked tuple), which the collector otherwise applies only when a
 * collection first walks the tuple, visiting every item. For tuples of images' gc=False
 * structs (pmap.ChunkMap), made by the hundred thousand and kept. */
static PyObject *py_untracked_tuple(PyObject *self, PyObject *arg) {
    if (!PyList_CheckExact(arg)) {
        PyErr_SetString(PyExc_TypeError, "untracked_tuple(list)");
        return NULL;
    }
    PyObject *t = PyList_AsTuple(arg);
    if (t && PyObject_GC_IsTracked(t) && untrackable_tuple(t))
        PyObject_GC_UnTrack(t);
    return t;
}

/* chunks_updated(positions, chunks, changes, chunk_bits) -> tuple | None
 *
 * pmap.ChunkMap.updated's new value chunks: `chunks` (a tuple of tuples) with value v at
 * key k's position for each (k, v) of the dict `changes` (position p: chunk p >> chunk_bits,
 * item p & mask). Each touched chunk is copied once; new tuples are untracked by
 * untracked_tuple's rule. None when a key has no position (the map must be built afresh)
 * or anything is not of the expected types: the Python code then runs. */
static PyObject *py_chunks_updated(PyObject *self, PyObject *args) {
    PyObject *positions, *chunks, *changes;
    int bits;
    if (!PyArg_ParseTuple(args, "OOOi:chunks_updated", &positions, &chunks, &changes, &bits))
        return NULL;
    if (!PyDict_CheckExact(positions) || !PyTuple_CheckExact(chunks) || !PyDict_CheckExact(changes) || bits < 0 ||
        bits > 16)
        Py_RETURN_NONE;
    Py_ssize_t n = PyTuple_GET_SIZE(chunks), mask = ((Py_ssize_t)1 << bits) - 1;
    char *copied = PyMem_Calloc((size_t)n + 1, 1);
    if (!copied)
        return PyErr_NoMemory();
    PyObject *out = PyTuple_New(n);
    if (!out) {
        PyMem_Free(copied);
        return NULL;
    }
    for (Py_ssize_t c = 0; c < n; c++) {
        PyObject *chunk = PyTuple_GET_ITEM(chunks, c);
        Py_INCREF(chunk);
        PyTuple_SET_ITEM(out, c, chunk);
    }
    Py_ssize_t it = 0;
    PyObject *k, *v;
    while (PyDict_Next(changes, &it, &k, &v)) {
        PyObject *at = PyDict_GetItemWithError(positions, k);
        if (!at || !PyLong_CheckExact(at))
            goto fallback;
        Py_ssize_t p = PyLong_AsSsize_t(at);
        if (p < 0)
            goto fallback;
        Py_ssize_t c = p >> bits, j = p & mask;
        if (c >= n)
            goto fallback;
        PyObject *chunk = PyTuple_GET_ITEM(out, c);
        if (!PyTuple_CheckExact(chunk) || j >= PyTuple_GET_SIZE(chunk))
            goto fallback;
        if (!copied[c]) {  /* (a fresh copy, not yet seen by anyone: filled in place) */
            PyObject *fresh = PyTuple_GetSlice(chunk, 0, PyTuple_GET_SIZE(chunk));
            if (!fresh)
                goto error;
            if (fresh == chunk) {  /* (a whole-tuple slice can be the tuple itself) */
                Py_DECREF(fresh);
                fresh = PyTuple_New(PyTuple_GET_SIZE(chunk));
                if (!fresh)
                    goto error;
                for (Py_ssize_t q = 0; q < PyTuple_GET_SIZE(chunk); q++) {
                    Py_INCREF(PyTuple_GET_ITEM(chunk, q));
                    PyTuple_SET_ITEM(fresh, q, PyTuple_GET_ITEM(chunk, q));
                }
            }
            PyTuple_SET_ITEM(out, c, fresh);
            Py_DECREF(chunk);
            chunk = fresh;
            copied[c] = 1;
        }
        PyObject *old = PyTuple_GET_ITEM(chunk, j);
        Py_INCREF(v);
        PyTuple_SET_ITEM(chunk, j, v);
        Py_DECREF(old);
    }
    for (Py_ssize_t c = 0; c < n; c++) {
        PyObject *chunk = PyTuple_GET_ITEM(out, c);
        if (copied[c] && PyObject_GC_IsTracked(chunk) && untrackable_tuple(chunk))
            PyObject_GC_UnTrack(chunk);
    }
    if (PyObject_GC_IsTracked(out) && untrackable_tuple(out))
        PyObject_GC_UnTrack(out);
    PyMem_Free(copied);
    return out;
fallback:
    PyErr_Clear();
    PyMem_Free(copied);
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    PyMem_Free(copied);
    Py_DECREF(out);
    return NULL;
}

/* Partition registrations (image/components/partition.py) for the bulk replay loop, built by
 * filling a fresh instance's slots (as decoded messages are), every tuple the interned one
 * already in intern.py's tables. Each builder answers None for anything but its usual case
 * (or a tuple not interned yet): the Python code then runs, the one definition. */
enum { PR_REPLICAS, PR_DIRECTORIES, PR_ISR, PR_REMOVING, PR_ADDING, PR_LEADER, PR_LRS, PR_LEADER_EPOCH,
       PR_PARTITION_EPOCH, PR_ELR, PR_LAST_KNOWN_ELR, PR_FIELDS };
static const char *const pr_field_names[PR_FIELDS] = {
    "replicas", "directories", "isr", "removing_replicas", "adding_replicas", "leader", "leader_recovery_state",
    "leader_epoch", "partition_epoch", "elr", "last_known_elr"};
static PyObject *pr_cls = NULL;        /* the registration class, once configured */
static PyObject *pr_int_tuples = NULL; /* intern.py's table of int tuples (cleared in place, never replaced) */
static Py_ssize_t pr_offsets[PR_FIELDS];
/* Where a record class keeps the attributes a fast path reads (read in place: a generic
 * attribute look-up costs more than the whole merge in Python): the class last met, with
 * a strong reference while it is the one remembered. */
#define SLOTS_MAX 12
typedef struct {
    int n;
    const char *const *names;
    PyObject *strs[SLOTS_MAX];
    PyTypeObject *type;
    Py_ssize_t offsets[SLOTS_MAX];
} RecordSlots;

/* Whether instances of `t` keep every attribute of `rs` in a member slot (remembered). */
static int record_slots(RecordSlots *rs, PyTypeObject *t) {
    if (t == rs->type)
        return 1;
    Py_ssize_t offsets[SLOTS_MAX];
    for (int i = 0; i < rs->n; i++) {
        if (!rs->strs[i] && !(rs->strs[i] = PyUnicode_InternFromString(rs->names[i]))) {
            PyErr_Clear();
            return 0;
        }
        offsets[i] = member_offset((PyObject *)t, rs->strs[i]);
        if (offsets[i] < (Py_ssize_t)sizeof(PyObject) || offsets[i] + (Py_ssize_t)sizeof(PyObject *) > t->tp_basicsize)
            return 0;
    }
    memcpy(rs->offsets, offsets, sizeof(Py_ssize_t) * (size_t)rs->n);
    Py_INCREF(t);
    Py_XSETREF(rs->type, t);
    return 1;
}

/* The attributes of `r` named by `rs`, borrowed, into out[]; 0 if one is not a slot or unset. */
static int read_record_slots(RecordSlots *rs, PyObject *r, PyObject **out) {
    if (!record_slots(rs, Py_TYPE(r)))
        return 0;
    for (int i = 0; i < rs->n; i++)
        if (!(out[i] = *(PyObject **)((char *)r + rs->offsets[i])))
            return 0;
    return 1;
}

/* A PartitionChangeRecord's attributes read: the five that must be None, then the rest. */
enum { CH_REPLICAS, CH_REMOVING, CH_ADDING, CH_ELR, CH_LAST_KNOWN_ELR, CH_DIRECTORIES, CH_ISR, CH_LEADER, CH_LRS,
       CH_NAMES };
static const char *const ch_names[CH_NAMES] = {"replicas", "removing_replicas", "adding_replicas",
                                               "eligible_leader_replicas", "last_known_elr", "directories", "isr",
                                               "leader", "leader_recovery_state"};
static RecordSlots change_slots = {CH_NAMES, ch_names};
/* A PartitionRecord's: the four that must be empty, then the rest. */
enum { PT_REMOVING, PT_ADDING, PT_ELR, PT_LAST_KNOWN_ELR, PT_REPLICAS, PT_ISR, PT_DIRECTORIES, PT_LEADER, PT_LRS,
       PT_LEADER_EPOCH, PT_PARTITION_EPOCH, PT_NAMES };
static const char *const pt_names[PT_NAMES] = {"removing_replicas", "adding_replicas", "eligible_leader_replicas",
                                               "last_known_elr", "replicas", "isr", "directories", "leader",
                                               "leader_recovery_state", "leader_epoch", "partition_epoch"};
static RecordSlots record_slots_pt = {PT_NAMES, pt_names};
static PyObject *pr_one = NULL;
static PyObject *pr_uuid_tuples = NULL; /* intern.py's table of Uuid tuples */
static PyObject *pr_migrating = NULL;   /* tuple: the MIGRATING directory tuple for 0, 1, ... replicas */

/* An int attribute's value in [-2, 1], or 2 for anything else (errors cleared). */
static int small_attr(PyObject *v) {
    if (!v || !PyLong_CheckExact(v)) {
        PyErr_Clear();
        return 2;
    }
    int overflow;
    long x = PyLong_AsLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 2;
    }
    return x < -2 || x > 1 ? 2 : (int)x;
}

/* configure_partitions(cls, int_tuples, uuid_tuples, migrating_by_count) -> bool: whether
 * partition_merge and partition_from_record build `cls`. */
static PyObject *py_configure_partitions(PyObject *self, PyObject *args) {
    PyObject *cls, *ints, *uuids, *migrating;
    if (!PyArg_ParseTuple(args, "OO!O!O!:configure_partitions", &cls, &PyDict_Type, &ints, &PyDict_Type, &uuids,
                          &PyTuple_Type, &migrating))
        return NULL;
    Py_CLEAR(pr_cls);
    if (!PyType_Check(cls))
        Py_RETURN_FALSE;
    PyObject *fields = PyObject_GetAttrString(cls, "__struct_fields__");
    if (!fields) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    int ok = PyTuple_CheckExact(fields) && PyTuple_GET_SIZE(fields) == PR_FIELDS;
    for (Py_ssize_t i = 0; ok && i < PR_FIELDS; i++) {
        PyObject *name = PyTuple_GET_ITEM(fields, i);
        ok = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, pr_field_names[i]) == 0 &&
             (pr_offsets[i] = member_offset(cls, name)) >= 0;
    }
    Py_DECREF(fields);
    if (!ok || !fillable_struct(cls, pr_offsets, PR_FIELDS))
        Py_RETURN_FALSE;
    if (!pr_one && !(pr_one = PyLong_FromLong(1)))
        return NULL;
    Py_XSETREF(pr_int_tuples, Py_NewRef(ints));
    Py_XSETREF(pr_uuid_tuples, Py_NewRef(uuids));
    Py_XSETREF(pr_migrating, Py_NewRef(migrating));
    pr_cls = Py_NewRef(cls);
    Py_RETURN_TRUE;
}

/* A registration of pr_cls with these field values (references stolen, also on failure). */
static PyObject *new_registration(PyObject **vals) {
    PyObject *res = ((PyTypeObject *)pr_cls)->tp_alloc((PyTypeObject *)pr_cls, 0);
    for (int i = 0; i < PR_FIELDS; i++) {
        if (res)
            *(PyObject **)((char *)res + pr_offsets[i]) = vals[i];
        else
            Py_DECREF(vals[i]);
        vals[i] = NULL;
    }
    return res;
}

/* The interned tuple in `table` equal to the tuple `key` (a new reference; `key` released),
 * or NULL with no error when it is not there yet or empty (the Python code then interns it). */
static PyObject *interned_tuple(PyObject *table, PyObject *key) {
    if (!key)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(table, key);
    Py_DECREF(key);
    if (!found || !PyTuple_CheckExact(found) || PyTuple_GET_SIZE(found) == 0)
        return NULL;
    return Py_NewRef(found);
}

/* interned_tuple of the list `values`. */
static PyObject *interned_of(PyObject *table, PyObject *values) { return interned_tuple(table, PyList_AsTuple(values)); }

static int empty_list_or_none(PyObject *v) {
    return v == Py_None || (PyList_CheckExact(v) && PyList_GET_SIZE(v) == 0);
}

/* A registration's four fields the usual shape leaves empty (no reassignment, no ELR): the
 * empty tuple in each; -1 if it cannot be had. */
static int pr_set_empty_lists(PyObject **vals) {
    PyObject *empty = PyTuple_New(0);
    if (!empty)
        return -1;
    vals[PR_REMOVING] = Py_NewRef(empty);
    vals[PR_ADDING] = Py_NewRef(empty);
    vals[PR_ELR] = Py_NewRef(empty);
    vals[PR_LAST_KNOWN_ELR] = empty;
    return 0;
}

/* partition_from_record(record) -> registration | None
 *
 * bulk.py's common shape of a PartitionRecord (replicas and an ISR, RECOVERED or RECOVERING,
 * no reassignment, no ELR, directories given for every replica or none) as a registration,
 * every tuple the interned one already in the tables. None for anything else, or a tuple
 * not interned yet: registration_from_record then runs, the one definition. */
static PyObject *py_partition_from_record(PyObject *self, PyObject *m) {
    PyObject *f[PT_NAMES];
    PyObject *vals[PR_FIELDS] = {NULL};
    if (!pr_cls || !read_record_slots(&record_slots_pt, m, f))
        goto none;
    for (int i = PT_REMOVING; i <= PT_LAST_KNOWN_ELR; i++)
        if (!empty_list_or_none(f[i]))
            goto none;
    PyObject *reps = f[PT_REPLICAS], *x = f[PT_ISR], *d = f[PT_DIRECTORIES];
    if (!PyList_CheckExact(reps) || !PyList_GET_SIZE(reps) || !PyList_CheckExact(x) || !PyList_GET_SIZE(x))
        goto none;
    int lrs = small_attr(f[PT_LRS]);
    if (lrs != 0 && lrs != 1)
        goto none;
    if (!PyLong_CheckExact(f[PT_LEADER]) || !PyLong_CheckExact(f[PT_LEADER_EPOCH]) ||
        !PyLong_CheckExact(f[PT_PARTITION_EPOCH]))
        goto none;
    if (!(vals[PR_REPLICAS] = interned_of(pr_int_tuples, reps)))
        goto none;
    int same = PyObject_RichCompareBool(x, reps, Py_EQ);
    if (same < 0)
        goto none;
    if (same)
        vals[PR_ISR] = Py_NewRef(vals[PR_REPLICAS]);
    else if (!(vals[PR_ISR] = interned_of(pr_int_tuples, x)))
        goto none;
    Py_ssize_t n = PyList_GET_SIZE(reps);
    if (empty_list_or_none(d)) {
        if (n >= PyTuple_GET_SIZE(pr_migrating))
            goto none;
        vals[PR_DIRECTORIES] = Py_NewRef(PyTuple_GET_ITEM(pr_migrating, n));
    } else if (!PyList_CheckExact(d) || PyList_GET_SIZE(d) != n || !(vals[PR_DIRECTORIES] = interned_of(pr_uuid_tuples, d))) {
        goto none;
    }
    if (pr_set_empty_lists(vals) < 0)
        goto none;
    vals[PR_LEADER] = Py_NewRef(f[PT_LEADER]);
    vals[PR_LRS] = Py_NewRef(f[PT_LRS]);
    vals[PR_LEADER_EPOCH] = Py_NewRef(f[PT_LEADER_EPOCH]);
    vals[PR_PARTITION_EPOCH] = Py_NewRef(f[PT_PARTITION_EPOCH]);
    return new_registration(vals);
none:
    PyErr_Clear();
    for (int i = 0; i < PR_FIELDS; i++)
        Py_XDECREF(vals[i]);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------- prebuilt partitions
 *
 * pb_build: a PartitionRecord's value (after its frame), read straight from the bytes into
 * the registration partition_from_record would build from the decoded message, as a
 * PrebuiltPartition(topic_id, partition_id, registration). Why: a snapshot is almost all
 * PartitionRecords, and a loader only wants their registrations; the message, its five
 * lists, its LogEntry and their release cost more than the registration itself. Only the
 * usual shape is built, and only with the same interned tuples (see py_partition_from_record);
 * for anything else, or anything unusual in the bytes (a tag it does not know, a null
 * array, a size that does not add up), it answers NULL with no error and the record is
 * decoded as always, so every error and every other shape keeps its one definition.
 * The layout read is Kafka's PartitionRecord, versions 0-2 (flexible from 0): PartitionId,
 * TopicId, Replicas, Isr, RemovingReplicas, AddingReplicas, Leader, LeaderEpoch,
 * PartitionEpoch, Directories (1+); tagged LeaderRecoveryState (0), and (2+)
 * EligibleLeaderReplicas (1) and LastKnownElr (2). */

/* A compact int32 array at *ppos: its length (-1: null) and where its items start. */
static int pb_int32s(const uint8_t *b, int64_t len, int64_t *ppos, int64_t *n, int64_t *at) {
    if (rd_len(1, 1, b, len, ppos, n) < 0)
        return -1;
    if (*n < 0)
        return 0;
    if (*n > (len - *ppos) / 4)
        return -1;
    *at = *ppos;
    *ppos += 4 * *n;
    return 0;
}

static PyObject *pb_long(int64_t v) {
    if (v >= SMALL_INT_MIN && v <= SMALL_INT_MAX)
        return Py_NewRef(small_ints[v - SMALL_INT_MIN]);
    return PyLong_FromLongLong(v);
}

/* The int tuple of n big-endian int32s at p, interned (interned_tuple). */
static PyObject *pb_ints(const uint8_t *p, int64_t n) {
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    if (!t)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *v = pb_long((int32_t)be32(p + 4 * i));
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
    }
    return interned_tuple(pr_int_tuples, t);
}

/* The Uuid tuple of n 16-byte ids at p, interned (interned_tuple). */
static PyObject *pb_uuids(const uint8_t *p, int64_t n) {
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    if (!t)
        return NULL;
    for (int64_t i = 0; i < n; i++) {
        PyObject *v = make_uuid(p + 16 * i);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
    }
    return interned_tuple(pr_uuid_tuples, t);
}

/* A nullable compact array in a tag of `size` bytes at *ppos that is null or empty. */
static int pb_empty_tag(const uint8_t *b, int64_t len, int64_t *ppos, int64_t end) {
    int64_t n;
    if (rd_len(1, 1, b, len, ppos, &n) < 0 || n > 0)
        return -1;
    return *ppos == end ? 0 : -1;
}

static PyObject *pb_build(const uint8_t *b, int64_t len, int64_t pos, int64_t version) {
    if (!pr_cls || !PrebuiltNT || version < 0 || version > 2 || pos + 20 > len)
        return NULL;
    int64_t pid = (int32_t)be32(b + pos);
    const uint8_t *topic = b + pos + 4;
    pos += 20;
    int64_t nr, ar = 0, ni, ai = 0, nrm, arm = 0, nad, aad = 0, nd = 0, ad = 0;
    if (pb_int32s(b, len, &pos, &nr, &ar) < 0 || pb_int32s(b, len, &pos, &ni, &ai) < 0 ||
        pb_int32s(b, len, &pos, &nrm, &arm) < 0 || pb_int32s(b, len, &pos, &nad, &aad) < 0)
        return NULL;
    if (nr <= 0 || ni <= 0 || nrm != 0 || nad != 0 || pos + 12 > len)
        return NULL;
    int64_t leader = (int32_t)be32(b + pos), leader_epoch = (int32_t)be32(b + pos + 4),
            partition_epoch = (int32_t)be32(b + pos + 8);
    pos += 12;
    if (version >= 1) {
        if (rd_len(1, 1, b, len, &pos, &nd) < 0 || nd < 0 || nd > (len - pos) / 16)
            return NULL;
        ad = pos;
        pos += 16 * nd;
    }
    int64_t ntags, lrs = 0;
    if (rd_uvarint(b, len, &pos, &ntags) < 0)
        return NULL;
    for (int64_t k = 0; k < ntags; k++) {
        int64_t tag, size;
        if (rd_uvarint(b, len, &pos, &tag) < 0 || rd_uvarint(b, len, &pos, &size) < 0 || size > len - pos)
            return NULL;
        int64_t end = pos + size;
        if (tag == 0 && size == 1)
            lrs = (int8_t)b[pos++];
        else if ((tag == 1 || tag == 2) && version >= 2) {
            if (pb_empty_tag(b, len, &pos, end) < 0)
                return NULL;
        } else
            return NULL;
    }
    if (pos != len || (lrs != 0 && lrs != 1) || (nd != 0 && nd != nr))
        return NULL;
    if (nd == 0 && nr >= PyTuple_GET_SIZE(pr_migrating))
        return NULL;
    PyObject *vals[PR_FIELDS] = {NULL};
    PyObject *items[3] = {NULL};
    if (!(vals[PR_REPLICAS] = pb_ints(b + ar, nr)))
        goto none;
    if (ni == nr && memcmp(b + ar, b + ai, (size_t)(4 * nr)) == 0)
        vals[PR_ISR] = Py_NewRef(vals[PR_REPLICAS]);
    else if (!(vals[PR_ISR] = pb_ints(b + ai, ni)))
        goto none;
    if (nd == 0)
        vals[PR_DIRECTORIES] = Py_NewRef(PyTuple_GET_ITEM(pr_migrating, nr));
    else if (!(vals[PR_DIRECTORIES] = pb_uuids(b + ad, nd)))
        goto none;
    if (pr_set_empty_lists(vals) < 0)
        goto none;
    if (!(vals[PR_LEADER] = pb_long(leader)) || !(vals[PR_LRS] = pb_long(lrs)) ||
        !(vals[PR_LEADER_EPOCH] = pb_long(leader_epoch)) || !(vals[PR_PARTITION_EPOCH] = pb_long(partition_epoch)))
        goto none;
    if (!(items[0] = make_uuid(topic)) || !(items[1] = pb_long(pid)))
        goto none;
    if (!(items[2] = new_registration(vals)))
        goto none;
    return new_ntuple(PrebuiltNT, prebuilt_direct, items, 3, g_untrack);
none:
    PyErr_Clear();  /* (a failed allocation too: the usual decode meets it again and reports it) */
    for (int i = 0; i < PR_FIELDS; i++)
        Py_XDECREF(vals[i]);
    for (int i = 0; i < 3; i++)
        Py_XDECREF(items[i]);
    return NULL;
}
/* ------------------------------------------------------------ end of prebuilt partitions */

/* partition_merge(registration, change) -> registration | None
 *
 * PartitionRegistration.merge's usual case: a PartitionChangeRecord that changes the ISR,
 * the leader or the recovery state only (no directories, not even an empty list), of a
 * registration whose directories match its replicas. */
static PyObject *py_partition_merge(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "partition_merge(registration, change)");
        return NULL;
    }
    PyObject *prev = args[0], *r = args[1];
    PyObject *got[CH_NAMES];
    PyObject *vals[PR_FIELDS] = {NULL};
    int i;
    if (!pr_cls || Py_TYPE(prev) != (PyTypeObject *)pr_cls || !read_record_slots(&change_slots, r, got))
        goto none;
#define PR(k) (*(PyObject **)((char *)prev + pr_offsets[(k)]))
    PyObject *replicas = PR(PR_REPLICAS), *dirs = PR(PR_DIRECTORIES);
    if (!PyTuple_CheckExact(replicas) || !PyTuple_CheckExact(dirs) || PyTuple_GET_SIZE(replicas) == 0 ||
        PyTuple_GET_SIZE(dirs) != PyTuple_GET_SIZE(replicas))
        goto none;
    for (i = CH_REPLICAS; i <= CH_LAST_KNOWN_ELR; i++)
        if (got[i] != Py_None)
            goto none;
    if (got[CH_DIRECTORIES] != Py_None)
        goto none;  /* (directories given, even empty: merge() decides) */
    int lrs = small_attr(got[CH_LRS]), leader = small_attr(got[CH_LEADER]);
    if (lrs == -1)
        vals[PR_LRS] = Py_NewRef(PR(PR_LRS));
    else if (lrs == 0 || lrs == 1)
        vals[PR_LRS] = Py_NewRef(got[CH_LRS]);
    else
        goto none;  /* (not a recovery state: merge() raises) */
    if (got[CH_ISR] == Py_None)
        vals[PR_ISR] = Py_NewRef(PR(PR_ISR));
    else if (!PyList_CheckExact(got[CH_ISR]) || !(vals[PR_ISR] = interned_of(pr_int_tuples, got[CH_ISR])))
        goto none;  /* (not interned yet, or empty: merge() interns it) */
    if (leader == -2) {  /* NO_LEADER_CHANGE */
        vals[PR_LEADER] = Py_NewRef(PR(PR_LEADER));
        vals[PR_LEADER_EPOCH] = Py_NewRef(PR(PR_LEADER_EPOCH));
    } else {
        if (!PyLong_CheckExact(got[CH_LEADER]))
            goto none;
        vals[PR_LEADER] = Py_NewRef(got[CH_LEADER]);
        if (!(vals[PR_LEADER_EPOCH] = PyNumber_Add(PR(PR_LEADER_EPOCH), pr_one)))
            goto none;
    }
    if (!(vals[PR_PARTITION_EPOCH] = PyNumber_Add(PR(PR_PARTITION_EPOCH), pr_one)))
        goto none;
    vals[PR_REPLICAS] = Py_NewRef(replicas);
    vals[PR_DIRECTORIES] = Py_NewRef(dirs);
    vals[PR_REMOVING] = Py_NewRef(PR(PR_REMOVING));
    vals[PR_ADDING] = Py_NewRef(PR(PR_ADDING));
    vals[PR_ELR] = Py_NewRef(PR(PR_ELR));
    vals[PR_LAST_KNOWN_ELR] = Py_NewRef(PR(PR_LAST_KNOWN_ELR));
#undef PR
    return new_registration(vals);
none:
    PyErr_Clear();
    for (i = 0; i < PR_FIELDS; i++)
        Py_XDECREF(vals[i]);
    Py_RETURN_NONE;
}

/* values_records_size(values, first_delta) -> int | None
 *
 * The bytes the v2 records of these framed values take in a data batch (as
 * encode_value_batch writes them) at offset deltas first_delta, first_delta + 1, ...:
 * batchfile.records_size of their lengths. None for anything but a list or tuple of bytes. */
static PyObject *py_values_records_size(PyObject *self, PyObject *args) {
    PyObject *values;
    long long first;
    if (!PyArg_ParseTuple(args, "OL:values_records_size", &values, &first))
        return NULL;
    if ((!PyList_CheckExact(values) && !PyTuple_CheckExact(values)) || first < 0 || first > INT32_MAX)
        Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
    PyObject **items = PySequence_Fast_ITEMS(values);
    int64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = items[i];
        if (!PyBytes_CheckExact(v))
            Py_RETURN_NONE;
        int64_t vlen = PyBytes_GET_SIZE(v);
        int64_t body = 4 + uvarint_size(zigzag(first + i)) + uvarint_size(zigzag(vlen)) + vlen;
        total += uvarint_size(zigzag(body)) + body;
    }
    return PyLong_FromLongLong(total);
}

/* encode_value_batch(base_offset, values, epoch, timestamp) -> bytes | None
 *
 * entries.encode_data_batch for records whose framed values are already encoded (the
 * bytes encode_values returns): the same v2 records and header around them, without
 * encoding any message. None for anything but a list or tuple of exact bytes. */
static PyObject *py_encode_value_batch(PyObject *self, PyObject *args) {
    PyObject *base_obj, *values, *epoch_obj, *ts_obj;
    if (!PyArg_ParseTuple(args, "OOOO:encode_value_batch", &base_obj, &values, &epoch_obj, &ts_obj))
        return NULL;
    int64_t base_offset, epoch, ts;
    if (as_i64(base_obj, INT64_MIN, INT64_MAX, &base_offset) < 0 || as_i64(epoch_obj, INT32_MIN, INT32_MAX, &epoch) < 0 ||
        as_i64(ts_obj, INT64_MIN, INT64_MAX, &ts) < 0)
        Py_RETURN_NONE;
    if (!PyList_CheckExact(values) && !PyTuple_CheckExact(values))
        Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(values);
    if (n > INT32_MAX)
        Py_RETURN_NONE;
    PyObject **items = PySequence_Fast_ITEMS(values);
    int64_t total = 61;
    for (Py_ssize_t i = 0; i < n; i++) { /* every item is bytes: the exact size is known up front */
        PyObject *v = items[i];
        if (!PyBytes_CheckExact(v))
            Py_RETURN_NONE;
        int64_t vlen = PyBytes_GET_SIZE(v);
        uint64_t vl = zigzag(vlen);
        uint64_t od = zigzag(i);
        int64_t body = 1 + 1 + uvarint_size(od) + 1 + uvarint_size(vl) + vlen + 1;
        total += uvarint_size(zigzag(body)) + body;
    }
    if (total - 12 > INT32_MAX)
        Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (!out)
        return NULL;
    uint8_t *h = (uint8_t *)PyBytes_AS_STRING(out);
    Writer w = {h, 61, total, NULL};
    for (Py_ssize_t i = 0; i < n; i++) { /* (the list cannot change here: no Python code runs) */
        PyObject *v = items[i];
        int64_t vlen = PyBytes_GET_SIZE(v);
        uint64_t vl = zigzag(vlen);
        uint64_t od = zigzag(i);
        int64_t body = 1 + 1 + uvarint_size(od) + 1 + uvarint_size(vl) + vlen + 1;
        w_uvarint_unchecked(&w, zigzag(body));
        w.buf[w.len++] = 0; /* attributes */
        w.buf[w.len++] = 0; /* timestamp delta 0 */
        w_uvarint_unchecked(&w, od);
        w.buf[w.len++] = 1; /* null key (-1) */
        w_uvarint_unchecked(&w, vl);
        memcpy(w.buf + w.len, PyBytes_AS_STRING(v), (size_t)vlen);
        w.len += vlen;
        w.buf[w.len++] = 0; /* no headers */
    }
    put_data_batch_header(h, base_offset, epoch, ts, n, (size_t)total);
    return out;
}

/* Batch-level prefetching: batch tuple, its payload list, the list's item array, the
 * first payload and its message, at decreasing distances ahead. */
static inline PyObject *batch_payloads(PyObject *b) {
    if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != 5)
        return NULL;
    PyObject *ps = PyTuple_GET_ITEM(b, 4);
    return (PyList_CheckExact(ps) || PyTuple_CheckExact(ps)) ? ps : NULL;
}

static inline void prefetch_batches(PyObject *batches, Py_ssize_t i) {
    Py_ssize_t n = PyList_GET_SIZE(batches);
    PyObject **items = ((PyListObject *)batches)->ob_item;
    if (i + 8 < n)
        PREFETCH(items[i + 8]);
    if (i + 6 < n) {
        PyObject *b = items[i + 6];
        if (PyTuple_Check(b) && PyTuple_GET_SIZE(b) == 5)
            PREFETCH(PyTuple_GET_ITEM(b, 4));
    }
    if (i + 4 < n) {
        PyObject *ps = batch_payloads(items[i + 4]);
        if (ps && PyList_CheckExact(ps) && PyList_GET_SIZE(ps) > 0)
            PREFETCH(((PyListObject *)ps)->ob_item);
    }
    if (i + 3 < n) {
        PyObject *ps = batch_payloads(items[i + 3]);
        if (ps && PySequence_Fast_GET_SIZE(ps) > 0)
            PREFETCH(PySequence_Fast_ITEMS(ps)[0]);
    }
    if (i + 2 < n) {
        PyObject *ps = batch_payloads(items[i + 2]);
        if (ps && PySequence_Fast_GET_SIZE(ps) > 0) {
            PyObject *m = payload_message(PySequence_Fast_ITEMS(ps)[0]);
            if (m)
                PREFETCH(m);
        }
    }
}

/* encode_batches(batches, resolve) -> (list[bytes | None], list[int])
 *
 * Many data batches in one call: batches is a list of (base_offset, epoch, timestamp,
 * control, payloads) tuples (NamedTuples welcome). An item is None where Python must
 * write the batch (a control batch, or anything the C encoder gives up on); the second
 * list holds those positions. */
static PyObject *py_encode_batches(PyObject *self, PyObject *args) {
    PyObject *batches, *resolve;
    if (!PyArg_ParseTuple(args, "O!O:encode_batches", &PyList_Type, &batches, &resolve))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(batches);
    PyObject *out = PyList_New(n);
    if (!out)
        return NULL;
    PyObject *todo = PyList_New(0);
    if (!todo) {
        Py_DECREF(out);
        return NULL;
    }
    RtCache c = {resolve, 0};
    Writer w = {NULL, 0, 0, NULL}, val = {NULL, 0, 0, NULL};
    int64_t per_record = 64;
    Py_INCREF(batches);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *res = NULL;
        if (i >= PyList_GET_SIZE(batches)) {
            res = Py_None;
            Py_INCREF(res);
            PyList_SET_ITEM(out, i, res);
            goto left_to_python;
        }
        prefetch_batches(batches, i);
        PyObject *b = PyList_GET_ITEM(batches, i);
        Py_INCREF(b);
        int64_t base_offset, epoch, ts;
        if (PyTuple_Check(b) && PyTuple_GET_SIZE(b) == 5 && PyTuple_GET_ITEM(b, 3) == Py_False &&
            as_i64(PyTuple_GET_ITEM(b, 0), INT64_MIN, INT64_MAX, &base_offset) == 0 &&
            as_i64(PyTuple_GET_ITEM(b, 1), INT32_MIN, INT32_MAX, &epoch) == 0 &&
            as_i64(PyTuple_GET_ITEM(b, 2), INT64_MIN, INT64_MAX, &ts) == 0 &&
            (PyList_CheckExact(PyTuple_GET_ITEM(b, 4)) || PyTuple_CheckExact(PyTuple_GET_ITEM(b, 4)))) {
            PyObject *ps = PyTuple_GET_ITEM(b, 4);
            /* size hint: the previous batch's bytes per record */
            int64_t hint = 61 + (int64_t)PySequence_Fast_GET_SIZE(ps) * per_record + 64;
            if (w_bytes_start(&w, hint) < 0) {
                Py_DECREF(b);
                goto error;
            }
            if (write_data_batch(&w, &val, base_offset, ps, epoch, ts, &c) == 0) {
                Py_ssize_t nrec = PySequence_Fast_GET_SIZE(ps);
                if (nrec > 0)
                    per_record = (w.len - 61) / nrec + 1;
                res = w_bytes_finish(&w);
                if (!res) {
                    Py_DECREF(b);
                    goto error;
                }
            } else if (error_is_fatal()) {
                w_free(&w);
                Py_DECREF(b);
                goto error;
            } else {
                PyErr_Clear();
                w_free(&w);
            }
        }
        Py_DECREF(b);
        if (res) {
            PyList_SET_ITEM(out, i, res);
            continue;
        }
        Py_INCREF(Py_None);
        PyList_SET_ITEM(out, i, Py_None);
    left_to_python: {
        PyObject *idx = PyLong_FromSsize_t(i);
        if (!idx || PyList_Append(todo, idx) < 0) {
            Py_XDECREF(idx);
            goto error;
        }
        Py_DECREF(idx);
    }
    }
    Py_DECREF(batches);
    rtc_clear(&c);
    w_free(&w);
    w_free(&val);
    PyObject *res = PyTuple_Pack(2, out, todo);
    Py_DECREF(out);
    Py_DECREF(todo);
    return res;
error:
    Py_DECREF(batches);
    Py_DECREF(todo);
    Py_DECREF(out); /* unfilled items are NULL: list_dealloc skips them */
    rtc_clear(&c);
    w_free(&w);
    w_free(&val);
    return NULL;
}

/* ------------------------------------------------------------------------ file writes */

#if defined(__unix__) || defined(__APPLE__)
#include <errno.h>
#include <unistd.h>
#define KS_PWRITE_EACH 1

/* One (fd, bytes, position) item of pwrite_each, read with the GIL held. */
typedef struct {
    int fd;
    const char *buf;
    Py_ssize_t len;
    long long pos;
} ks_write_job;

/* pwrite_each(items, piece) -> (items written, errno, bytes of the next item written): each
 * item (a tuple whose first three entries are fd, bytes, position) is written whole, in
 * order, in pwrite calls of at most `piece` bytes, with the GIL released once for all of
 * them. It stops at the first item that fails: errno, or 0 when a call wrote nothing.
 * Why: a writer thread that wrote each item with os.pwrite took the GIL back after every
 * call, and waited for it while the simulator's thread ran. */
static PyObject *py_pwrite_each(PyObject *self, PyObject *args) {
    PyObject *items;
    Py_ssize_t piece;
    if (!PyArg_ParseTuple(args, "O!n:pwrite_each", &PyList_Type, &items, &piece))
        return NULL;
    if (piece <= 0) {
        PyErr_SetString(PyExc_ValueError, "pwrite_each: piece must be positive");
        return NULL;
    }
    items = PySequence_List(items); /* (a list of our own: nobody changes it while the GIL is away) */
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(items);
    ks_write_job *jobs = PyMem_Malloc(sizeof(ks_write_job) * (size_t)(n ? n : 1));
    if (jobs == NULL) {
        Py_DECREF(items);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) < 3 || !PyBytes_Check(PyTuple_GET_ITEM(item, 1))) {
            PyErr_SetString(PyExc_TypeError, "pwrite_each: each item is (fd, bytes, position, ...)");
            goto fail;
        }
        long fd = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
        long long pos = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 2));
        if (PyErr_Occurred())
            goto fail;
        if (fd < 0 || fd > INT32_MAX || pos < 0) {
            PyErr_SetString(PyExc_ValueError, "pwrite_each: a negative descriptor or position");
            goto fail;
        }
        PyObject *raw = PyTuple_GET_ITEM(item, 1);
        jobs[i].fd = (int)fd;
        jobs[i].buf = PyBytes_AS_STRING(raw);
        jobs[i].len = PyBytes_GET_SIZE(raw);
        jobs[i].pos = pos;
    }
    Py_ssize_t k = 0, done = 0;
    int err = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; k < n; k++) {
        ks_write_job *j = &jobs[k];
        done = 0;
        while (done < j->len) {
            size_t want = (size_t)(j->len - done < piece ? j->len - done : piece);
            ssize_t w = pwrite(j->fd, j->buf + done, want, (off_t)(j->pos + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                err = w < 0 ? errno : 0;
                break;
            }
            done += w;
        }
        if (done < j->len)
            break;
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(jobs);
    Py_DECREF(items);
    return Py_BuildValue("(nin)", k, err, k < n ? done : (Py_ssize_t)0);
fail:
    PyMem_Free(jobs);
    Py_DECREF(items);
    return NULL;
}
#endif

/* ------------------------------------------------------------------------ module functions */

static PyObject *py_crc32c(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*:crc32c", &view))
        return NULL;
    uint32_t c;
    Py_BEGIN_ALLOW_THREADS
    c = crc32c(view.buf, (size_t)view.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyObject *py_crc32c_software(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*:crc32c_software", &view))
        return NULL;
    uint32_t c = crc_sw(0, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static int set_type(PyObject *o, PyTypeObject **slot, const char *what) {
    if (o == NULL || o == Py_None)
        return 0;
    if (!PyType_Check(o)) {
        PyErr_Format(PyExc_TypeError, "configure: %s must be a class", what);
        return -1;
    }
    Py_INCREF(o);
    Py_XSETREF(*slot, (PyTypeObject *)o);
    return 0;
}

static PyObject *py_configure(PyObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"uuid", "record", "log_entry", "payload", "metadata_record", "untrack", "populate",
                             "arena_cache", "prebuilt_partition", NULL};
    PyObject *uuid = NULL, *record = NULL, *log_entry = NULL, *payload = NULL, *mdrec = NULL, *prebuilt = NULL;
    int untrack = -1, populate = -1, arena_cache = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OOOOO$ppiO:configure", kwlist, &uuid, &record, &log_entry, &payload,
                                     &mdrec, &untrack, &populate, &arena_cache, &prebuilt))
        return NULL;
    if (arena_cache >= 0)
        arena_cache_set(arena_cache);
    if (untrack >= 0)
        g_untrack = untrack;
    if (populate >= 0)
        g_populate = populate;
    if (uuid && uuid != Py_None && (!PyType_Check(uuid) || !PyType_IsSubtype((PyTypeObject *)uuid, &PyBytes_Type))) {
        PyErr_SetString(PyExc_TypeError, "configure: uuid must be a bytes subclass");
        return NULL;
    }
    if ((record && record != Py_None && !PyType_IsSubtype((PyTypeObject *)record, &PyTuple_Type)) ||
        (log_entry && log_entry != Py_None && !PyType_IsSubtype((PyTypeObject *)log_entry, &PyTuple_Type)) ||
        (payload && payload != Py_None && !PyType_IsSubtype((PyTypeObject *)payload, &PyTuple_Type)) ||
        (mdrec && mdrec != Py_None && !PyType_IsSubtype((PyTypeObject *)mdrec, &PyTuple_Type)) ||
        (prebuilt && prebuilt != Py_None &&
         (!PyType_Check(prebuilt) || !PyType_IsSubtype((PyTypeObject *)prebuilt, &PyTuple_Type)))) {
        PyErr_SetString(PyExc_TypeError, "configure: record types must be NamedTuple classes");
        return NULL;
    }
    if (set_type(uuid, &UuidType, "uuid") < 0 || set_type(record, &RecordNT, "record") < 0 ||
        set_type(log_entry, &LogEntryNT, "log_entry") < 0 || set_type(payload, &PayloadNT, "payload") < 0 ||
        set_type(mdrec, &MetadataRecordNT, "metadata_record") < 0 ||
        set_type(prebuilt, &PrebuiltNT, "prebuilt_partition") < 0)
        return NULL;
    if (UuidType)
        uuid_direct = uuid_direct_ok(UuidType);
    for (int i = 0; i < UUID_CACHE_SIZE; i++)
        Py_CLEAR(uuid_cache[i]);
    record_direct = RecordNT ? ntuple_direct_ok(RecordNT) : 0;
    logentry_direct = LogEntryNT ? ntuple_direct_ok(LogEntryNT) : 0;
    mdrecord_direct = MetadataRecordNT ? ntuple_direct_ok(MetadataRecordNT) : 0;
    prebuilt_direct = PrebuiltNT ? ntuple_direct_ok(PrebuiltNT) : 0;
    Py_RETURN_NONE;
}

static PyObject *py_set_enabled(PyObject *self, PyObject *arg) {
    int t = PyObject_IsTrue(arg);
    if (t < 0)
        return NULL;
    int old = g_enabled;
    g_enabled = t;
    return PyBool_FromLong(old);
}

static PyObject *py_info(PyObject *self, PyObject *noargs) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    int populate = g_populate;
#else
    int populate = 0;
#endif
    return Py_BuildValue("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "crc32c", crc_hw ? "sse4.2" : "software",
                         "uuid_direct", uuid_direct, "record_direct", record_direct, "logentry_direct", logentry_direct,
                         "enabled", g_enabled, "untrack", g_untrack, "populate", populate, "arena_cache",
                         arena_cache_max, "arenas_cached", arena_cache_n);
}

/* ------------------------------------------------------------------------ partition record values */

/* partition_values(payload, topic_id, pids, registrations, positions, directories, resolve) -> list[bytes] | None
 *
 * The snapshot topic writer's PartitionRecord values (writer/components/topics.py) without a
 * record per partition: `payload` is Payload(record type, version, template), the template a
 * PartitionRecord made by the writer (every field the loop below does not set keeps the value
 * the writer gives it), which the call fills for each registration at `positions` (None: all)
 * and frames as encode_values does (encode_payload). Per position i it sets the topic id,
 * the partition id (pids[i], or i when pids is None), and registrations[i]'s replica lists,
 * leader and epochs (registrations[i] exactly the class configure_partitions was given).
 * `directories`: the target holds replica directories (written as they are); otherwise each
 * registration's must be the MIGRATING tuple (the record has none). None, to let the
 * writer's Python loop run (it reports every loss), for anything else: a registration with
 * ELR, directories the target cannot hold, fields that are not tuples, a template whose
 * lists are not its own, any value the encoder gives up on. */
enum { TS_PARTITION_ID, TS_TOPIC_ID, TS_REPLICAS, TS_ISR, TS_REMOVING, TS_ADDING, TS_DIRECTORIES, TS_LEADER, TS_LRS,
       TS_LEADER_EPOCH, TS_PARTITION_EPOCH, TS_NAMES };
static const char *const ts_names[TS_NAMES] = {"partition_id", "topic_id", "replicas", "isr", "removing_replicas",
                                               "adding_replicas", "directories", "leader", "leader_recovery_state",
                                               "leader_epoch", "partition_epoch"};
static RecordSlots template_slots = {TS_NAMES, ts_names};
/* The template's list fields and the registration's tuples they take, in the same order. */
#define TS_LISTS 5
static const int ts_list_fields[TS_LISTS] = {TS_REPLICAS, TS_ISR, TS_REMOVING, TS_ADDING, TS_DIRECTORIES};
static const int pr_list_fields[TS_LISTS] = {PR_REPLICAS, PR_ISR, PR_REMOVING, PR_ADDING, PR_DIRECTORIES};

/* Make `list` (exactly a list) hold the items of `items` (exactly a tuple). */
static int refill_list(PyObject *list, PyObject *items) {
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    if (PyList_GET_SIZE(list) != n)
        return PyList_SetSlice(list, 0, PyList_GET_SIZE(list), items);
    PyObject **dst = ((PyListObject *)list)->ob_item;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *old = dst[k];
        dst[k] = Py_NewRef(PyTuple_GET_ITEM(items, k));
        Py_DECREF(old);
    }
    return 0;
}

/* Set the template's field at `offset` to `value` (a new reference, stolen). */
static inline void set_slot(PyObject *m, Py_ssize_t offset, PyObject *value) {
    Py_XSETREF(*(PyObject **)((char *)m + offset), value);
}

/* The registration index at output position j: positions[j] (a list of ints in [0, n)), or j;
 * -1 when it is not one. */
static inline Py_ssize_t position_at(PyObject *positions, Py_ssize_t j, Py_ssize_t n) {
    if (positions == Py_None)
        return j;
    PyObject *o = PyList_GET_ITEM(positions, j);
    long long x;
    if (!PyLong_CheckExact(o) || !long_compact(o, &x) || x < 0 || x >= n)
        return -1;
    return (Py_ssize_t)x;
}

static PyObject *py_partition_values(PyObject *self, PyObject *args) {
    PyObject *payload, *topic_id, *pids, *regs, *positions, *resolve;
    int dirs_ok;
    if (!PyArg_ParseTuple(args, "OOOO!OpO:partition_values", &payload, &topic_id, &pids, &PyList_Type, &regs,
                          &positions, &dirs_ok, &resolve))
        return NULL;
    if (!pr_cls || !PayloadNT || !Py_IS_TYPE(payload, PayloadNT) || PyTuple_GET_SIZE(payload) != 3)
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(regs);
    if (pids != Py_None && (!PyList_CheckExact(pids) || PyList_GET_SIZE(pids) != n))
        Py_RETURN_NONE;
    if (positions != Py_None && !PyList_CheckExact(positions))
        Py_RETURN_NONE;
    Py_ssize_t count = positions == Py_None ? n : PyList_GET_SIZE(positions);
    PyObject *m = PyTuple_GET_ITEM(payload, 2), *lists[TS_LISTS];
    if (!record_slots(&template_slots, Py_TYPE(m)))
        Py_RETURN_NONE;
    const Py_ssize_t *off = template_slots.offsets;
    for (int k = 0; k < TS_LISTS; k++) {
        lists[k] = *(PyObject **)((char *)m + off[ts_list_fields[k]]);
        if (!lists[k] || !PyList_CheckExact(lists[k]))
            Py_RETURN_NONE;
        for (int j = 0; j < k; j++)
            if (lists[j] == lists[k]) /* (one list in two fields: refilling one would change the other) */
                Py_RETURN_NONE;
    }
    PyObject *out = PyList_New(count);
    RtCache c = {resolve, 0};
    Writer w = {NULL, 0, 0, NULL};
    Py_ssize_t j;
    if (!out)
        return NULL;
    Py_INCREF(m);
    set_slot(m, off[TS_TOPIC_ID], Py_NewRef(topic_id));
    for (j = 0; j < count; j++) {
        if (PyList_GET_SIZE(regs) != n || (pids != Py_None && PyList_GET_SIZE(pids) != n) ||
            (positions != Py_None && PyList_GET_SIZE(positions) != count))
            goto decline; /* (changed by code a collection ran) */
        Py_ssize_t i = position_at(positions, j, n);
        if (i < 0)
            goto decline;
        PyObject *reg = PyList_GET_ITEM(regs, i);
        if (Py_TYPE(reg) != (PyTypeObject *)pr_cls)
            goto decline;
#define REG(k) (*(PyObject **)((char *)reg + pr_offsets[(k)]))
        PyObject *elr = REG(PR_ELR), *lke = REG(PR_LAST_KNOWN_ELR), *dirs = REG(PR_DIRECTORIES);
        if (!elr || !lke || !PyTuple_CheckExact(elr) || !PyTuple_CheckExact(lke) || PyTuple_GET_SIZE(elr) ||
            PyTuple_GET_SIZE(lke))
            goto decline; /* (ELR: written or reported by the Python loop) */
        if (!dirs || !PyTuple_CheckExact(dirs))
            goto decline;
        if (!dirs_ok && (PyTuple_GET_SIZE(dirs) >= PyTuple_GET_SIZE(pr_migrating) ||
                         dirs != PyTuple_GET_ITEM(pr_migrating, PyTuple_GET_SIZE(dirs))))
            goto decline; /* (not the interned MIGRATING tuple: maybe a loss to report) */
        for (int k = 0; k < TS_LISTS; k++) {
            PyObject *t = REG(pr_list_fields[k]);
            if (!t || !PyTuple_CheckExact(t))
                goto decline;
            if (pr_list_fields[k] == PR_DIRECTORIES && !dirs_ok)
                continue; /* (the template's directories stay empty) */
            if (refill_list(lists[k], t) < 0)
                goto error;
        }
        if (!dirs_ok && PyList_GET_SIZE(lists[TS_LISTS - 1]) != 0)
            goto decline; /* (the writer's template holds no directories here) */
        PyObject *leader = REG(PR_LEADER), *lrs = REG(PR_LRS), *le = REG(PR_LEADER_EPOCH), *pe = REG(PR_PARTITION_EPOCH);
        if (!leader || !lrs || !le || !pe)
            goto decline;
#undef REG
        PyObject *pid = pids == Py_None ? PyLong_FromSsize_t(i) : Py_NewRef(PyList_GET_ITEM(pids, i));
        if (!pid)
            goto error;
        set_slot(m, off[TS_PARTITION_ID], pid);
        set_slot(m, off[TS_LEADER], Py_NewRef(leader));
        set_slot(m, off[TS_LRS], Py_NewRef(lrs));
        set_slot(m, off[TS_LEADER_EPOCH], Py_NewRef(le));
        set_slot(m, off[TS_PARTITION_EPOCH], Py_NewRef(pe));
        w.len = 0;
        if (encode_payload(payload, &c, &w, NULL) < 0)
            goto fail;
        PyObject *b = PyBytes_FromStringAndSize((const char *)w.buf, (Py_ssize_t)w.len);
        if (!b)
            goto error;
        PyList_SET_ITEM(out, j, b);
    }
    rtc_clear(&c);
    w_free(&w);
    Py_DECREF(m);
    return out;
fail:
    if (error_is_fatal())
        goto error;
decline:
    PyErr_Clear();
    rtc_clear(&c);
    w_free(&w);
    Py_DECREF(m);
    Py_DECREF(out); /* (the items not filled are NULL) */
    Py_RETURN_NONE;
error:
    rtc_clear(&c);
    w_free(&w);
    Py_DECREF(m);
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------ digest chunks */

/* The canonical bytes (image/canonical.py: msgspec's MessagePack) of a ChunkMap chunk of
 * partition registrations for image/verification/digest.py: what
 * `canon(tuple(partition_entity(first + j, p) for j, p in enumerate(chunk)))[1:]` gives,
 * written directly. Each entity is the 12-array (id, replicas, directory ids joined as one
 * bin, isr, removing, adding, leader, leader recovery state, leader epoch, partition epoch,
 * elr, last known elr). Ints take msgspec's shortest form (fixint, then uint8..64 above 0,
 * int8..64 below -32). Anything else (a registration of another class, a value not an exact
 * int / tuple of exact ints / tuple of bytes, an int outside msgspec's range, a chunk of 16
 * or more) answers None and the Python code runs, the one definition. */

/* MessagePack of a signed 64-bit int as msgspec writes it (room for 9 bytes reserved). */
static void mp_i64_unchecked(Writer *w, long long x) {
    uint8_t *o = w->buf + w->len;
    int n;
    uint8_t tag;
    if (x >= 0) {
        if (x < 128) {
            o[0] = (uint8_t)x;
            w->len += 1;
            return;
        }
        if (x < 1LL << 8)
            tag = 0xcc, n = 1;
        else if (x < 1LL << 16)
            tag = 0xcd, n = 2;
        else if (x < 1LL << 32)
            tag = 0xce, n = 4;
        else
            tag = 0xcf, n = 8;
    } else {
        if (x >= -32) {
            o[0] = (uint8_t)(int8_t)x;
            w->len += 1;
            return;
        }
        if (x >= -(1LL << 7))
            tag = 0xd0, n = 1;
        else if (x >= -(1LL << 15))
            tag = 0xd1, n = 2;
        else if (x >= -(1LL << 31))
            tag = 0xd2, n = 4;
        else
            tag = 0xd3, n = 8;
    }
    uint64_t u = (uint64_t)x;
    o[0] = tag;
    for (int i = 0; i < n; i++)
        o[1 + i] = (uint8_t)(u >> (8 * (n - 1 - i)));
    w->len += 1 + n;
}

/* MessagePack of an exact int as msgspec writes it: 0, -1 on error, 1 when `v` is not one
 * it writes (not an exact int, or outside [-2**63, 2**64 - 1], where canon raises). */
static int mp_int(Writer *w, PyObject *v) {
    if (!PyLong_CheckExact(v))
        return 1;
    if (W_RESERVE(w, 9) < 0)
        return -1;
    long long x;
    if (long_compact(v, &x)) {
        mp_i64_unchecked(w, x);
        return 0;
    }
    int overflow;
    x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        uint8_t *o = w->buf + w->len;
        o[0] = 0xcf;
        for (int i = 0; i < 8; i++)
            o[1 + i] = (uint8_t)(u >> (56 - 8 * i));
        w->len += 9;
        return 0;
    }
    if (overflow < 0 || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 1;
    }
    mp_i64_unchecked(w, x);
    return 0;
}

/* A MessagePack header: fixed form when `n` < `fixed_max`, else 16- or 32-bit length. */
static int mp_header(Writer *w, uint64_t n, uint8_t fixed, uint64_t fixed_max, uint8_t tag8, uint8_t tag16,
                     uint8_t tag32) {
    if (W_RESERVE(w, 5) < 0)
        return -1;
    uint8_t *o = w->buf + w->len;
    if (n < fixed_max) {
        if (fixed) {
            o[0] = (uint8_t)(fixed | n);
            w->len += 1;
        } else {
            o[0] = tag8;
            o[1] = (uint8_t)n;
            w->len += 2;
        }
    } else if (n < 1u << 16) {
        o[0] = tag16;
        o[1] = (uint8_t)(n >> 8);
        o[2] = (uint8_t)n;
        w->len += 3;
    } else {
        o[0] = tag32;
        for (int i = 0; i < 4; i++)
            o[1 + i] = (uint8_t)(n >> (24 - 8 * i));
        w->len += 5;
    }
    return 0;
}

/* A tuple of exact ints as a MessagePack array; 1 for anything else. */
static int mp_int_tuple(Writer *w, PyObject *t) {
    if (!PyTuple_CheckExact(t))
        return 1;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (mp_header(w, (uint64_t)n, 0x90, 16, 0, 0xdc, 0xdd) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = mp_int(w, PyTuple_GET_ITEM(t, i));
        if (r)
            return r;
    }
    return 0;
}

/* A tuple of bytes objects joined, as one MessagePack bin (digest.py's `_dirs`); 1 for anything else. */
static int mp_joined_bin(Writer *w, PyObject *t) {
    if (!PyTuple_CheckExact(t))
        return 1;
    Py_ssize_t n = PyTuple_GET_SIZE(t), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyTuple_GET_ITEM(t, i);
        if (!PyBytes_Check(b))
            return 1;
        total += PyBytes_GET_SIZE(b);
    }
    if ((uint64_t)total > 0xffffffffu)
        return 1;
    if (mp_header(w, (uint64_t)total, 0, 256, 0xc4, 0xc5, 0xc6) < 0 || W_RESERVE(w, total) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *b = PyTuple_GET_ITEM(t, i);
        memcpy(w->buf + w->len, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b));
        w->len += PyBytes_GET_SIZE(b);
    }
    return 0;
}

/* The buffer partition_chunk_canon writes into (a plain PyMem buffer, never a bytes object). */
static Writer chunk_writer = {0};

/* partition_chunk_canon(chunk, first) -> bytes | None
 *
 * digest.py's canonical bytes of a chunk of registrations whose first partition id is
 * `first` (see above), or None where the Python code must run. */
static PyObject *py_partition_chunk_canon(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "partition_chunk_canon(chunk, first)");
        return NULL;
    }
    PyObject *chunk = args[0];
    if (!pr_cls || !(PyTuple_CheckExact(chunk) || PyList_CheckExact(chunk)) || !PyLong_CheckExact(args[1]))
        Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(chunk);
    PyObject **items = PySequence_Fast_ITEMS(chunk);
    if (n >= 16)
        Py_RETURN_NONE;  /* (the [1:] of a longer array's header is not its items) */
    int overflow;
    long long first = PyLong_AsLongLongAndOverflow(args[1], &overflow);
    if (overflow || (first == -1 && PyErr_Occurred()) || first < 0 || first > (1LL << 62)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Writer w = chunk_writer;  /* (its buffer, reused from call to call) */
    w.len = 0;
    PyObject *res = NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *p = items[j];
        if (Py_TYPE(p) != (PyTypeObject *)pr_cls)
            goto none;
#define PR(k) (*(PyObject **)((char *)p + pr_offsets[(k)]))
        for (int k = 0; k < PR_FIELDS; k++)
            if (!PR(k))
                goto none;
        if (W_RESERVE(&w, 10) < 0)
            goto none;
        w.buf[w.len++] = 0x9c;  /* fixarray of 12 */
        mp_i64_unchecked(&w, first + (long long)j);
        if (mp_int_tuple(&w, PR(PR_REPLICAS)) || mp_joined_bin(&w, PR(PR_DIRECTORIES)) ||
            mp_int_tuple(&w, PR(PR_ISR)) || mp_int_tuple(&w, PR(PR_REMOVING)) || mp_int_tuple(&w, PR(PR_ADDING)) ||
            mp_int(&w, PR(PR_LEADER)) || mp_int(&w, PR(PR_LRS)) || mp_int(&w, PR(PR_LEADER_EPOCH)) ||
            mp_int(&w, PR(PR_PARTITION_EPOCH)) || mp_int_tuple(&w, PR(PR_ELR)) ||
            mp_int_tuple(&w, PR(PR_LAST_KNOWN_ELR)))
            goto none;
#undef PR
    }
    res = PyBytes_FromStringAndSize((const char *)w.buf, (Py_ssize_t)w.len);
none:
    if (w.cap > 1 << 16)  /* (a long one's buffer is not kept) */
        w_free(&w);
    chunk_writer = w;
    if (!res) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return res;
}

/* ------------------------------------------------------------------------ leader and ISR records
 *
 * The per-partition loop of controller/replication.py's leader_and_isr_updates for its common
 * case, one topic per call: a broker event changes up to every partition the broker holds,
 * and nearly all of them take a change the loop already worked out for a partition of the
 * same shape. For each partition id in `mask` from `start` on, in order, it reads the
 * registration, and when it has no reassignment, ELR or last known leader and its shape
 * (replicas, directories, ISR, leader) is in the loop's memo `made` with a simple change,
 * appends the loop's record (a Payload of a PartitionChangeRecord with the partition id, the
 * topic id, the leader and a new list of the ISR) or nothing (no change). It stops at the
 * first partition it cannot handle so (any other shape, a shape not worked out yet, an
 * unexpected object): the Python loop does that one and calls again after it, so records
 * keep their order. The record is a copy of `blank` (the record class's defaults) with
 * those four fields set, built by filling a fresh instance's slots (lists copied, as the
 * class's default factories make new ones). */
#define LI_FIELDS_MAX 32
static struct {
    PyTypeObject *type; /* the record class last checked (strong reference) */
    Py_ssize_t n;
    Py_ssize_t offsets[LI_FIELDS_MAX];
    int pid, tid, leader, isr; /* the slots set per record */
} li_cls;

/* Whether `t` is a record class whose instances can be built by filling slots, with fields
 * partition_id, topic_id, leader and isr (remembered for the class last met). */
static int li_record_class(PyTypeObject *t) {
    if (t == li_cls.type)
        return 1;
    PyObject *fields = PyObject_GetAttrString((PyObject *)t, "__struct_fields__");
    if (!fields) {
        PyErr_Clear();
        return 0;
    }
    Py_ssize_t n = PyTuple_CheckExact(fields) ? PyTuple_GET_SIZE(fields) : -1;
    Py_ssize_t offsets[LI_FIELDS_MAX];
    int at[4] = {-1, -1, -1, -1};
    static const char *const wanted[4] = {"partition_id", "topic_id", "leader", "isr"};
    int ok = n > 0 && n <= LI_FIELDS_MAX;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *name = PyTuple_GET_ITEM(fields, i);
        ok = PyUnicode_Check(name) && (offsets[i] = member_offset((PyObject *)t, name)) >= 0;
        for (int k = 0; ok && k < 4; k++)
            if (PyUnicode_CompareWithASCIIString(name, wanted[k]) == 0)
                at[k] = (int)i;
    }
    Py_DECREF(fields);
    if (!ok || at[0] < 0 || at[1] < 0 || at[2] < 0 || at[3] < 0 || !fillable_struct((PyObject *)t, offsets, n)) {
        PyErr_Clear();
        return 0;
    }
    memcpy(li_cls.offsets, offsets, sizeof(Py_ssize_t) * (size_t)n);
    li_cls.n = n;
    li_cls.pid = at[0];
    li_cls.tid = at[1];
    li_cls.leader = at[2];
    li_cls.isr = at[3];
    Py_INCREF(t);
    Py_XSETREF(li_cls.type, t);
    return 1;
}

#define LI_SLOT(o, i) (*(PyObject **)((char *)(o) + li_cls.offsets[(i)]))

/* Whether every slot of `blank` the records copy holds a value the class's constructor would
 * share or copy as this code does: immutable scalars and tuples are shared, exact lists copied. */
static int li_blank_ok(PyObject *blank) {
    for (Py_ssize_t i = 0; i < li_cls.n; i++) {
        if (i == li_cls.pid || i == li_cls.tid || i == li_cls.leader || i == li_cls.isr)
            continue;
        PyObject *v = LI_SLOT(blank, i);
        if (!v || !(v == Py_None || PyLong_CheckExact(v) || PyBool_Check(v) || PyFloat_CheckExact(v) ||
                    PyUnicode_CheckExact(v) || PyBytes_Check(v) || PyTuple_CheckExact(v) || PyList_CheckExact(v)))
            return 0;
    }
    return 1;
}

/* The record for partition `pid`: blank's values, with these four (leader borrowed, isr a
 * tuple copied into a new list, or None). */
static PyObject *li_record(PyObject *blank, Py_ssize_t pid, PyObject *tid, PyObject *leader, PyObject *isr) {
    PyObject *vals[LI_FIELDS_MAX];
    Py_ssize_t i, n = li_cls.n;
    for (i = 0; i < n; i++) {
        PyObject *v;
        if (i == li_cls.pid)
            v = PyLong_FromSsize_t(pid);
        else if (i == li_cls.tid)
            v = Py_NewRef(tid);
        else if (i == li_cls.leader)
            v = Py_NewRef(leader);
        else if (i == li_cls.isr)
            v = isr == Py_None ? Py_NewRef(Py_None) : PySequence_List(isr);
        else {
            v = LI_SLOT(blank, i);
            v = PyList_CheckExact(v) ? PyList_GetSlice(v, 0, PyList_GET_SIZE(v)) : Py_NewRef(v);
        }
        if (!v) {
            while (i--)
                Py_DECREF(vals[i]);
            return NULL;
        }
        vals[i] = v;
    }
    PyObject *res = li_cls.type->tp_alloc(li_cls.type, 0);
    for (i = 0; i < n; i++) {
        if (res)
            LI_SLOT(res, i) = vals[i];
        else
            Py_DECREF(vals[i]);
    }
    return res;
}

/* leader_isr_records(out, fixed, topic_id, made, chunks, parts, mask, start) -> int | None
 *
 * fixed: (blank, record_type, version, payload_cls, chunk_bits), the same for a whole loop.
 * chunks: the topic's dense value chunks (chunk c holds ids c << chunk_bits ...), or None to
 * read `parts[pid]`. Returns the partition id it stopped at, -1 when it went through the
 * mask, None when it cannot build these classes (the Python loop does the rest). */
static PyObject *py_leader_isr_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "leader_isr_records(out, fixed, topic_id, made, chunks, parts, mask, start)");
        return NULL;
    }
    PyObject *out = args[0], *fixed = args[1], *tid = args[2], *made = args[3], *chunks = args[4], *parts = args[5],
             *mask = args[6];
    if (!g_enabled || !pr_cls || !PyList_CheckExact(out) || !PyTuple_CheckExact(fixed) ||
        PyTuple_GET_SIZE(fixed) != 5 || !PyDict_CheckExact(made) || !PyLong_CheckExact(mask) ||
        (chunks != Py_None && !PyTuple_CheckExact(chunks)))
        Py_RETURN_NONE;
    PyObject *blank = PyTuple_GET_ITEM(fixed, 0), *rtype = PyTuple_GET_ITEM(fixed, 1),
             *version = PyTuple_GET_ITEM(fixed, 2), *pcls = PyTuple_GET_ITEM(fixed, 3);
    long chunk_bits = PyLong_AsLong(PyTuple_GET_ITEM(fixed, 4));
    Py_ssize_t start = PyLong_AsSsize_t(args[7]);
    if (chunk_bits < 0 || chunk_bits > 20 || start < 0 || PyErr_Occurred() || !PyType_Check(pcls) ||
        !PyType_IsSubtype((PyTypeObject *)pcls, &PyTuple_Type) || !li_record_class(Py_TYPE(blank)) ||
        !li_blank_ok(blank)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int direct = ntuple_direct_ok((PyTypeObject *)pcls);
    /* The mask's bits: one word, or little-endian bytes for a mask past 64 bits. */
    uint64_t word = PyLong_AsUnsignedLongLong(mask);
    PyObject *big = NULL;
    const uint8_t *bytes = NULL;
    Py_ssize_t nbits = 64;
    if (word == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyObject *length = PyObject_CallMethod(mask, "bit_length", NULL);
        nbits = length ? PyLong_AsSsize_t(length) : -1;
        Py_XDECREF(length);
        /* (a negative mask: to_bytes refuses it, and the Python loop runs) */
        big = nbits < 0 ? NULL : PyObject_CallMethod(mask, "to_bytes", "ns", (nbits + 7) / 8, "little");
        if (!big || !PyBytes_Check(big)) {
            Py_XDECREF(big);
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        bytes = (const uint8_t *)PyBytes_AS_STRING(big);
    }
    Py_ssize_t stop = -1;
    for (Py_ssize_t base = start & ~(Py_ssize_t)63; base < nbits && stop < 0; base += 64) {
        uint64_t w;
        if (bytes) {
            w = 0;
            Py_ssize_t nb = (nbits + 7) / 8 - base / 8;
            memcpy(&w, bytes + base / 8, (size_t)(nb < 8 ? nb : 8));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
            w = __builtin_bswap64(w);
#endif
        } else {
            w = word;
        }
        if (base < start)
            w &= ~(uint64_t)0 << (start - base);
        while (w) {
            Py_ssize_t pid = base + __builtin_ctzll(w);
            w &= w - 1;
            PyObject *part, *owned = NULL;
            if (chunks != Py_None) {
                Py_ssize_t c = pid >> chunk_bits;
                PyObject *chunk = c < PyTuple_GET_SIZE(chunks) ? PyTuple_GET_ITEM(chunks, c) : NULL;
                Py_ssize_t k = pid & ((1 << chunk_bits) - 1);
                if (!chunk || !PyTuple_CheckExact(chunk) || k >= PyTuple_GET_SIZE(chunk)) {
                    stop = pid;
                    break;
                }
                part = PyTuple_GET_ITEM(chunk, k);
            } else {
                PyObject *key = PyLong_FromSsize_t(pid);
                part = owned = key ? PyObject_GetItem(parts, key) : NULL;
                Py_XDECREF(key);
                if (!part) {
                    PyErr_Clear();
                    stop = pid;
                    break;
                }
            }
#define PART(k) (*(PyObject **)((char *)part + pr_offsets[(k)]))
            static const int must_be_empty[4] = {PR_REMOVING, PR_ADDING, PR_ELR, PR_LAST_KNOWN_ELR};
            int quick = Py_TYPE(part) == (PyTypeObject *)pr_cls;
            for (int f = 0; quick && f < 4; f++) {
                PyObject *v = PART(must_be_empty[f]);
                quick = v && PyTuple_CheckExact(v) && PyTuple_GET_SIZE(v) == 0;
            }
            PyObject *fields = NULL;
            if (quick) {
                PyObject *key = PyTuple_Pack(4, PART(PR_REPLICAS), PART(PR_DIRECTORIES), PART(PR_ISR), PART(PR_LEADER));
                fields = key ? PyDict_GetItemWithError(made, key) : NULL; /* (borrowed) */
                Py_XDECREF(key);
            }
#undef PART
            Py_XDECREF(owned);
            if (!fields || !PyTuple_CheckExact(fields) || (PyTuple_GET_SIZE(fields) != 0 && PyTuple_GET_SIZE(fields) != 2)) {
                PyErr_Clear();
                stop = pid; /* (not this shape, not worked out yet, or the builder's: the Python loop's) */
                break;
            }
            if (PyTuple_GET_SIZE(fields) == 0)
                continue; /* no change */
            PyObject *msg = li_record(blank, pid, tid, PyTuple_GET_ITEM(fields, 0), PyTuple_GET_ITEM(fields, 1));
            if (!msg)
                goto error;
            PyObject *items[3] = {Py_NewRef(rtype), Py_NewRef(version), msg};
            PyObject *payload = new_ntuple((PyTypeObject *)pcls, direct, items, 3, 0);
            if (!payload)
                goto error;
            int bad = PyList_Append(out, payload);
            Py_DECREF(payload);
            if (bad < 0)
                goto error;
        }
    }
    Py_XDECREF(big);
    return PyLong_FromSsize_t(stop);
error:
    Py_XDECREF(big);
    return NULL;
}

/* ---------------------------------------------------------------- bulk replay runs (br_)
 *
 * br_replay_run(record, it, state, change_type, partition_type, to_change, to_partition, end,
 *               chunk_bits, topic_type, to_topic[, changed]) -> record
 *
 * image/bulk.py's replay loop for a run of PartitionChangeRecords, PartitionRecords and
 * TopicRecords of the fast-path record types: `record` first, then records taken from the
 * iterator `it`. A TopicRecord calls `to_topic(message)` -> the new topic's changes dict
 * (the topic the PartitionRecords after it go to; the change records' topic forgotten).
 * Per record it does what the Python loop does: the topic's target looked up only when the
 * topic id changes (`to_change(message)` -> (changes dict, positions dict, chunks tuple),
 * `to_partition(message)` -> changes dict: Python callbacks), the previous registration
 * looked up (the topic's changes, else its base ChunkMap read in place), merged
 * (partition_merge) or built (partition_from_record), stored. It stops at the first record
 * it does not finish (another record type, a builder's decline, a callback's error, a
 * partition not found) and returns it untouched, or `end` when `it` is exhausted: the
 * Python loop replays that record itself (so every error and message is the Python
 * code's). `state` (a list) carries the loop's variables in and out: [change_topic,
 * merged, positions, chunks, last_topic, changes, done], `done` set to the records this
 * call replayed (also when the iterator raises, which propagates).
 * `changed` (optional: TopicsDelta.changed, topic id -> TopicDelta): at a switch of topic
 * among change records, the topic's TopicDelta's `layout` there (what `to_change` answered
 * for it before, kept by the delta: a loader's delta meets a topic again in every batch)
 * is taken instead of calling `to_change`; None or no delta: the call. */
enum { BR_CHANGE_TOPIC, BR_MERGED, BR_POSITIONS, BR_CHUNKS, BR_LAST_TOPIC, BR_CHANGES, BR_DONE, BR_STATE };
static const char *const br_key_names[2] = {"topic_id", "partition_id"};
/* One per record class (a RecordSlots remembers one class). */
static RecordSlots br_change_keys = {2, br_key_names};
static RecordSlots br_partition_keys = {2, br_key_names};
static RecordSlots br_topic_keys = {1, br_key_names};

/* After a call that failed: an Exception is cleared and the run stops at the record (-1: the
 * Python loop replays it and meets the error itself); anything else (KeyboardInterrupt,
 * SystemExit) is kept and propagates (-2), never taken for a decline. */
static int br_failed(void) {
    if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_Exception)) {
        PyErr_Clear();
        return -1;
    }
    return -2;
}

/* 1 when `tid` names the topic `known` (`tid is known or tid == known`), 0 if not, else br_failed(). */
static int br_same_topic(PyObject *tid, PyObject *known) {
    if (tid == known)
        return 1;
    int eq = PyObject_RichCompareBool(tid, known, Py_EQ);
    return eq < 0 ? br_failed() : eq;
}

/* A PartitionChangeRecord's message `m` merged into s[BR_MERGED]; 0 done, -1 stop (no error
 * set), -2 an error to propagate (br_failed). */
static PyObject *br_str_layout = NULL;

/* The topic `tid`'s TopicDelta's `layout` in the dict `changed` (a new reference), NULL when
 * there is none yet (the callback makes it) or on an error (then br_failed() says which). */
static PyObject *br_known_layout(PyObject *changed, PyObject *tid) {
    if (!changed || !PyDict_CheckExact(changed))
        return NULL;
    PyObject *td = PyDict_GetItemWithError(changed, tid);
    if (!td)
        return NULL;
    if (!br_str_layout && !(br_str_layout = PyUnicode_InternFromString("layout")))
        return NULL;
    PyObject *t = PyObject_GetAttr(td, br_str_layout);
    if (t == Py_None)
        Py_CLEAR(t);
    return t;
}

static int br_change(PyObject **s, PyObject *m, PyObject *tid, PyObject *pid, PyObject *to_change, long bits,
                     PyObject *changed) {
    int same = br_same_topic(tid, s[BR_CHANGE_TOPIC]);
    if (same < 0)
        return same;
    if (!same) {
        PyObject *t = br_known_layout(changed, tid);
        if (!t && PyErr_Occurred())
            return br_failed();
        if (!t)
            t = PyObject_CallOneArg(to_change, m);
        if (!t)
            return br_failed();
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 3) {
            Py_DECREF(t);
            return -1;
        }
        Py_SETREF(s[BR_MERGED], Py_NewRef(PyTuple_GET_ITEM(t, 0)));
        Py_SETREF(s[BR_POSITIONS], Py_NewRef(PyTuple_GET_ITEM(t, 1)));
        Py_SETREF(s[BR_CHUNKS], Py_NewRef(PyTuple_GET_ITEM(t, 2)));
        Py_SETREF(s[BR_CHANGE_TOPIC], Py_NewRef(tid));
        Py_DECREF(t);
    }
    PyObject *merged = s[BR_MERGED], *positions = s[BR_POSITIONS], *chunks = s[BR_CHUNKS];
    if (!PyDict_CheckExact(merged))
        return -1;
    PyObject *prev = PyDict_GetItemWithError(merged, pid);
    if (!prev) {
        if (PyErr_Occurred() || !PyDict_CheckExact(positions) || !PyTuple_CheckExact(chunks))
            goto stop;
        PyObject *at = PyDict_GetItemWithError(positions, pid);
        if (!at || !PyLong_CheckExact(at))
            goto stop;  /* (not found: the Python loop raises its error) */
        Py_ssize_t i = PyLong_AsSsize_t(at);
        if (i < 0)
            goto stop;
        Py_ssize_t c = i >> bits, k = i & (((Py_ssize_t)1 << bits) - 1);
        if (c >= PyTuple_GET_SIZE(chunks))
            goto stop;
        PyObject *chunk = PyTuple_GET_ITEM(chunks, c);
        if (!PyTuple_CheckExact(chunk) || k >= PyTuple_GET_SIZE(chunk))
            goto stop;
        prev = PyTuple_GET_ITEM(chunk, k);
    }
    PyObject *margs[2] = {prev, m};
    PyObject *p = py_partition_merge(NULL, margs, 2);
    if (!p || p == Py_None) {
        Py_XDECREF(p);
        goto stop;  /* (merge() runs in Python) */
    }
    int bad = PyDict_SetItem(merged, pid, p);
    Py_DECREF(p);
    if (bad < 0)
        goto stop;
    return 0;
stop:
    return br_failed();
}

/* s[BR_CHANGES] made the dict of topic `tid`'s changed partitions, asking `to_partition(named)`
 * (a PartitionRecord, or what names its topic and partition as one does) at a topic switch;
 * 0 done, -1 stop, -2 propagate (as br_change). */
static int br_partition_target(PyObject **s, PyObject *named, PyObject *tid, PyObject *to_partition) {
    int same = br_same_topic(tid, s[BR_LAST_TOPIC]);
    if (same < 0)
        return same;
    if (!same) {
        PyObject *c = PyObject_CallOneArg(to_partition, named);
        if (!c)
            return br_failed();
        Py_SETREF(s[BR_CHANGES], c);
        Py_SETREF(s[BR_LAST_TOPIC], Py_NewRef(tid));
    }
    return PyDict_CheckExact(s[BR_CHANGES]) ? 0 : -1;
}

/* A PartitionRecord's message `m` built into s[BR_CHANGES]; 0 done, -1 stop, -2 propagate (as br_change). */
static int br_partition(PyObject **s, PyObject *m, PyObject *tid, PyObject *pid, PyObject *to_partition) {
    int code = br_partition_target(s, m, tid, to_partition);
    if (code < 0)
        return code;
    PyObject *p = py_partition_from_record(NULL, m);
    if (!p || p == Py_None) {
        Py_XDECREF(p);
        return br_failed();  /* (registration_from_record runs in Python) */
    }
    int bad = PyDict_SetItem(s[BR_CHANGES], pid, p);
    Py_DECREF(p);
    return bad < 0 ? br_failed() : 0;
}

/* A PrebuiltPartition `r` (its topic id, partition id and registration) put into
 * s[BR_CHANGES]; 0 done, -1 stop, -2 propagate (as br_partition, whose callback it takes:
 * `r` names its topic and partition as a PartitionRecord does). */
static int br_prebuilt(PyObject **s, PyObject *r, PyObject *to_partition) {
    if (PyTuple_GET_SIZE(r) != 3)
        return -1;
    int code = br_partition_target(s, r, PyTuple_GET_ITEM(r, 0), to_partition);
    if (code < 0)
        return code;
    return PyDict_SetItem(s[BR_CHANGES], PyTuple_GET_ITEM(r, 1), PyTuple_GET_ITEM(r, 2)) < 0 ? br_failed() : 0;
}

/* A TopicRecord's message `m`: s[BR_CHANGES] the new topic's dict; 0 done, -1 stop, -2 propagate. */
static int br_topic(PyObject **s, PyObject *m, PyObject *tid, PyObject *to_topic) {
    PyObject *c = PyObject_CallOneArg(to_topic, m);
    if (!c)
        return br_failed();
    Py_SETREF(s[BR_CHANGES], c);
    Py_SETREF(s[BR_LAST_TOPIC], Py_NewRef(tid));
    Py_SETREF(s[BR_CHANGE_TOPIC], Py_NewRef(Py_None));
    return 0;
}

static PyObject *py_br_replay_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if ((nargs != 11 && nargs != 12) || !PyList_CheckExact(args[2]) || PyList_GET_SIZE(args[2]) != BR_STATE
        || !PyIter_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "br_replay_run(record, it, state, change_type, partition_type, to_change, "
                                         "to_partition, end, chunk_bits, topic_type, to_topic[, changed])");
        return NULL;
    }
    PyObject *r = args[0], *it = args[1], *st = args[2], *change_type = args[3], *partition_type = args[4];
    PyObject *to_change = args[5], *to_partition = args[6], *end = args[7], *topic_type = args[9];
    PyObject *to_topic = args[10], *changed = nargs == 12 ? args[11] : NULL;
    long bits = PyLong_AsLong(args[8]);
    if (bits == -1 && PyErr_Occurred())
        return NULL;
    if (bits < 0 || bits > 30) {
        PyErr_SetString(PyExc_ValueError, "br_replay_run: chunk_bits out of range");
        return NULL;
    }
    PyObject *zero = PyLong_FromLong(0);
    if (!zero)
        return NULL;
    if (!g_enabled || !pr_cls) {
        PyList_SetItem(st, BR_DONE, zero);
        return Py_NewRef(r);
    }
    Py_DECREF(zero);
    PyObject *s[BR_DONE];
    for (int i = 0; i < BR_DONE; i++)
        s[i] = Py_NewRef(PyList_GET_ITEM(st, i));
    Py_ssize_t done = 0;
    PyObject *result;
    Py_INCREF(r);
    for (;;) {
        if (PrebuiltNT && Py_IS_TYPE(r, PrebuiltNT)) {
            int code = br_prebuilt(s, r, to_partition);
            if (code == -2) {
                Py_DECREF(r);
                r = NULL;
                break;
            }
            if (code < 0)
                break;
            goto next;
        }
        PyObject *rt = PyObject_GetAttr(r, str_record_type);
        if (!rt) {
            PyErr_Clear();
            break;
        }
        Py_DECREF(rt);  /* (compared by identity only) */
        int kind = rt == change_type ? 0 : rt == partition_type ? 1 : rt == topic_type ? 2 : -1;
        if (kind < 0)
            break;
        PyObject *m = PyObject_GetAttr(r, str_message);
        if (!m) {
            PyErr_Clear();
            break;
        }
        PyObject *key[2];
        int code = !read_record_slots(kind == 0 ? &br_change_keys : kind == 1 ? &br_partition_keys : &br_topic_keys,
                                      m, key) ? -1
                   : kind == 0 ? br_change(s, m, key[0], key[1], to_change, bits, changed)
                   : kind == 1 ? br_partition(s, m, key[0], key[1], to_partition)
                               : br_topic(s, m, key[0], to_topic);
        Py_DECREF(m);
        if (code == -2) {  /* (an interrupt or exit: it propagates, the state written back below) */
            Py_DECREF(r);
            r = NULL;
            break;
        }
        if (code < 0)
            break;
    next:
        done++;
        Py_DECREF(r);
        r = PyIter_Next(it);
        if (!r) {
            if (!PyErr_Occurred())
                r = Py_NewRef(end);
            break;
        }
    }
    result = r;  /* (NULL: the iterator's error, kept while the state is written back) */
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    for (int i = 0; i < BR_DONE; i++)
        PyList_SetItem(st, i, s[i]);
    PyObject *n = PyLong_FromSsize_t(done);
    if (!n) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(etb);
        Py_XDECREF(result);
        return NULL;
    }
    PyList_SetItem(st, BR_DONE, n);
    PyErr_Restore(et, ev, etb);
    return result;
}
/* ------------------------------------------------------------ end of bulk replay runs */

/* ---------------------------------------------------------------- uuid hash (pmap.hash_uuid)
 *
 * uuid_hash(value) -> int: `hash(int.from_bytes(value, "big"))`, image/pmap.py's hash_uuid,
 * the hash of every Uuid-keyed PMap (the topics by id: each look-up and update hashes).
 * Why: the Python function allocates a 128-bit int per call, and it is called millions of
 * times at a million partitions. For a 16-byte bytes (a Uuid) it computes CPython's int hash
 * directly: the value modulo 2**61 - 1 (sys.hash_info.modulus, where 2**61 = 1, so 2**64 =
 * 8); anything else goes the Python way (int.from_bytes, then hash). */
#define UH_MODULUS (((uint64_t)1 << 61) - 1)
static uint64_t uh_reduce(uint64_t x) {  /* x modulo 2**61 - 1 */
    x = (x & UH_MODULUS) + (x >> 61);
    return x >= UH_MODULUS ? x - UH_MODULUS : x;
}

static PyObject *py_uuid_hash(PyObject *self, PyObject *value) {
    if (PyBytes_Check(value) && PyBytes_GET_SIZE(value) == 16 && _PyHASH_BITS == 61) {
        const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(value);
        uint64_t hi = 0, lo = 0;
        for (int i = 0; i < 8; i++) {
            hi = hi << 8 | b[i];
            lo = lo << 8 | b[8 + i];
        }
        uint64_t h = uh_reduce(uh_reduce(uh_reduce(hi) << 3) + uh_reduce(lo));  /* (hi * 2**64 + lo) mod M */
        return PyLong_FromUnsignedLongLong(h);
    }
    PyObject *n = PyObject_CallMethod((PyObject *)&PyLong_Type, "from_bytes", "Os", value, "big");
    if (!n)
        return NULL;
    Py_hash_t h = PyObject_Hash(n);
    Py_DECREF(n);
    return h == -1 && PyErr_Occurred() ? NULL : PyLong_FromSsize_t(h);
}
/* ------------------------------------------------------------ end of uuid hash */

/* ---------------------------------------------------------------- str hash (pmap.hash_str)
 *
 * str_hash(value) -> int: image/pmap.py's hash_str_py, `hash_int(zlib.crc32(value.encode(
 * "utf-8", "surrogatepass")) + 1)`, the hash of every name-keyed PMap (the topics by name:
 * a snapshot load hashes 100,000 names, the simulator looks names up all the time). Why:
 * the Python function is three calls and two objects per name. An ASCII str (every Kafka
 * topic name) is hashed from its own bytes; anything else is encoded by its own `encode`,
 * as in Python, and the bytes hashed. CRC-32 is zlib's (ISO-HDLC, reflected 0xEDB88320). */
static uint32_t sh_crc_table[256];

static void sh_crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        sh_crc_table[n] = c;
    }
}

static uint32_t sh_crc32(const uint8_t *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (Py_ssize_t i = 0; i < n; i++)
        c = sh_crc_table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static PyObject *sh_hash_of(uint32_t crc) {  /* hash_int(crc + 1): Fibonacci hashing to 64 bits */
    return PyLong_FromUnsignedLongLong(((uint64_t)crc + 1) * 0x9E3779B97F4A7C15ull);
}

static PyObject *py_str_hash(PyObject *self, PyObject *value) {
    if (PyUnicode_CheckExact(value) && PyUnicode_IS_READY(value) && PyUnicode_IS_ASCII(value))
        return sh_hash_of(sh_crc32((const uint8_t *)PyUnicode_DATA(value), PyUnicode_GET_LENGTH(value)));
    PyObject *raw = PyObject_CallMethod(value, "encode", "ss", "utf-8", "surrogatepass");
    if (!raw)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0) {
        Py_DECREF(raw);
        return NULL;
    }
    uint32_t crc = sh_crc32((const uint8_t *)view.buf, view.len);
    PyBuffer_Release(&view);
    Py_DECREF(raw);
    return sh_hash_of(crc);
}
/* ------------------------------------------------------------ end of str hash */

/* ------------------------------------------------------------------------ map readers
 *
 * image/pmap.py's ChunkMap.dense_chunks and PMap.get read in C, for the loops that ask them
 * once per topic (ri_follow, ri_records, tw_write_topics: every broker event touches every
 * topic) and for PMap.get itself. Why: the Python call per topic was the larger part of
 * those loops. pmap.py hands its two classes over once (map_readers); these readers take
 * the slots by the offsets of the classes' own member descriptors, and give anything
 * else (a subclass, another mapping, a patched method, a slot not set, an index or trie
 * node of an unexpected type) to the Python method, so the answers are the same. */
static PyTypeObject *mr_chunk_cls = NULL, *mr_pmap_cls = NULL;
static Py_ssize_t mr_index_at, mr_chunks_at, mr_root_at, mr_hash_at;
static PyObject *mr_dense_fn = NULL, *mr_get_fn = NULL, *mr_getitem_fn = NULL, *mr_globals = NULL;
static PyObject *mr_str_dense = NULL, *mr_str_get = NULL, *mr_str_getitem = NULL, *mr_str_dense_index = NULL,
                *mr_str_root = NULL, *mr_str_hash = NULL;

/* The offset of `cls`'s own object slot `name` (a member descriptor in its __dict__); -1 if none. */
static Py_ssize_t mr_slot_offset(PyTypeObject *cls, const char *name) {
    PyObject *d = PyDict_GetItemString(cls->tp_dict, name);
    if (!d || Py_TYPE(d) != &PyMemberDescr_Type)
        return -1;
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    return m->type == T_OBJECT_EX && !(m->flags & READONLY) ? m->offset : -1;
}

/* `cls`'s own Python function `name` (borrowed), or NULL. */
static PyObject *mr_function(PyTypeObject *cls, const char *name) {
    PyObject *f = PyDict_GetItemString(cls->tp_dict, name);
    return f && PyFunction_Check(f) ? f : NULL;
}

/* map_readers(pmap_cls, chunk_map_cls) -> bool: the classes these readers read (False: they
 * do not have the expected slots and methods, and every read goes to the methods). */
static PyObject *py_map_readers(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[0]) || !PyType_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "map_readers(pmap_cls, chunk_map_cls)");
        return NULL;
    }
    PyTypeObject *pm = (PyTypeObject *)args[0], *cm = (PyTypeObject *)args[1];
    if (!mr_str_dense) {
        mr_str_dense = PyUnicode_InternFromString("dense_chunks");
        mr_str_get = PyUnicode_InternFromString("get");
        mr_str_getitem = PyUnicode_InternFromString("__getitem__");
        mr_str_dense_index = PyUnicode_InternFromString("_DENSE_INDEX");
        mr_str_root = PyUnicode_InternFromString("_root");
        mr_str_hash = PyUnicode_InternFromString("_hash");
        if (!mr_str_dense || !mr_str_get || !mr_str_getitem || !mr_str_dense_index || !mr_str_root || !mr_str_hash)
            return NULL;
    }
    Py_CLEAR(mr_chunk_cls);
    Py_CLEAR(mr_pmap_cls);
    Py_CLEAR(mr_dense_fn);
    Py_CLEAR(mr_get_fn);
    Py_CLEAR(mr_getitem_fn);
    Py_CLEAR(mr_globals);
    Py_ssize_t index_at = mr_slot_offset(cm, "_index"), chunks_at = mr_slot_offset(cm, "_chunks");
    Py_ssize_t root_at = mr_slot_offset(pm, "_root"), hash_at = mr_slot_offset(pm, "_hash");
    PyObject *dense = mr_function(cm, "dense_chunks"), *get = mr_function(pm, "get"),
             *getitem = mr_function(pm, "__getitem__");
    if (index_at < 0 || chunks_at < 0 || root_at < 0 || hash_at < 0 || !dense || !get || !getitem ||
        !PyDict_CheckExact(PyFunction_GET_GLOBALS(dense)))
        Py_RETURN_FALSE;
    mr_index_at = index_at;
    mr_chunks_at = chunks_at;
    mr_root_at = root_at;
    mr_hash_at = hash_at;
    mr_chunk_cls = (PyTypeObject *)Py_NewRef(cm);
    mr_pmap_cls = (PyTypeObject *)Py_NewRef(pm);
    mr_dense_fn = Py_NewRef(dense);
    mr_get_fn = Py_NewRef(get);
    mr_getitem_fn = Py_NewRef(getitem);
    mr_globals = Py_NewRef(PyFunction_GET_GLOBALS(dense));
    Py_RETURN_TRUE;
}

#define MR_SLOT(o, at) (*(PyObject **)((char *)(o) + (at)))

/* `parts.dense_chunks()`: read here for the registered ChunkMap (its method unchanged),
 * as the method does (`_chunks` when `_index` is non-empty and is _DENSE_INDEX[len]); else
 * the method's answer. A new reference, or NULL with an error. */
static PyObject *mr_dense_chunks(PyObject *parts) {
    PyObject *index, *chunks, *dense_index, *n, *shared;
    if (!mr_chunk_cls || Py_TYPE(parts) != mr_chunk_cls || _PyType_Lookup(mr_chunk_cls, mr_str_dense) != mr_dense_fn ||
        !(index = MR_SLOT(parts, mr_index_at)) || !PyDict_CheckExact(index) ||
        !(chunks = MR_SLOT(parts, mr_chunks_at)))
        goto method;
    if (PyDict_GET_SIZE(index) == 0)
        Py_RETURN_NONE;
    dense_index = PyDict_GetItemWithError(mr_globals, mr_str_dense_index);
    if (!dense_index || !PyDict_CheckExact(dense_index)) {
        if (PyErr_Occurred())
            return NULL;
        goto method;
    }
    if (!(n = PyLong_FromSsize_t(PyDict_GET_SIZE(index))))
        return NULL;
    shared = PyDict_GetItemWithError(dense_index, n);
    Py_DECREF(n);
    if (!shared && PyErr_Occurred())
        return NULL;
    return Py_NewRef(shared == index ? chunks : Py_None);
method:
    return mr_str_dense ? PyObject_CallMethodNoArgs(parts, mr_str_dense) : PyObject_CallMethod(parts, "dense_chunks", NULL);
}

/* Whether `pm`'s `_root` and `_hash` are the registered PMap's slots: an instance of it, or of a
 * subclass that does not put anything else under those names. */
static int mr_is_pmap(PyObject *pm) {
    PyTypeObject *t = Py_TYPE(pm);
    if (t == mr_pmap_cls)
        return 1;
    return mr_pmap_cls && PyType_IsSubtype(t, mr_pmap_cls) &&
           _PyType_Lookup(t, mr_str_root) == _PyType_Lookup(mr_pmap_cls, mr_str_root) &&
           _PyType_Lookup(t, mr_str_hash) == _PyType_Lookup(mr_pmap_cls, mr_str_hash);
}

/* PMap.get's walk for `pm`, an instance of the registered PMap (or of a subclass: the walk
 * reads only the slots): `default` when `key` is not there (declined when `default` is
 * NULL). A new reference; NULL with an error, or NULL with *declined set where the Python
 * body must run (the fast path off, a slot not set, a hash that is not an int of 64 bits, a
 * node that is neither an exact tuple of the usual width nor an exact dict). The hash is
 * pmap's: C uuid_hash computed here for a 16-byte key, any other function called. */
static PyObject *mr_pmap_get(PyObject *pm, PyObject *key, PyObject *dflt, int *declined) {
    PyObject *root, *node, *hash_fn, *v = NULL;
    *declined = 1;
    if (!g_enabled || !mr_pmap_cls || !mr_is_pmap(pm) || !(root = MR_SLOT(pm, mr_root_at)) ||
        !(hash_fn = MR_SLOT(pm, mr_hash_at)))
        return NULL;
    Py_INCREF(root); /* (held: the hash function and the key's __eq__ run Python code) */
    Py_INCREF(hash_fn);
    node = root;
    if (PyTuple_CheckExact(node)) {
        uint64_t h;
        int negative = 0;
        if (PyCFunction_Check(hash_fn) && PyCFunction_GET_FUNCTION(hash_fn) == (PyCFunction)py_uuid_hash &&
            PyBytes_Check(key) && PyBytes_GET_SIZE(key) == 16 && _PyHASH_BITS == 61) {
            const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(key);
            uint64_t hi = 0, lo = 0;
            for (int i = 0; i < 8; i++) {
                hi = hi << 8 | b[i];
                lo = lo << 8 | b[8 + i];
            }
            h = uh_reduce(uh_reduce(uh_reduce(hi) << 3) + uh_reduce(lo)); /* (py_uuid_hash's number) */
        } else {
            PyObject *hv = PyObject_CallOneArg(hash_fn, key);
            if (!hv) {
                *declined = 0;
                goto done;
            }
            int overflow = 0;
            long long s = PyLong_CheckExact(hv) ? PyLong_AsLongLongAndOverflow(hv, &overflow) : -1;
            if (!PyLong_CheckExact(hv) || (s == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                Py_DECREF(hv);
                goto done;
            }
            if (overflow > 0) { /* [2**63, 2**64): the usual stable_hash range */
                h = PyLong_AsUnsignedLongLong(hv);
                if (h == (uint64_t)-1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    Py_DECREF(hv);
                    goto done;
                }
            } else if (overflow < 0) {
                Py_DECREF(hv);
                goto done;
            } else {
                h = (uint64_t)s;
                negative = s < 0;
            }
            Py_DECREF(hv);
        }
        while (PyTuple_CheckExact(node)) {
            Py_ssize_t slot = (Py_ssize_t)(h & 31);
            if (slot >= PyTuple_GET_SIZE(node))
                goto done;
            node = PyTuple_GET_ITEM(node, slot);
            h = negative ? ~(~h >> 5) : h >> 5; /* (Python's >> of a negative int: floor) */
        }
    }
    if (!PyDict_CheckExact(node))
        goto done;
    *declined = 0;
    if ((v = PyDict_GetItemWithError(node, key)))
        Py_INCREF(v);
    else if (!PyErr_Occurred() && dflt)
        v = Py_NewRef(dflt);
    else if (!PyErr_Occurred())
        *declined = 1; /* (missing, no default: the caller's own way) */
done:
    Py_DECREF(root);
    Py_DECREF(hash_fn);
    return v;
}

/* pmap_get(pm, key, default) -> the value, `default`, or NotImplemented: PMap.get in C
 * (mr_pmap_get), NotImplemented where its Python body must run (a value that happens to be
 * NotImplemented sends it there too, which answers the same). */
static PyObject *py_pmap_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "pmap_get(pm, key, default)");
        return NULL;
    }
    int declined;
    PyObject *v = mr_pmap_get(args[0], args[1], args[2], &declined);
    return v || !declined ? v : Py_NewRef(Py_NotImplemented);
}

/* `mapping[key]`: mr_pmap_get for the registered PMap whose `get` and `__getitem__` are
 * pmap's (a missing key too goes to __getitem__, which raises its KeyError), else the
 * mapping's own subscript. A new reference, or NULL with an error. */
static PyObject *mr_getitem(PyObject *mapping, PyObject *key) {
    if (Py_TYPE(mapping) == mr_pmap_cls && _PyType_Lookup(mr_pmap_cls, mr_str_get) == mr_get_fn &&
        _PyType_Lookup(mr_pmap_cls, mr_str_getitem) == mr_getitem_fn) {
        int declined;
        PyObject *v = mr_pmap_get(mapping, key, NULL, &declined);
        if (v || !declined)
            return v;
    }
    return PyObject_GetItem(mapping, key);
}
/* dense_chunk_map(items, chunk_bits) -> ChunkMap | None
 *
 * pmap.ChunkMap.of(items) for its most common argument, made here: a dict whose keys are the
 * ints 0..n-1 in that order (a topic's partitions), when pmap._DENSE_INDEX already holds the
 * positions for n. The registered ChunkMap with that shared index and the values in chunks of
 * 1 << chunk_bits, each chunk and the tuple of them untracked by untracked_tuple's rule, as
 * the method builds them. Why: a snapshot load builds one per topic (100,000 at a million
 * partitions), and the method's Python was a tenth of the load. None when anything differs
 * (another class, a key out of place, no shared index yet): the method then runs. */
static PyObject *py_dense_chunk_map(PyObject *self, PyObject *args) {
    PyObject *items, *dense_index, *index, *n_obj, *chunks = NULL, *made;
    int bits;
    if (!PyArg_ParseTuple(args, "Oi:dense_chunk_map", &items, &bits))
        return NULL;
    if (!mr_chunk_cls || !PyDict_CheckExact(items) || bits < 0 || bits > 16)
        Py_RETURN_NONE;
    Py_ssize_t n = PyDict_GET_SIZE(items), size = (Py_ssize_t)1 << bits;
    if (n == 0)
        Py_RETURN_NONE;
    dense_index = PyDict_GetItemWithError(mr_globals, mr_str_dense_index);
    if (!dense_index || !PyDict_CheckExact(dense_index)) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if (!(n_obj = PyLong_FromSsize_t(n)))
        return NULL;
    index = PyDict_GetItemWithError(dense_index, n_obj);
    Py_DECREF(n_obj);
    if (!index) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if (!PyDict_CheckExact(index) || PyDict_GET_SIZE(index) != n)
        Py_RETURN_NONE;
    if (!(chunks = PyTuple_New((n + size - 1) >> bits)))
        return NULL;
    Py_ssize_t it = 0, i = 0;
    PyObject *k, *v, *chunk = NULL;
    while (PyDict_Next(items, &it, &k, &v)) {
        if (!PyLong_CheckExact(k) || PyLong_AsSsize_t(k) != i) {
            PyErr_Clear();
            Py_DECREF(chunks);
            Py_RETURN_NONE;
        }
        Py_INCREF(v);  /* (before an allocation, which may run a collection and any finalizer) */
        if ((i & (size - 1)) == 0) {
            Py_ssize_t left = n - i;
            if (!(chunk = PyTuple_New(left < size ? left : size))) {
                Py_DECREF(v);
                Py_DECREF(chunks);
                return NULL;
            }
            PyTuple_SET_ITEM(chunks, i >> bits, chunk);
        }
        PyTuple_SET_ITEM(chunk, i & (size - 1), v);
        i++;
    }
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(chunks); c++) {
        chunk = PyTuple_GET_ITEM(chunks, c);
        if (PyObject_GC_IsTracked(chunk) && untrackable_tuple(chunk))
            PyObject_GC_UnTrack(chunk);
    }
    if (PyObject_GC_IsTracked(chunks) && untrackable_tuple(chunks))
        PyObject_GC_UnTrack(chunks);
    if (!(made = mr_chunk_cls->tp_alloc(mr_chunk_cls, 0))) {
        Py_DECREF(chunks);
        return NULL;
    }
    MR_SLOT(made, mr_index_at) = Py_NewRef(index);
    MR_SLOT(made, mr_chunks_at) = chunks;
    return made;
}
#undef MR_SLOT

/* dense_chunks_of(parts) -> `parts.dense_chunks()` (mr_dense_chunks): for the tests that hold
 * the reader to the method, and for Python loops over many topics. */
static PyObject *py_dense_chunks_of(PyObject *self, PyObject *parts) {
    return mr_dense_chunks(parts);
}

/* map_getitem(mapping, key) -> `mapping[key]` (mr_getitem, as ri_follow looks topics up). */
static PyObject *py_map_getitem(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "map_getitem(mapping, key)");
        return NULL;
    }
    return mr_getitem(args[0], args[1]);
}
/* ------------------------------------------------------------ end of map readers */

/* ------------------------------------------------------------------------ replica index follow
 *
 * The per-topic loop of controller/replica_index.py's ReplicaIndex.follow for its common case:
 * a committed batch changes partitions of topics that existed before it (a broker event changes
 * a few partitions of thousands of topics). For each topic of the delta that was neither made
 * afresh nor deleted, whose partitions before are dense value chunks of at most 64 ids, and whose
 * changed partitions are registrations already there (no new ids), it does what _follow_topic
 * does: every broker's ISR, ELR and lacking mask of the topic changes once (old & ~lost | gained),
 * the leaderless and imbalanced masks once, each leader's count once, the topic's touched mask
 * gains the changed ids (and the topic joins the reshaped set when a partition's replicas are
 * another tuple), and the topic's entry in `known` becomes the new image's topic. A topic it cannot do so (anything else, or an unexpected object) is left
 * untouched and its id returned, for the Python loop. Every check is made before the topic's
 * first change, so a topic is done wholly here or wholly in Python. */
#define RI_BROKERS_MAX 64
#define RI_REPLICAS_MAX 32
/* The index's state, as ri_follow and ri_add_topics take it (replica_index.ReplicaIndex._state):
 * dicts but the last, a set. */
enum { RI_ISR, RI_ELR, RI_LEADERLESS, RI_LEADS, RI_LACKING, RI_IMBALANCED, RI_TOUCHED, RI_RESHAPED, RI_STATE };
typedef struct {
    long id;
    uint64_t isr_lost, isr_gained, elr_lost, elr_gained, lack_lost, lack_gained;
    long leads;
} RiBroker;

static PyObject *ri_str_fresh = NULL, *ri_str_changes = NULL, *ri_str_partitions = NULL, *ri_str_id = NULL;

/* The attribute names these loops read, interned once; -1 with an error. */
static int ri_strings(void) {
    static const char *const names[4] = {"fresh", "changes", "partitions", "id"};
    PyObject **slots[4] = {&ri_str_fresh, &ri_str_changes, &ri_str_partitions, &ri_str_id};
    for (int i = 0; i < 4; i++)
        if (!*slots[i] && !(*slots[i] = PyUnicode_InternFromString(names[i])))
            return -1;
    return 0;
}

/* The broker's entry in brokers[0..*n) (added when new); NULL when the table is full. */
static RiBroker *ri_broker(RiBroker *brokers, int *n, long id) {
    for (int i = 0; i < *n; i++)
        if (brokers[i].id == id)
            return &brokers[i];
    if (*n == RI_BROKERS_MAX)
        return NULL;
    RiBroker *b = &brokers[(*n)++];
    memset(b, 0, sizeof(*b));
    b->id = id;
    return b;
}

/* An exact int that fits a C long, into *out; 0 otherwise (errors cleared). */
static int ri_long(PyObject *v, long *out) {
    if (!v || !PyLong_CheckExact(v))
        return 0;
    int overflow;
    long x = PyLong_AsLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = x;
    return 1;
}

/* A tuple of exact ints (at most RI_REPLICAS_MAX) into out[]; its length, or -1. With
 * `distinct`, -1 also for a repeated id (the Python loop's per-partition moves then decide). */
static Py_ssize_t ri_ids(PyObject *t, long *out, int distinct) {
    if (!t || !PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) > RI_REPLICAS_MAX)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!ri_long(PyTuple_GET_ITEM(t, i), &out[i]))
            return -1;
        for (Py_ssize_t j = 0; distinct && j < i; j++)
            if (out[j] == out[i])
                return -1;
    }
    return n;
}

static int ri_has(const long *ids, Py_ssize_t n, long id) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* (cur & ~lost) | gained for a mask `cur` (NULL: 0); a new reference, or NULL with an error. */
static PyObject *ri_mask(PyObject *cur, uint64_t lost, uint64_t gained, int *zero) {
    if (!cur) {
        *zero = gained == 0;
        return PyLong_FromUnsignedLongLong(gained);
    }
    uint64_t word = PyLong_AsUnsignedLongLong(cur);
    if (!(word == (uint64_t)-1 && PyErr_Occurred())) {
        word = (word & ~lost) | gained;
        *zero = word == 0;
        return PyLong_FromUnsignedLongLong(word);
    }
    PyErr_Clear(); /* (past 64 bits: Python's arithmetic) */
    PyObject *l = PyLong_FromUnsignedLongLong(lost), *g = PyLong_FromUnsignedLongLong(gained);
    PyObject *inv = l ? PyNumber_Invert(l) : NULL;
    PyObject *kept = inv ? PyNumber_And(cur, inv) : NULL;
    PyObject *res = kept && g ? PyNumber_Or(kept, g) : NULL;
    Py_XDECREF(l);
    Py_XDECREF(g);
    Py_XDECREF(inv);
    Py_XDECREF(kept);
    if (res) {
        int truth = PyObject_IsTrue(res);
        if (truth < 0)
            Py_CLEAR(res);
        *zero = !truth;
    }
    return res;
}

/* by_broker[broker][tid] = (it & ~lost) | gained, entries that become 0 removed (a broker's dict
 * too when it empties): replica_index._clear then _set. Losing bits the index does not hold is
 * the KeyError _clear raises. */
static int ri_move(PyObject *by_broker, long broker, PyObject *tid, uint64_t lost, uint64_t gained) {
    PyObject *key = PyLong_FromLong(broker);
    if (!key)
        return -1;
    PyObject *masks = PyDict_GetItemWithError(by_broker, key), *owned = NULL;
    PyObject *cur = masks ? PyDict_GetItemWithError(masks, tid) : NULL;
    int zero = 0, rc = -1;
    if (PyErr_Occurred())
        goto done;
    if (lost && !cur) {
        PyErr_SetObject(PyExc_KeyError, masks ? tid : key);
        goto done;
    }
    if (!masks) {
        if (!(masks = owned = PyDict_New()) || PyDict_SetItem(by_broker, key, masks) < 0)
            goto done;
    }
    PyObject *mask = ri_mask(cur, lost, gained, &zero);
    if (!mask)
        goto done;
    if (zero) {
        Py_DECREF(mask);
        if (cur && PyDict_DelItem(masks, tid) < 0)
            goto done;
        if (PyDict_GET_SIZE(masks) == 0 && PyDict_DelItem(by_broker, key) < 0)
            goto done;
    } else {
        int bad = PyDict_SetItem(masks, tid, mask);
        Py_DECREF(mask);
        if (bad < 0)
            goto done;
    }
    rc = 0;
done:
    Py_XDECREF(owned);
    Py_DECREF(key);
    return rc;
}

/* What one topic's changes do to the index, gathered (0: a case for the Python loop). */
typedef struct {
    RiBroker brokers[RI_BROKERS_MAX];
    int n;
    uint64_t leaderless_lost, leaderless_gained, imbalanced_lost, imbalanced_gained, touched;
    int reshaped;
} RiTopic;

/* Whether a registration (its replicas `reps` and `leader`) is led by another than its first
 * replica: 1, 0, or -1 for an unexpected object. */
static int ri_imbalanced(PyObject *reps, long leader) {
    long first;
    if (!PyTuple_CheckExact(reps))
        return -1;
    if (PyTuple_GET_SIZE(reps) == 0)
        return 0;
    if (!ri_long(PyTuple_GET_ITEM(reps, 0), &first))
        return -1;
    return leader != first;
}

/* The ids of `replicas` that `isr` lacks (both ri_ids arrays) into out[]; how many. */
static Py_ssize_t ri_lacking(const long *replicas, Py_ssize_t nr, const long *isr, Py_ssize_t ni, long *out) {
    Py_ssize_t n = 0;
    for (Py_ssize_t j = 0; j < nr; j++)
        if (!ri_has(isr, ni, replicas[j]))
            out[n++] = replicas[j];
    return n;
}

/* A partition's brokers in one role moved from `old_ids` to `new_ids`: each broker that left
 * takes `bit` in its RiBroker field at offset `lost`, each that came in the one at `gained`
 * (offsetof: isr_lost and isr_gained, elr_..., lack_...); 0 when the table is full. */
static int ri_gather_moves(RiTopic *t, const long *old_ids, Py_ssize_t na, const long *new_ids, Py_ssize_t nb,
                           uint64_t bit, size_t lost, size_t gained) {
    for (Py_ssize_t j = 0; j < na; j++)
        if (!ri_has(new_ids, nb, old_ids[j])) {
            RiBroker *r = ri_broker(t->brokers, &t->n, old_ids[j]);
            if (!r)
                return 0;
            *(uint64_t *)((char *)r + lost) |= bit;
        }
    for (Py_ssize_t j = 0; j < nb; j++)
        if (!ri_has(old_ids, na, new_ids[j])) {
            RiBroker *r = ri_broker(t->brokers, &t->n, new_ids[j]);
            if (!r)
                return 0;
            *(uint64_t *)((char *)r + gained) |= bit;
        }
    return 1;
}

static int ri_gather(RiTopic *t, PyObject *chunks, PyObject *changes, long chunk_bits, long no_leader) {
    Py_ssize_t pos = 0, nchunks = PyTuple_GET_SIZE(chunks);
    PyObject *k, *p;
    long old_ids[RI_REPLICAS_MAX], new_ids[RI_REPLICAS_MAX], reps[RI_REPLICAS_MAX], isr[RI_REPLICAS_MAX];
    t->n = 0;
    t->leaderless_lost = t->leaderless_gained = t->imbalanced_lost = t->imbalanced_gained = t->touched = 0;
    t->reshaped = 0;
    while (PyDict_Next(changes, &pos, &k, &p)) {
        long pid;
        if (!ri_long(k, &pid) || pid < 0 || pid >= 64)
            return 0;
        Py_ssize_t c = pid >> chunk_bits, i = pid & ((1L << chunk_bits) - 1);
        PyObject *chunk = c < nchunks ? PyTuple_GET_ITEM(chunks, c) : NULL;
        if (!chunk || !PyTuple_CheckExact(chunk) || i >= PyTuple_GET_SIZE(chunk))
            return 0; /* (a new partition: _add) */
        PyObject *o = PyTuple_GET_ITEM(chunk, i);
        if (Py_TYPE(o) != (PyTypeObject *)pr_cls || Py_TYPE(p) != (PyTypeObject *)pr_cls)
            return 0;
        uint64_t bit = (uint64_t)1 << pid;
        t->touched |= bit;
#define RI_FIELD(x, f) (*(PyObject **)((char *)(x) + pr_offsets[(f)]))
        if (RI_FIELD(o, PR_REPLICAS) != RI_FIELD(p, PR_REPLICAS) || RI_FIELD(o, PR_ISR) != RI_FIELD(p, PR_ISR)) {
            Py_ssize_t nr = ri_ids(RI_FIELD(o, PR_REPLICAS), reps, 0), ni = ri_ids(RI_FIELD(o, PR_ISR), isr, 0);
            if (nr < 0 || ni < 0)
                return 0;
            Py_ssize_t na = ri_lacking(reps, nr, isr, ni, old_ids);
            nr = ri_ids(RI_FIELD(p, PR_REPLICAS), reps, 0);
            ni = ri_ids(RI_FIELD(p, PR_ISR), isr, 0);
            if (nr < 0 || ni < 0 ||
                !ri_gather_moves(t, old_ids, na, new_ids, ri_lacking(reps, nr, isr, ni, new_ids), bit,
                                 offsetof(RiBroker, lack_lost), offsetof(RiBroker, lack_gained)))
                return 0;
        }
        for (int f = 0; f < 2; f++) {
            int field = f == 0 ? PR_ISR : PR_ELR;
            PyObject *a = RI_FIELD(o, field), *b = RI_FIELD(p, field);
            if (a == b)
                continue;
            Py_ssize_t na = ri_ids(a, old_ids, f), nb = ri_ids(b, new_ids, f);
            if (na < 0 || nb < 0 ||
                !ri_gather_moves(t, old_ids, na, new_ids, nb, bit,
                                 f == 0 ? offsetof(RiBroker, isr_lost) : offsetof(RiBroker, elr_lost),
                                 f == 0 ? offsetof(RiBroker, isr_gained) : offsetof(RiBroker, elr_gained)))
                return 0;
        }
        long old_leader, new_leader;
        if (!ri_long(RI_FIELD(o, PR_LEADER), &old_leader) || !ri_long(RI_FIELD(p, PR_LEADER), &new_leader))
            return 0;
        if (RI_FIELD(o, PR_REPLICAS) != RI_FIELD(p, PR_REPLICAS) || old_leader != new_leader) {
            int was = ri_imbalanced(RI_FIELD(o, PR_REPLICAS), old_leader), is = ri_imbalanced(RI_FIELD(p, PR_REPLICAS), new_leader);
            if (was < 0 || is < 0)
                return 0;
            if (was && !is)
                t->imbalanced_lost |= bit;
            else if (is && !was)
                t->imbalanced_gained |= bit;
            t->reshaped |= RI_FIELD(o, PR_REPLICAS) != RI_FIELD(p, PR_REPLICAS);
        }
#undef RI_FIELD
        if (old_leader == new_leader)
            continue;
        if (old_leader == no_leader) {
            t->leaderless_lost |= bit;
        } else {
            RiBroker *r = ri_broker(t->brokers, &t->n, old_leader);
            if (!r)
                return 0;
            r->leads -= 1;
        }
        if (new_leader == no_leader) {
            t->leaderless_gained |= bit;
        } else {
            RiBroker *r = ri_broker(t->brokers, &t->n, new_leader);
            if (!r)
                return 0;
            r->leads += 1;
        }
    }
    return 1;
}

/* leads[broker] += delta, the entry removed when it reaches 0; -1 with an error. */
static int ri_count_leads(PyObject *leads, long broker, long delta) {
    PyObject *key = PyLong_FromLong(broker);
    PyObject *cur = key ? PyDict_GetItemWithError(leads, key) : NULL;
    long count = 0;
    if (!key || PyErr_Occurred() || (cur && !ri_long(cur, &count))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "a leader count that is not an int");
        Py_XDECREF(key);
        return -1;
    }
    count += delta;
    int bad;
    if (count) {
        PyObject *v = PyLong_FromLong(count);
        bad = !v || PyDict_SetItem(leads, key, v) < 0;
        Py_XDECREF(v);
    } else {
        bad = PyDict_DelItem(leads, key) < 0;
    }
    Py_DECREF(key);
    return bad ? -1 : 0;
}

/* masks[tid] = (it & ~lost) | gained, the entry removed when that is 0 (a topic's mask in a
 * Masks dict: the leaderless or touched partitions); -1 with an error. */
static int ri_topic_mask(PyObject *masks, PyObject *tid, uint64_t lost, uint64_t gained) {
    PyObject *cur = PyDict_GetItemWithError(masks, tid);
    int zero = 0;
    if (!cur && PyErr_Occurred())
        return -1;
    PyObject *left = ri_mask(cur, lost, gained, &zero);
    if (!left)
        return -1;
    int bad = zero ? PyDict_DelItem(masks, tid) < 0 : PyDict_SetItem(masks, tid, left) < 0;
    Py_DECREF(left);
    return bad ? -1 : 0;
}

/* The gathered topic `tid` written into the index's state (RI_ISR...); -1 with an error. */
static int ri_apply(const RiTopic *t, PyObject *tid, PyObject **state) {
    for (int i = 0; i < t->n; i++) {
        const RiBroker *r = &t->brokers[i];
        if ((r->isr_lost || r->isr_gained) && ri_move(state[RI_ISR], r->id, tid, r->isr_lost, r->isr_gained) < 0)
            return -1;
        if ((r->elr_lost || r->elr_gained) && ri_move(state[RI_ELR], r->id, tid, r->elr_lost, r->elr_gained) < 0)
            return -1;
        if ((r->lack_lost || r->lack_gained) &&
            ri_move(state[RI_LACKING], r->id, tid, r->lack_lost, r->lack_gained) < 0)
            return -1;
        if (r->leads && ri_count_leads(state[RI_LEADS], r->id, r->leads) < 0)
            return -1;
    }
    if ((t->leaderless_lost || t->leaderless_gained) &&
        ri_topic_mask(state[RI_LEADERLESS], tid, t->leaderless_lost, t->leaderless_gained) < 0)
        return -1;
    if ((t->imbalanced_lost || t->imbalanced_gained) &&
        ri_topic_mask(state[RI_IMBALANCED], tid, t->imbalanced_lost, t->imbalanced_gained) < 0)
        return -1;
    if (t->reshaped && PySet_Add(state[RI_RESHAPED], tid) < 0)
        return -1;
    return t->touched ? ri_topic_mask(state[RI_TOUCHED], tid, 0, t->touched) : 0;
}

/* The index's state tuple (RI_STATE items: dicts, then a set) into state[]; 0 when it is not one. */
static int ri_state(PyObject *tuple, PyObject **state) {
    if (!PyTuple_CheckExact(tuple) || PyTuple_GET_SIZE(tuple) != RI_STATE)
        return 0;
    for (int i = 0; i < RI_STATE; i++) {
        state[i] = PyTuple_GET_ITEM(tuple, i);
        if (i == RI_RESHAPED ? !PySet_CheckExact(state[i]) : !PyDict_CheckExact(state[i]))
            return 0;
    }
    return 1;
}

/* One topic of the delta: 1 done, 0 left to Python, -1 error. */
static int ri_follow_topic(RiTopic *t, PyObject *tid, PyObject *td, PyObject *fixed, PyObject **state, PyObject *known,
                           PyObject *new_by_id, PyObject *deleted) {
    PyObject *chunk_map = PyTuple_GET_ITEM(fixed, 0);
    long no_leader, chunk_bits;
    if (!ri_long(PyTuple_GET_ITEM(fixed, 1), &no_leader) || !ri_long(PyTuple_GET_ITEM(fixed, 2), &chunk_bits) ||
        chunk_bits < 0 || chunk_bits > 6)
        return 0;
    if (PySet_GET_SIZE(deleted)) {
        int in = PySet_Contains(deleted, tid);
        if (in != 0)
            return in < 0 ? -1 : 0;
    }
    PyObject *before = PyDict_GetItemWithError(known, tid);
    if (!before)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *fresh = PyObject_GetAttr(td, ri_str_fresh);
    if (!fresh)
        return -1;
    Py_DECREF(fresh);
    if (fresh != Py_False)
        return 0;
    PyObject *changes = PyObject_GetAttr(td, ri_str_changes), *parts = NULL, *chunks = NULL, *after = NULL;
    int rc = -1;
    if (!changes || !(parts = PyObject_GetAttr(before, ri_str_partitions)))
        goto done;
    rc = 0;
    if (!PyDict_CheckExact(changes) || Py_TYPE(parts) != (PyTypeObject *)chunk_map)
        goto done;
    if (!(chunks = mr_dense_chunks(parts))) {
        rc = -1;
        goto done;
    }
    if (!PyTuple_CheckExact(chunks) || PyTuple_GET_SIZE(chunks) > (64 >> chunk_bits) ||
        !ri_gather(t, chunks, changes, chunk_bits, no_leader))
        goto done;
    rc = -1;
    if (!(after = mr_getitem(new_by_id, tid)) || PyDict_SetItem(known, tid, after) < 0 ||
        ri_apply(t, tid, state) < 0)
        goto done;
    rc = 1;
done:
    Py_XDECREF(changes);
    Py_XDECREF(parts);
    Py_XDECREF(chunks);
    Py_XDECREF(after);
    return rc;
}

/* ri_follow(fixed, state, known, new_by_id, changed, deleted) -> list | None
 *
 * fixed: (the ChunkMap class, NO_LEADER, CHUNK_BITS). state: the index's (isr, elr, leaderless,
 * leads, lacking, imbalanced, touched, reshaped), and known, changed in place; new_by_id: the new image's topics by id; changed, deleted:
 * the topics delta's. Returns the ids of the changed topics left to the Python loop (in
 * `changed` order), or None when it can do none (fast path off, registrations not configured). */
static PyObject *py_ri_follow(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "ri_follow(fixed, state, known, new_by_id, changed, deleted)");
        return NULL;
    }
    PyObject *fixed = args[0], *known = args[2], *new_by_id = args[3], *changed = args[4], *deleted = args[5];
    PyObject *state[RI_STATE];
    if (!g_enabled || !pr_cls || !PyTuple_CheckExact(fixed) || PyTuple_GET_SIZE(fixed) != 3 ||
        !PyDict_CheckExact(known) || !PyDict_CheckExact(changed) || !PyAnySet_CheckExact(deleted) ||
        !ri_state(args[1], state))
        Py_RETURN_NONE;
    if (ri_strings() < 0)
        return NULL;
    PyObject *rest = PyList_New(0);
    RiTopic *t = PyMem_Malloc(sizeof(RiTopic));
    if (!rest || !t)
        goto error;
    Py_ssize_t pos = 0;
    PyObject *tid, *td;
    while (PyDict_Next(changed, &pos, &tid, &td)) {
        Py_INCREF(tid);
        Py_INCREF(td);
        int done = ri_follow_topic(t, tid, td, fixed, state, known, new_by_id, deleted);
        Py_DECREF(td);
        if (done < 0 || (done == 0 && PyList_Append(rest, tid) < 0)) {
            Py_DECREF(tid);
            goto error;
        }
        Py_DECREF(tid);
    }
    PyMem_Free(t);
    return rest;
error:
    if (!PyErr_Occurred())
        PyErr_NoMemory();
    PyMem_Free(t);
    Py_XDECREF(rest);
    return NULL;
}

/* ------------------------------------------------------------------------ replica index answers as records
 *
 * leader_and_isr_updates over a whole index answer in one call: the topics of the answer in
 * order (`order`: their ids, sorted as the index sorts them), each with its mask, and for each
 * the per-topic loop above (py_leader_isr_records) with the memo `enter(topic)` returns (the
 * Python loop's: it also makes `topic` the one its own visits then use). It returns at the
 * first partition that loop leaves to Python, or where it cannot build these classes. */
/* ri_records(out, fixed, order, masks, known, chunk_map, dense, enter, plain, at, start) -> tuple | None
 *
 * fixed: leader_isr_records'. dense: the index's memo of dense chunks (see ri_dense_chunks). plain: None, or (made, names): a topic whose name is not in the
 * set `names` takes the memo `made` without a call of `enter` (the topics with the cluster's
 * rules share one memo: the caller gives it, and enters such a topic itself before it writes
 * one of its partitions). From topic `at` of `order` (its ids from partition `start` on),
 * then every later topic whole. None: every topic done. Else (i, topic, chunks, mask, pid,
 * in_c): topic i stopped at `pid`; with in_c True the caller writes that partition and calls
 * again with (i, pid + 1); with in_c False (this code cannot build the records) the caller
 * writes topic i from `pid` on and every later topic. */
static PyObject *ri_str_name = NULL;

/* The attribute name ri_records reads besides ri_strings', interned once; -1 with an error. */
static int ri_records_strings(void) {
    return ri_str_name || (ri_str_name = PyUnicode_InternFromString("name")) ? 0 : -1;
}

/* The dense value chunks of a topic's ChunkMap `parts` (`parts.dense_chunks()`), as the index's
 * memo `dense` (topic id -> (partitions, their dense chunks)) holds them for the same partitions
 * object, else asked and remembered; a new reference, or NULL with an error. */
static PyObject *ri_dense_chunks(PyObject *dense, PyObject *tid, PyObject *parts) {
    PyObject *kept = PyDict_GetItemWithError(dense, tid);
    if (kept && PyTuple_CheckExact(kept) && PyTuple_GET_SIZE(kept) == 2 && PyTuple_GET_ITEM(kept, 0) == parts)
        return Py_NewRef(PyTuple_GET_ITEM(kept, 1));
    if (PyErr_Occurred())
        return NULL;
    PyObject *chunks = mr_dense_chunks(parts);
    PyObject *entry = chunks ? PyTuple_Pack(2, parts, chunks) : NULL;
    int bad = !entry || PyDict_SetItem(dense, tid, entry) < 0;
    Py_XDECREF(entry);
    if (bad)
        Py_CLEAR(chunks);
    return chunks;
}

static PyObject *py_ri_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "ri_records(out, fixed, order, masks, known, chunk_map, dense, enter, plain, at, start)");
        return NULL;
    }
    PyObject *out = args[0], *fixed = args[1], *order = args[2], *masks = args[3], *known = args[4],
             *chunk_map = args[5], *dense = args[6], *enter = args[7], *plain = args[8];
    Py_ssize_t at = PyLong_AsSsize_t(args[9]), start = PyLong_AsSsize_t(args[10]);
    if ((at == -1 || start == -1) && PyErr_Occurred())
        return NULL;
    if (!PyList_CheckExact(order) || !PyDict_CheckExact(masks) || !PyDict_CheckExact(known) ||
        !PyDict_CheckExact(dense) || at < 0 || start < 0 ||
        (plain != Py_None && (!PyTuple_CheckExact(plain) || PyTuple_GET_SIZE(plain) != 2 ||
                              !PyAnySet_CheckExact(PyTuple_GET_ITEM(plain, 1))))) {
        PyErr_SetString(PyExc_TypeError, "ri_records: order a list, masks, known and dense dicts, plain None or "
                                         "(made, a set of names), at and start >= 0");
        return NULL;
    }
    if (ri_strings() < 0 || ri_records_strings() < 0)
        return NULL;
    for (Py_ssize_t i = at; i < PyList_GET_SIZE(order); i++, start = 0) {
        PyObject *key = PyList_GET_ITEM(order, i);
        PyObject *topic = PyDict_GetItemWithError(known, key), *mask = PyDict_GetItemWithError(masks, key);
        if (!topic || !mask) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, key);
            return NULL;
        }
        Py_INCREF(topic);
        Py_INCREF(mask);
        PyObject *parts = PyObject_GetAttr(topic, ri_str_partitions), *tid = NULL, *made = NULL, *chunks = NULL,
                 *stop = NULL, *res = NULL;
        if (!parts || !(tid = PyObject_GetAttr(topic, ri_str_id)))
            goto fail;
        if (Py_TYPE(parts) == (PyTypeObject *)chunk_map) {
            if (!(chunks = ri_dense_chunks(dense, key, parts)))
                goto fail;
        } else {
            chunks = Py_NewRef(Py_None);
        }
        if (plain != Py_None) {
            PyObject *name = PyObject_GetAttr(topic, ri_str_name);
            int special = name ? PySet_Contains(PyTuple_GET_ITEM(plain, 1), name) : -1;
            Py_XDECREF(name);
            if (special < 0)
                goto fail;
            if (!special)
                made = Py_NewRef(PyTuple_GET_ITEM(plain, 0));
        }
        if (!made && !(made = PyObject_CallOneArg(enter, topic)))
            goto fail;
        PyObject *start_obj = PyLong_FromSsize_t(start);
        if (!start_obj)
            goto fail;
        PyObject *call[8] = {out, fixed, tid, made, chunks, parts, mask, start_obj};
        stop = py_leader_isr_records(NULL, call, 8);
        Py_DECREF(start_obj);
        if (!stop)
            goto fail;
        if (stop == Py_None || PyLong_AsSsize_t(stop) >= 0) {
            int in_c = stop != Py_None;
            PyObject *pid = in_c ? Py_NewRef(stop) : PyLong_FromSsize_t(start);
            res = pid ? Py_BuildValue("(nOOONO)", i, topic, chunks, mask, pid, in_c ? Py_True : Py_False) : NULL;
            Py_XDECREF(pid);
        }
    fail:
        Py_XDECREF(parts);
        Py_XDECREF(tid);
        Py_XDECREF(made);
        Py_XDECREF(chunks);
        Py_DECREF(topic);
        Py_DECREF(mask);
        if (!stop) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_SystemError, "ri_records failed");
            return NULL;
        }
        Py_DECREF(stop);
        if (res || PyErr_Occurred())
            return res;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ replica index built in bulk
 *
 * ri_add_topics(fixed, state, items, at) -> int | None
 *
 * controller/replica_index.py's ReplicaIndex.ensure for a whole topics image: from `items[at]`
 * on ((topic id, TopicImage) pairs), each topic whose partitions are dense value chunks of at
 * most 64 ids of the usual registration class is added as _add_topic adds it (each broker's ISR,
 * ELR and lacking mask of the topic set once, in the order the brokers first appear; the leaderless
 * and imbalanced masks
 * once; each leader's count once). It returns the position of the first topic it leaves to the
 * Python loop (untouched: every check is made before a topic's first change), or len(items)
 * when it did them all; None when it can do none (fast path off, registrations not configured).
 * fixed, state: ri_follow's (touched and reshaped are not changed). */
typedef struct {
    RiBroker isr[RI_BROKERS_MAX], elr[RI_BROKERS_MAX], lack[RI_BROKERS_MAX], lead[RI_BROKERS_MAX];
    int n_isr, n_elr, n_lack, n_lead;
    uint64_t leaderless, imbalanced;
} RiBuild;

/* `bit` set in the entries of `ids` (count of them) in table[0..*n), added in the order met (a build
 * table keeps one mask per broker: isr_gained); 0 when the table is full. */
static int ri_build_mark(RiBroker *table, int *n, const long *ids, Py_ssize_t count, uint64_t bit) {
    for (Py_ssize_t j = 0; j < count; j++) {
        RiBroker *r = ri_broker(table, n, ids[j]);
        if (!r)
            return 0;
        r->isr_gained |= bit;
    }
    return 1;
}

/* One topic's partitions gathered into *b: 1 done, 0 a topic for the Python loop, -1 an error. */
static int ri_build_gather(RiBuild *b, PyObject *topic, PyObject *chunk_map, long chunk_bits, long no_leader) {
    PyObject *parts = PyObject_GetAttr(topic, ri_str_partitions), *chunks = NULL;
    long ids[RI_REPLICAS_MAX], reps[RI_REPLICAS_MAX], lacking[RI_REPLICAS_MAX];
    int rc = -1;
    b->n_isr = b->n_elr = b->n_lack = b->n_lead = 0;
    b->leaderless = b->imbalanced = 0;
    if (!parts)
        goto done;
    rc = 0;
    if (Py_TYPE(parts) != (PyTypeObject *)chunk_map)
        goto done;
    if (!(chunks = mr_dense_chunks(parts))) {
        rc = -1;
        goto done;
    }
    if (!PyTuple_CheckExact(chunks) || PyTuple_GET_SIZE(chunks) > (64 >> chunk_bits))
        goto done;
    for (Py_ssize_t c = 0; c < PyTuple_GET_SIZE(chunks); c++) {
        PyObject *chunk = PyTuple_GET_ITEM(chunks, c);
        if (!PyTuple_CheckExact(chunk) || PyTuple_GET_SIZE(chunk) > (1L << chunk_bits))
            goto done;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(chunk); k++) {
            PyObject *p = PyTuple_GET_ITEM(chunk, k);
            uint64_t bit = (uint64_t)1 << ((c << chunk_bits) | k);
            long leader;
            Py_ssize_t n, nr;
            if (Py_TYPE(p) != (PyTypeObject *)pr_cls)
                goto done;
#define RI_FIELD(f) (*(PyObject **)((char *)p + pr_offsets[(f)]))
            if ((n = ri_ids(RI_FIELD(PR_ISR), ids, 0)) < 0 || !ri_build_mark(b->isr, &b->n_isr, ids, n, bit) ||
                (nr = ri_ids(RI_FIELD(PR_REPLICAS), reps, 0)) < 0 ||
                !ri_build_mark(b->lack, &b->n_lack, lacking, ri_lacking(reps, nr, ids, n, lacking), bit) ||
                (n = ri_ids(RI_FIELD(PR_ELR), ids, 0)) < 0 || !ri_build_mark(b->elr, &b->n_elr, ids, n, bit) ||
                !ri_long(RI_FIELD(PR_LEADER), &leader))
                goto done;
            if (nr && reps[0] != leader)
                b->imbalanced |= bit;
#undef RI_FIELD
            if (leader == no_leader) {
                b->leaderless |= bit;
            } else {
                RiBroker *r = ri_broker(b->lead, &b->n_lead, leader);
                if (!r)
                    goto done;
                r->leads += 1;
            }
        }
    }
    rc = 1;
done:
    Py_XDECREF(parts);
    Py_XDECREF(chunks);
    return rc;
}

/* The gathered topic `tid` written into the index's dicts; -1 with an error. */
static int ri_build_apply(const RiBuild *b, PyObject *tid, PyObject **state) {
    for (int i = 0; i < b->n_isr; i++)
        if (ri_move(state[RI_ISR], b->isr[i].id, tid, 0, b->isr[i].isr_gained) < 0)
            return -1;
    for (int i = 0; i < b->n_elr; i++)
        if (ri_move(state[RI_ELR], b->elr[i].id, tid, 0, b->elr[i].isr_gained) < 0)
            return -1;
    for (int i = 0; i < b->n_lack; i++)
        if (ri_move(state[RI_LACKING], b->lack[i].id, tid, 0, b->lack[i].isr_gained) < 0)
            return -1;
    for (int i = 0; i < b->n_lead; i++)
        if (ri_count_leads(state[RI_LEADS], b->lead[i].id, b->lead[i].leads) < 0)
            return -1;
    if (b->leaderless && ri_topic_mask(state[RI_LEADERLESS], tid, 0, b->leaderless) < 0)
        return -1;
    return b->imbalanced ? ri_topic_mask(state[RI_IMBALANCED], tid, 0, b->imbalanced) : 0;
}

static PyObject *py_ri_add_topics(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "ri_add_topics(fixed, state, items, at)");
        return NULL;
    }
    PyObject *fixed = args[0], *items = args[2];
    PyObject *state[RI_STATE];
    Py_ssize_t at = PyLong_AsSsize_t(args[3]);
    if (at == -1 && PyErr_Occurred())
        return NULL;
    if (!PyList_CheckExact(items) || at < 0) {
        PyErr_SetString(PyExc_TypeError, "ri_add_topics: items a list, at >= 0");
        return NULL;
    }
    long no_leader, chunk_bits;
    if (!g_enabled || !pr_cls || !PyTuple_CheckExact(fixed) || PyTuple_GET_SIZE(fixed) != 3 ||
        !ri_long(PyTuple_GET_ITEM(fixed, 1), &no_leader) || !ri_long(PyTuple_GET_ITEM(fixed, 2), &chunk_bits) ||
        chunk_bits < 0 || chunk_bits > 6 || !ri_state(args[1], state))
        Py_RETURN_NONE;
    if (ri_strings() < 0)
        return NULL;
    RiBuild *b = PyMem_Malloc(sizeof(RiBuild));
    if (!b)
        return PyErr_NoMemory();
    Py_ssize_t i = at;
    for (; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2)
            break;
        PyObject *tid = Py_NewRef(PyTuple_GET_ITEM(item, 0)), *topic = Py_NewRef(PyTuple_GET_ITEM(item, 1));
        int rc = ri_build_gather(b, topic, PyTuple_GET_ITEM(fixed, 0), chunk_bits, no_leader);
        if (rc > 0)
            rc = ri_build_apply(b, tid, state) < 0 ? -1 : 1;
        Py_DECREF(tid);
        Py_DECREF(topic);
        if (rc < 0) {
            PyMem_Free(b);
            return NULL;
        }
        if (rc == 0)
            break;
    }
    PyMem_Free(b);
    return PyLong_FromSsize_t(i);
}

/* ------------------------------------------------------------------------ tw_: snapshot topic writer */

/* tw_changed(self, payload, topic_id, chunks, kept_chunks, kept_twins, values, directories, resolve)
 *     -> (values, twins, changed) | None
 *
 * One changed topic of the snapshot topic writer (writer/components/topics.py write_values),
 * for tw_write_topics below, of the common kind: a dense ChunkMap (`chunks`, its value chunks: partition
 * ids 0..n-1 in order) whose topic the last write kept with the same name and chunks of the
 * same lengths (`kept_chunks`, the registrations it wrote; `kept_twins`, per chunk a tuple of
 * registrations equal to them, or the chunk itself; `values`: its TopicRecord's value, then
 * n PartitionRecord values). A chunk that is the kept one is unchanged (no look inside: its
 * twins stay); elsewhere position i is unchanged when the new registration is the kept one,
 * or its twin, or equal to the kept one: what changed_positions decides, with the same twins
 * (a chunk's twins tuple is the chunk itself, or the kept twins tuple, when it holds the
 * same objects). Why chunks and not lists: a list of a topic's registrations takes a
 * reference to each, a memory access per partition per write at a million partitions,
 * where an unchanged chunk costs one comparison. The changed registrations are encoded by
 * partition_values (called here, the one encoder of these records) and replace the kept
 * values in place: the writer drops the kept topic as it takes the new one (a copy, and
 * the kept list's release, took a reference to each value and gave it back, another two
 * memory accesses per partition). Returns the values (the kept list), the twins per chunk
 * and how many partitions were encoded. None, for the Python path to run
 * (it reports every loss), for any other shape or when partition_values declines. */
#define TW_MAX_CHUNK 64
static PyObject *tw_changed(PyObject *self, PyObject *payload, PyObject *topic_id, PyObject *chunks, PyObject *kept,
                            PyObject *kept_twins, PyObject *old_values, PyObject *dirs_ok, PyObject *resolve) {
    if (!PyTuple_CheckExact(chunks) || !PyTuple_CheckExact(kept) || !PyTuple_CheckExact(kept_twins) ||
        !PyList_CheckExact(old_values))
        Py_RETURN_NONE;
    Py_ssize_t nc = PyTuple_GET_SIZE(chunks), total = 0;
    if (PyTuple_GET_SIZE(kept) != nc || PyTuple_GET_SIZE(kept_twins) != nc)
        Py_RETURN_NONE;
    for (Py_ssize_t c = 0; c < nc; c++) {
        PyObject *chunk = PyTuple_GET_ITEM(chunks, c), *oc = PyTuple_GET_ITEM(kept, c),
                 *tc = PyTuple_GET_ITEM(kept_twins, c);
        if (!PyTuple_CheckExact(chunk) || !PyTuple_CheckExact(oc) || !PyTuple_CheckExact(tc) ||
            PyTuple_GET_SIZE(chunk) != PyTuple_GET_SIZE(oc) || PyTuple_GET_SIZE(chunk) != PyTuple_GET_SIZE(tc) ||
            PyTuple_GET_SIZE(chunk) > TW_MAX_CHUNK)
            Py_RETURN_NONE;
        total += PyTuple_GET_SIZE(chunk);
    }
    if (PyList_GET_SIZE(old_values) != total + 1)
        Py_RETURN_NONE;
    /* (the tuples are immutable and held by `args`: no comparison below can change them) */
    PyObject *twins = PyTuple_New(nc), *pids = PyList_New(0), *regs = PyList_New(0), *made = NULL, *values = NULL;
    if (!twins || !pids || !regs)
        goto error;
    Py_ssize_t first = 0;
    for (Py_ssize_t c = 0; c < nc; first += PyTuple_GET_SIZE(PyTuple_GET_ITEM(chunks, c)), c++) {
        PyObject *chunk = PyTuple_GET_ITEM(chunks, c), *oc = PyTuple_GET_ITEM(kept, c),
                 *tc = PyTuple_GET_ITEM(kept_twins, c), *twin[TW_MAX_CHUNK];
        Py_ssize_t m = PyTuple_GET_SIZE(chunk);
        if (chunk == oc) { /* (every registration the kept one: the twins stay) */
            PyTuple_SET_ITEM(twins, c, Py_NewRef(tc));
            continue;
        }
        int as_new = 1, as_kept = 1;
        for (Py_ssize_t k = 0; k < m; k++) {
            PyObject *x = PyTuple_GET_ITEM(chunk, k), *y = PyTuple_GET_ITEM(oc, k), *z = PyTuple_GET_ITEM(tc, k);
            if (x == y) {
                twin[k] = z;
            } else if (x == z) {
                twin[k] = y;
            } else {
                int same = PyObject_RichCompareBool(x, y, Py_EQ);
                if (same < 0)
                    goto error;
                twin[k] = same ? y : x;
                if (!same) {
                    PyObject *pid = PyLong_FromSsize_t(first + k);
                    if (!pid || PyList_Append(pids, pid) < 0 || PyList_Append(regs, x) < 0) {
                        Py_XDECREF(pid);
                        goto error;
                    }
                    Py_DECREF(pid);
                }
            }
            as_new &= twin[k] == x;
            as_kept &= twin[k] == z;
        }
        PyObject *t;
        if (as_new) {
            t = Py_NewRef(chunk);
        } else if (as_kept) {
            t = Py_NewRef(tc);
        } else {
            if (!(t = PyTuple_New(m)))
                goto error;
            for (Py_ssize_t k = 0; k < m; k++)
                PyTuple_SET_ITEM(t, k, Py_NewRef(twin[k]));
            if (PyObject_GC_IsTracked(t) && untrackable_tuple(t))
                PyObject_GC_UnTrack(t); /* (as ChunkMap's chunks: kept, never part of a cycle) */
        }
        PyTuple_SET_ITEM(twins, c, t);
    }
    Py_ssize_t changed = PyList_GET_SIZE(regs);
    if (changed == 0) {
        values = Py_NewRef(old_values);
    } else {
        PyObject *call = Py_BuildValue("(OOOOOOO)", payload, topic_id, pids, regs, Py_None, dirs_ok, resolve);
        if (!call)
            goto error;
        made = py_partition_values(self, call);
        Py_DECREF(call);
        if (!made)
            goto error;
        if (made == Py_None || !PyList_CheckExact(made) || PyList_GET_SIZE(made) != changed ||
            PyList_GET_SIZE(old_values) != total + 1 || PyList_GET_SIZE(pids) != changed)
            goto decline;
        values = Py_NewRef(old_values); /* (changed in place: see above) */
        for (Py_ssize_t j = 0; j < changed; j++) {
            Py_ssize_t at = PyLong_AsSsize_t(PyList_GET_ITEM(pids, j)) + 1;
            PyObject *old = PyList_GET_ITEM(values, at);
            PyList_SET_ITEM(values, at, Py_NewRef(PyList_GET_ITEM(made, j)));
            Py_DECREF(old);
        }
        Py_CLEAR(made);
    }
    Py_DECREF(pids);
    Py_DECREF(regs);
    PyObject *count = PyLong_FromSsize_t(changed), *res = count ? PyTuple_New(3) : NULL;
    if (!res) {
        Py_XDECREF(count);
        Py_DECREF(values);
        Py_DECREF(twins);
        return NULL;
    }
    PyTuple_SET_ITEM(res, 0, values);
    PyTuple_SET_ITEM(res, 1, twins);
    PyTuple_SET_ITEM(res, 2, count);
    return res;
decline:
    Py_XDECREF(made);
    Py_DECREF(twins); /* (unfilled items are NULL: tuple dealloc skips them) */
    Py_DECREF(pids);
    Py_DECREF(regs);
    Py_RETURN_NONE;
error:
    Py_XDECREF(made);
    Py_XDECREF(values);
    Py_XDECREF(twins);
    Py_XDECREF(pids);
    Py_XDECREF(regs);
    return NULL;
}

/* tw_write_topics(topics, start, kept, fresh, out, written, chunk_map, payload, directories, resolve)
 *     -> (stop, encoded, reused)
 *
 * The snapshot topic writer's loop (writer/components/topics.py write_values) over the
 * ordered `topics` from `start`, for the two usual kinds of topic: one the last write kept
 * (`kept`: topic id -> `written`, a _Written) with the same name and the same partitions
 * object (its kept record taken as it is), and one with the same name whose partitions are
 * a dense `chunk_map` kept as chunks of the same lengths, every changed partition of the
 * usual case (tw_changed above). Each topic done goes into `fresh` (its id -> its new
 * `written`) and its values onto `out`, as the Python loop does. Stops at the first other
 * topic (no kept one, renamed, another layout, a partition tw_changed declines: the Python
 * path takes it, reporting any loss) and returns its position (len(topics) when done), with
 * how many partitions were encoded and reused. Why: at a million partitions a write meets
 * 20,000 topics, most changed in a few partitions; the Python loop cost about as much per
 * topic as the C comparison and encoding of its changed partitions. */
static PyObject *tw_str_name = NULL, *tw_str_id = NULL, *tw_str_partitions = NULL;

static int tw_extend(PyObject *out, PyObject *values) {
    Py_ssize_t n = PyList_GET_SIZE(out);
    return PyList_SetSlice(out, n, n, values);
}

static PyObject *py_tw_write_topics(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError, "tw_write_topics expects 10 arguments, got %zd", nargs);
    PyObject *topics = args[0], *kept = args[2], *fresh = args[3], *out = args[4], *written = args[5],
             *chunk_map = args[6], *payload = args[7], *dirs_ok = args[8], *resolve = args[9];
    if (!PyList_CheckExact(topics) || !PyDict_CheckExact(kept) || !PyDict_CheckExact(fresh) ||
        !PyList_CheckExact(out) || !PyType_Check(written) || !PyType_IsSubtype((PyTypeObject *)written, &PyTuple_Type) ||
        ((PyTypeObject *)written)->tp_basicsize != PyTuple_Type.tp_basicsize || !PyType_Check(chunk_map))
        return PyErr_Format(PyExc_TypeError, "tw_write_topics: unexpected argument types");
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    if (!tw_str_name) {
        tw_str_name = PyUnicode_InternFromString("name");
        tw_str_id = PyUnicode_InternFromString("id");
        tw_str_partitions = PyUnicode_InternFromString("partitions");
        if (!tw_str_name || !tw_str_id || !tw_str_partitions)
            return NULL;
    }
    Py_ssize_t i = start < 0 ? 0 : start, encoded = 0, reused = 0;
    PyObject *t = NULL, *name = NULL, *tid = NULL, *parts = NULL, *chunks = NULL, *res = NULL;
    for (; i < PyList_GET_SIZE(topics); i++) {
        t = Py_NewRef(PyList_GET_ITEM(topics, i));
        if (!(name = PyObject_GetAttr(t, tw_str_name)) || !(tid = PyObject_GetAttr(t, tw_str_id)) ||
            !(parts = PyObject_GetAttr(t, tw_str_partitions)))
            goto error;
        PyObject *old = PyDict_GetItemWithError(kept, tid); /* (borrowed: `kept` is the caller's, unchanged here) */
        if (!old) {
            if (PyErr_Occurred())
                goto error;
            break;
        }
        Py_INCREF(old);
        if (Py_TYPE(old) != (PyTypeObject *)written || PyTuple_GET_SIZE(old) != 6 ||
            !PyList_CheckExact(PyTuple_GET_ITEM(old, 5))) {
            Py_DECREF(old);
            break;
        }
        PyObject *old_values = PyTuple_GET_ITEM(old, 5);
        int same_name = PyObject_RichCompareBool(PyTuple_GET_ITEM(old, 0), name, Py_EQ);
        if (same_name <= 0) {
            Py_DECREF(old);
            if (same_name < 0)
                goto error;
            break;
        }
        if (PyTuple_GET_ITEM(old, 1) == parts) { /* the same partitions object: the same records */
            Py_ssize_t n = PyList_GET_SIZE(old_values);
            int bad = PyDict_SetItem(fresh, tid, old) < 0 || tw_extend(out, old_values) < 0;
            Py_DECREF(old);
            if (bad)
                goto error;
            reused += n - 1;
        } else {
            PyObject *made = NULL;
            if (Py_TYPE(parts) == (PyTypeObject *)chunk_map && PyTuple_GET_ITEM(old, 2) == Py_None) {
                if (!(chunks = mr_dense_chunks(parts))) {
                    Py_DECREF(old);
                    goto error;
                }
                if (chunks != Py_None)
                    made = tw_changed(self, payload, tid, chunks, PyTuple_GET_ITEM(old, 3), PyTuple_GET_ITEM(old, 4),
                                      old_values, dirs_ok, resolve);
                else
                    made = Py_NewRef(Py_None);
            } else {
                made = Py_NewRef(Py_None);
            }
            Py_DECREF(old); /* (`fresh` replaces it: the caller drops `kept`) */
            if (!made)
                goto error;
            if (made == Py_None) {
                Py_DECREF(made);
                break;
            }
            /* made: (values, twins, changed); the topic kept as _Written(name, parts, None, chunks, twins, values) */
            PyObject *values = PyTuple_GET_ITEM(made, 0);
            Py_ssize_t changed = PyLong_AsSsize_t(PyTuple_GET_ITEM(made, 2));
            PyObject *w = ((PyTypeObject *)written)->tp_alloc((PyTypeObject *)written, 6); /* (as tuple.__new__) */
            if (w) {
                PyObject *fields[6] = {name, parts, Py_None, chunks, PyTuple_GET_ITEM(made, 1), values};
                for (int k = 0; k < 6; k++)
                    PyTuple_SET_ITEM(w, k, Py_NewRef(fields[k]));
            }
            int bad = !w || PyDict_SetItem(fresh, tid, w) < 0 || tw_extend(out, values) < 0;
            Py_XDECREF(w);
            if (!bad) {
                encoded += changed;
                reused += PyList_GET_SIZE(values) - 1 - changed;
            }
            Py_DECREF(made);
            if (bad)
                goto error;
            Py_CLEAR(chunks);
        }
        Py_CLEAR(t);
        Py_CLEAR(name);
        Py_CLEAR(tid);
        Py_CLEAR(parts);
    }
    res = Py_BuildValue("(nnn)", i, encoded, reused);
error:
    Py_XDECREF(t);
    Py_XDECREF(name);
    Py_XDECREF(tid);
    Py_XDECREF(parts);
    Py_XDECREF(chunks);
    return res;
}

/* ------------------------------------------------------------------------ end of tw_ */

/* ------------------------------------------------------------------------ pcs_: a topic's chunks for its digest
 *
 * partition_chunks_canon(chunks, chunk_bits, cache) -> bytes | None
 *
 * digest.py's `_topic_hash` loop over a dense ChunkMap's chunks: the canonical bytes of each
 * chunk (partition_chunk_canon, chunk c's first partition id c << chunk_bits) joined. With a
 * dict `cache` (DigestCache's chunks: id(chunk) -> (chunk, first, bytes)) a chunk found there as
 * that very object at that position is taken from it, and a chunk written is put there, as
 * DigestCache._chunk_bytes does. None (the Python loop runs) for anything partition_chunk_canon
 * declines; the entries put in `cache` before a decline are the ones the Python loop puts. */
static PyObject *py_partition_chunks_canon(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "partition_chunks_canon(chunks, chunk_bits, cache)");
        return NULL;
    }
    PyObject *chunks = args[0], *cache = args[2];
    if (!PyTuple_CheckExact(chunks) || !PyLong_CheckExact(args[1]) || (cache != Py_None && !PyDict_CheckExact(cache)))
        Py_RETURN_NONE;
    long bits = PyLong_AsLong(args[1]);
    if (bits < 0 || bits > 16) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(chunks);
    if (n > (PY_SSIZE_T_MAX >> 17))
        Py_RETURN_NONE;
    PyObject *parts = PyList_New(n);
    if (!parts)
        return NULL;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *chunk = PyTuple_GET_ITEM(chunks, i);
        PyObject *first = PyLong_FromSsize_t(i << bits);
        PyObject *key = NULL, *body = NULL;
        if (!first)
            goto error;
        if (cache != Py_None) {
            key = PyLong_FromVoidPtr(chunk);  /* (what id(chunk) gives) */
            if (!key) {
                Py_DECREF(first);
                goto error;
            }
            PyObject *known = PyDict_GetItemWithError(cache, key);  /* (borrowed) */
            if (!known && PyErr_Occurred()) {
                Py_DECREF(first);
                Py_DECREF(key);
                goto error;
            }
            if (known && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 3 &&
                PyTuple_GET_ITEM(known, 0) == chunk && PyBytes_CheckExact(PyTuple_GET_ITEM(known, 2))) {
                int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(known, 1), first, Py_EQ);
                if (same < 0) {
                    Py_DECREF(first);
                    Py_DECREF(key);
                    goto error;
                }
                if (same) {
                    body = PyTuple_GET_ITEM(known, 2);
                    Py_INCREF(body);
                }
            }
        }
        if (!body) {
            PyObject *call[2] = {chunk, first};
            body = py_partition_chunk_canon(self, call, 2);
            if (body == Py_None) {
                Py_DECREF(body);
                Py_DECREF(first);
                Py_XDECREF(key);
                Py_DECREF(parts);
                Py_RETURN_NONE;
            }
            if (!body || !PyBytes_CheckExact(body)) {
                Py_XDECREF(body);
                Py_DECREF(first);
                Py_XDECREF(key);
                goto error;
            }
            if (key) {
                PyObject *entry = PyTuple_Pack(3, chunk, first, body);
                if (!entry || PyDict_SetItem(cache, key, entry) < 0) {
                    Py_XDECREF(entry);
                    Py_DECREF(body);
                    Py_DECREF(first);
                    Py_DECREF(key);
                    goto error;
                }
                Py_DECREF(entry);
            }
        }
        Py_DECREF(first);
        Py_XDECREF(key);
        total += PyBytes_GET_SIZE(body);
        PyList_SET_ITEM(parts, i, body);
    }
    PyObject *res = PyBytes_FromStringAndSize(NULL, total);
    if (!res)
        goto error;
    char *o = PyBytes_AS_STRING(res);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *body = PyList_GET_ITEM(parts, i);
        memcpy(o, PyBytes_AS_STRING(body), (size_t)PyBytes_GET_SIZE(body));
        o += PyBytes_GET_SIZE(body);
    }
    Py_DECREF(parts);
    return res;
error:
    Py_DECREF(parts);  /* (unfilled items are NULL: list dealloc skips them) */
    return NULL;
}

/* ------------------------------------------------------------------------ end of pcs_ */

/* ------------------------------------------------------------------------ pm_: pmap update */

/* pm_update(root, changes, delete, empty, split, hash_fn) -> (root, size delta) | None
 *
 * image/pmap.py _update(root, 0, changes, hash_fn) for a trie of exact dicts (leaves) and
 * exact 32-tuples (interior nodes), `changes` a list of (hash, key, value | `delete`) with
 * hashes of 64 bits: the same nodes, built the same way (a node without changes is
 * returned itself, so unchanged subtrees stay shared; an emptied leaf is `empty`; a leaf
 * grown past PM_LEAF_MAX becomes `split(leaf, shift, hash_fn)`; a shrunk interior node whose
 * children are small leaves is merged into one leaf). None for anything else (the Python
 * code then runs). */
#define PM_BITS 5
#define PM_WIDTH 32
#define PM_LEAF_MAX 32
#define PM_MAX_SHIFT 60

typedef struct {
    uint64_t *hash;
    PyObject **key, **value;
    PyObject *delete, *empty, *split, *hash_fn;
    Py_ssize_t *scratch; /* routing space, one per change per level */
} PmCtx;

/* The node for the changes at positions `at[0..n)` below `node` (a new reference), adding
 * the size change to *delta; Py_None (a new reference) to decline; NULL on error. */
static PyObject *pm_node(PmCtx *ctx, PyObject *node, int shift, Py_ssize_t *at, Py_ssize_t n, Py_ssize_t *delta) {
    if (PyDict_CheckExact(node)) {
        PyObject *fresh = NULL;
        Py_ssize_t d = 0;
        for (Py_ssize_t q = 0; q < n; q++) {
            PyObject *k = ctx->key[at[q]], *v = ctx->value[at[q]];
            PyObject *cur = PyDict_GetItemWithError(fresh ? fresh : node, k);
            if (!cur && PyErr_Occurred())
                goto leaf_error;
            if (v == ctx->delete) {
                if (!cur)
                    continue;
                if (!fresh && !(fresh = PyDict_Copy(node)))
                    return NULL;
                if (PyDict_DelItem(fresh, k) < 0)
                    goto leaf_error;
                d--;
            } else {
                if (cur == v)
                    continue;
                if (!fresh && !(fresh = PyDict_Copy(node)))
                    return NULL;
                if (!cur)
                    d++;
                if (PyDict_SetItem(fresh, k, v) < 0)
                    goto leaf_error;
            }
        }
        if (!fresh)
            return Py_NewRef(node);
        *delta += d;
        if (PyDict_GET_SIZE(fresh) == 0) {
            Py_DECREF(fresh);
            return Py_NewRef(ctx->empty);
        }
        if (PyDict_GET_SIZE(fresh) > PM_LEAF_MAX && shift <= PM_MAX_SHIFT) {
            PyObject *sh = PyLong_FromLong(shift);
            if (!sh)
                goto leaf_error;
            PyObject *sargs[3] = {fresh, sh, ctx->hash_fn};
            PyObject *split = PyObject_Vectorcall(ctx->split, sargs, 3, NULL);
            Py_DECREF(sh);
            Py_DECREF(fresh);
            return split;
        }
        return fresh;
    leaf_error:
        Py_XDECREF(fresh);
        return NULL;
    }
    if (!PyTuple_CheckExact(node) || PyTuple_GET_SIZE(node) != PM_WIDTH || shift > 63)
        return Py_NewRef(Py_None);
    /* route: a counting sort of the positions by slot, keeping their order within a slot */
    Py_ssize_t count[PM_WIDTH] = {0}, start[PM_WIDTH + 1];
    for (Py_ssize_t q = 0; q < n; q++)
        count[(ctx->hash[at[q]] >> shift) & (PM_WIDTH - 1)]++;
    start[0] = 0;
    for (int i = 0; i < PM_WIDTH; i++)
        start[i + 1] = start[i] + count[i];
    Py_ssize_t *routed = ctx->scratch, fill[PM_WIDTH];
    ctx->scratch += n;
    memcpy(fill, start, sizeof fill);
    for (Py_ssize_t q = 0; q < n; q++)
        routed[fill[(ctx->hash[at[q]] >> shift) & (PM_WIDTH - 1)]++] = at[q];
    PyObject *children[PM_WIDTH];
    int rebuilt = 0;
    Py_ssize_t d = 0;
    PyObject *res = NULL;
    for (int i = 0; i < PM_WIDTH; i++)
        children[i] = PyTuple_GET_ITEM(node, i);
    for (int i = 0; i < PM_WIDTH; i++) {
        if (!count[i])
            continue;
        PyObject *child = pm_node(ctx, children[i], shift + PM_BITS, routed + start[i], count[i], &d);
        if (!child || child == Py_None) {
            res = child;
            goto interior_done;
        }
        if (child == children[i]) {
            Py_DECREF(child);
            continue;
        }
        if (!rebuilt) {
            for (int j = 0; j < PM_WIDTH; j++)
                Py_INCREF(children[j]);
            rebuilt = 1;
        }
        Py_SETREF(children[i], child);
    }
    if (!rebuilt) {
        res = Py_NewRef(node);
        goto interior_done;
    }
    *delta += d;
    if (d < 0) { /* collapse sparse interior nodes back into one leaf */
        Py_ssize_t total = 0;
        int leaves = 1;
        for (int i = 0; i < PM_WIDTH && leaves; i++) {
            if (!PyDict_CheckExact(children[i]))
                leaves = 0;
            else
                total += PyDict_GET_SIZE(children[i]);
        }
        if (leaves && total <= PM_LEAF_MAX / 2) {
            PyObject *merged = PyDict_New();
            if (!merged)
                goto interior_done;
            for (int i = 0; i < PM_WIDTH; i++)
                if (PyDict_Update(merged, children[i]) < 0) {
                    Py_DECREF(merged);
                    goto interior_done;
                }
            if (PyDict_GET_SIZE(merged) == 0) {
                Py_DECREF(merged);
                merged = Py_NewRef(ctx->empty);
            }
            res = merged;
            goto interior_done;
        }
    }
    res = PyTuple_New(PM_WIDTH);
    if (res) {
        for (int i = 0; i < PM_WIDTH; i++) {
            PyTuple_SET_ITEM(res, i, children[i]);
            children[i] = NULL;
        }
        rebuilt = 0;
    }
interior_done:
    if (rebuilt)
        for (int i = 0; i < PM_WIDTH; i++)
            Py_XDECREF(children[i]);
    ctx->scratch -= n;
    return res;
}

/* A PmCtx's arrays for n changes, and the positions with routing space after them (one per
 * change for each of at most 13 levels of 5 bits): 0, or -1 with MemoryError; pm_free frees
 * whatever was made, either way. */
static int pm_alloc(PmCtx *ctx, Py_ssize_t n, Py_ssize_t **space) {
    ctx->hash = PyMem_Malloc(((size_t)n + 1) * sizeof(uint64_t));
    ctx->key = PyMem_Malloc(((size_t)n + 1) * sizeof(PyObject *));
    ctx->value = PyMem_Malloc(((size_t)n + 1) * sizeof(PyObject *));
    *space = PyMem_Malloc(((size_t)n * 14 + 1) * sizeof(Py_ssize_t));
    if (!ctx->hash || !ctx->key || !ctx->value || !*space) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void pm_free(PmCtx *ctx, Py_ssize_t *space) {
    PyMem_Free(ctx->hash);
    PyMem_Free(ctx->key);
    PyMem_Free(ctx->value);
    PyMem_Free(space);
}

static PyObject *py_pm_update(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "pm_update expects 6 arguments");
        return NULL;
    }
    PyObject *root = args[0], *changes = args[1];
    if (!PyList_CheckExact(changes) || !PyDict_CheckExact(args[3]) || !PyCallable_Check(args[4]))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(changes);
    PmCtx ctx = {.delete = args[2], .empty = args[3], .split = args[4], .hash_fn = args[5]};
    Py_ssize_t *space = NULL;
    PyObject *res = NULL;
    if (pm_alloc(&ctx, n, &space) < 0)
        goto done;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *t = PyList_GET_ITEM(changes, q);
        if (!PyTuple_CheckExact(t) || PyTuple_GET_SIZE(t) != 3 || !PyLong_CheckExact(PyTuple_GET_ITEM(t, 0)))
            goto decline;
        unsigned long long h = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(t, 0));
        if (h == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear(); /* (negative or past 64 bits: not a stable hash) */
            goto decline;
        }
        ctx.hash[q] = (uint64_t)h;
        ctx.key[q] = PyTuple_GET_ITEM(t, 1);
        ctx.value[q] = PyTuple_GET_ITEM(t, 2);
        space[q] = q;
    }
    ctx.scratch = space + n;
    Py_ssize_t delta = 0;
    PyObject *node = pm_node(&ctx, root, 0, space, n, &delta);
    if (!node || node == Py_None) {
        res = node;
        goto done;
    }
    res = Py_BuildValue("(Nn)", node, delta);
    goto done;
decline:
    res = Py_NewRef(Py_None);
done:
    pm_free(&ctx, space);
    return res;
}

/* pm_build(changes, delete, empty, hash_fn) -> (root, size) | None
 *
 * image/pmap.py PMap.update on the empty map: `_build` of (hash_fn(k), k, v) for each (k, v) of
 * the dict `changes` whose value is not `delete`, in its order: the same nodes (a node of at
 * most PM_LEAF_MAX keys, or past PM_MAX_SHIFT, is a leaf dict in the keys' order; else a
 * 32-tuple of its slots' nodes, `empty` for an empty slot). Why: a snapshot load builds its
 * topic maps this way (100,000 topics at a million partitions), and the Python recursion
 * was a tenth of the load. None when a hash is not an int of 64 bits (the Python code then
 * runs); NULL with the error hash_fn raised. */
static PyObject *pm_build_node(PmCtx *ctx, int shift, Py_ssize_t *at, Py_ssize_t n) {
    if (n == 0)
        return Py_NewRef(ctx->empty);
    if (n <= PM_LEAF_MAX || shift > PM_MAX_SHIFT) {
        PyObject *leaf = PyDict_New();
        if (!leaf)
            return NULL;
        for (Py_ssize_t q = 0; q < n; q++)
            if (PyDict_SetItem(leaf, ctx->key[at[q]], ctx->value[at[q]]) < 0) {
                Py_DECREF(leaf);
                return NULL;
            }
        return leaf;
    }
    /* route: a counting sort of the positions by slot, keeping their order within a slot */
    Py_ssize_t count[PM_WIDTH] = {0}, start[PM_WIDTH + 1], fill[PM_WIDTH];
    for (Py_ssize_t q = 0; q < n; q++)
        count[(ctx->hash[at[q]] >> shift) & (PM_WIDTH - 1)]++;
    start[0] = 0;
    for (int i = 0; i < PM_WIDTH; i++)
        start[i + 1] = start[i] + count[i];
    Py_ssize_t *routed = ctx->scratch;
    ctx->scratch += n;
    memcpy(fill, start, sizeof fill);
    for (Py_ssize_t q = 0; q < n; q++)
        routed[fill[(ctx->hash[at[q]] >> shift) & (PM_WIDTH - 1)]++] = at[q];
    PyObject *node = PyTuple_New(PM_WIDTH);
    for (int i = 0; node && i < PM_WIDTH; i++) {
        PyObject *child = pm_build_node(ctx, shift + PM_BITS, routed + start[i], count[i]);
        if (!child)
            Py_CLEAR(node);
        else
            PyTuple_SET_ITEM(node, i, child);
    }
    ctx->scratch -= n;
    return node;
}

static PyObject *py_pm_build(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "pm_build(changes, delete, empty, hash_fn)");
        return NULL;
    }
    PyObject *changes = args[0];
    if (!PyDict_CheckExact(changes) || !PyDict_CheckExact(args[2]) || !PyCallable_Check(args[3]))
        Py_RETURN_NONE;
    Py_ssize_t n = PyDict_GET_SIZE(changes), m = 0;
    PmCtx ctx = {.delete = args[1], .empty = args[2], .hash_fn = args[3]};
    Py_ssize_t *space = NULL;
    PyObject *res = NULL, *keep = NULL, *k, *v;
    if (pm_alloc(&ctx, n, &space) < 0 || !(keep = PyList_New(0)))
        goto done;
    Py_ssize_t it = 0;
    while (PyDict_Next(changes, &it, &k, &v)) {
        if (v == ctx.delete)
            continue;
        /* (the key and value kept alive first: hash_fn is Python code, and may change the dict) */
        if (PyList_Append(keep, k) < 0 || PyList_Append(keep, v) < 0)
            goto done;
        PyObject *h = PyObject_CallOneArg(ctx.hash_fn, k);
        if (!h)
            goto done;
        int exact = PyLong_CheckExact(h);
        unsigned long long hv = exact ? PyLong_AsUnsignedLongLong(h) : 0;
        Py_DECREF(h);
        if (!exact || (hv == (unsigned long long)-1 && PyErr_Occurred())) {
            PyErr_Clear(); /* (negative, past 64 bits or not an int: the Python code decides) */
            res = Py_NewRef(Py_None);
            goto done;
        }
        ctx.hash[m] = (uint64_t)hv;
        ctx.key[m] = k;
        ctx.value[m] = v;
        space[m] = m;
        m++;
        if (PyDict_GET_SIZE(changes) != n) { /* (hash_fn changed the dict: the Python code decides) */
            res = Py_NewRef(Py_None);
            goto done;
        }
    }
    ctx.scratch = space + m;
    PyObject *root = pm_build_node(&ctx, 0, space, m);
    if (root)
        res = Py_BuildValue("(Nn)", root, m);
done:
    Py_XDECREF(keep);
    pm_free(&ctx, space);
    return res;
}

/* ------------------------------------------------------------------------ end of pm_ */

static PyMethodDef module_methods[] = {
    {"crc32c", py_crc32c, METH_VARARGS, "crc32c(data) -> int: CRC-32C (Castagnoli) of a bytes-like object."},
    {"crc32c_software", py_crc32c_software, METH_VARARGS, "crc32c with the table implementation (for tests)."},
#ifdef KS_PWRITE_EACH
    {"pwrite_each", py_pwrite_each, METH_VARARGS,
     "pwrite_each(items, piece) -> (items written, errno, bytes of the next written): (fd, bytes, position) items "
     "written in order, in calls of at most piece bytes, without the GIL."},
#endif
    {"parse_records", py_parse_records, METH_VARARGS,
     "parse_records(body, count) -> list[Record] | None (None: use batch.parse_records)."},
    {"decode_framed", (PyCFunction)(void (*)(void))py_decode_framed, METH_FASTCALL,
     "decode_framed(value, table) -> MetadataRecord | None (None: use framing.decode_metadata_record)."},
    {"decode_records", py_decode_records, METH_VARARGS,
     "decode_records(buf, start, end, count, base_offset, epoch, base_timestamp, table[, build]) -> "
     "list[LogEntry | PrebuiltPartition] | None (PrebuiltPartitions only for records of the type `build`)."},
    {"decode_log", py_decode_log, METH_VARARGS,
     "decode_log(data, pos, table, out, min_records=-1) -> int: decode data batches from pos into out; returns where it stopped."},
    {"encode_values", py_encode_values, METH_VARARGS,
     "encode_values(payloads, resolve) -> list[bytes] | None: framed metadata record values."},
    {"encode_data_batch", py_encode_data_batch, METH_VARARGS,
     "encode_data_batch(base_offset, payloads, epoch, timestamp, resolve) -> bytes | None."},
    {"changed_positions", py_changed_positions, METH_VARARGS,
     "changed_positions(new, old, twins) -> (list[int], list) | None: where new holds items neither the same as "
     "old's (or their twins') nor equal, and the twins for new."},
    {"partition_values", py_partition_values, METH_VARARGS,
     "partition_values(payload, topic_id, pids, registrations, positions, directories, resolve) -> list[bytes] | None: "
     "the snapshot topic writer's PartitionRecord values, or None."},
    {"untracked_tuple", py_untracked_tuple, METH_O,
     "untracked_tuple(list) -> tuple: tuple(list), untracked by the cycle collector when no item can be tracked."},
    {"chunks_updated", py_chunks_updated, METH_VARARGS,
     "chunks_updated(positions, chunks, changes, chunk_bits) -> tuple | None: ChunkMap.updated's new chunks."},
    {"dense_chunk_map", py_dense_chunk_map, METH_VARARGS,
     "dense_chunk_map(items, chunk_bits) -> ChunkMap | None: ChunkMap.of(items) for a dict keyed 0..n-1 in order."},
    {"configure_partitions", py_configure_partitions, METH_VARARGS,
     "configure_partitions(cls, int_tuples, uuid_tuples, migrating_by_count) -> bool: the registration class built."},
    {"partition_from_record", py_partition_from_record, METH_O,
     "partition_from_record(record) -> registration | None: a PartitionRecord's usual shape, or None."},
    {"partition_merge", (PyCFunction)(void (*)(void))py_partition_merge, METH_FASTCALL,
     "partition_merge(registration, change) -> registration | None: merge()'s usual case, or None."},
    {"br_replay_run", (PyCFunction)(void (*)(void))py_br_replay_run, METH_FASTCALL,
     "br_replay_run(record, it, state, change_type, partition_type, to_change, to_partition, end, chunk_bits, "
     "topic_type, to_topic[, changed]) -> record: bulk replay's run of topic, partition and partition change records "
     "(and PrebuiltPartitions); the record it stopped at."},
    {"partition_chunk_canon", (PyCFunction)(void (*)(void))py_partition_chunk_canon, METH_FASTCALL,
     "partition_chunk_canon(chunk, first) -> bytes | None: digest.py's canonical bytes of a chunk of registrations."},
    {"values_records_size", py_values_records_size, METH_VARARGS,
     "values_records_size(values, first_delta) -> int | None: bytes of the records of framed values in a batch."},
    {"encode_value_batch", py_encode_value_batch, METH_VARARGS,
     "encode_value_batch(base_offset, values, epoch, timestamp) -> bytes | None: a data batch of framed values."},
    {"encode_batches", py_encode_batches, METH_VARARGS,
     "encode_batches([(base_offset, epoch, timestamp, control, payloads), ...], resolve) -> (list[bytes | None], list[int])."},
    {"configure", (PyCFunction)(void (*)(void))py_configure, METH_VARARGS | METH_KEYWORDS,
     "configure(uuid=, record=, log_entry=, payload=, metadata_record=, *, untrack=, populate=, arena_cache=, "
     "prebuilt_partition=): the Python classes to build, and the memory options."},
    {"set_enabled", py_set_enabled, METH_O,
     "set_enabled(flag) -> previous flag; when off, FastDecoder/FastEncoder call their pure functions."},
    {"info", py_info, METH_NOARGS, "build and runtime facts (CRC implementation, construction paths)."},
    {"leader_isr_records", (PyCFunction)(void (*)(void))py_leader_isr_records, METH_FASTCALL,
     "leader_isr_records(out, fixed, topic_id, made, chunks, parts, mask, start) -> int | None: the common "
     "partitions of a topic in a broker event as records (see controller/replication.py)."},
    {"ri_follow", (PyCFunction)(void (*)(void))py_ri_follow, METH_FASTCALL,
     "ri_follow(fixed, state, known, new_by_id, changed, deleted) -> list | None: the replica "
     "index follows a delta's changed topics (see controller/replica_index.py); the ids left to Python."},
    {"ri_records", (PyCFunction)(void (*)(void))py_ri_records, METH_FASTCALL,
     "ri_records(out, fixed, order, masks, known, chunk_map, dense, enter, plain, at, start) -> tuple | None: "
     "leader_and_isr_updates' "
     "common partitions over a whole index answer (see controller/replica_index.py)."},
    {"uuid_hash", py_uuid_hash, METH_O,
     "uuid_hash(value) -> int: hash(int.from_bytes(value, 'big')), pmap.hash_uuid (direct for 16 bytes)."},
    {"str_hash", py_str_hash, METH_O,
     "str_hash(value) -> int: pmap.hash_str, CRC-32 of the UTF-8 bytes spread to 64 bits (direct for ASCII)."},
    {"ri_add_topics", (PyCFunction)(void (*)(void))py_ri_add_topics, METH_FASTCALL,
     "ri_add_topics(fixed, state, items, at) -> int | None: the replica index built from "
     "(topic id, topic) pairs (see controller/replica_index.py); where it left the rest to Python."},
    {"partition_chunks_canon", (PyCFunction)(void (*)(void))py_partition_chunks_canon, METH_FASTCALL,
     "partition_chunks_canon(chunks, chunk_bits, cache) -> bytes | None: digest.py's canonical bytes of a dense "
     "topic's chunks joined, through DigestCache's chunk cache (a dict) or None."},
    {"tw_write_topics", (PyCFunction)(void (*)(void))py_tw_write_topics, METH_FASTCALL,
     "tw_write_topics(topics, start, kept, fresh, out, written, chunk_map, payload, directories, resolve) -> "
     "(stop, encoded, reused): the snapshot topic writer's loop over its usual topics, up to the first other one."},
    {"pm_build", (PyCFunction)(void (*)(void))py_pm_build, METH_FASTCALL,
     "pm_build(changes, delete, empty, hash_fn) -> (root, size) | None: PMap.update on the empty map."},
    {"pm_update", (PyCFunction)(void (*)(void))py_pm_update, METH_FASTCALL,
     "pm_update(root, changes, delete, empty, split, hash_fn) -> (root, size delta) | None: pmap._update over a whole "
     "trie of dicts and 32-tuples (see image/pmap.py)."},
    {"map_readers", (PyCFunction)(void (*)(void))py_map_readers, METH_FASTCALL,
     "map_readers(pmap_cls, chunk_map_cls) -> bool: the classes whose PMap.get and ChunkMap.dense_chunks the C "
     "loops read without a call (see image/pmap.py)."},
    {"pmap_get", (PyCFunction)(void (*)(void))py_pmap_get, METH_FASTCALL,
     "pmap_get(pm, key, default) -> value | NotImplemented: PMap.get's walk in C (NotImplemented: run its Python body)."},
    {"dense_chunks_of", py_dense_chunks_of, METH_O,
     "dense_chunks_of(parts) -> chunks | None: parts.dense_chunks(), read from a ChunkMap's slots where it can."},
    {"map_getitem", (PyCFunction)(void (*)(void))py_map_getitem, METH_FASTCALL,
     "map_getitem(mapping, key) -> value: mapping[key], a PMap's looked up in C where it can."},
    {NULL}};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_speedups",
    "C fast path of kraftsim.protocol (see fastpath.py). Same results as the pure-Python code or none.", -1,
    module_methods};

PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    sh_crc_init();
    if (small_ints_init() < 0)
        return NULL;
    if (PyType_Ready(&ProgramType) < 0 || PyType_Ready(&FastDecoderType) < 0 || PyType_Ready(&FastEncoderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (!m)
        return NULL;
    Fallback = PyErr_NewExceptionWithDoc("kraftsim.protocol._speedups.Fallback",
                                         "The C fast path gives this input to the pure-Python code.", NULL, NULL);
    str_record_type = PyUnicode_InternFromString("record_type");
    str_version = PyUnicode_InternFromString("version");
    str_message = PyUnicode_InternFromString("message");
    str_fast_attr = PyUnicode_InternFromString("_kraftsim_fastpath");
    if (!Fallback || !str_record_type || !str_version || !str_message || !str_fast_attr)
        goto error;
    Py_INCREF(Fallback);
    if (PyModule_AddObject(m, "Fallback", Fallback) < 0)
        goto error;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0)
        goto error;
    Py_INCREF(&FastDecoderType);
    if (PyModule_AddObject(m, "FastDecoder", (PyObject *)&FastDecoderType) < 0)
        goto error;
    Py_INCREF(&FastEncoderType);
    if (PyModule_AddObject(m, "FastEncoder", (PyObject *)&FastEncoderType) < 0)
        goto error;
    if (PyModule_AddIntConstant(m, "T_BOOL", K_BOOL) < 0 || PyModule_AddIntConstant(m, "T_INT8", K_INT8) < 0 ||
        PyModule_AddIntConstant(m, "T_INT16", K_INT16) < 0 || PyModule_AddIntConstant(m, "T_INT32", K_INT32) < 0 ||
        PyModule_AddIntConstant(m, "T_INT64", K_INT64) < 0 || PyModule_AddIntConstant(m, "T_UINT16", K_UINT16) < 0 ||
        PyModule_AddIntConstant(m, "T_UINT32", K_UINT32) < 0 ||
        PyModule_AddIntConstant(m, "T_FLOAT64", K_FLOAT64) < 0 || PyModule_AddIntConstant(m, "T_UUID", K_UUID) < 0 ||
        PyModule_AddIntConstant(m, "T_STRING", K_STRING) < 0 || PyModule_AddIntConstant(m, "T_BYTES", K_BYTES) < 0 ||
        PyModule_AddIntConstant(m, "T_STRUCT", K_STRUCT) < 0 || PyModule_AddIntConstant(m, "ABI", 1) < 0)
        goto error;
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
