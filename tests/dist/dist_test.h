/* tests/dist/dist_test.h: the few helpers the multi-process tests share.
 *
 * These tests are SPMD programs, one process per rank, started by tests/dist/run.sh
 * under mpirun. They are plain programs rather than Criterion suites because every
 * rank must run the same collectives in the same order: Criterion forks a child per
 * test and runs tests in parallel, which would interleave the ranks' collectives. A
 * failed CHECK prints the rank, file and line and exits 1 (mpirun then reports it). */
#ifndef CASK_TESTS_DIST_TEST_H
#define CASK_TESTS_DIST_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int dt_rank_ = -1;

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ", dt_rank_, __FILE__, \
                    __LINE__, #cond);                                                 \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

#define CHECK_OK(st, ...) CHECK((st) == CASK_OK, __VA_ARGS__)

static inline double dt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void dt_sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* A deterministic byte pattern: the byte at offset i of message k from rank r. */
static inline unsigned char dt_pattern(int r, uint64_t k, uint64_t i)
{
    uint64_t v = (i * 0x9E3779B97F4A7C15ull) ^ (k * 0xBF58476D1CE4E5B9ull) ^ (uint64_t)r;
    return (unsigned char)(v >> 56);
}

/* This process's rank as its launcher set it (PMIX_RANK under mpirun, CASK_RANK with the
 * file bootstrap), before or without a cask_dist; -1 if neither is set. */
static inline int dt_launcher_rank(void)
{
    const char *r = getenv("PMIX_RANK");
    if (!r)
        r = getenv("CASK_RANK");
    return r ? atoi(r) : -1;
}

/* Survivor tests: writes "ok" into $CASK_TEST_DIR/ok.<rank>, which run.sh counts.
 * CASK_DIST_TEST_HANG_AFTER_OK=R: rank R then never exits (launcher_grace.sh: run.sh's
 * grace for a hung launcher must not pass a rank that hangs). */
static inline void dt_report_survivor(int rank)
{
    const char *dir = getenv("CASK_TEST_DIR");
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/ok.%d", dir, rank);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("ok\n", f);
        fclose(f);
    }
    const char *hang = getenv("CASK_DIST_TEST_HANG_AFTER_OK");
    if (hang && atoi(hang) == rank)
        for (;;)
            pause();
}

/* One case of a test program, `PROG NAME [OPT]`: run() or run_arg(arg). */
typedef struct dt_case {
    const char *name;
    void (*run)(void);
    void (*run_arg)(int arg);   /* instead of run */
    int arg;
    const char *opt;   /* if set, an integer argv[2] replaces arg; named so in the usage */
} dt_case;

/* main() of a program of several cases: runs the one argv[1] names (without argv[1], the
 * first), then rank 0 prints "PROG NAME: ok" (a failed CHECK exits 1 before). Returns
 * main's status: 0, or 2 after the usage for a name no case has. */
static inline int dt_main(int argc, char **argv, const char *prog, const dt_case *cases,
                          int ncases)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : cases[0].name;
    for (int i = 0; i < ncases; i++) {
        if (strcmp(what, cases[i].name))
            continue;
        if (cases[i].run_arg)
            cases[i].run_arg(cases[i].opt && argc > 2 ? atoi(argv[2]) : cases[i].arg);
        else
            cases[i].run();
        if (dt_rank_ == 0)
            printf("%s %s: ok\n", prog, what);
        return 0;
    }
    fprintf(stderr, "usage: %s ", prog);
    for (int i = 0; i < ncases; i++)
        fprintf(stderr, "%s%s%s%s", i ? "|" : "", cases[i].name, cases[i].opt ? " " : "",
                cases[i].opt ? cases[i].opt : "");
    fputc('\n', stderr);
    return 2;
}

#endif
