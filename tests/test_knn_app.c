/* test_knn_app.c: cask-knn end to end. Runs the built binary (path in $CASK_KNN) on small
 * inputs and checks its results against a float64 haversine brute force done here, its
 * exit status and messages on bad input, and that a failed run leaves no output file.
 * $KNN_APP_MODE=gpu runs the searches on the GPUs (suite gpu); otherwise --cpu-only. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define R_KM 6371.0088
#define DEG (M_PI / 180.0)

/* ---- running the binary ---- */

typedef struct run_result {
    int code;     /* exit status, or 128 + signal */
    char *err;    /* stderr */
    char *out;    /* stdout */
} run_result;

static char dir[64];

static char *slurp_path(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    if (len)
        *len = got;
    fclose(f);
    return s;
}

static const char *knn_path(void)
{
    const char *p = getenv("CASK_KNN");
    cr_assert(p && *p, "set CASK_KNN to the cask-knn binary");
    return p;
}

static int gpu_mode(void)
{
    const char *m = getenv("KNN_APP_MODE");
    return m && strcmp(m, "gpu") == 0;
}

/* Runs cask-knn with the given arguments (NULL-terminated), adding --cpu-only unless in
 * GPU mode or raw is set. */
static void run_v(run_result *r, int raw, va_list ap)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)knn_path();
    if (!raw && !gpu_mode())
        argv[argc++] = "--cpu-only";
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL) {
        cr_assert(argc < 63);
        argv[argc++] = (char *)a;
    }
    argv[argc] = NULL;

    char outp[128], errp[128];
    snprintf(outp, sizeof outp, "%s/.stdout", dir);
    snprintf(errp, sizeof errp, "%s/.stderr", dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(e, 0, "spawn %s: %s", argv[0], strerror(e));
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->out = slurp_path(outp, NULL);
    r->err = slurp_path(errp, NULL);
    unlink(outp);
    unlink(errp);
}

static void run(run_result *r, ...)
{
    va_list ap;
    va_start(ap, r);
    run_v(r, 0, ap);
    va_end(ap);
}

static void run_raw(run_result *r, ...)
{
    va_list ap;
    va_start(ap, r);
    run_v(r, 1, ap);
    va_end(ap);
}

static void run_free(run_result *r)
{
    free(r->err);
    free(r->out);
}

static void expect_ok(const run_result *r)
{
    cr_assert_eq(r->code, 0, "exit %d, stderr:\n%s", r->code, r->err);
}

static void expect_fail(const run_result *r, int code, const char *fragment)
{
    cr_assert_eq(r->code, code, "exit %d, want %d; stderr:\n%s", r->code, code, r->err);
    cr_assert(strstr(r->err, fragment), "stderr lacks '%s':\n%s", fragment, r->err);
    cr_assert(strncmp(r->err, "cask-knn: ", 10) == 0, "stderr:\n%s", r->err);
}

/* ---- the scratch folder ---- */

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_knn_app_XXXXXX");
    cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    if (!getenv("CASK_NCPU"))
        setenv("CASK_NCPU", "2", 1);
    /* the runtime's warnings about the machine (a container hiding /sys) are not the
     * app's messages that these tests read */
    setenv("CASK_LOG", "error", 1);
}

static void teardown(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || e->d_name[1] == '.'))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static const char *at(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static void write_text(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

/* Names of files in the scratch folder besides the given inputs, comma-separated. */
static void expect_only_files(int n, ...)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int known = 0;
        va_list ap;
        va_start(ap, n);
        for (int i = 0; i < n; i++)
            known |= strcmp(va_arg(ap, const char *), e->d_name) == 0;
        va_end(ap);
        cr_assert(known, "unexpected file '%s' left in %s", e->d_name, dir);
    }
    closedir(d);
}

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

typedef struct result {
    int n;
    long long *index;
    double *dist;
} result;

static result parse_csv_result(const char *name)
{
    char *s = slurp_path(at(name), NULL);
    cr_assert(s, "no output file %s", name);
    cr_assert(strncmp(s, "obs,ref_index,distance\n", 23) == 0, "header: %.40s", s);
    int n = 0;
    for (char *p = s; *p; p++)
        n += *p == '\n';
    n -= 1;
    cr_assert(n >= 0);
    result r = {n, malloc((size_t)n * sizeof(long long)), malloc((size_t)n * sizeof(double))};
    char *p = s + 23;
    for (int i = 0; i < n; i++) {
        char *end;
        long long obs = strtoll(p, &end, 10);
        cr_assert_eq(obs, i);
        cr_assert_eq(*end, ',');
        r.index[i] = strtoll(end + 1, &end, 10);
        cr_assert_eq(*end, ',');
        r.dist[i] = strtod(end + 1, &end);
        cr_assert_eq(*end, '\n');
        p = end + 1;
    }
    free(s);
    return r;
}

static result parse_npy_result(const char *name)
{
    size_t len;
    char *s = slurp_path(at(name), &len);
    cr_assert(s && len >= 10 && memcmp(s, "\x93NUMPY\x01\x00", 8) == 0);
    size_t hl = (unsigned char)s[8] | (size_t)(unsigned char)s[9] << 8;
    int n = 0;
    char *shape = strstr(s + 10, "'shape': (");
    cr_assert(shape && strstr(s + 10, "'descr': '<f8'") && strstr(s + 10, "False"));
    n = atoi(shape + 10);
    cr_assert_eq(len, 10 + hl + (size_t)n * 16);
    result r = {n, malloc((size_t)n * sizeof(long long)), malloc((size_t)n * sizeof(double))};
    for (int i = 0; i < n; i++) {
        double v[2];
        memcpy(v, s + 10 + hl + 16 * (size_t)i, 16);
        r.index[i] = (long long)v[0];
        cr_assert_eq((double)r.index[i], v[0]);
        r.dist[i] = v[1];
    }
    free(s);
    return r;
}

static void result_free(result *r)
{
    free(r->index);
    free(r->dist);
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

/* ---- bad command lines: exit 2 ---- */

Test(knn_app, usage_errors_exit_2)
{
    static const char *cases[][8] = {
        {"--bogus", NULL},
        {"--obs", "x.csv", NULL},
        {"--generate", "10", NULL},
        {"--generate", "10", "0", NULL},
        {"--generate", "10", "5", "--chunk", "0", NULL},
        {"--generate", "10", "5", "--units", "miles", NULL},
        {"--generate", "10", "5", "--obs", "x.csv", NULL},
        {"--generate", "10", "5", "--gpus", "1", "--cpu-only", NULL},
        {"--generate", "10", "5", "extra", NULL},
        {"--generate", "10", "5", "--repeat", NULL},
    };
    static const char *msgs[] = {
        "unknown option '--bogus'", "give --obs FILE and --ref FILE",
        "--generate needs two counts", "--generate M: '0' is not an integer >= 1",
        "--chunk: '0'", "--units: 'miles'", "--generate replaces --obs and --ref",
        "exclude each other", "unexpected argument 'extra'", "--repeat needs a value"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result rr;
        const char **c = cases[i];
        run_raw(&rr, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
        expect_fail(&rr, 2, msgs[i]);
        cr_assert(strstr(rr.err, "Try 'cask-knn --help'"), "%s", rr.err);
        run_free(&rr);
    }
}

Test(knn_app, help_and_version_exit_0)
{
    run_result rr;
    run_raw(&rr, "--help", NULL);
    expect_ok(&rr);
    cr_assert(strstr(rr.out, "Usage: cask-knn"), "%s", rr.out);
    run_free(&rr);
    run_raw(&rr, "--version", NULL);
    expect_ok(&rr);
    cr_assert(strstr(rr.out, "cask-knn (cask "), "%s", rr.out);
    run_free(&rr);
}

/* ---- bad data: exit 1, a message naming file/row/column, no output left ---- */

static void expect_data_error(const char *obs_text, const char *ref_text,
                              const char *fragment)
{
    write_text("obs.csv", obs_text);
    write_text("ref.csv", ref_text);
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"), NULL);
    expect_fail(&rr, 1, fragment);
    expect_only_files(2, "obs.csv", "ref.csv");
    run_free(&rr);
}

Test(knn_app, out_of_range_latitude)
{
    expect_data_error("lat,lon\n1,2\n", "lat,lon\n1,2\n95,3\n",
                      "ref.csv: data row 2 (line 3), column 1 'lat': latitude 95 is outside "
                      "[-90, 90]");
}

Test(knn_app, nan_value)
{
    expect_data_error("lat,lon\n1,NaN\n", "lat,lon\n1,2\n",
                      "obs.csv: data row 1 (line 2), column 2 'lon': longitude is NaN");
}

Test(knn_app, ragged_row)
{
    expect_data_error("lat,lon\n1,2\n3\n", "lat,lon\n1,2\n",
                      "obs.csv: data row 2 (line 3): 1 field, but the header has 2");
}

Test(knn_app, empty_file_and_header_only)
{
    expect_data_error("", "lat,lon\n1,2\n", "obs.csv: empty file");
    expect_data_error("lat,lon\n1,2\n", "lat,lon\n", "ref.csv: no data rows");
}

Test(knn_app, missing_column)
{
    expect_data_error("y,x\n1,2\n", "lat,lon\n1,2\n", "obs.csv: line 1: no latitude column");
}

Test(knn_app, chosen_columns)
{
    write_text("obs.csv", "y,x\n1,2\n");
    write_text("ref.csv", "y,x\n1,2\n5,5\n");
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--lat-col", "y", "--lon-col",
        "x", "--out", at("out.csv"), NULL);
    expect_ok(&rr);
    result res = parse_csv_result("out.csv");
    cr_assert_eq(res.index[0], 0);
    result_free(&res);
    run_free(&rr);
}

Test(knn_app, wrong_npy_dtype)
{
    FILE *f = fopen(at("ref.npy"), "wb");
    char h[128];
    const char *dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2), }";
    memset(h, ' ', sizeof h);
    memcpy(h, "\x93NUMPY\x01\x00", 8);
    h[8] = (char)(sizeof h - 10);
    h[9] = 0;
    memcpy(h + 10, dict, strlen(dict));
    h[sizeof h - 1] = '\n';
    fwrite(h, 1, sizeof h, f);
    int v[2] = {1, 2};
    fwrite(v, sizeof v, 1, f);
    fclose(f);
    write_text("obs.csv", "lat,lon\n1,2\n");
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.npy"), "--out", at("out.npy"), NULL);
    expect_fail(&rr, 1, "ref.npy: dtype '<i4' is not supported");
    expect_only_files(2, "obs.csv", "ref.npy");
    run_free(&rr);
}

Test(knn_app, unreadable_file)
{
    write_text("ref.csv", "lat,lon\n1,2\n");
    run_result rr;
    run(&rr, "--obs", at("nope.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"), NULL);
    expect_fail(&rr, 1, "nope.csv: cannot open: No such file or directory");
    expect_only_files(1, "ref.csv");
    run_free(&rr);
}

Test(knn_app, unwritable_output_fails_before_computing)
{
    run_result rr;
    run(&rr, "--generate", "10", "5", "--out", at("no/such/dir/out.csv"), NULL);
    expect_fail(&rr, 1, "out.csv: cannot create");
    run_free(&rr);
}

Test(knn_app, failure_keeps_an_existing_output)
{
    write_text("out.csv", "precious\n");
    write_text("obs.csv", "lat,lon\n1,2\n");
    write_text("ref.csv", "lat,lon\n1,inf\n");
    run_result rr;
    run(&rr, "--obs", at("obs.csv"), "--ref", at("ref.csv"), "--out", at("out.csv"), NULL);
    expect_fail(&rr, 1, "longitude is infinite");
    char *s = slurp_path(at("out.csv"), NULL);
    cr_assert_str_eq(s, "precious\n");
    free(s);
    expect_only_files(3, "obs.csv", "ref.csv", "out.csv");
    run_free(&rr);
}

Test(knn_app, interrupt_removes_the_temporary_output)
{
    if (gpu_mode())
        cr_skip_test("a GPU run may end before the signal");
    char *argv[] = {(char *)knn_path(), "--cpu-only", "--threads", "1", "--generate", "2^20",
                    "2^14", "-q", "--out", (char *)at("out.csv"), NULL};
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
    /* the temporary file is created first thing: interrupt as soon as it is there */
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", at("out.csv"), (long)pid);
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 10000 && access(tmp, F_OK) != 0; i++)
        nanosleep(&ms, NULL);
    cr_assert_eq(access(tmp, F_OK), 0, "no %s", tmp);
    kill(pid, SIGINT);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "status %#x", status);
    expect_only_files(0);
}
