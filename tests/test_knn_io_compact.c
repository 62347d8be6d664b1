/* tests/test_knn_io_compact.c: cask-knn's compact result format (apps/knn/out_compact.h,
 * --out-format compact), linked without the runtime: its .npy header is the one NumPy
 * writes for the same structured array (np.save of a (N,) or (N, K) array of dtype
 * [('index', '<i4'), ('dist', '<f4')]: the literals below are NumPy 2's bytes), its rows
 * are 8 bytes a result, little-endian int32 then float32, and the f64 format keeps its
 * 16. Each test states one behaviour. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out_compact.h"

static unsigned char *slurp(FILE *f, size_t *len)
{
    fflush(f);
    long n = ftell(f);
    unsigned char *s = malloc((size_t)n + 1);
    rewind(f);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    *len = (size_t)n;
    return s;
}

/* The header's dictionary (after the 10-byte preamble), without its padding. */
static void check_header(const char *buf, size_t hl, const char *dict)
{
    cr_assert_eq(memcmp(buf, "\x93NUMPY\x01\x00", 8), 0);
    cr_assert_eq((unsigned char)buf[8] | (unsigned char)buf[9] << 8, (int)hl - 10);
    cr_assert_eq(hl % 64, 0, "rows start 64-byte aligned, as NumPy aligns them");
    cr_assert_eq(memcmp(buf + 10, dict, strlen(dict)), 0, "header %.*s", (int)hl - 10,
                 buf + 10);
    for (size_t i = 10 + strlen(dict); i < hl - 1; i++)
        cr_assert_eq(buf[i], ' ');
    cr_assert_eq(buf[hl - 1], '\n');
}

Test(knn_compact, header_is_numpys_for_one_result_a_row)
{
    char buf[KNN_NPY_HEADER_MAX];
    size_t hl = knn_out_npy_header(buf, KNN_OUT_COMPACT, 1048576, 1);
    cr_assert_eq(hl, 128);
    check_header(buf, hl, "{'descr': [('index', '<i4'), ('dist', '<f4')], "
                          "'fortran_order': False, 'shape': (1048576,), }");
}

Test(knn_compact, header_is_numpys_for_k_results_a_row)
{
    char buf[KNN_NPY_HEADER_MAX];
    size_t hl = knn_out_npy_header(buf, KNN_OUT_COMPACT, 1048576, 4);
    check_header(buf, hl, "{'descr': [('index', '<i4'), ('dist', '<f4')], "
                          "'fortran_order': False, 'shape': (1048576, 4), }");
}

Test(knn_compact, the_f64_header_is_unchanged)
{
    char a[KNN_NPY_HEADER_MAX], b[KNN_NPY_HEADER_MAX];
    size_t la = knn_out_npy_header(a, KNN_OUT_F64, 77, 3), lb = knn_npy_result_header(b, 77, 3);
    cr_assert_eq(la, lb);
    cr_assert_eq(memcmp(a, b, la), 0);
}

Test(knn_compact, rows_are_8_bytes_a_result_against_16)
{
    cr_assert_eq(knn_out_row_bytes(KNN_OUT_COMPACT, 1), 8);
    cr_assert_eq(knn_out_row_bytes(KNN_OUT_F64, 1), 16);
    cr_assert_eq(knn_out_row_bytes(KNN_OUT_COMPACT, 16), 128);
    cr_assert_eq(knn_out_row_bytes(KNN_OUT_F64, 0), 16);
}

Test(knn_compact, records_hold_the_index_then_the_distance_little_endian)
{
    int32_t idx[3] = {258, -1, 2147483647};
    float dist[3] = {1.5f, __builtin_nanf(""), 12345.678f};
    unsigned char rec[24];
    knn_compact_pack(rec, idx, dist, 3);
    static const unsigned char first[8] = {0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x3f};
    cr_assert_eq(memcmp(rec, first, 8), 0, "index 258 then 1.5f, little-endian");
    for (int i = 0; i < 3; i++) {
        int32_t j;
        float d;
        memcpy(&j, rec + 8 * i, 4);
        memcpy(&d, rec + 8 * i + 4, 4);
        cr_assert_eq(j, idx[i]);
        cr_assert_eq(memcmp(&d, &dist[i], 4), 0, "the float32 bits as computed (NaN too)");
    }
}

Test(knn_compact, whole_file_is_the_header_then_n_times_k_records)
{
    enum { N = 5000, K = 3 };   /* more than one block of the writer's buffer */
    int32_t *idx = malloc(N * K * sizeof *idx);
    float *dist = malloc(N * K * sizeof *dist);
    for (int i = 0; i < N * K; i++) {
        idx[i] = i * 7;
        dist[i] = (float)i * 0.5f;
    }
    FILE *f = tmpfile();
    char err[KNN_ERRLEN];
    cr_assert_eq(knn_compact_write(f, "r.npy", idx, dist, N, K, err, sizeof err), CASK_OK,
                 "%s", err);
    size_t len;
    unsigned char *s = slurp(f, &len);
    char hdr[KNN_NPY_HEADER_MAX];
    size_t hl = knn_out_npy_header(hdr, KNN_OUT_COMPACT, N, K);
    cr_assert_eq(len, hl + (size_t)N * K * 8);
    cr_assert_eq(memcmp(s, hdr, hl), 0);
    for (int i = 0; i < N * K; i++) {
        int32_t j;
        float d;
        memcpy(&j, s + hl + 8 * (size_t)i, 4);
        memcpy(&d, s + hl + 8 * (size_t)i + 4, 4);
        cr_assert(j == idx[i] && d == dist[i], "record %d", i);
    }
    free(s);
    free(idx);
    free(dist);
    fclose(f);
}

Test(knn_compact, formats_are_parsed_by_name)
{
    knn_out_format f = KNN_OUT_F64;
    cr_assert_eq(knn_out_format_parse("compact", &f), 0);
    cr_assert_eq(f, KNN_OUT_COMPACT);
    cr_assert_eq(knn_out_format_parse("f64", &f), 0);
    cr_assert_eq(f, KNN_OUT_F64);
    cr_assert_eq(knn_out_format_parse("f32", &f), -1);
}
