/* test_knn_io.c: the IO layer of cask-knn (apps/knn: CSV and .npy point files, result
 * files, all-or-nothing output, the synthetic point generator and the --check brute
 * force), linked without the runtime. Each test states one behaviour. */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "generate.h"
#include "points.h"

/* ---- helpers ---- */

static const knn_read_opts DEG = {NULL, NULL, 1, 0};

static cask_status csv_str(const char *text, const knn_read_opts *o, knn_points *p,
                           char *err)
{
    FILE *f = fmemopen((void *)text, strlen(text), "rb");
    cr_assert(f != NULL);
    cask_status st = knn_csv_read(f, "t.csv", NULL, 0, o, NULL, p, err, KNN_ERRLEN);
    fclose(f);
    return st;
}

static void expect_csv_error(const char *text, const knn_read_opts *o, cask_status want,
                             const char *fragment)
{
    knn_points p;
    char err[KNN_ERRLEN] = "";
    cask_status st = csv_str(text, o, &p, err);
    cr_assert_eq(st, want, "status %d, want %d (%s)", st, want, err);
    cr_assert(strstr(err, fragment) != NULL, "message '%s' lacks '%s'", err, fragment);
    cr_assert(strncmp(err, "t.csv: ", 7) == 0, "message '%s' does not name the file", err);
    cr_assert(p.data == NULL && p.n == 0);
}

static void expect_point(const knn_points *p, int64_t i, double lat, double lon)
{
    double a, b;
    knn_points_get(p, i, &a, &b);
    cr_assert(a == lat && b == lon, "point %lld is (%.17g, %.17g), want (%.17g, %.17g)",
              (long long)i, a, b, lat, lon);
}

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

/* ---- CSV: columns ---- */

Test(knn_csv, finds_columns_by_usual_names_in_any_case_and_order)
{
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str("id,Longitude,LAT\n1,10.5,-20.25\n2,-170,89\n", &DEG, &p, err),
                 CASK_OK, "%s", err);
    cr_assert_eq(p.n, 2);
    cr_assert_eq(p.f64, 1);
    cr_assert_eq(p.degrees, 1);
    expect_point(&p, 0, -20.25, 10.5);
    expect_point(&p, 1, 89, -170);
    knn_points_free(&p);
}

Test(knn_csv, accepts_lng_and_long_and_latitude)
{
    const char *texts[] = {"latitude,lng\n1,2\n", "long,Latitude\n2,1\n", "LON,lat\n2,1\n"};
    for (int i = 0; i < 3; i++) {
        knn_points p;
        char err[KNN_ERRLEN];
        cr_assert_eq(csv_str(texts[i], &DEG, &p, err), CASK_OK, "%s: %s", texts[i], err);
        expect_point(&p, 0, 1, 2);
        knn_points_free(&p);
    }
}

Test(knn_csv, named_columns_override_the_usual_names)
{
    knn_read_opts o = {"Y", "x", 1, 0};
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str("lat,lon,x,y\n1,2,30,40\n", &o, &p, err), CASK_OK, "%s", err);
    expect_point(&p, 0, 40, 30);
    knn_points_free(&p);
}

Test(knn_csv, missing_column_is_named_with_the_header)
{
    expect_csv_error("a,lat,b\n1,2,3\n", &DEG, CASK_ERR_FORMAT, "no longitude column");
    expect_csv_error("a,lat,b\n1,2,3\n", &DEG, CASK_ERR_FORMAT, "'a', 'lat', 'b'");
    knn_read_opts o = {"phi", NULL, 1, 0};
    expect_csv_error("lat,lon\n1,2\n", &o, CASK_ERR_FORMAT, "no column named 'phi'");
}

Test(knn_csv, two_candidate_columns_are_ambiguous)
{
    expect_csv_error("lat,latitude,lon\n1,1,2\n", &DEG, CASK_ERR_FORMAT,
                     "2 columns could be the latitude");
}

Test(knn_csv, exact_case_wins_when_a_name_matches_twice)
{
    knn_read_opts o = {"Lat", NULL, 1, 0};
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str("lat,Lat,lon\n1,5,2\n", &o, &p, err), CASK_OK, "%s", err);
    expect_point(&p, 0, 5, 2);
    knn_points_free(&p);
}

/* ---- CSV: syntax ---- */

Test(knn_csv, quoted_fields_keep_commas_quotes_and_newlines)
{
    const char *t = "name,lat,lon\n"
                    "\"Paris, \"\"city\"\"\",48.85,2.35\n"
                    "\"two\nlines\",\"-1.5\",\" 3 \"\n"
                    "x,\"1\",2\n";
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str(t, &DEG, &p, err), CASK_OK, "%s", err);
    cr_assert_eq(p.n, 3);
    expect_point(&p, 0, 48.85, 2.35);
    expect_point(&p, 1, -1.5, 3);
    expect_point(&p, 2, 1, 2);
    knn_points_free(&p);
}

Test(knn_csv, line_numbers_count_newlines_inside_quotes)
{
    expect_csv_error("name,lat,lon\n\"a\nb\nc\",1,2\nz,95,0\n", &DEG, CASK_ERR_FORMAT,
                     "data row 2 (line 5), column 2 'lat'");
}

Test(knn_csv, crlf_bom_blank_lines_spaces_and_no_final_newline)
{
    const char *t = "\xEF\xBB\xBFlat , lon\r\n\r\n 1.5 , 2.5 \r\n\r\n\r\n  -3,\t4";
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str(t, &DEG, &p, err), CASK_OK, "%s", err);
    cr_assert_eq(p.n, 2);
    expect_point(&p, 0, 1.5, 2.5);
    expect_point(&p, 1, -3, 4);
    knn_points_free(&p);
}

Test(knn_csv, unterminated_quote_names_its_line)
{
    expect_csv_error("lat,lon\n1,2\n\"3,4\n", &DEG, CASK_ERR_FORMAT,
                     "line 3: quoted field never closed");
}

Test(knn_csv, text_after_a_closing_quote_is_an_error)
{
    expect_csv_error("lat,lon\n\"1\"x,2\n", &DEG, CASK_ERR_FORMAT,
                     "line 2, column 1: unexpected character 'x' after a closing quote");
}

Test(knn_csv, ragged_rows_are_rejected)
{
    expect_csv_error("lat,lon,id\n1,2,3\n1,2\n", &DEG, CASK_ERR_FORMAT,
                     "data row 2 (line 3): 2 fields, but the header has 3");
    expect_csv_error("lat,lon\n1,2,3\n", &DEG, CASK_ERR_FORMAT,
                     "data row 1 (line 2): 3 fields, but the header has 2");
}

Test(knn_csv, empty_file_and_header_only_have_no_data)
{
    expect_csv_error("", &DEG, CASK_ERR_FORMAT, "empty file");
    expect_csv_error("\n\n", &DEG, CASK_ERR_FORMAT, "empty file");
    expect_csv_error("lat,lon\n", &DEG, CASK_ERR_FORMAT, "no data rows");
    expect_csv_error("lat,lon\n\r\n\n", &DEG, CASK_ERR_FORMAT, "no data rows");
}

/* ---- CSV: values ---- */

Test(knn_csv, non_numbers_name_row_line_and_column)
{
    expect_csv_error("id,lat,lon\n1,2,3\n2,abc,3\n", &DEG, CASK_ERR_FORMAT,
                     "data row 2 (line 3), column 2 'lat': latitude is not a number: 'abc'");
    expect_csv_error("lat,lon\n1,2x\n", &DEG, CASK_ERR_FORMAT,
                     "column 2 'lon': longitude is not a number: '2x'");
    expect_csv_error("lat,lon\n1,\n", &DEG, CASK_ERR_FORMAT, "column 2 'lon': empty longitude");
}

Test(knn_csv, a_huge_field_is_not_a_number)
{
    char t[400] = "lat,lon\n1,";
    memset(t + strlen(t), '1', 300);
    expect_csv_error(t, &DEG, CASK_ERR_FORMAT, "longitude is not a number");
}

Test(knn_csv, nan_and_infinity_are_rejected)
{
    expect_csv_error("lat,lon\nnan,0\n", &DEG, CASK_ERR_FORMAT, "latitude is NaN");
    expect_csv_error("lat,lon\n0,-inf\n", &DEG, CASK_ERR_FORMAT, "longitude is infinite");
    expect_csv_error("lat,lon\n1e999,0\n", &DEG, CASK_ERR_FORMAT, "latitude is infinite");
}

Test(knn_csv, out_of_range_degrees_are_rejected)
{
    expect_csv_error("lat,lon\n90.5,0\n", &DEG, CASK_ERR_FORMAT,
                     "column 1 'lat': latitude 90.5 is outside [-90, 90]");
    expect_csv_error("lat,lon\n0,-180.001\n", &DEG, CASK_ERR_FORMAT,
                     "longitude -180.001 is outside [-180, 180] (use --wrap");
}

Test(knn_csv, range_limits_are_inclusive)
{
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str("lat,lon\n90,180\n-90,-180\n", &DEG, &p, err), CASK_OK, "%s", err);
    expect_point(&p, 0, 90, 180);
    expect_point(&p, 1, -90, -180);
    knn_points_free(&p);
}

Test(knn_csv, wrap_brings_longitudes_back_into_range)
{
    knn_read_opts o = {NULL, NULL, 1, 1};
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str("lat,lon\n0,190\n0,-190\n0,540\n0,180\n", &o, &p, err), CASK_OK,
                 "%s", err);
    expect_point(&p, 0, 0, -170);
    expect_point(&p, 1, 0, 170);
    expect_point(&p, 2, 0, -180);
    expect_point(&p, 3, 0, 180);
    knn_points_free(&p);
    expect_csv_error("lat,lon\n91,0\n", &o, CASK_ERR_FORMAT, "latitude 91");
}

Test(knn_csv, radians_use_radian_limits)
{
    knn_read_opts o = {NULL, NULL, 0, 0};
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str("lat,lon\n1.5,3.1\n", &o, &p, err), CASK_OK, "%s", err);
    cr_assert_eq(p.degrees, 0);
    knn_points_free(&p);
    expect_csv_error("lat,lon\n1.6,0\n", &o, CASK_ERR_FORMAT,
                     "latitude 1.6 rad is outside [-pi/2, pi/2]");
    expect_csv_error("lat,lon\n0,3.2\n", &o, CASK_ERR_FORMAT, "outside [-pi, pi]");
}

Test(knn_csv, many_rows_cross_buffer_boundaries)
{
    int n = 150000;
    size_t cap = (size_t)n * 48 + 64, len = 0;
    char *t = malloc(cap);
    len += (size_t)sprintf(t + len, "\"lat\",\"lon\",\"comment\"\n");
    for (int i = 0; i < n; i++)
        len += (size_t)sprintf(t + len, "%.6f,%.6f,\"row, %d\"\n", (i % 180) - 89.5,
                               (i % 360) - 179.5, i);
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str(t, &DEG, &p, err), CASK_OK, "%s", err);
    cr_assert_eq(p.n, n);
    for (int i = 0; i < n; i += 997)
        expect_point(&p, i, (i % 180) - 89.5, (i % 360) - 179.5);
    expect_point(&p, n - 1, ((n - 1) % 180) - 89.5, ((n - 1) % 360) - 179.5);
    knn_points_free(&p);
    free(t);
}

Test(knn_csv, numbers_read_exactly_as_strtod_reads_them)
{
    /* the parser's fast path must round exactly as strtod does, whatever the digits */
    enum { N = 20000 };
    size_t cap = (size_t)N * 64 + 64, len = 0;
    char *t = malloc(cap);
    double *want = malloc(2 * N * sizeof *want);
    static const char *odd[] = {"-0", "+3", ".5", "5.", "0.000", "1e1", "-1.5E+1", "9e-300",
                                "4.9e-324", "0x1p4", "12345678901234567890e-18",
                                "  7.25 ", "1E-22", "45e0", "0000000000000000000000001"};
    int nodd = (int)(sizeof odd / sizeof odd[0]);
    uint64_t x = 88172645463325252ull;
    len += (size_t)sprintf(t, "lat,lon\n");
    for (int i = 0; i < N; i++) {
        char a[40], b[40];
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v = ((double)(x >> 11) * 0x1.0p-53 - 0.5) * 180;
        snprintf(a, sizeof a, "%.*g", 1 + i % 17, v);
        if (i % 50 == 0)
            snprintf(a, sizeof a, "%s", odd[(i / 50) % nodd]);
        snprintf(b, sizeof b, "%.*e", i % 20, v / 2);
        want[2 * i] = strtod(a, NULL);
        want[2 * i + 1] = strtod(b, NULL);
        len += (size_t)sprintf(t + len, "%s,%s\n", a, b);
    }
    knn_points p;
    char err[KNN_ERRLEN];
    cr_assert_eq(csv_str(t, &DEG, &p, err), CASK_OK, "%s", err);
    for (int i = 0; i < N; i++)
        expect_point(&p, i, want[2 * i], want[2 * i + 1]);
    knn_points_free(&p);
    free(t);
    free(want);
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

/* ---- results ---- */

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

/* ---- synthetic points ---- */

Test(knn_generate, points_do_not_depend_on_chunking)
{
    enum { N = 1000 };
    static double whole[2 * N], parts[2 * N];
    knn_generate_points(42, KNN_STREAM_OBS, 0, N, 1, whole);
    for (int64_t first = 0; first < N; first += 7)
        knn_generate_points(42, KNN_STREAM_OBS, first, first + 7 <= N ? 7 : N - first, 1,
                            parts + 2 * first);
    cr_assert(memcmp(whole, parts, sizeof whole) == 0);
}

Test(knn_generate, seeds_and_streams_differ)
{
    double a[2], b[2], c[2];
    knn_generate_points(1, KNN_STREAM_OBS, 5, 1, 1, a);
    knn_generate_points(2, KNN_STREAM_OBS, 5, 1, 1, b);
    knn_generate_points(1, KNN_STREAM_REF, 5, 1, 1, c);
    cr_assert(a[0] != b[0] && a[0] != c[0] && b[0] != c[0]);
}

Test(knn_generate, float_points_round_the_double_ones)
{
    double d[20];
    float f[20];
    knn_generate_points(7, KNN_STREAM_REF, 100, 10, 1, d);
    knn_generate_points(7, KNN_STREAM_REF, 100, 10, 0, f);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(f[i], (float)d[i]);
}

Test(knn_generate, points_are_uniform_on_the_sphere)
{
    enum { N = 200000 };
    double *p = malloc(2 * N * sizeof *p);
    knn_generate_points(3, KNN_STREAM_OBS, 0, N, 1, p);
    double sz = 0, sz2 = 0, east = 0, sx = 0;
    for (int i = 0; i < N; i++) {
        double lat = p[2 * i], lon = p[2 * i + 1];
        cr_assert(lat >= -M_PI_2 && lat <= M_PI_2 && lon >= -M_PI && lon < M_PI);
        double z = sin(lat);
        sz += z;
        sz2 += z * z;
        sx += cos(lat) * cos(lon);
        east += lon >= 0;
    }
    /* z = sin(lat) uniform on [-1, 1]: mean 0, E[z^2] = 1/3; lon uniform. 5 sigma. */
    double sd = 1 / sqrt((double)N);
    cr_assert(fabs(sz / N) < 5 * sd * 0.58, "mean z %g", sz / N);
    cr_assert(fabs(sz2 / N - 1.0 / 3) < 5 * sd * 0.3, "mean z^2 %g", sz2 / N);
    cr_assert(fabs(sx / N) < 5 * sd * 0.58, "mean x %g", sx / N);
    cr_assert(fabs(east / N - 0.5) < 5 * sd * 0.5, "east fraction %g", east / N);
    free(p);
}

Test(knn_generate, rng_is_a_pure_function)
{
    cr_assert_eq(knn_rng_u64(9, 1, 12345), knn_rng_u64(9, 1, 12345));
    cr_assert_neq(knn_rng_u64(9, 1, 12345), knn_rng_u64(9, 1, 12346));
    double u = knn_rng_uniform(9, 0, 0);
    cr_assert(u >= 0 && u < 1);
}

/* ---- the --check brute force ---- */

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
