#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int vset(ps_err_t *err, int code, int32_t pos, const char *fmt, va_list ap)
{
    if (err != NULL) {
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        err->code = code;
        err->pos = pos;
    }
    return code;
}

int ps_err_set(ps_err_t *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, code, -1, fmt, ap);
    va_end(ap);
    return code;
}

int ps_err_set_at(ps_err_t *err, int code, size_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, code, pos > INT32_MAX ? INT32_MAX : (int32_t)pos, fmt, ap);
    va_end(ap);
    return code;
}

int ps_err_prefix(ps_err_t *err, const char *fmt, ...)
{
    if (err == NULL)
        return PS_EINTERNAL;
    char prefix[256], old[sizeof(err->msg)];
#pragma GCC diagnostic push
#if !defined(__clang__) /* clang has no such warning (and warns about the name) */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof(old));
    snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
#pragma GCC diagnostic pop
    return err->code;
}

const char *ps_strerror(int code)
{
    switch (code) {
    case PS_OK: return "ok";
    case PS_EINVAL: return "invalid input";
    case PS_ETOOBIG: return "too large";
    case PS_ENOTFOUND: return "not found";
    case PS_ECONFLICT: return "conflict";
    case PS_EOUTOFORDER: return "out of order";
    case PS_ENOSPACE: return "no space left";
    case PS_ECORRUPT: return "corrupt data";
    case PS_ESTORAGE: return "storage error";
    case PS_ENOMEM: return "out of memory";
    case PS_EVERSION: return "unsupported data version";
    case PS_EUNAVAIL: return "unavailable";
    case PS_EUNSUPPORTED: return "unsupported";
    case PS_ETIMEOUT: return "query timed out";
    case PS_ECANCELED: return "query canceled";
    case PS_ELIMIT: return "limit exceeded";
    case PS_EOVERLOAD: return "overloaded";
    default: return "internal error";
    }
}

int ps_err_http_status(int code)
{
    switch (code) {
    case PS_OK: return 200;
    case PS_EINVAL: return 400;
    case PS_EOUTOFORDER: return 400;
    case PS_ETOOBIG: return 413;
    case PS_ENOTFOUND: return 404;
    case PS_ECONFLICT: return 409;
    case PS_EUNSUPPORTED: return 415;
    case PS_ELIMIT: return 422;
    case PS_ENOSPACE: return 507;
    case PS_ETIMEOUT: return 503;
    case PS_ECANCELED: return 499;
    case PS_EUNAVAIL: return 503;
    case PS_EOVERLOAD: return 429;
    default: return 500;
    }
}

static const char *setting_names[PS_SETTING_COUNT] = {
    [PS_SETTING_QUERY_TIMEOUT] = "the query timeout",
    [PS_SETTING_QUERY_MAX_SAMPLES] = "the query sample limit",
    [PS_SETTING_QUERY_MAX_SERIES] = "the query series limit",
    [PS_SETTING_QUERY_MAX_MEMORY] = "the query memory limit",
    [PS_SETTING_QUERY_MAX_REGEX_STEPS] = "the query regex step limit",
    [PS_SETTING_INFLATE_BUDGET] = "the decompression budget",
    [PS_SETTING_FUTURE_GRACE] = "the future grace",
    [PS_SETTING_STORE_MAX_SIZE] = "the store size limit",
    [PS_SETTING_DISK_RESERVE] = "the disk reserve",
    [PS_SETTING_WRITE_QUEUE_MAX_ITEMS] = "the write queue item limit",
    [PS_SETTING_WRITE_QUEUE_MAX_BYTES] = "the write queue byte limit",
    [PS_SETTING_SCRAPE_MAX_TARGETS] = "the target limit",
    [PS_SETTING_STORE_CHECK] = "a store check",
    [PS_SETTING_DEBUGINFO_MAX_FILE] = "the debug file size limit",
    [PS_SETTING_DEBUGINFO_MAX_BYTES] = "the debug info store limit",
};

void ps_setting_names_set(const char *const names[PS_SETTING_COUNT])
{
    for (int i = 0; i < PS_SETTING_COUNT; i++)
        if (names[i] != NULL)
            setting_names[i] = names[i];
}

const char *ps_setting_name(ps_setting_t s)
{
    return (unsigned)s < PS_SETTING_COUNT ? setting_names[s] : "";
}
