/* tests/test_trace.c: the trace recorder (runtime/trace.h) writes a Chrome trace-event JSON
 * file that a strict parser accepts and that holds exactly what was recorded: slices with
 * their fields and arguments, paired flow arrows, track metadata, exact ns timestamps,
 * each track in time order, groups as processes; bad arguments refused, and a record's
 * cost. How names are written (escaped, copied, interned) is in test_trace_names.c. A
 * strict JSON parser (json_strict.c) keeps the test free of any Python. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/trace.h"
#include "json_strict.h"
#include "trace_helpers.h"

/* ------------------------------------------------------------ helpers */

/* The clock origin the writer subtracts from every timestamp. */
static uint64_t origin_of(const jval *root)
{
    const char *s = json_str(json_get(root, "otherData"), "clock_origin_ns");
    cr_assert_not_null(s, "otherData.clock_origin_ns missing");
    return strtoull(s, NULL, 10);
}

/* "ts"/"dur" are microseconds written with exactly three fraction digits. */
static void check_us_format(const jval *v, const char *what)
{
    cr_assert(v && v->t == J_NUM, "%s missing or not a number", what);
    const char *dot = strchr(v->raw, '.');
    cr_assert(dot && strlen(dot + 1) == 3 && !strchr(v->raw, 'e'),
              "%s is \"%s\", not microseconds with 3 fraction digits", what, v->raw);
}

/* The exact ns value of a "ts"/"dur" number. */
static int64_t us_to_ns(const jval *v)
{
    const char *r = v->raw;
    int neg = *r == '-';
    char *dot;
    int64_t us = strtoll(r + neg, &dot, 10);
    int64_t ns = us * 1000 + strtoll(dot + 1, NULL, 10);
    return neg ? -ns : ns;
}

/* ------------------------------------------------------------ recording from 3 threads */

#define NTRACKS 3
#define NSLICES 300

typedef struct worker_arg {
    trace *t;
    int track;
    uint64_t base;
    pthread_barrier_t *go;
} worker_arg;

/* Slice i of track k: [base + i*10000 + k*1000, +5000) ns. */
static uint64_t slice_t0(uint64_t base, int k, int i)
{
    return base + (uint64_t)i * 10000 + (uint64_t)k * 1000;
}

/* Flow ids produced by track k; track (k+1)%3 consumes them. */
static uint64_t flow_id(int producer, int i)
{
    return (uint64_t)producer * 100000 + (uint64_t)i + 1;
}

static void *record_worker(void *p)
{
    worker_arg *a = p;
    static const char *const kernels[NTRACKS] = { "fill", "add", "knn_haversine" };
    int k = a->track, producer = (k + NTRACKS - 1) % NTRACKS;
    pthread_barrier_wait(a->go);
    for (int i = 0; i < NSLICES; i++) {
        char name[32];   /* on the stack and reused: the trace must copy it */
        snprintf(name, sizeof name, "task %d.%d", k, i % 7);
        uint64_t t0 = slice_t0(a->base, k, i);
        trace_args args = { .fields = TRACE_ARG_TASK | TRACE_ARG_KERNEL | TRACE_ARG_CHUNKS |
                                      TRACE_ARG_BYTES | TRACE_ARG_DEVICE,
                            .nchunks = 2, .task_id = (uint64_t)(k * NSLICES + i),
                            .kernel = kernels[k], .chunks = { (uint64_t)i, (uint64_t)i + 1 },
                            .bytes = 4096, .device = k - 1 };
        cr_assert_eq(trace_complete(a->t, k, name, t0, t0 + 5000, &args), CASK_OK);
        cr_assert_eq(trace_flow(a->t, k, flow_id(k, i), t0 + 4999, TRACE_FLOW_START), CASK_OK);
        cr_assert_eq(trace_flow(a->t, k, flow_id(producer, i), t0, TRACE_FLOW_FINISH), CASK_OK);
        if (i % 50 == 0) {
            cr_assert_eq(trace_counter(a->t, k, "pool bytes", t0 + 1, (double)i * 1024), CASK_OK);
            cr_assert_eq(trace_instant(a->t, k, "evict", t0 + 2), CASK_OK);
        }
    }
    return NULL;
}

static void record_three_tracks(void)
{
    trace *t;
    cr_assert_eq(trace_create(trace_path, NTRACKS, &t), CASK_OK);
    cr_assert_eq(trace_track_name(t, 0, "cpu 0", 0), CASK_OK);
    cr_assert_eq(trace_track_name(t, 1, "gpu 0 stream 0", 0), CASK_OK);
    cr_assert_eq(trace_track_name(t, 2, "gpu 1 stream 0", 0), CASK_OK);
    cr_assert_eq(trace_set_info(t, "version", "0.1.0"), CASK_OK);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, NTRACKS);
    pthread_t th[NTRACKS];
    worker_arg args[NTRACKS];
    uint64_t base = trace_now_ns();
    for (int k = 0; k < NTRACKS; k++) {
        args[k] = (worker_arg){ t, k, base, &go };
        cr_assert_eq(pthread_create(&th[k], NULL, record_worker, &args[k]), 0);
    }
    for (int k = 0; k < NTRACKS; k++)
        pthread_join(th[k], NULL);
    pthread_barrier_destroy(&go);
    cr_assert_eq(trace_event_count(t), (uint64_t)NTRACKS * (NSLICES * 3 + 2 * (NSLICES / 50)));
    cr_assert_eq(trace_dropped_count(t), 0);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
}

TestSuite(trace, .init = make_path, .fini = remove_path);

Test(trace, concurrent_tracks_write_valid_json_with_the_top_level_fields)
{
    record_three_tracks();
    jval root;
    load_json(trace_path, &root);
    cr_assert_eq(root.t, J_OBJ);
    events_of(&root);
    cr_assert_str_eq(json_str(&root, "displayTimeUnit"), "ns");
    const jval *other = json_get(&root, "otherData");
    cr_assert(other && other->t == J_OBJ, "no otherData object");
    cr_assert_str_eq(json_str(other, "version"), "0.1.0");
    cr_assert_str_eq(json_str(other, "dropped_events"), "0");
    json_free(&root);
}

Test(trace, every_slice_has_name_ph_ts_dur_pid_tid_and_its_args)
{
    record_three_tracks();
    jval root;
    load_json(trace_path, &root);
    const jval *ev = events_of(&root);
    int per_tid[NTRACKS] = { 0 };
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        const char *ph = json_str(e, "ph");
        cr_assert_not_null(ph, "event %zu has no ph", i);
        if (strcmp(ph, "X"))
            continue;
        cr_assert_not_null(json_str(e, "name"), "slice %zu has no name", i);
        check_us_format(json_get(e, "ts"), "ts");
        check_us_format(json_get(e, "dur"), "dur");
        cr_assert_eq(us_to_ns(json_get(e, "dur")), 5000);
        const jval *pid = json_get(e, "pid"), *tid = json_get(e, "tid");
        cr_assert(pid && pid->t == J_NUM && tid && tid->t == J_NUM, "slice %zu: pid/tid", i);
        cr_assert(tid->num >= 0 && tid->num < NTRACKS);
        per_tid[(int)tid->num]++;
        const jval *args = json_get(e, "args");
        cr_assert(args && args->t == J_OBJ, "slice %zu has no args", i);
        const jval *chunks = json_get(args, "chunks");
        cr_assert(chunks && chunks->t == J_ARR && chunks->n == 2);
        cr_assert_eq(chunks->items[1].num, chunks->items[0].num + 1);
        cr_assert_eq(json_get(args, "bytes")->num, 4096);
        cr_assert_eq(json_get(args, "device")->num, tid->num - 1);
        cr_assert_not_null(json_str(args, "kernel"));
        cr_assert_not_null(json_get(args, "task"));
    }
    for (int k = 0; k < NTRACKS; k++)
        cr_assert_eq(per_tid[k], NSLICES, "track %d: %d slices written, %d recorded", k,
                     per_tid[k], NSLICES);
    json_free(&root);
}

Test(trace, timestamps_are_exact_to_the_ns_relative_to_the_origin)
{
    trace *t;
    cr_assert_eq(trace_create(trace_path, 1, &t), CASK_OK);
    uint64_t t0 = trace_now_ns() + 1234567;   /* 1234.567 us after (about) the origin */
    cr_assert_eq(trace_complete(t, 0, "exact", t0, t0 + 1001, NULL), CASK_OK);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    const jval *e = find_event(&root, "X", "exact");
    cr_assert_not_null(e);
    check_us_format(json_get(e, "ts"), "ts");
    cr_assert_eq(us_to_ns(json_get(e, "ts")), (int64_t)(t0 - origin_of(&root)));
    cr_assert_str_eq(json_get(e, "dur")->raw, "1.001");
    cr_assert_eq(json_get(e, "args"), NULL, "a slice recorded without args has none");
    json_free(&root);
}

Test(trace, each_flow_start_has_exactly_one_finish_bound_to_its_slice)
{
    record_three_tracks();
    jval root;
    load_json(trace_path, &root);
    const jval *ev = events_of(&root);
    static int starts[NTRACKS][NSLICES], finishes[NTRACKS][NSLICES];
    memset(starts, 0, sizeof starts);
    memset(finishes, 0, sizeof finishes);
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        const char *ph = json_str(e, "ph");
        if (strcmp(ph, "s") && strcmp(ph, "f"))
            continue;
        const jval *id = json_get(e, "id");
        cr_assert(id && id->t == J_NUM, "flow event without a numeric id");
        cr_assert_str_eq(json_str(e, "name"), "dep");
        cr_assert_str_eq(json_str(e, "cat"), "dep");
        check_us_format(json_get(e, "ts"), "flow ts");
        uint64_t v = (uint64_t)id->num;
        int producer = (int)(v / 100000), idx = (int)(v % 100000) - 1;
        cr_assert(producer >= 0 && producer < NTRACKS && idx >= 0 && idx < NSLICES,
                  "unknown flow id %s", id->raw);
        if (*ph == 's') {
            cr_assert_eq(json_get(e, "tid")->num, producer, "flow start on the wrong track");
            starts[producer][idx]++;
        } else {
            cr_assert_str_eq(json_str(e, "bp"), "e", "flow finish must bind to its enclosing slice");
            cr_assert_eq(json_get(e, "tid")->num, (producer + 1) % NTRACKS);
            finishes[producer][idx]++;
        }
    }
    for (int k = 0; k < NTRACKS; k++)
        for (int i = 0; i < NSLICES; i++)
            cr_assert(starts[k][i] == 1 && finishes[k][i] == 1,
                      "flow %d.%d: %d starts, %d finishes", k, i, starts[k][i], finishes[k][i]);
    json_free(&root);
}

Test(trace, flow_ids_beyond_2_pow_53_are_written_as_exact_hex_strings)
{
    const uint64_t big = 0xfedcba9876543210ull, small = (1ull << 53) - 1;
    trace *t;
    cr_assert_eq(trace_create(trace_path, 1, &t), CASK_OK);
    uint64_t now = trace_now_ns();
    cr_assert_eq(trace_complete(t, 0, "a", now, now + 100, NULL), CASK_OK);
    cr_assert_eq(trace_flow(t, 0, big, now + 10, TRACE_FLOW_START), CASK_OK);
    cr_assert_eq(trace_flow(t, 0, small, now + 20, TRACE_FLOW_START), CASK_OK);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    const jval *ev = events_of(&root);
    int found = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        if (strcmp(json_str(e, "ph"), "s"))
            continue;
        const jval *id = json_get(e, "id");
        if (id->t == J_STR) {
            cr_assert_str_eq(id->str, "0xfedcba9876543210");
            found |= 1;
        } else {
            cr_assert_str_eq(id->raw, "9007199254740991");
            found |= 2;
        }
    }
    cr_assert_eq(found, 3);
    json_free(&root);
}

Test(trace, tracks_have_thread_and_process_metadata)
{
    record_three_tracks();
    jval root;
    load_json(trace_path, &root);
    const jval *ev = events_of(&root);
    static const char *const names[NTRACKS] = { "cpu 0", "gpu 0 stream 0", "gpu 1 stream 0" };
    int named[NTRACKS] = { 0 }, sorted[NTRACKS] = { 0 }, process = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        if (strcmp(json_str(e, "ph"), "M"))
            continue;
        const char *what = json_str(e, "name");
        int tid = (int)json_get(e, "tid")->num;
        const jval *args = json_get(e, "args");
        if (!strcmp(what, "thread_name")) {
            cr_assert_str_eq(json_str(args, "name"), names[tid]);
            named[tid]++;
        } else if (!strcmp(what, "thread_sort_index")) {
            cr_assert_eq(json_get(args, "sort_index")->num, tid);
            sorted[tid]++;
        } else if (!strcmp(what, "process_name")) {
            cr_assert_str_eq(json_str(args, "name"), "cask");
            process++;
        }
    }
    for (int k = 0; k < NTRACKS; k++)
        cr_assert(named[k] == 1 && sorted[k] == 1, "track %d: %d thread_name, %d sort_index",
                  k, named[k], sorted[k]);
    cr_assert_eq(process, 1, "one group, so one process_name");
    json_free(&root);
}

Test(trace, counters_and_instants_are_written)
{
    record_three_tracks();
    jval root;
    load_json(trace_path, &root);
    const jval *c = find_event(&root, "C", "pool bytes"), *i = find_event(&root, "i", "evict");
    cr_assert_not_null(c);
    cr_assert_not_null(i);
    cr_assert_eq(json_get(json_get(c, "args"), "value")->t, J_NUM);
    cr_assert_str_eq(json_str(i, "s"), "t");
    json_free(&root);
}

Test(trace, each_track_is_written_in_time_order_whatever_the_recording_order)
{
    trace *t;
    cr_assert_eq(trace_create(trace_path, 2, &t), CASK_OK);
    uint64_t base = trace_now_ns();
    /* GPU tracks learn their times late and out of order. Same start: outer slice first. */
    for (int i = 9; i >= 0; i--)
        cr_assert_eq(trace_complete(t, 1, "late", base + (uint64_t)i * 100, base + (uint64_t)i * 100 + 50, NULL), CASK_OK);
    cr_assert_eq(trace_complete(t, 0, "inner", base, base + 10, NULL), CASK_OK);
    cr_assert_eq(trace_complete(t, 0, "outer", base, base + 100, NULL), CASK_OK);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    const jval *ev = events_of(&root);
    int64_t last[2] = { INT64_MIN, INT64_MIN };
    const char *first0 = NULL;
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        if (strcmp(json_str(e, "ph"), "X"))
            continue;
        int tid = (int)json_get(e, "tid")->num;
        int64_t ts = us_to_ns(json_get(e, "ts"));
        cr_assert_geq(ts, last[tid], "track %d goes back in time", tid);
        last[tid] = ts;
        if (tid == 0 && !first0)
            first0 = json_str(e, "name");
    }
    cr_assert_str_eq(first0, "outer", "at equal start the enclosing slice comes first");
    json_free(&root);
}

Test(trace, groups_become_processes)
{
    trace *t;
    cr_assert_eq(trace_create(trace_path, 2, &t), CASK_OK);
    cr_assert_eq(trace_track_name(t, 0, "cpu 0", 0), CASK_OK);
    cr_assert_eq(trace_track_name(t, 1, "cpu 0", 1), CASK_OK);
    cr_assert_eq(trace_group_name(t, 1, "rank 1 (node7)"), CASK_OK);
    uint64_t now = trace_now_ns();
    cr_assert_eq(trace_complete(t, 1, "remote", now, now + 10, NULL), CASK_OK);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    cr_assert_eq(json_get(find_event(&root, "X", "remote"), "pid")->num, 1);
    const jval *ev = events_of(&root);
    int found[2] = { 0 };
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        if (strcmp(json_str(e, "name"), "process_name"))
            continue;
        int pid = (int)json_get(e, "pid")->num;
        cr_assert_str_eq(json_str(json_get(e, "args"), "name"), pid ? "rank 1 (node7)" : "cask rank 0");
        found[pid]++;
    }
    cr_assert(found[0] == 1 && found[1] == 1);
    json_free(&root);
}

Test(trace, bad_arguments_are_rejected)
{
    trace *t = (trace *)1;
    cr_assert_eq(trace_create(NULL, 1, &t), CASK_ERR_INVALID);
    cr_assert_null(t);
    cr_assert_eq(trace_create(trace_path, 0, &t), CASK_ERR_INVALID);
    cr_assert_eq(trace_create("/nonexistent-dir/x/trace.json", 1, &t), CASK_ERR_IO);
    cr_assert_null(t);
    cr_assert_eq(trace_create(trace_path, 2, &t), CASK_OK);
    cr_assert_eq(trace_complete(t, 2, "x", 0, 1, NULL), CASK_ERR_INVALID);
    cr_assert_eq(trace_complete(t, -1, "x", 0, 1, NULL), CASK_ERR_INVALID);
    cr_assert_eq(trace_complete(t, 0, NULL, 0, 1, NULL), CASK_ERR_INVALID);
    cr_assert_eq(trace_complete(NULL, 0, "x", 0, 1, NULL), CASK_ERR_INVALID);
    cr_assert_eq(trace_flow(t, 0, 1, 0, 'X'), CASK_ERR_INVALID);
    cr_assert_eq(trace_counter(t, 0, NULL, 0, 1.0), CASK_ERR_INVALID);
    cr_assert_eq(trace_track_name(t, 5, "x", 0), CASK_ERR_INVALID);
    cr_assert_eq(trace_track_name(t, 0, "x", -1), CASK_ERR_INVALID);
    cr_assert_eq(trace_event_count(t), 0);
    cr_assert_eq(trace_write(t), CASK_OK);
    cr_assert_eq(trace_write(t), CASK_ERR_STATE, "a trace is written once");
    trace_destroy(t);
    trace_destroy(NULL);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

Test(trace, a_record_costs_well_under_100_ns)
{
    enum { N = 200000 };
    static const char *const names[] = { "fill", "add", "knn_haversine", "reduce_min",
                                         "h2d", "d2h", "stencil", "spill" };
    trace *t;
    cr_assert_eq(trace_create(trace_path, 1, &t), CASK_OK);
    trace_args a = { .fields = TRACE_ARG_TASK | TRACE_ARG_KERNEL | TRACE_ARG_CHUNKS,
                     .nchunks = 2, .chunks = { 1, 2 } };
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {   /* best of 3 */
        /* CPU time of this thread (kernel time zeroing fresh pages included), so that a
         * loaded machine taking the CPU away does not count. */
        uint64_t s = thread_cpu_ns(), now = trace_now_ns();
        for (int i = 0; i < N; i++) {
            a.task_id = (uint64_t)i;
            a.kernel = names[i & 7];
            trace_complete(t, 0, names[(i + 3) & 7], now + (uint64_t)i, now + (uint64_t)i + 1, &a);
        }
        double ns = (double)(thread_cpu_ns() - s) / N;
        best = ns < best ? ns : best;
    }
    cr_log_info("trace_complete with args: %.1f ns per record", best);
    fprintf(stderr, "trace_complete with args: %.1f ns per record\n", best);
    /* About 20 ns on a 2-core VM (half of it the kernel zeroing fresh pages); the target is
     * well under 100 ns. The bound leaves room for slow machines and sanitizer builds. */
    cr_assert_lt(best, 400.0, "%.1f ns per record", best);
    trace_destroy(t);
}

/* The checker above is only worth something if it refuses what viewers refuse. */
Test(trace, the_strict_json_checker_rejects_malformed_json)
{
    static const char *const bad[] = {
        "{\"a\":1,}", "[1,2,]", "{\"a\" 1}", "\"raw\ncontrol\"", "\"bad \\x escape\"",
        "\"bad \xff utf8\"", "01", "1.", "-", "{\"a\":1} x", "[1 2]", "tru", "\"unterminated",
        "\"\\ud800\"", "",
    };
    static const char *const good[] = {
        "{\"a\":[1,-2.5e3,0.125,true,false,null],\"b\":{}}", "\"\\u00e9\\n\\\\\\\"\"",
        "\"h\xc3\xa9\"", " [ ] ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        jval v;
        cr_assert_neq(json_parse(bad[i], strlen(bad[i]), &v, NULL, NULL), 0,
                      "accepted malformed JSON: %s", bad[i]);
        json_free(&v);
    }
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        jval v;
        const char *err = NULL;
        cr_assert_eq(json_parse(good[i], strlen(good[i]), &v, &err, NULL), 0,
                     "rejected valid JSON %s: %s", good[i], err);
        json_free(&v);
    }
}
