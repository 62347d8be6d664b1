/* config.c: configuration precedence (explicit field > environment > default), as
 * StarPU's STARPU_* variables complement starpu_conf. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "runtime/config.h"

int config_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || s[0] == '-')
        return -1;
    unsigned long long mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    case 't': case 'T': mul = 1ull << 40; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

#define BAD_ENV(name, val, what) do { \
        snprintf(err, errlen, "environment %s=\"%s\": %s", name, val, what); \
        return CASK_ERR_INVALID; } while (0)

cask_status config_resolve(const cask_config *cfg, config_resolved *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->ncpu = -1;
    out->ngpu = -1;
    out->sched = CASK_SCHED_LOCALITY;
    out->log_level = CASK_LOG_WARN;
    out->bind = 1;
    out->gpu_streams = 4;
    out->progress = -1;
    uint64_t mask = cfg ? cfg->field_mask : 0;
    const char *v;

    if (mask & CASK_CONFIG_NCPU) {
        if (cfg->ncpu < 0 || cfg->ncpu > 4096) {
            snprintf(err, errlen, "config.ncpu=%d: must be 0..4096", cfg->ncpu);
            return CASK_ERR_INVALID;
        }
        out->ncpu = cfg->ncpu;
    } else if ((v = getenv("CASK_NCPU"))) {
        if (parse_int(v, 0, 4096, &out->ncpu)) BAD_ENV("CASK_NCPU", v, "expected 0..4096");
    }
    if (mask & CASK_CONFIG_NGPU) {
        if (cfg->ngpu < -1 || cfg->ngpu > 64) {
            snprintf(err, errlen, "config.ngpu=%d: must be -1..64", cfg->ngpu);
            return CASK_ERR_INVALID;
        }
        out->ngpu = cfg->ngpu;
    } else if ((v = getenv("CASK_NGPU"))) {
        if (!strcasecmp(v, "all")) out->ngpu = -1;
        else if (parse_int(v, -1, 64, &out->ngpu)) BAD_ENV("CASK_NGPU", v, "expected all or -1..64");
    }
    if (mask & CASK_CONFIG_SCHED) {
        if ((int)cfg->sched < 0 || cfg->sched > CASK_SCHED_EAGER) {
            snprintf(err, errlen, "config.sched=%d: unknown policy", (int)cfg->sched);
            return CASK_ERR_INVALID;
        }
        out->sched = cfg->sched;
    } else if ((v = getenv("CASK_SCHED"))) {
        if (!strcasecmp(v, "ws")) out->sched = CASK_SCHED_WS;
        else if (!strcasecmp(v, "locality")) out->sched = CASK_SCHED_LOCALITY;
        else if (!strcasecmp(v, "eager")) out->sched = CASK_SCHED_EAGER;
        else BAD_ENV("CASK_SCHED", v, "expected ws, locality or eager");
    }
    if (mask & CASK_CONFIG_GPU_MEM_LIMIT) out->gpu_mem_limit = cfg->gpu_mem_limit;
    else if ((v = getenv("CASK_GPU_MEM_LIMIT"))) {
        if (config_parse_size(v, &out->gpu_mem_limit))
            BAD_ENV("CASK_GPU_MEM_LIMIT", v, "expected bytes with optional K/M/G suffix");
    }
    if (mask & CASK_CONFIG_LOG_LEVEL) {
        if ((int)cfg->log_level < 0 || cfg->log_level > CASK_LOG_TRACE) {
            snprintf(err, errlen, "config.log_level=%d: unknown level", (int)cfg->log_level);
            return CASK_ERR_INVALID;
        }
        out->log_level = cfg->log_level;
    } else if ((v = getenv("CASK_LOG"))) {
        static const char *names[] = {"error", "warn", "info", "debug", "trace"};
        int found = -1;
        for (int i = 0; i < 5; i++)
            if (!strcasecmp(v, names[i])) found = i;
        if (found < 0) BAD_ENV("CASK_LOG", v, "expected error, warn, info, debug or trace");
        out->log_level = (cask_log_level)found;
    }
    if (mask & CASK_CONFIG_BIND) out->bind = cfg->bind != 0;
    else if ((v = getenv("CASK_BIND"))) {
        if (parse_int(v, 0, 1, &out->bind)) BAD_ENV("CASK_BIND", v, "expected 0 or 1");
    }
    if (mask & CASK_CONFIG_SIM_GPUS) {
        if (cfg->sim_gpus < 0 || cfg->sim_gpus > 16) {
            snprintf(err, errlen, "config.sim_gpus=%d: must be 0..16", cfg->sim_gpus);
            return CASK_ERR_INVALID;
        }
        out->sim_gpus = cfg->sim_gpus;
    } else if ((v = getenv("CASK_SIM_GPUS"))) {
        if (parse_int(v, 0, 16, &out->sim_gpus)) BAD_ENV("CASK_SIM_GPUS", v, "expected 0..16");
    }
    if ((v = getenv("CASK_SIM_GPU_SLOW")) && *v) {
        char why[200];
        if (sim_slow_parse(v, out->sim_slow, SIM_SLOW_MAX, &out->nsim_slow, why, sizeof why))
            BAD_ENV("CASK_SIM_GPU_SLOW", v, why);
    }
    if (mask & CASK_CONFIG_GPU_STREAMS) {
        if (cfg->gpu_streams < 1 || cfg->gpu_streams > 32) {
            snprintf(err, errlen, "config.gpu_streams=%d: must be 1..32", cfg->gpu_streams);
            return CASK_ERR_INVALID;
        }
        out->gpu_streams = cfg->gpu_streams;
    } else if ((v = getenv("CASK_GPU_STREAMS"))) {
        if (parse_int(v, 1, 32, &out->gpu_streams)) BAD_ENV("CASK_GPU_STREAMS", v, "expected 1..32");
    }
    const char *tp = NULL;
    if (mask & CASK_CONFIG_TRACE_PATH) tp = cfg->trace_path;
    else if ((v = getenv("CASK_TRACE")) && *v) tp = v;
    if (tp) {
        if (strlen(tp) >= sizeof out->trace_path) {
            snprintf(err, errlen, "trace path too long");
            return CASK_ERR_INVALID;
        }
        strcpy(out->trace_path, tp);
    }
    const char *da = NULL;
    if (mask & CASK_CONFIG_DASHBOARD) da = cfg->dashboard;
    else if ((v = getenv("CASK_DASHBOARD")) && *v) da = v;
    if (da && *da) {
        if (strlen(da) >= sizeof out->dashboard) {
            snprintf(err, errlen, "dashboard address too long: %s", da);
            return CASK_ERR_INVALID;
        }
        strcpy(out->dashboard, da);
    }
    if (mask & CASK_CONFIG_STATS) out->stats = cfg->stats != 0;
    else if ((v = getenv("CASK_STATS"))) {
        if (parse_int(v, 0, 1, &out->stats)) BAD_ENV("CASK_STATS", v, "expected 0 or 1");
    }
    if (mask & CASK_CONFIG_PROGRESS) {
        out->progress = cfg->progress < 0 ? -1 : cfg->progress != 0;
    } else if ((v = getenv("CASK_PROGRESS"))) {
        if (!strcasecmp(v, "auto")) out->progress = -1;
        else if (parse_int(v, 0, 1, &out->progress)) BAD_ENV("CASK_PROGRESS", v, "expected 0, 1 or auto");
    }
    if (mask & CASK_CONFIG_HOST_MEM_LIMIT) out->host_mem_limit = cfg->host_mem_limit;
    else if ((v = getenv("CASK_HOST_MEM_LIMIT"))) {
        if (config_parse_size(v, &out->host_mem_limit))
            BAD_ENV("CASK_HOST_MEM_LIMIT", v, "expected bytes with optional K/M/G/T suffix");
    }
    out->host_cache_limit = (size_t)-1;
    out->huge_pages = 1;
    if (mask & CASK_CONFIG_HOST_CACHE) {
        out->host_cache_limit = cfg->host_cache_limit;
        out->huge_pages = cfg->huge_pages != 0;
    } else {
        if ((v = getenv("CASK_HOST_CACHE_LIMIT")) && config_parse_size(v, &out->host_cache_limit))
            BAD_ENV("CASK_HOST_CACHE_LIMIT", v, "expected bytes with optional K/M/G/T suffix");
        if ((v = getenv("CASK_HUGE_PAGES")) && parse_int(v, 0, 1, &out->huge_pages))
            BAD_ENV("CASK_HUGE_PAGES", v, "expected 0 or 1");
    }
    out->graph_replay = -1;   /* real GPUs only, unless asked for */
    if (mask & CASK_CONFIG_GRAPH_REPLAY) out->graph_replay = cfg->graph_replay != 0;
    else if ((v = getenv("CASK_GRAPH_REPLAY"))) {
        if (parse_int(v, 0, 1, &out->graph_replay)) BAD_ENV("CASK_GRAPH_REPLAY", v, "expected 0 or 1");
    }
    const char *sd = NULL;
    if (mask & CASK_CONFIG_SPILL_DIR) sd = cfg->spill_dir;
    else if ((v = getenv("CASK_SPILL_DIR")) && *v) sd = v;
    if (!sd || !*sd)
        sd = (v = getenv("TMPDIR")) && *v ? v : "/tmp";
    if (strlen(sd) >= sizeof out->spill_dir - 64) {
        snprintf(err, errlen, "spill folder name too long: %.100s...", sd);
        return CASK_ERR_INVALID;
    }
    strcpy(out->spill_dir, sd);
    return CASK_OK;
}
