/* status.c: names of cask_status values. */
#include "cask/status.h"

const char *cask_status_string(cask_status status)
{
    switch (status) {
    case CASK_OK: return "success";
    case CASK_ERR_INVALID: return "invalid argument";
    case CASK_ERR_NOMEM: return "out of memory";
    case CASK_ERR_CYCLE: return "dependency cycle";
    case CASK_ERR_STATE: return "call not allowed in this state";
    case CASK_ERR_BUSY: return "in use by a running graph";
    case CASK_ERR_TASK_FAILED: return "a task failed";
    case CASK_ERR_UNSUPPORTED: return "not supported here";
    case CASK_ERR_CUDA: return "CUDA error";
    case CASK_ERR_NCCL: return "NCCL error";
    case CASK_ERR_UCX: return "UCX error";
    case CASK_ERR_HWLOC: return "hwloc error";
    case CASK_ERR_IO: return "I/O error";
    case CASK_ERR_FORMAT: return "malformed input";
    case CASK_ERR_NOT_FOUND: return "not found";
    case CASK_ERR_CANCELLED: return "cancelled";
    case CASK_ERR_PEER: return "remote process failed";
    case CASK_ERR_INTERNAL: return "internal error";
    case CASK_ERR_LAUNCH: return "launch error";
    case CASK_ERR_NOT_SPD: return "matrix not positive definite";
    case CASK_STATUS_COUNT_: break;
    }
    return "unknown status";
}
