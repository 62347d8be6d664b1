/* tests/test_knn_kernels.c: the haversine 1-NN kernels (prep, search, merge, finish)
 * through the public API, on small graphs, against a float64 brute force written here
 * with libm alone. The chosen reference must be a true nearest one (float64 haversine
 * within 1e-6 relative, 1e-12 rad absolute), the distance within 1e-5, exact duplicates
 * must resolve to the lowest index, and the results must not depend on how observations
 * and references are chunked, on the worker count or on (simulated) GPUs.
 * Suite knn_kernels, in `meson test --suite unit`. tests/test_knn_gpu.c includes this file
 * with KNN_TEST_HELPERS_ONLY defined to reuse the helpers on real GPUs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cask/cask.h"
#include "knn_points.h"
#include "kernels/knn_impl.h"

/* ---- helpers ---- */

static double coord(const void *p, int f64, int64_t i)
{
    return f64 ? ((const double *)p)[i] : ((const float *)p)[i];
}

/* float64 haversine distance in radians of (lat, lon) pairs. */
static double haversine(double lat1, double lon1, double lat2, double lon2, int degrees)
{
    double k = degrees ? M_PI / 180.0 : 1.0;
    double sl = sin((lat2 - lat1) * k / 2), so = sin((lon2 - lon1) * k / 2);
    double h = sl * sl + cos(lat1 * k) * cos(lat2 * k) * so * so;
    return 2 * asin(sqrt(h < 1 ? h : 1));
}

typedef struct knn_plan {
    cask_knn_points obs_in, ref_in;
    int obs_chunks, ref_chunks;
    uint32_t where; /* cask_where of every task */
    double scale;
} knn_plan;

static knn_plan plan_default(void)
{
    knn_plan p = {{0, 1}, {0, 1}, 1, 1, CASK_WHERE_ANY, 1.0};
    return p;
}

static size_t pt_bytes(cask_knn_points f) { return 2 * (f.f64 ? sizeof(double) : sizeof(float)); }

static cask_data *reg(cask_runtime *rt, void *p, size_t bytes)
{
    cask_data *d = NULL;
    cask_status st = cask_data_register(rt, p, bytes, &d);
    cr_assert_eq(st, CASK_OK, "cask_data_register: %s", cask_status_string(st));
    return d;
}

static cask_data *created(cask_runtime *rt, size_t bytes)
{
    cask_data *d = NULL;
    cask_status st = cask_data_create(rt, bytes, &d);
    cr_assert_eq(st, CASK_OK, "cask_data_create: %s", cask_status_string(st));
    return d;
}

static void add(cask_graph *g, cask_kernel *k, const knn_plan *pl, const void *args,
                size_t args_size, const cask_access *acc, int nacc)
{
    cask_task_desc td = {0};
    td.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE;
    td.kernel = k;
    td.access = acc;
    td.naccess = nacc;
    td.args = args;
    td.args_size = args_size;
    td.where = pl->where;
    cask_status st = cask_graph_add_task(g, &td, NULL);
    cr_assert_eq(st, CASK_OK, "cask_graph_add_task: %s", cask_status_string(st));
}

/* Runs the search as cask-knn does: prep each reference chunk; per observation chunk a
 * FINAL search if there is one reference chunk, else PARTIAL searches merged in order
 * and a finish. Fills idx and dist (n each). */
static void run_knn(cask_runtime *rt, const knn_plan *pl, const void *obs, int64_t n,
                    const void *ref, int64_t m, int32_t *idx, float *dist)
{
    cask_knn_kernels K;
    cr_assert_eq(cask_knn_kernels_register(rt, &K), CASK_OK);
    cask_graph *g = NULL;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    const int OC = pl->obs_chunks, RC = pl->ref_chunks;
    const size_t ob = pt_bytes(pl->obs_in), rb = pt_bytes(pl->ref_in);
    cask_data **dref = calloc(RC, sizeof *dref), **dprep = calloc(RC, sizeof *dprep);
    cask_data **dobs = calloc(OC, sizeof *dobs), **didx = calloc(OC, sizeof *didx);
    cask_data **ddist = calloc(OC, sizeof *ddist), **dbest = calloc((size_t)OC * RC, sizeof *dbest);
    int64_t *rbeg = calloc(RC + 1, sizeof *rbeg), *obeg = calloc(OC + 1, sizeof *obeg);
    for (int c = 0; c <= RC; c++)
        rbeg[c] = m * c / RC;
    for (int c = 0; c <= OC; c++)
        obeg[c] = n * c / OC;
    /* finish's copy of all references (not an alias of the chunks' memory) */
    void *ref_all = malloc(m * rb);
    memcpy(ref_all, ref, m * rb);
    cask_data *dref_all = reg(rt, ref_all, m * rb);

    for (int c = 0; c < RC; c++) {
        int64_t mc = rbeg[c + 1] - rbeg[c];
        dref[c] = reg(rt, (char *)ref + rbeg[c] * rb, mc * rb);
        dprep[c] = created(rt, cask_knn_prepared_bytes(mc));
        cask_knn_prep_args a = {mc, pl->ref_in};
        cask_access acc[2] = {{dref[c], CASK_READ}, {dprep[c], CASK_WRITE}};
        add(g, K.prep, pl, &a, sizeof a, acc, 2);
    }
    for (int o = 0; o < OC; o++) {
        int64_t nc = obeg[o + 1] - obeg[o];
        dobs[o] = reg(rt, (char *)obs + obeg[o] * ob, nc * ob);
        didx[o] = reg(rt, idx + obeg[o], nc * sizeof(int32_t));
        ddist[o] = reg(rt, dist + obeg[o], nc * sizeof(float));
        if (RC == 1) {
            cask_knn_search_args a = {nc, m, 0, pl->obs_in, CASK_KNN_FINAL, pl->scale};
            cask_access acc[4] = {{dobs[o], CASK_READ}, {dprep[0], CASK_READ},
                                  {didx[o], CASK_WRITE}, {ddist[o], CASK_WRITE}};
            add(g, K.search, pl, &a, sizeof a, acc, 4);
            continue;
        }
        for (int c = 0; c < RC; c++) {
            cask_data *b = dbest[o * RC + c] = created(rt, nc * sizeof(cask_knn_best));
            cask_knn_search_args a = {nc, rbeg[c + 1] - rbeg[c], rbeg[c], pl->obs_in,
                                      CASK_KNN_PARTIAL, 1.0};
            cask_access acc[3] = {{dobs[o], CASK_READ}, {dprep[c], CASK_READ}, {b, CASK_WRITE}};
            add(g, K.search, pl, &a, sizeof a, acc, 3);
            if (c > 0) {
                cask_knn_merge_args ma = {nc};
                cask_access macc[2] = {{dbest[o * RC], CASK_RW}, {b, CASK_READ}};
                add(g, K.merge, pl, &ma, sizeof ma, macc, 2);
            }
        }
        cask_knn_finish_args fa = {nc, pl->scale, pl->obs_in, pl->ref_in};
        cask_access facc[5] = {{dobs[o], CASK_READ}, {dbest[o * RC], CASK_READ},
                               {didx[o], CASK_WRITE}, {ddist[o], CASK_WRITE},
                               {dref_all, CASK_READ}};
        add(g, K.finish, pl, &fa, sizeof fa, facc, 5);
    }
    cask_status st = cask_graph_compute(g);
    cr_assert_eq(st, CASK_OK, "compute: %s: %s", cask_status_string(st), cask_graph_error(g));
    cr_assert_eq(cask_graph_destroy(g), CASK_OK);
    for (int c = 0; c < RC; c++) {
        cask_data_destroy(dref[c]);
        cask_data_destroy(dprep[c]);
    }
    for (int o = 0; o < OC; o++) {
        cask_data_destroy(dobs[o]);
        cask_data_destroy(didx[o]);
        cask_data_destroy(ddist[o]);
        for (int c = 0; c < RC; c++)
            cask_data_destroy(dbest[o * RC + c]);
    }
    cask_data_destroy(dref_all);
    free(ref_all);
    free(dref), free(dprep), free(dobs), free(didx), free(ddist), free(dbest);
    free(rbeg), free(obeg);
}

/* Checks idx/dist against a brute force: a true nearest reference, the lowest index
 * among references at exactly the same coordinates, the distance within 1e-5. */
static void check_brute(const knn_plan *pl, const void *obs, int64_t n, const void *ref,
                        int64_t m, const int32_t *idx, const float *dist)
{
    const int of = pl->obs_in.f64, rf = pl->ref_in.f64;
    for (int64_t i = 0; i < n; i++) {
        double la = coord(obs, of, 2 * i), lo = coord(obs, of, 2 * i + 1), best = INFINITY;
        for (int64_t j = 0; j < m; j++) {
            double h = haversine(la, lo, coord(ref, rf, 2 * j), coord(ref, rf, 2 * j + 1),
                                 pl->obs_in.degrees);
            best = h < best ? h : best;
        }
        int64_t k = idx[i];
        cr_assert(k >= 0 && k < m, "obs %lld: index %lld out of range", (long long)i,
                  (long long)k);
        double rla = coord(ref, rf, 2 * k), rlo = coord(ref, rf, 2 * k + 1);
        double h = haversine(la, lo, rla, rlo, pl->obs_in.degrees);
        cr_assert(h <= best * (1 + 1e-6) + 1e-12,
                  "obs %lld: reference %lld at %.17g rad, the nearest is at %.17g", (long long)i,
                  (long long)k, h, best);
        for (int64_t j = 0; j < k; j++)
            cr_assert(!(coord(ref, rf, 2 * j) == rla && coord(ref, rf, 2 * j + 1) == rlo),
                      "obs %lld: reference %lld chosen, but %lld is the same point", (long long)i,
                      (long long)k, (long long)j);
        double want = best * pl->scale;
        cr_assert(fabs(dist[i] - want) <= 1e-5 * want + 1e-12 * pl->scale,
                  "obs %lld: distance %.9g, expected %.9g", (long long)i, dist[i], want);
    }
}

static cask_runtime *start_runtime(int ncpu, int sim_gpus)
{
    cask_config cfg = {0};
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_SIM_GPUS | CASK_CONFIG_BIND;
    cfg.ncpu = ncpu;
    cfg.ngpu = sim_gpus ? -1 : 0;
    cfg.sim_gpus = sim_gpus;
    cfg.bind = 0;
    cask_runtime *rt = NULL;
    cask_status st = cask_init(&cfg, &rt);
    cr_assert_eq(st, CASK_OK, "cask_init: %s", cask_status_string(st));
    return rt;
}

/* Runs with the plan on a fresh runtime and checks against the brute force. */
static void run_checked(const knn_plan *pl, int sim_gpus, const void *obs, int64_t n,
                        const void *ref, int64_t m, int32_t *idx, float *dist)
{
    cask_runtime *rt = start_runtime(2, sim_gpus);
    for (int64_t i = 0; i < n; i++) { /* poison */
        idx[i] = -7;
        dist[i] = NAN;
    }
    run_knn(rt, pl, obs, n, ref, m, idx, dist);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    check_brute(pl, obs, n, ref, m, idx, dist);
}

static void assert_same(const int32_t *i1, const float *d1, const int32_t *i2, const float *d2,
                        int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        cr_assert_eq(i1[i], i2[i], "%s: obs %lld: index %d vs %d", what, (long long)i, i1[i], i2[i]);
        cr_assert(memcmp(&d1[i], &d2[i], sizeof(float)) == 0, "%s: obs %lld: distance %.9g vs %.9g",
                  what, (long long)i, d1[i], d2[i]);
    }
}

#ifndef KNN_TEST_HELPERS_ONLY

TestSuite(knn_kernels, .timeout = 120);

Test(knn_kernels, random_points_match_brute_force)
{
    knn_rng = 11;
    int64_t n = 1500, m = 1000;
    float *obs = random_points(n), *ref = random_points(m);
    int32_t *idx = malloc(n * 4);
    float *dist = malloc(n * 4);
    knn_plan pl = plan_default();
    pl.scale = CASK_EARTH_RADIUS_KM;
    run_checked(&pl, 0, obs, n, ref, m, idx, dist);
    free(obs), free(ref), free(idx), free(dist);
}

Test(knn_kernels, chunked_observations_and_references_give_identical_results)
{
    knn_rng = 12;
    int64_t n = 1000, m = 900; /* m chunks not multiples of the tile */
    float *obs = random_points(n), *ref = random_points(m);
    int32_t *i1 = malloc(n * 4), *i2 = malloc(n * 4);
    float *d1 = malloc(n * 4), *d2 = malloc(n * 4);
    knn_plan pl = plan_default();
    run_checked(&pl, 0, obs, n, ref, m, i1, d1);
    int shapes[][2] = {{3, 1}, {1, 4}, {3, 5}, {7, 2}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        pl.obs_chunks = shapes[s][0];
        pl.ref_chunks = shapes[s][1];
        run_checked(&pl, 0, obs, n, ref, m, i2, d2);
        assert_same(i1, d1, i2, d2, n, "chunked");
    }
    free(obs), free(ref), free(i1), free(i2), free(d1), free(d2);
}

Test(knn_kernels, duplicate_references_resolve_to_the_lowest_index)
{
    knn_rng = 13;
    int64_t n = 600, m = 700;
    float *obs = random_points(n), *ref = random_points(m);
    /* copies of reference j at several higher indices, some in other tiles and chunks */
    for (int64_t j = 0; j < 40; j++) {
        for (int c = 1; c <= 3; c++) {
            int64_t k = j + c * 150 + (j % 7);
            ref[2 * k] = ref[2 * j];
            ref[2 * k + 1] = ref[2 * j + 1];
        }
    }
    /* observations exactly on duplicated references (distance 0) */
    for (int64_t i = 0; i < 40; i++) {
        obs[2 * i] = ref[2 * i];
        obs[2 * i + 1] = ref[2 * i + 1];
    }
    int32_t *i1 = malloc(n * 4), *i2 = malloc(n * 4);
    float *d1 = malloc(n * 4), *d2 = malloc(n * 4);
    knn_plan pl = plan_default();
    run_checked(&pl, 0, obs, n, ref, m, i1, d1);
    for (int64_t i = 0; i < 40; i++) {
        cr_assert_eq(i1[i], i, "obs %lld on reference %lld and its copies: got %d", (long long)i,
                     (long long)i, i1[i]);
        cr_assert_eq(d1[i], 0.0f);
    }
    pl.obs_chunks = 2;
    pl.ref_chunks = 5;
    run_checked(&pl, 0, obs, n, ref, m, i2, d2);
    assert_same(i1, d1, i2, d2, n, "duplicates, chunked");
    free(obs), free(ref), free(i1), free(i2), free(d1), free(d2);
}

Test(knn_kernels, all_references_identical)
{
    int64_t n = 50, m = 300;
    knn_rng = 14;
    float *obs = random_points(n), *ref = random_points(m);
    for (int64_t j = 1; j < m; j++) {
        ref[2 * j] = ref[0];
        ref[2 * j + 1] = ref[1];
    }
    int32_t *idx = malloc(n * 4);
    float *dist = malloc(n * 4);
    knn_plan pl = plan_default();
    pl.ref_chunks = 3;
    run_checked(&pl, 0, obs, n, ref, m, idx, dist);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(idx[i], 0);
    free(obs), free(ref), free(idx), free(dist);
}

Test(knn_kernels, poles_and_antimeridian)
{
    /* references on both sides of lon +-180, at the poles with several longitudes, and
     * near the equator; observations placed around them. */
    float ref[][2] = {{0, 179.999f}, {0, -179.99f},  {10, 180},     {10, -180},
                      {90, 0},       {90, 123},      {-90, -45},    {-90, 170},
                      {89.999f, 60}, {-89.9f, 0},    {0, 0},        {45, 90},
                      {20, -179.999f}, {20, 179.99f}};
    float obs[][2] = {{0, -179.9995f}, {20, 179.9995f}, {10, -179.99f}, {10, 179.99f},
                      {90, -77},       {89.9995f, 61},  {-90, 12},      {-89.95f, 179},
                      {1e-30f, 1e-30f}, {-0.0f, -0.0f}, {45, -270},     {0, 180}};
    int64_t n = sizeof obs / sizeof obs[0], m = sizeof ref / sizeof ref[0];
    int32_t idx[16];
    float dist[16];
    knn_plan pl = plan_default();
    run_checked(&pl, 0, obs, n, ref, m, idx, dist);
    cr_assert_eq(idx[0], 0, "lon -179.9995 is nearest to 179.999, got %d", idx[0]);
    cr_assert_eq(idx[1], 12, "lon 179.9995 is nearest to -179.999, got %d", idx[1]);
    cr_assert(idx[2] == 2 && idx[3] == 2, "lon 180 and -180 at lat 10: lowest index");
    cr_assert_eq(idx[4], 4, "the north pole is the north pole at any longitude");
    cr_assert_eq(dist[4], 0.0f);
    cr_assert_eq(idx[6], 6, "the south pole is the south pole at any longitude");
    cr_assert_eq(idx[10], 11, "lon -270 is lon 90");
}

Test(knn_kernels, radians_and_doubles)
{
    knn_rng = 15;
    int64_t n = 400, m = 500;
    double *obs = malloc(n * 2 * sizeof(double)), *ref = malloc(m * 2 * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        obs[2 * i] = asin(2 * urand() - 1);
        obs[2 * i + 1] = urand() * 2 * M_PI - M_PI;
    }
    for (int64_t j = 0; j < m; j++) {
        ref[2 * j] = asin(2 * urand() - 1);
        ref[2 * j + 1] = urand() * 2 * M_PI - M_PI;
    }
    /* near-ties: observations 1e-9 rad from references, and halfway between two */
    for (int64_t i = 0; i < 20; i++) {
        obs[2 * i] = ref[2 * i] + 1e-9;
        obs[2 * i + 1] = ref[2 * i + 1];
    }
    int32_t *idx = malloc(n * 4);
    float *dist = malloc(n * 4);
    knn_plan pl = plan_default();
    pl.obs_in = (cask_knn_points){1, 0};
    pl.ref_in = (cask_knn_points){1, 0};
    pl.ref_chunks = 2;
    run_checked(&pl, 0, obs, n, ref, m, idx, dist);
    for (int64_t i = 0; i < 20; i++)
        cr_assert_eq(idx[i], i);
    free(obs), free(ref), free(idx), free(dist);
}

Test(knn_kernels, dense_clusters_of_near_ties)
{
    /* References in a few clusters of radius ~1e-4 degrees, spread over every tile and
     * chunk: many float32 dot products tie within the margin, so the fast pass's second
     * tiles and full rescans are all exercised. */
    knn_rng = 18;
    int64_t n = 400, m = 1500;
    float *obs = random_points(n), *ref = random_points(m);
    float centres[4][2] = {{12.5f, 33.25f}, {-40, 170}, {89.99f, 0}, {0, -179.9999f}};
    for (int64_t j = 0; j < m; j++) {
        const float *c = centres[j % 4];
        ref[2 * j] = c[0] + (float)((urand() - 0.5) * 2e-4);
        ref[2 * j + 1] = c[1] + (float)((urand() - 0.5) * 2e-4);
    }
    for (int64_t i = 0; i < n; i++) {
        const float *c = centres[i % 4];
        obs[2 * i] = c[0] + (float)((urand() - 0.5) * (i % 8 < 4 ? 3e-4 : 3e-2));
        obs[2 * i + 1] = c[1] + (float)((urand() - 0.5) * (i % 8 < 4 ? 3e-4 : 3e-2));
    }
    int32_t *i1 = malloc(n * 4), *i2 = malloc(n * 4);
    float *d1 = malloc(n * 4), *d2 = malloc(n * 4);
    knn_plan pl = plan_default();
    run_checked(&pl, 0, obs, n, ref, m, i1, d1);
    pl.obs_chunks = 3;
    pl.ref_chunks = 4;
    run_checked(&pl, 0, obs, n, ref, m, i2, d2);
    assert_same(i1, d1, i2, d2, n, "clusters, chunked");
    free(obs), free(ref), free(i1), free(i2), free(d1), free(d2);
}

Test(knn_kernels, unit_vectors_are_accurate)
{
    /* The kernels' own sin/cos (identical bits on CPU and GPU) against libm. */
    knn_rng = 19;
    for (int i = 0; i < 200000; i++) {
        int deg = i & 1;
        double lat = (urand() - 0.5) * (deg ? 180 : M_PI), lon = (urand() - 0.5) * (deg ? 720 : 4 * M_PI);
        if (i < 16) {
            lat = (deg ? 90.0 : M_PI / 2) * (i % 3 - 1);
            lon = (deg ? 45.0 : M_PI / 4) * (i - 8);
        }
        double v[3];
        long double k = deg ? 3.14159265358979323846264338327950288L / 180 : 1;
        knn_unit_vector(lat, lon, deg, v);
        long double w[3] = {cosl(lat * k) * cosl(lon * k), cosl(lat * k) * sinl(lon * k),
                            sinl(lat * k)};
        for (int c = 0; c < 3; c++)
            cr_assert(fabsl(v[c] - w[c]) <= 2.5e-16L, "(%.17g, %.17g) %s: component %d is "
                      "%.17g, long double libm says %.17Lg", lat, lon, deg ? "deg" : "rad", c,
                      v[c], w[c]);
    }
}

Test(knn_kernels, small_and_odd_sizes)
{
    knn_rng = 16;
    int64_t sizes[][2] = {{1, 1}, {1, 2}, {9, 1}, {17, 127}, {33, 128}, {5, 129}, {130, 257}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s][0], m = sizes[s][1];
        float *obs = random_points(n), *ref = random_points(m);
        int32_t *idx = malloc(n * 4);
        float *dist = malloc(n * 4);
        knn_plan pl = plan_default();
        run_checked(&pl, 0, obs, n, ref, m, idx, dist);
        free(obs), free(ref), free(idx), free(dist);
    }
}

Test(knn_kernels, simulated_gpus_give_identical_results)
{
    knn_rng = 17;
    int64_t n = 800, m = 600;
    float *obs = random_points(n), *ref = random_points(m);
    int32_t *i1 = malloc(n * 4), *i2 = malloc(n * 4);
    float *d1 = malloc(n * 4), *d2 = malloc(n * 4);
    knn_plan pl = plan_default();
    pl.where = CASK_WHERE_CPU;
    pl.obs_chunks = 4;
    pl.ref_chunks = 3;
    run_checked(&pl, 0, obs, n, ref, m, i1, d1);
    pl.where = CASK_WHERE_GPU;
    run_checked(&pl, 2, obs, n, ref, m, i2, d2);
    assert_same(i1, d1, i2, d2, n, "simulated GPUs");
    free(obs), free(ref), free(i1), free(i2), free(d1), free(d2);
}

Test(knn_kernels, prepared_bytes_grow_with_m)
{
    cr_assert_eq(cask_knn_prepared_bytes(-1), 0);
    cr_assert_gt(cask_knn_prepared_bytes(0), 0);
    cr_assert_geq(cask_knn_prepared_bytes(1000), 1000 * 36);
    cr_assert_leq(cask_knn_prepared_bytes(2000), cask_knn_prepared_bytes(4000));
}

Test(knn_kernels, malformed_task_fails_with_a_message)
{
    cask_runtime *rt = start_runtime(1, 0);
    cask_knn_kernels K;
    cr_assert_eq(cask_knn_kernels_register(rt, &K), CASK_OK);
    float obs[8] = {0}, ref[8] = {0};
    int32_t idx[4];
    float dist[4];
    cask_data *dobs = reg(rt, obs, sizeof obs), *dref = reg(rt, ref, sizeof ref);
    cask_data *dprep = created(rt, cask_knn_prepared_bytes(4));
    cask_data *didx = reg(rt, idx, sizeof idx), *ddist = reg(rt, dist, sizeof dist);
    cask_graph *g = NULL;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    knn_plan pl = plan_default();
    cask_knn_prep_args pa = {4, {0, 1}};
    cask_access pacc[2] = {{dref, CASK_READ}, {dprep, CASK_WRITE}};
    add(g, K.prep, &pl, &pa, sizeof pa, pacc, 2);
    cask_knn_search_args sa = {8 /* more than obs holds */, 4, 0, {0, 1}, CASK_KNN_FINAL, 1.0};
    cask_access sacc[4] = {{dobs, CASK_READ}, {dprep, CASK_READ}, {didx, CASK_WRITE},
                           {ddist, CASK_WRITE}};
    add(g, K.search, &pl, &sa, sizeof sa, sacc, 4);
    cask_status st = cask_graph_compute(g);
    cr_assert_neq(st, CASK_OK);
    cr_assert(strstr(cask_graph_error(g), "knn search") != NULL, "error: %s", cask_graph_error(g));
    cask_graph_destroy(g);
    cask_shutdown(rt);
}

#endif /* KNN_TEST_HELPERS_ONLY */
