/* test_dynamic.c: tasks added to a graph while it runs: from four threads at
 * once, from a task, and what the graph looks like afterwards. The rule under test: adds
 * are serialised, and their access-mode dependencies follow the order of that
 * serialisation as a sequential build would. */
#include <pthread.h>
#include "test_helpers.h"

#define ND 8            /* data handles */
#define NTHREADS 4
#define PER_THREAD 400
#define NSTATIC 64
#define MAXT (NSTATIC + NTHREADS * PER_THREAD + 16)

/* Task arguments: its id, and which handles it uses how. */
typedef struct targ {
    int id;
    int nacc;
    int which[2];
    int mode[2];
} targ;

static uint64_t vals[ND];          /* the handles' memory */
static uint64_t seen[MAXT];        /* what each task read */
static _Atomic int nran;

/* Writers fold their id into the value (order matters); readers record what they saw. */
static cask_status mix_task(cask_task_ctx *ctx)
{
    const targ *a = cask_task_args(ctx, NULL);
    uint64_t h = 0;
    for (int i = 0; i < a->nacc; i++) {
        uint64_t *v = cask_task_buffer(ctx, i);
        h = mix(h, *v);
        if (a->mode[i] & CASK_WRITE)
            *v = mix(*v, (uint64_t)a->id);
    }
    seen[a->id] = h;
    atomic_fetch_add(&nran, 1);
    if (a->id % 5 == 0)
        spin_ns(3000);   /* keep the graph running while others add */
    return CASK_OK;
}

typedef struct shared {
    cask_graph *g;
    cask_kernel *k;
    cask_data *d[ND];
    pthread_mutex_t order_lock;    /* the test's record of the serialisation order */
    targ order[MAXT];
    int norder;
} shared;

static void make_args(uint64_t *rng, int id, targ *a)
{
    a->id = id;
    a->nacc = 1 + (int)(rng_next(rng) % 2);
    a->which[0] = (int)(rng_next(rng) % ND);
    a->which[1] = (a->which[0] + 1 + (int)(rng_next(rng) % (ND - 1))) % ND;
    for (int i = 0; i < 2; i++) {
        uint64_t r = rng_next(rng) % 3;
        a->mode[i] = r == 0 ? CASK_READ : r == 1 ? CASK_WRITE : CASK_RW;
    }
}

static cask_status add_recorded(shared *sh, const targ *a)
{
    cask_access acc[2];
    for (int i = 0; i < a->nacc; i++) {
        acc[i].data = sh->d[a->which[i]];
        acc[i].mode = (cask_access_mode)a->mode[i];
    }
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = sh->k, .access = acc,
                          .naccess = a->nacc, .args = a, .args_size = sizeof *a };
    pthread_mutex_lock(&sh->order_lock);
    cask_status st = cask_graph_add_task(sh->g, &td, NULL);
    if (st == CASK_OK)
        sh->order[sh->norder++] = *a;
    pthread_mutex_unlock(&sh->order_lock);
    return st;
}

typedef struct thread_arg {
    shared *sh;
    int t;
    cask_status st;
} thread_arg;

static void *adder(void *p)
{
    thread_arg *ta = p;
    uint64_t rng = 1000 + (uint64_t)ta->t;
    for (int i = 0; i < PER_THREAD && !ta->st; i++) {
        targ a;
        make_args(&rng, NSTATIC + ta->t * PER_THREAD + i, &a);
        ta->st = add_recorded(ta->sh, &a);
        if (i % 50 == 0)
            sched_yield();
    }
    return NULL;
}

/* The expected result: the recorded adds run one after the other. */
static void replay(const shared *sh, uint64_t *v, uint64_t *exp_seen)
{
    for (int d = 0; d < ND; d++)
        v[d] = (uint64_t)d * 77;
    for (int n = 0; n < sh->norder; n++) {
        const targ *a = &sh->order[n];
        uint64_t h = 0;
        for (int i = 0; i < a->nacc; i++) {
            uint64_t *x = &v[a->which[i]];
            h = mix(h, *x);
            if (a->mode[i] & CASK_WRITE)
                *x = mix(*x, (uint64_t)a->id);
        }
        exp_seen[a->id] = h;
    }
}

Test(dynamic, submission_from_4_threads_while_running_matches_a_sequential_replay, .timeout = 120)
{
    cask_runtime *rt = start_runtime(2, 0);
    static shared sh;
    memset(&sh, 0, sizeof sh);
    pthread_mutex_init(&sh.order_lock, NULL);
    sh.g = graph(rt);
    sh.k = kernel(rt, "mix", mix_task);
    for (int d = 0; d < ND; d++) {
        vals[d] = (uint64_t)d * 77;
        cr_assert_eq(cask_data_register(rt, &vals[d], sizeof vals[d], &sh.d[d]), CASK_OK);
    }
    memset(seen, 0, sizeof seen);
    atomic_store(&nran, 0);
    uint64_t rng = 7;
    for (int i = 0; i < NSTATIC; i++) {   /* a static part, built before submit */
        targ a;
        make_args(&rng, i, &a);
        cr_assert_eq(add_recorded(&sh, &a), CASK_OK);
    }
    cr_assert_eq(cask_graph_submit(sh.g), CASK_OK);
    pthread_t th[NTHREADS];
    thread_arg ta[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        ta[t] = (thread_arg){ &sh, t, CASK_OK };
        cr_assert_eq(pthread_create(&th[t], NULL, adder, &ta[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        cr_assert_eq(ta[t].st, CASK_OK, "thread %d: add while running: %s", t,
                     cask_status_string(ta[t].st));
    }
    cask_status st = cask_graph_wait(sh.g);
    cr_assert_eq(st, CASK_OK, "%s", cask_graph_error(sh.g));
    int total = NSTATIC + NTHREADS * PER_THREAD;
    cr_assert_eq(atomic_load(&nran), total, "tasks run %d, added %d", atomic_load(&nran), total);
    uint64_t v[ND];
    static uint64_t exp_seen[MAXT];
    replay(&sh, v, exp_seen);
    for (int i = 0; i < total; i++)
        cr_assert_eq(seen[i], exp_seen[i], "task %d read other values than in the replay", i);
    for (int d = 0; d < ND; d++)
        cr_assert_eq(vals[d], v[d], "data %d differs from the replay", d);

    /* the tasks added while running are part of the graph now: a second run does all */
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(sh.g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, (size_t)total);
    atomic_store(&nran, 0);
    compute_ok(sh.g);
    cr_assert_eq(atomic_load(&nran), total);
    cr_assert_eq(cask_graph_destroy(sh.g), CASK_OK);
    for (int d = 0; d < ND; d++)
        cr_assert_eq(cask_data_destroy(sh.d[d]), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    pthread_mutex_destroy(&sh.order_lock);
    leak_check();
}

/* A task adds the next one to its own graph (a chain grown from inside): wait returns
 * only when the last one ran. */
static cask_graph *grow_graph;
static cask_kernel *grow_kernel;
static _Atomic int grown;

static cask_status grow_task(cask_task_ctx *ctx)
{
    int n = arg_int(ctx);
    atomic_fetch_add(&grown, 1);
    if (n <= 0)
        return CASK_OK;
    n--;
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = grow_kernel, .args = &n,
                          .args_size = sizeof n };
    cask_status st = cask_graph_add_task(grow_graph, &td, NULL);
    return st ? cask_task_fail(ctx, "add: %s", cask_status_string(st)) : CASK_OK;
}

Test(dynamic, wait_waits_for_tasks_added_by_tasks, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    grow_graph = graph(rt);
    grow_kernel = kernel(rt, "grow", grow_task);
    atomic_store(&grown, 0);
    int n = 500;
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = grow_kernel, .args = &n,
                          .args_size = sizeof n };
    cr_assert_eq(cask_graph_add_task(grow_graph, &td, NULL), CASK_OK);
    compute_ok(grow_graph);
    cr_assert_eq(atomic_load(&grown), 501, "wait returned before the added tasks ran");
    cr_assert_eq(cask_graph_destroy(grow_graph), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

/* Submitting an empty graph and adding to it: the tasks run before wait returns, and a
 * reader added after a writer sees the writer's value (it waited for it). */
static cask_status set_task(cask_task_ctx *ctx)
{
    spin_ns(200000);
    *(int *)cask_task_buffer(ctx, 0) = arg_int(ctx);
    return CASK_OK;
}

static int got;
static cask_status get_task(cask_task_ctx *ctx)
{
    got = *(int *)cask_task_buffer(ctx, 0);
    return CASK_OK;
}

Test(dynamic, a_reader_added_while_running_waits_for_the_running_writer, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    cask_kernel *set = kernel(rt, "set", set_task), *get = kernel(rt, "get", get_task);
    int x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    for (int i = 1; i <= 20; i++) {
        int v = i * 3;
        cask_access wa = { d, CASK_WRITE }, ra = { d, CASK_READ };
        cask_task_desc w = { .field_mask = CASK_TASK_ARGS, .kernel = set, .access = &wa,
                             .naccess = 1, .args = &v, .args_size = sizeof v };
        cask_task_desc r = { .kernel = get, .access = &ra, .naccess = 1 };
        got = -1;
        cr_assert_eq(cask_graph_add_task(g, &w, NULL), CASK_OK);
        cask_task *rt_task;
        cr_assert_eq(cask_graph_add_task(g, &r, &rt_task), CASK_OK);
        cask_future *f;
        cr_assert_eq(cask_task_future(rt_task, &f), CASK_OK);
        cr_assert_eq(cask_future_wait(f), CASK_OK);
        cr_assert_eq(got, v, "round %d: the reader saw %d, not the writer's %d", i, got, v);
    }
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(d), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

Test(dynamic, adding_after_wait_ended_is_a_new_build, .timeout = 60)
{
    cask_runtime *rt = start_runtime(1, 0);
    grow_graph = graph(rt);
    grow_kernel = kernel(rt, "grow", grow_task);
    atomic_store(&grown, 0);
    int n = 0;
    cask_task_desc td = { .field_mask = CASK_TASK_ARGS, .kernel = grow_kernel, .args = &n,
                          .args_size = sizeof n };
    cr_assert_eq(cask_graph_submit(grow_graph), CASK_OK);
    cr_assert_eq(cask_graph_add_task(grow_graph, &td, NULL), CASK_OK);
    cr_assert_eq(cask_graph_wait(grow_graph), CASK_OK);
    cr_assert_eq(atomic_load(&grown), 1);
    cr_assert_eq(cask_graph_add_task(grow_graph, &td, NULL), CASK_OK);   /* idle: builds */
    cr_assert_eq(atomic_load(&grown), 1, "a task added to an idle graph ran");
    compute_ok(grow_graph);
    cr_assert_eq(atomic_load(&grown), 3);
    cr_assert_eq(cask_graph_destroy(grow_graph), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}

/* A task refused while the graph runs (its data is held by the user) is not part of the
 * graph: the next task added takes its place, and neither this run nor the next runs
 * anything but the tasks added. */
static _Atomic int bumps;
static cask_status bump_task(cask_task_ctx *ctx)
{
    (void)ctx;
    atomic_fetch_add(&bumps, 1);
    return CASK_OK;
}

Test(dynamic, a_task_refused_while_running_leaves_no_trace, .timeout = 60)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_graph *g = graph(rt);
    cask_kernel *bump = kernel(rt, "bump", bump_task);
    int y = 0;
    cask_data *held;
    cr_assert_eq(cask_data_register(rt, &y, sizeof y, &held), CASK_OK);
    void *host;
    cr_assert_eq(cask_data_acquire(held, CASK_READ, &host), CASK_OK);
    atomic_store(&bumps, 0);
    cr_assert_eq(cask_graph_submit(g), CASK_OK);
    cask_access wa = { held, CASK_WRITE };
    cask_task_desc refused = { .kernel = bump, .access = &wa, .naccess = 1 };
    cask_task_desc ok = { .kernel = bump };
    cr_assert_eq(cask_graph_add_task(g, &ok, NULL), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &refused, NULL), CASK_ERR_BUSY);
    cr_assert_eq(cask_graph_add_task(g, &ok, NULL), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &refused, NULL), CASK_ERR_BUSY);
    cr_assert_eq(cask_graph_wait(g), CASK_OK);
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, 2, "%zu tasks", (size_t)info.ntasks);
    cr_assert_eq(atomic_load(&bumps), 2);
    compute_ok(g);   /* the tasks added while it ran are the graph now */
    cr_assert_eq(atomic_load(&bumps), 4, "the second run ran %d tasks", atomic_load(&bumps) - 2);
    cr_assert_eq(cask_data_release(held), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_data_destroy(held), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    leak_check();
}
