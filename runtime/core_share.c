/* core_share.c: the cores of one process among several of a job on one host.
 *
 * Workers are pinned to cores by index. Two processes of one host that each pinned
 * worker i to core i would put both their workers on the same cores and leave the others
 * idle: 2 ranks x 8 workers on a 16-core host computed at half speed. A launcher that
 * binds its ranks (mpirun's --bind-to core or socket, srun's --cpu-bind) already gives
 * each process its cores: those are kept. One that does not (the file bootstrap's local
 * launcher, mpirun --bind-to none) leaves every process bound to the whole machine: then
 * local rank r of L takes the r-th of L equal, contiguous shares of the cores (with more
 * ranks than cores its workers start at core r, the process left unbound), and the
 * whole process is bound to its share, as the launcher would have done, so that threads
 * other libraries started (a threaded BLAS's) stay off the other ranks' cores too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/core_share.h"

static int env_int(const char *name, int *v)
{
    const char *s = getenv(name);
    if (!s || !*s) return -1;
    char *end;
    long x = strtol(s, &end, 10);
    if (*end || x < 0 || x > 1 << 20) return -1;
    *v = (int)x;
    return 0;
}

/* Slurm's task counts per node, "2(x3),1": the count of node `node`. */
static int slurm_tasks_on(const char *spec, int node)
{
    int first = 0;
    for (const char *p = spec; p && *p;) {
        char *end;
        long n = strtol(p, &end, 10), rep = 1;
        if (end == p || n < 1) return -1;
        if (end[0] == '(' && end[1] == 'x') {
            rep = strtol(end + 2, &end, 10);
            if (rep < 1 || *end != ')') return -1;
            end++;
        }
        if (node < first + rep) return (int)n;
        first += (int)rep;
        p = *end == ',' ? end + 1 : NULL;
    }
    return -1;
}

int core_share_env(int *lr, int *ls)
{
    int r, s, node;
    if ((!env_int("CASK_LOCAL_RANK", &r) && !env_int("CASK_LOCAL_SIZE", &s)) ||
        (!env_int("OMPI_COMM_WORLD_LOCAL_RANK", &r) &&
         !env_int("OMPI_COMM_WORLD_LOCAL_SIZE", &s)) ||
        (getenv("CASK_BOOT_DIR") && !env_int("CASK_RANK", &r) && !env_int("CASK_SIZE", &s)))
        goto found;
    if (!env_int("SLURM_LOCALID", &r) && !env_int("SLURM_NODEID", &node)) {
        const char *spec = getenv("SLURM_STEP_TASKS_PER_NODE");
        if (!spec) spec = getenv("SLURM_TASKS_PER_NODE");
        if (spec && (s = slurm_tasks_on(spec, node)) > 0) goto found;
    }
    return -1;
found:
    if (s < 1 || r >= s) return -1;
    *lr = r;
    *ls = s;
    return 0;
}

void core_share_apply(topology *t, int lr, int ls, char *note, size_t notelen)
{
    note[0] = 0;
    int n = t->nbound;
    if (ls <= 1 || t->placed) {   /* alone, or placed by the launcher */
        t->nmine = n;
        memcpy(t->mine, t->bound, sizeof(int) * (size_t)n);
        if (ls > 1)
            snprintf(note, notelen, "local rank %d of %d: the launcher bound this process "
                     "to %d of %d cores; its workers stay on them", lr, ls, n, t->ncores);
        return;
    }
    if (n >= ls) {
        int lo = (int)((long)lr * n / ls), hi = (int)((long)(lr + 1) * n / ls);
        t->nmine = hi - lo;
        memcpy(t->mine, t->bound + lo, sizeof(int) * (size_t)t->nmine);
        snprintf(note, notelen, "local rank %d of %d on %d cores: the process and its workers "
                 "on cores %d-%d", lr, ls, n, t->bound[lo], t->bound[hi - 1]);
    } else {
        /* more ranks than cores: oversubscribed, as mpirun then leaves its ranks unbound;
           the process stays unbound, worker i of local rank r on core (r + i) mod cores */
        t->nmine = n;
        for (int i = 0; i < n; i++)
            t->mine[i] = t->bound[(lr + i) % n];
        snprintf(note, notelen, "local rank %d of %d on %d cores: more ranks than cores; "
                 "workers from core %d on, the process unbound", lr, ls, n, t->mine[0]);
        return;
    }
    if (topology_bind_process(t) != 0) {
        size_t len = strlen(note);
        snprintf(note + len, notelen - len, " (binding the process failed: only the workers "
                 "are pinned)");
    }
}
