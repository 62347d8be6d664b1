/* perfmodel.c: see perfmodel.h. */
#include <math.h>
#include "runtime/perfmodel.h"
#include "runtime/gpu_commit.h"
#include "runtime/graph.h"
#include "runtime/data.h"

/* Copies to and from a GPU (bytes a nanosecond): what a task's missing inputs cost on
 * the way. 20 GB/s, a pinned PCIe 4 copy; an H200's PCIe 5 does more, so GPU inputs
 * are, if anything, counted dear, which keeps ties on the side of the host. */
#define XFER_BYTES_PER_NS 20.0

uint64_t perf_footprint(const cask_task *t, uint64_t *bytes)
{
    uint64_t h = 0xcbf29ce484222325ull ^ t->naccess, total = 0;
    for (int a = 0; a < t->naccess; a++) {
        uint64_t b = t->access[a].data->bytes;
        total += b;
        h = (h ^ b) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    *bytes = total;
    return h ? h : 1;
}

static perf_slot *find(const cask_kernel *k, uint64_t fp)
{
    perf_table *p = (perf_table *)&k->perf;
    for (int i = 0; i < PERF_SLOTS; i++)
        if (atomic_load_explicit(&p->slot[i].fp, memory_order_acquire) == fp)
            return &p->slot[i];
    return NULL;
}

/* The slot of fp, made in a free slot or in place of the least recently used one. Two
 * threads making the same footprint at once may take two slots: find returns the first,
 * the other ages out. */
static perf_slot *slot_of(cask_kernel *k, uint64_t fp, uint64_t bytes)
{
    perf_slot *s = find(k, fp);
    if (s)
        return s;
    perf_table *p = &k->perf;
    perf_slot *old = &p->slot[0];
    for (int i = 0; i < PERF_SLOTS; i++) {
        perf_slot *c = &p->slot[i];
        if (!atomic_load_explicit(&c->fp, memory_order_relaxed)) {
            old = c;
            break;
        }
        if (atomic_load_explicit(&c->used, memory_order_relaxed) <
            atomic_load_explicit(&old->used, memory_order_relaxed))
            old = c;
    }
    atomic_store_explicit(&old->fp, 0, memory_order_release);   /* (readers skip it now) */
    for (int kind = 0; kind < PERF_KINDS; kind++) {
        atomic_store_explicit(&old->ns[kind], 0, memory_order_relaxed);
        atomic_store_explicit(&old->n[kind], 0, memory_order_relaxed);
        atomic_store_explicit(&old->trial[kind], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&old->bytes, bytes, memory_order_relaxed);
    atomic_store_explicit(&old->used, sched_now_ns(), memory_order_relaxed);
    atomic_store_explicit(&old->fp, fp, memory_order_release);
    return old;
}

void perf_learn(cask_kernel *k, uint64_t fp, uint64_t bytes, int kind, uint64_t ns)
{
    if (!ns)
        ns = 1;
    perf_slot *s = slot_of(k, fp, bytes);
    uint32_t n = atomic_load_explicit(&s->n[kind], memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&s->ns[kind], memory_order_relaxed);
    /* the mean of the first samples, then a moving average of the last eight or so */
    uint64_t v = !n || !old ? ns : n < 8 ? (old * n + ns) / (n + 1) : (old * 7 + ns) / 8;
    atomic_store_explicit(&s->ns[kind], v, memory_order_relaxed);
    atomic_store_explicit(&s->n[kind], n + 1, memory_order_relaxed);
    atomic_store_explicit(&s->trial[kind], 0, memory_order_relaxed);
    atomic_store_explicit(&s->used, sched_now_ns(), memory_order_relaxed);
}

/* Predicted time at bytes from the other footprints measured on kind: least squares of
 * log ns against log bytes over at least two distinct sizes; 0 if there are not. */
static uint64_t predict(const cask_kernel *k, uint64_t bytes, int kind)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, minx = 1e300, maxx = -1e300;
    int n = 0;
    for (int i = 0; i < PERF_SLOTS; i++) {
        const perf_slot *s = &k->perf.slot[i];
        if (!atomic_load_explicit(&s->fp, memory_order_acquire)) continue;
        uint64_t ns = atomic_load_explicit(&s->ns[kind], memory_order_relaxed);
        uint64_t b = atomic_load_explicit(&s->bytes, memory_order_relaxed);
        if (!ns || !b) continue;
        double x = log((double)b), y = log((double)ns);
        sx += x, sy += y, sxx += x * x, sxy += x * y, n++;
        if (x < minx) minx = x;
        if (x > maxx) maxx = x;
    }
    if (n < 2 || maxx - minx < 0.01 || !bytes)
        return 0;
    double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double icept = (sy - slope * sx) / n;
    double y = icept + slope * log((double)bytes);
    return y > 60 ? UINT64_MAX / 4 : (uint64_t)exp(y) + 1;
}

uint64_t perf_estimate(const cask_kernel *k, uint64_t fp, uint64_t bytes, int kind,
                       int *measured)
{
    const perf_slot *s = find(k, fp);
    uint64_t ns = s ? atomic_load_explicit(&s->ns[kind], memory_order_relaxed) : 0;
    if (measured)
        *measured = ns != 0;
    return ns ? ns : predict(k, bytes, kind);
}

/* Bytes of t's inputs with no valid copy in memory node `node` (0 host, 1 + g GPU g). */
static uint64_t missing_bytes(const cask_task *t, int node)
{
    uint64_t b = 0;
    for (int a = 0; a < t->naccess; a++) {
        if (!(t->access[a].mode & CASK_READ))
            continue;
        cask_data *d = t->access[a].data;
        if (!__atomic_load_n(&d->rep[node].valid, __ATOMIC_RELAXED))
            b += d->bytes;
    }
    return b;
}

int perf_choose(sched *s, cask_task *t)
{
    uint64_t bytes, fp = perf_footprint(t, &bytes);
    int cpu_measured, gpu_measured;
    uint64_t cpu = perf_estimate(t->kernel, fp, bytes, PERF_CPU, &cpu_measured);
    uint64_t gpu = perf_estimate(t->kernel, fp, bytes, PERF_GPU, &gpu_measured);
    /* calibration: the GPU times a kernel first (where such kernels are meant to run),
       then one task at a time goes to a CPU until it has a time or a prediction there */
    if (!gpu)
        return WORKER_GPU;
    if (!cpu) {
        perf_slot *sl = slot_of(t->kernel, fp, bytes);
        uint32_t none = 0;
        if (!atomic_compare_exchange_strong(&sl->trial[PERF_CPU], &none, 1))
            return WORKER_GPU;   /* a CPU trial is under way: the GPU takes the rest */
        goto on_cpu;
    }
    uint64_t now = sched_now_ns();
    /* GPU: its committed work, then what is queued there at this task's priority level
       or above (the worker serves higher levels first: a factorization's panel does not
       wait behind the updates queued for later steps), taken as tasks like this one,
       then this task, after its missing inputs have crossed; the earliest GPU */
    double best_gpu = 1e300;
    for (int g = 0; g < s->ngpu; g++) {
        worker *w = &s->w[s->ncpu + g];
        uint64_t bu = atomic_load_explicit(&w->busy_until_ns, memory_order_relaxed);
        int64_t q = 0;
        for (int l = t->level; l < SCHED_PRIO_LEVELS; l++)
            q += atomic_load_explicit(&w->queued_lvl[l], memory_order_relaxed);
        double end = (double)(bu > now ? bu - now : 0) + (double)(q > 0 ? q : 0) * (double)gpu +
                     (double)gpu + (double)missing_bytes(t, 1 + g) / XFER_BYTES_PER_NS;
        if (end < best_gpu)
            best_gpu = end;
    }
    /* CPU: the tasks the cost model already sent there share the workers */
    int64_t ahead = atomic_load_explicit(&s->cpu_costed, memory_order_relaxed);
    double cpu_end = (double)cpu * (double)(1 + (ahead > 0 ? ahead : 0) / s->ncpu) +
                     (double)missing_bytes(t, 0) / XFER_BYTES_PER_NS;
    if (cpu_end >= best_gpu)
        return WORKER_GPU;
on_cpu:
    t->flags |= TASK_COSTED_CPU;
    atomic_fetch_add_explicit(&s->cpu_costed, 1, memory_order_relaxed);
    return WORKER_CPU;
}

void perf_cpu_done(sched *s, cask_task *t)
{
    if (t->flags & TASK_COSTED_CPU) {
        t->flags &= (uint8_t)~TASK_COSTED_CPU;
        atomic_fetch_sub_explicit(&s->cpu_costed, 1, memory_order_relaxed);
    }
}
