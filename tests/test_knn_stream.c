/* test_knn_stream.c: cask-knn's streamed path (apps/knn/stream.c). Runs the built
 * binaries (paths in $CASK_KNN and $CASK_KNN_GEN): the streamed output is byte for byte
 * the in-memory one (.npy and CSV, several window sizes, a ragged last window), and the
 * peak resident memory of a streamed run stays flat when the number of observations
 * doubles (2^22 -> 2^23), where the in-memory path's grows; the compact format
 * (--out-format compact) streams to the same bytes as in memory at any read-ahead and
 * parallelism, holds the f64 values in half the bytes, and reading ahead costs its windows
 * of memory and no more; a write failing mid-stream fails the run and leaves nothing. */
#include <criterion/criterion.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static const char *env_path(const char *var)
{
    const char *p = getenv(var);
    cr_assert(p && *p, "set %s", var);
    return p;
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/knn_stream_XXXXXX");
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {
    }
}

/* Runs argv (NULL-terminated), stdout/stderr to dir/log; returns the exit status and
 * the child's peak resident set in KiB (ru_maxrss of wait4, the VmHWM of the child). */
static rlim_t child_fsize;   /* nonzero: the child's file-size limit (RLIMIT_FSIZE) */

static int run(char *const argv[], long *maxrss_kib)
{
    char log[128];
    snprintf(log, sizeof log, "%s/log", dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (!freopen(log, "a", stderr) || !freopen(log, "a", stdout))
            _exit(126);
        if (child_fsize) {   /* writes past it fail with EFBIG instead of a signal */
            struct rlimit rl = {child_fsize, child_fsize};
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(RLIMIT_FSIZE, &rl))
                _exit(125);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    cr_assert(wait4(pid, &status, 0, &ru) == pid);
    if (maxrss_kib)
        *maxrss_kib = ru.ru_maxrss;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void gen(const char *set, const char *rows, const char *name)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *argv[] = {(char *)env_path("CASK_KNN_GEN"), "--rows", (char *)rows, "--seed", "7",
                    "--set", (char *)set, path, NULL};
    cr_assert_eq(run(argv, NULL), 0, "cask-knn-gen %s %s", set, rows);
}

/* cask-knn --obs OBS --ref ref.npy --out OUT --cpu-only -q MODE [extra...] */
static int knn(const char *obs, const char *out, const char *mode, const char *x1,
               const char *x2, long *rss)
{
    char o[128], r[128], w[128];
    snprintf(o, sizeof o, "%s/%s", dir, obs);
    snprintf(r, sizeof r, "%s/ref.npy", dir);
    snprintf(w, sizeof w, "%s/%s", dir, out);
    char *argv[16] = {(char *)env_path("CASK_KNN"), "--obs", o, "--ref", r, "--out", w,
                      "--cpu-only", "-q", (char *)mode};
    int k = 10;
    if (x1)
        argv[k++] = (char *)x1;
    if (x2)
        argv[k++] = (char *)x2;
    argv[k] = NULL;
    return run(argv, rss);
}

static int same_file(const char *a, const char *b)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "cmp -s %s/%s %s/%s", dir, a, dir, b);
    return system(cmd) == 0;
}

TestSuite(knn_stream, .init = setup, .fini = teardown, .timeout = 600);

Test(knn_stream, output_identical_to_in_memory)
{
    gen("obs", "100003", "obs.npy");
    gen("ref", "300", "ref.npy");
    cr_assert_eq(knn("obs.npy", "mem.npy", "--no-stream", NULL, NULL, NULL), 0);
    cr_assert_eq(knn("obs.npy", "mem.csv", "--no-stream", NULL, NULL, NULL), 0);
    const char *windows[] = {"1000", "65536", "100003", "200000"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(knn("obs.npy", "s.npy", "--stream", "--window", windows[i], NULL), 0);
        cr_assert(same_file("mem.npy", "s.npy"), ".npy output differs, window %s", windows[i]);
        cr_assert_eq(knn("obs.npy", "s.csv", "--stream", "--window", windows[i], NULL), 0);
        cr_assert(same_file("mem.csv", "s.csv"), "CSV output differs, window %s", windows[i]);
    }
    /* several reference chunks (partial searches and merges) per window */
    cr_assert_eq(knn("obs.npy", "s.npy", "--window", "30000", "--ref-chunk=64", NULL), 0);
    cr_assert(same_file("mem.npy", "s.npy"), ".npy output differs with --ref-chunk 64");
}

/* Pruned and K-nearest searches stream too: each window ordered and searched as the
 * in-memory run orders and searches its rows, the references prepared once. */
Test(knn_stream, pruned_and_k_identical_to_in_memory)
{
    gen("obs", "60001", "obs.npy");
    gen("ref", "3000", "ref.npy");
    const char *ks[] = {"--k=1", "--k=4"};
    const char *outs[] = {"npy", "csv"};
    for (int k = 0; k < 2; k++)
        for (int o = 0; o < 2; o++) {
            char mem[32], str[32], mode[64];
            snprintf(mem, sizeof mem, "mem.%s", outs[o]);
            snprintf(str, sizeof str, "str.%s", outs[o]);
            cr_assert_eq(knn("obs.npy", mem, "--no-stream", "--method=pruned", ks[k], NULL), 0);
            /* brute streamed, pruned streamed, auto streamed: the bytes of pruned in memory */
            const char *methods[] = {"--method=brute", "--method=pruned", "--method=auto"};
            for (int m = 0; m < 3; m++) {
                snprintf(mode, sizeof mode, "--window=%d", m == 1 ? 7000 : 25000);
                char *argv[] = {(char *)env_path("CASK_KNN"), "--obs", NULL, "--ref", NULL,
                                "--out", NULL, "--cpu-only", "-q", "--stream", mode,
                                (char *)methods[m], (char *)ks[k], NULL};
                char a[128], b[128], c[128];
                snprintf(a, sizeof a, "%s/obs.npy", dir);
                snprintf(b, sizeof b, "%s/ref.npy", dir);
                snprintf(c, sizeof c, "%s/%s", dir, str);
                argv[2] = a, argv[4] = b, argv[6] = c;
                cr_assert_eq(run(argv, NULL), 0, "%s %s %s", methods[m], ks[k], mode);
                cr_assert(same_file(mem, str), "%s output differs: %s %s %s", outs[o],
                          methods[m], ks[k], mode);
            }
        }
}

/* The streamed --check samples K results a row, and --method auto says what it chose. */
Test(knn_stream, k_check_and_auto_report)
{
    gen("obs", "50000", "obs.npy");
    gen("ref", "3000", "ref.npy");
    char o[128], r[128];
    snprintf(o, sizeof o, "%s/obs.npy", dir);
    snprintf(r, sizeof r, "%s/ref.npy", dir);
    char log[160];
    snprintf(log, sizeof log, "%s/log.txt", dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s --obs %s --ref %s --cpu-only --stream --window 20000 --k 3 "
             "--check 64 > %s 2>&1", env_path("CASK_KNN"), o, r, log);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    FILE *f = fopen(log, "r");
    cr_assert(f);
    char text[8192];
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    cr_assert(strstr(text, "k = 3, method pruned (auto, from the first window") ||
              strstr(text, "k = 3, method brute (auto, from the first window"), "%s", text);
    cr_assert(strstr(text, "check: 64 observations") && strstr(text, ": ok"), "%s", text);
}

/* A CSV file of n rows with the awkward parts: CRLF, a BOM, blank lines, quoted fields
 * with commas, doubled quotes and newlines, extra columns; row bad_row (1-based, 0:
 * none) gets latitude 95. */
static void write_csv(const char *name, int n, int bad_row)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    fputs("\xEF\xBB\xBFid,\"Lat\",name,lon\r\n", f);
    uint64_t x = 12345;
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double lat = (double)(x >> 11) / 9007199254740992.0 * 180.0 - 90.0;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double lon = (double)(x >> 11) / 9007199254740992.0 * 360.0 - 180.0;
        if (i % 1000 == 7)
            fputs("\r\n", f);
        if (i + 1 == bad_row)
            lat = 95;
        if (i % 777 == 0)
            fprintf(f, "%d,%.17g,\"multi\nline, \"\"q\"\"\",%.17g\r\n", i, lat, lon);
        else
            fprintf(f, "%d,%.17g,x%d,%.17g\r\n", i, lat, i, lon);
    }
    fclose(f);
}

static char *read_log(void)
{
    static char buf[8192];
    char log[128];
    snprintf(log, sizeof log, "%s/log", dir);
    FILE *f = fopen(log, "r");
    cr_assert(f);
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    unlink(log);
    return buf;
}

/* The values of write_csv(name, n, 0) as an (n, 2) float64 .npy. */
static void write_npy_like_csv(const char *name, int n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    cr_assert(f);
    char hdr[128];
    int hl = snprintf(hdr, sizeof hdr, "{'descr': '<f8', 'fortran_order': False, "
                      "'shape': (%d, 2), }", n);
    memset(hdr + hl, ' ', sizeof hdr - 10 - (size_t)hl);
    hdr[sizeof hdr - 10 - 1] = '\n';
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    unsigned short len = sizeof hdr - 10;   /* little-endian hosts, as the test runs */
    fwrite(&len, 2, 1, f);
    fwrite(hdr, 1, len, f);
    uint64_t x = 12345;
    for (int i = 0; i < n; i++) {
        double v[2];
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v[0] = (double)(x >> 11) / 9007199254740992.0 * 180.0 - 90.0;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v[1] = (double)(x >> 11) / 9007199254740992.0 * 360.0 - 180.0;
        cr_assert_eq(fwrite(v, sizeof v, 1, f), 1);
    }
    cr_assert_eq(fclose(f), 0);
}

/* The "about ... of the pairs" of a run's log (auto's estimate), copied to out. */
static void auto_fraction_of(const char *log, char *out, size_t len)
{
    const char *p = strstr(log, "(auto, from the first window: about ");
    cr_assert(p, "%s", log);
    snprintf(out, len, "%s", p);
    char *e = strchr(out, ')');
    cr_assert(e, "%s", log);
    *e = '\0';
}

/* --method auto decides from the first window's sample rows: read on their own from a
 * .npy (while the reader pins and reads the window), from the window once read for CSV.
 * The same rows give the same choice and estimate. */
Test(knn_stream, auto_same_estimate_from_npy_rows_as_from_csv_window)
{
    write_csv("obs.csv", 50000, 0);
    write_npy_like_csv("obs.npy", 50000);
    gen("ref", "3000", "ref.npy");
    char r[128], got[2][160];
    snprintf(r, sizeof r, "%s/ref.npy", dir);
    const char *in[] = {"obs.csv", "obs.npy"};
    for (int i = 0; i < 2; i++) {
        char o[128];
        snprintf(o, sizeof o, "%s/%s", dir, in[i]);
        char *argv[] = {(char *)env_path("CASK_KNN"), "--obs", o, "--ref", r, "--cpu-only",
                        "--stream", "--window", "20000", "--method", "auto", NULL};
        cr_assert_eq(run(argv, NULL), 0, "%s", read_log());
        auto_fraction_of(read_log(), got[i], sizeof got[i]);
    }
    cr_assert_str_eq(got[0], got[1]);
}

Test(knn_stream, csv_input_scanned_once_identical_output)
{
    write_csv("obs.csv", 30011, 0);
    gen("ref", "200", "ref.npy");
    cr_assert_eq(knn("obs.csv", "mem.npy", "--no-stream", NULL, NULL, NULL), 0);
    cr_assert_eq(knn("obs.csv", "mem.csv", "--no-stream", NULL, NULL, NULL), 0);
    const char *windows[] = {"1000", "7777", "30011", "65536"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(knn("obs.csv", "s.npy", "--stream", "--window", windows[i], NULL), 0,
                     "%s", read_log());
        cr_assert(same_file("mem.npy", "s.npy"), ".npy output differs, window %s", windows[i]);
        cr_assert_eq(knn("obs.csv", "s.csv", "--stream", "--window", windows[i], NULL), 0);
        cr_assert(same_file("mem.csv", "s.csv"), "CSV output differs, window %s", windows[i]);
    }
    /* a bad value is reported by the scan as the in-memory reader reports it */
    write_csv("bad.csv", 30011, 20001);
    read_log();
    cr_assert_eq(knn("bad.csv", "m.npy", "--no-stream", NULL, NULL, NULL), 1);
    char mem_msg[1024];
    snprintf(mem_msg, sizeof mem_msg, "%s", read_log());
    cr_assert_eq(knn("bad.csv", "s.npy", "--stream", "--window", "1000", NULL), 1);
    const char *s_msg = read_log();
    cr_assert(strstr(mem_msg, "data row 20001 (line "), "in memory: %s", mem_msg);
    cr_assert_str_eq(s_msg, mem_msg);
}

Test(knn_stream, bad_row_named_by_file_row)
{
    /* a latitude of 95 in row 70001 (index 70000) of a streamed file */
    gen("obs", "100000", "obs.npy");
    gen("ref", "10", "ref.npy");
    char path[128];
    snprintf(path, sizeof path, "%s/obs.npy", dir);
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    float v = 95.0f;
    cr_assert_eq(fseek(f, 128 + 70000L * 8, SEEK_SET), 0);
    cr_assert_eq(fwrite(&v, 4, 1, f), 1);
    fclose(f);
    cr_assert_eq(knn("obs.npy", "s.npy", "--stream", "--window", "4096", NULL), 1);
    char log[128];
    snprintf(log, sizeof log, "%s/log", dir);
    f = fopen(log, "r");
    char buf[4096] = {0};
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = '\0';
    cr_assert(strstr(buf, "row 70001 (index 70000), column 1 'lat'"), "log: %s", buf);
    snprintf(path, sizeof path, "%s/s.npy", dir);
    cr_assert(access(path, F_OK) != 0, "a failed run left its output");
}

Test(knn_stream, peak_memory_flat_when_n_doubles)
{
    gen("obs", "2^22", "obs22.npy");
    gen("obs", "2^23", "obs23.npy");
    gen("ref", "16", "ref.npy");
    long s22, s23, m22, m23;
    cr_assert_eq(knn("obs22.npy", "s22.npy", "--stream", "--window", "2^19", &s22), 0);
    cr_assert_eq(knn("obs23.npy", "s23.npy", "--stream", "--window", "2^19", &s23), 0);
    cr_assert_eq(knn("obs22.npy", "m22.npy", "--no-stream", NULL, NULL, &m22), 0);
    cr_assert_eq(knn("obs23.npy", "m23.npy", "--no-stream", NULL, NULL, &m23), 0);
    cr_assert(same_file("s23.npy", "m23.npy"), "streamed output differs at 2^23");
    fprintf(stderr, "peak RSS KiB: streamed 2^22 %ld, 2^23 %ld; in memory 2^22 %ld, 2^23 %ld\n",
            s22, s23, m22, m23);
    /* in memory, 2^22 more rows cost 2^22 x (8 input + 8 result) bytes = 64 MiB more */
    cr_assert_gt(m23 - m22, 48 * 1024, "the in-memory path should grow (it did not: %ld -> %ld)",
                 m22, m23);
    /* streamed: flat within 8 MiB of noise */
    cr_assert_lt(s23 - s22, 8 * 1024, "streamed peak RSS grew from %ld to %ld KiB", s22, s23);
    cr_assert_lt(s23, m23, "streaming should use less memory than the in-memory path");
}

/* cask-knn --obs OBS --ref ref.npy --out OUT --cpu-only -q then the NULL-ended extras */
static int knn_x(const char *obs, const char *out, const char *const *extra, long *rss)
{
    char o[128], r[128], w[128];
    snprintf(o, sizeof o, "%s/%s", dir, obs);
    snprintf(r, sizeof r, "%s/ref.npy", dir);
    snprintf(w, sizeof w, "%s/%s", dir, out);
    char *argv[32] = {(char *)env_path("CASK_KNN"), "--obs", o, "--ref", r, "--out", w,
                      "--cpu-only", "-q"};
    int k = 9;
    for (int i = 0; extra[i] && k < 31; i++)
        argv[k++] = (char *)extra[i];
    argv[k] = NULL;
    return run(argv, rss);
}

static unsigned char *load(const char *name, size_t *len)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = malloc(*len);
    cr_assert_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* The compact format streams too: the same bytes as in memory whatever the windows read
 * ahead, the parallel reads and writes, and the window (a ragged last one included). */
Test(knn_stream, compact_identical_to_in_memory_at_any_read_ahead)
{
    gen("obs", "100003", "obs.npy");
    gen("ref", "300", "ref.npy");
    const char *mem[] = {"--no-stream", "--out-format", "compact", NULL};
    cr_assert_eq(knn_x("obs.npy", "mem.npy", mem, NULL), 0);
    const char *mem64[] = {"--no-stream", NULL};
    cr_assert_eq(knn_x("obs.npy", "mem64.npy", mem64, NULL), 0);
    static const char *cases[][3] = {   /* read-ahead, io-threads, window */
        {"0", "1", "1000"}, {"1", "3", "7777"}, {"5", "8", "65536"}, {"16", "64", "1000"},
        {"2", "8", "200000"}};
    for (int i = 0; i < 5; i++) {
        const char *x[] = {"--stream", "--read-ahead", cases[i][0], "--io-threads",
                           cases[i][1], "--window", cases[i][2], "--out-format", "compact",
                           NULL};
        cr_assert_eq(knn_x("obs.npy", "s.npy", x, NULL), 0, "%s", read_log());
        cr_assert(same_file("mem.npy", "s.npy"), "compact output differs: read-ahead %s, "
                  "io-threads %s, window %s", cases[i][0], cases[i][1], cases[i][2]);
        const char *y[] = {"--stream", "--read-ahead", cases[i][0], "--io-threads",
                           cases[i][1], "--window", cases[i][2], NULL};
        cr_assert_eq(knn_x("obs.npy", "s64.npy", y, NULL), 0);
        cr_assert(same_file("mem64.npy", "s64.npy"), "f64 output differs: read-ahead %s, "
                  "io-threads %s, window %s", cases[i][0], cases[i][1], cases[i][2]);
    }
    /* K results a row: (N, K) records */
    const char *mk[] = {"--no-stream", "--k", "4", "--out-format", "compact", NULL};
    cr_assert_eq(knn_x("obs.npy", "memk.npy", mk, NULL), 0);
    const char *sk[] = {"--stream", "--window", "9999", "--k", "4", "--out-format", "compact",
                        NULL};
    cr_assert_eq(knn_x("obs.npy", "sk.npy", sk, NULL), 0);
    cr_assert(same_file("memk.npy", "sk.npy"), "compact --k 4 output differs");
}

/* Compact holds what f64 holds: the index exactly, the distance as the float32 the
 * search computed (f64 widens that same float). Half the bytes a row. */
Test(knn_stream, compact_holds_the_f64_values_in_half_the_bytes)
{
    gen("obs", "50001", "obs.npy");
    gen("ref", "500", "ref.npy");
    const char *c[] = {"--stream", "--window", "8192", "--out-format", "compact", NULL};
    const char *f[] = {"--stream", "--window", "8192", "--out-format", "f64", NULL};
    cr_assert_eq(knn_x("obs.npy", "c.npy", c, NULL), 0);
    cr_assert_eq(knn_x("obs.npy", "f.npy", f, NULL), 0);
    size_t lc, lf;
    unsigned char *bc = load("c.npy", &lc), *bf = load("f.npy", &lf);
    size_t hc = (size_t)(bc[8] | bc[9] << 8) + 10, hf = (size_t)(bf[8] | bf[9] << 8) + 10;
    cr_assert_eq(lc - hc, (size_t)50001 * 8);
    cr_assert_eq(lf - hf, (size_t)50001 * 16);
    cr_assert(strstr((const char *)bc + 10, "'descr': [('index', '<i4'), ('dist', '<f4')]"));
    for (size_t i = 0; i < 50001; i++) {
        int32_t idx;
        float d;
        double v[2];
        memcpy(&idx, bc + hc + 8 * i, 4);
        memcpy(&d, bc + hc + 8 * i + 4, 4);
        memcpy(v, bf + hf + 16 * i, 16);
        cr_assert(idx == (int32_t)v[0] && (double)d == v[1], "row %zu: %d %g against %g %g",
                  i, idx, d, v[0], v[1]);
    }
    free(bc);
    free(bf);
    const char *csv[] = {"--out-format", "compact", NULL};
    cr_assert_eq(knn_x("obs.npy", "c.csv", csv, NULL), 2, "compact is for .npy results");
    cr_assert(strstr(read_log(), "--out-format applies to .npy results"));
}

/* Reading ahead costs its windows of memory and no more: peak RSS with 4 windows read
 * ahead against none is about 4 windows (2^21 rows: 16 MiB of float32 observations and
 * 32 MiB of results each), and reading ahead changes no byte. (Windows this large, so
 * that they and not the start-up of a CUDA build, whose libraries' pages alone are about
 * 300 MiB, set the peak.) */
Test(knn_stream, read_ahead_memory_bounded_by_its_windows)
{
    gen("obs", "2^24", "obs.npy");
    gen("ref", "16", "ref.npy");
    long r0, r4;
    const char *a[] = {"--stream", "--window", "2^21", "--read-ahead", "0", NULL};
    const char *b[] = {"--stream", "--window", "2^21", "--read-ahead", "4", NULL};
    cr_assert_eq(knn_x("obs.npy", "a.npy", a, &r0), 0);
    cr_assert_eq(knn_x("obs.npy", "b.npy", b, &r4), 0);
    cr_assert(same_file("a.npy", "b.npy"));
    fprintf(stderr, "peak RSS KiB: read-ahead 0 %ld, 4 %ld\n", r0, r4);
    const long window_kib = 48 * 1024;
    cr_assert_gt(r4 - r0, 2 * window_kib, "4 windows read ahead should hold them (%ld -> "
                 "%ld KiB)", r0, r4);
    cr_assert_lt(r4 - r0, 6 * window_kib, "4 windows read ahead took more than 6 windows' "
                 "memory (%ld -> %ld KiB)", r0, r4);
}

/* A write that fails in the middle of the stream (here past the file-size limit: EFBIG),
 * on the writer's thread while later windows compute, fails the run naming the file and
 * the reason, and nothing is left under either name. */
Test(knn_stream, a_failed_write_fails_the_run_and_leaves_nothing)
{
    gen("obs", "100003", "obs.npy");
    gen("ref", "300", "ref.npy");
    child_fsize = 1 << 20;   /* the f64 results take 1.6 MB */
    const char *x[] = {"--stream", "--window", "8192", NULL};
    int rc = knn_x("obs.npy", "s.npy", x, NULL);
    child_fsize = 0;
    const char *log = read_log();
    cr_assert_eq(rc, 1, "exit %d: %s", rc, log);
    cr_assert(strstr(log, "s.npy: write failed: ") && strstr(log, strerror(EFBIG)), "%s", log);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q '^s\\.npy'", dir);
    cr_assert_neq(system(cmd), 0, "a failed run left s.npy or its temporary file");
    /* and the same run within the limit, compact (0.8 MB), succeeds */
    child_fsize = 1 << 20;
    const char *y[] = {"--stream", "--window", "8192", "--out-format", "compact", NULL};
    rc = knn_x("obs.npy", "s.npy", y, NULL);
    child_fsize = 0;
    cr_assert_eq(rc, 0, "%s", read_log());
}
