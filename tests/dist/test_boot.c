/* tests/dist/test_boot.c: the bootstrap tells each process its rank and the job's size,
 * and its collectives (allgather of blobs of different sizes, bcast, barrier) give
 * every rank the same, right answer; and a collective waiting for a blob that never comes
 * ends as soon as the watch reports a loss, not at the bootstrap's timeout.
 *
 *   test_boot EXPECTED_SIZE       under run.sh (mpirun -n EXPECTED_SIZE, or the file
 *                                 bootstrap with CASK_LAUNCHER=local)
 *   test_boot 1                   alone: rank 0 of 1, no network */
#include <unistd.h>

#include "cask/status.h"
#include "transport/bootstrap.h"
#include "dist_test.h"

static void ranks_are_distinct_and_cover_the_job(xport_boot *b)
{
    int rank = xport_boot_rank(b), size = xport_boot_size(b);
    void **blobs;
    size_t *lens;
    CHECK_OK(xport_boot_allgather(b, "ranks", &rank, sizeof rank, &blobs, &lens), "%s",
             xport_boot_error(b));
    for (int r = 0; r < size; r++) {
        int got;
        CHECK(lens[r] == sizeof got, "rank %d's blob has %zu bytes", r, lens[r]);
        memcpy(&got, blobs[r], sizeof got);
        CHECK(got == r, "slot %d holds rank %d", r, got);
    }
    xport_boot_free_blobs(b, blobs, lens);
}

static void allgather_carries_blobs_of_every_size(xport_boot *b)
{
    int rank = xport_boot_rank(b), size = xport_boot_size(b);
    /* rank r contributes 37*r bytes (rank 0 an empty blob), twice with the same key */
    for (int round = 0; round < 2; round++) {
        size_t len = 37u * (size_t)rank;
        unsigned char *mine = malloc(len + 1);
        for (size_t i = 0; i < len; i++)
            mine[i] = dt_pattern(rank, (uint64_t)round, i);
        void **blobs;
        size_t *lens;
        CHECK_OK(xport_boot_allgather(b, "blob", mine, len, &blobs, &lens), "%s",
                 xport_boot_error(b));
        for (int r = 0; r < size; r++) {
            CHECK(lens[r] == 37u * (size_t)r, "round %d: rank %d's blob has %zu bytes",
                  round, r, lens[r]);
            for (size_t i = 0; i < lens[r]; i++)
                CHECK(((unsigned char *)blobs[r])[i] == dt_pattern(r, (uint64_t)round, i),
                      "round %d: byte %zu of rank %d's blob", round, i, r);
        }
        xport_boot_free_blobs(b, blobs, lens);
        free(mine);
    }
}

static void bcast_gives_everyone_the_roots_bytes(xport_boot *b)
{
    int rank = xport_boot_rank(b), size = xport_boot_size(b);
    int root = size - 1;
    unsigned char id[128];   /* the size of an NCCL unique id */
    for (size_t i = 0; i < sizeof id; i++)
        id[i] = rank == root ? dt_pattern(root, 7, i) : 0;
    CHECK_OK(xport_boot_bcast(b, "id", root, id, sizeof id), "%s", xport_boot_error(b));
    for (size_t i = 0; i < sizeof id; i++)
        CHECK(id[i] == dt_pattern(root, 7, i), "byte %zu of the bcast", i);
}

static void barrier_waits_for_the_slowest_rank(xport_boot *b)
{
    int rank = xport_boot_rank(b), size = xport_boot_size(b);
    double t0 = dt_now();
    if (rank == size - 1)
        dt_sleep_ms(300);
    CHECK_OK(xport_boot_barrier(b), "%s", xport_boot_error(b));
    if (size > 1 && rank != size - 1)
        CHECK(dt_now() - t0 > 0.25, "left the barrier after %.3f s, before the slow rank",
              dt_now() - t0);
}

static int lost_after_2s(void *arg, char *why, size_t len)
{
    if (dt_now() - *(const double *)arg < 2.0)
        return 0;
    snprintf(why, len, "test: a rank reported lost");
    return 1;
}

/* Rank 0 gathers key "want", the others "other": the fence completes, then every rank
 * waits for a key no other rank put, as when a rank died between the fence and its put
 * (CI, dist_recover_joinlost_nccl_pmix_np3: a rank blocked in PMIx_Get for a dead rank's
 * key past its PMIX_TIMEOUT until the job was killed). The watch reports a loss after 2 s:
 * every rank's allgather must fail then, well before CASK_BOOT_TIMEOUT. Last: the
 * bootstrap is not used after it. */
static void a_wait_for_a_blob_never_put_ends_at_the_watch(xport_boot *b)
{
    int rank = xport_boot_rank(b);
    double t0 = dt_now();
    xport_boot_set_watch(b, lost_after_2s, &t0);
    void **blobs = NULL;
    size_t *lens = NULL;
    cask_status st = xport_boot_allgather(b, rank == 0 ? "want" : "other", &rank, sizeof rank,
                                          &blobs, &lens);
    double took = dt_now() - t0;
    xport_boot_set_watch(b, NULL, NULL);
    CHECK(st != CASK_OK, "an allgather of keys never put succeeded");
    CHECK(took < 20, "it failed after %.1f s: a wait did not ask the watch (%s)", took,
          xport_boot_error(b));
}

int main(int argc, char **argv)
{
    int expected = argc > 1 ? atoi(argv[1]) : 1;
    char err[512];
    xport_boot *b = NULL;
    cask_status st = xport_boot_init(NULL, &b, err, sizeof err);
    CHECK_OK(st, "xport_boot_init: %s", err);
    dt_rank_ = xport_boot_rank(b);
    int size = xport_boot_size(b);
    CHECK(size == expected, "job size %d, expected %d", size, expected);
    CHECK(dt_rank_ >= 0 && dt_rank_ < size, "rank %d of %d", dt_rank_, size);
    CHECK(xport_boot_local_rank(b) >= 0 &&
          xport_boot_local_rank(b) < xport_boot_local_size(b), "local rank %d of %d",
          xport_boot_local_rank(b), xport_boot_local_size(b));
    int kind = getenv("CASK_BOOT_DIR") ? XPORT_BOOT_FILE
               : expected > 1 || getenv("PMIX_RANK") ? XPORT_BOOT_PMIX : XPORT_BOOT_SINGLE;
    CHECK(xport_boot_kind(b) == kind, "bootstrap kind %d, expected %d", xport_boot_kind(b),
          kind);

    ranks_are_distinct_and_cover_the_job(b);
    allgather_carries_blobs_of_every_size(b);
    bcast_gives_everyone_the_roots_bytes(b);
    barrier_waits_for_the_slowest_rank(b);

    CHECK_OK(xport_boot_barrier(b), "%s", xport_boot_error(b));
    if (size > 1)
        a_wait_for_a_blob_never_put_ends_at_the_watch(b);
    if (dt_rank_ == 0)
        printf("bootstrap: %d ranks of job %s: ok\n", size, xport_boot_job(b));
    xport_boot_finalize(b);
    return 0;
}
