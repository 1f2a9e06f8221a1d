#include "log.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "timeutil.h"

int ps_log_level = PS_LOG_INFO;
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;

int ps_log_parse_level(const char *s)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void ps_log(int level, const char *msg, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < ps_log_level)
        return;
    char ts[48], fields[1024] = "";
    ps_format_time(ps_time_now() / 1000000 * 1000000, ts, sizeof(ts));
    if (fmt != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(fields, sizeof(fields), fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&log_mutex);
    fprintf(stderr, "ts=%s level=%s msg=\"%s\"%s%s\n", ts, names[level & 3], msg, fields[0] ? " " : "", fields);
    fflush(stderr);
    pthread_mutex_unlock(&log_mutex);
}

#define Q_RING 8
#define Q_SIZE 1024

const char *ps_log_q(const char *s)
{
    static __thread char ring[Q_RING][Q_SIZE];
    static __thread unsigned next;
    char *b = ring[next++ % Q_RING];
    if (s == NULL)
        s = "";
    bool plain = *s != 0;
    for (const char *p = s; *p && plain; p++)
        plain = (unsigned char)*p > ' ' && *p != '"' && *p != '=' && *p != '\\' && *p != 0x7f;
    if (plain) {
        snprintf(b, Q_SIZE, "%s", s);
        return b;
    }
    size_t o = 0;
    b[o++] = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 7 < Q_SIZE; p++) {
        if (*p == '"' || *p == '\\') {
            b[o++] = '\\';
            b[o++] = (char)*p;
        } else if (*p == '\n') {
            b[o++] = '\\';
            b[o++] = 'n';
        } else if (*p < ' ' || *p == 0x7f) {
            o += (size_t)snprintf(b + o, Q_SIZE - o, "\\x%02x", *p);
        } else {
            b[o++] = (char)*p;
        }
    }
    b[o++] = '"';
    b[o] = 0;
    return b;
}
