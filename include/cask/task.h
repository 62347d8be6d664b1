/* cask/task.h: kernels (what a task runs) and the context a running task sees. */
#ifndef CASK_TASK_H
#define CASK_TASK_H

#include <stddef.h>
#include <stdint.h>
#include "cask/runtime.h"
#include "cask/data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a running task sees: its buffers (in the memory of where it runs), its argument
 * bytes, its device and stream. Valid only during the kernel call. Opaque. */
typedef struct cask_task_ctx cask_task_ctx;

/* A kernel implementation. CPU implementations run to completion on a worker thread.
 * CUDA implementations only enqueue work on cask_task_cuda_stream(ctx) and return (no
 * synchronisation): the runtime tracks completion with an event. Return CASK_OK, or
 * the result of cask_task_fail() to fail the graph. A graph computed again may be
 * replayed (cask_config.graph_replay): its tasks' CUDA implementations are then called
 * once, on a stream being captured into a CUDA graph, and that graph is launched on the
 * later runs instead of calling them again; so the work a CUDA implementation enqueues
 * must follow from its arguments, buffers, sizes and device alone, or its kernel must
 * say CASK_KERNEL_NO_REPLAY. One that synchronises or allocates cannot be captured, and
 * its graph simply runs the usual way. */
typedef cask_status (*cask_kernel_fn)(cask_task_ctx *ctx);

/* Kernel flags. */
enum cask_kernel_flag {
    /* Each output element depends only on the same element of the inputs, all buffers
     * the same length: the graph optimiser may fuse chains of such tasks. */
    CASK_KERNEL_ELEMENTWISE = 1u << 0,
    /* Never capture this kernel into a replayed CUDA graph (cask_config.graph_replay):
     * for a CUDA implementation whose work depends on more than its arguments, buffers,
     * sizes and device (host state read at each call, a different launch each run), or
     * that must run its host code every time, or that may begin an asynchronous task
     * (cask_task_async_begin) in some runs and not others. Graphs using it run the
     * usual way. */
    CASK_KERNEL_NO_REPLAY = 1u << 1,
    /* Its CUDA implementation launches no kernel: it hands its inputs on (a host
     * function that posts a send from GPU memory, often as an asynchronous task,
     * cask_task_async_begin; a copy off the GPU). Such tasks run on a stream of their
     * own per GPU, the side stream, one after another in the order they start, so that
     * they start as soon as their inputs are there rather than behind the kernels other
     * tasks queued on a compute stream. No effect on CPU implementations, simulated
     * GPUs or replayed graphs. */
    CASK_KERNEL_SIDE_STREAM = 1u << 2,
    /* Place its tasks by measured cost (a kernel with both a CPU and a CUDA
     * implementation): each ready task goes to the kind of worker, CPU or GPU, where it is
     * expected to finish first: the work queued there (on a GPU, what is queued at the
     * task's priority level or above: the worker serves those first), the copies its
     * inputs need, and the time one task of this kernel took there at the same buffer
     * sizes (learnt as the runtime runs, and kept between runs in the file CASK_PERFMODEL
     * names, as StarPU's dmda policy and its history models). Sizes not seen yet are
     * predicted from the others (a fit of time against bytes); with nothing to go on, one
     * task at a time is sent to the kind that has not timed it, to calibrate. Without the
     * flag a task that can use a GPU goes to one. docs/linalg.md, "Where tiles run". */
    CASK_KERNEL_COST_MODEL = 1u << 3,
    /* Its tasks of the highest priority level (cask_task_desc.priority 64 and above) run
     * on a stream of their own per GPU, the urgent stream, whose CUDA stream priority is
     * above the compute streams': they do not wait behind the kernels other tasks queued
     * there, and the GPU starts their blocks before those of the compute streams' kernels
     * as blocks finish. For the critical path of a DAG while its bulk fills the GPU (the
     * panel of a tiled factorization: its POTRF on a few SMs beside the last step's
     * GEMMs). The urgent stream runs its tasks one after another in the order they
     * start: no kernel whose tasks wait on each other across GPUs or processes (a send
     * and its receive). No effect on CPU implementations, simulated GPUs or replayed
     * graphs. */
    CASK_KERNEL_URGENT_STREAM = 1u << 4,
    /* With CASK_KERNEL_SIDE_STREAM: its CUDA implementation copies GPU data to host
     * memory (a final result stored into the user's memory). Its tasks run on a second
     * side stream of their own, in the order they start, beside the first side stream's
     * copies to the GPU: a PCIe link moves data both ways at once, where one stream would
     * alternate a copy each way (a tiled factorization from host memory loads tiles while
     * it stores the final ones). No effect without CASK_KERNEL_SIDE_STREAM. */
    CASK_KERNEL_SIDE_TO_HOST = 1u << 5
};

/* A named kernel with up to two implementations, as a StarPU codelet. At least one of
 * cpu/cuda must be set. The runtime chooses where each task runs among the
 * implementations present. */
typedef struct cask_kernel_desc {
    uint64_t field_mask;   /* reserved, set 0 */
    const char *name;      /* copied; shown in errors, traces and graph pictures */
    cask_kernel_fn cpu;
    cask_kernel_fn cuda;
    uint32_t flags;        /* cask_kernel_flag bits */
} cask_kernel_desc;

/* A registered kernel; owned by the runtime, freed at cask_shutdown. Opaque. */
typedef struct cask_kernel cask_kernel;

/* Registers a kernel. Errors: CASK_ERR_INVALID (no name or no implementation),
 * CASK_ERR_NOMEM. Thread safe. */
cask_status cask_kernel_register(cask_runtime *rt, const cask_kernel_desc *desc,
                                 cask_kernel **out);

/* ---- inside a running task (ctx is valid only during the call) ---- */

/* Number of buffers (the task's accesses, in the order given). */
int cask_task_nbuffers(const cask_task_ctx *ctx);
/* Pointer to buffer i in the memory where the task runs (device pointer on a GPU),
 * NULL if i is out of range. */
void *cask_task_buffer(const cask_task_ctx *ctx, int i);
/* Size in bytes of buffer i (0 if out of range). */
size_t cask_task_buffer_size(const cask_task_ctx *ctx, int i);
/* The argument bytes given at cask_graph_add_task (a private, aligned copy). */
const void *cask_task_args(const cask_task_ctx *ctx, size_t *size);
/* -1 on a CPU worker, else the GPU index (0-based) the task runs on. */
int cask_task_device(const cask_task_ctx *ctx);
/* The cudaStream_t to enqueue on (NULL on CPU or a simulated GPU). */
void *cask_task_cuda_stream(const cask_task_ctx *ctx);
/* Index of the worker running the task (0..ncpu-1 CPU, then GPU workers). */
int cask_task_worker(const cask_task_ctx *ctx);
/* Runs fn(arg) on the runtime's library-call thread and returns when it has: for a task
 * that calls a threaded library (a BLAS's threaded gemm, an OpenMP region) spanning the
 * cores. Such libraries keep thread pools that the OS places; called from whichever worker
 * runs the task, each call comes from another thread, which shares a core with one of the
 * pool's until the OS moves it (a 2048^2 sgemm on 16 cores: 20.9 ms against 15.8 ms from
 * one consistent thread). The thread is the runtime's own, always the same, started on
 * first use, with the affinity of the thread that started the runtime. Calls from
 * concurrent tasks run one after the other; the task's worker sleeps meanwhile. fn must
 * not call cask_task_lib_call itself (it would wait for itself) nor use ctx. Returns
 * CASK_OK, or CASK_ERR_INVALID for a NULL ctx or fn (then fn is not run). */
cask_status cask_task_lib_call(cask_task_ctx *ctx, void (*fn)(void *arg), void *arg);
/* The task's name (or its kernel's). */
const char *cask_task_name(const cask_task_ctx *ctx);
/* Records why the task failed (printf format) and returns CASK_ERR_TASK_FAILED, to be
 * returned by the kernel: `return cask_task_fail(ctx, "bad row %d", r);`. The graph
 * stops; cask_graph_error gives "task NAME (kernel K, data D...): message". */
cask_status cask_task_fail(cask_task_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* As cask_task_fail, but the graph fails with status st (not CASK_ERR_TASK_FAILED), for
 * a failure that has a status of its own (CASK_ERR_NOT_SPD: a tile that is not positive
 * definite). st CASK_OK becomes CASK_ERR_TASK_FAILED. Returns the status to return. */
cask_status cask_task_fail_status(cask_task_ctx *ctx, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- asynchronous tasks ---- */

/* The end of an asynchronous task, to pass to cask_task_async_end. Opaque. */
typedef struct cask_task_async cask_task_async;

/* Inside a kernel (CPU or CUDA implementation) that starts work finishing elsewhere: a
 * network transfer, an I/O request, work on a CUDA stream of its own. Called before
 * the kernel returns CASK_OK, it makes the task end only when cask_task_async_end is
 * called with the returned token, from any thread, exactly once. Until then the task's
 * successors wait, its buffers stay where they are (neither moved nor evicted, so the
 * pointers of cask_task_buffer stay valid after the kernel returned), and the worker
 * runs other tasks. For a CUDA implementation, work the kernel enqueued on
 * cask_task_cuda_stream is not waited for: end the task only once that work is done.
 * If the kernel returns an error instead, the task fails at once and the token must
 * not be used. Returns NULL only if ctx is NULL. */
cask_task_async *cask_task_async_begin(cask_task_ctx *ctx);

/* Ends an asynchronous task: st is CASK_OK, or its failure (then the graph fails with
 * "task NAME (...): msg", msg may be NULL). Thread safe; may be called before the
 * kernel that began it has returned. The token is invalid afterwards. */
void cask_task_async_end(cask_task_async *token, cask_status st, const char *msg);

#ifdef __cplusplus
}
#endif
#endif
