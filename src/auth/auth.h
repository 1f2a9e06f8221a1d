/*
 * auth.h - credential checking for the HTTP API: basic auth against bcrypt hashes (libxcrypt's
 * crypt_r, verified credentials cached), bearer tokens against their SHA-256 digests (constant
 * time), each with the scopes it grants. Built from a web configuration (config/webconfig.h);
 * immutable once built except for its caches, so every HTTP thread may share one.
 */
#ifndef PS_AUTH_H
#define PS_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/webconfig.h"

typedef struct ps_auth ps_auth_t;

/** The verdicts of ps_auth_check. */
typedef enum {
    PS_AUTH_OK = 0,        /* *scopes says what the caller may do */
    PS_AUTH_MISSING,       /* no Authorization header */
    PS_AUTH_MALFORMED,     /* not "Basic <base64 user:password>" or "Bearer <token>" */
    PS_AUTH_UNSUPPORTED,   /* a scheme this configuration does not take (Bearer without tokens, ...) */
    PS_AUTH_INVALID,       /* wrong user, password or token */
    PS_AUTH_PENDING,       /* ps_auth_check_quick: only a bcrypt computation can tell (ps_auth_check) */
} ps_auth_verdict_t;

/** A checker for wc's basic_auth_users and bearer_tokens (copied: wc may be freed after), or
 *  NULL when wc has neither (no authentication). */
ps_auth_t *ps_auth_new(const ps_webconfig_t *wc);
/** ps_auth_free(NULL) is a no-op. */
void ps_auth_free(ps_auth_t *a);
/** Checks the value of an Authorization header (hdr NULL: absent). Basic users get every scope
 *  (PS_SCOPE_ALL: they are the operator, as in Prometheus); a token gets its own. A bcrypt check
 *  costs milliseconds (one at a time, process-wide); its verdict for this user, hash and password
 *  is cached (a SHA-256 of the three is the key), so a client sending the same credentials pays it
 *  once. Thread-safe. */
ps_auth_verdict_t ps_auth_check(ps_auth_t *a, const char *hdr, size_t len, unsigned *scopes);
/** ps_auth_check without the bcrypt computation: the verdict when it needs none (no or malformed
 *  credentials, a token, a cached verdict), else PS_AUTH_PENDING, for ps_auth_check on a thread
 *  that may spend the milliseconds (web/access.c keeps them off the event loops). Thread-safe. */
ps_auth_verdict_t ps_auth_check_quick(ps_auth_t *a, const char *hdr, size_t len, unsigned *scopes);
/** The scheme a 401 offers in WWW-Authenticate: "Basic" when there are basic_auth_users (as
 *  Prometheus; bearer tokens are still taken), else "Bearer". */
const char *ps_auth_challenge(const ps_auth_t *a);
/** A short reason for a verdict, for the error body ("no credentials", ...). */
const char *ps_auth_verdict_str(ps_auth_verdict_t v);

/** The bcrypt cost an unknown user's check pays: the largest cost of the users' hashes (at least
 *  10), so that its time is a user's; 0 for NULL. */
int ps_auth_unknown_user_cost(const ps_auth_t *a);

/** Counters: bcrypt computations and cache hits since ps_auth_new (for tests and benches). */
void ps_auth_stats(ps_auth_t *a, uint64_t *bcrypts, uint64_t *cache_hits);

#endif
