/* tests/dist/gather_helpers.h: what the test_dist_gather*.c programs share: the
 * runtime and cask_dist of each rank, a pool of distributed data of three lengths (datum
 * i owned by rank i % P), a "pin" per rank that steers a task there (a large chunk the
 * rank owns and the task reads), the read-modify-write "mix" kernel, patterns of tasks
 * that every rank builds alike, and the reference: the same computation done by plain C
 * in each process, for every datum. */
#ifndef CASK_TESTS_DIST_GATHER_HELPERS_H
#define CASK_TESTS_DIST_GATHER_HELPERS_H

#include <inttypes.h>

#include "cask/cask.h"
#include "dist_test.h"

enum {
    POOL = 256,          /* declared once; owner i % P, length by (i / P) % 3 */
    PIN_LEN = 32768,     /* elements of a pin: more bytes than any task's other inputs */
    MAXOPS = 512,
    MAXGATHER = 512,
};

static const size_t LENS[3] = { 16, 512, 8192 };   /* uint64 elements: 128 B .. 64 KiB */

typedef struct op {
    int out, rw, nin, in[2], pin;   /* pin: the rank the task is steered to, -1 none */
    int nap_us;                     /* the task sleeps this long (stress: jitter) */
    uint64_t salt;
} op;

typedef struct pattern {
    const char *name;
    int nops, ngathers, computes;
    op ops[MAXOPS];
    struct { int gid, root; } gathers[MAXGATHER];
} pattern;

typedef struct env {
    cask_runtime *rt;
    cask_dist *dist;
    int rank, size;
    cask_kernel *mix;
    cask_data *pool[POOL], *pin[64];
    uint64_t *mem[POOL];           /* the owner's memory of each pool datum, else NULL */
    uint64_t *ref[POOL];           /* the reference content of each, on every rank */
    size_t len[POOL];
    int owner[POOL];
    int next_of[64];               /* per owner: next pool datum to hand out (pattern) */
    long computes, checks;
    int linger;                    /* stress: sometimes wait before checking a run */
} env;

typedef struct mix_args {
    uint64_t salt;
    int nin, rw, nap_us;
} mix_args;

/* [0] out (W or RW), [1..nin] inputs, then the pin (unread) */
static inline void mix_into(uint64_t *out, size_t n, const mix_args *a, const uint64_t *const *in,
                     const size_t *inlen)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t v = (a->rw ? out[k] * 3 : 0) + a->salt + k;
        for (int i = 0; i < a->nin; i++)
            v += (uint64_t)(i + 2) * in[i][k % inlen[i]];
        out[k] = v;
    }
}

static inline cask_status k_mix(cask_task_ctx *ctx)
{
    const mix_args *a = cask_task_args(ctx, NULL);
    const uint64_t *in[2];
    size_t inlen[2];
    for (int i = 0; i < a->nin; i++) {
        in[i] = cask_task_buffer(ctx, 1 + i);
        inlen[i] = cask_task_buffer_size(ctx, 1 + i) / sizeof(uint64_t);
    }
    if (a->nap_us) {
        struct timespec ts = { 0, (long)a->nap_us * 1000L };
        nanosleep(&ts, NULL);
    }
    mix_into(cask_task_buffer(ctx, 0), cask_task_buffer_size(ctx, 0) / sizeof(uint64_t), a, in,
             inlen);
    return CASK_OK;
}

static inline uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline void setup(env *e, int steal)
{
    memset(e, 0, sizeof *e);
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND | CASK_CONFIG_NGPU,
                        .ncpu = 2, .bind = 0, .ngpu = 0 };
    CHECK_OK(cask_init(&cfg, &e->rt), "cask_init");
    cask_dist_config dc = { .field_mask = CASK_DIST_PEER_TIMEOUT_MS | CASK_DIST_HEARTBEAT_MS |
                                          CASK_DIST_STEAL,
                            .peer_timeout_ms = 20000, .heartbeat_ms = 200, .steal = steal };
    cask_status st = cask_dist_init(e->rt, &dc, &e->dist);
    char err[1024];
    cask_runtime_error(e->rt, err, sizeof err);
    CHECK_OK(st, "cask_dist_init: %s", err);
    e->rank = dt_rank_ = cask_dist_rank(e->dist);
    e->size = cask_dist_size(e->dist);
    CHECK(e->size <= 64, "at most 64 ranks");
    cask_kernel_desc kd = { .name = "mix", .cpu = k_mix };
    CHECK_OK(cask_kernel_register(e->rt, &kd, &e->mix), "register mix");
    for (int i = 0; i < POOL; i++) {
        e->owner[i] = i % e->size;
        e->len[i] = LENS[(i / e->size) % 3];
        size_t bytes = e->len[i] * sizeof(uint64_t);
        e->ref[i] = malloc(bytes);
        CHECK(e->ref[i], "out of memory");
        if (e->owner[i] == e->rank)
            CHECK((e->mem[i] = calloc(1, bytes)), "out of memory");
        CHECK_OK(cask_dist_data_create(e->dist, bytes, e->owner[i], e->mem[i], &e->pool[i]),
                 "declare pool datum %d", i);
    }
    for (int r = 0; r < e->size; r++)
        CHECK_OK(cask_dist_data_create(e->dist, PIN_LEN * sizeof(uint64_t), r, NULL, &e->pin[r]),
                 "declare pin %d", r);
}

static inline void teardown(env *e)
{
    CHECK_OK(cask_dist_finalize(e->dist), "cask_dist_finalize");
    CHECK_OK(cask_shutdown(e->rt), "cask_shutdown");
    for (int i = 0; i < POOL; i++) {
        free(e->mem[i]);
        free(e->ref[i]);
    }
}

/* The end of a program: what this rank computed and checked since t0, then down with the
 * runtime; rank 0 says "<prog> <what>: ok". Returns main's exit status. */
static inline int finish(env *e, const char *prog, const char *what, double t0)
{
    printf("[rank %d] %s: %ld computes, %ld gathered results checked here, %.2f s\n", e->rank,
           what, e->computes, e->checks, dt_now() - t0);
    teardown(e);
    if (dt_rank_ == 0)
        printf("%s %s: ok\n", prog, what);
    return 0;
}

/* ---- building patterns (every rank builds the same) ---- */

static inline void pattern_start(env *e, pattern *p, const char *name, int computes)
{
    p->name = name;
    p->nops = p->ngathers = 0;
    p->computes = computes;
    for (int r = 0; r < e->size; r++)
        e->next_of[r] = r;
}

/* A pool datum owned by `owner`, not handed out yet in this pattern. */
static inline int take(env *e, int owner)
{
    int i = e->next_of[owner];
    CHECK(i < POOL, "pattern needs more than %d data owned by rank %d", POOL / e->size, owner);
    e->next_of[owner] += e->size;
    return i;
}

static inline void add_op(pattern *p, int out, int rw, int in0, int in1, int pin)
{
    CHECK(p->nops < MAXOPS, "too many tasks");
    op *o = &p->ops[p->nops];
    *o = (op){ .out = out, .rw = rw, .pin = pin, .salt = 1000003u * (uint64_t)(p->nops + 1) };
    if (in0 >= 0)
        o->in[o->nin++] = in0;
    if (in1 >= 0)
        o->in[o->nin++] = in1;
    p->nops++;
}

/* ---- the content of a datum, and the reference ---- */

static inline void init_content(env *e, int i, uint64_t seed)
{
    uint64_t s = seed * 7919u + (uint64_t)i;
    for (size_t k = 0; k < e->len[i]; k++)
        e->ref[i][k] = splitmix(&s) & 0xffffffu;
    if (e->mem[i]) {
        void *ptr;
        CHECK_OK(cask_data_acquire(e->pool[i], CASK_WRITE, &ptr), "acquire datum %d", i);
        memcpy(ptr, e->ref[i], e->len[i] * sizeof(uint64_t));
        CHECK_OK(cask_data_release(e->pool[i]), "release");
    }
}

static inline void reference_run(env *e, const pattern *p)
{
    for (int k = 0; k < p->nops; k++) {
        const op *o = &p->ops[k];
        mix_args a = { o->salt, o->nin, o->rw, 0 };
        const uint64_t *in[2];
        size_t inlen[2];
        for (int i = 0; i < o->nin; i++) {
            in[i] = e->ref[o->in[i]];
            inlen[i] = e->len[o->in[i]];
        }
        mix_into(e->ref[o->out], e->len[o->out], &a, in, inlen);
    }
}

#endif
