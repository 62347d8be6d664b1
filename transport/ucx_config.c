/* transport/ucx_config.c: the transport's settings: from the caller's config, else the
 * environment (CASK_UCX_*, CASK_PEER_TIMEOUT_MS), and the heartbeat interval as the
 * job grows.
 *
 * Heartbeats. A rank sends a heartbeat to each peer it has sent nothing to for a
 * heartbeat interval, and checks its same-host peers' processes every half interval.
 * So when idle the ranks of one host send (and receive) local_ranks x (P - 1)
 * heartbeats per interval, each worth ~18 us of a core (bench-dist-scale: 0.11% of a
 * core per rank at 32 ranks and 1 s). Many ranks on a host with a short interval make
 * that a storm: 32 ranks on 2 cores at 10 ms took 3.8% of a core each, their computes
 * ran 150 times slower and, with other load on the machine, stopped progressing. Hence
 * the interval a rank uses is raised until the ranks of its host send at most
 * CASK_UCX_HEARTBEAT_BUDGET heartbeats a second together (2000, ~4% of one core; 0
 * keeps the interval asked for), but never beyond a third of the peer timeout, so that
 * a live peer is always heard in time.
 *
 * Transports: which UCX may use between the ranks of one host (ucx_choose_transports,
 * at the end). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/ucx_impl.h"

/* MiB of each rank's shared-memory segment unless CASK_UCX_SEG says otherwise. */
#define UCX_SEG_DEFAULT_MIB 128
/* Message records in the lanes of a rank's segment toward its host's peers, all
 * together, unless CASK_UCX_RING says otherwise; a lane takes 256 KiB to 4 MiB of it. */
#define UCX_RING_BUDGET ((size_t)32 << 20)

static int env_int(const char *name, int dflt, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return (*end || x < lo || x > hi) ? dflt : (int)x;
}

void ucx_read_config(xport_ucx *x, const xport_ucx_config *c)
{
    uint64_t m = c ? c->field_mask : 0;
    x->credits = (m & XPORT_UCX_CREDITS) ? c->credits : env_int("CASK_UCX_CREDITS", 64, 1, 1 << 20);
    x->rndv_thresh = (m & XPORT_UCX_RNDV_THRESH) ? c->rndv_thresh
                     : (size_t)env_int("CASK_UCX_RNDV_THRESH", 16384, 0, 1 << 30);
    x->heartbeat_ms = (m & XPORT_UCX_HEARTBEAT_MS) ? c->heartbeat_ms
                      : env_int("CASK_UCX_HEARTBEAT_MS", 1000, 10, 3600000);
    x->timeout_ms = (m & XPORT_UCX_TIMEOUT_MS) ? c->peer_timeout_ms
                    : env_int("CASK_PEER_TIMEOUT_MS", 30000, 0, 1 << 30);
    /* Busy-polling a little after activity saves the wake-up of a sleeping thread (8 us
     * against 1.5 us a message measured on 32 cores), but on a machine of few cores the
     * spinning thread takes the core the others need: spin only where there are many. */
    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    int spin_default = ncores >= 8 ? 50 : 0;
    x->spin_us = (m & XPORT_UCX_SPIN_US) ? c->spin_us
                 : env_int("CASK_UCX_SPIN_US", spin_default, 0, 1000000);
    x->cuda_poll_us = env_int("CASK_UCX_CUDA_POLL_US", -1, -1, 100000);
    /* Bulk host data between the ranks of one host through cask's own segments
     * (ucx_seg.h): the segment's MiB, 0 for none. */
    x->seg_bytes = (size_t)env_int("CASK_UCX_SEG", UCX_SEG_DEFAULT_MIB, 0, 2048) << 20;
    x->seg_thresh = (size_t)env_int("CASK_UCX_SEG_THRESH", (int)x->rndv_thresh, 1, 1 << 30);
    x->seg_max = (size_t)env_int("CASK_UCX_SEG_MAX", 0, 0, 1 << 30);
    /* Messages themselves through rings in the segments (ucx_segring.h): KiB of records
     * per lane, 0 for none; a message up to a quarter of that goes there. By default
     * 4 MiB a lane (messages up to 1 MiB, where CMA takes over), less where a host has
     * more than 8 ranks: a lane's pages are all taken once its traffic went round it. */
    int local = xport_boot_local_size(x->boot);
    size_t lane = UCX_RING_BUDGET / (size_t)(local > 2 ? local - 1 : 1);
    lane = lane < ((size_t)256 << 10) ? (size_t)256 << 10
         : lane > ((size_t)4 << 20) ? (size_t)4 << 20 : lane & ~(size_t)4095;
    x->ring_bytes = (size_t)env_int("CASK_UCX_RING", (int)(lane >> 10), 0, 1 << 20) << 10;
    if (x->ring_bytes && x->ring_bytes < 4096)
        x->ring_bytes = 4096;
    x->ring_max = x->seg_bytes ? x->ring_bytes / 4 : 0;
    const char *kill = getenv("CASK_UCX_TEST_SEG_KILL");   /* send:N or recv:N */
    if (kill && (!strncmp(kill, "send:", 5) || !strncmp(kill, "recv:", 5))) {
        int n = atoi(kill + 5);
        if (kill[0] == 's') x->seg_kill_send = n;
        else x->seg_kill_recv = n;
    }
    /* R:MS: rank R waits MS ms between the address exchange and its hello (a rank slow
     * to join: loading, or descheduled on a loaded host) */
    const char *late = getenv("CASK_UCX_TEST_LATE_HELLO");
    x->late_hello_rank = -1;
    if (late && sscanf(late, "%d:%d", &x->late_hello_rank, &x->late_hello_ms) != 2)
        x->late_hello_rank = -1;
    if (m & XPORT_UCX_THREAD_INIT) {
        x->thread_init = c->thread_init;
        x->thread_init_arg = c->thread_init_arg;
    }
    if (m & XPORT_UCX_ON_PEER) {
        x->on_peer = c->on_peer_failure;
        x->on_peer_arg = c->on_peer_arg;
    }
    if (m & XPORT_UCX_PHASES)
        x->phase_ns = c->phase_ns;
    if (m & XPORT_UCX_ON_SILENT) {
        x->on_silent = c->on_peer_silent;
        x->on_peer_arg = c->on_peer_arg;
    }
    if (x->credits < 1) x->credits = 1;
    if (x->heartbeat_ms < 10) x->heartbeat_ms = 10;
    x->heartbeat_asked_ms = x->heartbeat_ms;
    if (x->timeout_ms > 0 && x->timeout_ms < 2 * x->heartbeat_ms)
        x->timeout_ms = 2 * x->heartbeat_ms;   /* a live peer must be able to say so */
}

void ucx_heartbeat_scale(xport_ucx *x)
{
    int budget = env_int("CASK_UCX_HEARTBEAT_BUDGET", 2000, 0, 1 << 30);   /* a second, a host */
    if (budget <= 0 || x->size < 2)
        return;
    int local = 1;   /* this rank, and the peers on its host */
    for (int r = 0; r < x->size; r++)
        local += x->peers[r].local;
    double floor_ms = ceil(1000.0 * (double)local * (double)(x->size - 1) / (double)budget);
    if (floor_ms <= (double)x->heartbeat_ms)
        return;
    int hb = floor_ms > 3600000.0 ? 3600000 : (int)floor_ms;
    if (x->timeout_ms > 0 && hb > x->timeout_ms / 3)
        hb = x->timeout_ms / 3 > x->heartbeat_ms ? x->timeout_ms / 3 : x->heartbeat_ms;
    x->heartbeat_ms = hb;
}

/* Ranks on one host send their messages over TCP on loopback and UCX's CUDA transports
 * for GPU memory, not through UCX's shared-memory FIFOs (posix, sysv, xpmem), unless
 * CASK_UCX_SHM=1 or the user set UCX_TLS. The reason is a rank killed while it writes
 * to a peer's FIFO: the sender takes the next element by a compare-and-swap on the
 * FIFO's head, writes it, then sets its owner bit; killed in between, it leaves an
 * element the receiver waits for forever, and every message another rank of the host
 * sends it afterwards lands behind that element, unread. The receiver is then deaf to
 * its whole host while every process is alive, and the survivors of one loss fence each
 * other out (seen as "both survivors fenced" in the chaos soak,
 * tests/dist/stall_replay.sh under load). A TCP connection of a killed sender only
 * resets, and a message half sent dies with it.
 *
 * Bulk host data between them goes by CMA (process_vm_readv) all the same, at memory
 * speed instead of loopback TCP's (1-2 GB/s): the rendezvous data of a message is read
 * by its receiver straight from the sender's buffer. UCX puts CMA on an endpoint in
 * UCP_ERR_HANDLING_MODE_PEER only if its memory domain says it can invalidate memory
 * (so that a failed peer can no longer reach a buffer that is reused); CMA cannot, so
 * UCX leaves it out unless CMA_MEMORY_INVALIDATE is set, and cask sets it with the
 * rendezvous scheme limited to reads (get_zcopy). Then a peer only ever reads this
 * rank's memory, never writes it: a peer given up for lost, or a rank fenced out and
 * resumed, can at worst read a buffer that was reused, and that rank's results are not
 * taken. A sender killed while its data is read should fail the read (the process is
 * gone) and the endpoint with it, as a reset TCP connection does (the kill tests pass
 * over CMA; none aims a kill inside a read).
 * CASK_UCX_CMA=0, or the user's own UCX_CMA_MEMORY_INVALIDATE or UCX_RNDV_SCHEME,
 * leaves this off. So does a UCX older than 1.22, the version it was measured with:
 * 1.13 takes both keys but still leaves CMA off peer-failure endpoints (and the
 * read-only scheme would then be for nothing). */
void ucx_choose_transports(xport_ucx *x, ucp_config_t *conf)
{
    const char *tls = getenv("UCX_TLS");
    x->shm = env_int("CASK_UCX_SHM", 0, 0, 1) || (tls && *tls);
    x->cma = 0;
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    if (!x->shm && (major > 1 || (major == 1 && minor >= 22)) &&
        env_int("CASK_UCX_CMA", 1, 0, 1) &&
        !getenv("UCX_CMA_MEMORY_INVALIDATE") && !getenv("UCX_RNDV_SCHEME") &&
        ucp_config_modify(conf, "RNDV_SCHEME", "get_zcopy") == UCS_OK) {
        if (ucp_config_modify(conf, "CMA_MEMORY_INVALIDATE", "y") == UCS_OK)
            x->cma = 1;
        else
            (void)ucp_config_modify(conf, "RNDV_SCHEME", "auto");   /* as it was */
    }
    if (!x->shm)
        (void)ucp_config_modify(conf, "TLS", "^mm");   /* posix, sysv, xpmem */
    /* UCX (1.13) leaves peer-failure detection off on its shared-memory transports,
     * so endpoints in UCP_ERR_HANDLING_MODE_PEER would go through TCP on loopback
     * even within a node. Turn it on unless the user chose otherwise. */
    else if (!getenv("UCX_MM_ERROR_HANDLING") && !getenv("UCX_POSIX_ERROR_HANDLING") &&
             !getenv("UCX_SYSV_ERROR_HANDLING"))
        (void)ucp_config_modify(conf, "MM_ERROR_HANDLING", "y");  /* absent: no harm */
}
