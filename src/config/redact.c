/*
 * redact.c - the one rule for secrets in what profstore shows: /api/v1/status/config,
 * /api/v1/status/forward, /api/v1/targets (to callers without admin) and log lines (config.h).
 *
 *  - A value whose name looks like a credential (ps_secret_name: scrape params, target labels,
 *    external labels, query parameters of a URL) is shown as "<secret>", as Prometheus shows its
 *    secret fields (config_util.Secret).
 *  - The password of a URL's user info is shown as "xxxxx" and the user kept, as Go's
 *    url.URL.Redacted() and so Prometheus show remote_write and http_sd URLs:
 *    "http://alice:s3cret@sd:8080/t?token=abc" -> "http://alice:xxxxx@sd:8080/t?token=<secret>".
 *    The same applies to every URL inside a label value (http_sd's __meta_url).
 */
#include <string.h>
#include <strings.h>

#include "config.h"

/* Words of a name (split at '_', '-', '.'; a leading "__param_" dropped): one of these marks a
 * credential; "key" does alone (the whole name) or after api/access/private/auth/signing/session,
 * so that shard_key or sort_key stay readable. */
bool ps_secret_name(const char *name, size_t n)
{
    static const char *const words[] = {"token", "password", "passwd", "pwd", "secret", "credential",
                                        "credentials", "apikey", "authorization"};
    static const char *const key_after[] = {"api", "access", "private", "auth", "signing", "session"};
    if (n >= 8 && memcmp(name, "__param_", 8) == 0)
        name += 8, n -= 8;
    const char *prev = NULL;
    size_t prevl = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && (name[i] == '_' || name[i] == '-' || name[i] == '.'))
            i++;
        size_t b = i;
        while (i < n && name[i] != '_' && name[i] != '-' && name[i] != '.')
            i++;
        size_t wl = i - b;
        if (wl == 0)
            break;
        for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
            if (wl == strlen(words[w]) && strncasecmp(name + b, words[w], wl) == 0)
                return true;
        if (wl == 3 && strncasecmp(name + b, "key", 3) == 0) {
            if (prev == NULL && i >= n)
                return true; /* the whole name */
            for (size_t k = 0; prev != NULL && k < sizeof(key_after) / sizeof(key_after[0]); k++)
                if (prevl == strlen(key_after[k]) && strncasecmp(prev, key_after[k], prevl) == 0)
                    return true;
        }
        prev = name + b;
        prevl = wl;
    }
    return false;
}

/* Where a URL inside other text ends: white space, control characters, quotes. ('<' and '>' stay
 * inside: a URL shown once already holds "<secret>", and redacting it again must not change it.) */
static bool ends_url(char c)
{
    return (unsigned char)c <= ' ' || c == '"' || c == '\'' || c == 0x7f;
}

/* One URL starting at s (its scheme's "://" at s + colon): appended redacted; returns its length. */
static size_t url_one(const char *s, size_t n, size_t colon, ps_buf_t *out)
{
    size_t end = colon + 3;
    while (end < n && !ends_url(s[end]))
        end++;
    size_t auth = colon + 3, aend = auth;
    while (aend < end && s[aend] != '/' && s[aend] != '?' && s[aend] != '#')
        aend++;
    /* user info: up to the last '@' of the authority; a password after its first ':' */
    const char *at = NULL;
    for (size_t i = auth; i < aend; i++)
        if (s[i] == '@')
            at = s + i;
    size_t i = 0;
    if (at != NULL) {
        const char *pc = memchr(s + auth, ':', (size_t)(at - (s + auth)));
        if (pc != NULL) {
            ps_buf_append(out, s, (size_t)(pc - s) + 1);
            ps_buf_append(out, PS_URL_PASSWORD, strlen(PS_URL_PASSWORD));
            i = (size_t)(at - s);
        }
    }
    /* the query: values of credential-like names */
    const char *q = memchr(s + aend, '?', end - aend);
    if (q == NULL) {
        ps_buf_append(out, s + i, end - i);
        return end;
    }
    size_t qs = (size_t)(q - s) + 1;
    ps_buf_append(out, s + i, qs - i);
    const char *hash = memchr(s + qs, '#', end - qs);
    size_t qend = hash != NULL ? (size_t)(hash - s) : end;
    for (size_t p = qs; p < qend;) {
        size_t len = 0;
        while (p + len < qend && s[p + len] != '&')
            len++;
        const char *eq = memchr(s + p, '=', len);
        if (eq != NULL && ps_secret_name(s + p, (size_t)(eq - (s + p)))) {
            ps_buf_append(out, s + p, (size_t)(eq - (s + p)) + 1);
            ps_buf_append(out, PS_SECRET, strlen(PS_SECRET));
        } else {
            ps_buf_append(out, s + p, len);
        }
        p += len;
        if (p < qend)
            ps_buf_append(out, s + p++, 1); /* '&' */
    }
    ps_buf_append(out, s + qend, end - qend);
    return end;
}

void ps_redact_url(const char *s, size_t n, ps_buf_t *out)
{
    size_t i = 0;
    while (i < n) {
        /* the next "scheme://": letters, digits, + - . before it */
        const char *sep = NULL;
        for (size_t k = i; k + 3 <= n; k++)
            if (s[k] == ':' && s[k + 1] == '/' && s[k + 2] == '/') {
                sep = s + k;
                break;
            }
        if (sep == NULL)
            break;
        size_t colon = (size_t)(sep - s), b = colon;
        while (b > i && ((s[b - 1] >= 'a' && s[b - 1] <= 'z') || (s[b - 1] >= 'A' && s[b - 1] <= 'Z') ||
                         (s[b - 1] >= '0' && s[b - 1] <= '9') || s[b - 1] == '+' || s[b - 1] == '-' ||
                         s[b - 1] == '.'))
            b--;
        ps_buf_append(out, s + i, b - i);
        i = b + url_one(s + b, n - b, colon - b, out);
    }
    ps_buf_append(out, s + i, n - i);
}

/* s read as the part of a URL after prefix (an authority, a path): redacted as in a URL */
static void redact_as(const char *prefix, const char *s, size_t n, ps_buf_t *out)
{
    size_t pl = strlen(prefix);
    ps_buf_t u = PS_BUF_INIT;
    ps_buf_append(&u, prefix, pl);
    ps_buf_append(&u, s, n);
    size_t at = out->len;
    ps_redact_url((const char *)u.data, u.len, out);
    memmove(out->data + at, out->data + at + pl, out->len - at - pl);
    out->len -= pl;
    ps_buf_dispose(&u);
}

void ps_redact_value(const char *name, size_t nl, const char *value, size_t vl, ps_buf_t *out)
{
    if (ps_secret_name(name, nl))
        ps_buf_append(out, PS_SECRET, strlen(PS_SECRET));
    else if (memmem(value, vl, "://", 3) != NULL)
        ps_redact_url(value, vl, out);
    else if (nl == 11 && memcmp(name, "__address__", 11) == 0)
        redact_as("x://", value, vl, out); /* "user:pw@host:port": SD may hand one in (dropped, but shown) */
    else if (nl == 16 && memcmp(name, "__profile_path__", 16) == 0)
        redact_as("x://h", value, vl, out); /* "/p?token=t" */
    else
        ps_buf_append(out, value, vl);
}

char *ps_redact_url_arena(ps_arena_t *a, const char *url)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_redact_url(url, strlen(url), &b);
    char *r = ps_arena_strndup(a, b.len ? (const char *)b.data : "", b.len);
    ps_buf_dispose(&b);
    return r;
}
