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
 * one. Gathered values that the ranks decide on, and a rank that leaves the others
 * computing: test_dist_gather_decide.c. */
#include "gather_helpers.h"

/* ---- building patterns (every rank builds the same) ---- */

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
    int which = -1;
    for (int i = 0; i < NNAMED; i++)
        if (!strcmp(what, NAMED[i].name))
            which = i;
    if (which < 0 && !stress) {
        fprintf(stderr, "usage: test_dist_gather owner|roots|unwritten|several|repeat|"
                        "stress N\n");
        return 2;
    }
    env e;
    setup(&e, stress);
    e.linger = stress;
    double t0 = dt_now();
    if (!stress) {
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
    return finish(&e, "test_dist_gather", what, t0);
}
