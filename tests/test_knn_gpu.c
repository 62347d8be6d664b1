/* tests/test_knn_gpu.c: the haversine 1-NN kernels on real GPUs through the public API:
 * against the float64 brute force, and bitwise against the same graph run on CPU
 * workers (the CUDA and CPU implementations share their float64 math, so they must agree
 * to the bit), for one chunk, chunked references and observations, duplicates and
 * edge cases. Skips when the runtime has no real GPU. Suite knn_gpu, in
 * `meson test --suite gpu`. Reuses the helpers of tests/test_knn_kernels.c. */
#define KNN_TEST_HELPERS_ONLY
#include "test_knn_kernels.c"

#include "gpu_main.h"

TestSuite(knn_gpu, .timeout = 300);

/* Runs the plan on GPUs and on CPUs; both must pass the brute force and agree bitwise. */
static void gpu_vs_cpu(knn_plan pl, const void *obs, int64_t n, const void *ref, int64_t m)
{
    cask_runtime *rt = gpu_runtime_ncpu(2);
    if (!rt)
        cr_skip_test("no GPU");
    int32_t *ig = malloc(n * 4), *ic = malloc(n * 4);
    float *dg = malloc(n * 4), *dc = malloc(n * 4);
    for (int64_t i = 0; i < n; i++) {
        ig[i] = -7;
        dg[i] = NAN;
    }
    pl.where = CASK_WHERE_GPU;
    run_knn(rt, &pl, obs, n, ref, m, ig, dg);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    check_brute(&pl, obs, n, ref, m, ig, dg);
    pl.where = CASK_WHERE_CPU;
    run_checked(&pl, 0, obs, n, ref, m, ic, dc);
    assert_same(ig, dg, ic, dc, n, "GPU vs CPU");
    free(ig), free(ic), free(dg), free(dc);
}

Test(knn_gpu, random_points_one_chunk)
{
    knn_rng = 21;
    int64_t n = 5000, m = 3000;
    float *obs = random_points(n), *ref = random_points(m);
    knn_plan pl = plan_default();
    pl.scale = CASK_EARTH_RADIUS_KM;
    gpu_vs_cpu(pl, obs, n, ref, m);
    free(obs), free(ref);
}

Test(knn_gpu, chunked_with_duplicates)
{
    knn_rng = 22;
    int64_t n = 7000, m = 2500;
    float *obs = random_points(n), *ref = random_points(m);
    for (int64_t j = 0; j < 100; j++) {
        int64_t k = m - 1 - 3 * j;
        ref[2 * k] = ref[2 * j];
        ref[2 * k + 1] = ref[2 * j + 1];
        obs[2 * (50 * j)] = ref[2 * j];
        obs[2 * (50 * j) + 1] = ref[2 * j + 1];
    }
    knn_plan pl = plan_default();
    pl.obs_chunks = 3;
    pl.ref_chunks = 4;
    gpu_vs_cpu(pl, obs, n, ref, m);
    free(obs), free(ref);
}

Test(knn_gpu, identical_references_and_odd_sizes)
{
    knn_rng = 23;
    int64_t n = 2049, m = 129;
    float *obs = random_points(n), *ref = random_points(m);
    for (int64_t j = 64; j < m; j++) {
        ref[2 * j] = ref[0];
        ref[2 * j + 1] = ref[1];
    }
    knn_plan pl = plan_default();
    gpu_vs_cpu(pl, obs, n, ref, m);
    free(obs), free(ref);
}

Test(knn_gpu, radians_doubles_poles_antimeridian)
{
    knn_rng = 24;
    int64_t n = 3000, m = 700;
    double *obs = malloc(n * 2 * sizeof(double)), *ref = malloc(m * 2 * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
        obs[2 * i] = asin(2 * urand() - 1);
        obs[2 * i + 1] = urand() * 2 * M_PI - M_PI;
    }
    for (int64_t j = 0; j < m; j++) {
        ref[2 * j] = j % 5 == 0 ? (j % 2 ? M_PI / 2 : -M_PI / 2) : asin(2 * urand() - 1);
        ref[2 * j + 1] = j % 3 == 0 ? (j % 2 ? M_PI : -M_PI) : urand() * 2 * M_PI - M_PI;
    }
    knn_plan pl = plan_default();
    pl.obs_in = (cask_knn_points){1, 0};
    pl.ref_in = (cask_knn_points){1, 0};
    pl.ref_chunks = 2;
    gpu_vs_cpu(pl, obs, n, ref, m);
    free(obs), free(ref);
}

CASK_GPU_TEST_MAIN("knn_gpu")
