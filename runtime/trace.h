/* runtime/trace.h: a low-overhead event recorder for the runtime's worker threads, written
 * at the end as a Chrome trace-event JSON file (the "JSON Object Format") that Perfetto
 * (ui.perfetto.dev) and chrome://tracing open.
 *
 * Model. A trace has a fixed number of tracks, fixed at creation: one per CPU worker, per
 * GPU stream, per copy engine... Each track is a Chrome "thread" (tid = track index) inside
 * a "process" (pid = the track's group: the rank in a multi-process run, or 0).
 *
 * Threading. Every recording call (trace_complete, trace_flow, trace_counter,
 * trace_instant) on track t must be made only by the one thread that owns t (for GPU
 * tracks: the GPU worker thread, which converts CUDA event times to host ns and records
 * them later - out-of-order timestamps are fine, tracks are sorted when written). Different
 * tracks may record concurrently with no lock. Setup calls (trace_track_name,
 * trace_group_name, trace_set_info) must happen before recording starts or while the
 * track's owner is not recording; trace_write and trace_destroy after every recording
 * thread has stopped (the runtime joins its workers first).
 *
 * Cost. A record copies a fixed-size event into the track's current chunk and interns its
 * name (a hash lookup into the track's own string arena): tens of ns, no lock, no
 * allocation except when a chunk or the arena fills (amortised, rare). When tracing is off
 * the runtime holds a NULL trace * and does not call these at all.
 *
 * Strings. Every name passed in (event names, kernel names, track names) is copied: the
 * caller may free it right after the call (task names belong to graphs that may be
 * destroyed long before the trace is written).
 *
 * Errors. Recording calls return CASK_OK, CASK_ERR_INVALID (bad track or phase, NULL
 * name), or CASK_ERR_NOMEM (the event is dropped and counted; the trace stays valid). */
#ifndef CASK_RUNTIME_TRACE_H
#define CASK_RUNTIME_TRACE_H

#include <stdint.h>
#include <time.h>
#include "cask/status.h"

typedef struct trace trace;

/* Host time in ns on CLOCK_MONOTONIC: the clock every timestamp given to trace_* uses. */
static inline uint64_t trace_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bits of trace_args.fields: an argument is written only if its bit is set. */
enum trace_arg_field {
    TRACE_ARG_TASK   = 1u << 0,  /* task_id */
    TRACE_ARG_KERNEL = 1u << 1,  /* kernel (copied, like names) */
    TRACE_ARG_CHUNKS = 1u << 2,  /* chunks[0..nchunks-1] */
    TRACE_ARG_BYTES  = 1u << 3,  /* bytes */
    TRACE_ARG_DEVICE = 1u << 4   /* device */
};

#define TRACE_MAX_CHUNK_ARGS 4

/* Optional arguments of a slice, shown in the viewer's details pane. */
typedef struct trace_args {
    uint32_t fields;                        /* trace_arg_field bits */
    int nchunks;                            /* 0..TRACE_MAX_CHUNK_ARGS (more are cut) */
    uint64_t task_id;
    const char *kernel;
    uint64_t chunks[TRACE_MAX_CHUNK_ARGS];  /* chunk / data ids read or written */
    uint64_t bytes;                         /* bytes moved (copies) */
    int device;                             /* GPU index, -1 for host */
} trace_args;

/* Flow phases for trace_flow (the Chrome "ph" letters). */
enum trace_flow_phase {
    TRACE_FLOW_START = 's',   /* bound to the slice enclosing ts on this track */
    TRACE_FLOW_FINISH = 'f'   /* bound to the slice enclosing ts on this track ("bp":"e") */
};

/* Creates a trace of ntracks tracks that trace_write will write to path (copied). The file
 * is opened (truncated) now, so an unwritable path fails at start-up, not at shutdown.
 * Tracks start named "track N" in group 0. Timestamps are written relative to the time of
 * this call (recorded in otherData as "clock_origin_ns", CLOCK_MONOTONIC).
 * Errors: CASK_ERR_INVALID (NULL path/out, ntracks < 1), CASK_ERR_IO, CASK_ERR_NOMEM.
 * On error *out is NULL and nothing is left behind except possibly an empty file. */
cask_status trace_create(const char *path, int ntracks, trace **out);

/* Names track (e.g. "cpu 3", "gpu 0 stream 1", "gpu 0 h2d") and puts it in group
 * pid_like_group (>= 0: the rank, or another grouping; one "process" in the viewer).
 * Tracks are shown in index order within their group. Setup-time only (see top).
 * Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. */
cask_status trace_track_name(trace *t, int track, const char *name, int pid_like_group);

/* Names a group ("rank 0 (node17)"); unnamed groups show as "cask" or "cask rank N".
 * Setup-time only. Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. */
cask_status trace_group_name(trace *t, int group, const char *name);

/* Adds key: value (both copied) to the file's "otherData" (version, host, config...).
 * Setup-time only; not thread safe. Errors: CASK_ERR_INVALID, CASK_ERR_NOMEM. */
cask_status trace_set_info(trace *t, const char *key, const char *value);

/* Records a slice ("X" event) [t0_ns, t1_ns] named name on track. args may be NULL.
 * t1_ns < t0_ns is recorded as a zero-length slice. Owner thread only. */
cask_status trace_complete(trace *t, int track, const char *name, uint64_t t0_ns,
                           uint64_t t1_ns, const trace_args *args);

/* Records one end of a dependency arrow. Record TRACE_FLOW_START with a ts inside the
 * producer's slice on its track (its end - 1 is a good choice) and TRACE_FLOW_FINISH
 * with a ts inside the consumer's slice (its start) on the consumer's track, both with
 * the same flow_id, unique per arrow in this trace (ids >= 2^53 are written as hex
 * strings, which viewers read exactly). Owner thread only. */
cask_status trace_flow(trace *t, int track, uint64_t flow_id, uint64_t ts_ns, int phase);

/* Records a counter sample ("C" event): series name of the track's group takes value
 * from ts_ns on (e.g. "gpu0 pool bytes"). Owner thread only. */
cask_status trace_counter(trace *t, int track, const char *name, uint64_t ts_ns,
                          double value);

/* Records an instant marker ("i" event, thread scope) at ts_ns (an eviction, a spill, a
 * failure). Owner thread only. */
cask_status trace_instant(trace *t, int track, const char *name, uint64_t ts_ns);

/* Events recorded on all tracks so far, and events dropped for lack of memory. Call only
 * when no thread records (or accept a racy snapshot). */
uint64_t trace_event_count(const trace *t);
uint64_t trace_dropped_count(const trace *t);

/* Writes the whole trace to the file given at creation and closes it; each track's events
 * sorted by time. Call once, after every recording thread has stopped; later calls return
 * CASK_ERR_STATE. Errors: CASK_ERR_INVALID, CASK_ERR_STATE, CASK_ERR_IO (the message on
 * stderr names the path), CASK_ERR_NOMEM. */
cask_status trace_write(trace *t);

/* Frees the trace (closes the file if never written: it stays empty). t may be NULL. */
void trace_destroy(trace *t);

#endif
