/* tests/dist/test_dist_chaos.c: one case of the chaos soak (tests/dist/chaos.sh). An
 * SPMD program: every rank builds the same random distributed graphs from the seed
 * (chaos_gen.c: random owners, sizes, fan-in and fan-out, RW chains, gathers, several
 * computes of one graph), computes them through the public API (cask/distributed.h), and
 * checks, after each compute, every datum it owns and every gather it roots against a
 * sequential replay of the same tasks in plain C (cg_replay_compute) made in this
 * process: the result must be bit for bit the same.
 *
 *   test_dist_chaos SEED          (under a launcher: tests/dist/chaos.sh runs it)
 *
 * The program does not judge failures itself: it writes what happened to it, and
 * chaos.sh, which knows which rank it killed or froze, judges. Files in $CHAOS_DIR
 * (nothing is written without it):
 *   boot.R    this process's pid before it joins (R from the launcher's environment:
 *             PMIX_RANK, or CASK_RANK with the file bootstrap)
 *   pid.R     this rank's pid, once cask_dist_init returned (chaos.sh signals it)
 *   fault.R   written by the fault hook just before this rank kills or stops itself
 *   out.R     the outcome, written last, after cask_shutdown: one line,
 *               ok    computes=N digest=HEX fin=STATUS barriers_lost=K
 *               error phase=init status=STATUS computes=0 fin=CASK_OK t=SECONDS msg=...
 *                     (cask_dist_init failed: R from the environment as boot.R)
 *               error phase=WHERE status=STATUS computes=N fin=STATUS t=SECONDS msg=...
 *               wrong phase=WHERE computes=N fin=STATUS msg=...
 *             (fin: what the closing barrier and cask_dist_finalize returned; error:
 *             the first failing call, t its duration; wrong: a compute returned
 *             CASK_OK with a result that differs from the replay). A rank without
 *             out.R died or hung.
 * Fault hook, $CHAOS_FAULT = MODE:RANK:GRAPH:COMPUTE:K, MODE kill (SIGKILL) or stop
 * (SIGSTOP; chaos.sh continues it later, or not): rank RANK hits itself in compute
 * COMPUTE of graph GRAPH (both taken modulo the case's counts), inside the K-th task it
 * runs there (K modulo its task count) or, K = -1 or no task there, right after that
 * compute returns. Same on every rank (it is part of the case), acted on by one.
 * Two more modes prove that chaos.sh can fail: corrupt (from that task on, every task of
 * that compute on RANK flips a bit of what it writes: a wrong result) and hang (the task
 * sleeps for ever on a live rank: a hang).
 * $CHAOS_BARRIER_GO_ON=1: a cask_dist_barrier that fails with CASK_ERR_PEER (a rank lost)
 * is counted (barriers_lost, the closing one included) and the rank goes on to its next
 * compute, which must then recover as any other; without it the rank stops there.
 * $CHAOS_SIM_GPUS=N (N > 0): each rank has N simulated GPUs (CASK_SIM_GPUS: host memory,
 * the kernel's CPU code on GPU workers) with the GPU route between ranks
 * (CASK_DIST_SIM_GPU_UCX=1), and about half of the tasks, chosen from the seed, are GPU
 * tasks: chunks move between the ranks' GPUs, and a gathered datum whose last writer
 * ran on a GPU is gathered GPU to GPU (dist_plan_final.c), faults and recovery
 * included. N followed by h (2h): the same GPU tasks with the host route between ranks
 * (GPU-made chunks staged through host memory, as between hosts).
 * $CHAOS_PEER_TIMEOUT_MS: cask_dist_config.peer_timeout_ms (default 4000).
 * $CHAOS_PEER_TIMEOUTS=MS0,MS1,...: per rank instead (a rank past the list keeps the
 * above): one rank that gives up on a frozen peer long before the others do, so that
 * the others hear of the loss only from it (tests/dist/fence_notice.sh). */
#include <stdarg.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "cask/cask.h"
#include "chaos_gen.h"
#include "dist_test.h"

/* The argument of every task: what to compute, and where it is in the case. */
typedef struct chaos_args {
    cg_task t;
    int graph, index;
} chaos_args;

enum chaos_mode { MODE_KILL, MODE_STOP, MODE_CORRUPT, MODE_HANG };
static const char *const mode_names[] = { "kill", "stop", "corrupt", "hang" };

/* The fault this case injects (set by main before the computes; read by tasks). */
typedef struct chaos_fault {
    int armed;                 /* 0: none */
    int mode;                  /* chaos_mode */
    int rank, graph, compute;
    long k;                    /* the K-th task run here; -1: after the compute */
    long ntasks_here;
    int cur_graph, cur_compute;
    atomic_long count;         /* tasks of (graph, compute) run here so far */
    atomic_int fired;
    int me;
    const char *dir;
} chaos_fault;

static chaos_fault fault_;     /* one per process: the kernel has no other way to it */

static void write_file(const char *dir, const char *name, int rank, const char *text)
{
    if (!dir)
        return;
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s.%d", dir, name, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    rename(tmp, path);   /* appears whole */
}

static void fire(const char *where)
{
    chaos_fault *F = &fault_;
    if (atomic_exchange(&F->fired, 1))
        return;
    char text[256];
    snprintf(text, sizeof text, "%s %s graph %d compute %d pid %d\n", mode_names[F->mode],
             where, F->graph, F->compute, (int)getpid());
    write_file(F->dir, "fault", F->me, text);
    fprintf(stderr, "[rank %d] chaos: %s myself %s of graph %d compute %d\n", F->me,
            mode_names[F->mode], where, F->graph, F->compute);
    if (F->mode == MODE_HANG)
        for (;;)
            sleep(1);   /* alive, heartbeating, never done: only chaos.sh's limit ends it */
    if (F->mode == MODE_KILL || F->mode == MODE_STOP) {
        raise(F->mode == MODE_KILL ? SIGKILL : SIGSTOP);
        fprintf(stderr, "[rank %d] chaos: continued\n", F->me);
    }
}

static cask_status k_chaos(cask_task_ctx *ctx)
{
    const chaos_args *a = cask_task_args(ctx, NULL);
    chaos_fault *F = &fault_;
    if (F->armed && F->k >= 0 && F->me == F->rank && a->graph == F->graph &&
        F->cur_graph == F->graph && F->cur_compute == F->compute &&
        atomic_fetch_add(&F->count, 1) == F->k) {
        char where[64];
        snprintf(where, sizeof where, "in task %d", a->index);
        fire(where);
    }
    if (a->t.nap_us)
        dt_sleep_ms((int)(a->t.nap_us / 1000));
    uint64_t *buf[CG_MAXACC];
    size_t len[CG_MAXACC];
    for (int i = 0; i < a->t.nacc; i++) {
        buf[i] = cask_task_buffer(ctx, i);
        len[i] = cask_task_buffer_size(ctx, i) / sizeof(uint64_t);
    }
    cg_apply(&a->t, buf, len);
    if (F->mode == MODE_CORRUPT && atomic_load(&F->fired) && F->me == F->rank &&
        a->graph == F->graph && F->cur_compute == F->compute)
        for (int w = 0; w < a->t.nw; w++)
            buf[w][0] ^= 1;   /* the self-test: chaos.sh must call this a wrong result */
    return CASK_OK;
}

static void parse_fault(chaos_fault *F, const cg_spec *s)
{
    const char *v = getenv("CHAOS_FAULT");
    char mode[16];
    int rank, graph, compute;
    long k;
    if (!v || !*v || !strcmp(v, "none"))
        return;
    CHECK(sscanf(v, "%15[a-z]:%d:%d:%d:%ld", mode, &rank, &graph, &compute, &k) == 5 &&
          rank >= 0 && graph >= 0 && compute >= 0,
          "CHAOS_FAULT=%s: expected MODE:RANK:GRAPH:COMPUTE:K", v);
    F->mode = -1;
    for (int m = 0; m < 4; m++)
        if (!strcmp(mode, mode_names[m]))
            F->mode = m;
    CHECK(F->mode >= 0, "CHAOS_FAULT=%s: MODE is kill, stop, corrupt or hang", v);
    F->armed = 1;
    F->rank = rank % s->nranks;
    F->graph = graph % s->ngraphs;
    F->compute = compute % s->graph[F->graph].ncomputes;
    F->k = k;
}

/* What happened on this rank. */
typedef struct outcome {
    const char *kind;          /* "ok", "error", "wrong" */
    char phase[64];
    cask_status status;
    double t;
    char msg[1024];
    int computes;
    uint64_t digest;
    int barriers_lost;         /* barriers that failed on a loss, gone on from (go_on) */
} outcome;

static void failed(outcome *o, const char *phase, cask_status st, double t, const char *msg)
{
    if (strcmp(o->kind, "ok"))
        return;   /* the first one tells */
    o->kind = "error";
    snprintf(o->phase, sizeof o->phase, "%s", phase);
    o->status = st;
    o->t = t;
    snprintf(o->msg, sizeof o->msg, "%s", msg);
}

static void wrong(outcome *o, const char *phase, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void wrong(outcome *o, const char *phase, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d] chaos: WRONG RESULT in %s: %s\n", dt_rank_, phase, msg);
    if (!strcmp(o->kind, "wrong"))
        return;
    o->kind = "wrong";
    snprintf(o->phase, sizeof o->phase, "%s", phase);
    snprintf(o->msg, sizeof o->msg, "%s", msg);
}

/* Compares n elements of got with want; says where the first difference is. */
static int same(const uint64_t *got, const uint64_t *want, size_t n, size_t *at)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            *at = i;
            return 0;
        }
    return 1;
}

typedef struct chaos_case {
    cg_spec s;
    cask_runtime *rt;
    cask_dist *dist;
    cask_kernel *kernel;
    int rank;
    int gpus;                      /* $CHAOS_SIM_GPUS: simulated GPUs per rank, 0: none */
    int host_route;                /* $CHAOS_SIM_GPUS=Nh: chunks between ranks by host */
    int go_on;                     /* $CHAOS_BARRIER_GO_ON: a barrier failed on a loss is
                                      noted and the program goes on to its next compute */
    uint64_t *mem[CG_MAXDATA];     /* the owner's memory of each datum (else NULL) */
    cask_data *d[CG_MAXDATA];
    uint64_t *state[CG_MAXDATA];   /* the replay */
    uint64_t *dest[CG_MAXGATHERS]; /* gather destinations rooted here */
} chaos_case;

static cask_access_mode cask_mode(int m)
{
    return m == CG_R ? CASK_READ : m == CG_W ? CASK_WRITE : CASK_RW;
}

/* After compute c of graph gi returned CASK_OK: owned data and gathers rooted here. */
static void check(chaos_case *c, int gi, int comp, outcome *o)
{
    const cg_spec *s = &c->s;
    const cg_graph *g = &s->graph[gi];
    char phase[64];
    snprintf(phase, sizeof phase, "graph %d compute %d", gi, comp);
    for (int i = 0; i < s->ndata; i++) {
        if (!c->mem[i])
            continue;
        void *p;
        CHECK_OK(cask_data_acquire(c->d[i], CASK_READ, &p), "acquire datum %d", i);
        size_t at;
        if (!same(p, c->state[i], s->len[i], &at))
            wrong(o, phase, "datum %d (%zu words) at its owner: word %zu is %016llx, the replay "
                  "says %016llx", i, s->len[i], at, (unsigned long long)((uint64_t *)p)[at],
                  (unsigned long long)c->state[i][at]);
        o->digest = cg_fnv(o->digest, p, s->len[i] * sizeof(uint64_t));
        CHECK_OK(cask_data_release(c->d[i]), "release datum %d", i);
    }
    for (int k = 0; k < g->ngathers; k++) {
        if (g->gather_root[k] != c->rank)
            continue;
        uint32_t gid = g->gather_gid[k];
        size_t at;
        if (!same(c->dest[k], c->state[gid], s->len[gid], &at))
            wrong(o, phase, "datum %u gathered to rank %d (owner %d): word %zu is %016llx, "
                  "the replay says %016llx", gid, c->rank, s->owner[gid], at,
                  (unsigned long long)c->dest[k][at], (unsigned long long)c->state[gid][at]);
        o->digest = cg_fnv(o->digest, c->dest[k], s->len[gid] * sizeof(uint64_t));
    }
}

/* Whether task k of graph gi runs on a (simulated) GPU: about half of them, from the
 * seed, the same on every rank. */
static int gpu_task(uint64_t seed, int gi, int k)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + (uint64_t)gi * 0xbf58476d1ce4e5b9ull +
                 (uint64_t)k * 0x94d049bb133111ebull;
    z ^= z >> 31;
    z *= 0xd6e8feb86659fd93ull;
    return (int)((z >> 40) & 1);
}

/* Builds, plans and computes graph gi; returns 0 once a call failed. */
static int run_graph(chaos_case *c, int gi, outcome *o)
{
    const cg_spec *s = &c->s;
    const cg_graph *g = &s->graph[gi];
    chaos_fault *F = &fault_;
    cask_dist_graph *dg;
    CHECK_OK(cask_dist_graph_create(c->dist, &dg), "graph create");
    for (int k = 0; k < g->ntasks; k++) {
        const cg_task *t = &g->task[k];
        cask_access acc[CG_MAXACC];
        for (int i = 0; i < t->nacc; i++)
            acc[i] = (cask_access){ c->d[t->gid[i]], cask_mode(t->mode[i]) };
        chaos_args a = { .t = *t, .graph = gi, .index = k };
        char name[32];
        snprintf(name, sizeof name, "g%d.t%d", gi, k);
        cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_NAME, .kernel = c->kernel,
                             .access = acc, .naccess = t->nacc, .args = &a,
                             .args_size = sizeof a, .name = name };
        if (c->gpus && gpu_task(s->seed, gi, k)) {
            d.field_mask |= CASK_TASK_WHERE;
            d.where = CASK_WHERE_GPU;
        }
        CHECK_OK(cask_dist_graph_add_task(dg, &d, NULL), "add task %s", name);
    }
    for (int k = 0; k < g->ngathers; k++) {
        uint32_t gid = g->gather_gid[k];
        int root = g->gather_root[k];
        c->dest[k] = root == c->rank ? malloc(s->len[gid] * sizeof(uint64_t)) : NULL;
        CHECK(root != c->rank || c->dest[k], "out of memory");
        CHECK_OK(cask_dist_graph_gather(dg, c->d[gid], root, c->dest[k]), "gather %u", gid);
    }
    int ok = 1;
    char phase[64];
    snprintf(phase, sizeof phase, "plan graph %d", gi);
    double t0 = dt_now();
    cask_status st = cask_dist_graph_plan(dg);
    if (st) {
        failed(o, phase, st, dt_now() - t0, cask_dist_graph_error(dg));
        ok = 0;
    }
    cask_dist_graph_info info;
    if (ok && !cask_dist_graph_query(dg, &info)) {
        if (F->armed && F->graph == gi && F->k >= 0 && info.ntasks_here)
            F->ntasks_here = (long)info.ntasks_here;
        if (c->gpus)   /* what the case covers: chunks by the GPU route, as planned */
            printf("[rank %d] chaos: graph %d planned: %zu out, %zu in, %zu of them by the "
                   "GPU route\n", c->rank, gi, info.transfers_out, info.transfers_in,
                   info.transfers_gpu_ucx);
    }
    for (int comp = 0; ok && comp < g->ncomputes; comp++) {
        for (int k = 0; k < g->ngathers; k++)
            if (c->dest[k])
                memset(c->dest[k], 0xA5, s->len[g->gather_gid[k]] * sizeof(uint64_t));
        int hit_here = F->armed && F->me == F->rank && F->graph == gi && F->compute == comp;
        if (hit_here && F->ntasks_here)
            F->k = F->k % F->ntasks_here;
        atomic_store(&F->count, 0);
        F->cur_graph = gi;
        F->cur_compute = comp;
        printf("[rank %d] chaos: graph %d compute %d\n", c->rank, gi, comp);
        snprintf(phase, sizeof phase, "graph %d compute %d", gi, comp);
        t0 = dt_now();
        st = cask_dist_graph_compute(dg);
        if (st) {
            failed(o, phase, st, dt_now() - t0, cask_dist_graph_error(dg));
            ok = 0;
            break;
        }
        cg_replay_compute(s, gi, c->state);
        check(c, gi, comp, o);
        o->computes++;
        if (hit_here && (F->k < 0 || !F->ntasks_here))
            fire("after the compute");
        if (s->barrier) {
            snprintf(phase, sizeof phase, "barrier after graph %d compute %d", gi, comp);
            t0 = dt_now();
            if ((st = cask_dist_barrier(c->dist))) {
                if (c->go_on && st == CASK_ERR_PEER) {
                    o->barriers_lost++;
                    printf("[rank %d] chaos: %s: %s; going on\n", c->rank, phase,
                           cask_dist_error(c->dist));
                } else {
                    failed(o, phase, st, dt_now() - t0, cask_dist_error(c->dist));
                    ok = 0;
                }
            }
        }
    }
    CHECK_OK(cask_dist_graph_destroy(dg), "graph destroy");
    for (int k = 0; k < g->ngathers; k++) {
        free(c->dest[k]);
        c->dest[k] = NULL;
    }
    return ok;
}

/* The enum's name of a status (one word, for chaos.sh). */
static const char *status_name(cask_status st)
{
    static const char *const names[] = {
        "CASK_OK", "CASK_ERR_INVALID", "CASK_ERR_NOMEM", "CASK_ERR_CYCLE", "CASK_ERR_STATE",
        "CASK_ERR_BUSY", "CASK_ERR_TASK_FAILED", "CASK_ERR_UNSUPPORTED", "CASK_ERR_CUDA",
        "CASK_ERR_NCCL", "CASK_ERR_UCX", "CASK_ERR_HWLOC", "CASK_ERR_IO", "CASK_ERR_FORMAT",
        "CASK_ERR_NOT_FOUND", "CASK_ERR_CANCELLED", "CASK_ERR_PEER", "CASK_ERR_INTERNAL",
        "CASK_ERR_LAUNCH", "CASK_ERR_NOT_SPD"
    };
    _Static_assert(sizeof names / sizeof *names == CASK_STATUS_COUNT_, "a status without a name");
    return (unsigned)st < CASK_STATUS_COUNT_ ? names[st] : "unknown";
}

static void write_outcome(const char *dir, int rank, const outcome *o, cask_status fin)
{
    char text[2048];
    if (!strcmp(o->kind, "ok"))
        snprintf(text, sizeof text, "ok computes=%d digest=%016llx fin=%s barriers_lost=%d\n",
                 o->computes, (unsigned long long)o->digest, status_name(fin),
                 o->barriers_lost);
    else if (!strcmp(o->kind, "error"))
        snprintf(text, sizeof text, "error phase=%s status=%s computes=%d fin=%s t=%.3f msg=%s\n",
                 o->phase, status_name(o->status), o->computes, status_name(fin),
                 o->t, o->msg);
    else
        snprintf(text, sizeof text, "wrong phase=%s computes=%d fin=%s msg=%s\n", o->phase,
                 o->computes, status_name(fin), o->msg);
    for (char *p = text; *p; p++)   /* one line */
        if (*p == '\n' && p[1])
            *p = ' ';
    /* phase names have spaces: chaos.sh reads fields by name, msg last */
    write_file(dir, "out", rank, text);
    printf("[rank %d] chaos: %s", rank, text);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: test_dist_chaos SEED (see tests/dist/chaos.sh)\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[1], NULL, 0);
    const char *dir = getenv("CHAOS_DIR");
    const char *pt = getenv("CHAOS_PEER_TIMEOUT_MS");
    const char *go = getenv("CHAOS_BARRIER_GO_ON");
    static chaos_case c;
    c.go_on = go && !strcmp(go, "1");
    cg_spec *s = &c.s;

    int ncpu, steal;
    cg_settings(seed, &ncpu, &steal);
    const char *sg = getenv("CHAOS_SIM_GPUS");
    c.gpus = sg && atoi(sg) > 0 ? atoi(sg) : 0;
    c.host_route = c.gpus && strchr(sg, 'h');
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND | CASK_CONFIG_NGPU,
                        .ncpu = ncpu, .bind = 0, .ngpu = 0 };
    if (c.gpus) {
        cfg.field_mask |= CASK_CONFIG_SIM_GPUS;
        cfg.sim_gpus = 1;
        cfg.ngpu = c.gpus;
        if (!c.host_route)
            setenv("CASK_DIST_SIM_GPU_UCX", "1", 1);   /* the GPU route between the ranks */
    }
    CHECK_OK(cask_init(&cfg, &c.rt), "cask_init");
    cask_dist_config dc = { .field_mask = CASK_DIST_PEER_TIMEOUT_MS | CASK_DIST_HEARTBEAT_MS |
                                          CASK_DIST_STEAL,
                            .peer_timeout_ms = pt && *pt ? atoi(pt) : 4000, .heartbeat_ms = 250,
                            .steal = steal };
    int envrank = dt_launcher_rank();
    const char *pts = getenv("CHAOS_PEER_TIMEOUTS");
    if (pts && *pts && envrank >= 0) {
        const char *q = pts;
        for (int i = 0, me = envrank; q; i++) {
            if (i == me && atoi(q) > 0)
                dc.peer_timeout_ms = atoi(q);
            if ((q = strchr(q, ',')))
                q++;
        }
    }
    char pid[32];
    snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (envrank >= 0)
        write_file(dir, "boot", envrank, pid);
    double t0 = dt_now();
    cask_status st = cask_dist_init(c.rt, &dc, &c.dist);
    if (st) {
        /* a rank lost while joining: a clean error is all there can be */
        outcome o = { .kind = "ok" };
        char err[1024];
        cask_runtime_error(c.rt, err, sizeof err);
        failed(&o, "init", st, dt_now() - t0, err);
        dt_rank_ = envrank;
        fprintf(stderr, "[rank %d] chaos: cask_dist_init: %s\n", dt_rank_, err);
        CHECK_OK(cask_shutdown(c.rt), "cask_shutdown");
        if (envrank >= 0)
            write_outcome(dir, dt_rank_, &o, CASK_OK);
        return 0;
    }
    c.rank = dt_rank_ = cask_dist_rank(c.dist);
    write_file(dir, "pid", c.rank, pid);

    cg_generate(s, seed, cask_dist_size(c.dist));
    if (c.rank == 0) {
        printf("[rank 0] chaos: ");
        if (c.gpus)
            printf("%d simulated GPUs a rank, %s route; ", c.gpus,
                   c.host_route ? "host" : "GPU");
        cg_describe(s, stdout);
    }
    chaos_fault *F = &fault_;
    F->me = c.rank;
    F->dir = dir;
    parse_fault(F, s);
    cask_kernel_desc kd = { .name = "chaos", .cpu = k_chaos };
    CHECK_OK(cask_kernel_register(c.rt, &kd, &c.kernel), "register the kernel");
    for (int i = 0; i < s->ndata; i++) {
        size_t bytes = s->len[i] * sizeof(uint64_t);
        c.state[i] = malloc(bytes);
        CHECK(c.state[i], "out of memory");
        cg_initial(s, (uint32_t)i, c.state[i]);
        if (s->owner[i] == c.rank) {
            c.mem[i] = malloc(bytes);
            CHECK(c.mem[i], "out of memory");
            memcpy(c.mem[i], c.state[i], bytes);
        }
        CHECK_OK(cask_dist_data_create(c.dist, bytes, s->owner[i], c.mem[i], &c.d[i]),
                 "datum %d", i);
    }

    outcome o = { .kind = "ok", .digest = CG_FNV0 };
    for (int gi = 0; gi < s->ngraphs; gi++)
        if (!run_graph(&c, gi, &o))
            break;
    /* leaving: a closing barrier (its message names a rank lost since the last compute),
     * then finalize */
    cask_status fin = CASK_OK;
    if (!strcmp(o.kind, "error")) {
        fin = cask_dist_finalize(c.dist);
    } else {
        double t1 = dt_now();
        fin = cask_dist_barrier(c.dist);
        if (fin && c.go_on && fin == CASK_ERR_PEER)
            o.barriers_lost++;   /* (fin tells it) */
        else if (fin && !strcmp(o.kind, "ok"))
            failed(&o, "closing barrier", fin, dt_now() - t1, cask_dist_error(c.dist));
        cask_status f2 = cask_dist_finalize(c.dist);
        if (!fin)
            fin = f2;
    }
    CHECK_OK(cask_shutdown(c.rt), "cask_shutdown");
    write_outcome(dir, c.rank, &o, fin);
    for (int i = 0; i < s->ndata; i++) {
        free(c.mem[i]);
        free(c.state[i]);
    }
    return 0;
}
