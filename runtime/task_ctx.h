/* task_ctx.h (internal): what a running task sees (cask_task_ctx). */
#ifndef CASK_RUNTIME_TASK_CTX_H
#define CASK_RUNTIME_TASK_CTX_H

#include "runtime/graph.h"

struct cask_task_ctx {
    cask_task *task;
    void *buf[CASK_MAX_BUFFERS];
    size_t size[CASK_MAX_BUFFERS];
    int device;
    void *stream;
    int worker;
    int has_msg;
    int async;           /* cask_task_async_begin was called: ends later */
    struct subflow *sub; /* children spawned so far (cask_task_spawn), or NULL */
    const void *args;    /* what cask_task_args gives: the task's copy, or (dist_steal.c)
                            the arguments of the body run in its place */
    size_t args_size;
    char msg[512];
};

/* Makes ctx ready for t's kernel on worker `worker`, GPU `device` (-1: a CPU) and
 * `stream` (NULL on a CPU): the task's own arguments, no message, not asynchronous, no
 * children. Buffers and sizes are the caller's to fill. */
static inline void task_ctx_init(cask_task_ctx *ctx, cask_task *t, int device, int worker,
                                 void *stream)
{
    ctx->task = t;
    ctx->device = device;
    ctx->stream = stream;
    ctx->worker = worker;
    ctx->has_msg = 0;
    ctx->async = 0;
    ctx->sub = NULL;
    ctx->args = t->args;
    ctx->args_size = task_args_size(t);
    ctx->msg[0] = 0;
}

/* Fails the graph with the task's description, the status and the kernel's message. */
void task_ctx_report(cask_task_ctx *ctx, cask_status st);

#endif
