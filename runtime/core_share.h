/* core_share.h: which of the machine's cores this process pins its workers to, when
 * several processes of one job share a host. */
#ifndef CASK_RUNTIME_CORE_SHARE_H
#define CASK_RUNTIME_CORE_SHARE_H

#include <stddef.h>
#include "runtime/topology.h"

/* This process's place among the job's processes on its host, from what the launchers
 * put in the environment: CASK_LOCAL_RANK/CASK_LOCAL_SIZE (else CASK_RANK/CASK_SIZE: the
 * file bootstrap's ranks share one host unless told otherwise), Open MPI's
 * OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, Slurm's SLURM_LOCALID with SLURM_STEP_TASKS_PER_NODE
 * (or SLURM_TASKS_PER_NODE) and SLURM_NODEID. Returns 0 and sets *lr, *ls when one of
 * them names a valid place, else -1 (a process alone). */
int core_share_env(int *lr, int *ls);

/* Chooses the cores of local rank lr of ls (topology_share's rule) and writes what it
 * chose into note (for a log line). */
void core_share_apply(topology *t, int lr, int ls, char *note, size_t notelen);

#endif
