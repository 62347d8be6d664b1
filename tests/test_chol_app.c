/* tests/test_chol_app.c: cask-chol as a user runs it: a factor written to .npy and read
 * back, the checks printed, and bad input (a matrix not positive definite, NaN, a
 * non-square or integer .npy, bad options) failing with its exit code and message, with
 * no output file left behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <criterion/criterion.h>

static char dir[] = "/tmp/cask-chol-test-XXXXXX";
static char out[8192];

static void up(void)
{
    cr_assert(mkdtemp(dir));
}

static void down(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
    strcpy(dir, "/tmp/cask-chol-test-XXXXXX");
}

/* Runs cask-chol with args (a shell fragment); its exit code, its output in out. */
static int chol(const char *args)
{
    const char *exe = getenv("CASK_CHOL");
    cr_assert(exe, "set CASK_CHOL");
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s > log 2>&1", dir, exe, args);
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "%s/log", dir);
    FILE *f = fopen(cmd, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = 0;
    if (f) fclose(f);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* A .npy of a row-major n x n matrix of float64 (descr "<f8") or int32 ("<i4"). */
static void npy(const char *name, const char *descr, int rows, int cols, const double *v)
{
    char path[256], hdr[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    int len = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': "
                       "(%d, %d), }", descr, rows, cols);
    int total = 10 + len + 1, pad = (64 - total % 64) % 64;
    unsigned short hl = (unsigned short)(len + 1 + pad);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    for (int i = 0; i < rows * cols; i++) {
        if (!strcmp(descr, "<i4")) {
            int x = (int)v[i];
            fwrite(&x, 4, 1, f);
        } else {
            fwrite(&v[i], 8, 1, f);
        }
    }
    fclose(f);
}

static int exists(const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* diag(4) + 1 off the diagonal: SPD; its factor is known in closed form at (0,0). */
static double *matrix(int n)
{
    double *a = malloc((size_t)(n * n) * sizeof *a);
    for (int i = 0; i < n * n; i++) a[i] = 0.5;
    for (int i = 0; i < n; i++) a[i * n + i] = (double)n;
    return a;
}

TestSuite(chol_app, .init = up, .fini = down, .timeout = 120);

Test(chol_app, factors_a_file_and_writes_the_factor)
{
    double *a = matrix(40);
    npy("a.npy", "<f8", 40, 40, a);
    cr_assert_eq(chol("--in a.npy --tile 16 --out l.npy --check --rhs 3 --cpu-only"), 0, "%s", out);
    cr_assert(strstr(out, "check: ||A - L L^T||_F"), "%s", out);
    cr_assert(strstr(out, "solve backward error"), "%s", out);
    cr_assert(exists("l.npy"));
    char path[256];
    snprintf(path, sizeof path, "%s/l.npy", dir);
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    cr_assert_eq(size % 64, 0, "header and data: %ld bytes", size);
    cr_assert_eq(size - 128, 40 * 40 * 8, "%ld bytes", size);
    double l00;
    fseek(f, 128, SEEK_SET);
    cr_assert_eq(fread(&l00, 8, 1, f), 1);
    fclose(f);
    cr_assert(l00 > 6.3245 && l00 < 6.3246, "L(0,0) = %g, sqrt(40) expected", l00);
    free(a);
}

Test(chol_app, a_matrix_not_positive_definite_exits_3_and_leaves_no_file)
{
    double *a = matrix(40);
    a[20 * 40 + 20] = -5;
    npy("a.npy", "<f8", 40, 40, a);
    cr_assert_eq(chol("--in a.npy --tile 16 --out l.npy --cpu-only"), 3, "%s", out);
    cr_assert(strstr(out, "not positive definite"), "%s", out);
    cr_assert(strstr(out, "tile (1,1): the leading minor of order 21"), "%s", out);
    cr_assert(!exists("l.npy"), "an output was left behind");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", dir);
    cr_assert_neq(system(cmd), 0, "a temporary file was left behind");
    free(a);
}

Test(chol_app, nan_in_the_input_is_refused_before_any_work)
{
    double *a = matrix(8);
    a[3 * 8 + 5] = 0.0 / 0.0;
    npy("a.npy", "<f8", 8, 8, a);
    cr_assert_eq(chol("--in a.npy --tile 4 --out l.npy --cpu-only"), 2, "%s", out);
    cr_assert(strstr(out, "element (3,5)") && strstr(out, "must be finite"), "%s", out);
    cr_assert(!exists("l.npy"));
    free(a);
}

Test(chol_app, a_matrix_not_square_or_of_integers_is_refused)
{
    double v[24] = {0};
    npy("r.npy", "<f8", 4, 6, v);
    cr_assert_eq(chol("--in r.npy --cpu-only"), 2, "%s", out);
    cr_assert(strstr(out, "not a square matrix"), "%s", out);
    npy("i.npy", "<i4", 4, 4, v);
    cr_assert_eq(chol("--in i.npy --cpu-only"), 2, "%s", out);
    cr_assert(strstr(out, "float32 or float64"), "%s", out);
}

Test(chol_app, bad_options_exit_2)
{
    cr_assert_eq(chol("--n 0"), 2, "%s", out);
    cr_assert_eq(chol("--dtype f16"), 2, "%s", out);
    cr_assert_eq(chol("--tile x"), 2, "%s", out);
    cr_assert(strstr(out, "bad value"), "%s", out);
}
