/* bench/sched_peers.c: bench-sched's peers for --mode bcd, on the same shapes and the same
 * task body as cask: StarPU (when meson found libstarpu: HAVE_STARPU) and OpenMP tasks
 * (when the compiler does OpenMP: _OPENMP). Each repetition creates, submits and runs the
 * whole shape and frees what it made, as cask's build + compute + destroy does; the median
 * of o->reps after a warm-up is returned.
 *  - StarPU: one codelet with a CPU function, tasks made with starpu_task_create and kept
 *    (destroy = 0) so that dependencies may name finished tasks, explicit dependencies
 *    with starpu_task_declare_deps_array, starpu_task_wait_for_all, then
 *    starpu_task_destroy for each; StarPU is started once per (shape, workers) with that
 *    many CPU workers and no accelerator.
 *  - OpenMP: tasks created by one thread in a parallel region of `workers` threads;
 *    dependencies with depend clauses on one byte per task (random, chains) or a taskwait
 *    (the fan-out's sink). */
#include <stdio.h>
#include <stdlib.h>

#include "sched_bench.h"
#include "common/timing.h"

/* What one repetition of a peer needs: the shape and its scratch (StarPU's task list,
 * OpenMP's dependency bytes). */
typedef struct peer_run {
    enum shape s;
    int workers;
    const options *o;
    const dag *d;
    void *scratch;
} peer_run;

/* One untimed repetition (pools, pages, caches), then o->reps timed ones: their median;
 * *ntasks as the last one counted. */
static inline double peer_time(long (*once)(const peer_run *), const peer_run *p, long *ntasks)
{
    double *v = malloc((size_t)p->o->reps * sizeof *v);
    if (!v) {
        fprintf(stderr, "bench-sched: out of memory\n");
        exit(1);
    }
    for (int r = -1; r < p->o->reps; r++) {
        double t0 = bench_now_s();
        *ntasks = once(p);
        if (r >= 0)
            v[r] = bench_now_s() - t0;
    }
    double m = bench_median(v, p->o->reps);
    free(v);
    return m;
}

#ifdef HAVE_STARPU
#include <starpu.h>

static void starpu_body(void *buffers[], void *arg)
{
    (void)buffers;
    (void)arg;
    bench_task_body();
}

static struct starpu_codelet empty_cl = {
    .cpu_funcs = { starpu_body },
    .nbuffers = 0,
    .name = "empty",
};

static struct starpu_task *sp_task(struct starpu_task **all, long *n)
{
    struct starpu_task *t = starpu_task_create();
    if (!t) {
        fprintf(stderr, "bench-sched: starpu_task_create failed\n");
        exit(1);
    }
    t->cl = &empty_cl;
    t->destroy = 0;
    all[(*n)++] = t;
    return t;
}

static void sp_submit(struct starpu_task *t)
{
    if (starpu_task_submit(t) != 0) {
        fprintf(stderr, "bench-sched: starpu_task_submit failed\n");
        exit(1);
    }
}

static long starpu_once(enum shape s, const options *o, const dag *d, struct starpu_task **all)
{
    long n = 0, T = o->tasks;
    switch (s) {
    case INDEPENDENT:
        for (long i = 0; i < T; i++)
            sp_submit(sp_task(all, &n));
        break;
    case FANOUT: {
        struct starpu_task *root = sp_task(all, &n);
        struct starpu_task *sink = sp_task(all, &n);
        sp_submit(root);
        for (long i = 0; i < T; i++) {
            struct starpu_task *t = sp_task(all, &n);
            starpu_task_declare_deps_array(t, 1, &root);
            sp_submit(t);
        }
        starpu_task_declare_deps_array(sink, (unsigned)T, all + 2);
        sp_submit(sink);
        break;
    }
    case CHAINS: {
        long len = T / o->chains;
        for (int c = 0; c < o->chains; c++) {
            struct starpu_task *prev = NULL;
            for (long i = 0; i < len; i++) {
                struct starpu_task *t = sp_task(all, &n);
                if (prev)
                    starpu_task_declare_deps_array(t, 1, &prev);
                sp_submit(t);
                prev = t;
            }
        }
        break;
    }
    case RANDOM:
        for (long i = 0; i < d->n; i++) {
            struct starpu_task *t = sp_task(all, &n);
            struct starpu_task *p[3];
            for (int j = 0; j < d->npred[i]; j++)
                p[j] = all[d->preds[i][j]];
            if (d->npred[i])
                starpu_task_declare_deps_array(t, d->npred[i], p);
            sp_submit(t);
        }
        break;
    default:
        break;
    }
    starpu_task_wait_for_all();
    for (long i = 0; i < n; i++)
        starpu_task_destroy(all[i]);
    return n;
}

static long starpu_run(const peer_run *p)
{
    return starpu_once(p->s, p->o, p->d, p->scratch);
}

int peer_starpu_available(void)
{
    return 1;
}

double peer_starpu(enum shape s, int workers, const options *o, const dag *d, long *ntasks)
{
    struct starpu_conf conf;
    starpu_conf_init(&conf);
    conf.ncpus = workers;
    conf.ncuda = 0;
    conf.nopencl = 0;
    if (starpu_init(&conf) != 0) {
        fprintf(stderr, "bench-sched: starpu_init failed\n");
        return -1;
    }
    struct starpu_task **all = malloc((size_t)(o->tasks + 2) * sizeof *all);
    if (!all) {
        fprintf(stderr, "bench-sched: out of memory\n");
        exit(1);
    }
    peer_run p = { .s = s, .workers = workers, .o = o, .d = d, .scratch = all };
    double m = peer_time(starpu_run, &p, ntasks);
    free(all);
    starpu_shutdown();
    return m;
}
#else
int peer_starpu_available(void)
{
    return 0;
}

double peer_starpu(enum shape s, int workers, const options *o, const dag *d, long *ntasks)
{
    (void)s, (void)workers, (void)o, (void)d, (void)ntasks;
    return -1;
}
#endif

#ifdef _OPENMP
#include <omp.h>

static long openmp_once(enum shape s, int workers, const options *o, const dag *d, char *tok)
{
    long n = 0, T = o->tasks;
#pragma omp parallel num_threads(workers)
#pragma omp single
    {
        switch (s) {
        case INDEPENDENT:
            for (long i = 0; i < T; i++) {
#pragma omp task
                bench_task_body();
            }
            n = T;
            break;
        case FANOUT:
#pragma omp task depend(out: tok[0])
            bench_task_body();
            for (long i = 0; i < T; i++) {
#pragma omp task depend(in: tok[0])
                bench_task_body();
            }
#pragma omp taskwait
#pragma omp task
            bench_task_body();
            n = T + 2;
            break;
        case CHAINS: {
            long len = T / o->chains;
            for (int c = 0; c < o->chains; c++)
                for (long i = 0; i < len; i++) {
#pragma omp task depend(inout: tok[c])
                    bench_task_body();
                }
            n = len * o->chains;
            break;
        }
        case RANDOM:
            for (long i = 0; i < d->n; i++) {
                const int32_t *p = d->preds[i];
                switch (d->npred[i]) {
                case 0:
#pragma omp task depend(out: tok[i])
                    bench_task_body();
                    break;
                case 1:
#pragma omp task depend(out: tok[i]) depend(in: tok[p[0]])
                    bench_task_body();
                    break;
                case 2:
#pragma omp task depend(out: tok[i]) depend(in: tok[p[0]], tok[p[1]])
                    bench_task_body();
                    break;
                default:
#pragma omp task depend(out: tok[i]) depend(in: tok[p[0]], tok[p[1]], tok[p[2]])
                    bench_task_body();
                    break;
                }
            }
            n = d->n;
            break;
        default:
            break;
        }
    }
    return n;
}

static long openmp_run(const peer_run *p)
{
    return openmp_once(p->s, p->workers, p->o, p->d, p->scratch);
}

int peer_openmp_available(void)
{
    return 1;
}

double peer_openmp(enum shape s, int workers, const options *o, const dag *d, long *ntasks)
{
    char *tok = calloc((size_t)o->tasks + 2, 1);
    if (!tok) {
        fprintf(stderr, "bench-sched: out of memory\n");
        exit(1);
    }
    peer_run p = { .s = s, .workers = workers, .o = o, .d = d, .scratch = tok };
    double m = peer_time(openmp_run, &p, ntasks);
    free(tok);
    return m;
}
#else
int peer_openmp_available(void)
{
    return 0;
}

double peer_openmp(enum shape s, int workers, const options *o, const dag *d, long *ntasks)
{
    (void)s, (void)workers, (void)o, (void)d, (void)ntasks;
    return -1;
}
#endif
