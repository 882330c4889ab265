/* A native harness for troupe_plugin.h's readers (sdk/header_test.go):
 * each case prints one line. */
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "../troupe_plugin.h"
#include <stdio.h>

static void load(const void *p, uint32_t n) {
    troupe_buf_reserve(n + 8, 0);
    memcpy(troupe_buf(), p, n);
}

/* params reads work (int), rate (number) and on (bool). */
static void params(const char *json) {
    long long work = 6;
    double rate = 0.25;
    int on = 0;
    load(json, (uint32_t)strlen(json));
    troupe_params p;
    int32_t rc = troupe_params_begin(&p, (int32_t)strlen(json));
    while (rc == 0 && (rc = troupe_params_next(&p)) == 1) {
        if (troupe_params_key_is(&p, "work")) rc = troupe_params_int(&p, &work);
        else if (troupe_params_key_is(&p, "rate")) rc = troupe_params_f64(&p, &rate);
        else if (troupe_params_key_is(&p, "on")) rc = troupe_params_bool(&p, &on);
        else rc = troupe_params_unknown(&p);
    }
    if (rc < 0) {
        uint32_t n;
        memcpy(&n, troupe_buf(), 4);
        printf("%d %.*s\n", rc, (int)n, (const char *)troupe_buf() + 4);
        return;
    }
    printf("work=%lld rate=%g on=%d\n", work, rate, on);
}

static void put32(uint8_t **q, uint32_t v) { memcpy(*q, &v, 4), *q += 4; }
static void put64(uint8_t **q, double v) { memcpy(*q, &v, 8), *q += 8; }

int main(void) {
    params("");
    params("{}");
    params(" null ");
    params("{\"Work\": 9, \"rate\": -1.5e-1, \"ON\": true}");
    params("{\"work\": null}");
    params("{\"x\": 1}");
    params("{\"work\": \"a\"}");
    params("{\"work\": 1.5}");
    params("{\"work\": 99999999999999999999}");
    params("{\"on\": 1}");
    params("{\"rate\": \"fast\"}");
    params("ab");
    params("[1]");
    params("{\"work\": 1} x");
    params("{\"work\": 1");

    /* Masks: 10 decisions, legal 0, 3, 8, 9. */
    uint8_t mask[2] = {0x09, 0x03}, legal[10];
    load(mask, 2);
    troupe_reader r = troupe_input(2);
    troupe_get_mask(&r, legal, 10);
    printf("mask");
    for (int d = 0; d < 10; d++) printf(" %d", legal[d]);
    printf(" end=%d\n", troupe_at_end(&r));
    r = troupe_input(1);
    troupe_get_mask(&r, legal, 10);
    printf("short mask err=%d\n", r.err);

    /* Observations: 2 agents, 2 features, 3 decisions; agent 0 with a
     * mask (decision 1 only), agent 1 without. */
    uint8_t obs[128], *q = obs;
    put32(&q, 2), put32(&q, 2), put32(&q, 3);
    put32(&q, 1), put64(&q, 0.5), put64(&q, -2), *q++ = 0x02, put32(&q, 2), memcpy(q, "hi", 2), q += 2;
    put32(&q, 0), put64(&q, 1), put64(&q, 3), put32(&q, 0);
    load(obs, (uint32_t)(q - obs));
    r = troupe_input((int32_t)(q - obs));
    printf("header ok=%d\n", troupe_get_obs_header(&r, 2, 2, 3));
    for (int i = 0; i < 2; i++) {
        double f[2];
        uint8_t l[3];
        const char *text;
        uint32_t n;
        troupe_get_observation(&r, 2, 3, f, l, &text, &n);
        printf("agent %d: %g %g legal %d%d%d text %.*s\n", i, f[0], f[1], l[0], l[1], l[2], (int)n, text ? text : "");
    }
    printf("end=%d\n", troupe_at_end(&r));
    r = troupe_input((int32_t)(q - obs));
    printf("header wrong=%d\n", troupe_get_obs_header(&r, 2, 3, 3));
    return 0;
}
