/* transport/ucx_info.c: which UCX transports carry each endpoint, how long connecting
 * took, which heartbeat interval is used: for the user who asks (CASK_UCX_EP_INFO=1; 2
 * adds ucp_ep_print_info's whole report), for bench/dist_scale.sh, and for the test
 * that checks that ranks on different hosts talk over the network
 * (tests/dist/netns_hosts.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/ucx_impl.h"

/* Appends to out the distinct "transport/device" names of the lanes that
 * ucp_ep_print_info lists for ep (lines "lane[i]:  k:tcp/eth0.0 md[..] ..."). */
static void lanes_of(ucp_ep_h ep, char *out, size_t outlen)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    out[0] = 0;
    if (!f) {
        snprintf(out, outlen, "(no memory)");
        return;
    }
    ucp_ep_print_info(ep, f);
    fclose(f);
    size_t n = 0;
    char *save = NULL;
    for (char *line = buf ? strtok_r(buf, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        char *lane = strstr(line, "lane[");
        if (!lane)
            continue;
        char *colon = strchr(lane, ':');
        if (!colon)
            continue;
        char name[96];
        /* "  2:tcp/eth0.0 md[1] ..." -> "tcp/eth0" (the trailing .0 is UCX's port) */
        if (sscanf(colon + 1, " %*d:%95s", name) != 1)
            continue;
        char *dot = strrchr(name, '.');
        if (dot && strchr(name, '/') && dot > strchr(name, '/'))
            *dot = 0;
        if (strstr(out, name))
            continue;
        n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "%s%s", n ? " " : "",
                              name);
        if (n >= outlen)
            break;
    }
    free(buf);
    if (!out[0])
        snprintf(out, outlen, "(no lane)");
}

void ucx_note_cma_lanes(xport_ucx *x)
{
    pthread_mutex_lock(&x->lock);
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        if (!p->local || !p->ep || atomic_load(&p->state) != PEER_ALIVE)
            continue;
        char lanes[512];
        lanes_of(p->ep, lanes, sizeof lanes);
        atomic_store(&p->cma_lane, strstr(lanes, "cma/") != NULL);
    }
    pthread_mutex_unlock(&x->lock);
}

void ucx_print_ep_info(xport_ucx *x, FILE *f, int raw)
{
    pthread_mutex_lock(&x->lock);
    for (int r = 0; r < x->size; r++) {
        ucx_peer *p = &x->peers[r];
        if (r == x->rank || !p->ep || atomic_load(&p->state) != PEER_ALIVE)
            continue;
        char lanes[512];
        if (raw)
            ucp_ep_print_info(p->ep, f);
        lanes_of(p->ep, lanes, sizeof lanes);
        fprintf(f, "cask ucx: rank %d -> rank %d (%s): %s\n", x->rank, r,
                p->local ? "same host" : "other host", lanes);
    }
    pthread_mutex_unlock(&x->lock);
    const uint64_t *t = x->connect_ns;
    fprintf(f, "cask ucx: rank %d connected to %d ranks in %.1f ms: addresses exchanged "
            "%.1f ms, %d endpoints created %.1f ms, handshakes %.1f ms\n", x->rank, x->size,
            1e-6 * (double)(t[3] - t[0]), 1e-6 * (double)(t[1] - t[0]), x->size,
            1e-6 * (double)(t[2] - t[1]), 1e-6 * (double)(t[3] - t[2]));
    fprintf(f, "cask ucx: rank %d heartbeats every %d ms (asked %d ms), peer timeout %d ms\n",
            x->rank, x->heartbeat_ms, x->heartbeat_asked_ms, x->timeout_ms);
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    fprintf(f, "cask ucx: rank %d same-host transports (UCX %u.%u.%u): %s\n", x->rank,
            major, minor, release,
            x->shm ? "as UCX chooses (CASK_UCX_SHM=1 or UCX_TLS)"
            : x->cma ? "no shared-memory FIFO; rendezvous data by CMA reads"
                     : "no shared-memory FIFO; rendezvous data by TCP");
    int mapped = 0, local = 0, rings = 0;
    for (int r = 0; r < x->size; r++) {
        local += x->peers[r].local;
        mapped += atomic_load(&x->peers[r].seg_mapped);
        rings += atomic_load(&x->peers[r].rtx.usable);
    }
    if (x->seg && x->ring_max)
        fprintf(f, "cask ucx: rank %d host messages up to %zu bytes through rings in the "
                "segments (%zu KiB a ring; %d of %d same-host peers read them)\n", x->rank,
                x->ring_max, x->ring_bytes >> 10, rings, local);
    if (x->seg) {
        const ucx_seg_geom *g = ucx_seg_geometry(x->seg);
        fprintf(f, "cask ucx: rank %d bulk host data from %zu bytes through cask's shared-"
                "memory segments (%zu MiB of blocks; %d of %d same-host peers' segments "
                "mapped)%s%s\n", x->rank, x->seg_thresh, (size_t)((g->bytes - g->blocks_off) >> 20),
                mapped, local, x->seg_err[0] ? ": " : "", x->seg_err);
    }
    else
        fprintf(f, "cask ucx: rank %d no shared-memory segment (%s)\n", x->rank,
                x->seg_err[0] ? x->seg_err : x->seg_bytes ? "a job of one rank" : "CASK_UCX_SEG=0");
}
