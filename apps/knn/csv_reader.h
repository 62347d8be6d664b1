/* csv_reader.h: the CSV tokenizer of io_csv.c: a reader over a 1 MiB buffer that returns
 * one record at a time, its fields in slots (every field of the header; of a data row,
 * only the latitude and longitude columns). */
#ifndef CASK_KNN_CSV_READER_H
#define CASK_KNN_CSV_READER_H

#include <stddef.h>
#include <stdio.h>

#define CSV_BUF (1u << 20)
#define CSV_NUM_MAX 64      /* a number field longer than this is not a number */
#define CSV_NAME_MAX 1024   /* header names are cut here */

typedef struct csv_field {
    char *s;
    size_t len, cap, limit;
    int overflow;
} csv_field;

typedef struct csv_reader {
    FILE *f;
    const char *name;
    const char *prefix;
    size_t nprefix, ppos;
    char *buf;
    size_t len, pos;
    int eof, read_errno;
    long long line;         /* physical line of the next byte, 1-based */
    long long rec_line;     /* line where the current record started */
    long long base;         /* file offset of buf[0] */
    long long rec_off;      /* file offset where the current record started */
    /* header: every field; data rows: only the two kept, in slots 0 and 1 */
    csv_field *fields;
    int nfields_cap;
    int nfields;            /* fields in the current record */
    int keep_all;
    int lat_col, lon_col;   /* 0-based */
    char *err;
    size_t errlen;
} csv_reader;

/* Fills r->buf from the prefix, then the file: 1 if bytes came, 0 at the end of the file
 * or on a read error (then r->read_errno). */
int csv_refill(csv_reader *r);
/* Reads one record. Returns 1 (a record), 0 (end of file) or -1 (error in r->err). */
int csv_record(csv_reader *r);

#endif
