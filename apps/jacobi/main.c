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
 * decides whether to stop. Boundary: u = 1 on the top edge, 0 on the other three.
 *
 * Under a launcher (mpirun -n P, srun --mpi=pmix) the same graphs are built as
 * distributed graphs (cask/distributed.h): row block b and its handles belong to rank
 * b * P / blocks (contiguous), each sweep task runs where its block lives, and the
 * distributed layer moves the halo rows between neighbouring ranks. Every rank receives
 * every block's residual (gathered to each rank) so that all decide alike when to stop;
 * --verify and --out gather the grid on rank 0. Only rank 0 prints. Without a launcher the job has
 * one process and the local graphs are used, as before.
 *
 * The initial state (zeros; the fixed edges) has loaders (cask_dist_data_set_loader):
 * if a rank dies, the survivors make its blocks again and recompute the sweeps, and the
 * result is the same bits. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cask/distributed.h"
#include "jacobi.h"
#include "jacobi_out.h"

typedef struct opts {
    int64_t n, iters, check;
    double tol;
    int gpus, cpu_only, blocks, verify;
    const char *out;
    cask_dist_write_mode write_mode;
} opts;

static void usage(const char *p)
{
    fprintf(stderr,
            "usage: %s [--n N] [--iters MAX] [--tol T] [--gpus G] [--cpu-only] [--blocks B]\n"
            "          [--check K] [--verify] [--out FILE] [--write-mode M]\n"
            "  --n N        grid size N x N including the boundary (default 4096)\n"
            "  --iters MAX  at most this many sweeps (default 1000)\n"
            "  --tol T      stop once the residual of a sweep is below T (default 1e-6)\n"
            "  --gpus G     GPUs to use (default all; 0 = CPU workers)\n"
            "  --cpu-only   run every task on CPU workers\n"
            "  --blocks B   row blocks (default 2 per GPU, or 2 per CPU worker)\n"
            "  --check K    sweeps per graph, residual checked after each (default 50)\n"
            "  --verify     compare with a serial solver at the end (small N)\n"
            "  --out FILE   write the final interior rows, (N-2) x N float32 (raw, row-major)\n"
            "  --write-mode auto|inplace|gather  across ranks: each rank writes its own\n"
            "               blocks' rows of --out (inplace: FILE on a file system every rank\n"
            "               sees), or rank 0 gathers the grid and writes it; auto: in place\n"
            "               when every rank sees FILE (checked), else gather (default)\n"
            "  --version    cask's version and the UCX it runs with\n", p);
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){4096, 1000, 50, 1e-6, -1, 0, 0, 0, NULL, CASK_DIST_WRITE_AUTO};
    static const struct option lo[] = {
        {"n", 1, 0, 'n'}, {"iters", 1, 0, 'i'}, {"tol", 1, 0, 't'}, {"gpus", 1, 0, 'g'},
        {"cpu-only", 0, 0, 'c'}, {"blocks", 1, 0, 'b'}, {"check", 1, 0, 'k'},
        {"verify", 0, 0, 'v'}, {"out", 1, 0, 'o'}, {"help", 0, 0, 'h'}, {"version", 0, 0, 'V'},
        {"write-mode", 1, 0, 'w'},
        {0, 0, 0, 0}};
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
        case 'o': o->out = optarg; break;
        case 'w':
            if (cask_dist_write_mode_parse(optarg, &o->write_mode)) {
                fprintf(stderr, "%s: --write-mode: '%s' is not auto, inplace or gather\n",
                        argv[0], optarg);
                return -1;
            }
            break;
        case 'V': {
            char ucx[256];
            cask_dist_transport_describe(ucx, sizeof ucx);
            printf("cask-jacobi (cask %d.%d.%d)\nbetween processes: %s\n", CASK_VERSION_MAJOR,
                   CASK_VERSION_MINOR, CASK_VERSION_PATCH, ucx);
            exit(0);
        }
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

/* The graph being built: a local one, or a distributed one when the job has several
 * processes. */
typedef struct sgraph {
    cask_graph *g;
    cask_dist_graph *dg;
} sgraph;

static cask_status sg_create(cask_runtime *rt, cask_dist *dist, sgraph *s)
{
    return cask_dist_size(dist) > 1 ? cask_dist_graph_create(dist, &s->dg)
                                    : cask_graph_create(rt, &s->g);
}

static cask_status sg_add(sgraph *s, const cask_task_desc *d)
{
    return s->dg ? cask_dist_graph_add_task(s->dg, d, NULL) : cask_graph_add_task(s->g, d, NULL);
}

static cask_status sg_compute(sgraph *s)
{
    cask_status st = s->dg ? cask_dist_graph_compute(s->dg) : cask_graph_compute(s->g);
    if (st)
        fprintf(stderr, "cask-jacobi: computing: %s: %s\n", cask_status_string(st),
                s->dg ? cask_dist_graph_error(s->dg) : cask_graph_error(s->g));
    return st;
}

static void sg_destroy(sgraph *s)
{
    cask_graph_destroy(s->g);
    cask_dist_graph_destroy(s->dg);
    s->g = NULL;
    s->dg = NULL;
}

/* A handle owned by rank owner (the only rank, in a job of one). With several ranks,
 * cask_dist_finalize destroys it; alone, the caller does. */
static cask_status make_data(cask_runtime *rt, cask_dist *dist, size_t bytes, int owner,
                             void *host, cask_data **out)
{
    if (cask_dist_size(dist) > 1)
        return cask_dist_data_create(dist, bytes, owner,
                                     owner == cask_dist_rank(dist) ? host : NULL, out);
    return host ? cask_data_register(rt, host, bytes, out) : cask_data_create(rt, bytes, out);
}

typedef struct block {
    int64_t row0, rows;        /* interior rows [row0, row0 + rows), global numbering */
    cask_data *u[2], *top[2], *bot[2], *res;
    int device, owner;
    double *res_copy;          /* rows + 1 doubles: res gathered here (several ranks) */
} block;

/* "jacobi.fill": the loader of the initial state: buffer 0 (W) = value everywhere. */
static cask_status fill_cpu(cask_task_ctx *ctx)
{
    const float *v = cask_task_args(ctx, NULL);
    float *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *x;
    for (size_t i = 0; i < n; i++)
        x[i] = *v;
    return CASK_OK;
}

/* Declares how a survivor makes d again: filled with value (a job of several). */
static cask_status loader(cask_dist *dist, cask_data *d, cask_kernel *kfill, float value)
{
    return cask_dist_size(dist) > 1 ? cask_dist_data_set_loader(dist, d, kfill, &value,
                                                                 sizeof value)
                                    : CASK_OK;
}

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
    cask_dist *dist = NULL;
    sgraph g = {0};
    block *bl = NULL;
    cask_data *edge_top = NULL, *edge_bot = NULL;
    cask_dist_file *of = NULL;   /* --out */
    float *ones = NULL, *zeros = NULL, *grid = NULL;
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
    if (cask_dist_init(rt, NULL, &dist)) {
        char e[1024];
        cask_runtime_error(rt, e, sizeof e);
        fprintf(stderr, "cask-jacobi: joining the job: %s\n", e);
        goto fail;
    }
    int me = cask_dist_rank(dist), P = cask_dist_size(dist);
    /* --out: made now (collective), so that a path rank 0 cannot write fails before any
     * sweep; in place when every rank sees it (jacobi_out.h) */
    if (o.out && cask_dist_file_open(dist, o.out, o.write_mode, &of)) {
        if (me == 0)
            fprintf(stderr, "cask-jacobi: --out: %s\n", cask_dist_error(dist));
        goto fail;
    }
    if (of && me == 0 && cask_dist_file_note(of)[0])
        fprintf(stderr, "cask-jacobi: %s: written by rank 0, the grid gathered to it: %s\n",
                o.out, cask_dist_file_note(of));
    int in_place = of && P > 1 && cask_dist_file_in_place(of);
    int ngpu = info.ngpus;
    int workers = ngpu ? ngpu : info.ncpu_workers;
    nb = o.blocks ? o.blocks : 2 * workers * P;
    int64_t interior = o.n - 2;
    if (nb > interior) nb = (int)interior;

    cask_kernel_desc kd;
    cask_kernel *kstep, *kinit, *kfill;
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
    memset(&kd, 0, sizeof kd);
    kd.name = "jacobi.fill";
    kd.cpu = fill_cpu;
    TRY(cask_kernel_register(rt, &kd, &kfill));

    size_t row = sizeof(float) * (size_t)o.n;
    ones = malloc(row);
    zeros = calloc(1, row);
    for (int64_t j = 0; j < o.n; j++) ones[j] = 1.0f;
    /* the fixed edges belong to the ranks of the first and the last block */
    TRY(make_data(rt, dist, row, 0, ones, &edge_top));
    TRY(make_data(rt, dist, row, (int)((int64_t)(nb - 1) * P / nb), zeros, &edge_bot));
    TRY(loader(dist, edge_top, kfill, 1.0f));
    TRY(loader(dist, edge_bot, kfill, 0.0f));

    bl = calloc((size_t)nb, sizeof *bl);
    /* With several ranks, the GPUs of a node are shared among its ranks: one each
     * (local rank r on GPU r % GPUs) when the node runs several. */
    int lr = cask_dist_local_rank(dist), ls = cask_dist_local_size(dist);
    for (int b = 0; b < nb; b++) {
        block *k = &bl[b];
        k->row0 = 1 + interior * b / nb;
        k->rows = 1 + interior * (b + 1) / nb - k->row0;
        k->owner = (int)((int64_t)b * P / nb);
        if (!ngpu)
            k->device = -1;
        else if (P == 1)
            k->device = (int)((int64_t)b * ngpu / nb);
        else if (ls > 1)
            k->device = lr % ngpu;
        else   /* alone on the node: this rank's blocks spread over its GPUs */
            k->device = (int)((int64_t)(b - (nb * k->owner + P - 1) / P) * ngpu /
                              ((nb * (k->owner + 1) + P - 1) / P - (nb * k->owner + P - 1) / P));
        for (int p = 0; p < 2; p++) {
            TRY(make_data(rt, dist, row * (size_t)k->rows, k->owner, NULL, &k->u[p]));
            TRY(make_data(rt, dist, row, k->owner, NULL, &k->top[p]));
            TRY(make_data(rt, dist, row, k->owner, NULL, &k->bot[p]));
        }
        TRY(make_data(rt, dist, sizeof(double) * (size_t)(k->rows + 1), k->owner, NULL,
                      &k->res));
        /* the state the sweeps start from, as jacobi.init makes it */
        TRY(loader(dist, k->u[0], kfill, 0.0f));
        TRY(loader(dist, k->top[0], kfill, 0.0f));
        TRY(loader(dist, k->bot[0], kfill, 0.0f));
        if (P > 1 && !(k->res_copy = malloc(sizeof(double) * (size_t)(k->rows + 1)))) {
            fprintf(stderr, "cask-jacobi: out of memory\n");
            goto fail;
        }
    }

    uint32_t where = (o.cpu_only || !ngpu) ? CASK_WHERE_CPU : CASK_WHERE_GPU;
    /* initial state, made where it will be used */
    TRY(sg_create(rt, dist, &g));
    for (int b = 0; b < nb; b++) {
        jacobi_init_args ia = {o.n, bl[b].rows};
        cask_access acc[3] = {{bl[b].u[0], CASK_WRITE}, {bl[b].top[0], CASK_WRITE},
                              {bl[b].bot[0], CASK_WRITE}};
        cask_task_desc d = {.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE |
                                          (ngpu ? CASK_TASK_DEVICE : 0),
                            .kernel = kinit, .access = acc, .naccess = 3, .args = &ia,
                            .args_size = sizeof ia, .where = where, .device = bl[b].device};
        TRY(sg_add(&g, &d));
    }
    if (sg_compute(&g))
        goto fail;
    sg_destroy(&g);

    /* `check` sweeps; the last one reports residuals */
    TRY(sg_create(rt, dist, &g));
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
            cask_task_desc d = {.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE |
                                              (ngpu ? CASK_TASK_DEVICE : 0),
                                .kernel = kstep, .access = acc, .naccess = sa.want_res ? 7 : 6,
                                .args = &sa, .args_size = sizeof sa, .where = where,
                                .device = k->device};
            TRY(sg_add(&g, &d));
        }
    }
    if (P > 1) {
        /* Every rank needs every residual to decide alike: each block's is gathered
         * to every other rank (one datum, several roots; its owner reads its own
         * handle). --verify, and --out unless in place: the grid gathered on rank 0. */
        for (int b = 0; b < nb; b++)
            for (int r = 0; r < P; r++)
                if (r != bl[b].owner)
                    TRY(cask_dist_graph_gather(g.dg, bl[b].res, r,
                                               r == me ? bl[b].res_copy : NULL));
        if (o.verify || (o.out && !in_place)) {
            if (me == 0 && !(grid = malloc(row * (size_t)o.n))) {
                fprintf(stderr, "cask-jacobi: out of memory\n");
                goto fail;
            }
            for (int b = 0; b < nb; b++)   /* `check` is even: the latest values are in u[0] */
                if (bl[b].owner != 0)
                    TRY(cask_dist_graph_gather(g.dg, bl[b].u[0], 0,
                                           me == 0 ? grid + bl[b].row0 * o.n : NULL));
        }
    }

    if (me == 0)
        printf("cask-jacobi: %lld x %lld, %d row blocks on %d %s, %lld sweeps per graph\n",
           (long long)o.n, (long long)o.n, nb, ngpu ? ngpu : info.ncpu_workers,
           ngpu ? (info.simulated_gpus ? "simulated GPUs" : "GPUs") : "CPU workers",
           (long long)o.check);
    if (me == 0 && P > 1)
        printf("cask-jacobi: %d processes, each as above; block b on rank b * %d / %d\n", P, P,
               nb);
    if (g.dg) {
        /* Placed and routed before the clock: the first compute would do it otherwise,
         * and with it anything its routes need once a job, such as the NCCL communicator
         * (0.6 s on 2 H200s, bench/RESULTS.md 29.2): set-up, not sweeps. */
        double tp = now();
        cask_status pst = cask_dist_graph_plan(g.dg);
        if (pst) {
            fprintf(stderr, "cask-jacobi: planning the sweeps: %s: %s\n", cask_status_string(pst),
                    cask_dist_graph_error(g.dg));
            goto fail;
        }
        if (me == 0)
            printf("cask-jacobi: sweeps planned across the ranks in %.3f s (before the clock)\n",
                   now() - tp);
    }
    int64_t done = 0;
    double resid = INFINITY, t0 = now();
    while (done < o.iters) {
        if (sg_compute(&g))
            goto fail;
        done += o.check;
        double sum = 0;
        for (int b = 0; b < nb; b++) {
            if (P > 1 && bl[b].owner != me) {
                sum += bl[b].res_copy[0];
                continue;
            }
            void *p;
            TRY(cask_data_acquire(bl[b].res, CASK_READ, &p));
            sum += *(double *)p;
            TRY(cask_data_release(bl[b].res));
        }
        resid = sqrt(sum);
        if (resid < o.tol) break;
    }
    double el = now() - t0;
    sg_destroy(&g);   /* the sweeps are over: u[0] holds the latest values */
    double cells = (double)(o.n - 2) * (double)(o.n - 2);
    if (me == 0)
        printf("sweeps %lld  residual %.3e (%s)  time %.3f s  %.1f sweeps/s  %.1f GB/s  %.2f Gcell/s\n",
           (long long)done, resid, resid < o.tol ? "converged" : "max sweeps", el,
           (double)done / el, (double)done * cells * 8.0 / el / 1e9, (double)done * cells / el / 1e9);

    /* Rank 0 gathers the grid (--verify, --out gathered): lost, the job has no output. */
    if ((o.verify || (o.out && !in_place)) && me != 0 && cask_dist_rank_lost(dist, 0)) {
        int first = 1;
        while (first < me && cask_dist_rank_lost(dist, first))
            first++;
        if (first == me)
            fprintf(stderr, "cask-jacobi: rank %d: rank 0 was lost: it gathers the grid and "
                    "writes it, so this job has no output; run it again\n", me);
        goto fail;
    }
    int verified = 1;
    if (o.verify && me == 0) {
        float *ref = serial(o.n, done);
        double maxd = 0;
        int p = 0;   /* `check` is even: the latest values are in u[0] */
        for (int b = 0; b < nb; b++) {
            int mine = !grid || bl[b].owner == 0;   /* else gathered into grid */
            void *ptr = grid ? grid + bl[b].row0 * o.n : NULL;
            if (mine)
                TRY(cask_data_acquire(bl[b].u[p], CASK_READ, &ptr));
            const float *u = ptr;
            for (int64_t i = 0; i < bl[b].rows; i++)
                for (int64_t j = 0; j < o.n; j++) {
                    double d = fabs((double)u[i * o.n + j] - ref[(bl[b].row0 + i) * o.n + j]);
                    if (d > maxd) maxd = d;
                }
            if (mine)
                TRY(cask_data_release(bl[b].u[p]));
        }
        printf("verify: max |cask - serial| = %.3g %s\n", maxd, maxd == 0 ? "(identical)" : "");
        free(ref);
        verified = maxd <= 1e-5;
    }
    if (o.out) {   /* the interior rows, block after block; `check` is even: u[0] */
        jacobi_out_block *ob = calloc((size_t)nb, sizeof *ob);
        const float **rows = calloc((size_t)nb, sizeof *rows);
        int bad = !ob || !rows;
        for (int b = 0; b < nb && !bad; b++)
            ob[b] = (jacobi_out_block){bl[b].u[0], bl[b].row0, bl[b].rows};
        if (bad) {
            fprintf(stderr, "cask-jacobi: out of memory\n");
        } else if (in_place) {   /* collective */
            bad = jacobi_out_in_place(rt, dist, of, ob, nb, o.n, verified);
        } else if (me == 0 && verified) {   /* the grid gathered here (or one process) */
            for (int b = 0; b < nb && !bad; b++) {
                void *ptr = grid ? grid + bl[b].row0 * o.n : NULL;
                if (!grid || bl[b].owner == 0)
                    bad = cask_data_acquire(bl[b].u[0], CASK_READ, &ptr) != CASK_OK;
                rows[b] = ptr;
            }
            bad = bad || jacobi_out_write_all(of, ob, rows, nb, o.n);
            for (int b = 0; b < nb; b++)
                if (rows[b] && (!grid || bl[b].owner == 0))
                    cask_data_release(bl[b].u[0]);
        }
        free(ob);
        free(rows);
        if (bad)
            goto fail;
    }
    if (!verified)
        goto fail;
    rc = 0;
fail:
    /* Every rank leaves with the same verdict: the distributed computes fail everywhere
     * alike, and --verify fails only on rank 0 (after the last collective call). */
    sg_destroy(&g);
    if (cask_dist_size(dist) <= 1) {   /* in a job of several, finalize destroys them */
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
    }
    cask_dist_file_close(of);   /* uncommitted: removed */
    if (cask_dist_finalize(dist) && rc == 0)
        rc = 1;
    for (int b = 0; bl && b < nb; b++)
        free(bl[b].res_copy);
    free(bl);
    free(grid);
    cask_shutdown(rt);
    free(ones);
    free(zeros);
    return rc;
}
