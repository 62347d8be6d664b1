/* tests/test_knn_k_gpu.c: the K-nearest kernels on real GPUs (korder, ksearch, kmerge,
 * kfinish in CUDA; prep_sorted on a CPU worker), against the float64 brute force and byte
 * for byte against the same graph on CPU workers, brute force and pruned, K = 1, 2, 16,
 * 64, over random and adversarial sets. Skips (and says so) without a real GPU. Suite
 * knn_k_gpu, in `meson test --suite gpu`. Reuses tests/test_knn_k.c's helpers. */
#define KNN_K_HELPERS_ONLY
#include "test_knn_k.c"

#include "gpu_main.h"

TestSuite(knn_k_gpu, .timeout = 300);

/* GPU brute and pruned: both equal (bytes) to the CPU brute force, which passes check_k. */
static void gpu_vs_cpu(const float *obs, int64_t n, const float *ref, int64_t m, int k, int oc,
                       int rc)
{
    cask_runtime *rt = gpu_runtime_ncpu(2);
    if (!rt)
        cr_skip_test("no GPU");
    kplan cpu = {k, 0, oc, rc, CASK_WHERE_CPU};
    int32_t *ic;
    float *dc;
    run_cpu(&cpu, obs, n, ref, m, &ic, &dc);
    check_k(obs, n, ref, m, k, ic, dc);
    int32_t *ig = malloc((size_t)(n * k) * 4);
    float *dg = malloc((size_t)(n * k) * 4);
    for (int pr = 0; pr < 2; pr++) {
        for (int64_t i = 0; i < n * k; i++) {
            ig[i] = -7;
            dg[i] = -1;
        }
        kplan pl = {k, pr, oc, rc, CASK_WHERE_GPU};
        char msg[512] = "";
        cask_status st = run_k(rt, &pl, obs, n, ref, m, ig, dg, msg, sizeof msg);
        cr_assert_eq(st, CASK_OK, "GPU compute: %s: %s", cask_status_string(st), msg);
        assert_same(ic, dc, ig, dg, n * k, pr ? "GPU pruned vs CPU brute" : "GPU brute vs CPU brute");
    }
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    free(ic), free(dc), free(ig), free(dg);
}

Test(knn_k_gpu, uniform_k1_k2_k16_k64)
{
    knn_rng = 41;
    int64_t n = 20000, m = 5000;
    float *obs = random_points(n), *ref = random_points(m);
    int ks[] = {1, 2, 16, 64};
    for (int i = 0; i < 4; i++)
        gpu_vs_cpu(obs, n, ref, m, ks[i], i == 3 ? 1 : 4, 1);
    gpu_vs_cpu(obs, n, ref, m, 16, 3, 3);
    free(obs), free(ref);
}

Test(knn_k_gpu, duplicates_and_all_equal)
{
    knn_rng = 42;
    int64_t n = 3000, m = 800;
    float *obs = random_points(n), *ref = random_points(m);
    for (int64_t j = 0; j < 400; j++) {
        ref[2 * (j + 400)] = ref[2 * j];
        ref[2 * (j + 400) + 1] = ref[2 * j + 1];
    }
    gpu_vs_cpu(obs, n, ref, m, 4, 2, 1);
    float *e_obs = all_equal(500), *e_ref = all_equal(700);
    gpu_vs_cpu(e_obs, 500, e_ref, 700, 64, 1, 1);
    gpu_vs_cpu(e_obs, 500, e_ref, 700, 1, 1, 2);
    free(obs), free(ref), free(e_obs), free(e_ref);
}

Test(knn_k_gpu, antipodes_ring_poles_antimeridian)
{
    knn_rng = 43;
    float *a_obs = antipodes(4000), *a_ref = antipodes(3000);
    gpu_vs_cpu(a_obs, 4000, a_ref, 3000, 16, 2, 1);
    float *r_obs = ring(3000), *r_ref = ring(2048);
    gpu_vs_cpu(r_obs, 3000, r_ref, 2048, 2, 1, 1);
    float *p_obs = poles_antimeridian(5000), *p_ref = poles_antimeridian(2600);
    gpu_vs_cpu(p_obs, 5000, p_ref, 2600, 1, 2, 1);
    gpu_vs_cpu(p_obs, 5000, p_ref, 2600, 64, 1, 2);
    free(a_obs), free(a_ref), free(r_obs), free(r_ref), free(p_obs), free(p_ref);
}

Test(knn_k_gpu, fewer_references_than_k)
{
    knn_rng = 44;
    float *obs = random_points(1000), *ref = random_points(20);
    gpu_vs_cpu(obs, 1000, ref, 20, 64, 1, 1);
    gpu_vs_cpu(obs, 1000, ref, 20, 16, 1, 2);
    free(obs), free(ref);
}

CASK_GPU_TEST_MAIN("knn_k_gpu")
