/* graph.h (internal): tasks and graphs. */
#ifndef CASK_RUNTIME_GRAPH_H
#define CASK_RUNTIME_GRAPH_H

#include <pthread.h>
#include <stdatomic.h>
#include "runtime/runtime.h"
#include "runtime/arena.h"
#include "runtime/prio.h"
#include "runtime/queue_node.h"

struct worker;   /* sched.h */

/* An edge added while the graph ran (graph_dynamic.c), or a task with a big fan-out:
 * graph-wide lists that the next check turns into successor arrays, release ranges. */
typedef struct task_link {
    struct cask_task *pred, *succ;
    struct task_link *next;
} task_link;

struct subflow;
struct cask_future;

/* What few tasks need, made on demand (task_cold_get) and never freed before the graph:
 * a name other than the kernel's, a priority, a subflow child's links, a joined parent's
 * count, a failure, a big fan-out's release ranges. Keeping these out of the task keeps
 * a task at 96 bytes: a graph of a million tasks writes 96 MB while it is built, and on
 * a big graph that traffic is most of the build's time. */
typedef struct task_cold {
    const char *name;             /* NULL: the kernel's */
    struct subflow *sub;          /* a child not yet launched: its subflow */
    struct cask_task *parent;     /* joined child: the task that spawned it */
    char *errmsg;                 /* why it failed (arena), NULL if it did not */
    struct sched_range *release;  /* nsucc >= SCHED_SPLIT_RELEASE: one range node per
                                     worker (at check), else NULL */
    int32_t status;               /* cask_status in run status_run (futures) */
    uint32_t status_run;
    int32_t priority;             /* as given (level is its clamped bucket) */
    /* subflows (subflow.c): 1 + joined children not finished while it has some, else 0 */
    _Atomic int32_t join;
    /* a subflow's child (cask_task_spawn): it runs once, in the run that spawned it, and
     * takes no edge but from a sibling while its subflow is open (sub) */
    uint8_t spawned;
} task_cold;

/* flags */
enum {
    TASK_SKIPPED = 1,             /* its last completion was a skip (graph failed first) */
    TASK_REPLAY = 2,              /* the stand-in of a replayed graph (graph_replay.h) */
    TASK_WENT_ASYNC = 4,          /* its CUDA implementation began an asynchronous task:
                                     never captured (graph_replay.c) */
    TASK_COSTED_CPU = 8           /* the cost model sent it to a CPU worker: counted in
                                     the CPU backlog until it ends (perfmodel.c) */
};

struct cask_task {
    /* 96 bytes, all of them what building, running and finishing a task touch. What an
     * edge reads and writes of its predecessor (nsucc to cold) is one aligned group of 32
     * bytes, within one cache line wherever the task sits (tasks are 96 bytes apart from
     * a slab aligned to a line, graph_new_slab): naming a dep touches one line of it. */
    union {
        sched_node node;          /* must stay first: tasks sit in inboxes */
        struct {                  /* the node's spare bytes */
            void *node_next_;
            uint8_t node_kind_;
            uint8_t where;        /* CASK_WHERE_* allowed, resolved at add */
            uint8_t naccess;      /* at most CASK_MAX_BUFFERS */
            int8_t level;         /* priority level index 0..SCHED_PRIO_LEVELS-1 */
            int32_t indegree;
        };
    };
    _Atomic int32_t pending;      /* predecessors not yet finished in this run */
    _Atomic uint32_t done_run;    /* the run (graph->run) in which it last finished */
    uint32_t id;
    int16_t last_worker;          /* where it ran last (traces, tests, asynchronous ends) */
    int8_t device;                /* preferred GPU, -1 none */
    uint8_t flags;                /* TASK_* */
    int32_t nsucc;
    uint32_t ord;                 /* topological order: every edge goes to a higher ord */
    union {                       /* successors, in the order added (by ascending priority
                                     after a check of a graph with priorities): */
        struct cask_task *succ1;  /* nsucc <= 1: the successor (or NULL) */
        struct cask_task **succv; /* nsucc >= 2: an arena array of 4, 8, 16, ... */
    };
    struct cask_graph *graph;
    _Atomic(task_cold *) cold;    /* NULL, or made once by its one writer (see task_cold_get) */
    cask_kernel *kernel;
    cask_access *access;
    void *args;                   /* arena copy, its size in the 16 bytes before it */
    /* dynamic graphs (graph_dynamic.c): successors added while it may be running, and
     * futures waiting for it, as a list of dyn_node; or DYN_CLOSED(run) once finished */
    _Atomic uintptr_t dyn;
};

/* t's cold record, or NULL (an acquire load: the record is published complete). */
static inline task_cold *task_cold_of(const cask_task *t)
{
    return atomic_load_explicit(&((cask_task *)t)->cold, memory_order_acquire);
}
/* t's cold record, made (zeroed) from arena a if it has none yet. Only one thread may make
 * a task's record: its builder (graph not running), the worker running it, or a holder of
 * the graph's lock for a task that is not running. NULL out of memory. */
task_cold *task_cold_get(arena *a, cask_task *t);

static inline const char *task_name(const cask_task *t)
{
    task_cold *c = task_cold_of(t);
    return c && c->name ? c->name : t->kernel->name;
}
static inline int task_priority(const cask_task *t)
{
    task_cold *c = task_cold_of(t);
    return c ? c->priority : 0;
}
static inline struct subflow *task_sub(const cask_task *t)
{
    task_cold *c = task_cold_of(t);
    return c ? c->sub : NULL;
}
/* Whether t is a subflow's child (open or not). */
static inline int task_spawned(const cask_task *t)
{
    task_cold *c = task_cold_of(t);
    return c && c->spawned;
}
/* Whether d may be named in the deps of a task of g spawned in subflow sf (NULL: built
 * statically): a task of g, of that subflow while it is open (sf NULL: no child at all). */
static inline int graph_dep_ok(const struct cask_graph *g, const struct subflow *sf,
                               const cask_task *d)
{
    return d && d->graph == g && (sf ? task_sub(d) == sf : !task_spawned(d));
}
static inline size_t task_args_size(const cask_task *t)
{
    return t->args ? (size_t)((const uint64_t *)t->args)[-2] : 0;
}
/* t's successors: t->nsucc of them. */
static inline struct cask_task **task_succ(cask_task *t)
{
    return t->nsucc > 1 ? t->succv : &t->succ1;
}

enum { GRAPH_IDLE = 0, GRAPH_RUNNING = 1 };
#define GRAPH_POOL_LIMIT ((size_t)512 << 20)   /* arena bytes a runtime keeps for reuse */

/* A graph's tasks sit in slabs of TASK_SLAB, in the order added (task i is slab i /
 * TASK_SLAB, place i % TASK_SLAB): no list of task pointers to write and grow while
 * building, and one check of room per task. A slab is an arena allocation of 48 KiB. */
#define TASK_SLAB_SHIFT 9
#define TASK_SLAB ((size_t)1 << TASK_SLAB_SHIFT)

struct cask_graph {
    cask_runtime *rt;
    arena ar;
    cask_task *tcur, *tend;       /* room in the newest slab */
    cask_task *tfast;             /* building: tasks before it have a place in the slab
                                     and the room kept in the roots, so an add checks
                                     this alone; NULL (every add takes the general path
                                     once) after a new slab or a check; set by graph_task_room */
    cask_task **slabs;            /* nslabs of them (arena) */
    size_t nslabs, slabs_cap;
    size_t ntasks, nedges;
    cask_task **roots;            /* kept while building: tasks added without a
                                     predecessor (see roots_stale); exact after a check */
    size_t nroots, roots_cap;     /* (building keeps room for two more in roots) */
    cask_task *pend;              /* the newest task built, kept out of roots until the next
                                     is added or the check (graph_roots_flush), so that its
                                     first edge, the usual one, need not take it off; else
                                     graph_no_pend */
    int roots_valid;
    int roots_stale;              /* a task in roots got a predecessor: filter at check */
    int roots_rescan;             /* roots not kept (tasks added while running): find them */
    int dirty;                    /* pending counts need a reset before the next run */
    int maybe_cyclic;             /* an edge the order could not place: run Kahn */
    uint32_t next_ord;            /* ord of the next task added */
    int any_priority;             /* a task has a priority other than 0 */
    uint32_t can;                 /* CASK_WHERE_* the runtime has workers for */
    task_link *late;              /* edges added while running, newest first: not in the
                                     successor arrays (a running task's must not change) */
    task_link *bigs;              /* tasks whose fan-out passed SCHED_SPLIT_RELEASE / 2 */
    cask_task *unrunnable;        /* first task no worker of the runtime can run */
    struct cask_data **datas;     /* distinct handles used */
    size_t ndatas, datas_cap;
    /* from here to open: what every task's run and completion reads, and the counts its
     * worker's batches write, on one line of their own (the graph is allocated aligned) */
    _Alignas(64) sched_range *ranges;   /* one per worker, reused each run */
    _Atomic int64_t remaining;
    _Atomic int failed;
    _Atomic int dynamic;          /* this run: completions publish to dyn lists */
    uint32_t run;                 /* submissions so far (trace flow ids; done_run marks) */
    int strong_fence;             /* rt->strong_fence, copied at submit */
    _Atomic uint64_t ntasks_run;
    _Atomic int state;            /* GRAPH_IDLE / GRAPH_RUNNING */
    int done;
    int open;                     /* submitted, holding one count of remaining until
                                     wait (or shutdown) ends the submission */
    struct cask_graph *open_next, *open_prev;   /* rt->open_graphs */
    struct cask_graph *all_next, *all_prev;     /* rt->graphs (rt->lock) */
    int orphan;                   /* the runtime shut down before the graph was destroyed */
    int want_dynamic;             /* futures made while idle: next run is dynamic */
    size_t nadded;                /* tasks added while running, this run */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    cask_status status;
    char error[CASK_ERRMSG_LEN];
    uint64_t t_submit, t_done;
    uint32_t id;
    void (*fail_hook)(void *arg); /* called once, at the first failure of a run */
    void *fail_hook_arg;
    uint32_t shape;               /* bumped by each check: the tasks or edges changed */
    _Atomic uint64_t ntasks_replayed;   /* of ntasks_run, replayed (graph_replay.h) */
    struct graph_replay *replay;  /* its replay plan (graph_replay.h), NULL if none */
};

/* g->pend when no task is kept aside: a task that always has a predecessor. */
extern const cask_task graph_no_pend;
#define GRAPH_NO_PEND ((cask_task *)&graph_no_pend)

/* The task kept aside, pend, joins roots (nroots of them, room for one more) if it has
 * no predecessor: the new count. Without a branch: the slot is written either way. */
static inline size_t graph_roots_join(cask_task **roots, size_t nroots, const cask_task *pend)
{
    roots[nroots] = (cask_task *)pend;
    return nroots + (pend->indegree == 0);
}

/* t, g's newest task built, is kept aside (g->pend); the one kept before joins the roots
 * if it still has no predecessor. Without a branch: the slot is written either way
 * (building keeps the room). */
static inline void graph_roots_keep(cask_graph *g, cask_task *t)
{
    g->nroots = graph_roots_join(g->roots, g->nroots, g->pend);
    g->pend = t;
}

/* The task kept aside joins the roots if it still has no predecessor; before anything
 * reads g->roots. */
static inline void graph_roots_flush(cask_graph *g)
{
    if (g->pend != GRAPH_NO_PEND)
        graph_roots_keep(g, GRAPH_NO_PEND);
}

/* Task i of the graph whose slabs these are (i < its ntasks). */
static inline cask_task *slab_task(cask_task *const *slabs, size_t i)
{
    return &slabs[i >> TASK_SLAB_SHIFT][i & (TASK_SLAB - 1)];
}
/* g's task i (i < g->ntasks). */
static inline cask_task *graph_task(const cask_graph *g, size_t i)
{
    return slab_task(g->slabs, i);
}
/* How many of g's tasks sit in slab s (s < g->nslabs). */
static inline size_t graph_slab_len(const cask_graph *g, size_t s)
{
    size_t left = g->ntasks - s * TASK_SLAB;
    return left < TASK_SLAB ? left : TASK_SLAB;
}
/* A new slab for g's next tasks (g->tcur, g->tend): 0, or -1 out of memory. Called by
 * g's one builder (or with g->lock held while it runs). */
int graph_new_slab(cask_graph *g);

/* Records the graph's first failure (later ones are ignored); thread safe. */
void graph_fail(cask_graph *g, cask_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* fn(arg) is called at the first failure of each run (on the failing thread, with no
 * lock of the runtime held), e.g. to end asynchronous tasks that would wait forever.
 * Set before submitting. */
void graph_set_fail_hook(cask_graph *g, void (*fn)(void *arg), void *arg);
/* Formats "task NAME (kernel K, data a [R], b [W])" into buf. */
void graph_describe_task(const cask_task *t, char *buf, size_t len);
/* Called when remaining reaches 0. */
void graph_finish(cask_graph *g);
/* Roots, cycles, where tasks can run, successor arrays (graph_check.c). */
cask_status graph_check(cask_graph *g);
/* Readies t's successors for a run: sorted by priority (by_prio), release ranges in a
 * for a big fan-out on nw workers. -1 out of memory. */
int graph_compact_task(arena *a, cask_task *t, int nw, int by_prio);
/* Appends succ to the successor array of pred, a task of g (arena g->ar), noting a big
 * fan-out; -1 out of memory. */
int graph_push_succ(cask_graph *g, cask_task *pred, cask_task *succ);
/* Notes what the check needs of a task added to g (priority, can it run). */
void graph_note_task(cask_graph *g, cask_task *t);
/* Notes t, made by graph_make_task while g runs, as added (g->lock held). */
void graph_append_running(cask_graph *g, cask_task *t);
/* Validates desc and makes a task: a task of g itself (a NULL: the next place of its
 * slabs, numbered, with no edge yet), or one not linked anywhere in arena a (a subflow's
 * child); ERR with a message. */
cask_status graph_make_task(cask_graph *g, arena *a, const cask_task_desc *desc,
                            const char *call, cask_task **out);
/* ---- a task's description, beside the hot path of make_task (task_desc.c) ---- */
/* The message of what is wrong with desc (a valid one never comes here): CASK_ERR_INVALID. */
cask_status graph_bad_task(cask_graph *g, const cask_task_desc *desc, const char *call)
    __attribute__((noinline, cold));
/* Where a task given a placement (CASK_TASK_WHERE) or a device may run: *where and
 * *device, or CASK_ERR_INVALID with a message. Tasks without either take the kernel's
 * where_any (cask_kernel_register), which follows the same rules. */
cask_status graph_task_placement(cask_graph *g, const cask_task_desc *desc, const char *call,
                                 uint32_t *where, int *device) __attribute__((noinline));
/* Copies desc's arguments (CASK_TASK_ARGS) and name (CASK_TASK_NAME) into t, from
 * arena ar: 0, or -1 out of memory. */
int graph_task_extras(arena *ar, cask_task *t, const cask_task_desc *desc) __attribute__((noinline));
/* Why desc's CASK_TASK_DEPS cannot be taken for a task of g built statically (sf NULL)
 * or spawned in subflow sf (tasks of that subflow only), or CASK_OK. */
cask_status graph_check_deps(cask_graph *g, const struct subflow *sf, const cask_task_desc *desc,
                             const char *call);
/* Sequential-task-flow edges of t from the handles' build state (static build). */
cask_status graph_link_static(cask_graph *g, cask_task *t);
/* Notes that t's fan-out passed SCHED_SPLIT_RELEASE / 2 (g->bigs); -1 out of memory. */
int graph_note_big(cask_graph *g, cask_task *t);
/* Adds an edge of the static graph (0, or -1 out of memory); g NULL: a subflow's. */
int graph_add_edge(cask_graph *g, arena *a, cask_task *before, cask_task *after);
/* Notes that g uses d (its datas list); -1 out of memory. */
int graph_note_data(cask_graph *g, cask_data *d);

/* ---- dynamic graphs (graph_dynamic.c) ---- */
/* Registers the process for membarrier; nonzero if it cannot (then completions fence). */
int graph_dynamic_init(void);
/* Adds a task to a running graph (cask_graph_add_task while running). */
cask_status graph_add_running(cask_graph *g, const cask_task_desc *desc, cask_task **out);
/* With g->lock held and g running: makes the run dynamic (completions publish). */
void graph_go_dynamic(cask_graph *g);
/* A task of a dynamic run finished: its dyn list (successors, futures) is closed and
 * served. Called by sched_complete. */
void graph_dyn_complete(struct worker *self, cask_task *t);
/* At shutdown: graphs not destroyed yet stop using the runtime's arena pool (their
 * destroy frees to the system). */
void graph_orphan_all(cask_runtime *rt);
/* Ends the submission of every graph submitted and not waited for (shutdown). */
void graph_close_open(cask_runtime *rt);
/* Records t's failure for its futures (status, message); thread safe. */
void graph_task_failed(cask_task *t, cask_status st, const char *msg);

/* The completion marker and the hand-over to the dynamic path, on every task's
 * completion: a release store and a load of a flag, ordered against graph_go_dynamic by
 * its membarrier (or by a fence where membarrier is missing). */
static inline void graph_task_done(struct worker *self, cask_task *t)
{
    cask_graph *g = t->graph;
    atomic_store_explicit(&t->done_run, g->run, memory_order_release);
    if (__builtin_expect(g->strong_fence, 0))
        atomic_thread_fence(memory_order_seq_cst);
    else
        atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(atomic_load_explicit(&g->dynamic, memory_order_relaxed), 0))
        graph_dyn_complete(self, t);
}

static inline int task_can_cpu(const cask_task *t)
{
    return (t->where & CASK_WHERE_CPU) != 0;
}
static inline int task_can_gpu(const cask_task *t)
{
    return (t->where & CASK_WHERE_GPU) != 0;
}

#endif
