/* tests/test_knn_io_npy.c: cask-knn's point files (apps/knn), linked without the
 * runtime: opening them and telling .npy from CSV by their bytes, and the .npy reader
 * (dtypes, versions, byte order, Fortran order, shapes, truncation, bad values). Each
 * test states one behaviour. */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knn_io_helpers.h"
#include "points.h"

/* Writes bytes to a fresh temporary file whose name ends in suffix; returns its path. */
static char *temp_file(const void *data, size_t len, const char *suffix)
{
    char *path = malloc(256);
    snprintf(path, 256, "/tmp/test_knn_io_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    cr_assert(fd >= 0, "mkstemps: %s", strerror(errno));
    cr_assert_eq(write(fd, data, len), (ssize_t)len);
    close(fd);
    return path;
}

/* A .npy file: header dict text, then the given data bytes. */
static char *npy_file(const char *dict, const void *data, size_t len, const char *suffix,
                      int version)
{
    char buf[4096];
    size_t pre = version == 1 ? 10 : 12;
    size_t hl = strlen(dict) + 1, total = (pre + hl + 63) / 64 * 64;
    memset(buf, ' ', total);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (char)version;
    buf[7] = 0;
    size_t h = total - pre;
    buf[8] = (char)(h & 0xff);
    buf[9] = (char)(h >> 8);
    if (version != 1) {
        buf[10] = 0;
        buf[11] = 0;
    }
    memcpy(buf + pre, dict, strlen(dict));
    buf[total - 1] = '\n';
    cr_assert(total + len < sizeof buf);
    memcpy(buf + total, data, len);
    return temp_file(buf, total + len, suffix);
}

static cask_status read_path(const char *path, const knn_read_opts *o, knn_points *p,
                             char *err)
{
    return knn_points_read(path, o, NULL, p, err, KNN_ERRLEN);
}

/* ---- files and format detection ---- */

Test(knn_read, missing_file_is_an_io_error_naming_it)
{
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(read_path("/nonexistent/obs.csv", &DEG, &p, err), CASK_ERR_IO);
    cr_assert_str_eq(err, "/nonexistent/obs.csv: cannot open: No such file or directory");
}

Test(knn_read, a_directory_is_an_io_error)
{
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(read_path("/tmp", &DEG, &p, err), CASK_ERR_IO, "%s", err);
    cr_assert(strstr(err, "/tmp: ") == err && strstr(err, "Is a directory"), "%s", err);
}

Test(knn_read, npy_is_detected_by_magic_whatever_the_name)
{
    double d[4] = {10, 20, -30, 40};
    char *path = npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", d,
                          sizeof d, ".csv", 1);
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(read_path(path, &DEG, &p, err), CASK_OK, "%s", err);
    cr_assert_eq(p.n, 2);
    expect_point(&p, 1, -30, 40);
    knn_points_free(&p);
    unlink(path);
    free(path);
}

Test(knn_read, csv_is_read_whatever_the_name)
{
    const char *t = "lat,lon\n1,2\n";
    char *path = temp_file(t, strlen(t), ".dat");
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(read_path(path, &DEG, &p, err), CASK_OK, "%s", err);
    expect_point(&p, 0, 1, 2);
    knn_points_free(&p);
    unlink(path);
    free(path);
}

Test(knn_read, a_npy_name_without_the_magic_is_an_error)
{
    const char *t = "lat,lon\n1,2\n";
    char *path = temp_file(t, strlen(t), ".npy");
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(read_path(path, &DEG, &p, err), CASK_ERR_FORMAT);
    cr_assert(strstr(err, "not a .npy file"), "%s", err);
    unlink(path);
    free(path);
}

/* ---- .npy ---- */

static void expect_npy(const char *dict, const void *data, size_t len, int version,
                       const knn_read_opts *o, cask_status want, const char *fragment,
                       knn_points *p)
{
    char *path = npy_file(dict, data, len, ".npy", version);
    char err[KNN_ERRLEN] = "";
    cask_status st = read_path(path, o, p, err);
    cr_assert_eq(st, want, "status %d, want %d (%s)", st, want, err);
    if (fragment) {
        cr_assert(strstr(err, fragment), "message '%s' lacks '%s'", err, fragment);
        cr_assert(strncmp(err, path, strlen(path)) == 0, "'%s' does not name the file", err);
    }
    unlink(path);
    free(path);
}

Test(knn_npy, float32_stays_float32)
{
    float d[6] = {1.5f, 2.5f, -3, 4, 89, -179};
    knn_points p;
    expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", d, sizeof d, 1,
               &DEG, CASK_OK, NULL, &p);
    cr_assert_eq(p.f64, 0);
    cr_assert_eq(p.n, 3);
    expect_point(&p, 0, 1.5, 2.5);
    expect_point(&p, 2, 89, -179);
    knn_points_free(&p);
}

Test(knn_npy, version_2_header_and_big_endian_float64)
{
    double d[2] = {12.25, -45.5};
    unsigned char be[16];
    for (int i = 0; i < 2; i++)
        for (int b = 0; b < 8; b++)
            be[8 * i + b] = ((unsigned char *)&d[i])[7 - b];
    knn_points p;
    expect_npy("{'descr': '>f8', 'fortran_order': False, 'shape': (1, 2), }", be, sizeof be,
               2, &DEG, CASK_OK, NULL, &p);
    expect_point(&p, 0, 12.25, -45.5);
    knn_points_free(&p);
}

Test(knn_npy, fortran_order_is_transposed)
{
    double d[6] = {1, 2, 3, 10, 20, 30}; /* lat column, then lon column */
    knn_points p;
    expect_npy("{'descr': '<f8', 'fortran_order': True, 'shape': (3, 2), }", d, sizeof d, 1,
               &DEG, CASK_OK, NULL, &p);
    expect_point(&p, 0, 1, 10);
    expect_point(&p, 2, 3, 30);
    knn_points_free(&p);
}

Test(knn_npy, wrong_dtype_is_rejected)
{
    long long d[2] = {1, 2};
    knn_points p;
    expect_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }", d, sizeof d, 1,
               &DEG, CASK_ERR_FORMAT, "dtype '<i8' is not supported", &p);
    expect_npy("{'descr': [('lat', '<f8'), ('lon', '<f8')], 'fortran_order': False, "
               "'shape': (1,), }", d, sizeof d, 1, &DEG, CASK_ERR_FORMAT,
               "not a structured one", &p);
}

Test(knn_npy, wrong_shape_is_rejected)
{
    double d[6] = {0};
    knn_points p;
    expect_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d, sizeof d, 1,
               &DEG, CASK_ERR_FORMAT, "shape (2, 3) is not supported: need (N, 2)", &p);
    expect_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", d, sizeof d, 1,
               &DEG, CASK_ERR_FORMAT, "shape (6,) is not supported", &p);
    expect_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 2), }", d, 0, 1, &DEG,
               CASK_ERR_FORMAT, "no data rows", &p);
}

Test(knn_npy, truncated_data_is_reported)
{
    double d[3] = {0};
    knn_points p;
    expect_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", d, sizeof d, 1,
               &DEG, CASK_ERR_FORMAT, "header says 2 rows (32 bytes of data) but only 24", &p);
}

Test(knn_npy, bad_values_name_row_and_column)
{
    double d[6] = {0, 0, 1, 2, 0, NAN};
    knn_points p;
    expect_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }", d, sizeof d, 1,
               &DEG, CASK_ERR_FORMAT, "row 3 (index 2), column 2 'lon': longitude is NaN",
               &p);
    double e[2] = {-91, 0};
    expect_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }", e, sizeof e, 1,
               &DEG, CASK_ERR_FORMAT, "row 1 (index 0), column 1 'lat': latitude -91", &p);
}

Test(knn_npy, float_pi_is_accepted_in_radians)
{
    float d[2] = {(float)M_PI_2, (float)-M_PI};
    knn_read_opts o = {NULL, NULL, 0, 0};
    knn_points p;
    expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", d, sizeof d, 1,
               &o, CASK_OK, NULL, &p);
    knn_points_free(&p);
}

Test(knn_npy, wrap_rewrites_float_longitudes)
{
    float d[2] = {0, 200};
    knn_read_opts o = {NULL, NULL, 1, 1};
    knn_points p;
    expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", d, sizeof d, 1,
               &o, CASK_OK, NULL, &p);
    expect_point(&p, 0, 0, -160);
    knn_points_free(&p);
}
