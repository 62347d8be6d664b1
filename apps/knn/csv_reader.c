/* csv_reader.c: the CSV tokenizer (RFC 4180 plus the usual leniencies): one pass over a
 * buffer with a small state machine; quoted fields with commas, newlines and doubled
 * quotes; CRLF or LF; spaces around fields ignored. Line numbers are kept so that
 * io_csv.c's errors can name the physical line. */
#include "csv_reader.h"
#include "points.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

int csv_refill(csv_reader *r)
{
    if (r->ppos < r->nprefix) {
        size_t n = r->nprefix - r->ppos;
        memcpy(r->buf, r->prefix + r->ppos, n);
        r->ppos = r->nprefix;
        r->len = n;
        r->pos = 0;
        return 1;
    }
    if (r->eof)
        return 0;
    r->base += (long long)r->len;
    r->len = fread(r->buf, 1, CSV_BUF, r->f);
    r->pos = 0;
    if (r->len == 0) {
        r->eof = 1;
        if (ferror(r->f))
            r->read_errno = errno ? errno : EIO;
        return 0;
    }
    return 1;
}

static inline int csv_getc(csv_reader *r)
{
    if (r->pos == r->len && !csv_refill(r))
        return EOF;
    return (unsigned char)r->buf[r->pos++];
}

static csv_field *csv_slot(csv_reader *r, int col)
{
    int slot;
    if (r->keep_all) {
        if (col >= r->nfields_cap) {
            int cap = r->nfields_cap ? 2 * r->nfields_cap : 16;
            if (cap > INT_MAX / 2)
                return NULL;
            csv_field *nf = realloc(r->fields, (size_t)cap * sizeof *nf);
            if (!nf)
                return NULL;
            memset(nf + r->nfields_cap, 0, (size_t)(cap - r->nfields_cap) * sizeof *nf);
            r->fields = nf;
            r->nfields_cap = cap;
        }
        slot = col;
    } else if (col == r->lat_col) {
        slot = 0;
    } else if (col == r->lon_col) {
        slot = 1;
    } else {
        return NULL;
    }
    csv_field *fl = &r->fields[slot];
    fl->len = 0;
    fl->overflow = 0;
    fl->limit = r->keep_all ? CSV_NAME_MAX : CSV_NUM_MAX;
    return fl;
}

static int csv_append(csv_field *fl, char c)
{
    if (!fl)
        return 0;
    if (fl->len >= fl->limit) {
        fl->overflow = 1;
        return 0;
    }
    if (fl->len + 1 >= fl->cap) {
        size_t cap = fl->cap ? 2 * fl->cap : 32;
        char *s = realloc(fl->s, cap);
        if (!s)
            return -1;
        fl->s = s;
        fl->cap = cap;
    }
    fl->s[fl->len++] = c;
    return 0;
}

/* Appends n bytes at once (the fast path of unquoted fields). */
static int csv_append_span(csv_field *fl, const char *src, size_t n)
{
    if (!fl || n == 0)
        return 0;
    if (fl->len + n > fl->limit) {
        fl->overflow = 1;
        n = fl->limit - fl->len;
    }
    if (fl->len + n + 1 > fl->cap) {
        size_t cap = fl->cap ? fl->cap : 32;
        while (cap < fl->len + n + 1)
            cap *= 2;
        char *s = realloc(fl->s, cap);
        if (!s)
            return -1;
        fl->s = s;
        fl->cap = cap;
    }
    memcpy(fl->s + fl->len, src, n);
    fl->len += n;
    return 0;
}

/* Ends a field: trims trailing blanks of an unquoted field, NUL-terminates. */
static int csv_end_field(csv_field *fl, int quoted)
{
    if (!fl)
        return 0;
    if (!quoted)
        while (fl->len > 0 && (fl->s[fl->len - 1] == ' ' || fl->s[fl->len - 1] == '\t' ||
                               fl->s[fl->len - 1] == '\r'))
            fl->len--;
    if (!fl->s || fl->len + 1 > fl->cap) {
        char *s = realloc(fl->s, fl->len + 1);
        if (!s)
            return -1;
        fl->s = s;
        fl->cap = fl->len + 1;
    }
    fl->s[fl->len] = '\0';
    return 0;
}

enum { CSV_START, CSV_UNQUOTED, CSV_QUOTED, CSV_QUOTE_SEEN, CSV_AFTER_QUOTE };

/* Reads one record. Returns 1 (a record), 0 (end of file) or -1 (error in r->err). */
int csv_record(csv_reader *r)
{
    int st = CSV_START, col = 0, any = 0, quoted = 0;
    long long quote_line = 0;
    csv_field *fl;

    r->rec_line = r->line;
    r->rec_off = r->base + (long long)r->pos;
    fl = csv_slot(r, 0);
    if (r->keep_all && !fl)
        goto nomem;
    for (;;) {
        if (st == CSV_UNQUOTED) {
            /* The bulk of a file: take the rest of an unquoted field from the buffer in
             * one go, up to the comma or newline that ends it. */
            const char *b = r->buf + r->pos, *e = r->buf + r->len, *q = b;
            while (q < e && *q != ',' && *q != '\n')
                q++;
            if (csv_append_span(fl, b, (size_t)(q - b)))
                goto nomem;
            r->pos += (size_t)(q - b);
        }
        int ch = csv_getc(r);
        if (ch == EOF && r->read_errno) {
            knn_errorf(CASK_ERR_IO, r->err, r->errlen, "%s: read error at line %lld: %s",
                       r->name, r->line, strerror(r->read_errno));
            return -1;
        }
        switch (st) {
        case CSV_START:
            if (ch == EOF) {
                if (col == 0 && !any)
                    return 0;
                goto end_record;
            }
            if (ch == ' ' || ch == '\t' || ch == '\r')
                continue;
            if (ch == '\n') {
                r->line++;
                goto end_record;
            }
            any = 1;
            if (ch == '"') {
                st = CSV_QUOTED;
                quoted = 1;
                quote_line = r->line;
                continue;
            }
            if (ch == ',')
                goto end_field;
            if (csv_append(fl, (char)ch))
                goto nomem;
            st = CSV_UNQUOTED;
            continue;
        case CSV_UNQUOTED:
            if (ch == EOF)
                goto end_record;
            if (ch == ',')
                goto end_field;
            if (ch == '\n') {
                r->line++;
                goto end_record;
            }
            if (csv_append(fl, (char)ch))
                goto nomem;
            continue;
        case CSV_QUOTED:
            if (ch == EOF) {
                knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                           "%s: line %lld: quoted field never closed (end of file)", r->name,
                           quote_line);
                return -1;
            }
            if (ch == '"') {
                st = CSV_QUOTE_SEEN;
                continue;
            }
            if (ch == '\n')
                r->line++;
            if (csv_append(fl, (char)ch))
                goto nomem;
            continue;
        case CSV_QUOTE_SEEN:
            if (ch == '"') { /* a doubled quote stands for one */
                if (csv_append(fl, '"'))
                    goto nomem;
                st = CSV_QUOTED;
                continue;
            }
            st = CSV_AFTER_QUOTE;
            /* fall through */
        case CSV_AFTER_QUOTE:
            if (ch == EOF)
                goto end_record;
            if (ch == ',')
                goto end_field;
            if (ch == '\n') {
                r->line++;
                goto end_record;
            }
            if (ch == ' ' || ch == '\t' || ch == '\r')
                continue;
            knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen,
                       "%s: line %lld, column %d: unexpected character '%c' after a closing "
                       "quote (write a quote inside a quoted field as \"\")",
                       r->name, r->line, col + 1, ch);
            return -1;
        }
    end_field:
        if (csv_end_field(fl, quoted))
            goto nomem;
        col++;
        if (col == INT_MAX) {
            knn_errorf(CASK_ERR_FORMAT, r->err, r->errlen, "%s: line %lld: too many fields",
                       r->name, r->rec_line);
            return -1;
        }
        fl = csv_slot(r, col);
        if (r->keep_all && !fl)
            goto nomem;
        st = CSV_START;
        quoted = 0;
        continue;
    end_record:
        if (col == 0 && !any) { /* a blank line */
            r->rec_line = r->line;
            if (ch == EOF)
                return 0;
            continue;
        }
        if (csv_end_field(fl, quoted))
            goto nomem;
        r->nfields = col + 1;
        return 1;
    }
nomem:
    knn_errorf(CASK_ERR_NOMEM, r->err, r->errlen, "%s: out of memory", r->name);
    return -1;
}
