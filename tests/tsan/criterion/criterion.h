/* Minimal stand-in for Criterion (which cannot start under TSan: Criterion issue #274).
 * Each test runs in a forked child, one at a time; argv[1] is an fnmatch filter. */
#ifndef SHIM_CRITERION_H
#define SHIM_CRITERION_H
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdbool.h>

struct shim_test { const char *suite, *name; void (*fn)(void); void (*init)(void);
                   void (*fini)(void); double timeout; bool disabled; };
struct shim_suite { const char *name; void (*init)(void); void (*fini)(void);
                    double timeout; bool disabled; };
#define SHIM_MAX 512
static struct shim_test *shim_tests[SHIM_MAX]; static int shim_ntests;
static struct shim_suite *shim_suites[64]; static int shim_nsuites;

__attribute__((format(printf, 4, 5), noreturn))
static void shim_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    fprintf(stderr, "  %s:%d: assertion failed: %s\n  ", file, line, expr);
    va_list ap; va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    _exit(1);
}
#define cr_assert(cond, ...) do { if (!(cond)) shim_fail(__FILE__, __LINE__, #cond, "" __VA_ARGS__); } while (0)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_null(a, ...) cr_assert((a) == NULL, __VA_ARGS__)
#define cr_assert_not_null(a, ...) cr_assert((a) != NULL, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) cr_assert(strcmp((a), (b)) != 0, __VA_ARGS__)
#define cr_skip_test(...) do { fprintf(stderr, "  skipped\n"); _exit(0); } while (0)
#define cr_assert_fail(...) cr_assert(0, __VA_ARGS__)

#define Test(s, n, ...) \
    static void s##_##n##_impl(void); \
    static struct shim_test s##_##n##_desc = { .suite = #s, .name = #n, .fn = s##_##n##_impl, __VA_ARGS__ }; \
    __attribute__((constructor)) static void s##_##n##_reg(void) { shim_tests[shim_ntests++] = &s##_##n##_desc; } \
    static void s##_##n##_impl(void)
#define TestSuite(s, ...) \
    static struct shim_suite s##_suite_desc = { .name = #s, __VA_ARGS__ }; \
    __attribute__((constructor)) static void s##_suite_reg(void) { shim_suites[shim_nsuites++] = &s##_suite_desc; }

int main(int argc, char **argv)
{
    int failed = 0, ran = 0;
    for (int i = 0; i < shim_ntests; i++) {
        struct shim_test *t = shim_tests[i];
        char id[256];
        snprintf(id, sizeof id, "%s/%s", t->suite, t->name);
        if (argc > 1 && fnmatch(argv[1], id, 0) != 0)
            continue;
        struct shim_suite *s = NULL;
        for (int j = 0; j < shim_nsuites; j++)
            if (!strcmp(shim_suites[j]->name, t->suite)) s = shim_suites[j];
        fprintf(stderr, "[RUN ] %s\n", id);
        fflush(stderr);
        pid_t pid = fork();
        if (pid == 0) {
            double to = t->timeout ? t->timeout : s && s->timeout ? s->timeout : 0;
            if (to) alarm((unsigned)(to * 10)); /* TSan is slow */
            if (s && s->init) s->init();
            if (t->init) t->init();
            t->fn();
            if (t->fini) t->fini();
            if (s && s->fini) s->fini();
            _exit(0);
        }
        int st; waitpid(pid, &st, 0);
        ran++;
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok) failed++;
        fprintf(stderr, "[%s] %s (%s %d)\n", ok ? "PASS" : "FAIL", id,
                WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
    fprintf(stderr, "shim: %d run, %d failed\n", ran, failed);
    return failed != 0;
}
#endif
