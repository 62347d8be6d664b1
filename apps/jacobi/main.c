/* apps/jacobi/main.c: cask-jacobi, a 2-D Jacobi solver of Laplace's equation (5-point
 * stencil, float32) on an N x N grid, through the public cask API only.
 *
 * The interior rows are cut into row blocks spread over the GPUs (or CPU workers). Each
 * block has its own data handles: the block (two buffers, old and new), and its first
 * and last rows as separate small "halo" handles that its task writes after every sweep
 * and its neighbours' tasks read in the next one. Nothing is exchanged by hand: the
 * runtime sees a task on GPU 1 read a halo last written on GPU 0 and moves it (a peer
 * copy over NVLink). A graph holds `check` sweeps and is run again and again (graphs can
 * be re-run), and after each run the residual ||u_new - u_old||_2 of its last sweep
 * decides whether to stop. Boundary: u = 1 on the top edge, 0 on the other three. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "jacobi.h"

typedef struct opts {
    int64_t n, iters, check;
    double tol;
    int gpus, cpu_only, blocks, verify;
} opts;

static void usage(const char *p)
{
    fprintf(stderr,
            "usage: %s [--n N] [--iters MAX] [--tol T] [--gpus G] [--cpu-only] [--blocks B]\n"
            "          [--check K] [--verify]\n"
            "  --n N        grid size N x N including the boundary (default 4096)\n"
            "  --iters MAX  at most this many sweeps (default 1000)\n"
            "  --tol T      stop once the residual of a sweep is below T (default 1e-6)\n"
            "  --gpus G     GPUs to use (default all; 0 = CPU workers)\n"
            "  --cpu-only   run every task on CPU workers\n"
            "  --blocks B   row blocks (default 2 per GPU, or 2 per CPU worker)\n"
            "  --check K    sweeps per graph, residual checked after each (default 50)\n"
            "  --verify     compare with a serial solver at the end (small N)\n", p);
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){4096, 1000, 50, 1e-6, -1, 0, 0, 0};
    static const struct option lo[] = {
        {"n", 1, 0, 'n'}, {"iters", 1, 0, 'i'}, {"tol", 1, 0, 't'}, {"gpus", 1, 0, 'g'},
        {"cpu-only", 0, 0, 'c'}, {"blocks", 1, 0, 'b'}, {"check", 1, 0, 'k'},
        {"verify", 0, 0, 'v'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'n': o->n = atoll(optarg); break;
        case 'i': o->iters = atoll(optarg); break;
        case 't': o->tol = atof(optarg); break;
        case 'g': o->gpus = atoi(optarg); break;
        case 'c': o->cpu_only = 1; break;
        case 'b': o->blocks = atoi(optarg); break;
        case 'k': o->check = atoll(optarg); break;
        case 'v': o->verify = 1; break;
        default: usage(argv[0]); return -1;
        }
    }
    if (o->n < 4 || o->iters < 1 || o->check < 1 || o->blocks < 0) {
        usage(argv[0]);
        return -1;
    }
    if (o->check & 1) o->check++;   /* even: the graph ends where it started */
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define TRY(call)                                                                      \
    do {                                                                               \
        cask_status st_ = (call);                                                      \
        if (st_) {                                                                     \
            fprintf(stderr, "cask-jacobi: %s: %s\n", #call, cask_status_string(st_));  \
            goto fail;                                                                 \
        }                                                                              \
    } while (0)

typedef struct block {
    int64_t row0, rows;        /* interior rows [row0, row0 + rows), global numbering */
    cask_data *u[2], *top[2], *bot[2], *res;
    int device;
} block;

/* Serial reference for --verify: the same arithmetic in the same order. */
static float *serial(int64_t n, int64_t iters)
{
    float *a = calloc((size_t)(n * n), sizeof(float)), *b = calloc((size_t)(n * n), sizeof(float));
    for (int64_t j = 0; j < n; j++) a[j] = b[j] = 1.0f;
    for (int64_t t = 0; t < iters; t++) {
        for (int64_t i = 1; i < n - 1; i++)
            for (int64_t j = 1; j < n - 1; j++)
                b[i * n + j] = 0.25f * ((a[(i - 1) * n + j] + a[(i + 1) * n + j]) +
                                        (a[i * n + j - 1] + a[i * n + j + 1]));
        float *x = a;
        a = b;
        b = x;
    }
    free(b);
    return a;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o)) return 2;
    cask_runtime *rt = NULL;
    cask_graph *g = NULL;
    block *bl = NULL;
    cask_data *edge_top = NULL, *edge_bot = NULL;
    float *ones = NULL, *zeros = NULL;
    int nb = 0, rc = 1;

    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    if (o.cpu_only || o.gpus == 0) {
        cfg.field_mask |= CASK_CONFIG_NGPU;
        cfg.ngpu = 0;
    } else if (o.gpus > 0) {
        cfg.field_mask |= CASK_CONFIG_NGPU;
        cfg.ngpu = o.gpus;
    }
    TRY(cask_init(&cfg, &rt));
    cask_runtime_info info;
    TRY(cask_runtime_query(rt, &info));
    int ngpu = info.ngpus;
    int workers = ngpu ? ngpu : info.ncpu_workers;
    nb = o.blocks ? o.blocks : 2 * workers;
    int64_t interior = o.n - 2;
    if (nb > interior) nb = (int)interior;

    cask_kernel_desc kd;
    cask_kernel *kstep, *kinit;
    memset(&kd, 0, sizeof kd);
    kd.name = "jacobi.step";
    kd.cpu = jacobi_step_cpu;
#ifdef CASK_HAVE_CUDA
    kd.cuda = jacobi_step_cuda;
#endif
    TRY(cask_kernel_register(rt, &kd, &kstep));
    kd.name = "jacobi.init";
    kd.cpu = jacobi_init_cpu;
#ifdef CASK_HAVE_CUDA
    kd.cuda = jacobi_init_cuda;
#endif
    TRY(cask_kernel_register(rt, &kd, &kinit));

    size_t row = sizeof(float) * (size_t)o.n;
    ones = malloc(row);
    zeros = calloc(1, row);
    for (int64_t j = 0; j < o.n; j++) ones[j] = 1.0f;
    TRY(cask_data_register(rt, ones, row, &edge_top));
    TRY(cask_data_register(rt, zeros, row, &edge_bot));

    bl = calloc((size_t)nb, sizeof *bl);
    for (int b = 0; b < nb; b++) {
        block *k = &bl[b];
        k->row0 = 1 + interior * b / nb;
        k->rows = 1 + interior * (b + 1) / nb - k->row0;
        k->device = ngpu ? (int)((int64_t)b * ngpu / nb) : -1;
        for (int p = 0; p < 2; p++) {
            TRY(cask_data_create(rt, row * (size_t)k->rows, &k->u[p]));
            TRY(cask_data_create(rt, row, &k->top[p]));
            TRY(cask_data_create(rt, row, &k->bot[p]));
        }
        TRY(cask_data_create(rt, sizeof(double) * (size_t)(k->rows + 1), &k->res));
    }

    uint32_t where = (o.cpu_only || !ngpu) ? CASK_WHERE_CPU : CASK_WHERE_GPU;
    /* initial state, made where it will be used */
    TRY(cask_graph_create(rt, &g));
    for (int b = 0; b < nb; b++) {
        jacobi_init_args ia = {o.n, bl[b].rows};
        cask_access acc[3] = {{bl[b].u[0], CASK_WRITE}, {bl[b].top[0], CASK_WRITE},
                              {bl[b].bot[0], CASK_WRITE}};
        cask_task_desc d = {CASK_TASK_ARGS | CASK_TASK_WHERE | (ngpu ? CASK_TASK_DEVICE : 0),
                            kinit, acc, 3, &ia, sizeof ia, 0, NULL, where, bl[b].device};
        TRY(cask_graph_add_task(g, &d, NULL));
    }
    TRY(cask_graph_compute(g));
    cask_graph_destroy(g);
    g = NULL;

    /* `check` sweeps; the last one reports residuals */
    TRY(cask_graph_create(rt, &g));
    for (int64_t t = 0; t < o.check; t++) {
        int p = (int)(t & 1);
        for (int b = 0; b < nb; b++) {
            block *k = &bl[b];
            jacobi_step_args sa = {o.n, k->rows, t == o.check - 1, 0};
            cask_access acc[7] = {
                {k->u[p], CASK_READ},
                {b ? bl[b - 1].bot[p] : edge_top, CASK_READ},
                {b + 1 < nb ? bl[b + 1].top[p] : edge_bot, CASK_READ},
                {k->u[1 - p], CASK_WRITE},
                {k->top[1 - p], CASK_WRITE},
                {k->bot[1 - p], CASK_WRITE},
                {k->res, CASK_WRITE}};
            cask_task_desc d = {CASK_TASK_ARGS | CASK_TASK_WHERE | (ngpu ? CASK_TASK_DEVICE : 0),
                                kstep, acc, sa.want_res ? 7 : 6, &sa, sizeof sa, 0, NULL, where,
                                k->device};
            TRY(cask_graph_add_task(g, &d, NULL));
        }
    }

    printf("cask-jacobi: %lld x %lld, %d row blocks on %d %s, %lld sweeps per graph\n",
           (long long)o.n, (long long)o.n, nb, ngpu ? ngpu : info.ncpu_workers,
           ngpu ? (info.simulated_gpus ? "simulated GPUs" : "GPUs") : "CPU workers",
           (long long)o.check);
    int64_t done = 0;
    double resid = INFINITY, t0 = now();
    while (done < o.iters) {
        TRY(cask_graph_compute(g));
        done += o.check;
        double sum = 0;
        for (int b = 0; b < nb; b++) {
            void *p;
            TRY(cask_data_acquire(bl[b].res, CASK_READ, &p));
            sum += *(double *)p;
            TRY(cask_data_release(bl[b].res));
        }
        resid = sqrt(sum);
        if (resid < o.tol) break;
    }
    double el = now() - t0;
    double cells = (double)(o.n - 2) * (double)(o.n - 2);
    printf("sweeps %lld  residual %.3e (%s)  time %.3f s  %.1f sweeps/s  %.1f GB/s  %.2f Gcell/s\n",
           (long long)done, resid, resid < o.tol ? "converged" : "max sweeps", el,
           (double)done / el, (double)done * cells * 8.0 / el / 1e9, (double)done * cells / el / 1e9);

    if (o.verify) {
        float *ref = serial(o.n, done);
        double maxd = 0;
        int p = 0;   /* `check` is even: the latest values are in u[0] */
        for (int b = 0; b < nb; b++) {
            void *ptr;
            TRY(cask_data_acquire(bl[b].u[p], CASK_READ, &ptr));
            const float *u = ptr;
            for (int64_t i = 0; i < bl[b].rows; i++)
                for (int64_t j = 0; j < o.n; j++) {
                    double d = fabs((double)u[i * o.n + j] - ref[(bl[b].row0 + i) * o.n + j]);
                    if (d > maxd) maxd = d;
                }
            TRY(cask_data_release(bl[b].u[p]));
        }
        printf("verify: max |cask - serial| = %.3g %s\n", maxd, maxd == 0 ? "(identical)" : "");
        free(ref);
        if (maxd > 1e-5) goto fail;
    }
    rc = 0;
fail:
    cask_graph_destroy(g);
    for (int b = 0; bl && b < nb; b++) {
        for (int p = 0; p < 2; p++) {
            cask_data_destroy(bl[b].u[p]);
            cask_data_destroy(bl[b].top[p]);
            cask_data_destroy(bl[b].bot[p]);
        }
        cask_data_destroy(bl[b].res);
    }
    cask_data_destroy(edge_top);
    cask_data_destroy(edge_bot);
    free(bl);
    cask_shutdown(rt);
    free(ones);
    free(zeros);
    return rc;
}
