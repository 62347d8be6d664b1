/* tests/test_knn_io_check.c: the brute force of `cask-knn --check` (apps/knn), linked
 * without the runtime: haversine distances, and correct results passing where a wrong
 * choice, an index out of range or a wrong distance is caught. Each test states one
 * behaviour. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>

#include "check.h"
#include "generate.h"
#include "points.h"

Test(knn_check, haversine_known_distances)
{
    cr_assert_float_eq(knn_haversine(0, 0, 0, M_PI_2), M_PI_2, 1e-15);
    cr_assert_float_eq(knn_haversine(M_PI_2, 0, -M_PI_2, 0), M_PI, 1e-15);
    /* Paris - London, about 343.5 km on the mean-radius sphere */
    double d = knn_haversine(48.8566 * M_PI / 180, 2.3522 * M_PI / 180,
                             51.5074 * M_PI / 180, -0.1278 * M_PI / 180) * 6371.0088;
    cr_assert(fabs(d - 343.56) < 0.5, "%g km", d);
}

static void brute(const knn_points *obs, const knn_points *ref, int32_t *idx, float *dist)
{
    for (int64_t i = 0; i < obs->n; i++) {
        double a, b, best = INFINITY;
        knn_points_get(obs, i, &a, &b);
        for (int64_t j = 0; j < ref->n; j++) {
            double c, d;
            knn_points_get(ref, j, &c, &d);
            double h = knn_haversine(a, b, c, d);
            if (h < best) {
                best = h;
                idx[i] = (int32_t)j;
            }
        }
        dist[i] = (float)best;
    }
}

Test(knn_check, correct_results_pass_and_a_wrong_index_fails)
{
    knn_points obs, ref;
    cr_assert_eq(knn_points_alloc(300, 1, 0, NULL, &obs), CASK_OK);
    cr_assert_eq(knn_points_alloc(50, 0, 0, NULL, &ref), CASK_OK);
    knn_generate_points(5, KNN_STREAM_OBS, 0, 300, 1, obs.data);
    knn_generate_points(5, KNN_STREAM_REF, 0, 50, 0, ref.data);
    int32_t idx[300];
    float dist[300];
    brute(&obs, &ref, idx, dist);
    knn_check_report r;
    cr_assert_eq(knn_check(&obs, &ref, idx, dist, 1.0, 1000, &r), CASK_OK);
    cr_assert_eq(r.checked, 300);
    cr_assert_eq(r.other_choice, 0);
    cr_assert(r.max_err_chosen == 0, "%g", r.max_err_chosen);
    cr_assert(r.max_err_reported < 1e-7, "%g", r.max_err_reported);

    idx[299] = (idx[299] + 1) % 50; /* the last observation is always sampled */
    cr_assert_eq(knn_check(&obs, &ref, idx, dist, 1.0, 10, &r), CASK_OK);
    cr_assert_eq(r.checked, 10);
    cr_assert(r.max_err_chosen > KNN_CHECK_TOL_CHOSEN);
    cr_assert_eq(r.worst_chosen, 299);

    idx[0] = 50;
    cr_assert_eq(knn_check(&obs, &ref, idx, dist, 1.0, 10, &r), CASK_OK);
    cr_assert_eq(r.bad_index, 1);
    cr_assert_eq(r.first_bad_index, 0);

    idx[0] = 0;
    dist[0] *= 1.001f; /* also sampled: first */
    cr_assert_eq(knn_check(&obs, &ref, idx, dist, 1.0, 2, &r), CASK_OK);
    cr_assert(r.max_err_reported > KNN_CHECK_TOL_REPORTED);
    knn_points_free(&obs);
    knn_points_free(&ref);
}
