/* tests/test_knn_k.c: the K-nearest kernels (prep_sorted, korder, ksearch, kmerge, kfinish)
 * through the public API, on CPU workers: K = 1, 2, 16, 64 against a float64 brute force
 * written here (haversine, libm only); exact ties to the lower index; pruned search
 * identical to brute force byte for byte over random and adversarial sets (all points
 * equal, two clusters at antipodes, a ring on the equator, poles, the antimeridian); the
 * same bytes whatever the chunking; K = 1 identical to the 1-NN kernels.
 * Suite knn_k, in `meson test --suite unit`. tests/test_knn_k_gpu.c includes this file with
 * KNN_K_HELPERS_ONLY defined and runs the same sets on real GPUs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cask/cask.h"
#include "knn_points.h"

/* ---- helpers ---- */

static double hav(double lat1, double lon1, double lat2, double lon2)
{
    double k = M_PI / 180.0;
    double sl = sin((lat2 - lat1) * k / 2), so = sin((lon2 - lon1) * k / 2);
    double h = sl * sl + cos(lat1 * k) * cos(lat2 * k) * so * so;
    return 2 * asin(sqrt(h < 1 ? h : 1));
}

typedef struct kplan {
    int k, prune, obs_chunks, ref_chunks;
    uint32_t where;
} kplan;

static cask_data *reg(cask_runtime *rt, void *p, size_t bytes)
{
    cask_data *d = NULL;
    cr_assert_eq(cask_data_register(rt, p, bytes, &d), CASK_OK);
    return d;
}

static cask_data *made(cask_runtime *rt, size_t bytes)
{
    cask_data *d = NULL;
    cr_assert_eq(cask_data_create(rt, bytes, &d), CASK_OK);
    return d;
}

static void add(cask_graph *g, cask_kernel *k, uint32_t where, const void *args, size_t sz,
                const cask_access *acc, int nacc)
{
    cask_task_desc td = {0};
    td.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE;
    td.kernel = k;
    td.access = acc;
    td.naccess = nacc;
    td.args = args;
    td.args_size = sz;
    td.where = where;
    cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
}

/* Runs the K search as cask-knn does (float degrees in, radians out): idx/dist n x k.
 * Returns the graph's status (the error message in msg when it failed). */
static cask_status run_k(cask_runtime *rt, const kplan *pl, const float *obs, int64_t n,
                         const float *ref, int64_t m, int32_t *idx, float *dist, char *msg,
                         size_t msglen)
{
    cask_knn_kernels K;
    cr_assert_eq(cask_knn_kernels_register(rt, &K), CASK_OK);
    cask_graph *g = NULL;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    const int OC = pl->obs_chunks, RC = pl->ref_chunks, k = pl->k;
    const cask_knn_points fmt = {0, 1};
    cask_data *h[4096];
    int nh = 0;
    cask_data *sorted[64], *best[64];
    int64_t rbeg[65], obeg[65];
    for (int c = 0; c <= RC; c++)
        rbeg[c] = m * c / RC;
    for (int c = 0; c <= OC; c++)
        obeg[c] = n * c / OC;
    for (int c = 0; c < RC; c++) {
        int64_t mc = rbeg[c + 1] - rbeg[c];
        cask_data *r = h[nh++] = reg(rt, (void *)(ref + 2 * rbeg[c]), (size_t)mc * 8);
        sorted[c] = h[nh++] = made(rt, cask_knn_sorted_bytes(mc));
        cask_data *rs = h[nh++] = made(rt, cask_knn_scratch_bytes(mc));
        cask_knn_prep_args a = {mc, fmt};
        cask_access acc[3] = {{r, CASK_READ}, {sorted[c], CASK_WRITE}, {rs, CASK_WRITE}};
        add(g, K.prep_sorted, pl->where, &a, sizeof a, acc, 3);
    }
    for (int o = 0; o < OC; o++) {
        int64_t nc = obeg[o + 1] - obeg[o];
        cask_data *dobs = h[nh++] = reg(rt, (void *)(obs + 2 * obeg[o]), (size_t)nc * 8);
        const int64_t kb = k > 0 ? k : 1; /* a bad k still gets buffers */
        cask_data *didx = h[nh++] = reg(rt, idx + obeg[o] * kb, (size_t)(nc * kb) * 4);
        cask_data *ddist = h[nh++] = reg(rt, dist + obeg[o] * kb, (size_t)(nc * kb) * 4);
        cask_data *scr = h[nh++] = made(rt, cask_knn_scratch_bytes(nc));
        cask_knn_korder_args oa = {nc, fmt, pl->prune, 0};
        cask_access oacc[2] = {{dobs, CASK_READ}, {scr, CASK_WRITE}};
        add(g, K.korder, pl->where, &oa, sizeof oa, oacc, 2);
        for (int c = 0; c < RC; c++) {
            cask_knn_ksearch_args a = {0};
            a.n = nc;
            a.m = rbeg[c + 1] - rbeg[c];
            a.ref_base = rbeg[c];
            a.in = fmt;
            a.mode = RC == 1 ? CASK_KNN_FINAL : CASK_KNN_PARTIAL;
            a.k = k;
            a.prune = pl->prune;
            a.scale = 1.0;
            cask_access acc[5] = {{dobs, CASK_READ}, {sorted[c], CASK_READ}, {scr, CASK_READ},
                                  {didx, CASK_WRITE}, {ddist, CASK_WRITE}};
            if (RC > 1) {
                best[c] = h[nh++] = made(rt, (size_t)(nc * k) * sizeof(cask_knn_best));
                acc[3] = (cask_access){best[c], CASK_WRITE};
            }
            add(g, K.ksearch, pl->where, &a, sizeof a, acc, RC == 1 ? 5 : 4);
            if (RC > 1 && c > 0) {
                cask_knn_kmerge_args ma = {nc, k};
                cask_access macc[2] = {{best[0], CASK_RW}, {best[c], CASK_READ}};
                add(g, K.kmerge, pl->where, &ma, sizeof ma, macc, 2);
            }
        }
        if (RC > 1) {
            cask_knn_kfinish_args fa = {nc, k, 1.0};
            cask_access facc[3] = {{best[0], CASK_READ}, {didx, CASK_WRITE}, {ddist, CASK_WRITE}};
            add(g, K.kfinish, pl->where, &fa, sizeof fa, facc, 3);
        }
    }
    cask_status st = cask_graph_compute(g);
    if (st && msg)
        snprintf(msg, msglen, "%s", cask_graph_error(g));
    cask_graph_destroy(g);
    for (int i = 0; i < nh; i++)
        cask_data_destroy(h[i]);
    return st;
}

static cask_runtime *cpu_runtime(void)
{
    cask_config cfg = {0};
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_BIND;
    cfg.ncpu = 2;
    cfg.ngpu = 0;
    cfg.bind = 0;
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    return rt;
}

/* Runs pl on a fresh CPU runtime into freshly poisoned arrays (caller frees). */
static void run_cpu(const kplan *pl, const float *obs, int64_t n, const float *ref, int64_t m,
                    int32_t **idx, float **dist)
{
    *idx = malloc((size_t)(n * pl->k) * 4);
    *dist = malloc((size_t)(n * pl->k) * 4);
    for (int64_t i = 0; i < n * pl->k; i++) {
        (*idx)[i] = -7;
        (*dist)[i] = -1;
    }
    cask_runtime *rt = cpu_runtime();
    char msg[512] = "";
    cask_status st = run_k(rt, pl, obs, n, ref, m, *idx, *dist, msg, sizeof msg);
    cr_assert_eq(st, CASK_OK, "compute: %s: %s", cask_status_string(st), msg);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

/* Against the float64 brute force: rank r's reference is at the r-th smallest true
 * distance (1e-6 relative, 1e-12 rad), the distance within 1e-5, no index twice, ties in
 * exact coordinates ordered by index, -1/NaN beyond m. */
static void check_k(const float *obs, int64_t n, const float *ref, int64_t m, int k,
                    const int32_t *idx, const float *dist)
{
    double *d = malloc((size_t)m * sizeof *d), *best = malloc((size_t)k * sizeof *best);
    for (int64_t i = 0; i < n; i++) {
        for (int r = 0; r < k; r++)
            best[r] = INFINITY;
        for (int64_t j = 0; j < m; j++) {
            d[j] = hav(obs[2 * i], obs[2 * i + 1], ref[2 * j], ref[2 * j + 1]);
            if (d[j] < best[k - 1]) {
                int p = k - 1;
                while (p > 0 && d[j] < best[p - 1]) {
                    best[p] = best[p - 1];
                    p--;
                }
                best[p] = d[j];
            }
        }
        for (int r = 0; r < k; r++) {
            int32_t got = idx[i * k + r];
            if (r >= m) {
                cr_assert_eq(got, -1, "obs %lld rank %d: index %d beyond m", (long long)i, r, got);
                cr_assert(isnan(dist[i * k + r]));
                continue;
            }
            cr_assert(got >= 0 && got < m, "obs %lld rank %d: index %d", (long long)i, r, got);
            for (int q = 0; q < r; q++)
                cr_assert_neq(idx[i * k + q], got, "obs %lld: index %d twice", (long long)i, got);
            cr_assert(fabs(d[got] - best[r]) <= 1e-6 * best[r] + 1e-12,
                      "obs %lld rank %d: ref %d at %.17g, true %.17g", (long long)i, r, got,
                      d[got], best[r]);
            cr_assert(fabs(dist[i * k + r] - best[r]) <= 1e-5 * best[r] + 1e-7,
                      "obs %lld rank %d: distance %.9g, true %.9g", (long long)i, r,
                      dist[i * k + r], best[r]);
            if (r > 0) {
                int32_t prev = idx[i * k + r - 1];
                if (ref[2 * prev] == ref[2 * got] && ref[2 * prev + 1] == ref[2 * got + 1])
                    cr_assert(prev < got, "obs %lld: equal references %d before %d",
                              (long long)i, prev, got);
            }
        }
    }
    free(d);
    free(best);
}

static void assert_same(const int32_t *i1, const float *d1, const int32_t *i2, const float *d2,
                        int64_t nk, const char *what)
{
    for (int64_t i = 0; i < nk; i++) {
        cr_assert_eq(i1[i], i2[i], "%s: entry %lld: index %d vs %d", what, (long long)i, i1[i],
                     i2[i]);
        cr_assert(memcmp(&d1[i], &d2[i], 4) == 0, "%s: entry %lld: distance %.9g vs %.9g", what,
                  (long long)i, d1[i], d2[i]);
    }
}

/* ---- the adversarial sets (float degrees) ---- */

static float *all_equal(int64_t n)
{
    float *p = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        p[2 * i] = 12.5f;
        p[2 * i + 1] = -33.25f;
    }
    return p;
}

/* Two tight clusters at antipodes (lat +-40, lon 10 / -170), half each, alternating. */
static float *antipodes(int64_t n)
{
    float *p = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        double s = 1e-3 * (urand() - 0.5);
        p[2 * i] = (float)((i & 1 ? 40.0 : -40.0) + s);
        p[2 * i + 1] = (float)((i & 1 ? 10.0 : -170.0) + s * 3);
    }
    return p;
}

/* A ring on the equator: evenly spaced longitudes, some repeated. */
static float *ring(int64_t n)
{
    float *p = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        p[2 * i] = 0.0f;
        p[2 * i + 1] = (float)(-180.0 + 360.0 * (double)(i % (n / 2 + 1)) / (double)(n / 2 + 1));
    }
    return p;
}

/* Near the poles and across the antimeridian. */
static float *poles_antimeridian(int64_t n)
{
    float *p = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) {
        double u = urand();
        switch (i % 4) {
        case 0: p[2 * i] = (float)(90.0 - 2.0 * u); p[2 * i + 1] = (float)(360 * urand() - 180); break;
        case 1: p[2 * i] = (float)(-90.0 + 2.0 * u); p[2 * i + 1] = (float)(360 * urand() - 180); break;
        case 2: p[2 * i] = (float)(60 * u - 30); p[2 * i + 1] = (float)(180.0 - 1.5 * urand()); break;
        default: p[2 * i] = (float)(60 * u - 30); p[2 * i + 1] = (float)(-180.0 + 1.5 * urand()); break;
        }
    }
    if (n > 4) {
        p[0] = 90.0f;
        p[2] = -90.0f;
        p[5] = 180.0f;
        p[7] = -180.0f;
    }
    return p;
}

#ifndef KNN_K_HELPERS_ONLY

TestSuite(knn_k, .timeout = 300);

/* brute and pruned, each against the float64 brute force, and equal byte for byte */
static void brute_vs_pruned(const float *obs, int64_t n, const float *ref, int64_t m, int k,
                            int oc, int rc)
{
    kplan b = {k, 0, oc, rc, CASK_WHERE_CPU}, p = {k, 1, oc, rc, CASK_WHERE_CPU};
    int32_t *ib, *ip;
    float *db, *dp;
    run_cpu(&b, obs, n, ref, m, &ib, &db);
    check_k(obs, n, ref, m, k, ib, db);
    run_cpu(&p, obs, n, ref, m, &ip, &dp);
    assert_same(ib, db, ip, dp, n * k, "pruned vs brute");
    free(ib), free(db), free(ip), free(dp);
}

Test(knn_k, k1_k2_k16_k64_match_the_float64_brute_force_and_pruning_changes_nothing)
{
    knn_rng = 31;
    int64_t n = 700, m = 2000;
    float *obs = random_points(n), *ref = random_points(m);
    int ks[] = {1, 2, 16, 64};
    for (int i = 0; i < 4; i++)
        brute_vs_pruned(obs, n, ref, m, ks[i], 1, 1);
    free(obs), free(ref);
}

Test(knn_k, chunked_observations_and_references_give_the_same_bytes)
{
    knn_rng = 32;
    int64_t n = 900, m = 1000;
    float *obs = random_points(n), *ref = random_points(m);
    kplan one = {16, 1, 1, 1, CASK_WHERE_CPU};
    int32_t *i1, *i2;
    float *d1, *d2;
    run_cpu(&one, obs, n, ref, m, &i1, &d1);
    int shapes[][3] = {{3, 1, 0}, {2, 3, 1}, {5, 4, 0}};
    for (int s = 0; s < 3; s++) {
        kplan pl = {16, shapes[s][2], shapes[s][0], shapes[s][1], CASK_WHERE_CPU};
        run_cpu(&pl, obs, n, ref, m, &i2, &d2);
        assert_same(i1, d1, i2, d2, n * 16, "chunked");
        free(i2), free(d2);
    }
    free(i1), free(d1), free(obs), free(ref);
}

Test(knn_k, duplicates_are_ordered_by_the_lower_index)
{
    knn_rng = 33;
    int64_t n = 300, m = 800;
    float *obs = random_points(n), *ref = random_points(m);
    for (int64_t j = 0; j < 400; j++) { /* reference j + 400 is a copy of j */
        ref[2 * (j + 400)] = ref[2 * j];
        ref[2 * (j + 400) + 1] = ref[2 * j + 1];
    }
    for (int64_t i = 0; i < 50; i++) { /* observations on references */
        obs[2 * i] = ref[2 * (i * 7)];
        obs[2 * i + 1] = ref[2 * (i * 7) + 1];
    }
    for (int pr = 0; pr < 2; pr++) {
        kplan pl = {4, pr, 1, pr ? 3 : 1, CASK_WHERE_CPU};
        int32_t *idx;
        float *dist;
        run_cpu(&pl, obs, n, ref, m, &idx, &dist);
        check_k(obs, n, ref, m, 4, idx, dist);
        for (int64_t i = 0; i < n; i++) { /* the nearest comes in pairs j, j + 400 */
            cr_assert_eq(idx[4 * i + 1], idx[4 * i] + 400, "obs %lld: %d then %d", (long long)i,
                         idx[4 * i], idx[4 * i + 1]);
            cr_assert_eq(idx[4 * i + 3], idx[4 * i + 2] + 400);
        }
        for (int64_t i = 0; i < 50; i++) {
            cr_assert_eq(idx[4 * i], i * 7);
            cr_assert_eq(dist[4 * i], 0.0f);
        }
        free(idx), free(dist);
    }
    free(obs), free(ref);
}

Test(knn_k, all_points_equal_keep_the_lowest_indices)
{
    int64_t n = 200, m = 500;
    float *obs = all_equal(n), *ref = all_equal(m);
    for (int pr = 0; pr < 2; pr++) {
        kplan pl = {16, pr, 2, 1, CASK_WHERE_CPU};
        int32_t *idx;
        float *dist;
        run_cpu(&pl, obs, n, ref, m, &idx, &dist);
        for (int64_t i = 0; i < n; i++)
            for (int r = 0; r < 16; r++) {
                cr_assert_eq(idx[16 * i + r], r);
                cr_assert_eq(dist[16 * i + r], 0.0f);
            }
        free(idx), free(dist);
    }
    brute_vs_pruned(obs, n, ref, m, 64, 1, 2);
    free(obs), free(ref);
}

Test(knn_k, antipodal_clusters_equator_ring_poles_and_antimeridian_prune_to_the_same_bytes)
{
    knn_rng = 34;
    float *a_obs = antipodes(500), *a_ref = antipodes(1500);
    brute_vs_pruned(a_obs, 500, a_ref, 1500, 16, 1, 1);
    brute_vs_pruned(a_obs, 500, a_ref, 1500, 1, 2, 2);
    float *r_obs = ring(400), *r_ref = ring(1024);
    brute_vs_pruned(r_obs, 400, r_ref, 1024, 2, 1, 1);
    brute_vs_pruned(r_obs, 400, r_ref, 1024, 64, 1, 1);
    float *p_obs = poles_antimeridian(600), *p_ref = poles_antimeridian(1300);
    brute_vs_pruned(p_obs, 600, p_ref, 1300, 1, 1, 1);
    brute_vs_pruned(p_obs, 600, p_ref, 1300, 16, 3, 2);
    /* mixed: uniform observations against clustered references and back */
    float *u = random_points(800);
    brute_vs_pruned(u, 800, a_ref, 1500, 4, 1, 1);
    brute_vs_pruned(a_obs, 500, u, 800, 4, 1, 1);
    free(a_obs), free(a_ref), free(r_obs), free(r_ref), free(p_obs), free(p_ref), free(u);
}

Test(knn_k, fewer_references_than_k_pad_with_minus_one)
{
    knn_rng = 35;
    int64_t n = 50, m = 10;
    float *obs = random_points(n), *ref = random_points(m);
    brute_vs_pruned(obs, n, ref, m, 16, 1, 1);
    brute_vs_pruned(obs, n, ref, m, 16, 1, 3);
    free(obs), free(ref);
}

Test(knn_k, k1_gives_the_bytes_of_the_one_nearest_kernels)
{
    knn_rng = 36;
    int64_t n = 800, m = 1500;
    float *obs = random_points(n), *ref = random_points(m);
    int32_t *ik;
    float *dk;
    kplan pl = {1, 1, 1, 1, CASK_WHERE_CPU};
    run_cpu(&pl, obs, n, ref, m, &ik, &dk);
    /* the 1-NN graph: prep, search FINAL */
    cask_runtime *rt = cpu_runtime();
    cask_knn_kernels K;
    cr_assert_eq(cask_knn_kernels_register(rt, &K), CASK_OK);
    int32_t *i1 = malloc(n * 4);
    float *d1 = malloc(n * 4);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    cask_data *dr = reg(rt, ref, m * 8), *dp = made(rt, cask_knn_prepared_bytes(m));
    cask_data *dob = reg(rt, obs, n * 8), *di = reg(rt, i1, n * 4), *dd = reg(rt, d1, n * 4);
    cask_knn_prep_args pa = {m, {0, 1}};
    cask_access pacc[2] = {{dr, CASK_READ}, {dp, CASK_WRITE}};
    add(g, K.prep, CASK_WHERE_CPU, &pa, sizeof pa, pacc, 2);
    cask_knn_search_args sa = {n, m, 0, {0, 1}, CASK_KNN_FINAL, 1.0};
    cask_access sacc[4] = {{dob, CASK_READ}, {dp, CASK_READ}, {di, CASK_WRITE}, {dd, CASK_WRITE}};
    add(g, K.search, CASK_WHERE_CPU, &sa, sizeof sa, sacc, 4);
    cr_assert_eq(cask_graph_compute(g), CASK_OK);
    cask_graph_destroy(g);
    cask_data_destroy(dr), cask_data_destroy(dp), cask_data_destroy(dob);
    cask_data_destroy(di), cask_data_destroy(dd);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    assert_same(ik, dk, i1, d1, n, "ksearch k=1 vs search");
    free(ik), free(dk), free(i1), free(d1), free(obs), free(ref);
}

Test(knn_k, bad_k_fails_the_task_with_a_message)
{
    knn_rng = 37;
    float *obs = random_points(10), *ref = random_points(10);
    int32_t idx[10 * 65];
    float dist[10 * 65];
    int bad[] = {0, 65};
    for (int b = 0; b < 2; b++) {
        kplan pl = {bad[b], 0, 1, 1, CASK_WHERE_CPU};
        cask_runtime *rt = cpu_runtime();
        char msg[512] = "";
        cask_status st = run_k(rt, &pl, obs, 10, ref, 10, idx, dist, msg, sizeof msg);
        cr_assert_neq(st, CASK_OK, "k = %d accepted", bad[b]);
        cr_assert(strstr(msg, "k = ") != NULL, "message: %s", msg);
        cask_shutdown(rt);
    }
    free(obs), free(ref);
}

#endif
