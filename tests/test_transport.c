/* tests/test_transport.c: the multi-process layer as seen from a single process (no
 * launcher): the bootstrap is a job of one, UCX talks to itself, a distributed graph
 * runs locally, and bad arguments are refused with a clear status. The multi-process
 * behaviour is tested by the SPMD programs in tests/dist (suite dist). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cask/cask.h"
#include "transport/bootstrap.h"
#ifdef CASK_HAVE_UCX
#include "transport/ucx.h"
#endif

static void no_launcher(void)
{
    unsetenv("PMIX_RANK");
    unsetenv("PMIX_NAMESPACE");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unsetenv("SLURM_PROCID");
    unsetenv("CASK_BOOT_DIR");
}

TestSuite(bootstrap, .init = no_launcher);

Test(bootstrap, without_a_launcher_is_rank_0_of_1)
{
    xport_boot *b;
    char err[256];
    cr_assert_eq(xport_boot_init(NULL, &b, err, sizeof err), CASK_OK, "%s", err);
    cr_assert_eq(xport_boot_rank(b), 0);
    cr_assert_eq(xport_boot_size(b), 1);
    cr_assert_eq(xport_boot_local_rank(b), 0);
    cr_assert_eq(xport_boot_local_size(b), 1);
    cr_assert_eq(xport_boot_kind(b), XPORT_BOOT_SINGLE);
    xport_boot_finalize(b);
}

Test(bootstrap, collectives_of_one_return_its_own_contribution)
{
    xport_boot *b;
    cr_assert_eq(xport_boot_init(NULL, &b, NULL, 0), CASK_OK);
    void **blobs;
    size_t *lens;
    cr_assert_eq(xport_boot_allgather(b, "k", "hello", 5, &blobs, &lens), CASK_OK);
    cr_assert_eq(lens[0], 5);
    cr_assert_eq(memcmp(blobs[0], "hello", 5), 0);
    xport_boot_free_blobs(b, blobs, lens);
    cr_assert_eq(xport_boot_allgather(b, "empty", NULL, 0, &blobs, &lens), CASK_OK);
    cr_assert_eq(lens[0], 0);
    xport_boot_free_blobs(b, blobs, lens);
    char id[16] = "abc";
    cr_assert_eq(xport_boot_bcast(b, "id", 0, id, sizeof id), CASK_OK);
    cr_assert_str_eq(id, "abc");
    cr_assert_eq(xport_boot_barrier(b), CASK_OK);
    xport_boot_finalize(b);
}

Test(bootstrap, refuses_bad_arguments)
{
    xport_boot *b;
    cr_assert_eq(xport_boot_init(NULL, &b, NULL, 0), CASK_OK);
    void **blobs;
    size_t *lens;
    char longkey[64];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    cr_assert_eq(xport_boot_allgather(b, longkey, "x", 1, &blobs, &lens), CASK_ERR_INVALID);
    cr_assert_eq(xport_boot_allgather(b, "k", NULL, 3, &blobs, &lens), CASK_ERR_INVALID);
    char id[4];
    cr_assert_eq(xport_boot_bcast(b, "id", 1, id, sizeof id), CASK_ERR_INVALID, "root 1 of 1");
    xport_boot_finalize(b);
}

Test(bootstrap, refuses_to_run_alone_under_a_launcher_without_pmix)
{
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);   /* mpirun's variables, no PMIx ones */
    xport_boot *b = NULL;
    char err[256];
    cr_assert_eq(xport_boot_init(NULL, &b, err, sizeof err), CASK_ERR_LAUNCH);
    cr_assert_null(b);
    cr_assert(strstr(err, "4 processes"), "message: %s", err);
}

Test(bootstrap, refuses_srun_without_pmix_naming_mpi_pmix)
{
    setenv("SLURM_PROCID", "2", 1);           /* srun --mpi=none: Slurm's, no PMIx ones */
    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    xport_boot *b = NULL;
    char err[256];
    cask_status st = xport_boot_init(NULL, &b, err, sizeof err);
    unsetenv("SLURM_STEP_NUM_TASKS");
    cr_assert_eq(st, CASK_ERR_LAUNCH);
    cr_assert_null(b);
#ifdef CASK_HAVE_PMIX
    cr_assert(strstr(err, "srun started 4 tasks") && strstr(err, "--mpi=pmix"), "message: %s", err);
#endif
}

Test(bootstrap, refuses_srun_with_pmi2_naming_mpi_pmix)
{
    setenv("SLURM_PROCID", "1", 1);           /* srun --mpi=pmi2: PMI-2's size as well */
    setenv("SLURM_STEP_NUM_TASKS", "2", 1);
    setenv("PMI_SIZE", "2", 1);
    xport_boot *b = NULL;
    char err[256];
    cask_status st = xport_boot_init(NULL, &b, err, sizeof err);
    unsetenv("SLURM_STEP_NUM_TASKS");
    cr_assert_eq(st, CASK_ERR_LAUNCH);
#ifdef CASK_HAVE_PMIX
    cr_assert(strstr(err, "srun started 2 tasks") && strstr(err, "--mpi=pmix"), "message: %s", err);
#endif
}

Test(bootstrap, a_batch_script_outside_srun_runs_alone)
{
    setenv("SLURM_PROCID", "0", 1);           /* sbatch's script: no job step */
    setenv("SLURM_NTASKS", "4", 1);
    xport_boot *b = NULL;
    cask_status st = xport_boot_init(NULL, &b, NULL, 0);
    unsetenv("SLURM_NTASKS");
    cr_assert_eq(st, CASK_OK);
    cr_assert_eq(xport_boot_size(b), 1);
    xport_boot_finalize(b);
}

Test(bootstrap, forced_single_ignores_the_launcher)
{
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    xport_boot_config cfg = { .field_mask = XPORT_BOOT_FORCE_SINGLE, .force_single = 1 };
    xport_boot *b;
    cr_assert_eq(xport_boot_init(&cfg, &b, NULL, 0), CASK_OK);
    cr_assert_eq(xport_boot_size(b), 1);
    xport_boot_finalize(b);
}

Test(bootstrap, file_bootstrap_of_one_works_in_a_folder)
{
    char dir[] = "/tmp/cask-boot-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setenv("CASK_BOOT_DIR", dir, 1);
    setenv("CASK_RANK", "0", 1);
    setenv("CASK_SIZE", "1", 1);
    xport_boot *b;
    char err[256];
    cr_assert_eq(xport_boot_init(NULL, &b, err, sizeof err), CASK_OK, "%s", err);
    cr_assert_eq(xport_boot_kind(b), XPORT_BOOT_FILE);
    void **blobs;
    size_t *lens;
    cr_assert_eq(xport_boot_allgather(b, "k", "abc", 3, &blobs, &lens), CASK_OK, "%s",
                 xport_boot_error(b));
    cr_assert_eq(lens[0], 3);
    cr_assert_eq(memcmp(blobs[0], "abc", 3), 0);
    xport_boot_free_blobs(b, blobs, lens);
    cr_assert_eq(xport_boot_barrier(b), CASK_OK);
    xport_boot_finalize(b);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(bootstrap, file_bootstrap_needs_a_rank_and_a_size)
{
    setenv("CASK_BOOT_DIR", "/tmp", 1);
    setenv("CASK_RANK", "3", 1);
    setenv("CASK_SIZE", "2", 1);
    xport_boot *b = NULL;
    char err[256];
    cr_assert_eq(xport_boot_init(NULL, &b, err, sizeof err), CASK_ERR_INVALID);
    cr_assert(strstr(err, "CASK_RANK"), "message: %s", err);
}

#ifdef CASK_HAVE_UCX

typedef struct self_rx {
    unsigned char *buf;
    size_t len;
    int done, twice;
    cask_status st;
} self_rx;

static void rx_done(void *arg, cask_status st, const char *why)
{
    self_rx *r = arg;
    (void)why;
    r->st = st;
    __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

static void on_self(void *arg, xport_ucx_msg *m)
{
    self_rx *r = arg;
    r->buf = malloc(m->len ? m->len : 1);
    r->len = m->len;
    cr_assert_eq(xport_ucx_recv_into(m, r->buf, rx_done, r), CASK_OK);
    r->twice = xport_ucx_recv_into(m, r->buf, rx_done, r) == CASK_ERR_STATE;
}

static void wait_done(self_rx *r)
{
    for (int i = 0; i < 20000 && !__atomic_load_n(&r->done, __ATOMIC_ACQUIRE); i++)
        usleep(500);
    cr_assert(r->done, "the message to self never arrived");
}

TestSuite(ucx, .init = no_launcher, .timeout = 60);

static xport_ucx *self_transport(xport_boot **b, self_rx *r)
{
    cr_assert_eq(xport_boot_init(NULL, b, NULL, 0), CASK_OK);
    xport_ucx *x;
    char err[256];
    cr_assert_eq(xport_ucx_create(*b, NULL, &x, err, sizeof err), CASK_OK, "%s", err);
    cr_assert_eq(xport_ucx_set_handler(x, 3, on_self, r), CASK_OK);
    cr_assert_eq(xport_ucx_connect(x), CASK_OK);
    return x;
}

static void send_to_self_and_check(size_t len)
{
    xport_boot *b;
    self_rx r = { 0 };
    xport_ucx *x = self_transport(&b, &r);
    unsigned char *data = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 7 + 1);
    cr_assert_eq(xport_ucx_am_send(x, 0, 3, "hdr", 3, data, len, NULL, NULL), CASK_OK);
    wait_done(&r);
    cr_assert_eq(r.st, CASK_OK);
    cr_assert(r.twice, "a second recv_into of one message was not refused");
    cr_assert_eq(r.len, len);
    cr_assert_eq(memcmp(r.buf, data, len), 0, "content of %zu bytes", len);
    xport_ucx_stats s;
    cr_assert_eq(xport_ucx_peer_stats(x, 0, &s), CASK_OK);
    cr_assert_eq(s.msgs_sent, 1);
    cr_assert_eq(s.bytes_recv, len);
    cr_assert_eq(xport_ucx_destroy(x, NULL, 0), CASK_OK);
    xport_boot_finalize(b);
    free(data);
    free(r.buf);
}

Test(ucx, an_eager_message_to_self_arrives_whole)
{
    send_to_self_and_check(1000);
}

Test(ucx, a_rendezvous_message_to_self_arrives_whole)
{
    send_to_self_and_check(8u << 20);
}

Test(ucx, an_empty_message_to_self_arrives)
{
    send_to_self_and_check(0);
}

Test(ucx, refuses_bad_sends)
{
    xport_boot *b;
    cr_assert_eq(xport_boot_init(NULL, &b, NULL, 0), CASK_OK);
    xport_ucx *x;
    cr_assert_eq(xport_ucx_create(b, NULL, &x, NULL, 0), CASK_OK);
    cr_assert_eq(xport_ucx_am_send(x, 0, 1, NULL, 0, NULL, 0, NULL, NULL), CASK_ERR_STATE,
                 "a send before connect");
    cr_assert_eq(xport_ucx_set_handler(x, XPORT_UCX_MAX_AM, on_self, NULL), CASK_ERR_INVALID);
    cr_assert_eq(xport_ucx_connect(x), CASK_OK);
    cr_assert_eq(xport_ucx_connect(x), CASK_ERR_STATE, "connected twice");
    char big[XPORT_UCX_MAX_HEADER + 1] = { 0 };
    cr_assert_eq(xport_ucx_am_send(x, 0, 1, big, sizeof big, NULL, 0, NULL, NULL),
                 CASK_ERR_INVALID, "header too long");
    cr_assert_eq(xport_ucx_am_send(x, 1, 1, NULL, 0, NULL, 0, NULL, NULL), CASK_ERR_INVALID,
                 "rank 1 of 1");
    cr_assert_eq(xport_ucx_am_send(x, 0, XPORT_UCX_MAX_AM, NULL, 0, NULL, 0, NULL, NULL),
                 CASK_ERR_INVALID);
    cr_assert_eq(xport_ucx_am_send(x, 0, 1, NULL, 0, NULL, 5, NULL, NULL), CASK_ERR_INVALID,
                 "data length without data");
    cr_assert_eq(xport_ucx_peer_status(x, 0), CASK_OK);
    cr_assert_eq(xport_ucx_destroy(x, NULL, 0), CASK_OK);
    cr_assert_eq(xport_ucx_destroy(NULL, NULL, 0), CASK_OK);
    xport_boot_finalize(b);
}

/* A handler that first asks for the data in CUDA memory (refused: this UCX does not
 * move it, or the data came eagerly in host memory), then takes it in host memory. */
static void on_self_cuda_first(void *arg, xport_ucx_msg *m)
{
    self_rx *r = arg;
    r->buf = malloc(m->len ? m->len : 1);
    r->len = m->len;
    r->twice = xport_ucx_recv_into_mem(m, r->buf, XPORT_UCX_MEM_CUDA, rx_done, r) ==
               CASK_ERR_UNSUPPORTED;
    cr_assert_eq(xport_ucx_recv_into_mem(m, r->buf, XPORT_UCX_MEM_HOST, rx_done, r), CASK_OK);
}

Test(ucx, a_posted_send_arrives_and_cuda_memory_needs_a_ucx_that_moves_it)
{
    xport_boot *b;
    self_rx r = { 0 };
    cr_assert_eq(xport_boot_init(NULL, &b, NULL, 0), CASK_OK);
    xport_ucx *x;
    cr_assert_eq(xport_ucx_create(b, NULL, &x, NULL, 0), CASK_OK);
    cr_assert_eq(xport_ucx_set_handler(x, 3, on_self_cuda_first, &r), CASK_OK);
    cr_assert_eq(xport_ucx_connect(x), CASK_OK);
    size_t len = 1000;
    unsigned char data[1000];
    for (size_t i = 0; i < len; i++)
        data[i] = (unsigned char)(i * 3 + 5);
    /* never sent on this thread: queued for the progress thread */
    cr_assert_eq(xport_ucx_am_post_mem(x, 0, 3, NULL, 0, data, len, XPORT_UCX_MEM_HOST, NULL,
                                       NULL), CASK_OK);
    wait_done(&r);
    cr_assert_eq(r.st, CASK_OK);
    cr_assert(r.twice, "eager data (or a UCX without CUDA memory) was given to a CUDA buffer");
    cr_assert_eq(memcmp(r.buf, data, len), 0);
    if (!xport_ucx_cuda_memory(x)) {
        cr_assert_eq(xport_ucx_am_send_mem(x, 0, 3, NULL, 0, data, len, XPORT_UCX_MEM_CUDA,
                                           NULL, NULL), CASK_ERR_UNSUPPORTED);
        cr_assert_eq(xport_ucx_am_post_mem(x, 0, 3, NULL, 0, data, len, XPORT_UCX_MEM_CUDA,
                                           NULL, NULL), CASK_ERR_UNSUPPORTED);
    }
    char desc[256];
    xport_ucx_describe(desc, sizeof desc);
    cr_assert(strstr(desc, "UCX ") && strstr(desc, "CUDA memory: "), "%s", desc);
    cr_assert_eq(xport_ucx_destroy(x, NULL, 0), CASK_OK);
    xport_boot_finalize(b);
    free(r.buf);
}

#endif /* CASK_HAVE_UCX */

/* ---- the public distributed API in a job of one ---- */

static cask_runtime *rt;
static cask_dist *dist;

static void dist_up(void)
{
    no_launcher();
    cask_config cfg = { .field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_BIND | CASK_CONFIG_NGPU,
                        .ncpu = 2, .bind = 0, .ngpu = 0 };
    cr_assert_eq(cask_init(&cfg, &rt), CASK_OK);
    cr_assert_eq(cask_dist_init(rt, NULL, &dist), CASK_OK);
}

static void dist_down(void)
{
    cask_dist_finalize(dist);
    cask_shutdown(rt);
}

TestSuite(dist, .init = dist_up, .fini = dist_down, .timeout = 60);

Test(dist, a_job_of_one_is_rank_0_of_1)
{
    cr_assert_eq(cask_dist_rank(dist), 0);
    cr_assert_eq(cask_dist_size(dist), 1);
    cr_assert_eq(cask_dist_barrier(dist), CASK_OK);
}

Test(dist, no_rank_of_a_job_of_one_is_lost_and_bad_ranks_are_not)
{
    cr_assert_eq(cask_dist_rank_lost(dist, 0), 0);
    cr_assert_eq(cask_dist_rank_lost(dist, 1), 0, "out of range");
    cr_assert_eq(cask_dist_rank_lost(dist, -1), 0, "out of range");
    cr_assert_eq(cask_dist_rank_lost(NULL, 0), 0);
}

Test(dist, owners_must_be_ranks_and_declared_once)
{
    cask_data *d;
    double x[4];
    cr_assert_eq(cask_data_register(rt, x, sizeof x, &d), CASK_OK);
    cr_assert_eq(cask_dist_set_owner(dist, d, 1), CASK_ERR_INVALID, "rank 1 of 1");
    cr_assert_eq(cask_dist_set_owner(dist, d, 0), CASK_OK);
    cr_assert_eq(cask_dist_set_owner(dist, d, 0), CASK_ERR_INVALID, "declared twice");
    int owner = -1;
    cr_assert_eq(cask_dist_owner(dist, d, &owner), CASK_OK);
    cr_assert_eq(owner, 0);
    cask_data *other;
    cr_assert_eq(cask_data_register(rt, x, sizeof x, &other), CASK_OK);
    cr_assert_eq(cask_dist_owner(dist, other, &owner), CASK_ERR_NOT_FOUND);
}

static cask_status k_inc(cask_task_ctx *ctx)
{
    double *x = cask_task_buffer(ctx, 0);
    x[0] += 1;
    return CASK_OK;
}

Test(dist, tasks_on_undeclared_data_are_refused)
{
    cask_kernel_desc kd = { .name = "inc", .cpu = k_inc };
    cask_kernel *k;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    double x = 0;
    cask_data *d;
    cr_assert_eq(cask_data_register(rt, &x, sizeof x, &d), CASK_OK);
    cask_dist_graph *g;
    cr_assert_eq(cask_dist_graph_create(dist, &g), CASK_OK);
    cask_access a = { d, CASK_RW };
    cask_task_desc td = { .kernel = k, .access = &a, .naccess = 1 };
    cr_assert_eq(cask_dist_graph_add_task(g, &td, NULL), CASK_ERR_NOT_FOUND);
    cr_assert_eq(cask_dist_graph_gather(g, d, 0, &x), CASK_ERR_NOT_FOUND);
    cr_assert_eq(cask_dist_graph_destroy(g), CASK_OK);
}

Test(dist, a_graph_of_one_rank_runs_every_task_here_and_gathers)
{
    cask_kernel_desc kd = { .name = "inc", .cpu = k_inc };
    cask_kernel *k;
    cr_assert_eq(cask_kernel_register(rt, &kd, &k), CASK_OK);
    double x = 0, out = -1;
    cask_data *d;
    cr_assert_eq(cask_dist_data_create(dist, sizeof x, 0, &x, &d), CASK_OK);
    cask_dist_graph *g;
    cr_assert_eq(cask_dist_graph_create(dist, &g), CASK_OK);
    cask_access a = { d, CASK_RW };
    cask_task_desc td = { .kernel = k, .access = &a, .naccess = 1 };
    size_t idx = 99;
    for (int i = 0; i < 5; i++)
        cr_assert_eq(cask_dist_graph_add_task(g, &td, &idx), CASK_OK);
    cr_assert_eq(idx, 4);
    cr_assert_eq(cask_dist_graph_gather(g, d, 1, &out), CASK_ERR_INVALID, "root 1 of 1");
    cr_assert_eq(cask_dist_graph_gather(g, d, 0, NULL), CASK_ERR_INVALID, "no destination");
    cr_assert_eq(cask_dist_graph_gather(g, d, 0, &out), CASK_OK);
    cr_assert_eq(cask_dist_graph_compute(g), CASK_OK, "%s", cask_dist_graph_error(g));
    cr_assert_eq(out, 5.0);
    int r = -1;
    cr_assert_eq(cask_dist_graph_task_rank(g, 4, &r), CASK_OK);
    cr_assert_eq(r, 0);
    cask_dist_graph_info info;
    cr_assert_eq(cask_dist_graph_query(g, &info), CASK_OK);
    cr_assert_eq(info.ntasks, 5);
    cr_assert_eq(info.ntasks_here, 5);
    cr_assert_eq(info.transfers_in + info.transfers_out, 0);
    cr_assert_eq(cask_dist_graph_add_task(g, &td, NULL), CASK_ERR_STATE, "added after planning");
    cr_assert_eq(cask_dist_graph_compute(g), CASK_OK);
    cr_assert_eq(out, 10.0, "computed twice: %g", out);
    cr_assert_eq(cask_dist_graph_destroy(g), CASK_OK);
}
