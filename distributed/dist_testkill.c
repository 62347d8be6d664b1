/* distributed/dist_testkill.c: test hooks that make a rank fail at a chosen point of a run,
 * for the recovery tests (tests/dist/recover_app.sh). Off unless set:
 *
 *   CASK_DIST_TEST_KILL=R:K[,R:K...]   rank R SIGKILLs itself when its K-th task starts
 *                                      (K counts the tasks of this process's local
 *                                      graphs, 1-based, over all graphs and runs;
 *                                      rK counts only tasks of recovery plans)
 *   CASK_DIST_TEST_FREEZE=R:K:MS       rank R stops (SIGSTOP) for MS ms at that point,
 *                                      then goes on (a child sends SIGCONT): a rank that
 *                                      was only slow
 *   CASK_DIST_TEST_DROP_DONE=R:S:N[:G] rank R drops the DONE of run N from rank S (of
 *                                      graph G only, if given), as one that lands after
 *                                      R changed its view: with a loss right after, R
 *                                      must learn from S that the run was completed
 *                                      (dist_recover.c, STATE), also once S destroyed
 *                                      the graph
 *   CASK_DIST_TEST_STALL=R:MS          when rank R first learns of a loss (its
 *                                      transport reports a lost peer, or a MEMBER
 *                                      message names one), its progress thread stops
 *                                      MS ms (in the handler, holding the transport's
 *                                      lock, as a thread held up in UCX or off the
 *                                      CPU): nothing is read, nothing leaves, no
 *                                      heartbeat; a survivor late right after a loss
 *   CASK_DIST_TEST_NOTE_LATE=R:MS      when a run of rank R fails, R waits MS ms before
 *                                      it notes what it delivered (a compute thread held
 *                                      up): the others' STATE of a later run lands first
 *   CASK_DIST_TEST_PLAN_LATE=R:MS      rank R waits MS ms in each plan, after it settled
 *                                      the view and before it plans (a rank busy or held
 *                                      up there): a loss meanwhile is agreed by the others
 *                                      first, and R's PLAN goes out in the older view
 *   CASK_DIST_TEST_GIVE_UP=R[:quiet]   rank R gives up its first recovery where it plans
 *                                      it (as a survivor that finds no source for a lost
 *                                      chunk), after the others heard its STATE: its
 *                                      compute fails (an ABORT tells the others; quiet:
 *                                      none, as one the others drop, of an older view)
 *   CASK_DIST_TEST_JOIN_KILL=R:STEP    rank R SIGKILLs itself in cask_dist_init, with its
 *                                      UCX endpoints up, just before the collective STEP
 *                                      of the join: nccl (agreeing on NCCL) or route (the
 *                                      routes of GPU chunks): a rank lost while joining;
 *                                      R:STEP:late, the others begin STEP only once they
 *                                      have seen R lost (its collective after the death)
 *
 *   CASK_DIST_TEST_KILL_WRITE=R:wN     rank R SIGKILLs itself in its N-th
 *                                      cask_dist_file_pwrite once it wrote the first
 *                                      half of the bytes; R:mN at its N-th
 *                                      cask_dist_file_mark, before it marks (the unit's
 *                                      bytes are written); R:commit as it enters
 *                                      cask_dist_file_commit (dist_file.c kills)
 *
 * With a hook set, a probe task precedes each task of the local graph, using the same
 * handles (so it starts when the task could), and counts. */
#include "distributed/dist_impl.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { TK_MAX = 8 };

typedef struct dist_testkill {
    int n;
    struct { int rank; long at; int recovery; int freeze_ms; } pt[TK_MAX];
    _Atomic long count, count_rec;
    int drop_rank, drop_from;   /* CASK_DIST_TEST_DROP_DONE, drop_run 0: none */
    uint32_t drop_run, drop_graph;   /* drop_graph 0: any graph's */
    int stall_rank, stall_ms;   /* CASK_DIST_TEST_STALL, stall_ms 0: none */
    int late_rank, late_ms;     /* CASK_DIST_TEST_NOTE_LATE, late_ms 0: none */
    int plan_rank, plan_ms;     /* CASK_DIST_TEST_PLAN_LATE, plan_ms 0: none */
    int give_up_rank;           /* CASK_DIST_TEST_GIVE_UP, -1: none */
    int give_up_quiet;
    _Atomic int gave_up;
    _Atomic int stalled;
    cask_kernel *k_probe;
} dist_testkill;

typedef struct probe_args {
    dist_testkill *tk;
    int rank;
    int recovery;
} probe_args;

static void freeze(int ms)
{
    pid_t self = getpid();
    pid_t child = fork();
    if (child == 0) {
        usleep((useconds_t)ms * 1000);
        kill(self, SIGCONT);
        _exit(0);
    }
    if (child > 0)
        raise(SIGSTOP);
}

static cask_status probe_cpu(cask_task_ctx *ctx)
{
    const probe_args *a = cask_task_args(ctx, NULL);
    dist_testkill *tk = a->tk;
    long k = atomic_fetch_add(&tk->count, 1) + 1;
    long kr = a->recovery ? atomic_fetch_add(&tk->count_rec, 1) + 1 : 0;
    for (int i = 0; i < tk->n; i++) {
        if (tk->pt[i].rank != a->rank || (tk->pt[i].recovery ? kr : k) != tk->pt[i].at)
            continue;
        fprintf(stderr, "cask test hook: rank %d %s at its %s task %ld\n", a->rank,
                tk->pt[i].freeze_ms ? "freezes" : "is killed",
                tk->pt[i].recovery ? "recovery" : "", tk->pt[i].at);
        fflush(stderr);
        if (tk->pt[i].freeze_ms)
            freeze(tk->pt[i].freeze_ms);
        else
            raise(SIGKILL);
    }
    return CASK_OK;
}

static int parse(dist_testkill *tk, const char *s, int freeze)
{
    while (s && *s && tk->n < TK_MAX) {
        int rank, ms = 0, rec = 0, used = 0;
        long at;
        if (sscanf(s, "%d:%n", &rank, &used) != 1 || !used)
            return -1;
        s += used;
        if (*s == 'r') {
            rec = 1;
            s++;
        }
        if (freeze ? sscanf(s, "%ld:%d%n", &at, &ms, &used) != 2
                   : sscanf(s, "%ld%n", &at, &used) != 1)
            return -1;
        s += used;
        tk->pt[tk->n].rank = rank;
        tk->pt[tk->n].at = at;
        tk->pt[tk->n].recovery = rec;
        tk->pt[tk->n].freeze_ms = freeze ? (ms > 0 ? ms : 1) : 0;
        tk->n++;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return 0;
}

void dist_testkill_join(cask_dist *dist, const char *step)
{
    const char *s = getenv("CASK_DIST_TEST_JOIN_KILL");
    int rank, used = 0;
    if (!s || !*s || sscanf(s, "%d:%n", &rank, &used) != 1 || !used)
        return;
    const char *rest = s + used;
    size_t n = strlen(step);
    if (strncmp(rest, step, n) || (rest[n] && strcmp(rest + n, ":late")))
        return;
    if (rank == dist->rank) {
        fprintf(stderr, "cask test hook: rank %d is killed while joining, before %s\n", rank,
                step);
        fflush(stderr);
        raise(SIGKILL);
    }
    if (!rest[n] || rank < 0 || rank >= dist->size)
        return;
    /* late: the collective begins only after the death is known (up to 10 s) */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&dist->mu);
    while (!dist->lost[rank] && pthread_cond_timedwait(&dist->cv, &dist->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&dist->mu);
}

/* DROP_DONE's optional fourth field: ":G", only graph G's DONE. 1 if malformed. */
static int parse_drop_graph(dist_testkill *tk, const char *rest)
{
    unsigned long graph = 0;
    int used = 0;
    if (!*rest)
        return 0;
    if (sscanf(rest, ":%lu%n", &graph, &used) != 1 || rest[used] || !graph ||
        graph > UINT32_MAX)
        return 1;
    tk->drop_graph = (uint32_t)graph;
    return 0;
}

cask_status dist_testkill_init(cask_dist *dist)
{
    const char *kill_s = getenv("CASK_DIST_TEST_KILL");
    const char *freeze_s = getenv("CASK_DIST_TEST_FREEZE");
    const char *drop_s = getenv("CASK_DIST_TEST_DROP_DONE");
    const char *stall_s = getenv("CASK_DIST_TEST_STALL");
    const char *late_s = getenv("CASK_DIST_TEST_NOTE_LATE");
    const char *give_s = getenv("CASK_DIST_TEST_GIVE_UP");
    const char *plan_s = getenv("CASK_DIST_TEST_PLAN_LATE");
    if ((!kill_s || !*kill_s) && (!freeze_s || !*freeze_s) && (!drop_s || !*drop_s) &&
        (!stall_s || !*stall_s) && (!late_s || !*late_s) && (!give_s || !*give_s) &&
        (!plan_s || !*plan_s))
        return CASK_OK;
    dist_testkill *tk = calloc(1, sizeof *tk);
    if (!tk)
        return CASK_ERR_NOMEM;
    unsigned long run = 0;
    int used = 0;
    tk->give_up_rank = -1;
    if (parse(tk, kill_s, 0) || parse(tk, freeze_s, 1) ||
        (drop_s && *drop_s &&
         (sscanf(drop_s, "%d:%d:%lu%n", &tk->drop_rank, &tk->drop_from, &run, &used) != 3 ||
          !run || run > UINT32_MAX || parse_drop_graph(tk, drop_s + used))) ||
        (stall_s && *stall_s &&
         (sscanf(stall_s, "%d:%d%n", &tk->stall_rank, &tk->stall_ms, &used) != 2 ||
          stall_s[used] || tk->stall_ms <= 0)) ||
        (late_s && *late_s &&
         (sscanf(late_s, "%d:%d%n", &tk->late_rank, &tk->late_ms, &used) != 2 ||
          late_s[used] || tk->late_ms <= 0)) ||
        (plan_s && *plan_s &&
         (sscanf(plan_s, "%d:%d%n", &tk->plan_rank, &tk->plan_ms, &used) != 2 ||
          plan_s[used] || tk->plan_ms <= 0)) ||
        (give_s && *give_s &&
         (sscanf(give_s, "%d%n", &tk->give_up_rank, &used) != 1 || tk->give_up_rank < 0 ||
          (give_s[used] && strcmp(give_s + used, ":quiet"))))) {
        free(tk);
        return CASK_ERR_INVALID;
    }
    tk->drop_run = (uint32_t)run;
    tk->give_up_quiet = give_s && strstr(give_s, ":quiet") != NULL;
    cask_kernel_desc d = { .name = "dist_test_probe", .cpu = probe_cpu };
    cask_status st = cask_kernel_register(dist->rt, &d, &tk->k_probe);
    if (st) {
        free(tk);
        return st;
    }
    dist->testkill = tk;
    return CASK_OK;
}

cask_status dist_testkill_probe(cask_dist_graph *g, const cask_access *acc, int nacc)
{
    dist_testkill *tk = g->dist->testkill;
    cask_access pacc[CASK_MAX_BUFFERS];
    for (int a = 0; a < nacc; a++)
        pacc[a] = (cask_access){ acc[a].data, (acc[a].mode & CASK_WRITE) ? CASK_RW : CASK_READ };
    probe_args a = { tk, g->dist->rank, g->replan != NULL };
    cask_task_desc d = { .field_mask = CASK_TASK_ARGS | CASK_TASK_WHERE, .kernel = tk->k_probe,
                         .access = pacc, .naccess = nacc, .args = &a, .args_size = sizeof a,
                         .where = CASK_WHERE_CPU };
    return cask_graph_add_task(g->local, &d, NULL);
}

int dist_testkill_drop_done(const cask_dist *dist, uint32_t graph, int from, uint32_t run)
{
    const dist_testkill *tk = dist->testkill;
    if (!tk || !tk->drop_run || tk->drop_rank != dist->rank || tk->drop_from != from ||
        tk->drop_run != run || (tk->drop_graph && tk->drop_graph != graph))
        return 0;
    fprintf(stderr, "cask test hook: rank %d drops the DONE of graph %u run %u from rank %d\n",
            dist->rank, graph, run, from);
    return 1;
}

void dist_testkill_note_late(const cask_dist *dist)
{
    const dist_testkill *tk = dist->testkill;
    if (!tk || !tk->late_ms || tk->late_rank != dist->rank)
        return;
    fprintf(stderr, "cask test hook: rank %d notes what it delivered %d ms late\n",
            dist->rank, tk->late_ms);
    usleep((useconds_t)tk->late_ms * 1000);
}

void dist_testkill_on_lost(cask_dist *dist)
{
    dist_testkill *tk = dist->testkill;
    if (!tk || !tk->stall_ms || tk->stall_rank != dist->rank || atomic_exchange(&tk->stalled, 1))
        return;
    fprintf(stderr, "cask test hook: rank %d stalls its progress thread %d ms\n", dist->rank,
            tk->stall_ms);
    fflush(stderr);
    usleep((useconds_t)tk->stall_ms * 1000);
}

int dist_testkill_give_up(cask_dist *dist)
{
    dist_testkill *tk = dist->testkill;
    if (!tk || tk->give_up_rank != dist->rank || atomic_exchange(&tk->gave_up, 1))
        return 0;
    fprintf(stderr, "cask test hook: rank %d gives up its recovery%s\n", dist->rank,
            tk->give_up_quiet ? " (no ABORT)" : "");
    fflush(stderr);
    return tk->give_up_quiet ? 2 : 1;
}

void dist_testkill_plan_late(const cask_dist *dist)
{
    const dist_testkill *tk = dist->testkill;
    if (!tk || !tk->plan_ms || tk->plan_rank != dist->rank)
        return;
    fprintf(stderr, "cask test hook: rank %d plans %d ms late\n", dist->rank, tk->plan_ms);
    fflush(stderr);
    usleep((useconds_t)tk->plan_ms * 1000);
}

char dist_testkill_file(int rank, long *at)
{
    const char *e = getenv("CASK_DIST_TEST_KILL_WRITE");
    char kind = 0;
    int r = -1;
    *at = 0;
    if (!e || sscanf(e, "%d:", &r) != 1 || r != rank || !(e = strchr(e, ':')))
        return 0;
    e++;
    if (!strcmp(e, "commit"))
        kind = 'c';
    else if ((*e == 'w' || *e == 'm') && (*at = strtol(e + 1, NULL, 10)) > 0)
        kind = *e;
    return kind;
}
