/* tests/test_knn_io_out.c: cask-knn's result files (apps/knn), linked without the
 * runtime: CSV and .npy contents, and the all-or-nothing output (a temporary file renamed
 * at commit, removed at abort). Each test states one behaviour. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "points.h"

static char *slurp(FILE *f, size_t *len)
{
    fflush(f);
    long n = ftell(f);
    char *s = malloc((size_t)n + 1);
    rewind(f);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    *len = (size_t)n;
    return s;
}

Test(knn_out, csv_has_a_header_and_exact_floats)
{
    int32_t idx[3] = {4, 0, 2147483647};
    float dist[3] = {1.5f, 0.1f, 12345.678f};
    FILE *f = tmpfile();
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_csv_write(f, "o.csv", idx, dist, 3, err, sizeof err), CASK_OK);
    size_t len;
    char *s = slurp(f, &len);
    cr_assert_str_eq(s, "obs,ref_index,distance\n0,4,1.5\n1,0,0.100000001\n"
                        "2,2147483647,12345.6777\n");
    cr_assert_eq(strtof("0.100000001", NULL), 0.1f);
    free(s);
    fclose(f);
}

Test(knn_out, npy_is_an_n_by_2_float64_array)
{
    enum { N = 20000 }; /* more than one write buffer */
    static int32_t idx[N];
    static float dist[N];
    for (int i = 0; i < N; i++) {
        idx[i] = N - i;
        dist[i] = (float)i * 0.25f;
    }
    FILE *f = tmpfile();
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_npy_write(f, "o.npy", idx, dist, N, err, sizeof err), CASK_OK);
    size_t len;
    char *s = slurp(f, &len);
    cr_assert(memcmp(s, "\x93NUMPY\x01\x00", 8) == 0);
    size_t hl = (unsigned char)s[8] | (size_t)(unsigned char)s[9] << 8;
    cr_assert_eq((10 + hl) % 64, 0);
    cr_assert_eq(s[10 + hl - 1], '\n');
    cr_assert(strstr(s + 10, "'descr': '<f8', 'fortran_order': False, 'shape': (20000, 2)"));
    cr_assert_eq(len, 10 + hl + (size_t)N * 16);
    const double *d = (const double *)(s + 10 + hl);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(d[2 * i], (double)(N - i));
        cr_assert_eq(d[2 * i + 1], (double)i * 0.25);
    }
    free(s);
    fclose(f);
}

Test(knn_out, commit_renames_and_leaves_no_temporary)
{
    char dir[] = "/tmp/test_knn_out_XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[128], tmp[160];
    snprintf(path, sizeof path, "%s/r.csv", dir);
    knn_outfile o;
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_outfile_open(&o, path, err, sizeof err), CASK_OK, "%s", err);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    cr_assert_str_eq(o.tmp_path, tmp);
    cr_assert_eq(access(path, F_OK), -1, "the final file must not exist before commit");
    fputs("hello\n", o.f);
    cr_assert_eq(knn_outfile_commit(&o, err, sizeof err), CASK_OK, "%s", err);
    cr_assert_eq(access(tmp, F_OK), -1);
    FILE *f = fopen(path, "r");
    char line[16] = "";
    cr_assert(fgets(line, sizeof line, f));
    cr_assert_str_eq(line, "hello\n");
    fclose(f);
    unlink(path);
    rmdir(dir);
}

Test(knn_out, abort_removes_the_temporary_and_keeps_an_old_file)
{
    char dir[] = "/tmp/test_knn_out_XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/r.csv", dir);
    FILE *old = fopen(path, "w");
    fputs("old\n", old);
    fclose(old);
    knn_outfile o;
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_outfile_open(&o, path, err, sizeof err), CASK_OK, "%s", err);
    char *tmp = strdup(o.tmp_path);
    fputs("partial", o.f);
    knn_outfile_abort(&o);
    cr_assert_eq(access(tmp, F_OK), -1);
    FILE *f = fopen(path, "r");
    char line[16] = "";
    cr_assert(fgets(line, sizeof line, f));
    cr_assert_str_eq(line, "old\n");
    fclose(f);
    free(tmp);
    unlink(path);
    rmdir(dir);
}

Test(knn_out, unwritable_folder_fails_at_open)
{
    knn_outfile o;
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_outfile_open(&o, "/nonexistent/dir/r.csv", err, sizeof err),
                 CASK_ERR_IO);
    cr_assert(strstr(err, "/nonexistent/dir/r.csv: cannot create") == err, "%s", err);
    cr_assert(strstr(err, "No such file or directory"), "%s", err);
}

Test(knn_out, npy_names_are_recognised_in_any_case)
{
    cr_assert(knn_path_is_npy("a.npy"));
    cr_assert(knn_path_is_npy("dir/A.NPY"));
    cr_assert(!knn_path_is_npy("a.csv"));
    cr_assert(!knn_path_is_npy("npy"));
}
