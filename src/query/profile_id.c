/*
 * profile_id.c - the id of every stored profile as UUID text (query.h "profile ids"; the layout is
 * docs/api.md "Profile ids"): derived from the profile's series id and timestamp, which never
 * change and are never reused, so an id costs no stored byte and names one profile forever.
 */
#include "query.h"

#include <string.h>
#include <stdlib.h>
#include <strings.h>

#include "query_int.h"

/*
 * The 128 bits, big-endian, of the id of the profile of series S at T (ns since 1970 as int64,
 * taken as its 64-bit two's complement): UUID version 8 (custom) with RFC 9562's variant,
 *
 *   bytes 0-5   T >> 16                       byte 6   0x80 | (T >> 12) & 0x0f
 *   byte 7      (T >> 4) & 0xff               byte 8   0x80 | (T & 0x0f) << 2 | S >> 56
 *   bytes 9-15  S & (2^56 - 1)
 *
 * so T's 64 bits and S's low 58 bits fit beside the 6 fixed bits, and ids of profiles after 1970
 * sort by time as text.
 */
bool ps_profile_uuid_make(uint64_t sid, int64_t ts, uint8_t u[16])
{
    if (sid > PS_PROFILE_ID_MAX_SID)
        return false;
    uint64_t t = (uint64_t)ts;
    for (int i = 0; i < 6; i++)
        u[i] = (uint8_t)(t >> (56 - 8 * i));
    u[6] = (uint8_t)(0x80 | ((t >> 12) & 0x0f));
    u[7] = (uint8_t)(t >> 4);
    u[8] = (uint8_t)(0x80 | ((t & 0x0f) << 2) | (sid >> 56));
    for (int i = 9; i < 16; i++)
        u[i] = (uint8_t)(sid >> (8 * (15 - i)));
    return true;
}

bool ps_profile_uuid_split(const uint8_t u[16], uint64_t *sid, int64_t *ts)
{
    if ((u[6] & 0xf0) != 0x80 || (u[8] & 0xc0) != 0x80)
        return false;
    uint64_t t = 0, s = u[8] & 0x03;
    for (int i = 0; i < 6; i++)
        t = t << 8 | u[i];
    t = t << 4 | (u[6] & 0x0f);
    t = t << 8 | u[7];
    t = t << 4 | ((u[8] >> 2) & 0x0f);
    for (int i = 9; i < 16; i++)
        s = s << 8 | u[i];
    *sid = s;
    *ts = (int64_t)t;
    return true;
}

void ps_profile_uuid_text(const uint8_t u[16], char out[PS_PROFILE_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[k++] = '-';
        out[k++] = hex[u[i] >> 4];
        out[k++] = hex[u[i] & 0x0f];
    }
    out[k] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int ps_profile_uuid_scan(const char *s, size_t n, uint8_t u[16])
{
    /* the forms Go's uuid.Parse (Pyroscope's) takes: 36 characters, in braces, after urn:uuid:, or 32 hex digits */
    if (n == 45 && strncasecmp(s, "urn:uuid:", 9) == 0) {
        s += 9;
        n -= 9;
    } else if (n == 38 && s[0] == '{' && s[37] == '}') {
        s++;
        n -= 2;
    }
    bool dashed = n == 36;
    if (!dashed && n != 32)
        return -1;
    if (dashed && (s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-'))
        return -1;
    size_t k = 0;
    for (int i = 0; i < 16; i++) {
        if (dashed && (k == 8 || k == 13 || k == 18 || k == 23))
            k++;
        int hi = hexval(s[k]), lo = hexval(s[k + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        u[i] = (uint8_t)(hi << 4 | lo);
        k += 2;
    }
    return 0;
}

int ps_query_profile_id(ps_reader_t *r, uint64_t sid, int64_t ts, char out[PS_PROFILE_ID_LEN + 1])
{
    (void)r; /* the store's own id of the profile, once it keeps client ids, is looked up here */
    uint8_t u[16];
    if (!ps_profile_uuid_make(sid, ts, u)) {
        out[0] = '\0';
        return 0;
    }
    ps_profile_uuid_text(u, out);
    return PS_PROFILE_ID_LEN;
}

/* 1 if the profile series sid holds a profile at exactly ts, 0 if not, or an error */
static int stored(ps_reader_t *r, uint64_t sid, int64_t ts, ps_err_t *err)
{
    ps_series_kind_t kind;
    int rc = ps_reader_series_kind(r, sid, &kind, err);
    if (rc == PS_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (kind != PS_SERIES_PROFILE)
        return 0;
    return ps_reader_has_data(r, sid, ts, ts, err);
}

int ps_query_profile_id_parse(ps_reader_t *r, const char *s, size_t n, const char *field, ps_profile_ref_t *out,
                              uint32_t max, uint32_t *nout, ps_err_t *err)
{
    uint8_t u[16];
    *nout = 0;
    if (ps_profile_uuid_scan(s, n, u) != 0)
        return ps_err_set(err, PS_EINVAL,
                          "%s: \"%.*s\" is not a profile id (a UUID, xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as exemplars "
                          "give them)",
                          field, n > 64 ? 64 : (int)n, s);
    uint64_t sid;
    int64_t ts;
    int rc = ps_profile_uuid_split(u, &sid, &ts) ? stored(r, sid, ts, err) : 0;
    if (rc < 0)
        return rc;
    if (rc == 0 || max == 0)
        return ps_err_set(err, PS_EINVAL, "%s: unknown profile id \"%.*s\" (no stored profile has it)", field, (int)n, s);
    out[0] = (ps_profile_ref_t){sid, ts};
    *nout = 1;
    return 0;
}

typedef struct list_ctx {
    ps_profile_entry_t *v;
    size_t n, cap, max;
    uint32_t series;
    uint64_t sid;
    ps_err_t *err;
} list_ctx_t;

static int on_listed(void *ctx, const ps_stored_profile_t *p)
{
    list_ctx_t *c = ctx;
    if (c->n == c->max)
        return ps_err_set(c->err, PS_ELIMIT,
                          "the range holds more than %zu profiles of the selected series: narrow the selector or the "
                          "range",
                          c->max);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->v = ps_xrealloc(c->v, c->cap * sizeof(*c->v));
    }
    c->v[c->n++] = (ps_profile_entry_t){{c->sid, p->ts}, p->total, c->series};
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const ps_profile_entry_t *x = a, *y = b;
    if (x->ref.ts != y->ref.ts)
        return x->ref.ts < y->ref.ts ? -1 : 1;
    return x->ref.sid < y->ref.sid ? -1 : x->ref.sid > y->ref.sid;
}

int ps_query_profile_list(ps_reader_t *r, ps_selector_t *sel, int64_t start, int64_t end, uint32_t max_series,
                          uint32_t max, ps_arena_t *arena, ps_series_set_t *set, ps_profile_entry_t **out,
                          uint32_t *n, ps_err_t *err)
{
    *out = NULL;
    *n = 0;
    int ret = ps_query_select(r, sel, start, end, max_series, arena, set, err);
    list_ctx_t c = {.max = max, .err = err};
    for (uint32_t i = 0; i < set->n && ret == 0; i++) {
        ps_series_kind_t kind;
        ret = ps_reader_series_kind(r, set->sids[i], &kind, err);
        if (ret == PS_ENOTFOUND || (ret == 0 && kind != PS_SERIES_PROFILE)) {
            ret = 0;
            continue;
        }
        c.series = i;
        c.sid = set->sids[i];
        if (ret == 0)
            ret = ps_reader_profiles(r, set->sids[i], start, end, true, on_listed, &c, err);
    }
    if (ret == 0 && c.n > 0) {
        qsort(c.v, c.n, sizeof(*c.v), cmp_entry);
        *out = ps_arena_alloc(arena, c.n * sizeof(**out));
        memcpy(*out, c.v, c.n * sizeof(**out));
        *n = (uint32_t)c.n;
    }
    free(c.v);
    return ret;
}
