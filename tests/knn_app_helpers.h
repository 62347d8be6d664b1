/* tests/knn_app_helpers.h: what the test_knn_app_*.c files share: running the cask-knn
 * binary named by $CASK_KNN (with --cpu-only unless $KNN_APP_MODE=gpu) and collecting its
 * exit status and output, the scratch folder each test gets (the suite's init and fini),
 * and reading the result files it writes (CSV and .npy). */
#ifndef CASK_TEST_KNN_APP_HELPERS_H
#define CASK_TEST_KNN_APP_HELPERS_H

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- running the binary ---- */

typedef struct run_result {
    int code;     /* exit status, or 128 + signal */
    char *err;    /* stderr */
    char *out;    /* stdout */
} run_result;

static char dir[64];

static inline char *slurp_path(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = '\0';
    if (len)
        *len = got;
    fclose(f);
    return s;
}

static inline const char *knn_path(void)
{
    const char *p = getenv("CASK_KNN");
    cr_assert(p && *p, "set CASK_KNN to the cask-knn binary");
    return p;
}

static inline int gpu_mode(void)
{
    const char *m = getenv("KNN_APP_MODE");
    return m && strcmp(m, "gpu") == 0;
}

/* Runs cask-knn with the given arguments (NULL-terminated), adding --cpu-only unless in
 * GPU mode or raw is set. */
static inline void run_v(run_result *r, int raw, va_list ap)
{
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)knn_path();
    if (!raw && !gpu_mode())
        argv[argc++] = "--cpu-only";
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL) {
        cr_assert(argc < 63);
        argv[argc++] = (char *)a;
    }
    argv[argc] = NULL;

    char outp[128], errp[128];
    snprintf(outp, sizeof outp, "%s/.stdout", dir);
    snprintf(errp, sizeof errp, "%s/.stderr", dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int e = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(e, 0, "spawn %s: %s", argv[0], strerror(e));
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->out = slurp_path(outp, NULL);
    r->err = slurp_path(errp, NULL);
    unlink(outp);
    unlink(errp);
}

static inline void run(run_result *r, ...)
{
    va_list ap;
    va_start(ap, r);
    run_v(r, 0, ap);
    va_end(ap);
}

static inline void run_raw(run_result *r, ...)
{
    va_list ap;
    va_start(ap, r);
    run_v(r, 1, ap);
    va_end(ap);
}

static inline void run_free(run_result *r)
{
    free(r->err);
    free(r->out);
}

static inline void expect_ok(const run_result *r)
{
    cr_assert_eq(r->code, 0, "exit %d, stderr:\n%s", r->code, r->err);
}

static inline void expect_fail(const run_result *r, int code, const char *fragment)
{
    cr_assert_eq(r->code, code, "exit %d, want %d; stderr:\n%s", r->code, code, r->err);
    cr_assert(strstr(r->err, fragment), "stderr lacks '%s':\n%s", fragment, r->err);
    cr_assert(strncmp(r->err, "cask-knn: ", 10) == 0, "stderr:\n%s", r->err);
}

/* ---- the scratch folder ---- */

static inline void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/test_knn_app_XXXXXX");
    cr_assert(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    if (!getenv("CASK_NCPU"))
        setenv("CASK_NCPU", "2", 1);
    /* the runtime's warnings about the machine (a container hiding /sys) are not the
     * app's messages that these tests read */
    setenv("CASK_LOG", "error", 1);
}

static inline void teardown(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || e->d_name[1] == '.'))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static inline const char *at(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static inline void write_text(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

/* Names of files in the scratch folder besides the given inputs, comma-separated. */
static inline void expect_only_files(int n, ...)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        int known = 0;
        va_list ap;
        va_start(ap, n);
        for (int i = 0; i < n; i++)
            known |= strcmp(va_arg(ap, const char *), e->d_name) == 0;
        va_end(ap);
        cr_assert(known, "unexpected file '%s' left in %s", e->d_name, dir);
    }
    closedir(d);
}

/* ---- reading the results ---- */

typedef struct result {
    int n;
    long long *index;
    double *dist;
} result;

static inline result parse_csv_result(const char *name)
{
    char *s = slurp_path(at(name), NULL);
    cr_assert(s, "no output file %s", name);
    cr_assert(strncmp(s, "obs,ref_index,distance\n", 23) == 0, "header: %.40s", s);
    int n = 0;
    for (char *p = s; *p; p++)
        n += *p == '\n';
    n -= 1;
    cr_assert(n >= 0);
    result r = {n, malloc((size_t)n * sizeof(long long)), malloc((size_t)n * sizeof(double))};
    char *p = s + 23;
    for (int i = 0; i < n; i++) {
        char *end;
        long long obs = strtoll(p, &end, 10);
        cr_assert_eq(obs, i);
        cr_assert_eq(*end, ',');
        r.index[i] = strtoll(end + 1, &end, 10);
        cr_assert_eq(*end, ',');
        r.dist[i] = strtod(end + 1, &end);
        cr_assert_eq(*end, '\n');
        p = end + 1;
    }
    free(s);
    return r;
}

static inline result parse_npy_result(const char *name)
{
    size_t len;
    char *s = slurp_path(at(name), &len);
    cr_assert(s && len >= 10 && memcmp(s, "\x93NUMPY\x01\x00", 8) == 0);
    size_t hl = (unsigned char)s[8] | (size_t)(unsigned char)s[9] << 8;
    int n = 0;
    char *shape = strstr(s + 10, "'shape': (");
    cr_assert(shape && strstr(s + 10, "'descr': '<f8'") && strstr(s + 10, "False"));
    n = atoi(shape + 10);
    cr_assert_eq(len, 10 + hl + (size_t)n * 16);
    result r = {n, malloc((size_t)n * sizeof(long long)), malloc((size_t)n * sizeof(double))};
    for (int i = 0; i < n; i++) {
        double v[2];
        memcpy(v, s + 10 + hl + 16 * (size_t)i, 16);
        r.index[i] = (long long)v[0];
        cr_assert_eq((double)r.index[i], v[0]);
        r.dist[i] = v[1];
    }
    free(s);
    return r;
}

static inline void result_free(result *r)
{
    free(r->index);
    free(r->dist);
}

#endif
