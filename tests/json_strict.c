/* tests/json_strict.c: see json_strict.h. */
#include "json_strict.h"

#include <stdlib.h>
#include <string.h>

typedef struct jparser {
    const char *p, *end;
    const char *err;
} jparser;

static int jparse_value(jparser *ps, jval *v, int depth);

static void jws(jparser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

static int jfail(jparser *ps, const char *why)
{
    if (!ps->err)
        ps->err = why;
    return -1;
}

static void put_utf8(char **out, unsigned cp)
{
    unsigned char *o = (unsigned char *)*out;
    if (cp < 0x80) {
        *o++ = (unsigned char)cp;
    } else if (cp < 0x800) {
        *o++ = (unsigned char)(0xC0 | cp >> 6);
        *o++ = (unsigned char)(0x80 | (cp & 63));
    } else if (cp < 0x10000) {
        *o++ = (unsigned char)(0xE0 | cp >> 12);
        *o++ = (unsigned char)(0x80 | (cp >> 6 & 63));
        *o++ = (unsigned char)(0x80 | (cp & 63));
    } else {
        *o++ = (unsigned char)(0xF0 | cp >> 18);
        *o++ = (unsigned char)(0x80 | (cp >> 12 & 63));
        *o++ = (unsigned char)(0x80 | (cp >> 6 & 63));
        *o++ = (unsigned char)(0x80 | (cp & 63));
    }
    *out = (char *)o;
}

static int hex4(jparser *ps, unsigned *cp)
{
    *cp = 0;
    for (int i = 0; i < 4; i++, ps->p++) {
        if (ps->p >= ps->end)
            return jfail(ps, "truncated \\u escape");
        char c = *ps->p;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 99;
        if (d == 99)
            return jfail(ps, "bad hex digit in \\u escape");
        *cp = *cp << 4 | d;
    }
    return 0;
}

/* Raw bytes of a string must be valid UTF-8 (RFC 8259 section 8.1). */
static int utf8_ok(const unsigned char *p, const unsigned char *end, int *len)
{
    unsigned c = p[0], lo = 0x80, hi = 0xBF;
    int n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!n || end - p < n)
        return 0;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    *len = n;
    return 1;
}

static int jparse_string(jparser *ps, char **out)
{
    if (ps->p >= ps->end || *ps->p != '"')
        return jfail(ps, "expected string");
    ps->p++;
    /* Decoded text is never longer than its escaped form (\uXXXX: 6 bytes in, <= 3 out). */
    const char *q = ps->p;
    while (q < ps->end && *q != '"')
        q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    char *buf = malloc((size_t)(q - ps->p) + 1), *o = buf;
    if (!buf)
        return jfail(ps, "out of memory");
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            free(buf);
            return jfail(ps, "raw control character in string");
        }
        if (c == '\\') {
            if (++ps->p >= ps->end)
                break;
            char e = *ps->p++;
            unsigned cp;
            switch (e) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '/': *o++ = '/'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            case 'u':
                if (hex4(ps, &cp)) {
                    free(buf);
                    return -1;
                }
                if (cp >= 0xD800 && cp <= 0xDFFF) {
                    free(buf);   /* the writer never needs surrogates */
                    return jfail(ps, "surrogate escape");
                }
                put_utf8(&o, cp);
                break;
            default:
                free(buf);
                return jfail(ps, "bad escape");
            }
            continue;
        }
        if (c >= 0x80) {
            int n;
            if (!utf8_ok((const unsigned char *)ps->p, (const unsigned char *)ps->end, &n)) {
                free(buf);
                return jfail(ps, "invalid UTF-8 in string");
            }
            memcpy(o, ps->p, (size_t)n);
            o += n;
            ps->p += n;
            continue;
        }
        *o++ = (char)c;
        ps->p++;
    }
    if (ps->p >= ps->end) {
        free(buf);
        return jfail(ps, "unterminated string");
    }
    ps->p++;
    *o = '\0';
    *out = buf;
    return 0;
}

static int jparse_number(jparser *ps, jval *v)
{
    const char *s = ps->p;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p >= ps->end)
        return jfail(ps, "bad number");
    if (*ps->p == '0') {
        ps->p++;
    } else if (*ps->p >= '1' && *ps->p <= '9') {
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
    } else {
        return jfail(ps, "bad number");
    }
    if (ps->p < ps->end && *ps->p == '.') {
        const char *d = ++ps->p;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
        if (ps->p == d)
            return jfail(ps, "no digits after '.'");
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        const char *d = ps->p;
        while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
            ps->p++;
        if (ps->p == d)
            return jfail(ps, "no exponent digits");
    }
    v->t = J_NUM;
    v->raw = strndup(s, (size_t)(ps->p - s));
    v->num = strtod(v->raw, NULL);
    return 0;
}

static int jparse_container(jparser *ps, jval *v, int depth, int is_obj)
{
    char close = is_obj ? '}' : ']';
    v->t = is_obj ? J_OBJ : J_ARR;
    ps->p++;
    jws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        jws(ps);
        if (is_obj) {
            if (jparse_string(ps, &key))
                return -1;
            jws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                return jfail(ps, "expected ':'");
            }
            ps->p++;
        }
        v->items = realloc(v->items, (v->n + 1) * sizeof *v->items);
        v->keys = realloc(v->keys, (v->n + 1) * sizeof *v->keys);
        memset(&v->items[v->n], 0, sizeof *v->items);
        v->keys[v->n] = key;
        v->n++;
        if (jparse_value(ps, &v->items[v->n - 1], depth + 1))
            return -1;
        jws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        return jfail(ps, "expected ',' or closing bracket");
    }
}

static int jlit(jparser *ps, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, lit, n))
        return jfail(ps, "unexpected token");
    ps->p += n;
    return 0;
}

static int jparse_value(jparser *ps, jval *v, int depth)
{
    if (depth > 64)
        return jfail(ps, "too deep");
    jws(ps);
    if (ps->p >= ps->end)
        return jfail(ps, "unexpected end");
    switch (*ps->p) {
    case '{': return jparse_container(ps, v, depth, 1);
    case '[': return jparse_container(ps, v, depth, 0);
    case '"': v->t = J_STR; return jparse_string(ps, &v->str);
    case 't': v->t = J_BOOL; v->num = 1; return jlit(ps, "true");
    case 'f': v->t = J_BOOL; return jlit(ps, "false");
    case 'n': v->t = J_NULL; return jlit(ps, "null");
    default: return jparse_number(ps, v);
    }
}

void json_free(jval *v)
{
    for (size_t i = 0; i < v->n; i++) {
        json_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->raw);
    free(v->str);
}

const jval *json_get(const jval *obj, const char *key)
{
    if (!obj || obj->t != J_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

const char *json_str(const jval *obj, const char *key)
{
    const jval *v = json_get(obj, key);
    return v && v->t == J_STR ? v->str : NULL;
}

int json_parse(const char *text, size_t len, jval *root, const char **err, size_t *err_at)
{
    jparser ps = { text, text + len, NULL };
    memset(root, 0, sizeof *root);
    int rc = jparse_value(&ps, root, 0);
    jws(&ps);
    if (!rc && ps.p != ps.end)
        rc = jfail(&ps, "trailing bytes after the JSON value");
    if (err)
        *err = ps.err;
    if (err_at)
        *err_at = (size_t)(ps.p - text);
    return rc;
}
