/* tests/test_trace_names.c: how the trace recorder (runtime/trace.h) writes names: JSON
 * escapes (bad UTF-8 as U+FFFD), names copied so that callers may free them, a reused
 * name buffer recorded with each content it held, and many distinct names across record
 * blocks and a growing intern table, all read back by the strict JSON parser. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/trace.h"
#include "json_strict.h"
#include "trace_helpers.h"

TestSuite(trace, .init = make_path, .fini = remove_path);

Test(trace, special_characters_in_names_are_escaped)
{
    static const struct { const char *in, *out; } cases[] = {
        { "quote \" backslash \\ slash /", "quote \" backslash \\ slash /" },
        { "newline\ntab\tcr\r", "newline\ntab\tcr\r" },
        { "ctl \x01\x1f end", "ctl \x01\x1f end" },
        { "utf8 h\xc3\xa9llo \xe2\x86\x92 \xf0\x9f\x9a\x80", "utf8 h\xc3\xa9llo \xe2\x86\x92 \xf0\x9f\x9a\x80" },
        { "bad \xff byte \xc3", "bad \xef\xbf\xbd byte \xef\xbf\xbd" },   /* -> U+FFFD */
        { "surrogate \xed\xa0\x80", "surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
    };
    size_t n = sizeof cases / sizeof cases[0];
    trace *t;
    cr_assert_eq(trace_create(trace_path, 1, &t), CASK_OK);
    cr_assert_eq(trace_track_name(t, 0, "track \"0\"\n", 0), CASK_OK);
    uint64_t base = trace_now_ns();
    for (size_t i = 0; i < n; i++) {
        trace_args a = { .fields = TRACE_ARG_KERNEL, .kernel = cases[i].in };
        cr_assert_eq(trace_complete(t, 0, cases[i].in, base + i * 10, base + i * 10 + 5, &a), CASK_OK);
    }
    cr_assert_eq(trace_set_info(t, "k\"ey", "va\\lue\n"), CASK_OK);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    for (size_t i = 0; i < n; i++) {
        const jval *e = find_event(&root, "X", cases[i].out);
        cr_assert_not_null(e, "case %zu: no slice named as expected", i);
        cr_assert_str_eq(json_str(json_get(e, "args"), "kernel"), cases[i].out);
    }
    cr_assert_not_null(find_event(&root, "M", "thread_name"));
    cr_assert_str_eq(json_str(json_get(find_event(&root, "M", "thread_name"), "args"), "name"), "track \"0\"\n");
    cr_assert_str_eq(json_str(json_get(&root, "otherData"), "k\"ey"), "va\\lue\n");
    json_free(&root);
}

Test(trace, names_are_copied_so_callers_may_free_them)
{
    trace *t;
    cr_assert_eq(trace_create(trace_path, 1, &t), CASK_OK);
    char *name = strdup("graph-owned name"), *kernel = strdup("graph-owned kernel");
    trace_args a = { .fields = TRACE_ARG_KERNEL, .kernel = kernel };
    uint64_t now = trace_now_ns();
    cr_assert_eq(trace_complete(t, 0, name, now, now + 1, &a), CASK_OK);
    memset(name, 'x', strlen(name));   /* the graph is destroyed before the trace is written */
    memset(kernel, 'y', strlen(kernel));
    free(name);
    free(kernel);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    const jval *e = find_event(&root, "X", "graph-owned name");
    cr_assert_not_null(e);
    cr_assert_str_eq(json_str(json_get(e, "args"), "kernel"), "graph-owned kernel");
    json_free(&root);
}

Test(trace, a_reused_name_buffer_records_each_content_it_held)
{
    trace *t;
    cr_assert_eq(trace_create(trace_path, 1, &t), CASK_OK);
    char buf[32];   /* one address, many names: the name cache must not confuse them */
    uint64_t base = trace_now_ns();
    for (int i = 0; i < 100; i++) {
        snprintf(buf, sizeof buf, "name %d", i % 10);
        cr_assert_eq(trace_complete(t, 0, buf, base + (uint64_t)i * 10, base + (uint64_t)i * 10 + 1, NULL), CASK_OK);
    }
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    const jval *ev = events_of(&root);
    int seen = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        if (strcmp(json_str(e, "ph"), "X"))
            continue;
        char want[32];
        snprintf(want, sizeof want, "name %d", seen % 10);
        cr_assert_str_eq(json_str(e, "name"), want);
        seen++;
    }
    cr_assert_eq(seen, 100);
    json_free(&root);
}

Test(trace, many_events_span_blocks_and_all_are_written)
{
    enum { N = 60000 };   /* several record blocks (the 2 MiB ones too) and arena blocks */
    trace *t;
    cr_assert_eq(trace_create(trace_path, 1, &t), CASK_OK);
    uint64_t base = trace_now_ns();
    for (int i = 0; i < N; i++) {
        char name[48];
        snprintf(name, sizeof name, "distinct name number %d", i);   /* grows the intern table */
        trace_args a = { .fields = TRACE_ARG_TASK, .task_id = (uint64_t)i };
        cr_assert_eq(trace_complete(t, 0, name, base + (uint64_t)i * 10, base + (uint64_t)i * 10 + 5, &a), CASK_OK);
    }
    cr_assert_eq(trace_event_count(t), N);
    cr_assert_eq(trace_write(t), CASK_OK);
    trace_destroy(t);
    jval root;
    load_json(trace_path, &root);
    const jval *ev = events_of(&root);
    int seen = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const jval *e = &ev->items[i];
        if (strcmp(json_str(e, "ph"), "X"))
            continue;
        char want[48];
        snprintf(want, sizeof want, "distinct name number %d", seen);
        cr_assert_str_eq(json_str(e, "name"), want);
        cr_assert_eq(json_get(json_get(e, "args"), "task")->num, seen);
        seen++;
    }
    cr_assert_eq(seen, N);
    json_free(&root);
}
