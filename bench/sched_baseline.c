/* bench/sched_baseline.c: bench-sched's baseline: the same empty task bodies called by
 * plain pthreads, persistent threads over a static split of each shape with barriers
 * between its steps, and no bookkeeping at all: the floor a scheduler is measured
 * against. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched_bench.h"
#include "common/timing.h"

typedef struct baseline {
    enum shape shape;
    int nthreads;
    long tasks;          /* children for fanout, tasks otherwise */
    int chains;
    const dag *d;
    int reps;
    pthread_barrier_t barrier;
    double *times;
} baseline;

typedef struct thread_arg {
    baseline *b;
    int id;
} thread_arg;

static void run_range(long begin, long end)
{
    for (long i = begin; i < end; i++)
        bench_empty_fn();
}

static void split(long n, int parts, int id, long *begin, long *end)
{
    *begin = n * id / parts;
    *end = n * (id + 1) / parts;
}

static void *baseline_thread(void *p)
{
    thread_arg *a = p;
    baseline *b = a->b;
    int id = a->id, P = b->nthreads;
    long begin, end;
    for (int r = -1; r < b->reps; r++) { /* r = -1: warm-up */
        pthread_barrier_wait(&b->barrier);
        double t0 = bench_now_s();
        switch (b->shape) {
        case INDEPENDENT:
            split(b->tasks, P, id, &begin, &end);
            run_range(begin, end);
            break;
        case FANOUT:
            if (id == 0)
                bench_empty_fn();
            pthread_barrier_wait(&b->barrier);
            split(b->tasks, P, id, &begin, &end);
            run_range(begin, end);
            pthread_barrier_wait(&b->barrier);
            if (id == 0)
                bench_empty_fn();
            break;
        case CHAINS: {
            long len = b->tasks / b->chains;
            split(b->chains, P, id, &begin, &end);
            run_range(begin * len, end * len);
            break;
        }
        case RANDOM:
            for (int l = 0; l < b->d->nlevels; l++) {
                long lb = b->d->level_start[l], le = b->d->level_start[l + 1];
                split(le - lb, P, id, &begin, &end);
                run_range(begin, end);
                pthread_barrier_wait(&b->barrier);
            }
            break;
        default:
            break;
        }
        pthread_barrier_wait(&b->barrier);
        if (id == 0 && r >= 0)
            b->times[r] = bench_now_s() - t0;
    }
    return NULL;
}

double bench_time_baseline(enum shape s, int workers, const options *o, const dag *d)
{
    baseline b = { .shape = s, .nthreads = workers, .tasks = o->tasks, .chains = o->chains,
                   .d = d, .reps = o->reps };
    b.times = calloc((size_t)o->reps, sizeof *b.times);
    pthread_barrier_init(&b.barrier, NULL, (unsigned)workers);
    pthread_t *th = malloc((size_t)workers * sizeof *th);
    thread_arg *args = malloc((size_t)workers * sizeof *args);
    for (int i = 1; i < workers; i++) {
        args[i] = (thread_arg){ &b, i };
        if (pthread_create(&th[i], NULL, baseline_thread, &args[i]) != 0) {
            fprintf(stderr, "bench-sched: pthread_create failed\n");
            exit(1);
        }
    }
    args[0] = (thread_arg){ &b, 0 };
    baseline_thread(&args[0]);
    for (int i = 1; i < workers; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&b.barrier);
    double m = bench_median(b.times, o->reps);
    free(b.times);
    free(th);
    free(args);
    return m;
}
