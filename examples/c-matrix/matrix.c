/*
 * matrix.c: the repeated two-player cooperative matrix games Climbing and
 * Penalty as a troupe Wasm env, written in C against sdk/troupe_plugin.h.
 * It follows the rules of troupe's built-in env "matrix" (envs/matrix) and
 * the host's tests check that both give the same trajectories.
 *
 * Two agents pick one of "a0", "a1", "a2" at every step for `steps` steps
 * (default 25); both receive payoff[a0][a1]:
 *
 *   Climbing            Penalty (k <= 0, default -100)
 *    11  -30    0        k    0   10
 *   -30    7    0        0    2    0
 *     0    6    5       10    0    k
 *
 * Observation: one feature, 1.0; every action legal. State: the previous
 * joint action as a one-hot over 9 (index 3*a0 + a1). Metrics on the last
 * step: return, optimal_return, makespan_s, reference_makespan_s, tokens,
 * reference_tokens.
 *
 * Params: {"game": "climbing" | "penalty", "k": number, "steps": 1..100000}.
 *
 * Build:  clang --target=wasm32-wasi -mexec-model=reactor -O2 \
 *               -I ../../sdk -o matrix.wasm matrix.c
 */
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "troupe_plugin.h"

#include <stdio.h>

static double payoff[3][3];
static int steps = 25;
static double optimum;
static int opened, started, done, t, last = -1;
static double ret;
static char errbuf[256];

/* ---- a small parser for a flat JSON object of strings and numbers ---- */

typedef struct {
    const char *s;
    uint32_t n, i;
} json;

static void skip_ws(json *j) {
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\n' || j->s[j->i] == '\t' || j->s[j->i] == '\r'))
        j->i++;
}

static int eat(json *j, char c) {
    skip_ws(j);
    if (j->i < j->n && j->s[j->i] == c) {
        j->i++;
        return 1;
    }
    return 0;
}

/* read_string copies a JSON string without escapes into out. */
static int read_string(json *j, char *out, size_t cap) {
    if (!eat(j, '"')) return 0;
    size_t k = 0;
    while (j->i < j->n && j->s[j->i] != '"') {
        if (j->s[j->i] == '\\' || k + 1 >= cap) return 0;
        out[k++] = j->s[j->i++];
    }
    out[k] = 0;
    return eat(j, '"');
}

static int read_number(json *j, double *v) {
    skip_ws(j);
    char tmp[64];
    size_t k = 0;
    while (j->i < j->n && k + 1 < sizeof tmp && strchr("+-0123456789.eE", j->s[j->i]))
        tmp[k++] = j->s[j->i++];
    tmp[k] = 0;
    char *end;
    *v = strtod(tmp, &end);
    return k > 0 && *end == 0;
}

static int32_t configure(const char *params, uint32_t n) {
    char game[32] = "climbing";
    int have_k = 0;
    double k = -100, st = 25;
    if (n > 0) {
        json j = {params, n, 0};
        if (!eat(&j, '{')) return troupe_error(TROUPE_ERR_BAD_INPUT, "matrix: params: want a JSON object");
        if (!eat(&j, '}')) {
            do {
                char key[32];
                if (!read_string(&j, key, sizeof key) || !eat(&j, ':'))
                    return troupe_error(TROUPE_ERR_BAD_INPUT, "matrix: params: malformed JSON");
                if (strcmp(key, "game") == 0) {
                    if (!read_string(&j, game, sizeof game))
                        return troupe_error(TROUPE_ERR_FAILED, "matrix: params: key \"game\": want a string");
                } else if (strcmp(key, "k") == 0) {
                    if (!read_number(&j, &k))
                        return troupe_error(TROUPE_ERR_FAILED, "matrix: params: key \"k\": want a number");
                    have_k = 1;
                } else if (strcmp(key, "steps") == 0) {
                    if (!read_number(&j, &st) || st != (double)(int)st)
                        return troupe_error(TROUPE_ERR_FAILED, "matrix: params: key \"steps\": want an integer");
                } else {
                    snprintf(errbuf, sizeof errbuf, "matrix: params: unknown key \"%s\"", key);
                    return troupe_error(TROUPE_ERR_FAILED, errbuf);
                }
            } while (eat(&j, ','));
            if (!eat(&j, '}')) return troupe_error(TROUPE_ERR_BAD_INPUT, "matrix: params: malformed JSON");
        }
    }
    if (strcmp(game, "climbing") == 0) {
        if (have_k) return troupe_error(TROUPE_ERR_FAILED, "matrix: params: key \"k\" applies only to game = \"penalty\"");
        static const double c[3][3] = {{11, -30, 0}, {-30, 7, 0}, {0, 6, 5}};
        memcpy(payoff, c, sizeof payoff);
    } else if (strcmp(game, "penalty") == 0) {
        if (!(k <= 0)) return troupe_error(TROUPE_ERR_FAILED, "matrix: params: key \"k\": want a value <= 0");
        double p[3][3] = {{k, 0, 10}, {0, 2, 0}, {10, 0, k}};
        memcpy(payoff, p, sizeof payoff);
    } else {
        snprintf(errbuf, sizeof errbuf, "matrix: params: key \"game\": want \"climbing\" or \"penalty\", got \"%s\"", game);
        return troupe_error(TROUPE_ERR_FAILED, errbuf);
    }
    if (st < 1 || st > 100000) return troupe_error(TROUPE_ERR_FAILED, "matrix: params: key \"steps\": want 1..100000");
    steps = (int)st;
    double best = payoff[0][0];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (payoff[a][b] > best) best = payoff[a][b];
    optimum = best * steps;
    return 0;
}

/* ---- exports ---------------------------------------------------------- */

int32_t troupe_open(int32_t kind, int32_t params_len) {
    if (kind == TROUPE_OPEN_REWARD) return troupe_error(TROUPE_ERR_UNSUPPORTED, "matrix serves no reward function");
    troupe_reader in = troupe_input(params_len);
    if (in.err) return troupe_error(TROUPE_ERR_BAD_INPUT, "open: params length beyond the buffer");
    /* Parse before writing: the reply overwrites the params. */
    int32_t rc = configure((const char *)in.p, in.len);
    if (rc < 0) return rc;
    opened = 1;
    started = done = 0;
    char spec[512];
    int n = snprintf(spec, sizeof spec,
                     "{\"abi\":1,\"env\":{\"name\":\"matrix\",\"agents\":[\"agent_0\",\"agent_1\"],"
                     "\"obs_size\":1,\"decisions\":[{\"name\":\"a0\"},{\"name\":\"a1\"},{\"name\":\"a2\"}],"
                     "\"state_size\":9,\"step_rewards\":true,"
                     "\"metrics\":[\"return\",\"optimal_return\",\"makespan_s\",\"reference_makespan_s\","
                     "\"tokens\",\"reference_tokens\"],\"max_steps\":%d},"
                     "\"capabilities\":[\"truncate\"]}",
                     steps);
    troupe_writer w = troupe_output();
    troupe_put_raw(&w, spec, (uint32_t)n);
    return troupe_finish(&w);
}

static void put_observations(troupe_writer *w) {
    static const uint8_t all[3] = {1, 1, 1};
    troupe_put_obs_header(w, 2, 1, 3);
    for (int i = 0; i < 2; i++) {
        troupe_put_u32(w, TROUPE_OBS_HAS_MASK);
        troupe_put_f64(w, 1.0);
        troupe_put_mask(w, all, 3);
        troupe_put_str(w, "", 0);
    }
}

static void put_metrics(troupe_writer *w) {
    /* Sorted by name, as the ABI recommends. */
    troupe_put_u32(w, 6);
    troupe_put_cstr(w, "makespan_s");
    troupe_put_f64(w, t);
    troupe_put_cstr(w, "optimal_return");
    troupe_put_f64(w, optimum);
    troupe_put_cstr(w, "reference_makespan_s");
    troupe_put_f64(w, steps);
    troupe_put_cstr(w, "reference_tokens");
    troupe_put_f64(w, 0);
    troupe_put_cstr(w, "return");
    troupe_put_f64(w, ret);
    troupe_put_cstr(w, "tokens");
    troupe_put_f64(w, 0);
}

int32_t troupe_reset(int64_t seed) {
    (void)seed; /* the game has no randomness */
    if (!opened) return troupe_error(TROUPE_ERR_BAD_STATE, "reset before open");
    started = 1;
    done = 0;
    t = 0;
    ret = 0;
    last = -1;
    troupe_writer w = troupe_output();
    put_observations(&w);
    return troupe_finish(&w);
}

int32_t troupe_step(int32_t len) {
    if (!started) return troupe_error(TROUPE_ERR_BAD_STATE, "matrix: Step before Reset");
    if (done) return troupe_error(TROUPE_ERR_FAILED, "matrix: Step after the episode ended; call Reset");
    troupe_reader in = troupe_input(len);
    uint32_t n = troupe_get_u32(&in);
    if (in.err) return troupe_error(TROUPE_ERR_BAD_INPUT, "step: truncated joint action");
    if (n != 2) {
        snprintf(errbuf, sizeof errbuf, "matrix: Step: want 2 actions, got %u", n);
        return troupe_error(TROUPE_ERR_FAILED, errbuf);
    }
    int32_t d[2];
    for (int i = 0; i < 2; i++) {
        troupe_action a;
        troupe_get_action(&in, &a);
        d[i] = a.decision;
    }
    if (!troupe_at_end(&in)) return troupe_error(TROUPE_ERR_BAD_INPUT, "step: malformed joint action");
    for (int i = 0; i < 2; i++) {
        if (d[i] < 0 || d[i] > 2) {
            snprintf(errbuf, sizeof errbuf, "matrix: Step: agent %d: decision %d out of range 0..2", i, (int)d[i]);
            return troupe_error(TROUPE_ERR_FAILED, errbuf);
        }
    }
    double r = payoff[d[0]][d[1]];
    t++;
    ret += r;
    last = d[0] * 3 + d[1];
    int end = t >= steps;
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, TROUPE_STEP_HAS_REWARDS | (end ? TROUPE_STEP_TERMINATED : 0));
    put_observations(&w);
    troupe_put_f64(&w, r);
    troupe_put_f64(&w, r);
    if (end) {
        done = 1;
        put_metrics(&w);
    } else {
        troupe_put_u32(&w, 0);
    }
    troupe_put_u32(&w, 0); /* no artifacts */
    return troupe_finish(&w);
}

int32_t troupe_truncate(void) {
    if (!started) return troupe_error(TROUPE_ERR_BAD_STATE, "matrix: Truncate before Reset");
    done = 1;
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, TROUPE_STEP_HAS_REWARDS | TROUPE_STEP_TRUNCATED);
    put_observations(&w);
    troupe_put_f64(&w, 0);
    troupe_put_f64(&w, 0);
    put_metrics(&w);
    troupe_put_u32(&w, 0);
    return troupe_finish(&w);
}

int32_t troupe_state(void) {
    troupe_writer w = troupe_output();
    troupe_put_u32(&w, 9);
    for (int i = 0; i < 9; i++) troupe_put_f64(&w, i == last ? 1.0 : 0.0);
    return troupe_finish(&w);
}

int32_t troupe_close(void) {
    opened = started = 0;
    return 0;
}
