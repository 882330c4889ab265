/*
 * lbf.c: Level-Based Foraging as a troupe Wasm env, written in C against
 * sdk/troupe_plugin.h. It ports troupe's built-in env "lbf" (envs/lbf/lbf.go
 * is the specification of the rules) and reproduces its trajectories bit
 * for bit: the same seed and the same actions give the same observations,
 * masks, rewards, flags, metrics and states. The host's tests
 * (plugins/wasm/clbf_test.go) check that over many seeds.
 *
 * Rules, in short (see envs/lbf's package doc for the full text): players
 * and food items sit on a size x size grid. Reset(seed) seeds Go's PCG-DXSM
 * generator with (seed, "lbf-food"), places the players on random free
 * cells with random levels, then places up to `foods` food items by
 * rejection sampling (1000 attempts) on interior cells away from other food
 * and from players. Each step every player picks none, north, south, west,
 * east or load; illegal decisions play as none; simultaneous moves into the
 * same cell all fail; loaders adjacent to a food collect it when their
 * summed level reaches the food's level, and share the reward in proportion
 * to their levels, so an episode's team return is at most 1.
 *
 * Observation of agent i: (row, col, level) of each visible food in
 * row-major order, then of itself and of each visible other player, with
 * (-1, -1, 0) for empty slots; scaled to O(1) unless raw_obs. State: every
 * food slot, every player, then steps / max_steps. Metrics on the last step:
 * return, foods_collected, foods_spawned, makespan_s, reference_makespan_s,
 * tokens, reference_tokens.
 *
 * Params: {"size": 8, "players": 2, "foods": 2, "max_player_level": 2,
 *          "coop": true, "max_steps": 50, "sight": 0, "raw_obs": false}.
 *
 * Build:  clang --target=wasm32-wasi -mexec-model=reactor -O2 \
 *               -I ../../sdk -o lbf_c.wasm lbf.c
 */
#define TROUPE_PLUGIN_IMPLEMENTATION
#include "troupe_plugin.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

enum { NONE, NORTH, SOUTH, WEST, EAST, LOAD, NUM_ACTIONS };

#define MAX_SIZE 64
#define MAX_LEVEL 1000
#define MAX_EPISODE 100000
#define SPAWN_ATTEMPTS 1000

static const int drow[NUM_ACTIONS] = {0, -1, 1, 0, 0, 0};
static const int dcol[NUM_ACTIONS] = {0, 0, 0, -1, 1, 0};

/* ---- Go's math/rand/v2 PCG (PCG-DXSM, 128-bit state) and Rand.IntN ---- */

#define PCG_STREAM 0x6c62662d666f6f64ull /* "lbf-food", envs/lbf's pcgStream */

typedef struct {
    uint64_t hi, lo;
} pcg;

/* mul64 returns the 128-bit product of x and y (Go's bits.Mul64). */
static inline uint64_t mul64(uint64_t x, uint64_t y, uint64_t *lo) {
    const uint64_t mask32 = 0xffffffffull;
    uint64_t x0 = x & mask32, x1 = x >> 32, y0 = y & mask32, y1 = y >> 32;
    uint64_t w0 = x0 * y0;
    uint64_t t = x1 * y0 + (w0 >> 32);
    uint64_t w1 = t & mask32, w2 = t >> 32;
    w1 += x0 * y1;
    *lo = x * y;
    return x1 * y1 + w2 + (w1 >> 32);
}

static uint64_t pcg_uint64(pcg *p) {
    const uint64_t mulHi = 2549297995355413924ull, mulLo = 4865540595714422341ull;
    const uint64_t incHi = 6364136223846793005ull, incLo = 1442695040888963407ull;
    uint64_t lo, hi = mul64(p->lo, mulLo, &lo);
    hi += p->hi * mulLo + p->lo * mulHi;
    uint64_t l2 = lo + incLo;
    hi += incHi + (l2 < lo); /* carry */
    p->lo = l2;
    p->hi = hi;
    /* DXSM "double xorshift multiply" */
    hi ^= hi >> 32;
    hi *= 0xda942042e4dd58b5ull;
    hi ^= hi >> 48;
    hi *= (l2 | 1);
    return hi;
}

/* pcg_intn is Go's (*rand.Rand).IntN(n) on a 64-bit platform: a mask for a
 * power of two, else Lemire's multiply-shift with rejection. */
static int pcg_intn(pcg *p, int n) {
    uint64_t un = (uint64_t)n;
    if ((un & (un - 1)) == 0) return (int)(pcg_uint64(p) & (un - 1));
    uint64_t lo, hi = mul64(pcg_uint64(p), un, &lo);
    if (lo < un) {
        uint64_t thresh = (0 - un) % un;
        while (lo < thresh) hi = mul64(pcg_uint64(p), un, &lo);
    }
    return (int)hi;
}

/* ---- the env ------------------------------------------------------------ */

typedef struct {
    int r, c, level;
} player;

typedef struct {
    int r, c, level, alive;
} food;

static struct {
    int size, players, foods, max_level, coop, max_steps, sight, raw_obs;
} P;

static double coord_scale, level_scale;
static int obs_size, state_size;

static player *players;
static food *foods;      /* in placement order */
static int nfoods;       /* foods placed this episode */
static int *order;       /* food indices in row-major order of their cells */
static int32_t *food_at; /* per cell: food index + 1, or 0 */
static int32_t *player_at;
static int *act, *target, *sorted_levels;
static int32_t *arrive;
static uint8_t *handled;
static double *rewards;

static pcg rng;
static double spawned, ret;
static int collected, t, opened, started, done;
static char errbuf[256];

static int32_t failf(int32_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int32_t failf(int32_t code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return troupe_error(code, errbuf);
}

/* ---- params: a flat JSON object of integers and booleans ------------- */

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

static int eat_word(json *j, const char *w) {
    skip_ws(j);
    size_t k = strlen(w);
    if (j->n - j->i >= k && memcmp(j->s + j->i, w, k) == 0) {
        j->i += (uint32_t)k;
        return 1;
    }
    return 0;
}

/* read_key copies a JSON string without escapes into out. */
static int read_key(json *j, char *out, size_t cap) {
    if (!eat(j, '"')) return 0;
    size_t k = 0;
    while (j->i < j->n && j->s[j->i] != '"') {
        if (j->s[j->i] == '\\' || k + 1 >= cap) return 0;
        out[k++] = j->s[j->i++];
    }
    out[k] = 0;
    return eat(j, '"');
}

/* value_kind describes the value at the cursor for an error message, in the
 * words of Go's encoding/json ("string", "bool", "number 8.5", …). */
static const char *value_kind(json *j, int want_bool) {
    static char kind[48];
    skip_ws(j);
    if (j->i >= j->n) return "nothing";
    switch (j->s[j->i]) {
    case '"': return "string";
    case 't': case 'f': return "bool";
    case '[': return "array";
    case '{': return "object";
    }
    if (want_bool) return "number";
    uint32_t k = j->i;
    while (k < j->n && k - j->i < 32 && strchr("+-0123456789.eE", j->s[k])) k++;
    snprintf(kind, sizeof kind, "number %.*s", (int)(k - j->i), j->s + j->i);
    return kind;
}

/* read_int reads a JSON integer literal that fits in int64 (what Go
 * decodes into an int); 1 ok, 0 not such an integer, -1 null (the default
 * stays). */
static int read_int(json *j, long long *v) {
    if (eat_word(j, "null")) return -1;
    skip_ws(j);
    uint32_t i = j->i;
    int neg = 0;
    if (i < j->n && j->s[i] == '-') neg = 1, i++;
    uint32_t d0 = i;
    unsigned long long x = 0, limit = neg ? 9223372036854775808ull : 9223372036854775807ull;
    while (i < j->n && j->s[i] >= '0' && j->s[i] <= '9') {
        unsigned d = (unsigned)(j->s[i] - '0');
        if (x > (limit - d) / 10) return 0; /* overflows int64 */
        x = x * 10 + d;
        i++;
    }
    if (i == d0 || (i < j->n && strchr(".eE", j->s[i]))) return 0;
    j->i = i;
    *v = neg ? (long long)(0 - x) : (long long)x;
    return 1;
}

/* read_bool: 1 ok, 0 not a bool, -1 null. */
static int read_bool(json *j, long long *v) {
    if (eat_word(j, "null")) return -1;
    if (eat_word(j, "true")) return *v = 1, 1;
    if (eat_word(j, "false")) return *v = 0, 1;
    return 0;
}

/* configure decodes the params JSON over the defaults (unknown keys are
 * errors; keys match case-insensitively, as Go's encoding/json does) and
 * validates them with envs/lbf's checks, in its order and words. */
static int32_t configure(const char *s, uint32_t n) {
    enum { SIZE, PLAYERS, FOODS, MAX_PLAYER_LEVEL, COOP, MAX_STEPS, SIGHT, RAW_OBS, NKEYS };
    static const char *const names[NKEYS] = {"size", "players", "foods", "max_player_level",
                                             "coop", "max_steps", "sight", "raw_obs"};
    long long v[NKEYS] = {8, 2, 2, 2, 1, 50, 0, 0};
    json j = {s, n, 0};
    skip_ws(&j);
    if (j.i == j.n || eat_word(&j, "null")) {
        skip_ws(&j);
        if (j.i != j.n) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: params: malformed JSON");
    } else {
        if (!eat(&j, '{')) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: params: want a JSON object");
        if (!eat(&j, '}')) {
            do {
                char key[128];
                if (!read_key(&j, key, sizeof key) || !eat(&j, ':'))
                    return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: params: malformed JSON");
                int k = 0;
                while (k < NKEYS && strcasecmp(key, names[k]) != 0) k++;
                if (k == NKEYS) return failf(TROUPE_ERR_FAILED, "lbf: params: unknown key \"%s\"", key);
                int is_bool = k == COOP || k == RAW_OBS;
                const char *kind = value_kind(&j, is_bool);
                if (!(is_bool ? read_bool(&j, &v[k]) : read_int(&j, &v[k])))
                    return failf(TROUPE_ERR_FAILED, "lbf: params: key \"%s\": want %s, got %s", names[k],
                                 is_bool ? "bool" : "int", kind);
            } while (eat(&j, ','));
            if (!eat(&j, '}')) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: params: malformed JSON");
        }
        skip_ws(&j);
        if (j.i != j.n) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: params: trailing bytes after the JSON object");
    }
    long long size = v[SIZE];
    if (size < 3 || size > MAX_SIZE)
        return failf(TROUPE_ERR_FAILED, "lbf: params: key \"size\": want 3..%d, got %lld", MAX_SIZE, size);
    if (v[PLAYERS] < 1 || v[PLAYERS] > size * size / 2)
        return failf(TROUPE_ERR_FAILED,
                     "lbf: params: key \"players\": want 1..%lld (half the cells of a %lldx%lld grid), got %lld",
                     size * size / 2, size, size, v[PLAYERS]);
    if (v[FOODS] < 1 || v[FOODS] > (size - 2) * (size - 2))
        return failf(TROUPE_ERR_FAILED, "lbf: params: key \"foods\": want 1..%lld (the interior cells), got %lld",
                     (size - 2) * (size - 2), v[FOODS]);
    if (v[MAX_PLAYER_LEVEL] < 1 || v[MAX_PLAYER_LEVEL] > MAX_LEVEL)
        return failf(TROUPE_ERR_FAILED, "lbf: params: key \"max_player_level\": want 1..%d, got %lld", MAX_LEVEL,
                     v[MAX_PLAYER_LEVEL]);
    if (v[MAX_STEPS] < 1 || v[MAX_STEPS] > MAX_EPISODE)
        return failf(TROUPE_ERR_FAILED, "lbf: params: key \"max_steps\": want 1..%d, got %lld", MAX_EPISODE, v[MAX_STEPS]);
    if (v[SIGHT] < 0)
        return failf(TROUPE_ERR_FAILED, "lbf: params: key \"sight\": want 0 (full) or a positive radius, got %lld", v[SIGHT]);
    P.size = (int)size, P.players = (int)v[PLAYERS], P.foods = (int)v[FOODS], P.max_level = (int)v[MAX_PLAYER_LEVEL];
    P.coop = (int)v[COOP], P.max_steps = (int)v[MAX_STEPS], P.raw_obs = (int)v[RAW_OBS];
    P.sight = v[SIGHT] == 0 || v[SIGHT] > size ? (int)size : (int)v[SIGHT];
    return 0;
}

static void free_arrays(void) {
    free(players), free(foods), free(order), free(food_at), free(player_at);
    free(act), free(target), free(sorted_levels), free(arrive), free(handled), free(rewards);
    players = NULL, foods = NULL, order = NULL, food_at = player_at = arrive = NULL;
    act = target = sorted_levels = NULL, handled = NULL, rewards = NULL;
}

static int alloc_arrays(void) {
    free_arrays();
    size_t n = (size_t)P.players, cells = (size_t)P.size * P.size, f = (size_t)P.foods;
    players = calloc(n, sizeof *players);
    foods = calloc(f, sizeof *foods);
    order = calloc(f, sizeof *order);
    food_at = calloc(cells, sizeof *food_at);
    player_at = calloc(cells, sizeof *player_at);
    arrive = calloc(cells, sizeof *arrive);
    act = calloc(n, sizeof *act);
    target = calloc(n, sizeof *target);
    sorted_levels = calloc(n, sizeof *sorted_levels);
    handled = calloc(n, 1);
    rewards = calloc(n, sizeof *rewards);
    return players && foods && order && food_at && player_at && arrive && act && target && sorted_levels && handled &&
           rewards;
}

/* can_place_food applies lbforaging's spawn test to cell (r, c). */
static int can_place_food(int r, int c) {
    int size = P.size;
    for (int rr = r > 0 ? r - 1 : 0; rr <= (r + 1 < size ? r + 1 : size - 1); rr++)
        for (int cc = c > 0 ? c - 1 : 0; cc <= (c + 1 < size ? c + 1 : size - 1); cc++)
            if (food_at[rr * size + cc]) return 0;
    for (int d = -2; d <= 2; d++) {
        int rr = r + d, cc = c + d;
        if (rr >= 0 && rr < size && food_at[rr * size + c]) return 0;
        if (cc >= 0 && cc < size && food_at[r * size + cc]) return 0;
    }
    return player_at[r * size + c] == 0;
}

/* adjacent_food returns the index of the food north, south, west or east
 * of (r, c), checked in that order, or -1. */
static int adjacent_food(int r, int c) {
    int size = P.size;
    if (r > 0 && food_at[(r - 1) * size + c]) return food_at[(r - 1) * size + c] - 1;
    if (r + 1 < size && food_at[(r + 1) * size + c]) return food_at[(r + 1) * size + c] - 1;
    if (c > 0 && food_at[r * size + c - 1]) return food_at[r * size + c - 1] - 1;
    if (c + 1 < size && food_at[r * size + c + 1]) return food_at[r * size + c + 1] - 1;
    return -1;
}

/* legal_mask returns player i's legal decisions now, bit a for decision a:
 * none always; a move into an in-bounds cell without food or player; load
 * next to (4-neighbourhood) a food. */
static inline __attribute__((always_inline)) unsigned legal_mask(int i) {
    const int size = P.size, r = players[i].r, c = players[i].c, cell = r * size + c;
    const int32_t *fa = food_at, *pa = player_at;
    unsigned m = 1u << NONE;
    int adj = 0;
#define LBF_NEIGHBOUR(inside, n, bit) \
    if (inside) {                    \
        if (fa[n])                   \
            adj = 1;                 \
        else if (!pa[n])             \
            m |= 1u << (bit);        \
    }
    LBF_NEIGHBOUR(r > 0, cell - size, NORTH)
    LBF_NEIGHBOUR(r + 1 < size, cell + size, SOUTH)
    LBF_NEIGHBOUR(c > 0, cell - 1, WEST)
    LBF_NEIGHBOUR(c + 1 < size, cell + 1, EAST)
#undef LBF_NEIGHBOUR
    if (adj) m |= 1u << LOAD;
    return m;
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_food_cell(const void *a, const void *b) {
    const food *x = &foods[*(const int *)a], *y = &foods[*(const int *)b];
    return (x->r * P.size + x->c) - (y->r * P.size + y->c);
}

static void reset_episode(uint64_t seed) {
    int size = P.size, cells = size * size;
    rng.hi = seed, rng.lo = PCG_STREAM;
    memset(food_at, 0, (size_t)cells * sizeof *food_at);
    memset(player_at, 0, (size_t)cells * sizeof *player_at);
    for (int i = 0; i < P.players; i++) {
        for (;;) {
            int r = pcg_intn(&rng, size);
            int c = pcg_intn(&rng, size);
            if (player_at[r * size + c] == 0) {
                players[i].r = r, players[i].c = c;
                players[i].level = 1 + pcg_intn(&rng, P.max_level);
                player_at[r * size + c] = i + 1;
                break;
            }
        }
    }
    /* the sum of the lowest three levels */
    for (int i = 0; i < P.players; i++) sorted_levels[i] = players[i].level;
    qsort(sorted_levels, (size_t)P.players, sizeof *sorted_levels, cmp_int);
    int food_max = 0;
    for (int i = 0; i < P.players && i < 3; i++) food_max += sorted_levels[i];
    nfoods = 0;
    for (int attempt = 0; nfoods < P.foods && attempt < SPAWN_ATTEMPTS; attempt++) {
        int r = 1 + pcg_intn(&rng, size - 2);
        int c = 1 + pcg_intn(&rng, size - 2);
        if (!can_place_food(r, c)) continue;
        int level = food_max;
        if (!P.coop) level = 1 + pcg_intn(&rng, food_max);
        foods[nfoods] = (food){r, c, level, 1};
        food_at[r * size + c] = ++nfoods;
    }
    /* begin: the row-major order of the foods (cells are distinct, so the
     * order is unique) and the episode counters */
    spawned = 0;
    for (int k = 0; k < nfoods; k++) {
        order[k] = k;
        spawned += (double)foods[k].level;
    }
    qsort(order, (size_t)nfoods, sizeof *order, cmp_food_cell);
    collected = 0, ret = 0, t = 0;
    started = 1, done = 0;
}

/* ---- encoding ------------------------------------------------------------ */

/* The replies are written through a cursor after reserving their exact
 * size once. */
typedef struct {
    uint8_t *p;
} cursor;

static inline void put_u32(cursor *w, uint32_t v) { memcpy(w->p, &v, 4), w->p += 4; }
static inline void put_f64(cursor *w, double v) { memcpy(w->p, &v, 8), w->p += 8; }
static inline void put_str(cursor *w, const char *s) {
    uint32_t n = (uint32_t)strlen(s);
    put_u32(w, n);
    memcpy(w->p, s, n), w->p += n;
}

/* store3 writes three f64 at o and returns the position after them. The
 * output pointers are restrict: the reply never overlaps the env's arrays,
 * which lets the compiler keep them in registers (it matters under Wasm,
 * where every memory access is bounds-checked). */
static inline uint8_t *store3(uint8_t *restrict o, double a, double b, double c) {
    memcpy(o, &a, 8), memcpy(o + 8, &b, 8), memcpy(o + 16, &c, 8);
    return o + 24;
}

/* store_scaled writes one scaled (row, col, level) triple, as envs/lbf's
 * put does: multiplied by the precomputed reciprocal scales. */
static inline uint8_t *store_scaled(uint8_t *restrict o, int r, int c, int level) {
    return store3(o, (double)r * coord_scale, (double)c * coord_scale, (double)level * level_scale);
}

static uint32_t observations_size(void) {
    return 12 + (uint32_t)P.players * (4 + 8 * (uint32_t)obs_size + 1 + 4);
}

/* store_features writes agent i's lbforaging-layout features
 * (obs_size f64) at o and returns the position after them. */
static uint8_t *store_features(uint8_t *restrict o, int i) {
    const int size = P.size, s = P.sight, nf = nfoods, np = P.players, slots = P.foods;
    const player *ps = players, *me = &players[i];
    const food *fs = foods;
    const int *ord = order;
    const int r0 = me->r - s > 0 ? me->r - s : 0, c0 = me->c - s > 0 ? me->c - s : 0;
    const int r1 = me->r + s + 1 < size ? me->r + s + 1 : size, c1 = me->c + s + 1 < size ? me->c + s + 1 : size;
    int k = 0;
    for (int m = 0; m < nf; m++) {
        const food *fd = &fs[ord[m]];
        if (fd->alive && fd->r >= r0 && fd->r < r1 && fd->c >= c0 && fd->c < c1) {
            o = store_scaled(o, fd->r - r0, fd->c - c0, fd->level);
            k++;
        }
    }
    for (; k < slots; k++) o = store3(o, -1, -1, 0);
    o = store_scaled(o, me->r - r0, me->c - c0, me->level);
    k = 1;
    for (int j = 0; j < np; j++) {
        int rr = ps[j].r - r0, cc = ps[j].c - c0;
        if (j != i && rr >= 0 && cc >= 0 && rr <= 2 * s && cc <= 2 * s) {
            o = store_scaled(o, rr, cc, ps[j].level);
            k++;
        }
    }
    for (; k < np; k++) o = store3(o, -1, -1, 0);
    return o;
}

static uint8_t *store_observations(uint8_t *restrict o) {
    const int np = P.players;
    const uint32_t head[3] = {(uint32_t)np, (uint32_t)obs_size, NUM_ACTIONS};
    memcpy(o, head, 12), o += 12;
    for (int i = 0; i < np; i++) {
        const uint32_t flags = TROUPE_OBS_HAS_MASK, no_text = 0;
        memcpy(o, &flags, 4), o += 4;
        o = store_features(o, i);
        *o++ = (uint8_t)legal_mask(i);
        memcpy(o, &no_text, 4), o += 4;
    }
    return o;
}

static void put_observations(cursor *w) { w->p = store_observations(w->p); }

/* u32 count, 7 x (u32 length + f64), and the names' 86 bytes */
#define METRICS_SIZE (4 + 7 * (4 + 8) + 86)

static void put_metrics(cursor *w) {
    /* sorted by name, as the ABI recommends */
    put_u32(w, 7);
    put_str(w, "foods_collected");
    put_f64(w, (double)collected);
    put_str(w, "foods_spawned");
    put_f64(w, (double)nfoods);
    put_str(w, "makespan_s");
    put_f64(w, (double)t);
    put_str(w, "reference_makespan_s");
    put_f64(w, (double)P.max_steps);
    put_str(w, "reference_tokens");
    put_f64(w, 0);
    put_str(w, "return");
    put_f64(w, ret);
    put_str(w, "tokens");
    put_f64(w, 0);
}

/* reserve makes room for an n-byte reply and returns a cursor at its start. */
static inline __attribute__((always_inline)) int reserve(uint32_t n, cursor *w) {
    if (n > troupe_buf_cap() && troupe_buf_reserve(n, 0) != 0) return 0;
    w->p = troupe_buf();
    return 1;
}

static int32_t finish(cursor *w) { return (int32_t)(w->p - troupe_buf()); }

/* ---- exports --------------------------------------------------------------- */

int32_t troupe_open(int32_t kind, int32_t params_len) {
    if (kind == TROUPE_OPEN_REWARD) return troupe_error(TROUPE_ERR_UNSUPPORTED, "lbf serves no reward function");
    troupe_reader in = troupe_input(params_len);
    if (in.err) return troupe_error(TROUPE_ERR_BAD_INPUT, "open: params length beyond the buffer");
    /* Parse before writing: the reply overwrites the params. "describe"
     * (kind 0) has no params and describes the default scenario. */
    int32_t rc = configure((const char *)in.p, kind == TROUPE_OPEN_DESCRIBE ? 0 : in.len);
    if (rc < 0) return rc;
    if (!alloc_arrays()) return troupe_error(TROUPE_ERR_NO_MEMORY, "lbf: out of memory for the grid");
    obs_size = 3 * P.foods + 3 * P.players;
    state_size = obs_size + 1;
    coord_scale = level_scale = 1;
    if (!P.raw_obs) {
        coord_scale = 1 / (double)(P.size - 1);
        level_scale = 1 / (double)(P.max_level * (P.players < 3 ? P.players : 3));
    }
    opened = 1;
    started = done = 0;

    static const char head[] = "{\"abi\":1,\"env\":{\"name\":\"lbf\",\"agents\":[";
    static const char mid[] =
        "],\"obs_size\":%d,\"decisions\":[{\"name\":\"none\"},{\"name\":\"north\"},{\"name\":\"south\"},"
        "{\"name\":\"west\"},{\"name\":\"east\"},{\"name\":\"load\"}],\"state_size\":%d,\"step_rewards\":true,"
        "\"metrics\":[\"return\",\"foods_collected\",\"foods_spawned\",\"makespan_s\",\"reference_makespan_s\","
        "\"tokens\",\"reference_tokens\"],\"max_steps\":%d},\"capabilities\":[\"truncate\"]}";
    troupe_writer w = troupe_output();
    troupe_put_raw(&w, head, sizeof head - 1);
    char tmp[384];
    for (int i = 0; i < P.players; i++) {
        int n = snprintf(tmp, sizeof tmp, "%s\"agent_%d\"", i ? "," : "", i);
        troupe_put_raw(&w, tmp, (uint32_t)n);
    }
    int n = snprintf(tmp, sizeof tmp, mid, obs_size, state_size, P.max_steps);
    troupe_put_raw(&w, tmp, (uint32_t)n);
    return troupe_finish(&w);
}

int32_t troupe_reset(int64_t seed) {
    if (!opened) return troupe_error(TROUPE_ERR_BAD_STATE, "reset before open");
    reset_episode((uint64_t)seed);
    cursor w;
    if (!reserve(observations_size(), &w)) return troupe_error(TROUPE_ERR_NO_MEMORY, "lbf: observations do not fit in memory");
    put_observations(&w);
    return finish(&w);
}

int32_t troupe_step(int32_t len) {
    int n = P.players, size = P.size;
    if (!started) return troupe_error(TROUPE_ERR_BAD_STATE, "lbf: Step before Reset");
    if (done) return troupe_error(TROUPE_ERR_FAILED, "lbf: Step after the episode ended; call Reset");
    /* The joint action: u32 n, then n records {i32 decision; 3 x i64
     * usage; str backend; str text}; only the decisions matter here. */
    if (len < 4 || (uint32_t)len > troupe_buf_cap()) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: step: truncated joint action");
    const uint8_t *in = troupe_buf(), *in_end = in + len, *q = in + 4;
    uint32_t got;
    memcpy(&got, in, 4);
    if (got != (uint32_t)n) return failf(TROUPE_ERR_FAILED, "lbf: Step: want %d actions, got %u", n, got);
    for (int i = 0; i < n; i++) {
        uint32_t sl;
        if (in_end - q < 4 + 24 + 4) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: step: malformed joint action");
        memcpy(&act[i], q, 4);
        q += 4 + 24;
        for (int k = 0; k < 2; k++) { /* backend, text */
            if (in_end - q < 4) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: step: malformed joint action");
            memcpy(&sl, q, 4);
            q += 4;
            if ((uint32_t)(in_end - q) < sl) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: step: malformed joint action");
            q += sl;
        }
    }
    if (q != in_end) return troupe_error(TROUPE_ERR_BAD_INPUT, "lbf: step: malformed joint action");
    for (int i = 0; i < n; i++)
        if (act[i] < 0 || act[i] >= NUM_ACTIONS)
            return failf(TROUPE_ERR_FAILED, "lbf: Step: agent %d: decision %d out of range 0..%d", i, act[i], NUM_ACTIONS - 1);

    /* moves: illegal decisions play as none; movers into one cell all stay */
    for (int i = 0; i < n; i++) {
        int d = act[i];
        if (!(legal_mask(i) >> d & 1)) d = NONE;
        act[i] = d;
        handled[i] = 0;
        rewards[i] = 0;
        target[i] = -1;
        if (drow[d] != 0 || dcol[d] != 0) {
            int cell = (players[i].r + drow[d]) * size + players[i].c + dcol[d];
            target[i] = cell;
            arrive[cell]++;
        }
    }
    for (int i = 0; i < n; i++) {
        int cell = target[i];
        if (cell >= 0 && arrive[cell] == 1) {
            player *pl = &players[i];
            player_at[pl->r * size + pl->c] = 0;
            pl->r += drow[act[i]], pl->c += dcol[act[i]]; /* cheaper than cell / size under Wasm */
            player_at[cell] = i + 1;
        }
    }
    for (int i = 0; i < n; i++)
        if (target[i] >= 0) arrive[target[i]] = 0;

    /* loads, in player index order */
    for (int i = 0; i < n; i++) {
        if (act[i] != LOAD || handled[i]) continue;
        int fi = adjacent_food(players[i].r, players[i].c);
        if (fi < 0) { /* cannot happen, as in envs/lbf */
            handled[i] = 1;
            continue;
        }
        food *f = &foods[fi];
        int sum = 0, first = -1;
        for (int j = 0; j < n; j++) {
            const player *pj = &players[j];
            int dr = pj->r - f->r, dc = pj->c - f->c;
            if (act[j] == LOAD && !handled[j] && (dr < 0 ? -dr : dr) + (dc < 0 ? -dc : dc) == 1) {
                handled[j] = 1;
                target[j] = first; /* reuse target as the group's linked list */
                first = j;
                sum += pj->level;
            }
        }
        if (sum < f->level) continue;
        for (int j = first; j >= 0; j = target[j])
            rewards[j] = (double)((int64_t)players[j].level * f->level) / ((double)sum * spawned);
        f->alive = 0;
        food_at[f->r * size + f->c] = 0;
        collected++;
    }
    for (int i = 0; i < n; i++) ret += rewards[i];
    t++;

    uint32_t flags = TROUPE_STEP_HAS_REWARDS;
    if (collected == nfoods)
        flags |= TROUPE_STEP_TERMINATED;
    else if (t >= P.max_steps)
        flags |= TROUPE_STEP_TRUNCATED;
    int end = flags != TROUPE_STEP_HAS_REWARDS;
    if (end) done = 1;

    cursor w;
    if (!reserve(4 + observations_size() + 8 * (uint32_t)n + METRICS_SIZE + 4, &w))
        return troupe_error(TROUPE_ERR_NO_MEMORY, "lbf: step result does not fit in memory");
    put_u32(&w, flags);
    put_observations(&w);
    for (int i = 0; i < n; i++) put_f64(&w, rewards[i]); /* a loop: memcpy would be a libc call */
    if (end)
        put_metrics(&w);
    else
        put_u32(&w, 0);
    put_u32(&w, 0); /* no artifacts */
    return finish(&w);
}

int32_t troupe_truncate(void) {
    if (!started) return troupe_error(TROUPE_ERR_BAD_STATE, "lbf: Truncate before Reset");
    done = 1;
    cursor w;
    if (!reserve(4 + observations_size() + 8 * (uint32_t)P.players + METRICS_SIZE + 4, &w))
        return troupe_error(TROUPE_ERR_NO_MEMORY, "lbf: step result does not fit in memory");
    put_u32(&w, TROUPE_STEP_HAS_REWARDS | TROUPE_STEP_TRUNCATED);
    put_observations(&w);
    for (int i = 0; i < P.players; i++) put_f64(&w, 0);
    put_metrics(&w);
    put_u32(&w, 0);
    return finish(&w);
}

int32_t troupe_state(void) {
    if (!opened) return troupe_error(TROUPE_ERR_BAD_STATE, "lbf: State before open");
    cursor w;
    if (!reserve(4 + 8 * (uint32_t)state_size, &w)) return troupe_error(TROUPE_ERR_NO_MEMORY, "lbf: state does not fit in memory");
    put_u32(&w, (uint32_t)state_size);
    for (int k = 0; k < P.foods; k++) {
        if (k < nfoods && foods[k].alive)
            w.p = store_scaled(w.p, foods[k].r, foods[k].c, foods[k].level);
        else
            w.p = store3(w.p, -1, -1, 0);
    }
    for (int j = 0; j < P.players; j++) w.p = store_scaled(w.p, players[j].r, players[j].c, players[j].level);
    put_f64(&w, (double)t / (double)P.max_steps);
    return finish(&w);
}

int32_t troupe_close(void) {
    free_arrays();
    opened = started = done = 0;
    return 0;
}
