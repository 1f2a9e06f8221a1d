#include "log.h"

#include <pthread.h>
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
