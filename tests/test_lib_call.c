/* tests/test_lib_call.c: cask_task_lib_call runs calls into threaded libraries on one
 * thread of the runtime, always the same, one call at a time, and returns after the call
 * (suite unit). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include "cask/cask.h"
#include "test_helpers.h"

#define NTASKS 64

static pthread_t callers[NTASKS], workers[NTASKS];
static atomic_int in_call, most_in_call, next;

typedef struct { int slot; int done; } call_arg;

static void lib_fn(void *p)
{
    call_arg *a = p;
    int now = atomic_fetch_add(&in_call, 1) + 1;
    for (int m = atomic_load(&most_in_call); now > m && !atomic_compare_exchange_weak(&most_in_call, &m, now);) {}
    callers[a->slot] = pthread_self();
    struct timespec ts = { 0, 200000 };   /* 0.2 ms: long enough for calls to overlap */
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&in_call, 1);
    a->done = 1;
}

static cask_status task(cask_task_ctx *ctx)
{
    call_arg a = { atomic_fetch_add(&next, 1), 0 };
    if (a.slot >= NTASKS) return cask_task_fail(ctx, "too many tasks");
    workers[a.slot] = pthread_self();
    cask_status st = cask_task_lib_call(ctx, lib_fn, &a);
    if (st) return st;
    return a.done ? CASK_OK : cask_task_fail(ctx, "returned before the call ended");
}

TestSuite(lib_call, .fini = leak_check, .timeout = 60);

Test(lib_call, calls_run_on_one_runtime_thread_one_at_a_time)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU, .ncpu = 4, .ngpu = 0 };
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "lib_caller", .cpu = task };
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    for (int i = 0; i < NTASKS; i++) {
        cask_task_desc td = { .kernel = k };
        cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
    }
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    cr_assert_eq(cask_task_lib_call(NULL, lib_fn, NULL), CASK_ERR_INVALID);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    cr_assert_eq(atomic_load(&next), NTASKS);
    int nworkers = 0;
    for (int i = 0; i < NTASKS; i++) {
        cr_expect(pthread_equal(callers[i], callers[0]), "call %d ran on another thread", i);
        cr_expect(!pthread_equal(callers[i], workers[i]), "call %d ran on its task's worker", i);
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= pthread_equal(workers[j], workers[i]);
        nworkers += !seen;
    }
    cr_log_info("lib_call: %d calls from %d workers, at most %d at once", NTASKS, nworkers,
                atomic_load(&most_in_call));
    cr_expect_eq(atomic_load(&most_in_call), 1);
}
