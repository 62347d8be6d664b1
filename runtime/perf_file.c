/* perf_file.c: see perf_file.h. Format: a first line "# cask perfmodel 1 host=NAME", then
 * one line per footprint: kernel name, footprint and bytes (hex), then for CPU and GPU
 * the mean time of one task in ns and the number of samples, tab separated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/perf_file.h"
#include "runtime/runtime.h"
#include "runtime/log.h"

#define HEADER "# cask perfmodel 1 host="

void perf_file_load(cask_runtime *rt)
{
    const char *path = getenv("CASK_PERFMODEL");
    if (!path || !path[0])
        return;
    rt->perf_path = strdup(path);
    FILE *f = fopen(path, "r");
    if (!f)
        return;   /* a new model */
    char host[256] = "", line[512], want[300];
    gethostname(host, sizeof host - 1);
    snprintf(want, sizeof want, HEADER "%s\n", host);
    if (!fgets(line, sizeof line, f) || strcmp(line, want) != 0) {
        log_msg(rt, CASK_LOG_WARN, "CASK_PERFMODEL %s: made on another host or not a cask "
                "model; starting a new one", path);
        fclose(f);
        return;
    }
    int bad = 0;
    while (fgets(line, sizeof line, f)) {
        perf_saved e;
        memset(&e, 0, sizeof e);
        if (sscanf(line, "%95s %llx %llx %llu %u %llu %u", e.name, &e.fp, &e.bytes, &e.ns[0],
                   &e.n[0], &e.ns[1], &e.n[1]) != 7 || !e.fp) {
            bad++;
            continue;
        }
        perf_saved *v = realloc(rt->perf_saved, (size_t)(rt->nperf_saved + 1) * sizeof *v);
        if (!v)
            break;
        rt->perf_saved = v;
        v[rt->nperf_saved++] = e;
    }
    if (bad)
        log_msg(rt, CASK_LOG_WARN, "CASK_PERFMODEL %s: %d malformed lines skipped", path, bad);
    fclose(f);
}

void perf_file_apply(cask_runtime *rt, cask_kernel *k)
{
    int used = 0;
    for (int i = 0; i < rt->nperf_saved && used < PERF_SLOTS; i++) {
        perf_saved *e = &rt->perf_saved[i];
        if (strcmp(e->name, k->name) != 0)
            continue;
        perf_slot *s = &k->perf.slot[used++];
        atomic_store(&s->bytes, e->bytes);
        for (int kind = 0; kind < PERF_KINDS; kind++) {
            atomic_store(&s->ns[kind], e->ns[kind]);
            atomic_store(&s->n[kind], e->n[kind]);
        }
        atomic_store(&s->fp, e->fp);
        e->name[0] = 0;   /* taken: written back from the kernel */
    }
}

void perf_file_save(cask_runtime *rt)
{
    if (!rt->perf_path)
        return;
    char tmp[4200], host[256] = "";
    gethostname(host, sizeof host - 1);
    snprintf(tmp, sizeof tmp, "%s.tmp%d", rt->perf_path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        log_msg(rt, CASK_LOG_WARN, "CASK_PERFMODEL %s: cannot write it", rt->perf_path);
        goto out;
    }
    fprintf(f, HEADER "%s\n", host);
    for (cask_kernel *k = rt->kernels; k; k = k->next)
        for (int i = 0; i < PERF_SLOTS; i++) {
            perf_slot *s = &k->perf.slot[i];
            unsigned long long fp = atomic_load(&s->fp);
            if (!fp || strchr(k->name, ' ') || strchr(k->name, '\t'))
                continue;
            unsigned long long ns0 = atomic_load(&s->ns[0]), ns1 = atomic_load(&s->ns[1]);
            if (!ns0 && !ns1)
                continue;
            fprintf(f, "%s\t%llx\t%llx\t%llu\t%u\t%llu\t%u\n", k->name, fp,
                    (unsigned long long)atomic_load(&s->bytes), ns0, atomic_load(&s->n[0]),
                    ns1, atomic_load(&s->n[1]));
        }
    for (int i = 0; i < rt->nperf_saved; i++) {
        perf_saved *e = &rt->perf_saved[i];
        if (e->name[0])
            fprintf(f, "%s\t%llx\t%llx\t%llu\t%u\t%llu\t%u\n", e->name, e->fp, e->bytes,
                    e->ns[0], e->n[0], e->ns[1], e->n[1]);
    }
    if (fclose(f) != 0 || rename(tmp, rt->perf_path) != 0) {
        log_msg(rt, CASK_LOG_WARN, "CASK_PERFMODEL %s: cannot write it", rt->perf_path);
        unlink(tmp);
    }
out:
    free(rt->perf_path);
    free(rt->perf_saved);
    rt->perf_path = NULL;
    rt->perf_saved = NULL;
    rt->nperf_saved = 0;
}
