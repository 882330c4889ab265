/*
 * troupe_plugin.h: troupe's Wasm plugin ABI, version 1, for C (C99 or later).
 *
 * sdk/ABI.md is the specification; this header gives its constants, the
 * prototypes of the exports a plugin defines, little-endian reader and
 * writer helpers for the flat encodings, and (in exactly one .c file that
 * defines TROUPE_PLUGIN_IMPLEMENTATION before including it) the ABI marker,
 * the guest-owned buffer and its two exports.
 *
 * Build a plugin with Debian's clang, lld and wasi-libc (-I names the
 * directory holding this header; from the repository root, sdk):
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 \
 *         -I sdk -o plugin.wasm plugin.c
 *
 * The ABI needs wasm32 (32-bit linear memory); a wasm64 build is refused
 * below. The same source also builds natively (any pointer size), for
 * testing a plugin's logic with an ordinary C harness that calls the export
 * functions directly: TROUPE_EXPORT then expands to nothing and the helpers
 * keep the buffer as a real pointer (the 32-bit descriptor that
 * troupe_buffer returns is for the Wasm host only).
 *
 * The reader reads the call's input from the buffer and the writer writes
 * the reply over it, growing it if needed (which may move it): read all the
 * input you need, or copy it, before you start writing. Every reader and
 * writer call checks bounds.
 */
#ifndef TROUPE_PLUGIN_H
#define TROUPE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TROUPE_ABI_VERSION 1

#if defined(__wasm64__) || (defined(__wasm__) && UINTPTR_MAX != 0xffffffffu)
#error "troupe ABI v1 needs wasm32 (32-bit linear memory): build with --target=wasm32-wasi"
#endif

/* Marks a function as a Wasm export of the given name (nothing in a native
 * build). */
#if defined(__wasm__)
#define TROUPE_EXPORT(name) __attribute__((export_name(name)))
#else
#define TROUPE_EXPORT(name)
#endif

/* Error codes: a call returns one of these instead of a reply length, after
 * writing a message (u32 length + UTF-8) to the buffer; troupe_error does
 * both. */
enum {
    TROUPE_ERR_FAILED = -1,      /* the env/reward failed; instance kept      */
    TROUPE_ERR_BAD_INPUT = -2,   /* the input could not be decoded            */
    TROUPE_ERR_BAD_STATE = -3,   /* out of order (step before reset, …)       */
    TROUPE_ERR_NO_MEMORY = -4,   /* buffer could not grow; instance discarded */
    TROUPE_ERR_UNSUPPORTED = -5, /* the module does not implement this call   */
    TROUPE_ERR_PANIC = -6        /* fatal internal error; instance discarded  */
};

/* First argument of troupe_open: what to create. */
enum {
    TROUPE_OPEN_DESCRIBE = 0, /* everything served, no params (inspect) */
    TROUPE_OPEN_ENV = 1,
    TROUPE_OPEN_REWARD = 2
};

/* Flag bits. */
#define TROUPE_OBS_HAS_MASK 1u        /* observation record              */
#define TROUPE_STEP_TERMINATED 1u     /* step result                     */
#define TROUPE_STEP_TRUNCATED 2u
#define TROUPE_STEP_HAS_REWARDS 4u
#define TROUPE_EP_TERMINATED 1u       /* episode (score input)           */
#define TROUPE_EP_TRUNCATED 2u
#define TROUPE_EP_BUDGET_STOPPED 4u

/* ---- exports the plugin defines (an env module: open, reset, step, state,
 * close; a reward module: open, score; the rest are optional and must match
 * the capabilities listed in the spec JSON) ---------------------------- */
TROUPE_EXPORT("troupe_open") int32_t troupe_open(int32_t kind, int32_t params_len);
/* seed carries the bit pattern of the host's uint64 seed (seeds >= 2^63
 * arrive negative): use (uint64_t)seed. */
TROUPE_EXPORT("troupe_reset") int32_t troupe_reset(int64_t seed);
TROUPE_EXPORT("troupe_step") int32_t troupe_step(int32_t len);
TROUPE_EXPORT("troupe_state") int32_t troupe_state(void);
TROUPE_EXPORT("troupe_close") int32_t troupe_close(void);
TROUPE_EXPORT("troupe_truncate") int32_t troupe_truncate(void);
TROUPE_EXPORT("troupe_prompt") int32_t troupe_prompt(int32_t agent, int32_t decision);
TROUPE_EXPORT("troupe_simulate") int32_t troupe_simulate(int32_t len);
TROUPE_EXPORT("troupe_baseline") int32_t troupe_baseline(int32_t len);
TROUPE_EXPORT("troupe_score") int32_t troupe_score(int32_t len);

/* ---- the buffer (defined by TROUPE_PLUGIN_IMPLEMENTATION) ------------- */

/* troupe_buf returns the buffer; troupe_buf_cap its capacity. */
uint8_t *troupe_buf(void);
uint32_t troupe_buf_cap(void);
/* troupe_buf_reserve makes the capacity at least n bytes, keeping the
 * first keep bytes; 0 on success, -1 if memory ran out. */
int troupe_buf_reserve(uint32_t n, uint32_t keep);
/* troupe_error writes msg as the error message and returns code. */
int32_t troupe_error(int32_t code, const char *msg);

/* ---- reader ----------------------------------------------------------- */

/* A reader over the call's input (the first len bytes of the buffer). Any
 * read past the end sets err and returns zero. */
typedef struct {
    const uint8_t *p;
    uint32_t len, off;
    int err;
} troupe_reader;

static inline troupe_reader troupe_input(int32_t len) {
    troupe_reader r = {troupe_buf(), 0, 0, 0};
    if (len < 0 || (uint32_t)len > troupe_buf_cap()) {
        r.err = 1;
    } else {
        r.len = (uint32_t)len;
    }
    return r;
}

static inline const uint8_t *troupe__take(troupe_reader *r, uint32_t n) {
    if (r->err || n > r->len - r->off) {
        r->err = 1;
        return NULL;
    }
    const uint8_t *q = r->p + r->off;
    r->off += n;
    return q;
}

static inline uint32_t troupe_get_u32(troupe_reader *r) {
    uint32_t v = 0;
    const uint8_t *q = troupe__take(r, 4);
    if (q) memcpy(&v, q, 4); /* wasm32 is little-endian */
    return v;
}
static inline int32_t troupe_get_i32(troupe_reader *r) { return (int32_t)troupe_get_u32(r); }
static inline uint64_t troupe_get_u64(troupe_reader *r) {
    uint64_t v = 0;
    const uint8_t *q = troupe__take(r, 8);
    if (q) memcpy(&v, q, 8);
    return v;
}
static inline int64_t troupe_get_i64(troupe_reader *r) { return (int64_t)troupe_get_u64(r); }
static inline double troupe_get_f64(troupe_reader *r) {
    double v = 0;
    const uint8_t *q = troupe__take(r, 8);
    if (q) memcpy(&v, q, 8);
    return v;
}
/* troupe_get_str returns a pointer to a length-prefixed string's bytes (not
 * NUL-terminated) and its length; the pointer aliases the buffer. */
static inline const char *troupe_get_str(troupe_reader *r, uint32_t *len) {
    uint32_t n = troupe_get_u32(r);
    const uint8_t *q = troupe__take(r, n);
    *len = q ? n : 0;
    return (const char *)q;
}
/* troupe_at_end reports whether every input byte was read without error. */
static inline int troupe_at_end(const troupe_reader *r) { return !r->err && r->off == r->len; }

/* One agent's part of the joint action (step input). text and backend
 * alias the buffer. */
typedef struct {
    int32_t decision;
    int64_t prompt_tokens, completion_tokens, latency_ns;
    const char *backend;
    uint32_t backend_len;
    const char *text;
    uint32_t text_len;
} troupe_action;

/* troupe_get_action reads one agent's action record. */
static inline void troupe_get_action(troupe_reader *r, troupe_action *a) {
    a->decision = troupe_get_i32(r);
    a->prompt_tokens = troupe_get_i64(r);
    a->completion_tokens = troupe_get_i64(r);
    a->latency_ns = troupe_get_i64(r);
    a->backend = troupe_get_str(r, &a->backend_len);
    a->text = troupe_get_str(r, &a->text_len);
}

/* troupe_get_mask reads a mask of n decisions (ceil(n/8) bytes, bit d%8 of
 * byte d/8) into legal[0..n-1] as 0 or 1. */
static inline void troupe_get_mask(troupe_reader *r, uint8_t *legal, uint32_t n) {
    for (uint32_t k = 0; k < n; k += 8) {
        uint32_t b = 0;
        const uint8_t *q = troupe__take(r, 1);
        if (q) b = *q;
        for (uint32_t j = 0; j < 8 && k + j < n; j++) legal[k + j] = (uint8_t)((b >> j) & 1u);
    }
}

/* troupe_get_obs_header reads the header of an observations block (the
 * input of troupe_baseline, after the policy's name) and reports whether
 * it is the expected one: agents, obs_size and decisions as in the spec. */
static inline int troupe_get_obs_header(troupe_reader *r, uint32_t agents, uint32_t obs_size,
                                        uint32_t decisions) {
    uint32_t a = troupe_get_u32(r), o = troupe_get_u32(r), d = troupe_get_u32(r);
    return !r->err && a == agents && o == obs_size && d == decisions;
}

/* troupe_get_observation reads one agent's observation record: its
 * obs_size features into features, its mask into legal (every decision
 * legal when the record has none), and its text (aliasing the buffer; may
 * be NULL to skip it). */
static inline void troupe_get_observation(troupe_reader *r, uint32_t obs_size, uint32_t decisions,
                                          double *features, uint8_t *legal, const char **text,
                                          uint32_t *text_len) {
    uint32_t flags = troupe_get_u32(r);
    for (uint32_t i = 0; i < obs_size; i++) features[i] = troupe_get_f64(r);
    if (flags & 1u) {
        troupe_get_mask(r, legal, decisions);
    } else {
        for (uint32_t d = 0; d < decisions; d++) legal[d] = 1;
    }
    uint32_t n;
    const char *s = troupe_get_str(r, &n);
    if (text) *text = s;
    if (text_len) *text_len = n;
    if (flags & ~1u) r->err = 1;
}

/* ---- params: troupe_open's JSON object ---------------------------------
 *
 * A reader for flat params objects of numbers and booleans, which behaves
 * as the Go kit's core.DecodeParams: length 0, "null" and "{}" mean no
 * params; keys match case-insensitively; an unknown key, a wrong type and
 * bytes that are not a JSON object are errors that name the key:
 *
 *   troupe_params p;
 *   int32_t rc = troupe_params_begin(&p, params_len);
 *   while (rc == 0 && (rc = troupe_params_next(&p)) == 1) {
 *       if (troupe_params_key_is(&p, "work")) rc = troupe_params_int(&p, &work);
 *       else rc = troupe_params_unknown(&p);
 *   }
 *   if (rc < 0) return rc;           (the error message is written)
 *
 * Read the params before writing the reply: the reply overwrites them. */
typedef struct {
    troupe_reader in;
    int started;
    char key[128]; /* the current key, NUL-terminated */
} troupe_params;

static inline void troupe__params_ws(troupe_params *p) {
    troupe_reader *r = &p->in;
    while (r->off < r->len && (r->p[r->off] == ' ' || r->p[r->off] == '\n' || r->p[r->off] == '\t' ||
                               r->p[r->off] == '\r'))
        r->off++;
}
static inline int troupe__params_eat(troupe_params *p, const char *w) {
    troupe__params_ws(p);
    uint32_t n = (uint32_t)strlen(w);
    if (p->in.len - p->in.off >= n && memcmp(p->in.p + p->in.off, w, n) == 0) {
        p->in.off += n;
        return 1;
    }
    return 0;
}
/* troupe__params_fail writes "params: " + a + b + c + d as the error. */
static inline int32_t troupe__params_fail(int32_t code, const char *a, const char *b, const char *c,
                                          const char *d) {
    static char msg[320];
    msg[0] = 0;
    const char *parts[5] = {"params: ", a, b, c, d};
    size_t n = 0;
    for (int i = 0; i < 5; i++) {
        size_t k = parts[i] ? strlen(parts[i]) : 0;
        if (n + k >= sizeof msg) k = sizeof msg - 1 - n;
        memcpy(msg + n, parts[i], k);
        n += k;
    }
    msg[n] = 0;
    return troupe_error(code, msg);
}

/* troupe_params_begin starts reading the params (the first len bytes of
 * the buffer); 0, or TROUPE_ERR_BAD_INPUT (message written) when they are
 * not a JSON object. */
static inline int32_t troupe_params_begin(troupe_params *p, int32_t len) {
    p->in = troupe_input(len);
    p->started = 0;
    p->key[0] = 0;
    if (p->in.err) return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "length beyond the buffer", 0, 0, 0);
    troupe__params_ws(p);
    if (p->in.off == p->in.len) return 0;
    if (troupe__params_eat(p, "null")) {
        troupe__params_ws(p);
        if (p->in.off != p->in.len) return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "malformed JSON", 0, 0, 0);
        return 0;
    }
    if (!troupe__params_eat(p, "{")) return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "want a JSON object", 0, 0, 0);
    p->started = 1;
    return 0;
}

/* troupe_params_next moves to the next key: 1 with p->key set (read its
 * value next), 0 after the last one, or TROUPE_ERR_BAD_INPUT (message
 * written) for malformed JSON, a key with escapes or one of 128 bytes or
 * more. */
static inline int32_t troupe_params_next(troupe_params *p) {
    if (!p->started) return 0;
    if (p->started == 1) {
        p->started = 2;
        if (troupe__params_eat(p, "}")) goto end;
    } else if (!troupe__params_eat(p, ",")) {
        if (!troupe__params_eat(p, "}")) return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "malformed JSON", 0, 0, 0);
        goto end;
    }
    if (!troupe__params_eat(p, "\"")) return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "malformed JSON", 0, 0, 0);
    {
        uint32_t k = 0;
        while (p->in.off < p->in.len && p->in.p[p->in.off] != '"') {
            if (p->in.p[p->in.off] == '\\' || k + 1 >= sizeof p->key)
                return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "a key with escapes or of 128 bytes or more", 0, 0, 0);
            p->key[k++] = (char)p->in.p[p->in.off++];
        }
        p->key[k] = 0;
    }
    if (!troupe__params_eat(p, "\"") || !troupe__params_eat(p, ":"))
        return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "malformed JSON", 0, 0, 0);
    return 1;
end:
    p->started = 0;
    troupe__params_ws(p);
    if (p->in.off != p->in.len) return troupe__params_fail(TROUPE_ERR_BAD_INPUT, "trailing bytes after the JSON object", 0, 0, 0);
    return 0;
}

/* troupe_params_key_is reports whether the current key is name, ignoring
 * ASCII case (as Go's encoding/json matches keys). */
static inline int troupe_params_key_is(const troupe_params *p, const char *name) {
    size_t i = 0;
    for (; p->key[i] && name[i]; i++) {
        char a = p->key[i], b = name[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
        if (a != b) return 0;
    }
    return p->key[i] == 0 && name[i] == 0;
}

/* troupe_params_unknown returns TROUPE_ERR_FAILED with the message
 * 'params: unknown key "KEY"'. */
static inline int32_t troupe_params_unknown(troupe_params *p) {
    return troupe__params_fail(TROUPE_ERR_FAILED, "unknown key \"", p->key, "\"", 0);
}

/* troupe__params_kind names the value at the cursor as Go's encoding/json
 * does in its errors. */
static inline const char *troupe__params_kind(troupe_params *p) {
    troupe__params_ws(p);
    if (p->in.off >= p->in.len) return "nothing";
    switch (p->in.p[p->in.off]) {
    case '"': return "string";
    case 't': case 'f': return "bool";
    case '[': return "array";
    case '{': return "object";
    case 'n': return "null";
    }
    return "number";
}
static inline int32_t troupe__params_want(troupe_params *p, const char *want) {
    static char tail[96];
    const char *got = troupe__params_kind(p);
    size_t n = strlen(want);
    if (n > 40) n = 40;
    memcpy(tail, want, n);
    memcpy(tail + n, ", got ", 6);
    size_t k = strlen(got);
    memcpy(tail + n + 6, got, k);
    tail[n + 6 + k] = 0;
    return troupe__params_fail(TROUPE_ERR_FAILED, "key \"", p->key, "\": want ", tail);
}

/* troupe_params_f64 reads the current key's value as a number into v
 * (null keeps v): 0, or TROUPE_ERR_FAILED naming the key when the value is
 * not a number. */
static inline int32_t troupe_params_f64(troupe_params *p, double *v) {
    if (troupe__params_eat(p, "null")) return 0;
    troupe__params_ws(p);
    char num[64];
    uint32_t k = 0;
    while (p->in.off + k < p->in.len && k + 1 < sizeof num && strchr("+-0123456789.eE", p->in.p[p->in.off + k]) &&
           p->in.p[p->in.off + k])
        num[k] = (char)p->in.p[p->in.off + k], k++;
    num[k] = 0;
    char *end = NULL;
    double x = k ? strtod(num, &end) : 0;
    if (k == 0 || end != num + k || num[0] == '+' || x != x) return troupe__params_want(p, "number");
    p->in.off += k;
    *v = x;
    return 0;
}

/* troupe_params_int reads the current key's value as an integer (a JSON
 * number without fraction or exponent that fits in int64) into v (null
 * keeps v): 0, or TROUPE_ERR_FAILED naming the key. */
static inline int32_t troupe_params_int(troupe_params *p, long long *v) {
    if (troupe__params_eat(p, "null")) return 0;
    troupe__params_ws(p);
    uint32_t i = p->in.off;
    int neg = 0;
    if (i < p->in.len && p->in.p[i] == '-') neg = 1, i++;
    uint32_t d0 = i;
    unsigned long long x = 0, limit = neg ? 9223372036854775808ull : 9223372036854775807ull;
    while (i < p->in.len && p->in.p[i] >= '0' && p->in.p[i] <= '9') {
        unsigned d = (unsigned)(p->in.p[i] - '0');
        if (x > (limit - d) / 10) return troupe__params_want(p, "an integer that fits in int64");
        x = x * 10 + d;
        i++;
    }
    if (i == d0 || (i < p->in.len && (p->in.p[i] == '.' || p->in.p[i] == 'e' || p->in.p[i] == 'E')))
        return troupe__params_want(p, "int");
    p->in.off = i;
    *v = neg ? (long long)(0 - x) : (long long)x;
    return 0;
}

/* troupe_params_bool reads the current key's value as true or false into
 * v as 1 or 0 (null keeps v): 0, or TROUPE_ERR_FAILED naming the key. */
static inline int32_t troupe_params_bool(troupe_params *p, int *v) {
    if (troupe__params_eat(p, "null")) return 0;
    if (troupe__params_eat(p, "true")) return *v = 1, 0;
    if (troupe__params_eat(p, "false")) return *v = 0, 0;
    return troupe__params_want(p, "bool");
}

/* ---- writer ----------------------------------------------------------- */

/* A writer that appends the reply to the buffer, growing it as needed. */
typedef struct {
    uint32_t len;
    int err;
} troupe_writer;

static inline troupe_writer troupe_output(void) {
    troupe_writer w = {0, 0};
    return w;
}

static inline uint8_t *troupe__room(troupe_writer *w, uint32_t n) {
    if (w->err) return NULL;
    if (n > troupe_buf_cap() - w->len) {
        uint32_t want = troupe_buf_cap() * 2;
        if (want < w->len + n) want = w->len + n;
        if (w->len + n < w->len || troupe_buf_reserve(want, w->len) != 0) {
            w->err = 1;
            return NULL;
        }
    }
    uint8_t *q = troupe_buf() + w->len;
    w->len += n;
    return q;
}

static inline void troupe_put_u32(troupe_writer *w, uint32_t v) {
    uint8_t *q = troupe__room(w, 4);
    if (q) memcpy(q, &v, 4);
}
static inline void troupe_put_i32(troupe_writer *w, int32_t v) { troupe_put_u32(w, (uint32_t)v); }
static inline void troupe_put_u64(troupe_writer *w, uint64_t v) {
    uint8_t *q = troupe__room(w, 8);
    if (q) memcpy(q, &v, 8);
}
static inline void troupe_put_f64(troupe_writer *w, double v) {
    uint8_t *q = troupe__room(w, 8);
    if (q) memcpy(q, &v, 8);
}
static inline void troupe_put_u8(troupe_writer *w, uint8_t v) {
    uint8_t *q = troupe__room(w, 1);
    if (q) *q = v;
}
/* troupe_put_raw writes n bytes without a length prefix. */
static inline void troupe_put_raw(troupe_writer *w, const void *p, uint32_t n) {
    uint8_t *q = troupe__room(w, n);
    if (q && n) memcpy(q, p, n);
}
/* troupe_put_str writes a u32 length and the bytes. */
static inline void troupe_put_str(troupe_writer *w, const char *s, uint32_t n) {
    troupe_put_u32(w, n);
    troupe_put_raw(w, s, n);
}
static inline void troupe_put_cstr(troupe_writer *w, const char *s) {
    troupe_put_str(w, s, (uint32_t)strlen(s));
}
/* troupe_put_obs_header starts an observations block. */
static inline void troupe_put_obs_header(troupe_writer *w, uint32_t agents, uint32_t obs_size,
                                         uint32_t decisions) {
    troupe_put_u32(w, agents);
    troupe_put_u32(w, obs_size);
    troupe_put_u32(w, decisions);
}
/* troupe_put_mask writes a mask as ceil(n/8) bytes, bit d of byte d/8. */
static inline void troupe_put_mask(troupe_writer *w, const uint8_t *legal, uint32_t n) {
    for (uint32_t k = 0; k < n; k += 8) {
        uint8_t b = 0;
        for (uint32_t j = 0; j < 8 && k + j < n; j++)
            if (legal[k + j]) b |= (uint8_t)(1u << j);
        troupe_put_u8(w, b);
    }
}
/* troupe_finish returns the reply length, or TROUPE_ERR_NO_MEMORY. */
static inline int32_t troupe_finish(troupe_writer *w) {
    if (w->err) return troupe_error(TROUPE_ERR_NO_MEMORY, "reply does not fit in memory");
    return (int32_t)w->len;
}

/* ---- implementation --------------------------------------------------- */
#ifdef TROUPE_PLUGIN_IMPLEMENTATION

#ifndef TROUPE_INITIAL_BUFFER
#define TROUPE_INITIAL_BUFFER 65536u
#endif

/* The buffer is kept as a pointer, troupe__ptr, for the helpers, and
 * mirrored in {ptr, cap}, the descriptor whose address troupe_buffer returns
 * and which the host reads. On wasm32 a pointer is the 32-bit address the
 * host reads; in a native build desc[0] is never used, so truncating a
 * 64-bit pointer there is harmless. */
static uint8_t *troupe__ptr;
static uint32_t troupe__desc[2];

#ifndef TROUPE_NO_ABI_MARKER /* only for testing hosts */
TROUPE_EXPORT("troupe_abi_v1") void troupe_abi_v1(void) {}
#endif

static void troupe__set(uint8_t *p, uint32_t cap) {
    troupe__ptr = p;
    troupe__desc[0] = (uint32_t)(uintptr_t)p;
    troupe__desc[1] = cap;
}

static int troupe__init(void) {
    if (troupe__ptr) return 0;
    uint8_t *p = (uint8_t *)malloc(TROUPE_INITIAL_BUFFER);
    if (!p) return -1;
    troupe__set(p, TROUPE_INITIAL_BUFFER);
    return 0;
}

uint8_t *troupe_buf(void) {
    troupe__init();
    return troupe__ptr;
}

uint32_t troupe_buf_cap(void) {
    troupe__init();
    return troupe__desc[1];
}

int troupe_buf_reserve(uint32_t n, uint32_t keep) {
    if (troupe__init() != 0) return -1;
    if (n <= troupe__desc[1]) return 0;
    uint8_t *p = (uint8_t *)realloc(troupe__ptr, n);
    if (!p) return -1;
    (void)keep; /* realloc keeps everything */
    troupe__set(p, n);
    return 0;
}

/* troupe_buffer returns the descriptor's address: a wasm32 address for the
 * host; 0 in a native build whose addresses do not fit in 32 bits. */
TROUPE_EXPORT("troupe_buffer") uint32_t troupe_buffer(void) {
    troupe__init();
#if UINTPTR_MAX == 0xffffffffu
    return (uint32_t)(uintptr_t)troupe__desc;
#else
    return 0;
#endif
}

TROUPE_EXPORT("troupe_buffer_grow") int32_t troupe_buffer_grow(int32_t min_cap) {
    if (min_cap < 0 || troupe_buf_reserve((uint32_t)min_cap, 0) != 0)
        return troupe_error(TROUPE_ERR_NO_MEMORY, "buffer cannot grow");
    return 0;
}

int32_t troupe_error(int32_t code, const char *msg) {
    uint32_t n = (uint32_t)strlen(msg);
    if (troupe__init() != 0) return code;
    if (n > troupe__desc[1] - 4) n = troupe__desc[1] - 4;
    uint8_t *b = troupe_buf();
    memcpy(b, &n, 4);
    memcpy(b + 4, msg, n);
    return code;
}

#endif /* TROUPE_PLUGIN_IMPLEMENTATION */

#ifdef __cplusplus
}
#endif

#endif /* TROUPE_PLUGIN_H */
