/* number.h: fast, exact parsing of short decimal numbers (see number.c). */
#ifndef KNN_NUMBER_H
#define KNN_NUMBER_H

/* If s is a plain decimal ([+-]digits[.digits][e[+-]digits], trailing blanks allowed)
 * that the fast path can convert exactly, stores it in *out and returns 1; otherwise
 * returns 0 and the caller must use strtod (hex, inf, nan, long or extreme numbers). */
int knn_parse_decimal(const char *s, double *out);

#endif
