/* test_async.c: asynchronous tasks (cask_task_async_begin / _end): the task ends when
 * another thread says so, its successors wait for that, its buffers stay put, a
 * failure reported at the end fails the graph; on CPU workers and simulated GPUs. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include "test_helpers.h"

TestSuite(async, .fini = leak_check, .timeout = 120);

/* ---- a thread that ends tasks later, in the order it was given them ---- */

#define MAXQ 4096
typedef struct pending {
    cask_task_async *tok;
    int *buf;             /* the task's buffer: written just before the end */
    int value;
    cask_status st;
} pending;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pending q[MAXQ];
    int head, tail, stop;
    long delay_us;
} ender = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static atomic_int ended_count, order_errors;

static void *ender_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ender.mu);
    for (;;) {
        while (ender.head == ender.tail && !ender.stop)
            pthread_cond_wait(&ender.cv, &ender.mu);
        if (ender.head == ender.tail)
            break;
        pending p = ender.q[ender.head++ % MAXQ];
        pthread_mutex_unlock(&ender.mu);
        if (ender.delay_us)
            usleep((useconds_t)ender.delay_us);
        if (p.buf)
            *p.buf = p.value;
        atomic_fetch_add(&ended_count, 1);
        cask_task_async_end(p.tok, p.st, p.st ? "the transfer broke" : NULL);
        pthread_mutex_lock(&ender.mu);
    }
    pthread_mutex_unlock(&ender.mu);
    return NULL;
}

static pthread_t ender_start(long delay_us)
{
    ender.head = ender.tail = ender.stop = 0;
    ender.delay_us = delay_us;
    atomic_store(&ended_count, 0);
    atomic_store(&order_errors, 0);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, ender_main, NULL), 0);
    return th;
}

static void ender_stop(pthread_t th)
{
    pthread_mutex_lock(&ender.mu);
    ender.stop = 1;
    pthread_cond_broadcast(&ender.cv);
    pthread_mutex_unlock(&ender.mu);
    pthread_join(th, NULL);
}

typedef struct async_args {
    int value;
    int fail;             /* end with an error */
    int now;              /* end before returning, on the kernel's own thread */
} async_args;

/* Writes args.value into buffer 0 later (through the ender), and ends then. */
static cask_status async_write(cask_task_ctx *ctx)
{
    const async_args *a = cask_task_args(ctx, NULL);
    int *buf = cask_task_buffer(ctx, 0);
    cask_task_async *tok = cask_task_async_begin(ctx);
    cr_assert_not_null(tok);
    if (a->now) {
        *buf = a->value;
        atomic_fetch_add(&ended_count, 1);
        cask_task_async_end(tok, CASK_OK, NULL);
        return CASK_OK;
    }
    pthread_mutex_lock(&ender.mu);
    ender.q[ender.tail++ % MAXQ] = (pending){ tok, buf, a->value,
                                              a->fail ? CASK_ERR_PEER : CASK_OK };
    pthread_cond_broadcast(&ender.cv);
    pthread_mutex_unlock(&ender.mu);
    return CASK_OK;
}

/* Reads buffer 0 (written by an asynchronous task) and checks it holds args.value. */
static cask_status check_value(cask_task_ctx *ctx)
{
    const async_args *a = cask_task_args(ctx, NULL);
    const int *buf = cask_task_buffer(ctx, 0);
    if (*buf != a->value)
        atomic_fetch_add(&order_errors, 1);
    return CASK_OK;
}

static void chain(int ncpu, int sim_gpus, long delay_us, int ntasks, int now)
{
    cask_runtime *rt = start_runtime(ncpu, sim_gpus);
    cask_kernel *kw = kernel(rt, "async_write", async_write);
    cask_kernel *kc = kernel(rt, "check_value", check_value);
    cask_data **d = calloc((size_t)ntasks, sizeof *d);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    for (int i = 0; i < ntasks; i++) {
        cr_assert_eq(cask_data_create(rt, sizeof(int), &d[i]), CASK_OK);
        async_args a = { .value = 1000 + i, .now = now };
        cask_access w = { d[i], CASK_WRITE }, r = { d[i], CASK_READ };
        cask_task_desc tw = { .field_mask = CASK_TASK_ARGS, .kernel = kw, .access = &w,
                              .naccess = 1, .args = &a, .args_size = sizeof a };
        cask_task_desc tc = { .field_mask = CASK_TASK_ARGS, .kernel = kc, .access = &r,
                              .naccess = 1, .args = &a, .args_size = sizeof a };
        cr_assert_eq(cask_graph_add_task(g, &tw, NULL), CASK_OK);
        cr_assert_eq(cask_graph_add_task(g, &tc, NULL), CASK_OK);
    }
    pthread_t th = ender_start(delay_us);
    for (int run = 0; run < 2; run++) {
        atomic_store(&ended_count, 0);
        cask_status st = cask_graph_compute(g);
        cr_assert_eq(st, CASK_OK, "run %d: %s: %s", run, cask_status_string(st),
                     cask_graph_error(g));
        cr_assert_eq(atomic_load(&ended_count), ntasks,
                     "the graph finished before its asynchronous tasks ended");
        cr_assert_eq(atomic_load(&order_errors), 0,
                     "a successor ran before the asynchronous task it waits for ended");
    }
    ender_stop(th);
    for (int i = 0; i < ntasks; i++) {
        int *p;
        cr_assert_eq(cask_data_acquire(d[i], CASK_READ, (void **)&p), CASK_OK);
        cr_assert_eq(*p, 1000 + i);
        cask_data_release(d[i]);
        cask_data_destroy(d[i]);
    }
    free(d);
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

Test(async, successor_waits_for_the_end_from_another_thread)
{
    chain(2, 0, 20000, 3, 0);
}

Test(async, many_tasks_end_on_another_thread)
{
    chain(2, 0, 0, 2000, 0);
}

Test(async, end_before_the_kernel_returns)
{
    chain(2, 0, 0, 200, 1);
}

Test(async, on_simulated_gpus)
{
    /* the kernels have only CPU code: on a simulated GPU they run there too, and the
     * GPU worker finishes them when they end */
    chain(1, 2, 1000, 100, 0);
}

Test(async, a_failed_end_fails_the_graph_and_skips_successors)
{
    cask_runtime *rt = start_runtime(2, 0);
    cask_kernel *kw = kernel(rt, "async_write", async_write);
    cask_kernel *kc = kernel(rt, "check_value", check_value);
    cask_data *d;
    cr_assert_eq(cask_data_create(rt, sizeof(int), &d), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    async_args a = { .value = 5, .fail = 1 };
    cask_access w = { d, CASK_WRITE }, r = { d, CASK_READ };
    cask_task_desc tw = { .field_mask = CASK_TASK_ARGS | CASK_TASK_NAME, .kernel = kw,
                          .access = &w, .naccess = 1, .args = &a, .args_size = sizeof a,
                          .name = "recv#7" };
    cask_task_desc tc = { .field_mask = CASK_TASK_ARGS, .kernel = kc, .access = &r,
                          .naccess = 1, .args = &a, .args_size = sizeof a };
    cr_assert_eq(cask_graph_add_task(g, &tw, NULL), CASK_OK);
    cr_assert_eq(cask_graph_add_task(g, &tc, NULL), CASK_OK);
    pthread_t th = ender_start(1000);
    cask_status st = cask_graph_compute(g);
    ender_stop(th);
    cr_assert_eq(st, CASK_ERR_PEER, "got %s", cask_status_string(st));
    const char *e = cask_graph_error(g);
    cr_assert(strstr(e, "recv#7") && strstr(e, "the transfer broke"), "error: %s", e);
    cr_assert_eq(atomic_load(&order_errors), 0);
    cask_graph_info info;
    cr_assert_eq(cask_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks_run, 1, "the successor of the failed task ran (%zu tasks ran)",
                 info.ntasks_run);
    cask_graph_destroy(g);
    cask_data_destroy(d);
    cask_shutdown(rt);
}
