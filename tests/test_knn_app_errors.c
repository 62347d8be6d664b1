/* tests/test_knn_app_errors.c: cask-knn's failures end to end. Runs the built binary
 * (path in $CASK_KNN) on bad command lines (exit 2) and bad data (exit 1, a message naming
 * file, row and column), and checks that a failed or interrupted run leaves no output
 * file and keeps an existing one. $KNN_APP_MODE=gpu runs the searches on the GPUs (suite
 * gpu); otherwise --cpu-only. */
#include <criterion/criterion.h>

#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "knn_app_helpers.h"

TestSuite(knn_app, .init = setup, .fini = teardown, .timeout = 120);

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
