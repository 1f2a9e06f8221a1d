/*
 * err.h - error codes and error detail for every profstore module.
 *
 * Functions return 0 or a negative PS_E* code. Detail (what and where) goes into an optional
 * ps_err_t; ps_err_http_status() is the one table that maps codes to HTTP statuses.
 */
#ifndef PS_CORE_ERR_H
#define PS_CORE_ERR_H

#include <stddef.h>
#include <stdint.h>

enum {
    PS_OK = 0,
    PS_EINVAL = -1,      /* malformed input: bad syntax, bad encoding, value out of range */
    PS_ETOOBIG = -2,     /* input exceeds a size or count limit */
    PS_ENOTFOUND = -3,   /* the thing asked for does not exist */
    PS_ECONFLICT = -4,   /* same timestamp, different content */
    PS_EOUTOFORDER = -5, /* older than what the series already holds */
    PS_ENOSPACE = -6,    /* disk or map full */
    PS_ECORRUPT = -7,    /* stored bytes fail validation */
    PS_ESTORAGE = -8,    /* LMDB or file system failure */
    PS_ENOMEM = -9,
    PS_EVERSION = -10,   /* data directory of another schema version */
    PS_EUNAVAIL = -11,   /* shutting down, or overloaded */
    PS_EINTERNAL = -12,
    PS_EUNSUPPORTED = -13, /* well-formed but not something we accept (415-ish) */
    PS_ETIMEOUT = -16,   /* a query ran past its deadline (--query.timeout): 503, errorType timeout */
    PS_ECANCELED = -17,  /* a query whose client went away (499) */
    PS_ELIMIT = -14,     /* a query would exceed a limit (series, points): 422 like Prometheus */
    PS_EOVERLOAD = -15,  /* too much queued or being decompressed at once: retry later (429) */
};

typedef struct ps_err {
    int code;
    int32_t pos;   /* byte offset in the input that was wrong, or -1 (none); the message says it too */
    char msg[512];
} ps_err_t;

/** Records code and a printf-style message in err (if err is not NULL), pos -1; returns code. */
int ps_err_set(ps_err_t *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** The same with the byte offset pos (>= 0) of what was wrong; the message is written as given
 *  (parsers put their "1:17: " in it themselves). Offsets above INT32_MAX are stored as INT32_MAX. */
int ps_err_set_at(ps_err_t *err, int code, size_t pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/** Prepends "prefix: " to the message already in err; code and pos stay. Returns err->code (or
 *  PS_EINTERNAL if err is NULL). */
int ps_err_prefix(ps_err_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Static description of a code. */
const char *ps_strerror(int code);
/** HTTP status for a code: EINVAL 400, ETOOBIG 413, ENOTFOUND 404, ECONFLICT 409, ... */
int ps_err_http_status(int code);
/*
 * The settings whose limits messages name. A lower floor says which limit was hit and its value;
 * how the user sets it (a flag of main.c's) is the top floor's word: main.c hands the names over
 * at start (ps_setting_names_set), before that (unit tests, fuzzers) each has a neutral name.
 */
typedef enum ps_setting {
    PS_SETTING_QUERY_TIMEOUT,          /* "the query timeout" */
    PS_SETTING_QUERY_MAX_SAMPLES,      /* "the query sample limit" */
    PS_SETTING_QUERY_MAX_SERIES,       /* "the query series limit" */
    PS_SETTING_QUERY_MAX_MEMORY,       /* "the query memory limit" */
    PS_SETTING_QUERY_MAX_REGEX_STEPS,  /* "the query regex step limit" */
    PS_SETTING_INFLATE_BUDGET,         /* "the decompression budget" */
    PS_SETTING_FUTURE_GRACE,           /* "the future grace" */
    PS_SETTING_STORE_MAX_SIZE,         /* "the store size limit" */
    PS_SETTING_DISK_RESERVE,           /* "the disk reserve" */
    PS_SETTING_WRITE_QUEUE_MAX_ITEMS,  /* "the write queue item limit" */
    PS_SETTING_WRITE_QUEUE_MAX_BYTES,  /* "the write queue byte limit" */
    PS_SETTING_SCRAPE_MAX_TARGETS,     /* "the target limit" */
    PS_SETTING_STORE_CHECK,            /* "a store check" (the one-off check of a data directory) */
    PS_SETTING_DEBUGINFO_MAX_FILE,     /* "the debug file size limit" */
    PS_SETTING_DEBUGINFO_MAX_BYTES,    /* "the debug info store limit" */
    PS_SETTING_COUNT
} ps_setting_t;
/** Names the settings as the user sets them (NULL entries keep their names). Once, at start,
 *  before other threads run. */
void ps_setting_names_set(const char *const names[PS_SETTING_COUNT]);
/** The name of setting s for a message: main.c's flag once it gave one, else the neutral name. */
const char *ps_setting_name(ps_setting_t s);

/** Clears err. */
static inline void ps_err_clear(ps_err_t *err)
{
    if (err != NULL) {
        err->code = 0;
        err->pos = -1;
        err->msg[0] = '\0';
    }
}

#endif
