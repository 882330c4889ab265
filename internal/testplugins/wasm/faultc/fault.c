/*
 * fault.c: Wasm test plugins in C that break the ABI on purpose. One source,
 * built once per fault with -DFAULT_<NAME>:
 *
 *   FAULT_NONE      a well-behaved 1-agent env (the control)
 *   FAULT_TRAP      step executes `unreachable`
 *   FAULT_BIGLEN    step returns a reply length beyond the buffer
 *   FAULT_BADSPEC   open returns bytes that are not JSON
 *   FAULT_BADREPLY  step returns a reply whose observation count is wrong
 *   FAULT_GROW      step grows memory until memory.grow fails, then traps
 *   FAULT_LOOP      step loops forever; with params "loop" so does open
 *   FAULT_ABIV2     exports troupe_abi_v2 instead of troupe_abi_v1
 *   FAULT_NOABI     exports no ABI marker at all
 *   FAULT_IMPORT    imports a function from a module other than WASI
 */
#if defined(FAULT_ABIV2) || defined(FAULT_NOABI)
#define TROUPE_NO_ABI_MARKER /* the buffer without the v1 marker */
#endif
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "troupe_plugin.h"

#if defined(FAULT_ABIV2)
TROUPE_EXPORT("troupe_abi_v2") void troupe_abi_v2(void) {}
#endif

#if defined(FAULT_IMPORT)
__attribute__((import_module("env"), import_name("host_secret"))) int32_t host_secret(void);
#endif

static const char spec[] __attribute__((unused)) =
    "{\"abi\":1,\"env\":{\"name\":\"fault\",\"agents\":[\"a\"],\"obs_size\":1,"
    "\"decisions\":[{\"name\":\"go\"}],\"state_size\":0}}";

static volatile int forever __attribute__((unused)) = 1;

int32_t troupe_open(int32_t kind, int32_t len) {
    (void)kind;
#if defined(FAULT_LOOP)
    if (len >= 6 && memcmp(troupe_buf(), "\"loop\"", 6) == 0)
        while (forever) {
        }
#else
    (void)len;
#endif
    troupe_writer w = troupe_output();
#if defined(FAULT_BADSPEC)
    troupe_put_raw(&w, "{not json at all", 16);
#else
    troupe_put_raw(&w, spec, sizeof spec - 1);
#endif
    return troupe_finish(&w);
}

static int32_t observations(uint32_t agents) {
    troupe_writer w = troupe_output();
    troupe_put_obs_header(&w, agents, 1, 1);
    for (uint32_t i = 0; i < agents; i++) {
        troupe_put_u32(&w, 0);
        troupe_put_f64(&w, 0.5);
        troupe_put_str(&w, "", 0);
    }
    return troupe_finish(&w);
}

int32_t troupe_reset(int64_t seed) {
    (void)seed;
    return observations(1);
}

int32_t troupe_step(int32_t len) {
    (void)len;
#if defined(FAULT_TRAP)
    __builtin_trap();
#elif defined(FAULT_BIGLEN)
    return (int32_t)troupe_buf_cap() + 100;
#elif defined(FAULT_BADREPLY)
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, 0);
    troupe_put_obs_header(&w, 7, 1, 1);
    return troupe_finish(&w);
#elif defined(FAULT_GROW)
    for (;;) {
        if (__builtin_wasm_memory_grow(0, 16) == (size_t)-1) __builtin_trap();
    }
#elif defined(FAULT_IMPORT)
    return host_secret();
#elif defined(FAULT_LOOP)
    while (forever) {
    }
    return 0;
#else
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, TROUPE_STEP_TERMINATED);
    troupe_put_obs_header(&w, 1, 1, 1);
    troupe_put_u32(&w, 0);
    troupe_put_f64(&w, 1.0);
    troupe_put_str(&w, "", 0);
    troupe_put_u32(&w, 0);
    troupe_put_u32(&w, 0);
    return troupe_finish(&w);
#endif
}

int32_t troupe_state(void) {
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, 0);
    return troupe_finish(&w);
}

int32_t troupe_close(void) { return 0; }
