/* test_spill.c: the host memory limit and spilling to disk (runtime/spill.c). A cask-array
 * pipeline over 3x the limit gives the bytes of an in-memory run, with files written
 * and read back (on CPU workers, and with simulated GPUs whose own limit cascades to
 * host then disk); a spill folder on a full file system fails the computation with
 * the folder and the chunk named, without hanging; files go when their chunks are
 * freed and the run's folder at shutdown; a dead run's folder is removed at start, a
 * live one's left alone. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cask/cask.h"
#include "cask/array.h"

#define LIMIT ((size_t)1 << 20)          /* 1 MiB of host chunks */
#define N ((int64_t)3 * (1 << 17))       /* 3 MiB of float64: 3x the limit */
#define CHUNK ((int64_t)1 << 13)         /* 64 KiB chunks */

static char base[64];

static void mkbase(void)
{
    snprintf(base, sizeof base, "/tmp/cask_spill_test_XXXXXX");
    cr_assert(mkdtemp(base));
}

static void rmbase(void)
{
    char cmd[128];
    umount(base);
    snprintf(cmd, sizeof cmd, "rm -rf %s", base);
    if (system(cmd)) {
    }
}

TestSuite(spill, .init = mkbase, .fini = rmbase, .timeout = 300);

static cask_runtime *start(size_t limit, int sim_gpus, size_t gpu_limit)
{
    cask_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_BIND |
                     CASK_CONFIG_HOST_MEM_LIMIT | CASK_CONFIG_SPILL_DIR | CASK_CONFIG_SIM_GPUS |
                     CASK_CONFIG_GPU_MEM_LIMIT;
    cfg.ncpu = 2;
    cfg.ngpu = sim_gpus ? -1 : 0;
    cfg.sim_gpus = sim_gpus;
    cfg.gpu_mem_limit = gpu_limit;
    cfg.bind = 0;
    cfg.host_mem_limit = limit;
    cfg.spill_dir = base;
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    return rt;
}

/* The run's folder (base/cask-spill-PID-*) into out; 0 if there is none. */
static int run_dir(char *out, size_t len)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "cask-spill-%ld-", (long)getpid());
    DIR *d = opendir(base);
    cr_assert(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            snprintf(out, len, "%s/%s", base, e->d_name);
            found = 1;
        }
    closedir(d);
    return found;
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* x = uniform(N), persisted (its chunks are runtime handles: 3x the limit); then
 * y = sin(x * 3 + 1) - x and sum(y), computed from the kept chunks. Fills y and sum;
 * *files_mid: spill files seen after the persist (-1 without a limit). */
static cask_status pipeline(cask_runtime *rt, double *y, double *sum, int *files_mid,
                            char *err, size_t errlen)
{
    cask_array_ctx *ctx;
    cr_assert_eq(cask_array_ctx_create(rt, &ctx), CASK_OK);
    int64_t shape[1] = {N}, chunks[1] = {CHUNK};
    cask_array *x, *a, *b, *c, *yy, *s;
    cr_assert_eq(cask_array_random_uniform(ctx, CASK_FLOAT64, 1, shape, chunks, 42, -1, 1, &x),
                 CASK_OK);
    cask_status st = cask_array_persist(ctx, 1, &x);
    char dir[512];
    *files_mid = run_dir(dir, sizeof dir) ? count_files(dir) : -1;
    if (!st) {
        cr_assert_eq(cask_array_binary_scalar(CASK_MUL, x, 3.0, 0, &a), CASK_OK);
        cr_assert_eq(cask_array_binary_scalar(CASK_ADD, a, 1.0, 0, &b), CASK_OK);
        cr_assert_eq(cask_array_unary(CASK_SIN, b, &c), CASK_OK);
        cr_assert_eq(cask_array_binary(CASK_SUB, c, x, &yy), CASK_OK);
        cr_assert_eq(cask_array_reduce(CASK_REDUCE_SUM, yy, CASK_AXIS_ALL, &s), CASK_OK);
        cask_array *outs[2] = {yy, s};
        void *bufs[2] = {y, sum};
        size_t sizes[2] = {(size_t)N * sizeof *y, sizeof *sum};
        st = cask_array_compute_many(ctx, 2, outs, bufs, sizes);
        cask_array_release(a);
        cask_array_release(b);
        cask_array_release(c);
        cask_array_release(yy);
        cask_array_release(s);
    }
    if (st)
        snprintf(err, errlen, "%s", cask_array_ctx_error(ctx));
    cask_array_release(x);
    cask_array_ctx_destroy(ctx);
    return st;
}

static void compare_with_in_memory(int sim_gpus, size_t gpu_limit)
{
    double *y0 = malloc((size_t)N * sizeof *y0), *y1 = malloc((size_t)N * sizeof *y1);
    double s0, s1;
    int files;
    char err[1024];
    cask_runtime *rt = start(0, sim_gpus, gpu_limit);
    cr_assert_eq(pipeline(rt, y0, &s0, &files, err, sizeof err), CASK_OK, "%s", err);
    cr_assert_eq(files, -1, "no limit: no spill folder");
    cr_assert_eq(cask_shutdown(rt), CASK_OK);

    rt = start(LIMIT, sim_gpus, gpu_limit);
    char dir[512];
    cr_assert(run_dir(dir, sizeof dir), "a limit makes the run's spill folder");
    cr_assert_eq(pipeline(rt, y1, &s1, &files, err, sizeof err), CASK_OK, "%s", err);
    /* 3 MiB persisted under a 1 MiB limit: most chunks went to files */
    cr_assert_geq(files, (int)(N * 8 / CHUNK / 8 / 2), "only %d spill files", files);
    cr_assert_eq(count_files(dir), 0, "files left after their chunks were freed");
    cask_host_mem_stats hm;
    cr_assert_eq(cask_runtime_host_mem(rt, &hm), CASK_OK);
    fprintf(stderr, "spill (%d simulated GPUs): %llu written, %llu read back, %llu dropped, "
            "%llu tasks deferred; peak %zu of %zu bytes\n", sim_gpus,
            (unsigned long long)hm.spill_writes, (unsigned long long)hm.spill_reads,
            (unsigned long long)hm.spill_drops, (unsigned long long)hm.tasks_deferred, hm.peak,
            hm.limit);
    cr_assert_gt(hm.spill_writes, 0);
    cr_assert_gt(hm.spill_reads, 0, "nothing was read back");
    cr_assert_eq(hm.used, 0, "all chunks were freed: %zu bytes still counted", hm.used);
    /* at most the chunks the two workers hold at once beyond the limit */
    cr_assert_leq(hm.peak, LIMIT + 8 * CHUNK * sizeof(double), "peak %zu over a limit of %zu",
                  hm.peak, LIMIT);
    cr_assert_gt(hm.tasks_deferred, 0, "no task waited off its worker for a read-back");
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    cr_assert_eq(access(dir, F_OK), -1, "the run's folder outlived the runtime");

    cr_assert_eq(memcmp(y0, y1, (size_t)N * sizeof *y0), 0, "results differ from in-memory");
    cr_assert_eq(memcmp(&s0, &s1, sizeof s0), 0, "sum differs: %.17g vs %.17g", s0, s1);
    free(y0);
    free(y1);
}

Test(spill, array_pipeline_3x_limit_matches_in_memory)
{
    compare_with_in_memory(0, 0);
}

Test(spill, array_pipeline_with_simulated_gpus)
{
    compare_with_in_memory(2, (size_t)256 << 10);
}

/* ---- simulated GPUs: GPU eviction -> host -> disk ---- */

#define GCHUNKS 32
#define GWORDS 8192                       /* 64 KiB chunks: 2 MiB in all */

static cask_status fill_k(cask_task_ctx *ctx)
{
    size_t n;
    int c = *(const int *)cask_task_args(ctx, &n);
    int64_t *w = cask_task_buffer(ctx, 0);
    for (int i = 0; i < GWORDS; i++)
        w[i] = (int64_t)c * 1000000 + i;
    return CASK_OK;
}

static cask_status inc_k(cask_task_ctx *ctx)
{
    int64_t *w = cask_task_buffer(ctx, 0);
    for (int i = 0; i < GWORDS; i++)
        w[i] += 1;
    return CASK_OK;
}

static cask_status no_real_gpu(cask_task_ctx *ctx)
{
    return cask_task_fail(ctx, "only simulated GPUs here");
}

Test(spill, gpu_eviction_cascades_to_disk)
{
    /* 2 simulated GPUs of 128 KiB, a host limit of 512 KiB, 2 MiB of created chunks
     * written and updated on the GPUs: dirty GPU replicas go to host, host to disk */
    cask_runtime *rt = start((size_t)512 << 10, 2, (size_t)128 << 10);
    cask_kernel_desc kf = {.name = "fill", .cpu = fill_k, .cuda = no_real_gpu};
    cask_kernel_desc ki = {.name = "inc", .cpu = inc_k, .cuda = no_real_gpu};
    cask_kernel *fk, *ik;
    cr_assert_eq(cask_kernel_register(rt, &kf, &fk), CASK_OK);
    cr_assert_eq(cask_kernel_register(rt, &ki, &ik), CASK_OK);
    cask_data *d[GCHUNKS];
    for (int c = 0; c < GCHUNKS; c++)
        cr_assert_eq(cask_data_create(rt, GWORDS * sizeof(int64_t), &d[c]), CASK_OK);
    cask_graph *g;
    cr_assert_eq(cask_graph_create(rt, &g), CASK_OK);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < GCHUNKS; c++) {
            cask_access acc = {d[c], r ? CASK_RW : CASK_WRITE};
            cask_task_desc td = {.field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE | CASK_TASK_DEVICE,
                                 .kernel = r ? ik : fk, .access = &acc, .naccess = 1,
                                 .args = &c, .args_size = sizeof c, .where = CASK_WHERE_GPU,
                                 .device = (c + r) % 2};
            cr_assert_eq(cask_graph_add_task(g, &td, NULL), CASK_OK);
        }
    cr_assert_eq(cask_graph_compute(g), CASK_OK, "%s", cask_graph_error(g));
    int nw;
    cask_worker_stats ws[8];
    cr_assert_eq(cask_runtime_nworkers(rt, &nw), CASK_OK);
    cr_assert_eq(cask_runtime_stats(rt, ws, nw), CASK_OK);
    uint64_t gpu_spills = 0;
    for (int i = 0; i < nw; i++)
        gpu_spills += ws[i].spills;
    cask_host_mem_stats hm;
    cr_assert_eq(cask_runtime_host_mem(rt, &hm), CASK_OK);
    cr_assert_gt(gpu_spills, 0, "no dirty GPU replica went to host");
    cr_assert_gt(hm.spill_writes, 0, "nothing went from host to disk");
    for (int c = 0; c < GCHUNKS; c++) {
        int64_t *w;
        cr_assert_eq(cask_data_acquire(d[c], CASK_READ, (void **)&w), CASK_OK);
        for (int i = 0; i < GWORDS; i += 97)
            cr_assert_eq(w[i], (int64_t)c * 1000000 + i + 2, "chunk %d word %d", c, i);
        cr_assert_eq(cask_data_release(d[c]), CASK_OK);
    }
    cr_assert_eq(cask_runtime_host_mem(rt, &hm), CASK_OK);
    fprintf(stderr, "cascade: %llu GPU spills to host; host: %llu written, %llu read back; "
            "peak %zu of %zu\n", (unsigned long long)gpu_spills,
            (unsigned long long)hm.spill_writes, (unsigned long long)hm.spill_reads, hm.peak,
            hm.limit);
    cr_assert_gt(hm.spill_reads, 0, "nothing was read back from disk");
    cask_graph_destroy(g);
    for (int c = 0; c < GCHUNKS; c++)
        cr_assert_eq(cask_data_destroy(d[c]), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
}

Test(spill, full_file_system_fails_clean)
{
    if (geteuid() != 0 || mount("tmpfs", base, "tmpfs", 0, "size=1m") != 0) {
        cr_skip_test("needs root to mount a 1 MiB tmpfs (%s)", strerror(errno));
        return;
    }
    cask_runtime *rt = start((size_t)256 << 10, 0, 0);
    double *y = malloc((size_t)N * sizeof *y), s;
    int files;
    char err[1024] = "";
    cask_status st = pipeline(rt, y, &s, &files, err, sizeof err);
    cr_assert_eq(st, CASK_ERR_IO, "status %s, message: %s", cask_status_string(st), err);
    cr_assert(strstr(err, "spill folder") && strstr(err, base), "message: %s", err);
    cr_assert(strstr(err, "cannot write chunk") && strstr(err, "No space left on device"),
              "message: %s", err);
    char dir[512];
    cr_assert(run_dir(dir, sizeof dir));
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    cr_assert_eq(access(dir, F_OK), -1, "the run's folder outlived the runtime");
    free(y);
}

Test(spill, stale_folders_removed_live_ones_kept)
{
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    cr_assert(child > 0);
    waitpid(child, NULL, 0);   /* a pid whose process is gone */
    char dead[256], live[256], file[300];
    snprintf(dead, sizeof dead, "%s/cask-spill-%ld-AbC123", base, (long)child);
    snprintf(live, sizeof live, "%s/cask-spill-1-XyZ789", base);   /* init: alive */
    cr_assert_eq(mkdir(dead, 0700), 0);
    cr_assert_eq(mkdir(live, 0700), 0);
    snprintf(file, sizeof file, "%s/d7", dead);
    FILE *f = fopen(file, "w");
    cr_assert(f);
    fputs("stale chunk", f);
    fclose(f);
    cask_runtime *rt = start(LIMIT, 0, 0);
    cr_assert_eq(access(dead, F_OK), -1, "a dead run's folder was left");
    cr_assert_eq(access(live, F_OK), 0, "a live run's folder was removed");
    /* the new run never takes a stale file for its own data: its folder starts empty */
    char dir[512];
    cr_assert(run_dir(dir, sizeof dir));
    cr_assert_eq(count_files(dir), 0);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    rmdir(live);
}

Test(spill, bad_environment_value)
{
    setenv("CASK_HOST_MEM_LIMIT", "12Q", 1);
    cask_runtime *rt = NULL;
    cr_assert_eq(cask_init(NULL, &rt), CASK_ERR_INVALID);
    unsetenv("CASK_HOST_MEM_LIMIT");
}
