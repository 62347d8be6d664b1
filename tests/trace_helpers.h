/* tests/trace_helpers.h: what the test_trace*.c files share: the trace file each test
 * writes (the suite's init makes it, its fini removes it), reading it back through the
 * strict JSON parser (json_strict.c), and finding its events. */
#ifndef CASK_TEST_TRACE_HELPERS_H
#define CASK_TEST_TRACE_HELPERS_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_strict.h"

/* Reads path, parses it strictly (the whole file is one JSON value), fails the test if not. */
static inline void load_json(const char *path, jval *root)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "trace file %s missing", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    const char *err;
    size_t at;
    int rc = json_parse(buf, (size_t)len, root, &err, &at);
    free(buf);
    cr_assert_eq(rc, 0, "invalid JSON in %s at byte %zu: %s", path, at, err);
}

static char trace_path[64];

static inline void make_path(void)
{
    strcpy(trace_path, "/tmp/cask_test_trace_XXXXXX");
    int fd = mkstemp(trace_path);
    cr_assert_geq(fd, 0);
    close(fd);
}

static inline void remove_path(void)
{
    unlink(trace_path);
}

static inline const jval *events_of(const jval *root)
{
    const jval *ev = json_get(root, "traceEvents");
    cr_assert(ev && ev->t == J_ARR, "no traceEvents array");
    return ev;
}

/* The first event with this ph and name, or NULL. */
static inline const jval *find_event(const jval *root, const char *ph, const char *name)
{
    const jval *ev = events_of(root);
    for (size_t i = 0; i < ev->n; i++) {
        const char *p = json_str(&ev->items[i], "ph"), *n = json_str(&ev->items[i], "name");
        if (p && n && !strcmp(p, ph) && !strcmp(n, name))
            return &ev->items[i];
    }
    return NULL;
}

#endif
