/* trace_task.c: see trace_task.h. Flow ids combine graph, run and task so that arrows of
 * different graphs and runs never pair up. */
#include <stdio.h>
#include <stdlib.h>
#include "runtime/trace_task.h"
#include "runtime/trace.h"
#include "runtime/data.h"
#include "runtime/device.h"

struct trace_state {
    trace *tr;
    int ncpu, ngpu, nstreams;
};

int trace_track_cpu(const trace_state *ts, int worker)
{
    return worker;
}

int trace_track_gpu(const trace_state *ts, int gpu, int stream)
{
    /* nstreams: the side stream, nstreams + 1 the urgent one, + 2 the side to host */
    return ts->ncpu + gpu * (ts->nstreams + 3 + DEV_EXTRA_STREAMS) + 3 + stream;
}

int trace_track_copy(const trace_state *ts, int gpu, int which)
{
    return ts->ncpu + gpu * (ts->nstreams + 3 + DEV_EXTRA_STREAMS) + which;
}

cask_status trace_task_open(cask_runtime *rt)
{
    trace_state *ts = calloc(1, sizeof *ts);
    if (!ts)
        return CASK_ERR_NOMEM;
    ts->ncpu = rt->ncpu;
    ts->ngpu = rt->ngpu;
    ts->nstreams = rt->dev ? device_streams(rt->dev) : 0;
    int ntracks = ts->ncpu + ts->ngpu * (ts->nstreams + 3 + DEV_EXTRA_STREAMS);
    cask_status st = trace_create(rt->cfg.trace_path, ntracks > 0 ? ntracks : 1, &ts->tr);
    if (st) {
        free(ts);
        return st;
    }
    char name[64];
    for (int i = 0; i < ts->ncpu; i++) {
        snprintf(name, sizeof name, "cpu worker %d", i);
        trace_track_name(ts->tr, trace_track_cpu(ts, i), name, 0);
    }
    static const char *copy_names[] = {"h2d", "d2h", "peer"};
    for (int g = 0; g < ts->ngpu; g++) {
        for (int c = 0; c < 3; c++) {
            snprintf(name, sizeof name, "gpu %d %s copies", g, copy_names[c]);
            trace_track_name(ts->tr, trace_track_copy(ts, g, c), name, 0);
        }
        for (int s = 0; s < ts->nstreams; s++) {
            snprintf(name, sizeof name, "gpu %d stream %d", g, s);
            trace_track_name(ts->tr, trace_track_gpu(ts, g, s), name, 0);
        }
        snprintf(name, sizeof name, "gpu %d side stream", g);
        trace_track_name(ts->tr, trace_track_gpu(ts, g, ts->nstreams), name, 0);
        snprintf(name, sizeof name, "gpu %d urgent stream", g);
        trace_track_name(ts->tr, trace_track_gpu(ts, g, ts->nstreams + 1), name, 0);
        snprintf(name, sizeof name, "gpu %d side stream to host", g);
        trace_track_name(ts->tr, trace_track_gpu(ts, g, ts->nstreams + 2), name, 0);
    }
    trace_group_name(ts->tr, 0, "cask");
    trace_set_info(ts->tr, "runtime", "cask " "0.1.0");
    rt->trace = ts;
    return CASK_OK;
}

cask_status trace_task_close(cask_runtime *rt, int write)
{
    trace_state *ts = rt->trace;
    if (!ts)
        return CASK_OK;
    cask_status st = write ? trace_write(ts->tr) : CASK_OK;
    trace_destroy(ts->tr);
    free(ts);
    rt->trace = NULL;
    return st;
}

static uint64_t flow_id(const cask_task *t)
{
    return ((uint64_t)t->graph->id << 44) ^ ((uint64_t)(t->graph->run & 0xfff) << 32) ^ t->id;
}

uint64_t trace_task(trace_state *ts, int track, const cask_task *t, uint64_t t0, uint64_t t1)
{
    if (t1 <= t0)
        t1 = t0 + 1;
    trace_args a = {0};
    a.fields = TRACE_ARG_TASK | TRACE_ARG_KERNEL | TRACE_ARG_CHUNKS;
    a.task_id = t->id;
    a.kernel = t->kernel->name;
    a.nchunks = t->naccess < TRACE_MAX_CHUNK_ARGS ? t->naccess : TRACE_MAX_CHUNK_ARGS;
    for (int i = 0; i < a.nchunks; i++)
        a.chunks[i] = t->access[i].data->id;
    trace_complete(ts->tr, track, task_name(t), t0, t1, &a);
    if (t->indegree > 0)
        trace_flow(ts->tr, track, flow_id(t), t0, TRACE_FLOW_FINISH);
    return t1;
}

void trace_release(trace_state *ts, int track, const cask_task *succ, uint64_t t_end)
{
    trace_flow(ts->tr, track, flow_id(succ), t_end > 0 ? t_end - 1 : 0, TRACE_FLOW_START);
}

void trace_copy(trace_state *ts, int track, const char *what, uint32_t data_id, size_t bytes,
                int device, uint64_t t0, uint64_t t1)
{
    trace_args a = {0};
    a.fields = TRACE_ARG_BYTES | TRACE_ARG_CHUNKS | TRACE_ARG_DEVICE;
    a.bytes = bytes;
    a.nchunks = 1;
    a.chunks[0] = data_id;
    a.device = device;
    trace_complete(ts->tr, track, what, t0, t1 > t0 ? t1 : t0 + 1, &a);
}
