/* tests/json_strict.h: a small strict JSON parser (RFC 8259: no trailing commas, no
 * leading zeros, valid escapes and UTF-8 only, one value and nothing after it) for tests
 * that check files cask writes, without depending on Python. */
#ifndef CASK_TESTS_JSON_STRICT_H
#define CASK_TESTS_JSON_STRICT_H

#include <stddef.h>

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype t;
    double num;           /* J_NUM (and J_BOOL: 0 or 1) */
    char *raw;            /* J_NUM: the number's text as written */
    char *str;            /* J_STR: decoded UTF-8 */
    size_t n;             /* J_ARR, J_OBJ: items */
    struct jval *items;
    char **keys;          /* J_OBJ */
} jval;

/* Parses text[0..len) into *root (free with json_free, even on failure). Returns 0, or -1
 * with *err set to a static reason and *err_at to the byte offset of the failure. */
int json_parse(const char *text, size_t len, jval *root, const char **err, size_t *err_at);
void json_free(jval *v);

/* The member key of object obj, or NULL (also if obj is NULL or not an object). */
const jval *json_get(const jval *obj, const char *key);
/* The string member key of obj, or NULL if absent or not a string. */
const char *json_str(const jval *obj, const char *key);

#endif
