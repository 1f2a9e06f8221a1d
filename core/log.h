/*
 * log.h - logfmt logging to stderr, as Prometheus does: ts=... level=info msg="..." key=value
 */
#ifndef PS_CORE_LOG_H
#define PS_CORE_LOG_H

enum { PS_LOG_DEBUG = 0, PS_LOG_INFO = 1, PS_LOG_WARN = 2, PS_LOG_ERROR = 3 };

extern int ps_log_level;

/** Parses "debug", "info", "warn", "error"; returns the level or -1. */
int ps_log_parse_level(const char *s);
/** msg is a plain message; fmt (may be NULL) adds key=value fields. */
void ps_log(int level, const char *msg, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** s as a logfmt value: as it is when it is a plain word, else in double quotes with \\, \" and
 *  control characters escaped (NULL is ""). The text lives in a per-thread ring of buffers: valid
 *  until 8 more calls on this thread, which is enough for the fields of one log line. */
const char *ps_log_q(const char *s);

#define ps_log_debug(msg, ...) do { if (ps_log_level <= PS_LOG_DEBUG) ps_log(PS_LOG_DEBUG, msg, __VA_ARGS__); } while (0)
#define ps_log_info(msg, ...) ps_log(PS_LOG_INFO, msg, __VA_ARGS__)
#define ps_log_warn(msg, ...) ps_log(PS_LOG_WARN, msg, __VA_ARGS__)
#define ps_log_error(msg, ...) ps_log(PS_LOG_ERROR, msg, __VA_ARGS__)

#endif
