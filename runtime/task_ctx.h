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

/* Fails the graph with the task's description, the status and the kernel's message. */
void task_ctx_report(cask_task_ctx *ctx, cask_status st);

#endif
