/* tests/dist/test_dist_chol.c: the tiled Cholesky factorization across the ranks of a
 * job (cask/dist_matrix.h), against cask_array_cholesky in one process.
 *
 *   test_dist_chol same     f64 and f32; tile counts odd and even, a last tile smaller
 *                           than the others, a single tile; the grid chosen and P x 1:
 *                           the factor gathered on rank 0 is the same bytes as the
 *                           one-process factor of the same matrix (CPU workers)
 *   test_dist_chol notspd   a matrix whose leading minor of order 151 is not positive:
 *                           CASK_ERR_NOT_SPD on every rank, the message naming the tile
 *                           and the order; then an SPD matrix factors in the same job
 *   test_dist_chol refill   with GPUs (simulated: CASK_SIM_GPUS): factored, the tiles
 *                           filled again and factored again, the factor right (no
 *                           replica of the old factor left on a GPU)
 *   test_dist_chol kill     tiles with a loader (cask_dist_matrix_set_loader); the last
 *                           rank is killed during the factorization
 *                           (CASK_DIST_TEST_KILL): the survivors finish it, the factor
 *                           gathered on rank 0 still the one-process bytes
 *   test_dist_chol args     a grid that is not the job's size is refused, on every rank
 *   test_dist_chol pin      cask_dist_graph_set_rank (owner computes): tasks on data all
 *                           owned by rank 0 run where they are pinned, not where their
 *                           data is; bad pins refused
 * Under tests/dist/run.sh, or alone as a job of one. */
#include <math.h>

#include "cask/cask.h"
#include "dist_test.h"

typedef struct env {
    cask_runtime *rt;
    cask_array_ctx *ctx;
    cask_dist *dist;
    int rank, size;
    cask_dist_matrix *keep[16];   /* destroyed after cask_dist_finalize */
    int nkeep;
} env;

static void setup(env *e, int gpus)
{
    memset(e, 0, sizeof *e);
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND |
                                      (gpus ? 0 : CASK_CONFIG_NGPU),
                        .ncpu = 2, .bind = 0, .ngpu = 0 };
    CHECK_OK(cask_init(&cfg, &e->rt), "cask_init");
    CHECK_OK(cask_array_ctx_create(e->rt, &e->ctx), "array context");
    cask_status st = cask_dist_init(e->rt, NULL, &e->dist);
    char err[1024];
    cask_runtime_error(e->rt, err, sizeof err);
    CHECK_OK(st, "cask_dist_init: %s", err);
    e->rank = cask_dist_rank(e->dist);
    e->size = cask_dist_size(e->dist);
    dt_rank_ = e->rank;
}

static void teardown(env *e)
{
    CHECK_OK(cask_dist_finalize(e->dist), "finalize");
    for (int i = 0; i < e->nkeep; i++)
        cask_dist_matrix_destroy(e->keep[i]);
    cask_array_ctx_destroy(e->ctx);
    cask_shutdown(e->rt);
}

/* A(i,j): SPD (diagonally dominant), symmetric; bad >= 0 makes A(bad,bad) negative. */
static double element(int64_t n, int64_t i, int64_t j, int64_t bad)
{
    int64_t lo = i < j ? i : j, hi = i < j ? j : i;
    if (i == j)
        return i == bad ? -1.0 : (double)n + 1.0 + 0.25 * sin((double)i);
    return cos((double)(lo * 131 + hi * 7)) * 0.5;
}

static void fill(cask_dist_matrix *m, cask_dtype dt, int64_t n, int64_t t, int64_t bad)
{
    int64_t nt;
    cask_dist_matrix_grid(m, NULL, NULL, &nt);
    for (int64_t i = 0; i < nt; i++)
        for (int64_t j = 0; j <= i; j++) {
            void *p;
            int64_t r, c;
            CHECK_OK(cask_dist_matrix_tile(m, i, j, &p, &r, &c), "tile (%lld,%lld)",
                     (long long)i, (long long)j);
            CHECK((p != NULL) == (cask_dist_matrix_owner(m, i, j) == dt_rank_),
                  "tile (%lld,%lld): memory on a rank that is not its owner", (long long)i,
                  (long long)j);
            for (int64_t x = 0; p && x < r; x++)
                for (int64_t y = 0; y < c; y++) {
                    double v = element(n, i * t + x, j * t + y, bad);
                    if (dt == CASK_FLOAT64) ((double *)p)[x * c + y] = v;
                    else ((float *)p)[x * c + y] = (float)v;
                }
        }
}

/* The one-process factor of the same matrix (rank 0): cask_array_cholesky. */
static void *reference(env *e, cask_dtype dt, int64_t n, int64_t t)
{
    size_t es = cask_dtype_size(dt), bytes = (size_t)(n * n) * es;
    char *a = malloc(bytes), *l = malloc(bytes);
    CHECK(a && l, "out of memory");
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double v = element(n, i, j, -1);
            if (dt == CASK_FLOAT64) ((double *)a)[i * n + j] = v;
            else ((float *)a)[i * n + j] = (float)v;
        }
    int64_t shape[2] = {n, n}, ch[2] = {t, t};
    cask_array *A = NULL, *L = NULL;
    CHECK_OK(cask_array_from_host(e->ctx, a, dt, 2, shape, ch, &A), "from_host");
    CHECK_OK(cask_array_cholesky(A, &L), "cholesky");
    CHECK_OK(cask_array_compute(L, l, bytes), "one-process factor: %s",
             cask_array_ctx_error(e->ctx));
    cask_array_release(A);
    cask_array_release(L);
    free(a);
    return l;
}

static void same_case(env *e, cask_dtype dt, int64_t n, int64_t t, int p, int q, int times)
{
    cask_dist_matrix *m = NULL;
    CHECK_OK(cask_dist_matrix_create(e->ctx, e->dist, n, t, dt, p, q, &m), "create: %s",
             m ? cask_dist_matrix_error(m) : cask_array_ctx_error(e->ctx));
    e->keep[e->nkeep++] = m;
    for (int r = 0; r < times; r++) {
        fill(m, dt, n, t, -1);
        CHECK_OK(cask_dist_cholesky(m), "n %lld tile %lld %s: %s", (long long)n, (long long)t,
                 cask_dtype_name(dt), cask_dist_matrix_error(m));
    }
    size_t bytes = (size_t)(n * n) * cask_dtype_size(dt);
    void *got = e->rank == 0 ? malloc(bytes) : NULL;
    CHECK_OK(cask_dist_matrix_gather(m, 0, got), "gather: %s", cask_dist_matrix_error(m));
    if (e->rank == 0) {
        void *want = reference(e, dt, n, t);
        size_t es = cask_dtype_size(dt);
        for (size_t k = 0; k < bytes / es; k++)
            CHECK(!memcmp((char *)got + k * es, (char *)want + k * es, es),
                  "n %lld tile %lld %s grid %dx%d: element (%zu,%zu) differs from the "
                  "one-process factor", (long long)n, (long long)t, cask_dtype_name(dt), p, q,
                  k / (size_t)n, k % (size_t)n);
        free(want);
    }
    free(got);
}

static void test_same(env *e)
{
    static const int64_t shapes[][2] = {{300, 64}, {256, 64}, {97, 97}, {130, 20}};
    for (int d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            cask_dtype dt = d ? CASK_FLOAT32 : CASK_FLOAT64;
            same_case(e, dt, shapes[s][0], shapes[s][1], 0, 0, 1);
            if (e->size > 1 && s == 0)
                same_case(e, dt, shapes[s][0], shapes[s][1], e->size, 1, 1);
        }
}

static void test_notspd(env *e)
{
    int64_t n = 200, t = 48;   /* element 150 lies in tile 3 */
    cask_dist_matrix *m = NULL;
    CHECK_OK(cask_dist_matrix_create(e->ctx, e->dist, n, t, CASK_FLOAT64, 0, 0, &m), "create");
    e->keep[e->nkeep++] = m;
    fill(m, CASK_FLOAT64, n, t, 150);
    cask_status st = cask_dist_cholesky(m);
    CHECK(st == CASK_ERR_NOT_SPD, "status %s, not CASK_ERR_NOT_SPD: %s", cask_status_string(st),
          cask_dist_matrix_error(m));
    const char *msg = cask_dist_matrix_error(m);
    CHECK(strstr(msg, "tile (3,3)") && strstr(msg, "order 151"),
          "the message does not name the tile and the order: %s", msg);
    /* the job goes on: an SPD matrix factors */
    same_case(e, CASK_FLOAT64, 150, 48, 0, 0, 1);
}

static void test_refill(env *e)
{
    cask_runtime_info info;
    cask_runtime_query(e->rt, &info);
    CHECK(info.ngpus > 0, "no GPU, simulated or real (CASK_SIM_GPUS=1)");
    same_case(e, CASK_FLOAT64, 300, 64, 0, 0, 3);
    same_case(e, CASK_FLOAT32, 130, 20, 0, 0, 2);
}

/* The loader of test_kill: the tile as fill() makes it (args: cask_dist_tile_args, n,
 * dtype). */
static cask_status k_tile(cask_task_ctx *ctx)
{
    const char *a = cask_task_args(ctx, NULL);
    cask_dist_tile_args t;
    int64_t nd[2];
    memcpy(&t, a, sizeof t);
    memcpy(nd, a + sizeof t, sizeof nd);
    void *p = cask_task_buffer(ctx, 0);
    for (int64_t x = 0; x < t.rows; x++)
        for (int64_t y = 0; y < t.cols; y++) {
            double v = element(nd[0], t.row0 + x, t.col0 + y, -1);
            if (nd[1] == CASK_FLOAT64) ((double *)p)[x * t.cols + y] = v;
            else ((float *)p)[x * t.cols + y] = (float)v;
        }
    return CASK_OK;
}

static void test_kill(env *e)
{
    int64_t n = 640, t = 64;
    cask_kernel_desc kd = { .name = "test.tile", .cpu = k_tile };
    cask_kernel *k;
    CHECK_OK(cask_kernel_register(e->rt, &kd, &k), "register");
    cask_dist_matrix *m = NULL;
    CHECK_OK(cask_dist_matrix_create(e->ctx, e->dist, n, t, CASK_FLOAT64, 0, 0, &m), "create");
    e->keep[e->nkeep++] = m;
    int64_t nd[2] = {n, CASK_FLOAT64};
    CHECK_OK(cask_dist_matrix_set_loader(m, k, nd, sizeof nd), "loader");
    fill(m, CASK_FLOAT64, n, t, -1);
    CHECK_OK(cask_dist_cholesky(m), "factor with a rank lost: %s", cask_dist_matrix_error(m));
    size_t bytes = (size_t)(n * n) * sizeof(double);
    void *got = e->rank == 0 ? malloc(bytes) : NULL;
    CHECK_OK(cask_dist_matrix_gather(m, 0, got), "gather: %s", cask_dist_matrix_error(m));
    if (e->rank == 0) {
        void *want = reference(e, CASK_FLOAT64, n, t);
        CHECK(!memcmp(got, want, bytes), "the factor after a recovery differs from one process's");
        free(want);
    }
    free(got);
    dt_report_survivor(e->rank);
}

static void test_args(env *e)
{
    cask_dist_matrix *m = NULL;
    cask_status st = cask_dist_matrix_create(e->ctx, e->dist, 100, 10, CASK_FLOAT64, e->size + 1,
                                             1, &m);
    CHECK(st == CASK_ERR_INVALID && !m, "grid %d x 1 on %d ranks: %s", e->size + 1, e->size,
          cask_status_string(st));
    CHECK(strstr(cask_array_ctx_error(e->ctx), "grid"), "message: %s",
          cask_array_ctx_error(e->ctx));
    st = cask_dist_matrix_create(e->ctx, e->dist, 100, 10, CASK_INT32, 0, 0, &m);
    CHECK(st == CASK_ERR_INVALID && !m, "int32 accepted: %s", cask_status_string(st));
    CHECK(cask_dist_matrix_owner(NULL, 0, 0) == -1, "owner of nothing");
    /* the job still works */
    same_case(e, CASK_FLOAT64, 64, 16, 0, 0, 1);
}

static cask_status k_twice(cask_task_ctx *ctx)
{
    double *x = cask_task_buffer(ctx, 0);
    size_t n = cask_task_buffer_size(ctx, 0) / sizeof *x;
    for (size_t k = 0; k < n; k++)
        x[k] = 2 * x[k] + 1;
    return CASK_OK;
}

static void test_pin(env *e)
{
    enum { NX = 8, LEN = 256 };
    cask_kernel_desc kd = { .name = "twice", .cpu = k_twice };
    cask_kernel *k;
    CHECK_OK(cask_kernel_register(e->rt, &kd, &k), "register");
    static double x[NX][LEN], out[NX][LEN];
    cask_data *d[NX];
    for (int i = 0; i < NX; i++) {
        for (int j = 0; j < LEN; j++)
            x[i][j] = i * 1000 + j;
        CHECK_OK(cask_dist_data_create(e->dist, sizeof x[i], 0, e->rank == 0 ? x[i] : NULL,
                                       &d[i]), "data");
    }
    cask_dist_graph *g;
    CHECK_OK(cask_dist_graph_create(e->dist, &g), "graph");
    for (int i = 0; i < NX; i++) {
        cask_access acc = { d[i], CASK_RW };
        cask_task_desc td = { .kernel = k, .access = &acc, .naccess = 1 };
        size_t idx;
        CHECK_OK(cask_dist_graph_add_task(g, &td, &idx), "add");
        CHECK_OK(cask_dist_graph_add_task(g, &td, NULL), "add");   /* a second, unpinned */
        CHECK_OK(cask_dist_graph_set_rank(g, idx, i % e->size), "pin %d", i);
        CHECK_OK(cask_dist_graph_gather(g, d[i], 0, e->rank == 0 ? out[i] : NULL), "gather");
    }
    CHECK(cask_dist_graph_set_rank(g, 2 * NX, 0) == CASK_ERR_INVALID, "task out of range");
    CHECK(cask_dist_graph_set_rank(g, 0, e->size) == CASK_ERR_INVALID, "rank out of range");
    CHECK_OK(cask_dist_graph_plan(g), "plan: %s", cask_dist_graph_error(g));
    CHECK(cask_dist_graph_set_rank(g, 0, 0) == CASK_ERR_STATE, "pinned after the plan");
    for (int i = 0; i < NX; i++) {
        int r;
        CHECK_OK(cask_dist_graph_task_rank(g, (size_t)(2 * i), &r), "task rank");
        CHECK(r == i % e->size, "task %d pinned to rank %d ran on %d", 2 * i, i % e->size, r);
    }
    CHECK_OK(cask_dist_graph_compute(g), "compute: %s", cask_dist_graph_error(g));
    for (int i = 0; e->rank == 0 && i < NX; i++)
        for (int j = 0; j < LEN; j++)
            CHECK(out[i][j] == 4.0 * (i * 1000 + j) + 3, "x[%d][%d] = %g", i, j, out[i][j]);
    CHECK_OK(cask_dist_graph_destroy(g), "destroy");
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "same";
    env e;
    setup(&e, !strcmp(what, "refill"));
    if (!strcmp(what, "same")) test_same(&e);
    else if (!strcmp(what, "notspd")) test_notspd(&e);
    else if (!strcmp(what, "args")) test_args(&e);
    else if (!strcmp(what, "pin")) test_pin(&e);
    else if (!strcmp(what, "refill")) test_refill(&e);
    else if (!strcmp(what, "kill")) test_kill(&e);
    else CHECK(0, "unknown case %s", what);
    teardown(&e);
    if (e.rank == 0) printf("dist_chol %s: ok on %d rank(s)\n", what, e.size);
    return 0;
}
