/* transport/ucx_module.h (internal): the UCX transport is a module of its own
 * (libcask-ucx.so, beside libcask.so), which libcask loads the first time a job of
 * several processes needs it (ucx_load.c). A process that never joins such a job never
 * loads UCX: UCX's libraries cost every process that loads them a start-up of their
 * own (UCX's memory hooks patch libc's mmap family at load time, each patch followed by
 * a 50 ms grace period, UCX 1.22), and a job's ranks want UCX set up for what they move
 * (ucx_load.c sets UCX's environment defaults before loading it).
 *
 * The module exports one symbol, XPORT_UCX_MODULE_SYMBOL: a table of the functions of
 * transport/ucx.h; everything else in it is hidden. libcask's xport_ucx_* functions
 * (ucx_load.c) call through the table. */
#ifndef CASK_TRANSPORT_UCX_MODULE_H
#define CASK_TRANSPORT_UCX_MODULE_H

#include "transport/ucx.h"

#define XPORT_UCX_MODULE_SYMBOL "cask_ucx_module"
#define XPORT_UCX_MODULE_FILE "libcask-ucx.so"
#define XPORT_UCX_MODULE_VERSION 1u   /* raised whenever the table or ucx.h changes */

typedef struct xport_ucx_module {
    unsigned version;   /* XPORT_UCX_MODULE_VERSION of the module's build */
    __typeof__(xport_ucx_create) *create;
    __typeof__(xport_ucx_set_handler) *set_handler;
    __typeof__(xport_ucx_connect) *connect;
    __typeof__(xport_ucx_rank) *rank;
    __typeof__(xport_ucx_size) *size;
    __typeof__(xport_ucx_am_send) *am_send;
    __typeof__(xport_ucx_cuda_memory) *cuda_memory;
    __typeof__(xport_ucx_am_send_mem) *am_send_mem;
    __typeof__(xport_ucx_am_post_mem) *am_post_mem;
    __typeof__(xport_ucx_recv_into_mem) *recv_into_mem;
    __typeof__(xport_ucx_describe) *describe;
    __typeof__(xport_ucx_recv_into) *recv_into;
    __typeof__(xport_ucx_peer_status) *peer_status;
    __typeof__(xport_ucx_fence) *fence;
    __typeof__(xport_ucx_peer_stats) *peer_stats;
    __typeof__(xport_ucx_error) *error;
    __typeof__(xport_ucx_destroy) *destroy;
} xport_ucx_module;

#endif
