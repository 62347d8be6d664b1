/* transport/ucx_heartbeat.c: how often a rank says that it lives, as the job grows.
 *
 * A rank sends a heartbeat to each peer it has sent nothing to for a heartbeat interval,
 * and checks its same-host peers' processes every half interval. So when idle the ranks
 * of one host send (and receive) local_ranks x (P - 1) heartbeats per interval, each
 * worth ~18 us of a core (bench-dist-scale: 0.11% of a core per rank at 32 ranks and
 * 1 s). Many ranks on a host with a short interval make that a storm: 32 ranks on 2
 * cores at 10 ms took 3.8% of a core each, their computes ran 150 times slower and,
 * with other load on the machine, stopped progressing. Hence the interval a rank uses is
 * raised until the ranks of its host send at most CASK_UCX_HEARTBEAT_BUDGET heartbeats
 * a second together (2000, ~4% of one core; 0 keeps the interval asked for), but never
 * beyond a third of the peer timeout, so that a live peer is always heard in time. */
#include <math.h>
#include <stdlib.h>

#include "transport/ucx_impl.h"

#define HEARTBEAT_BUDGET_DEFAULT 2000   /* heartbeats per second and host */

static long budget_per_s(void)
{
    const char *v = getenv("CASK_UCX_HEARTBEAT_BUDGET");
    if (!v || !*v)
        return HEARTBEAT_BUDGET_DEFAULT;
    char *end;
    long b = strtol(v, &end, 10);
    return *end || b < 0 ? HEARTBEAT_BUDGET_DEFAULT : b;
}

void ucx_heartbeat_scale(xport_ucx *x)
{
    x->heartbeat_asked_ms = x->heartbeat_ms;
    long budget = budget_per_s();
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
