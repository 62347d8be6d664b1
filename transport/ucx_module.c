/* transport/ucx_module.c: the one symbol libcask-ucx.so exports (ucx_module.h): its
 * functions, for libcask's loader (ucx_load.c). The module is built with hidden
 * visibility, so that its xport_ucx_* functions never bind to libcask's ones of the
 * same name. */
#include "transport/ucx_module.h"

__attribute__((visibility("default")))
const xport_ucx_module cask_ucx_module = {
    .version = XPORT_UCX_MODULE_VERSION,
    .create = xport_ucx_create,
    .set_handler = xport_ucx_set_handler,
    .connect = xport_ucx_connect,
    .rank = xport_ucx_rank,
    .size = xport_ucx_size,
    .am_send = xport_ucx_am_send,
    .cuda_memory = xport_ucx_cuda_memory,
    .am_send_mem = xport_ucx_am_send_mem,
    .am_post_mem = xport_ucx_am_post_mem,
    .recv_into_mem = xport_ucx_recv_into_mem,
    .describe = xport_ucx_describe,
    .recv_into = xport_ucx_recv_into,
    .peer_status = xport_ucx_peer_status,
    .fence = xport_ucx_fence,
    .peer_stats = xport_ucx_peer_stats,
    .error = xport_ucx_error,
    .destroy = xport_ucx_destroy,
};
