/* topology.c: hwloc discovery of cores, thread pinning and core nearness (the order
 * in which a worker picks steal victims).
 *
 * Containers may hide /sys. Then hwloc's Linux backend cannot read the CPU topology
 * (it says so on stderr, which is not ours to write to) and what hwloc can still learn
 * (x86 CPUID) does not name the kernel's CPU numbers reliably. So without
 * /sys/devices/system/cpu, or when hwloc fails, we run with a flat topology: the CPUs
 * this process may run on (sched_getaffinity), pinned with pthread_setaffinity_np, all
 * equally near; the caller gets one warning to log. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/topology.h"

/* Where hwloc's Linux backend reads the CPU topology (HWLOC_FSROOT may move it). */
static int sysfs_cpu_visible(void)
{
    const char *root = getenv("HWLOC_FSROOT");
    char path[512];
    snprintf(path, sizeof path, "%s/sys/devices/system/cpu", root && strcmp(root, "/") ? root : "");
    return access(path, R_OK | X_OK) == 0;
}

/* The CPUs this process may run on, in index order; their number. */
static int allowed_cpus(int *cpus, int max)
{
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && n < max; c++)
            if (CPU_ISSET(c, &set))
                cpus[n++] = c;
    }
    if (n == 0) {
        long online = sysconf(_SC_NPROCESSORS_ONLN);
        for (n = 0; n < (online > 0 ? online : 1) && n < max; n++)
            cpus[n] = n;
    }
    return n;
}

/* hwloc loads its plugins (PCI, OpenCL, GL, CUDA, NVML, libxml...) with their libraries
 * at the process's first hwloc_topology_init: 20-40 ms measured on a loaded 2-core
 * machine, for I/O objects cask never looks at. Unless the user names plugins to leave
 * out (HWLOC_PLUGINS_BLACKLIST) or the components (HWLOC_COMPONENTS), they are left out
 * for that first init, and the environment is given back right after. */
static const char io_plugins[] = "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_cuda,hwloc_nvml,"
                                 "hwloc_rsmi,hwloc_levelzero,hwloc_xml_libxml";

static cask_status load_hwloc(topology *t, char *err, size_t errlen)
{
    int skip = !getenv("HWLOC_PLUGINS_BLACKLIST") && !getenv("HWLOC_COMPONENTS") &&
               setenv("HWLOC_PLUGINS_BLACKLIST", io_plugins, 0) == 0;
    int rc = hwloc_topology_init(&t->topo);
    if (skip)
        unsetenv("HWLOC_PLUGINS_BLACKLIST");
    if (rc != 0) {
        snprintf(err, errlen, "hwloc_topology_init failed");
        t->topo = NULL;
        return CASK_ERR_HWLOC;
    }
    if (hwloc_topology_load(t->topo) != 0) {
        snprintf(err, errlen, "hwloc_topology_load failed");
        hwloc_topology_destroy(t->topo);
        t->topo = NULL;
        return CASK_ERR_HWLOC;
    }
    t->core_type = HWLOC_OBJ_CORE;
    int n = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_CORE);
    if (n <= 0) {
        t->core_type = HWLOC_OBJ_PU;
        n = hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_PU);
    }
    if (n <= 0) {
        snprintf(err, errlen, "hwloc found no cores");
        hwloc_topology_destroy(t->topo);
        t->topo = NULL;
        return CASK_ERR_HWLOC;
    }
    t->ncores = n;
    return CASK_OK;
}

cask_status topology_load(topology *t, char *warn, size_t warnlen)
{
    memset(t, 0, sizeof *t);
    warn[0] = 0;
    char err[128] = "/sys/devices/system/cpu is not readable (a container hiding /sys?)";
    if (sysfs_cpu_visible() && !load_hwloc(t, err, sizeof err))
        return CASK_OK;
    t->nflat = t->ncores = allowed_cpus(t->flat, TOPOLOGY_MAX_FLAT);
    snprintf(warn, warnlen, "%s: no CPU topology; running on the %d CPUs this process may "
             "use, all taken as equally near", err, t->ncores);
    return CASK_OK;
}

void topology_destroy(topology *t)
{
    if (t->topo)
        hwloc_topology_destroy(t->topo);
    t->topo = NULL;
}

int topology_bind_self(topology *t, int core)
{
    if (!t->topo) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(t->flat[core % t->nflat], &set);
        return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0 ? 0 : -1;
    }
    hwloc_obj_t obj = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)(core % t->ncores));
    if (!obj || !obj->cpuset)
        return -1;
    hwloc_cpuset_t set = hwloc_bitmap_dup(obj->cpuset);
    if (!set)
        return -1;
    hwloc_bitmap_singlify(set);
    int rc = hwloc_set_cpubind(t->topo, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    return rc;
}

int topology_nearness(topology *t, int a, int b)
{
    if (!t->topo)
        return (a % t->ncores) == (b % t->ncores) ? 1000 : 0;
    hwloc_obj_t oa = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)(a % t->ncores));
    hwloc_obj_t ob = hwloc_get_obj_by_type(t->topo, t->core_type, (unsigned)(b % t->ncores));
    if (!oa || !ob)
        return 0;
    if (oa == ob)
        return 1000;
    hwloc_obj_t anc = hwloc_get_common_ancestor_obj(t->topo, oa, ob);
    return anc ? anc->depth : 0;
}
