/* log.h: the runtime's logger (stderr, level filtered) and error recording. */
#ifndef CASK_RUNTIME_LOG_H
#define CASK_RUNTIME_LOG_H

#include "cask/runtime.h"

/* Logs if level is enabled for rt (rt may be NULL: errors and warnings only). */
void log_msg(cask_runtime *rt, cask_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records msg as the runtime's last error, logs it at debug level, returns st. */
cask_status log_error(cask_runtime *rt, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG_DEBUG(rt, ...) do { if ((rt) && runtime_log_level(rt) >= CASK_LOG_DEBUG) \
        log_msg((rt), CASK_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
