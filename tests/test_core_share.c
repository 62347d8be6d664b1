/* tests/test_core_share.c: processes of one job that share a host unbound pin their
 * workers to disjoint shares of its cores; a process a launcher bound keeps its cores;
 * the launchers' environment names the local rank (suite unit). Each test runs in its own
 * process (Criterion), so setenv and CPU affinity do not leak. */
#include <criterion/criterion.h>
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>
#include "cask/cask.h"
#include "test_helpers.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static cpu_set_t seen;   /* the union of the CPU sets the workers ran under */

static cask_status note_cpus(cask_task_ctx *ctx)
{
    (void)ctx;
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return CASK_ERR_INVALID;
    pthread_mutex_lock(&mu);
    CPU_OR(&seen, &seen, &s);
    pthread_mutex_unlock(&mu);
    return CASK_OK;
}

static void clear_env(void)
{
    static const char *vars[] = { "CASK_NCPU", "CASK_BIND", "CASK_LOCAL_RANK",
                                  "CASK_LOCAL_SIZE", "CASK_RANK", "CASK_SIZE", "CASK_BOOT_DIR",
                                  "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                  "SLURM_LOCALID", "SLURM_NODEID", "SLURM_STEP_TASKS_PER_NODE",
                                  "SLURM_TASKS_PER_NODE" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

TestSuite(core_share, .init = clear_env, .fini = leak_check, .timeout = 60);

/* Starts a runtime as the environment says (default worker count, no GPU), runs 64
 * tasks a few times; returns the cores it used (-1 on a failure) and the CPUs its workers
 * ran under. */
static int run_here(cpu_set_t *cpus)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU, .ngpu = 0 };
    cask_runtime *rt;
    if (cask_init(&cfg, &rt) != CASK_OK) return -1;
    cask_runtime_info info;
    cask_kernel *k;
    cask_kernel_desc kd = { .name = "note_cpus", .cpu = note_cpus };
    if (cask_runtime_query(rt, &info) != CASK_OK || info.ncpu_workers != info.ncores_used ||
        cask_kernel_register(rt, &kd, &k) != CASK_OK)
        return -1;
    CPU_ZERO(&seen);
    for (int round = 0; round < 4; round++) {
        cask_graph *g;
        if (cask_graph_create(rt, &g) != CASK_OK) return -1;
        for (int i = 0; i < 64; i++) {
            cask_task_desc td = { .kernel = k };
            if (cask_graph_add_task(g, &td, NULL) != CASK_OK) return -1;
        }
        if (cask_graph_compute(g) != CASK_OK || cask_graph_destroy(g) != CASK_OK) return -1;
    }
    if (cask_shutdown(rt) != CASK_OK) return -1;
    *cpus = seen;
    return info.ncores_used;
}

/* run_here in a child process, as a rank would: binding the process to its share of the
 * cores must not carry over to the next run. */
static int run_once(cpu_set_t *cpus)
{
    struct { int n; cpu_set_t cpus; } r = { -1, { { 0 } } };
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(fd[0]);
        r.n = run_here(&r.cpus);
        _exit(write(fd[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], &r, sizeof r);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    cr_assert_eq(got, (ssize_t)sizeof r, "the child said nothing (status %d)", status);
    cr_assert_geq(r.n, 1, "the runtime failed in the child");
    *cpus = r.cpus;
    return r.n;
}

static int machine_cores(void)
{
    cask_config cfg = { .field_mask = CASK_CONFIG_NGPU | CASK_CONFIG_NCPU, .ngpu = 0, .ncpu = 1 };
    cask_runtime *rt;
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cask_runtime_info info;
    cr_assert_eq(cask_runtime_query(rt, &info), CASK_OK);
    cr_assert_eq(cask_shutdown(rt), CASK_OK);
    return info.ncores;
}

static void skip_unless_unbound(void)
{
    cpu_set_t s;
    cr_assert_eq(sched_getaffinity(0, sizeof s, &s), 0);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online < 2 || CPU_COUNT(&s) < online)
        cr_skip_test("needs 2 or more CPUs and a process not bound to fewer (%d of %ld)",
                     CPU_COUNT(&s), online);
}

Test(core_share, two_local_ranks_unbound_pin_their_workers_to_disjoint_shares)
{
    skip_unless_unbound();
    int n = machine_cores();
    cpu_set_t c0, c1, both;
    setenv("CASK_LOCAL_SIZE", "2", 1);
    setenv("CASK_LOCAL_RANK", "0", 1);
    int n0 = run_once(&c0);
    setenv("CASK_LOCAL_RANK", "1", 1);
    int n1 = run_once(&c1);
    cr_log_info("core_share: %d cores; local rank 0 used %d (%d CPUs), rank 1 %d (%d CPUs)", n,
                n0, CPU_COUNT(&c0), n1, CPU_COUNT(&c1));
    cr_expect_eq(n0, n / 2);
    cr_expect_eq(n1, n - n / 2);
    CPU_AND(&both, &c0, &c1);
    cr_expect_eq(CPU_COUNT(&both), 0, "the two ranks' workers shared %d CPUs",
                 CPU_COUNT(&both));
    cr_expect_gt(CPU_COUNT(&c0), 0);
    cr_expect_gt(CPU_COUNT(&c1), 0);
}

Test(core_share, a_process_the_launcher_bound_keeps_its_cores)
{
    skip_unless_unbound();
    cpu_set_t one, got;
    CPU_ZERO(&one);
    CPU_SET(1, &one);   /* as mpirun --bind-to core would: local rank 1 on CPU 1 */
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    setenv("CASK_LOCAL_SIZE", "2", 1);
    setenv("CASK_LOCAL_RANK", "1", 1);
    cr_expect_eq(run_once(&got), 1);
    cr_expect(CPU_EQUAL(&got, &one), "workers ran on %d CPUs, not CPU 1 alone",
              CPU_COUNT(&got));
}

Test(core_share, launchers_name_the_local_rank)
{
    skip_unless_unbound();
    int n = machine_cores();
    cpu_set_t c;
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);   /* Open MPI's mpirun */
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    cr_expect_eq(run_once(&c), n - n / 2);
    clear_env();
    setenv("SLURM_LOCALID", "1", 1);   /* srun: node 1 of "1,2" runs 2 tasks */
    setenv("SLURM_NODEID", "1", 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", "1,2", 1);
    cr_expect_eq(run_once(&c), n - n / 2);
    setenv("SLURM_STEP_TASKS_PER_NODE", "1(x2)", 1);   /* alone on node 1: all cores */
    setenv("SLURM_LOCALID", "0", 1);
    cr_expect_eq(run_once(&c), n);
    clear_env();
    setenv("CASK_BOOT_DIR", "/nonexistent", 1);   /* the file bootstrap: one host */
    setenv("CASK_RANK", "0", 1);
    setenv("CASK_SIZE", "2", 1);
    cr_expect_eq(run_once(&c), n / 2);
    setenv("CASK_BIND", "0", 1);   /* no pinning: every core */
    cr_expect_eq(run_once(&c), n);
}
