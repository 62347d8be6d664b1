/* transport/ucx_caps.c: what the UCX library in use can do: its version, where the
 * build took it from (meson: the libucx wheel or the system's), and whether it moves
 * CUDA device memory itself (its context lists UCS_MEMORY_TYPE_CUDA: UCX built with
 * CUDA, and its cuda transports loaded, which needs the NVIDIA driver). */
#include "transport/ucx_impl.h"

#include <stdio.h>
#include <string.h>

#ifndef CASK_UCX_FROM
#define CASK_UCX_FROM "unknown"
#endif

int ucx_context_cuda(ucp_context_h ctx)
{
    ucp_context_attr_t a;
    memset(&a, 0, sizeof a);
    a.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (!ctx || ucp_context_query(ctx, &a) != UCS_OK)
        return 0;
    return (a.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

void xport_ucx_describe(char *buf, size_t len)
{
    if (!buf || !len)
        return;
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    const char *cuda = "no";
    ucp_config_t *conf = NULL;
    ucp_context_h ctx = NULL;
    if (ucp_config_read(NULL, NULL, &conf) == UCS_OK) {
        ucp_params_t p;
        memset(&p, 0, sizeof p);
        p.field_mask = UCP_PARAM_FIELD_FEATURES;
        p.features = UCP_FEATURE_AM;
        if (ucp_init(&p, conf, &ctx) == UCS_OK) {
            cuda = ucx_context_cuda(ctx) ? "yes" : "no";
            ucp_cleanup(ctx);
        } else {
            cuda = "unknown (ucp_init failed)";
        }
        ucp_config_release(conf);
    }
    snprintf(buf, len, "UCX %u.%u.%u (built against %d.%d; %s), CUDA memory: %s", major,
             minor, release, UCP_API_MAJOR, UCP_API_MINOR, CASK_UCX_FROM, cuda);
}
