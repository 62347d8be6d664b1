/* tests/test_dist_route.c: the per-transfer choice between host, UCX GPU memory and
 * NCCL (distributed/dist_route.c), from rank tables and settings, without a job. */
#include <criterion/criterion.h>
#include <string.h>

#include "distributed/dist_impl.h"

/* an explicit model, so that the tests do not depend on the defaults */
#define MODEL "host=40:8,ucx=30:150,ucx_remote=40:1,nccl=500:150"
#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static struct dist_route *table(const int *gpu, const int *ucx, const char *h1, const char *b0,
                                const char *b1, int nccl_all, const char *force)
{
    const char *host[2] = { "hostA", h1 };
    const char *bus[2] = { b0, b1 };
    char err[256] = "";
    struct dist_route *R = dist_route_new_for_test(2, gpu, ucx, host, bus, nccl_all, force,
                                                   MODEL, err, sizeof err);
    cr_assert(R, "dist_route_new_for_test: %s", err);
    return R;
}

static const int gpus[2] = { 0, 0 }, yes[2] = { 1, 1 }, no[2] = { 0, 0 };

Test(route, cpu_chunks_go_by_host)
{
    struct dist_route *R = table(gpus, yes, "hostA", "0000:01:00.0", "0000:02:00.0", 1, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 64 * MIB, 0), DIST_ROUTE_HOST);
    dist_route_delete(R);
}

Test(route, cuda_ucx_in_a_node)
{
    struct dist_route *R = table(gpus, yes, "hostA", "0000:01:00.0", "0000:02:00.0", 1, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 8 * KIB, 1), DIST_ROUTE_UCX_CUDA);
    cr_expect_eq(dist_route_decide(R, 1, 0, 256 * MIB, 1), DIST_ROUTE_UCX_CUDA);
    dist_route_delete(R);
}

Test(route, nccl_for_large_chunks_without_cuda_ucx)
{
    struct dist_route *R = table(gpus, no, "hostA", "0000:01:00.0", "0000:02:00.0", 1, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 8 * KIB, 1), DIST_ROUTE_HOST);
    cr_expect_eq(dist_route_decide(R, 0, 1, 64 * MIB, 1), DIST_ROUTE_NCCL);
    /* break-even: 40 + b/8e3 = 500 + b/150e3 at b ~ 3.9 MB */
    cr_expect_eq(dist_route_decide(R, 0, 1, 3 * MIB, 1), DIST_ROUTE_HOST);
    cr_expect_eq(dist_route_decide(R, 0, 1, 5 * MIB, 1), DIST_ROUTE_NCCL);
    dist_route_delete(R);
}

Test(route, no_nccl_when_two_ranks_share_a_gpu)
{
    struct dist_route *R = table(gpus, no, "hostA", "0000:01:00.0", "0000:01:00.0", 1, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 256 * MIB, 1), DIST_ROUTE_HOST);
    dist_route_delete(R);
    /* the same bus id on two hosts is two GPUs */
    R = table(gpus, no, "hostB", "0000:01:00.0", "0000:01:00.0", 1, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 256 * MIB, 1), DIST_ROUTE_NCCL);
    dist_route_delete(R);
}

Test(route, cuda_ucx_between_nodes_costs_what_the_model_says)
{
    struct dist_route *R = table(gpus, yes, "hostB", "0000:01:00.0", "0000:01:00.0", 0, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 64 * MIB, 1), DIST_ROUTE_HOST);
    dist_route_delete(R);
}

Test(route, one_side_without_cuda_ucx_or_gpu)
{
    const int ucx1[2] = { 1, 0 }, gpu1[2] = { 0, -1 };
    struct dist_route *R = table(gpus, ucx1, "hostA", "a", "b", 0, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 64 * MIB, 1), DIST_ROUTE_HOST);
    dist_route_delete(R);
    R = table(gpu1, yes, "hostA", "a", "", 0, NULL);
    cr_expect_eq(dist_route_decide(R, 0, 1, 64 * MIB, 1), DIST_ROUTE_HOST);
    dist_route_delete(R);
}

Test(route, forced)
{
    struct dist_route *R = table(gpus, yes, "hostA", "a", "b", 1, "host");
    cr_expect_eq(dist_route_decide(R, 0, 1, 64 * MIB, 1), DIST_ROUTE_HOST);
    dist_route_delete(R);
    R = table(gpus, yes, "hostA", "a", "b", 1, "nccl");
    cr_expect_eq(dist_route_decide(R, 0, 1, 8 * KIB, 1), DIST_ROUTE_NCCL);
    dist_route_delete(R);
    R = table(gpus, no, "hostA", "a", "a", 1, "nccl");   /* shared GPU: not possible */
    cr_expect_eq(dist_route_decide(R, 0, 1, 8 * KIB, 1), DIST_ROUTE_HOST);
    dist_route_delete(R);
    R = table(gpus, no, "hostA", "a", "b", 1, "ucx");    /* no CUDA UCX: not possible */
    cr_expect_eq(dist_route_decide(R, 0, 1, 8 * KIB, 1), DIST_ROUTE_HOST);
    dist_route_delete(R);
}

Test(route, bad_settings_are_refused)
{
    const char *host[2] = { "h", "h" }, *bus[2] = { "a", "b" };
    char err[256] = "";
    cr_expect_null(dist_route_new_for_test(2, gpus, yes, host, bus, 1, "fast", NULL, err,
                                           sizeof err));
    cr_expect(strstr(err, "CASK_DIST_GPU_XPORT"), "%s", err);
    cr_expect_null(dist_route_new_for_test(2, gpus, yes, host, bus, 1, NULL, "ucx=abc", err,
                                           sizeof err));
    cr_expect(strstr(err, "CASK_DIST_XPORT_MODEL"), "%s", err);
    cr_expect_null(dist_route_new_for_test(2, gpus, yes, host, bus, 1, NULL, "tcp=1:1", err,
                                           sizeof err));
    cr_expect_null(dist_route_new_for_test(2, gpus, yes, host, bus, 1, NULL, "host=1:0", err,
                                           sizeof err));
}
