/* tests/dist/test_dist_gather.c: gathers of distributed graphs (cask_dist_graph_gather)
 * in every arrangement of owner, writer, reader and root, checked against the same
 * computation done by plain C in each process (the reference).
 *
 *   test_dist_gather owner      each datum gathered to its own owner: never written,
 *                               written on the owner, written on every other rank;
 *                               read or not by a task on each rank after its last write
 *   test_dist_gather roots      data written on each rank, gathered to each root
 *   test_dist_gather unwritten  data no task writes, gathered to each root, read or not
 *                               by a task on each rank
 *   test_dist_gather several    one datum gathered to several roots in one graph (every
 *                               rank; the same root twice; the owner among them)
 *   test_dist_gather repeat     a mix of all of the above computed 8 times in a row:
 *                               another rank may already be in run k+1 (sending) while
 *                               this one still checks run k's results
 *   test_dist_gather decide     what cask-jacobi does with its residuals: each rank's
 *                               datum gathered to every rank, and every rank decides
 *                               from what it got whether to compute again (a
 *                               destination left unwritten made the ranks disagree, and
 *                               the one that computed again waited for the others
 *                               forever: the gather hang)
 *   test_dist_gather leave      the last rank computes a graph once more than the
 *                               others, then a graph they never make: both fail there
 *                               at once, naming the rank that left, instead of waiting
 *                               for ranks that finalized
 *   test_dist_gather stress N   N random graphs (owners, writers, readers, roots and
 *                               repeated roots drawn from a seed), each computed 1 to 4
 *                               times, every 8th a named pattern; some tasks nap and
 *                               some ranks wait before checking a run, so that runs
 *                               k and k+1 overlap in many ways
 *
 * Every pattern is computed several times; before each compute the roots poison their
 * destinations and after it check them (and the owners their handles) against the
 * reference, whose values change from run to run (read-modify-write tasks), so a copy
 * of the wrong run, a destination nobody filled and a lost message (a hang: run.sh's
 * time limit) all fail. Tasks are steered to a rank by a large "pin" chunk that rank
 * owns and the task reads (placement by data: CASK_DIST_STEAL off, except in stress,
 * where the balancer may move tasks). Under tests/dist/run.sh, or alone as a job of
 * one. */
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
static void mix_into(uint64_t *out, size_t n, const mix_args *a, const uint64_t *const *in,
                     const size_t *inlen)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t v = (a->rw ? out[k] * 3 : 0) + a->salt + k;
        for (int i = 0; i < a->nin; i++)
            v += (uint64_t)(i + 2) * in[i][k % inlen[i]];
        out[k] = v;
    }
}

static cask_status k_mix(cask_task_ctx *ctx)
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

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void setup(env *e, int steal)
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

static void teardown(env *e)
{
    CHECK_OK(cask_dist_finalize(e->dist), "cask_dist_finalize");
    CHECK_OK(cask_shutdown(e->rt), "cask_shutdown");
    for (int i = 0; i < POOL; i++) {
        free(e->mem[i]);
        free(e->ref[i]);
    }
}

/* ---- building patterns (every rank builds the same) ---- */

static void pattern_start(env *e, pattern *p, const char *name, int computes)
{
    p->name = name;
    p->nops = p->ngathers = 0;
    p->computes = computes;
    for (int r = 0; r < e->size; r++)
        e->next_of[r] = r;
}

/* A pool datum owned by `owner`, not handed out yet in this pattern. */
static int take(env *e, int owner)
{
    int i = e->next_of[owner];
    CHECK(i < POOL, "pattern needs more than %d data owned by rank %d", POOL / e->size, owner);
    e->next_of[owner] += e->size;
    return i;
}

static void add_op(pattern *p, int out, int rw, int in0, int in1, int pin)
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

static void add_gather(pattern *p, int gid, int root)
{
    CHECK(p->ngathers < MAXGATHER, "too many gathers");
    p->gathers[p->ngathers].gid = gid;
    p->gathers[p->ngathers].root = root;
    p->ngathers++;
}

/* An accumulator on rank q (RW: its value changes every run) reading x there. */
static void read_on(env *e, pattern *p, int x, int q, int *acc)
{
    if (acc[q] < 0)
        acc[q] = take(e, q);
    add_op(p, acc[q], 1, x, -1, q);
}

/* Gather to the owner: never written / written on each rank; read on no rank / each. */
static void build_owner(env *e, pattern *p)
{
    int P = e->size, acc[64];
    for (int r = 0; r < P; r++)
        acc[r] = -1;
    for (int o = 0; o < P; o++)
        for (int w = -1; w < P; w++)
            for (int q = -1; q < P; q++) {
                int x = take(e, o);
                if (w >= 0)
                    add_op(p, x, (w + q) & 1, -1, -1, w);
                if (q >= 0)
                    read_on(e, p, x, q, acc);
                add_gather(p, x, o);
            }
}

/* Written on rank w (from its own content, or whole), gathered to root r. */
static void build_roots(env *e, pattern *p)
{
    int P = e->size;
    for (int o = 0; o < P; o++)
        for (int w = 0; w < P; w++)
            for (int r = 0; r < P; r++) {
                int x = take(e, o);
                add_op(p, x, (o + w + r) & 1, -1, -1, w);
                add_gather(p, x, r);
            }
}

/* Never written, gathered to root r, read on rank q (or nowhere). */
static void build_unwritten(env *e, pattern *p)
{
    int P = e->size, acc[64];
    for (int r = 0; r < P; r++)
        acc[r] = -1;
    for (int o = 0; o < P; o++)
        for (int q = -1; q < P; q++)
            for (int r = 0; r < P; r++) {
                int x = take(e, o);
                if (q >= 0)
                    read_on(e, p, x, q, acc);
                add_gather(p, x, r);
            }
}

/* One datum to several roots: every rank (in turn from each start), the same root
 * twice, the owner among them or not. */
static void build_several(env *e, pattern *p)
{
    int P = e->size, acc[64];
    for (int r = 0; r < P; r++)
        acc[r] = -1;
    for (int o = 0; o < P; o++)
        for (int w = -1; w < P; w++) {
            int x = take(e, o);
            if (w >= 0)
                add_op(p, x, 1, -1, -1, w);
            read_on(e, p, x, (o + 1) % P, acc);
            for (int k = 0; k < P; k++)
                add_gather(p, x, (o + w + 1 + k + P) % P);
            add_gather(p, x, (o + 1) % P);   /* the same root again */
            int y = take(e, o);              /* twice to one root that is not the owner */
            if (w >= 0)
                add_op(p, y, 0, x, -1, w);
            add_gather(p, y, (o + 1) % P);
            add_gather(p, y, (o + 1) % P);
        }
    for (int q = 0; q < P; q++)
        if (acc[q] >= 0)
            for (int r = 0; r < P; r++)
                add_gather(p, acc[q], r);
}

static void build_repeat(env *e, pattern *p)
{
    int P = e->size, acc[64];
    for (int r = 0; r < P; r++)
        acc[r] = -1;
    /* a chain across the ranks, each link read elsewhere and gathered to every rank */
    int prev = -1;
    for (int k = 0; k < 3 * P; k++) {
        int w = k % P, x = take(e, (k * 7 + 1) % P);
        add_op(p, x, 1, prev, -1, w);
        read_on(e, p, x, (w + 1) % P, acc);
        add_gather(p, x, (w + 2) % P);
        add_gather(p, x, e->owner[x]);
        prev = x;
    }
    for (int q = 0; q < P; q++)
        if (acc[q] >= 0) {
            add_gather(p, acc[q], q);
            add_gather(p, acc[q], (q + 1) % P);
        }
    int u = take(e, P - 1);           /* never written, gathered to all */
    for (int r = 0; r < P; r++)
        add_gather(p, u, r);
}

static void build_random(env *e, pattern *p, uint64_t seed)
{
    int P = e->size;
    uint64_t s = seed;
    int nd = 4 + (int)(splitmix(&s) % 12), ids[16];
    for (int i = 0; i < nd; i++)
        ids[i] = take(e, (int)(splitmix(&s) % (uint64_t)P));
    int nops = (int)(splitmix(&s) % 32);
    for (int k = 0; k < nops; k++) {
        int out = ids[splitmix(&s) % (uint64_t)nd], in[2] = { -1, -1 }, nin = (int)(splitmix(&s) % 3);
        for (int i = 0; i < nin; i++) {
            int c = ids[splitmix(&s) % (uint64_t)nd];
            if (c != out && (i == 0 || c != in[0]))
                in[i] = c;
        }
        int pin = (int)(splitmix(&s) % (uint64_t)(P + 1)) - 1;
        add_op(p, out, (int)(splitmix(&s) & 1), in[0], in[1], pin);
        if (splitmix(&s) % 8 == 0)
            p->ops[p->nops - 1].nap_us = (int)(splitmix(&s) % 3000);
    }
    int ng = (int)(splitmix(&s) % 14);
    for (int k = 0; k < ng; k++)
        add_gather(p, ids[splitmix(&s) % (uint64_t)nd], (int)(splitmix(&s) % (uint64_t)P));
}

/* ---- running one pattern ---- */

static void init_content(env *e, int i, uint64_t seed)
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

static void reference_run(env *e, const pattern *p)
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

static uint64_t poison(size_t k)
{
    return 0xDEADBEEF00000000ull | k;
}

static void run_pattern(env *e, const pattern *p, uint64_t seed)
{
    int used[POOL] = {0};
    for (int k = 0; k < p->nops; k++) {
        used[p->ops[k].out] = 1;
        for (int i = 0; i < p->ops[k].nin; i++)
            used[p->ops[k].in[i]] = 1;
    }
    for (int k = 0; k < p->ngathers; k++)
        used[p->gathers[k].gid] = 1;
    for (int i = 0; i < POOL; i++)
        if (used[i])
            init_content(e, i, seed);

    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e->dist, &g), "graph");
    for (int k = 0; k < p->nops; k++) {
        const op *o = &p->ops[k];
        mix_args a = { o->salt, o->nin, o->rw, o->nap_us };
        cask_access acc[4];
        int n = 0;
        acc[n++] = (cask_access){ e->pool[o->out], o->rw ? CASK_RW : CASK_WRITE };
        for (int i = 0; i < o->nin; i++)
            acc[n++] = (cask_access){ e->pool[o->in[i]], CASK_READ };
        if (o->pin >= 0)
            acc[n++] = (cask_access){ e->pin[o->pin], CASK_READ };
        char name[64];
        snprintf(name, sizeof name, "%s op %d (datum %d)", p->name, k, o->out);
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_NAME, .kernel = e->mix,
                             .access = acc, .naccess = n, .args = &a, .args_size = sizeof a,
                             .name = name };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add task %s", name);
    }
    uint64_t **dest = calloc((size_t)p->ngathers + 1, sizeof *dest);
    CHECK(dest, "out of memory");
    for (int k = 0; k < p->ngathers; k++) {
        int gid = p->gathers[k].gid, root = p->gathers[k].root;
        if (root == e->rank)
            CHECK((dest[k] = malloc(e->len[gid] * sizeof(uint64_t))), "out of memory");
        cask_status st = cask_dist_graph_gather(g, e->pool[gid], root, dest[k]);
        CHECK_OK(st, "%s: gather %d of datum %d (owner %d) to rank %d: %s", p->name, k, gid,
                 e->owner[gid], root, cask_status_string(st));
    }
    for (int run = 0; run < p->computes; run++) {
        for (int k = 0; k < p->ngathers; k++)
            if (dest[k])
                for (size_t j = 0; j < e->len[p->gathers[k].gid]; j++)
                    dest[k][j] = poison(j);
        cask_status st = cask_dist_graph_compute(g);
        CHECK_OK(st, "%s (seed %" PRIu64 "), compute %d: %s", p->name, seed, run,
                 cask_dist_graph_error(g));
        e->computes++;
        if (e->linger) {   /* the others may start the next run meanwhile, and send */
            uint64_t s = seed * 31u + (uint64_t)(run * 64 + e->rank);
            if (splitmix(&s) % 4 == 0) {
                struct timespec ts = { 0, (long)(splitmix(&s) % 3000) * 1000L };
                nanosleep(&ts, NULL);
            }
        }
        reference_run(e, p);
        for (int k = 0; k < p->ngathers; k++) {
            if (!dest[k])
                continue;
            int gid = p->gathers[k].gid;
            for (size_t j = 0; j < e->len[gid]; j++)
                CHECK(dest[k][j] == e->ref[gid][j], "%s (seed %" PRIu64 "), compute %d: gather "
                      "%d of datum %d (owner %d) to rank %d: [%zu] = %#" PRIx64 ", expected %#"
                      PRIx64 "%s", p->name, seed, run, k, gid, e->owner[gid], e->rank, j,
                      dest[k][j], e->ref[gid][j], dest[k][j] == poison(j) ? " (never written)"
                      : "");
            e->checks++;
        }
        for (int i = 0; i < POOL; i++) {
            if (!used[i] || !e->mem[i])
                continue;
            void *ptr;
            CHECK_OK(cask_data_acquire(e->pool[i], CASK_READ, &ptr), "acquire");
            int same = !memcmp(ptr, e->ref[i], e->len[i] * sizeof(uint64_t));
            CHECK_OK(cask_data_release(e->pool[i]), "release");
            CHECK(same, "%s (seed %" PRIu64 "), compute %d: datum %d at its owner differs from "
                  "the reference", p->name, seed, run, i);
        }
    }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    for (int k = 0; k < p->ngathers; k++)
        free(dest[k]);
    free(dest);
}

/* ---- deciding on gathered values; leaving ---- */

static void test_decide(env *e)
{
    int P = e->size, res[64];
    pattern *p = calloc(1, sizeof *p);
    CHECK(p, "out of memory");
    pattern_start(e, p, "decide", 0);
    for (int r = 0; r < P; r++) {
        res[r] = take(e, r);
        init_content(e, res[r], 5);
        add_op(p, res[r], 1, -1, -1, r);
    }
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e->dist, &g), "graph");
    for (int k = 0; k < p->nops; k++) {
        const op *o = &p->ops[k];
        mix_args a = { o->salt, 0, 1, 0 };
        cask_access acc[2] = { { e->pool[o->out], CASK_RW }, { e->pin[o->pin], CASK_READ } };
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS, .kernel = e->mix, .access = acc,
                             .naccess = 2, .args = &a, .args_size = sizeof a };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add task");
    }
    uint64_t *got[64];
    for (int r = 0; r < P; r++) {
        got[r] = calloc(e->len[res[r]], sizeof(uint64_t));
        CHECK(got[r], "out of memory");
        for (int q = 0; q < P; q++)   /* to every rank, the owner too */
            CHECK_OK(cask_dist_graph_gather(g, e->pool[res[r]], q, q == e->rank ? got[r] : NULL),
                     "gather %d to %d", r, q);
    }
    /* compute until the gathered values say stop, as an iterative solver does */
    int n = 0;
    for (;;) {
        double t0 = dt_now();
        cask_status st = cask_dist_graph_compute(g);
        CHECK_OK(st, "decide, compute %d: %s (after %.1f s)", n, cask_dist_graph_error(g),
                 dt_now() - t0);
        n++;
        e->computes++;
        reference_run(e, p);
        uint64_t v = 0;
        for (int r = 0; r < P; r++)
            v += got[r][0];
        if ((n >= 3 && splitmix(&v) % 4 == 0) || n == 16)
            break;
    }
    for (int r = 0; r < P; r++)
        for (size_t j = 0; j < e->len[res[r]]; j++)
            CHECK(got[r][j] == e->ref[res[r]][j], "decide: after %d computes, datum of rank %d "
                  "gathered here: [%zu] = %#" PRIx64 ", expected %#" PRIx64, n, r, j, got[r][j],
                  e->ref[res[r]][j]);
    printf("[rank %d] decide: %d computes\n", e->rank, n);
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    for (int r = 0; r < P; r++)
        free(got[r]);
    free(p);
}

static void test_leave(env *e)
{
    int P = e->size, last = P - 1, x = take(e, 0);
    init_content(e, x, 9);
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e->dist, &g), "graph");
    for (int r = 0; r < P; r++) {   /* x travels through every rank */
        mix_args a = { 11, 0, 1, 0 };
        cask_access acc[2] = { { e->pool[x], CASK_RW }, { e->pin[r], CASK_READ } };
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS, .kernel = e->mix, .access = acc,
                             .naccess = 2, .args = &a, .args_size = sizeof a };
        CHECK_OK(cask_dist_graph_add_task(g, &d, NULL), "add task");
    }
    uint64_t *got = e->rank == last ? malloc(e->len[x] * sizeof *got) : NULL;
    CHECK_OK(cask_dist_graph_gather(g, e->pool[x], last, got), "gather");
    for (int run = 0; run < 2; run++)
        CHECK_OK(cask_dist_graph_compute(g), "compute %d: %s", run, cask_dist_graph_error(g));
    if (e->rank == last && P > 1) {
        /* the others finalize now: this rank's extra compute must fail, not wait */
        double t0 = dt_now();
        cask_status st = cask_dist_graph_compute(g);
        double dt = dt_now() - t0;
        printf("[rank %d] leave: a compute the others do not make: %s after %.2f s: %s\n",
               e->rank, cask_status_string(st), dt, cask_dist_graph_error(g));
        CHECK(st == CASK_ERR_PEER, "an extra compute returned %s", cask_status_string(st));
        CHECK(strstr(cask_dist_graph_error(g), "left the job"), "message: %s",
              cask_dist_graph_error(g));
        CHECK(dt < 15, "the extra compute took %.1f s to fail", dt);
        cask_dist_graph *h;   /* a graph the others never make */
        CHECK_OK(cask_dist_graph_create(e->dist, &h), "graph");
        cask_access acc = { e->pool[x], CASK_RW };
        mix_args a = { 12, 0, 1, 0 };
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS, .kernel = e->mix, .access = &acc,
                             .naccess = 1, .args = &a, .args_size = sizeof a };
        CHECK_OK(cask_dist_graph_add_task(h, &d, NULL), "add task");
        t0 = dt_now();
        st = cask_dist_graph_compute(h);
        dt = dt_now() - t0;
        printf("[rank %d] leave: a graph the others never make: %s after %.2f s: %s\n",
               e->rank, cask_status_string(st), dt, cask_dist_graph_error(h));
        CHECK(st == CASK_ERR_PEER, "a lone graph returned %s", cask_status_string(st));
        CHECK(strstr(cask_dist_graph_error(h), "left the job"), "message: %s",
              cask_dist_graph_error(h));
        CHECK(dt < 15, "the lone graph took %.1f s to fail", dt);
        CHECK_OK(cask_dist_graph_destroy(h), "destroy");
    }
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
    free(got);
}

typedef void (*build_fn)(env *e, pattern *p);

static const struct { const char *name; build_fn build; int computes; } NAMED[] = {
    { "owner", build_owner, 3 },
    { "roots", build_roots, 3 },
    { "unwritten", build_unwritten, 3 },
    { "several", build_several, 3 },
    { "repeat", build_repeat, 8 },
};
enum { NNAMED = sizeof NAMED / sizeof NAMED[0] };

static pattern the_pattern;   /* large: not on the stack */

static void run_named(env *e, int which, uint64_t seed)
{
    pattern *p = &the_pattern;
    pattern_start(e, p, NAMED[which].name, NAMED[which].computes);
    NAMED[which].build(e, p);
    run_pattern(e, p, seed);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "several";
    int stress = !strcmp(what, "stress");
    long n = stress && argc > 2 ? atol(argv[2]) : 1;
    int which = -1, other = !strcmp(what, "decide") || !strcmp(what, "leave");
    for (int i = 0; i < NNAMED; i++)
        if (!strcmp(what, NAMED[i].name))
            which = i;
    if (which < 0 && !stress && !other) {
        fprintf(stderr, "usage: test_dist_gather owner|roots|unwritten|several|repeat|"
                        "decide|leave|stress N\n");
        return 2;
    }
    env e;
    setup(&e, stress);
    e.linger = stress;
    double t0 = dt_now();
    if (!strcmp(what, "decide")) {
        test_decide(&e);
    } else if (!strcmp(what, "leave")) {
        test_leave(&e);
    } else if (!stress) {
        run_named(&e, which, 1);
    } else {
        for (long it = 0; it < n; it++) {
            /* every 8th iteration a named pattern (fewer computes), else a random one */
            if (it % 8 == 7) {
                pattern *p = &the_pattern;
                int w = (int)((it / 8) % NNAMED);
                pattern_start(&e, p, NAMED[w].name, 2);
                NAMED[w].build(&e, p);
                run_pattern(&e, p, (uint64_t)it);
            } else {
                pattern *p = &the_pattern;
                uint64_t s = (uint64_t)it * 2654435761u + 17;
                pattern_start(&e, p, "random", 1 + (int)(splitmix(&s) % 4));
                build_random(&e, p, s);
                run_pattern(&e, p, (uint64_t)it);
            }
            if (e.rank == 0 && (it + 1) % 100 == 0)
                printf("[rank 0] %ld of %ld graphs, %ld computes, %.1f s\n", it + 1, n,
                       e.computes, dt_now() - t0);
        }
    }
    printf("[rank %d] %s: %ld computes, %ld gathered results checked here, %.2f s\n", e.rank,
           what, e.computes, e.checks, dt_now() - t0);
    teardown(&e);
    if (dt_rank_ == 0)
        printf("test_dist_gather %s: ok\n", what);
    return 0;
}
