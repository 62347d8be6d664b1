/* tests/test_knn_k_app.c: cask-knn's --k, --method and --clusters options, end to end:
 * the K > 1 output formats (CSV long form, .npy of shape (N, K, 2)), pruned output
 * identical to brute force byte for byte (uniform and clustered, CSV and .npy), --check
 * with K > 1, auto's choice on tiny and one-spot data, and the usage errors. Runs the
 * binary named by $CASK_KNN (CPU only). Suite knn_k_app, in `meson test --suite unit`. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/knn_k_app.XXXXXX");
    cr_assert(mkdtemp(dir), "mkdtemp");
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)!system(cmd);
}

/* Runs cask-knn with args (shell words) on CPU workers, stderr into dir/err; exit status. */
static int knn(const char *args)
{
    const char *exe = getenv("CASK_KNN");
    cr_assert(exe, "CASK_KNN is not set");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' --cpu-only --threads 2 %s > out.txt 2> err.txt",
             dir, exe, args);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "cask-knn did not exit normally: %s", args);
    return WEXITSTATUS(st);
}

static char *slurp(const char *name, size_t *len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
    p[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return p;
}

static void same_files(const char *a, const char *b)
{
    size_t la, lb;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    cr_assert_eq(la, lb, "%s and %s: %zu vs %zu bytes", a, b, la, lb);
    cr_assert(memcmp(x, y, la) == 0, "%s and %s differ", a, b);
    free(x), free(y);
}

TestSuite(knn_k_app, .init = setup, .fini = teardown, .timeout = 300);

Test(knn_k_app, k_csv_has_one_row_per_observation_and_rank)
{
    cr_assert_eq(knn("--generate 300 500 --seed 2 --k 3 --out r.csv"), 0);
    size_t n;
    char *s = slurp("r.csv", &n);
    cr_assert(strncmp(s, "obs,rank,ref_index,distance\n", 28) == 0, "header: %.40s", s);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    cr_assert_eq(lines, 1 + 300 * 3);
    long obs, rank, ref;
    double d1, d2, d3;
    char *p = strchr(s, '\n') + 1;
    cr_assert_eq(sscanf(p, "%ld,%ld,%ld,%lf", &obs, &rank, &ref, &d1), 4);
    cr_assert(obs == 0 && rank == 1 && ref >= 0 && ref < 500);
    p = strchr(p, '\n') + 1;
    cr_assert_eq(sscanf(p, "%ld,%ld,%ld,%lf", &obs, &rank, &ref, &d2), 4);
    cr_assert(obs == 0 && rank == 2 && d2 >= d1);
    p = strchr(p, '\n') + 1;
    cr_assert_eq(sscanf(p, "%ld,%ld,%ld,%lf", &obs, &rank, &ref, &d3), 4);
    cr_assert(obs == 0 && rank == 3 && d3 >= d2);
    free(s);
}

Test(knn_k_app, k_npy_has_shape_n_k_2)
{
    cr_assert_eq(knn("--generate 100 50 --k 7 --out r.npy"), 0);
    size_t n;
    char *s = slurp("r.npy", &n);
    cr_assert(strstr(s + 10, "'shape': (100, 7, 2)") != NULL, "header: %.80s", s + 10);
    size_t hdr = 10 + (unsigned char)s[8] + 256u * (unsigned char)s[9];
    cr_assert_eq(n, hdr + 100 * 7 * 2 * 8);
    free(s);
}

Test(knn_k_app, pruned_output_is_brute_force_output_byte_for_byte)
{
    const char *sets[] = {"--generate 20000 3000 --seed 5", "--generate 20000 3000 --seed 6 --clusters 30"};
    const char *ks[] = {"1", "5"};
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 2; k++) {
            char a[256];
            const char *ext = k ? "npy" : "csv";
            snprintf(a, sizeof a, "%s --k %s --method brute --out b.%s", sets[s], ks[k], ext);
            cr_assert_eq(knn(a), 0, "%s", a);
            snprintf(a, sizeof a, "%s --k %s --method pruned --out p.%s --chunk 5000", sets[s],
                     ks[k], ext);
            cr_assert_eq(knn(a), 0, "%s", a);
            char b[16], p[16];
            snprintf(b, sizeof b, "b.%s", ext);
            snprintf(p, sizeof p, "p.%s", ext);
            same_files(b, p);
        }
}

Test(knn_k_app, check_with_k_passes_and_auto_says_what_it_chose)
{
    cr_assert_eq(knn("--generate 40000 4000 --seed 3 --k 8 --check 50 --chunk 40000"), 0);
    char *e = slurp("err.txt", NULL);
    cr_assert(strstr(e, "k = 8, method pruned (auto:") != NULL, "%s", e);
    cr_assert(strstr(e, "force: ok") != NULL, "%s", e);
    free(e);
    cr_assert_eq(knn("--generate 100 50 --k 2"), 0); /* tiny: brute force */
    e = slurp("err.txt", NULL);
    cr_assert(strstr(e, "k = 2, method brute") != NULL, "%s", e);
    free(e);
    cr_assert_eq(knn("--generate 40000 4000 --clusters 1 --chunk 40000"), 0); /* one spot */
    e = slurp("err.txt", NULL);
    cr_assert(strstr(e, "k = 1, method brute (auto:") != NULL, "%s", e);
    free(e);
}

Test(knn_k_app, bad_k_method_and_combinations_are_usage_errors)
{
    const char *bad[] = {"--generate 10 10 --k 0", "--generate 10 10 --k 65",
                         "--generate 10 10 --method fast", "--generate 10 10 --stream --k 2",
                         "--obs a.csv --ref b.csv --clusters 3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(knn(bad[i]), 2, "%s", bad[i]);
        char *e = slurp("err.txt", NULL);
        cr_assert(strstr(e, "Try 'cask-knn --help'") != NULL, "%s: %s", bad[i], e);
        free(e);
    }
}
