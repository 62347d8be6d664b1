/* tests/test_knn_io_csv.c: cask-knn's CSV point reader (apps/knn), linked without the
 * runtime: how it finds the latitude and longitude columns, the CSV syntax it accepts
 * and refuses, and the values (exact numbers, ranges, wrap, radians), each error naming
 * file, row, line and column. Each test states one behaviour. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knn_io_helpers.h"
#include "points.h"

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
