/* tests/test_knn_app_results.c: cask-knn's results end to end. Runs the built binary
 * (path in $CASK_KNN) on small inputs, CSV and .npy, and checks its results against a
 * float64 haversine brute force done here, and that they do not depend on chunks,
 * threads or simulated GPUs. $KNN_APP_MODE=gpu runs the searches on the GPUs (suite
 * gpu); otherwise --cpu-only. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knn_app_helpers.h"

#define R_KM 6371.0088
#define DEG (M_PI / 180.0)

/* ---- test data and the brute force ---- */

typedef struct pts {
    int n;
    double *lat, *lon; /* degrees */
} pts;

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* Points spread over the sphere, plus a cluster near the antimeridian and the poles. */
static pts make_points(int n, uint64_t seed)
{
    pts p = {n, malloc((size_t)n * sizeof(double)), malloc((size_t)n * sizeof(double))};
    for (int i = 0; i < n; i++) {
        double u = (double)lcg(&seed) * 0x1.0p-53, v = (double)lcg(&seed) * 0x1.0p-53;
        p.lat[i] = asin(2 * u - 1) / DEG;
        p.lon[i] = 360 * v - 180;
        if (i % 10 == 0)
            p.lon[i] = (v < 0.5 ? 179.9 : -179.9) + (v - 0.5) * 0.01;
        if (i % 17 == 0)
            p.lat[i] = (u < 0.5 ? -89.95 : 89.95);
    }
    return p;
}

static void pts_free(pts *p)
{
    free(p->lat);
    free(p->lon);
}

static void write_csv_points(const char *name, const pts *p, int lon_first)
{
    FILE *f = fopen(at(name), "w");
    cr_assert(f);
    fprintf(f, lon_first ? "id,\"Longitude\",note,LAT\n" : "lat,lon\n");
    for (int i = 0; i < p->n; i++) {
        if (lon_first)
            fprintf(f, "%d,%.17g,\"a, \"\"b\"\"\",%.17g\n", i, p->lon[i], p->lat[i]);
        else
            fprintf(f, "%.17g,%.17g\n", p->lat[i], p->lon[i]);
    }
    fclose(f);
}

static void write_npy_points(const char *name, const pts *p, int f32)
{
    FILE *f = fopen(at(name), "wb");
    cr_assert(f);
    char h[128];
    int hl = snprintf(h + 10, sizeof h - 10,
                      "{'descr': '<f%d', 'fortran_order': False, 'shape': (%d, 2), }",
                      f32 ? 4 : 8, p->n);
    int total = (10 + hl + 1 + 63) / 64 * 64;
    memset(h + 10 + hl, ' ', (size_t)(total - 10 - hl));
    h[total - 1] = '\n';
    memcpy(h, "\x93NUMPY\x01\x00", 8);
    h[8] = (char)(total - 10);
    h[9] = 0;
    fwrite(h, 1, (size_t)total, f);
    for (int i = 0; i < p->n; i++) {
        if (f32) {
            float v[2] = {(float)p->lat[i], (float)p->lon[i]};
            fwrite(v, sizeof v, 1, f);
        } else {
            double v[2] = {p->lat[i], p->lon[i]};
            fwrite(v, sizeof v, 1, f);
        }
    }
    fclose(f);
}

/* Classic haversine, radians in, radians out. */
static double hav(double la1, double lo1, double la2, double lo2)
{
    double a = pow(sin((la2 - la1) / 2), 2) + cos(la1) * cos(la2) * pow(sin((lo2 - lo1) / 2), 2);
    return 2 * atan2(sqrt(a), sqrt(1 - a));
}

static double dist_rad(const pts *o, int i, const pts *r, int j)
{
    return hav(o->lat[i] * DEG, o->lon[i] * DEG, r->lat[j] * DEG, r->lon[j] * DEG);
}

/* Every observation: the chosen reference is as near as the true nearest (relative 1e-6,
 * and the lowest index unless another is as near), the distance within 1e-5. */
static void expect_matches_brute_force(const result *res, const pts *o, const pts *r,
                                       double scale)
{
    cr_assert_eq(res->n, o->n);
    for (int i = 0; i < o->n; i++) {
        int best = 0;
        double db = INFINITY;
        for (int j = 0; j < r->n; j++) {
            double d = dist_rad(o, i, r, j);
            if (d < db) {
                db = d;
                best = j;
            }
        }
        long long got = res->index[i];
        cr_assert(got >= 0 && got < r->n, "obs %d: index %lld", i, got);
        double dg = dist_rad(o, i, r, (int)got);
        double den = fmax(db, 1e-12);
        cr_assert(fabs(dg - db) / den <= 1e-6,
                  "obs %d: chose %lld at %.17g rad, nearest is %d at %.17g", i, got, dg, best,
                  db);
        cr_assert(fabs(res->dist[i] / scale - db) / den <= 1e-5,
                  "obs %d: distance %.9g, want %.9g", i, res->dist[i], db * scale);
    }
}

/* ---- results ---- */

TestSuite(knn_app, .init = setup, .fini = teardown, .timeout = 120);

Test(knn_app, csv_in_csv_out_matches_the_brute_force_in_km)
{
    pts o = make_points(700, 1), r = make_points(90, 2);
    write_csv_points("obs.csv", &o, 1);
    write_csv_points("ref.csv", &r, 0);
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"), NULL);
    expect_ok(&rr);
    cr_assert(strstr(rr.err, "700 observations x 90 references"), "%s", rr.err);
    cr_assert(strstr(rr.err, "pairs/s"), "%s", rr.err);
    cr_assert(strstr(rr.err, "load") && strstr(rr.err, "compute") && strstr(rr.err, "write"),
              "%s", rr.err);
    result res = parse_csv_result("out.csv");
    expect_matches_brute_force(&res, &o, &r, R_KM);
    expect_only_files(3, "obs.csv", "ref.csv", "out.csv");
    result_free(&res);
    run_free(&rr);
    pts_free(&o);
    pts_free(&r);
}

Test(knn_app, npy_in_npy_out_in_radians)
{
    pts o = make_points(500, 3), r = make_points(64, 4);
    write_npy_points("obs.npy", &o, 0);
    write_npy_points("ref.npy", &r, 0);
    run_result rr;
    run(&rr, "--obs", at("obs.npy"), "--ref", at("ref.npy"), "--out", at("out.npy"), "--units",
        "rad", "-q", NULL);
    expect_ok(&rr);
    cr_assert_str_eq(rr.err, "", "-q prints nothing: %s", rr.err);
    result res = parse_npy_result("out.npy");
    expect_matches_brute_force(&res, &o, &r, 1.0);
    result_free(&res);
    run_free(&rr);
    pts_free(&o);
    pts_free(&r);
}

Test(knn_app, float32_npy_inputs)
{
    pts o = make_points(300, 5), r = make_points(50, 6);
    for (int i = 0; i < o.n; i++) { /* compare on exactly the float values */
        o.lat[i] = (float)o.lat[i];
        o.lon[i] = (float)o.lon[i];
    }
    for (int j = 0; j < r.n; j++) {
        r.lat[j] = (float)r.lat[j];
        r.lon[j] = (float)r.lon[j];
    }
    write_npy_points("obs.npy", &o, 1);
    write_npy_points("ref.npy", &r, 1);
    run_result rr;
    run(&rr, "--obs", at("obs.npy"), "--ref", at("ref.npy"), "--out", at("out.csv"), NULL);
    expect_ok(&rr);
    result res = parse_csv_result("out.csv");
    expect_matches_brute_force(&res, &o, &r, R_KM);
    result_free(&res);
    run_free(&rr);
    pts_free(&o);
    pts_free(&r);
}

Test(knn_app, reference_chunks_merge_to_the_same_result)
{
    pts o = make_points(640, 7), r = make_points(100, 8);
    write_csv_points("obs.csv", &o, 0);
    write_csv_points("ref.csv", &r, 0);
    run_result a, b, c;
    run(&a, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("one.csv"), NULL);
    expect_ok(&a);
    run(&b, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("many.csv"),
        "--ref-chunk", "7", "--chunk", "50", NULL);
    expect_ok(&b);
    cr_assert(strstr(b.err, "13 x 15 chunks"), "%s", b.err);
    run(&c, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("two.csv"),
        "--ref-chunk", "64", "--chunk", "1000", NULL);
    expect_ok(&c);
    result res = parse_csv_result("many.csv");
    expect_matches_brute_force(&res, &o, &r, R_KM);
    char *s1 = slurp_path(at("one.csv"), NULL), *s2 = slurp_path(at("many.csv"), NULL),
         *s3 = slurp_path(at("two.csv"), NULL);
    cr_assert_str_eq(s1, s2, "the result depends on the chunking");
    cr_assert_str_eq(s1, s3, "the result depends on the chunking");
    free(s1);
    free(s2);
    free(s3);
    result_free(&res);
    run_free(&a);
    run_free(&b);
    run_free(&c);
    pts_free(&o);
    pts_free(&r);
}

Test(knn_app, ties_go_to_the_lowest_index)
{
    write_text("ref.csv", "lat,lon\n10,10\n20,20\n10,10\n20,20\n");
    write_text("obs.csv", "lat,lon\n10,10.5\n20,20\n10,10\n");
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"),
        "--ref-chunk", "2", NULL);
    expect_ok(&rr);
    result res = parse_csv_result("out.csv");
    cr_assert_eq(res.index[0], 0);
    cr_assert_eq(res.index[1], 1);
    cr_assert_eq(res.dist[1], 0);
    cr_assert_eq(res.index[2], 0);
    cr_assert_eq(res.dist[2], 0);
    result_free(&res);
    run_free(&rr);
}

Test(knn_app, wrap_accepts_longitudes_past_180)
{
    write_text("ref.csv", "lat,lon\n0,-170\n0,100\n");
    write_text("obs.csv", "lat,lon\n0,191\n");
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"), NULL);
    expect_fail(&rr, 1, "obs.csv: data row 1 (line 2), column 2 'lon': longitude 191");
    run_free(&rr);
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"), "--wrap",
        NULL);
    expect_ok(&rr);
    result res = parse_csv_result("out.csv");
    cr_assert_eq(res.index[0], 0);
    cr_assert(fabs(res.dist[0] - 1 * DEG * R_KM) < 1e-3, "%g", res.dist[0]);
    result_free(&res);
    run_free(&rr);
}

Test(knn_app, radians_input)
{
    write_text("ref.csv", "lat,lon\n0,0\n0,1\n");
    write_text("obs.csv", "lat,lon\n0,0.9\n");
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"),
        "--radians", "--units", "rad", NULL);
    expect_ok(&rr);
    result res = parse_csv_result("out.csv");
    cr_assert_eq(res.index[0], 1);
    cr_assert(fabs(res.dist[0] - 0.1) < 1e-7, "%.9g", res.dist[0]);
    result_free(&res);
    run_free(&rr);
}

Test(knn_app, generate_with_check_passes)
{
    run_result rr;
    run(&rr, "--generate", "20000", "500", "--seed", "1", "--check", "50", NULL);
    expect_ok(&rr);
    cr_assert(strstr(rr.err, "check: 50 observations x 500 references"), "%s", rr.err);
    cr_assert(strstr(rr.err, ": ok"), "%s", rr.err);
    run_free(&rr);
}

Test(knn_app, generated_results_do_not_depend_on_chunks_or_threads)
{
    run_result a, b;
    run(&a, "--generate", "5000", "300", "--seed", "9", "--out", at("a.csv"), "--threads",
        "1", NULL);
    expect_ok(&a);
    run(&b, "--generate", "5000", "300", "--seed", "9", "--out", at("b.csv"), "--threads",
        "2", "--chunk", "333", "--ref-chunk", "77", NULL);
    expect_ok(&b);
    char *s1 = slurp_path(at("a.csv"), NULL), *s2 = slurp_path(at("b.csv"), NULL);
    cr_assert_str_eq(s1, s2);
    free(s1);
    free(s2);
    run_free(&a);
    run_free(&b);
}

Test(knn_app, csv_and_npy_outputs_agree_over_many_blocks)
{
    /* enough rows for several waves of the parallel CSV formatter */
    run_result a, b;
    run(&a, "--generate", "300001", "40", "--seed", "4", "--out", at("r.csv"), NULL);
    expect_ok(&a);
    run(&b, "--generate", "300001", "40", "--seed", "4", "--out", at("r.npy"), NULL);
    expect_ok(&b);
    result c = parse_csv_result("r.csv"), n = parse_npy_result("r.npy");
    cr_assert_eq(c.n, 300001);
    cr_assert_eq(n.n, 300001);
    for (int i = 0; i < c.n; i++) {
        cr_assert_eq(c.index[i], n.index[i], "row %d", i);
        cr_assert_eq((float)c.dist[i], (float)n.dist[i], "row %d", i);
    }
    result_free(&c);
    result_free(&n);
    run_free(&a);
    run_free(&b);
}

Test(knn_app, seeds_give_different_points)
{
    run_result a, b;
    run(&a, "--generate", "100", "30", "--seed", "1", "--out", at("a.csv"), NULL);
    run(&b, "--generate", "100", "30", "--seed", "2", "--out", at("b.csv"), NULL);
    expect_ok(&a);
    expect_ok(&b);
    char *s1 = slurp_path(at("a.csv"), NULL), *s2 = slurp_path(at("b.csv"), NULL);
    cr_assert_str_neq(s1, s2);
    free(s1);
    free(s2);
    run_free(&a);
    run_free(&b);
}

Test(knn_app, repeat_reports_the_median)
{
    run_result rr;
    run(&rr, "--generate", "3000", "100", "--repeat", "3", NULL);
    expect_ok(&rr);
    cr_assert(strstr(rr.err, "median of 3"), "%s", rr.err);
    run_free(&rr);
}

Test(knn_app, simulated_gpus_give_the_same_result)
{
    if (gpu_mode())
        cr_skip_test("real GPUs in use");
    pts o = make_points(400, 11), r = make_points(70, 12);
    write_csv_points("obs.csv", &o, 0);
    write_csv_points("ref.csv", &r, 0);
    run_result a, b;
    run(&a, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("cpu.csv"), NULL);
    expect_ok(&a);
    setenv("CASK_SIM_GPUS", "2", 1);
    run_raw(&b, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("gpu.csv"),
            "--ref-chunk", "30", NULL);
    unsetenv("CASK_SIM_GPUS");
    expect_ok(&b);
    result res = parse_csv_result("gpu.csv");
    expect_matches_brute_force(&res, &o, &r, R_KM);
    result_free(&res);
    run_free(&a);
    run_free(&b);
    pts_free(&o);
    pts_free(&r);
}
