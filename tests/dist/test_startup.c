/* tests/dist/test_startup.c: what joining and leaving a job loads, and what a rank says
 * about its start-up and shutdown.
 *
 *   test_startup       under run.sh NP (mpirun, or the file bootstrap), or alone as a
 *                      job of one
 *
 * Each rank starts a runtime without GPUs, joins the job, waits at a barrier, leaves
 * and stops, with statistics on (cask_config.stats, as CASK_STATS=1), and checks:
 * - a job of one never loads UCX (no libucp mapped in the process);
 * - a rank of a job of several loads it (libcask-ucx.so and libucp), without UCX's
 *   CUDA module (libuct_cuda, libucm_cuda) since its runtime has no GPU, and with UCX's
 *   memory events off (UCX_MEM_EVENTS=no) unless the environment set them;
 * - cask_shutdown prints one line of phases naming the rank and the job's size, with
 *   the runtime's parts, and the join's and the leave's parts (wire-up, hello,
 *   endpoints...). */
#include <fcntl.h>
#include <unistd.h>

#include "cask/cask.h"
#include "dist_test.h"

/* Whether a file whose path contains name is mapped into this process. */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f, "cannot read /proc/self/maps");
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *events_before = getenv("UCX_MEM_EVENTS");
    char events_asked[64] = "";
    if (events_before)
        snprintf(events_asked, sizeof events_asked, "%s", events_before);
    cask_config cfg = {0};
    cfg.field_mask = CASK_CONFIG_NCPU | CASK_CONFIG_NGPU | CASK_CONFIG_STATS |
                     CASK_CONFIG_PROGRESS;
    cfg.ncpu = 1;
    cfg.ngpu = 0;
    cfg.stats = 1;
    cfg.progress = 0;
    cask_runtime *rt;
    CHECK_OK(cask_init(&cfg, &rt), "cask_init");
    cask_dist *dist;
    CHECK_OK(cask_dist_init(rt, NULL, &dist), "cask_dist_init");
    int rank = cask_dist_rank(dist), size = cask_dist_size(dist);
    dt_rank_ = rank;
    CHECK_OK(cask_dist_barrier(dist), "barrier");
    int ucp = mapped("/libucp.so"), module = mapped("/libcask-ucx.so");
    int cuda = mapped("/libuct_cuda.so") || mapped("/libucm_cuda.so");
    const char *events = getenv("UCX_MEM_EVENTS");
    CHECK_OK(cask_dist_finalize(dist), "cask_dist_finalize");
    if (size == 1) {
        CHECK(!ucp && !module, "a job of one loaded UCX (libucp %d, libcask-ucx %d)", ucp,
              module);
    } else {
        CHECK(ucp && module, "a rank of %d loaded no UCX (libucp %d, libcask-ucx %d)", size,
              ucp, module);
        CHECK(!cuda, "a rank without GPUs loaded UCX's CUDA module");
        if (events_asked[0])
            CHECK(events && !strcmp(events, events_asked), "UCX_MEM_EVENTS=%s was changed "
                  "to %s", events_asked, events ? events : "(unset)");
        else
            CHECK(events && !strcmp(events, "no"), "UCX_MEM_EVENTS is %s, not no",
                  events ? events : "unset");
    }

    /* the phases line, from stderr at cask_shutdown */
    char path[] = "/tmp/cask-test-startup.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    fflush(stderr);
    int saved = dup(2);
    CHECK(saved >= 0 && dup2(fd, 2) == 2, "redirecting stderr");
    cask_status st = cask_shutdown(rt);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    CHECK_OK(st, "cask_shutdown");
    char text[16384];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    unlink(path);
    CHECK(n > 0, "cask_shutdown printed nothing with statistics on");
    text[n] = 0;
    char head[64];
    snprintf(head, sizeof head, "cask: rank %d/%d phases (ms): start-up ", rank, size);
    const char *line = strstr(text, head);
    CHECK(line, "no line \"%s...\" in:\n%s", head, text);
    const char *parts[] = { " load ", " init ", " topology ", " devices ", " workers ",
                            " join ", " boot ", " ucx-context ", " ucx-worker ",
                            " addresses ", " wire-up ", " hello ", " barrier ", " leave ",
                            " goodbye ", " endpoints ", " ucx-teardown ", " boot-barrier ",
                            " shutdown " };
    const char *end = strchr(line, '\n');
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const char *p = strstr(line, parts[i]);
        CHECK(p && (!end || p < end), "no \"%s\" in the phases line: %.*s", parts[i],
              end ? (int)(end - line) : (int)strlen(line), line);
    }
    printf("[rank %d] %.*s\n", rank, end ? (int)(end - line) : (int)strlen(line), line);
    if (rank == 0)
        printf("test_startup: ok\n");
    return 0;
}
