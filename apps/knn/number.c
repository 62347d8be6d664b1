/* number.c: fast decimal parsing for the CSV reader. strtod is correct but slow (over
 * 100 ns a number, half the time of reading a CSV file), and most numbers in point files
 * are short decimals. Clinger's fast path handles those exactly: if the digits form an
 * integer m <= 2^53 and the power of ten e is within +-22, both m and 10^|e| are exact
 * doubles, so m * 10^e (or m / 10^-e) is one correctly rounded operation, the very value
 * strtod returns. Anything else is left to strtod. */
#include "number.h"

#include <stdint.h>

int knn_parse_decimal(const char *s, double *out)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char *p = s;
    int neg = 0, digits = 0, frac = 0, any = 0;
    uint64_t m = 0;
    if (*p == '-' || *p == '+')
        neg = *p++ == '-';
    for (; *p >= '0' && *p <= '9'; p++, any = 1) {
        if (m || *p != '0')
            digits++;
        m = m * 10 + (uint64_t)(*p - '0');
        if (digits > 19)
            return 0;
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, any = 1) {
            if (m || *p != '0')
                digits++;
            m = m * 10 + (uint64_t)(*p - '0');
            frac++;
            if (digits > 19)
                return 0;
        }
    }
    if (!any)
        return 0;
    int e = 0;
    if (*p == 'e' || *p == 'E') {
        int eneg = 0, edig = 0;
        p++;
        if (*p == '-' || *p == '+')
            eneg = *p++ == '-';
        for (; *p >= '0' && *p <= '9'; p++, edig++) {
            if (e > 1000)
                return 0;
            e = e * 10 + (*p - '0');
        }
        if (!edig)
            return 0;
        if (eneg)
            e = -e;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p)
        return 0;
    e -= frac;
    if (m > (1ull << 53) || e < -22 || e > 22)
        return 0;
    double v = (double)m;
    v = e < 0 ? v / pow10[-e] : v * pow10[e];
    *out = neg ? -v : v;
    return 1;
}
