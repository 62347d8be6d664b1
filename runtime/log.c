/* log.c: level-filtered logging to stderr and the runtime's last-error message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include "runtime/runtime.h"
#include "runtime/log.h"

static const char *level_name[] = {"error", "warn", "info", "debug", "trace"};

static void vlog(cask_runtime *rt, cask_log_level level, const char *fmt, va_list ap)
{
    cask_log_level enabled = rt ? rt->log_level : CASK_LOG_WARN;
    if (level > enabled)
        return;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t = rt ? (double)(ts.tv_sec - rt->start_time.tv_sec) +
                    (ts.tv_nsec - rt->start_time.tv_nsec) * 1e-9 : 0.0;
    fprintf(stderr, "[cask %9.6f %s] %s\n", t, level_name[level], line);
}

void log_msg(cask_runtime *rt, cask_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(rt, level, fmt, ap);
    va_end(ap);
}

void cask_log(cask_runtime *rt, cask_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(rt, level, fmt, ap);
    va_end(ap);
}

cask_status log_error(cask_runtime *rt, cask_status st, const char *fmt, ...)
{
    char msg[CASK_ERRMSG_LEN - 64];   /* leaves room for the status name */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rt) {
        pthread_mutex_lock(&rt->error_lock);
        snprintf(rt->error, sizeof rt->error, "%s: %s", cask_status_string(st), msg);
        pthread_mutex_unlock(&rt->error_lock);
        log_msg(rt, CASK_LOG_DEBUG, "%s: %s", cask_status_string(st), msg);
    } else {
        fprintf(stderr, "[cask error] %s: %s\n", cask_status_string(st), msg);
    }
    return st;
}

cask_status cask_runtime_error(cask_runtime *rt, char *buf, size_t len)
{
    if (!rt || !buf || !len)
        return CASK_ERR_INVALID;
    pthread_mutex_lock(&rt->error_lock);
    snprintf(buf, len, "%s", rt->error);
    pthread_mutex_unlock(&rt->error_lock);
    return CASK_OK;
}
