/* task_ctx.c: accessors a kernel uses on its context, and failure reports. */
#include <stdarg.h>
#include <stdio.h>
#include "runtime/task_ctx.h"
#include "runtime/runtime.h"

int cask_task_nbuffers(const cask_task_ctx *ctx)
{
    return ctx->task->naccess;
}

void *cask_task_buffer(const cask_task_ctx *ctx, int i)
{
    return i >= 0 && i < ctx->task->naccess ? ctx->buf[i] : NULL;
}

size_t cask_task_buffer_size(const cask_task_ctx *ctx, int i)
{
    return i >= 0 && i < ctx->task->naccess ? ctx->size[i] : 0;
}

const void *cask_task_args(const cask_task_ctx *ctx, size_t *size)
{
    if (size)
        *size = ctx->args_size;
    return ctx->args;
}

int cask_task_device(const cask_task_ctx *ctx)
{
    return ctx->device;
}

void *cask_task_cuda_stream(const cask_task_ctx *ctx)
{
    return ctx->stream;
}

int cask_task_worker(const cask_task_ctx *ctx)
{
    return ctx->worker;
}

cask_status cask_task_lib_call(cask_task_ctx *ctx, void (*fn)(void *arg), void *arg)
{
    if (!ctx || !fn)
        return CASK_ERR_INVALID;
    lib_caller_run(&ctx->task->graph->rt->libcall, fn, arg);
    return CASK_OK;
}

const char *cask_task_name(const cask_task_ctx *ctx)
{
    return task_name(ctx->task);
}

cask_status cask_task_fail(cask_task_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    va_end(ap);
    ctx->has_msg = 1;
    return CASK_ERR_TASK_FAILED;
}

cask_status cask_task_fail_status(cask_task_ctx *ctx, cask_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
    va_end(ap);
    ctx->has_msg = 1;
    return st == CASK_OK ? CASK_ERR_TASK_FAILED : st;
}

void task_ctx_report(cask_task_ctx *ctx, cask_status st)
{
    char d[512], m[CASK_ERRMSG_LEN + 1100];
    graph_describe_task(ctx->task, d, sizeof d);
    snprintf(m, sizeof m, "%s failed on %s %d: %s", d,
             ctx->device >= 0 ? "GPU" : "worker", ctx->device >= 0 ? ctx->device : ctx->worker,
             ctx->has_msg ? ctx->msg : cask_status_string(st));
    graph_task_failed(ctx->task, st, m);   /* before the graph's: futures see it */
    graph_fail(ctx->task->graph, st, "%s", m);
}
