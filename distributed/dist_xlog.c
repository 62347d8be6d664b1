/* distributed/dist_xlog.c: a log of every transfer between ranks with its times, for finding
 * where a transfer's time goes (CASK_DIST_XFER_LOG=PREFIX: rank r writes PREFIX.r).
 * Off unless asked: then each transfer reads the clock a few times and writes a line
 * under a lock at its end. One line a transfer, times in seconds of CLOCK_MONOTONIC
 * (one host: comparable between ranks, and with a CASK_TRACE's clock_origin_ns):
 *
 *   S gid version run to kind t_task t_post t_sent
 *       t_task: its send task started; t_post: the send was handed to UCX (for a chunk
 *       sent from GPU memory: when the task's stream got past the producer, the CUDA
 *       host function); t_sent: UCX is done with the buffer
 *   R gid version run from kind t_arrive t_landed t_wait
 *       t_arrive: the message (the rendezvous request) reached this rank; t_landed: the
 *       data is in its buffer; t_wait: its receive task started (0: not yet)
 *
 *   W gid version run from t_wait: a receive task that started after its copy landed
 *
 * kind: gpu (UCX from/into GPU memory), host. */
#include "distributed/dist_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dist_xlog_open(cask_dist *dist)
{
    const char *p = getenv("CASK_DIST_XFER_LOG");
    dist->xlog = NULL;
    if (!p || !*p)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s.%d", p, dist->rank);
    dist->xlog = fopen(path, "w");
    if (!dist->xlog)
        fprintf(stderr, "cask: CASK_DIST_XFER_LOG: cannot write %s\n", path);
}

void dist_xlog_close(cask_dist *dist)
{
    if (dist->xlog)
        fclose(dist->xlog);
    dist->xlog = NULL;
}

double dist_xlog_now(const cask_dist *dist)
{
    return dist->xlog ? dist_now_s() : 0;
}

void dist_xlog_send(cask_dist *dist, const dist_send *s, uint32_t run)
{
    if (!dist->xlog)
        return;
    double t = dist_now_s();
    pthread_mutex_lock(&dist->mu);
    fprintf(dist->xlog, "S %u %u %u %d %s %.9f %.9f %.9f\n", s->gid, s->version, run, s->to,
            s->gpu_ucx ? "gpu" : "host", s->t_task, s->t_post, t);
    pthread_mutex_unlock(&dist->mu);
}

void dist_xlog_recv(cask_dist *dist, const dist_slot *s, uint32_t run, double t_wait)
{
    if (!dist->xlog)
        return;
    double t = dist_now_s();
    fprintf(dist->xlog, "R %u %u %u %d %s %.9f %.9f %.9f\n", s->gid, s->version, run, s->from,
            s->gpu_ucx ? "gpu" : "host", s->t_arrive, t, t_wait);
}

/* W gid version run t: the receive task of a copy that had landed started at t */
void dist_xlog_wait(cask_dist *dist, const dist_slot *s, uint32_t run, double t)
{
    if (dist->xlog)
        fprintf(dist->xlog, "W %u %u %u %d %.9f\n", s->gid, s->version, run, s->from, t);
}
