/*
 * auth.c - see auth.h.
 *
 * Basic auth. "Basic " (scheme case-insensitive) + standard base64 of "user:password" (split at
 * the first ':', as Go's r.BasicAuth); a password with a NUL byte never matches (crypt_r takes C
 * strings). The check runs bcrypt (crypt_r with the stored hash as setting) and compares the
 * result with the hash in constant time; an unknown user is checked against a fixed hash
 * anyway, at the largest cost of the configured users' hashes (bcrypt's time doubles with each
 * step of cost: a fixed cost 10 beside users at cost 12 answered unknown users 4x faster), so
 * timing does not tell which users exist. One bcrypt
 * runs at a time in the process (a mutex, as exporter-toolkit's bcryptMtx): a flood of wrong
 * passwords costs one core, not all of them.
 *
 * The cache. Key: SHA-256(user \0 hash \0 password), so the password itself is never kept and a
 * changed hash misses. Two direct-mapped tables (slot = the key's first bytes): verified
 * credentials (CACHE_OK slots) and refused ones (CACHE_BAD slots), apart so that a client trying
 * many wrong passwords cannot evict the right ones; a repeated wrong password is refused
 * without bcrypt. Lookups compare keys with CRYPTO_memcmp.
 *
 * Bearer tokens. "Bearer " + the token; its SHA-256 is compared with every configured digest in
 * constant time (no early exit), the scopes of the match returned.
 */
#include "auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/encode.h"
#include "core/mem.h"

#define CACHE_OK 256
#define CACHE_BAD 64
#define MAX_CRED 4096 /* longest Authorization value looked at */

/* bcrypt of "fakepassword": what an unknown user's password is checked against, its cost
 * (characters 4 and 5) replaced by the users' largest (crypt_r takes only the cost and salt of it) */
static const char fake_hash[] = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
#define COST_AT 4

typedef struct slot {
    uint8_t key[32];
    bool used;
} slot_t;

typedef struct user {
    char *name, *hash;
} user_t;

struct ps_auth {
    char fake[sizeof(fake_hash)]; /* fake_hash at the users' largest cost */
    user_t *users;
    uint32_t nusers, ntokens;
    ps_webconfig_token_t *tokens;
    pthread_mutex_t cache_mu;
    slot_t ok[CACHE_OK], bad[CACHE_BAD];
    atomic_uint_fast64_t bcrypts, hits;
};

static pthread_mutex_t bcrypt_mu = PTHREAD_MUTEX_INITIALIZER;

ps_auth_t *ps_auth_new(const ps_webconfig_t *wc)
{
    if (!ps_webconfig_has_auth(wc))
        return NULL;
    ps_auth_t *a = ps_xcalloc(1, sizeof(*a));
    pthread_mutex_init(&a->cache_mu, NULL);
    a->nusers = wc->nusers;
    a->users = ps_xcalloc(wc->nusers + 1, sizeof(*a->users));
    for (uint32_t i = 0; i < wc->nusers; i++) {
        a->users[i].name = ps_xstrndup(wc->users[i].name, strlen(wc->users[i].name));
        a->users[i].hash = ps_xstrndup(wc->users[i].hash, strlen(wc->users[i].hash));
    }
    memcpy(a->fake, fake_hash, sizeof(fake_hash));
    for (uint32_t i = 0; i < a->nusers; i++) {
        const char *h = a->users[i].hash; /* shape checked by webconfig: $2?$NN$... */
        if (strlen(h) > COST_AT + 2 && memcmp(h + COST_AT, a->fake + COST_AT, 2) > 0)
            memcpy(a->fake + COST_AT, h + COST_AT, 2);
    }
    a->ntokens = wc->ntokens;
    a->tokens = ps_xcalloc(wc->ntokens + 1, sizeof(*a->tokens));
    for (uint32_t i = 0; i < wc->ntokens; i++) {
        a->tokens[i] = wc->tokens[i];
        a->tokens[i].name = ""; /* not kept: wc's arena goes away */
    }
    return a;
}

void ps_auth_free(ps_auth_t *a)
{
    if (a == NULL)
        return;
    for (uint32_t i = 0; i < a->nusers; i++) {
        OPENSSL_cleanse(a->users[i].hash, strlen(a->users[i].hash));
        free(a->users[i].name);
        free(a->users[i].hash);
    }
    free(a->users);
    OPENSSL_cleanse(a->tokens, a->ntokens * sizeof(*a->tokens));
    free(a->tokens);
    pthread_mutex_destroy(&a->cache_mu);
    free(a);
}

const char *ps_auth_challenge(const ps_auth_t *a)
{
    return a != NULL && a->nusers == 0 ? "Bearer" : "Basic";
}

const char *ps_auth_verdict_str(ps_auth_verdict_t v)
{
    switch (v) {
    case PS_AUTH_OK: return "authenticated";
    case PS_AUTH_MISSING: return "no credentials: send an Authorization header (basic auth or a bearer token)";
    case PS_AUTH_MALFORMED: return "malformed Authorization header (expected \"Basic <base64 user:password>\" or \"Bearer <token>\")";
    case PS_AUTH_UNSUPPORTED: return "this server takes no credentials of that scheme";
    case PS_AUTH_PENDING: return "credentials not checked yet";
    default: return "invalid credentials";
    }
}

int ps_auth_unknown_user_cost(const ps_auth_t *a)
{
    return a == NULL ? 0 : (a->fake[COST_AT] - '0') * 10 + (a->fake[COST_AT + 1] - '0');
}

void ps_auth_stats(ps_auth_t *a, uint64_t *bcrypts, uint64_t *hits)
{
    *bcrypts = a ? atomic_load(&a->bcrypts) : 0;
    *hits = a ? atomic_load(&a->hits) : 0;
}

/* ---- the cache ---- */

static bool cache_has(ps_auth_t *a, slot_t *tab, size_t n, const uint8_t key[32])
{
    slot_t *s = &tab[(key[0] | (size_t)key[1] << 8) % n];
    pthread_mutex_lock(&a->cache_mu);
    bool hit = s->used && CRYPTO_memcmp(s->key, key, 32) == 0;
    pthread_mutex_unlock(&a->cache_mu);
    return hit;
}

static void cache_put(ps_auth_t *a, slot_t *tab, size_t n, const uint8_t key[32])
{
    slot_t *s = &tab[(key[0] | (size_t)key[1] << 8) % n];
    pthread_mutex_lock(&a->cache_mu);
    memcpy(s->key, key, 32);
    s->used = true;
    pthread_mutex_unlock(&a->cache_mu);
}

static bool bcrypt_ok(ps_auth_t *a, const char *pass, const char *hash)
{
    struct crypt_data *d = ps_xcalloc(1, sizeof(*d));
    pthread_mutex_lock(&bcrypt_mu);
    const char *r = crypt_r(pass, hash, d);
    size_t hl = strlen(hash);
    bool ok = r != NULL && strlen(r) == hl && CRYPTO_memcmp(r, hash, hl) == 0;
    pthread_mutex_unlock(&bcrypt_mu);
    atomic_fetch_add(&a->bcrypts, 1);
    OPENSSL_cleanse(d, sizeof(*d));
    free(d);
    return ok;
}

static ps_auth_verdict_t check_basic(ps_auth_t *a, const char *b64, size_t n, bool quick, unsigned *scopes)
{
    if (a->nusers == 0)
        return PS_AUTH_UNSUPPORTED;
    uint8_t *dec = ps_xmalloc(PS_BASE64_DECODED_MAX(n) + 1);
    long dl = ps_base64_decode(b64, n, PS_B64_STRICT, dec, NULL);
    const uint8_t *colon = dl > 0 ? memchr(dec, ':', (size_t)dl) : NULL;
    if (colon == NULL) {
        free(dec);
        return PS_AUTH_MALFORMED;
    }
    dec[dl] = 0;
    size_t ul = (size_t)(colon - dec), pl = (size_t)dl - ul - 1;
    const char *user = (const char *)dec, *pass = (const char *)colon + 1;
    const user_t *u = NULL;
    for (uint32_t i = 0; i < a->nusers; i++)
        if (strlen(a->users[i].name) == ul && memcmp(a->users[i].name, user, ul) == 0)
            u = &a->users[i];
    const char *hash = u != NULL ? u->hash : a->fake;
    uint8_t key[32];
    size_t hl = strlen(hash), kl = ul + 1 + hl + 1 + pl;
    uint8_t *kb = ps_xmalloc(kl);
    memcpy(kb, user, ul);
    kb[ul] = 0;
    memcpy(kb + ul + 1, hash, hl);
    kb[ul + 1 + hl] = 0;
    memcpy(kb + ul + 2 + hl, pass, pl);
    SHA256(kb, kl, key);
    OPENSSL_cleanse(kb, kl);
    free(kb);
    bool ok;
    if (u != NULL && cache_has(a, a->ok, CACHE_OK, key)) {
        atomic_fetch_add(&a->hits, 1);
        ok = true;
    } else if (cache_has(a, a->bad, CACHE_BAD, key)) {
        atomic_fetch_add(&a->hits, 1);
        ok = false;
    } else if (quick) {
        OPENSSL_cleanse(dec, (size_t)dl);
        free(dec);
        return PS_AUTH_PENDING;
    } else {
        ok = memchr(pass, '\0', pl) == NULL && bcrypt_ok(a, pass, hash) && u != NULL;
        if (ok)
            cache_put(a, a->ok, CACHE_OK, key);
        else
            cache_put(a, a->bad, CACHE_BAD, key);
    }
    OPENSSL_cleanse(dec, (size_t)dl);
    free(dec);
    if (!ok)
        return PS_AUTH_INVALID;
    *scopes = PS_SCOPE_ALL;
    return PS_AUTH_OK;
}

static ps_auth_verdict_t check_bearer(ps_auth_t *a, const char *tok, size_t n, unsigned *scopes)
{
    if (a->ntokens == 0)
        return PS_AUTH_UNSUPPORTED;
    uint8_t d[32];
    SHA256((const unsigned char *)tok, n, d);
    unsigned found = 0;
    for (uint32_t i = 0; i < a->ntokens; i++) {
        unsigned eq = CRYPTO_memcmp(d, a->tokens[i].sha256, 32) == 0;
        found |= (0u - eq) & a->tokens[i].scopes; /* no branch on the secret */
    }
    if (found == 0)
        return PS_AUTH_INVALID;
    *scopes = found;
    return PS_AUTH_OK;
}

static ps_auth_verdict_t check(ps_auth_t *a, const char *hdr, size_t len, bool quick, unsigned *scopes)
{
    *scopes = 0;
    if (a == NULL) {
        *scopes = PS_SCOPE_ALL;
        return PS_AUTH_OK;
    }
    if (hdr == NULL)
        return PS_AUTH_MISSING;
    if (len > MAX_CRED)
        return PS_AUTH_MALFORMED;
    while (len > 0 && (hdr[len - 1] == ' ' || hdr[len - 1] == '\t'))
        len--;
    size_t sp = 0;
    while (sp < len && hdr[sp] != ' ')
        sp++;
    size_t v = sp;
    while (v < len && hdr[v] == ' ')
        v++;
    if (v >= len)
        return len == 0 ? PS_AUTH_MISSING : PS_AUTH_MALFORMED;
    if (sp == 5 && strncasecmp(hdr, "Basic", 5) == 0)
        return check_basic(a, hdr + v, len - v, quick, scopes);
    if (sp == 6 && strncasecmp(hdr, "Bearer", 6) == 0)
        return check_bearer(a, hdr + v, len - v, scopes);
    return PS_AUTH_UNSUPPORTED;
}

ps_auth_verdict_t ps_auth_check(ps_auth_t *a, const char *hdr, size_t len, unsigned *scopes)
{
    return check(a, hdr, len, false, scopes);
}

ps_auth_verdict_t ps_auth_check_quick(ps_auth_t *a, const char *hdr, size_t len, unsigned *scopes)
{
    return check(a, hdr, len, true, scopes);
}
