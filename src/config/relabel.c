/*
 * relabel.c - Prometheus relabeling (model/relabel/relabel.go) over a ps_labels_t kept sorted by
 * name, edited with ps_labels_set / ps_labels_del, new strings from an arena (docs/protocols.md).
 *
 * Per rule, the input value is the values of source_labels (a missing label is "") joined by the
 * separator. Then, by action:
 *   replace    if the regex matches the value: expand target_label and replacement with the
 *              captures; a target that is not a valid label name does nothing; an empty result
 *              deletes the target label. No match: nothing. Fast path (as Prometheus): an empty
 *              value with the default regex "(.*)" and no '$' in target_label or replacement sets
 *              target = replacement directly.
 *   keep/drop  keep (drop) the target when the regex matches the value, drop (keep) otherwise.
 *   keepequal/dropequal  compare the value with the target_label's value (missing = "").
 *   hashmod    target = md5(value): the last 8 bytes as a big-endian uint64, % modulus, in
 *              decimal. Prometheus: binary.BigEndian.Uint64(sum[8:]) % Modulus.
 *   labelmap   for each label name the regex matches (on a snapshot of the set, in name order):
 *              set name' = expansion of replacement to the label's value. (Go does
 *              ReplaceAllString; with an anchored regex that is the expansion of the one match.)
 *              A name' that is not a valid label name is skipped.
 *   labeldrop/labelkeep  delete the labels whose names match / do not match.
 *   lowercase/uppercase  target = the value case-mapped (see below).
 * Setting a label to "" deletes it, as labels.Builder.Set does.
 *
 * Regexes. config.c compiles each regex with ps_regex_compile (parser/regex.h) with
 * PS_REGEX_CAPTURE | PS_REGEX_INVALID_UTF: ^(?s:<re>)$ as Prometheus writes it, except that a regex
 * cannot break out of the group ("a)|(b" is an error instead of meaning "^(?s:a)|(b)$"), and a
 * subject of invalid UTF-8 can still match. Capture numbering is the user's. RE2 versus PCRE2 as
 * in parser/regex.c: PCRE2 accepts more syntax, and backtracks, so matches run under limits
 * (regex.h: match 1,000,000, depth 10,000, heap 16 MiB); a match that fails with any error, limits
 * included, counts as "no match".
 *
 * Expansion is Go's Regexp.Expand: "$$" is "$"; "$name" takes the longest run of letters,
 * digits and '_' ("$1x" is the group named "1x", usually empty: write "${1}x"); "${name}";
 * a number is a group index (leading zeros make it a name); an unknown or unset group is "";
 * a '$' not followed by a valid reference is kept literally. Go counts any Unicode letter or digit
 * as part of a name; we count every non-ASCII character (so "$1é" is the group named "1é" in
 * both, but "$1€" is too here, where Go reads group 1 then "€").
 *
 * lowercase/uppercase: Go's strings.ToLower/ToUpper map every Unicode letter; we map ASCII,
 * Latin-1, Latin Extended-A, Greek, Cyrillic and Armenian, which covers label values in
 * practice, and leave other characters (and invalid UTF-8 bytes) unchanged.
 *
 * Thread safety: rules are read-only; each call allocates its own match data.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/* > 0 (the number of offset pairs set) on a match, 0 otherwise (no match or any error). */
static int re_match(const ps_relabel_t *r, const char *s, size_t n, ps_regex_match_t *md)
{
    if (r->re == NULL)
        return 0; /* not compiled (rules come from config.c, which always compiles) */
    int rc = ps_regex_match(r->re, s, n, md);
    return rc > 0 ? rc : 0;
}

static bool name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch >= 0x80;
}

/* Appends the captured group g (if set) of subj. */
static void put_group(ps_buf_t *out, const char *subj, const size_t *ov, int nset, long g)
{
    if (g < 0 || g >= nset || ov[2 * g] == PS_REGEX_UNSET)
        return;
    ps_buf_append(out, subj + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
}

/* Go's Regexp.ExpandString(dst, template, src, match) for the match in md (nset pairs set). */
static void expand(ps_buf_t *out, const char *t, const ps_relabel_t *r, const char *subj, ps_regex_match_t *md,
                   int nset)
{
    const size_t *ov = ps_regex_ovector(md);
    for (;;) {
        const char *d = strchr(t, '$');
        if (d == NULL) {
            ps_buf_append(out, t, strlen(t));
            return;
        }
        ps_buf_append(out, t, (size_t)(d - t));
        t = d + 1;
        if (*t == '$') {
            ps_buf_putc(out, '$');
            t++;
            continue;
        }
        const char *s = t;
        bool brace = *s == '{';
        if (brace)
            s++;
        size_t i = 0;
        while (s[i] != '\0' && name_char((unsigned char)s[i]))
            i++;
        if (i == 0 || (brace && s[i] != '}')) {
            ps_buf_putc(out, '$'); /* malformed: the '$' is literal text */
            continue;
        }
        const char *rest = s + i + (brace ? 1 : 0);
        long num = 0;
        for (size_t k = 0; k < i; k++) {
            if (s[k] < '0' || s[k] > '9' || num >= 100000000) {
                num = -1;
                break;
            }
            num = num * 10 + (s[k] - '0');
        }
        if (s[0] == '0' && i > 1)
            num = -1;
        if (num >= 0) {
            put_group(out, subj, ov, nset, num);
        } else if (i < 256) {
            char name[256];
            memcpy(name, s, i);
            name[i] = '\0';
            int g = ps_regex_group_number(r->re, name);
            if (g > 0)
                put_group(out, subj, ov, nset, g);
        }
        t = rest;
    }
}

/* ---- case mapping ---- */

typedef struct case_range {
    uint32_t lo, hi; /* upper-case code points */
    int32_t delta;   /* lower = upper + delta */
    bool alt;        /* only code points with lo's parity are upper case (pairs U+0100/U+0101 ...) */
} case_range_t;

static const case_range_t case_ranges[] = {
    {0x41, 0x5a, 32, false},   {0xc0, 0xd6, 32, false},   {0xd8, 0xde, 32, false},   {0x100, 0x12f, 1, true},
    {0x132, 0x137, 1, true},   {0x139, 0x148, 1, true},   {0x14a, 0x177, 1, true},   {0x179, 0x17e, 1, true},
    {0x391, 0x3a1, 32, false}, {0x3a3, 0x3ab, 32, false}, {0x400, 0x40f, 80, false}, {0x410, 0x42f, 32, false},
    {0x460, 0x481, 1, true},   {0x48a, 0x4bf, 1, true},   {0x531, 0x556, 48, false},
};
/* one-way mappings (Go's unicode.ToLower / ToUpper) */
static const uint32_t to_lower_extra[][2] = {{0x130, 0x69}, {0x178, 0xff}};
static const uint32_t to_upper_extra[][2] = {{0xff, 0x178}, {0xb5, 0x39c}, {0x131, 0x49}, {0x17f, 0x53}, {0x3c2, 0x3a3}};

static uint32_t map_case(uint32_t cp, bool upper)
{
    size_t nr = sizeof(case_ranges) / sizeof(case_ranges[0]);
    if (!upper) {
        for (size_t i = 0; i < nr; i++) {
            const case_range_t *r = &case_ranges[i];
            if (cp >= r->lo && cp <= r->hi && (!r->alt || (cp & 1) == (r->lo & 1)))
                return cp + (uint32_t)r->delta;
        }
        for (size_t i = 0; i < sizeof(to_lower_extra) / sizeof(to_lower_extra[0]); i++)
            if (to_lower_extra[i][0] == cp)
                return to_lower_extra[i][1];
    } else {
        for (size_t i = 0; i < nr; i++) {
            const case_range_t *r = &case_ranges[i];
            uint32_t u = cp - (uint32_t)r->delta;
            if (cp >= (uint32_t)r->delta && u >= r->lo && u <= r->hi && (!r->alt || (u & 1) == (r->lo & 1)))
                return u;
        }
        for (size_t i = 0; i < sizeof(to_upper_extra) / sizeof(to_upper_extra[0]); i++)
            if (to_upper_extra[i][0] == cp)
                return to_upper_extra[i][1];
    }
    return cp;
}

/* Decodes one UTF-8 character at s (n > 0 bytes left): its length, or 0 if invalid. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    size_t len = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    uint32_t v = s[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if ((len == 2 && v < 0x80) || (len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10ffff ||
        (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return len;
}


static void change_case(ps_buf_t *out, const char *s, size_t n, bool upper)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t len = utf8_decode(p + i, n - i, &cp);
        if (len == 0) {
            ps_buf_putc(out, p[i++]); /* invalid byte: unchanged */
            continue;
        }
        ps_buf_put_utf8(out, map_case(cp, upper));
        i += len;
    }
}

/* ---- the actions ---- */

typedef struct work {
    ps_regex_match_t *md;
    ps_buf_t val, tmp, res;
} work_t;

static const char *buf_str(ps_buf_t *b)
{
    ps_buf_putc(b, '\0');
    b->len--;
    return (const char *)b->data;
}

static bool relabel(const ps_relabel_t *r, ps_labels_t *ls, ps_arena_t *arena, work_t *w)
{
    ps_buf_reset(&w->val);
    for (uint32_t i = 0; i < r->nsource; i++) {
        if (i > 0)
            ps_buf_append(&w->val, r->separator, strlen(r->separator));
        const ps_label_pair_t *p = ps_labels_get(ls, r->source_labels[i]);
        if (p != NULL)
            ps_buf_append(&w->val, p->value, p->vlen);
    }
    const char *val = buf_str(&w->val);
    size_t vlen = w->val.len;
    const char *target = r->target_label != NULL ? r->target_label : "";
    size_t tlen = strlen(target);

    switch (r->action) {
    case PS_RELABEL_DROP:
        return re_match(r, val, vlen, w->md) == 0;
    case PS_RELABEL_KEEP:
        return re_match(r, val, vlen, w->md) > 0;
    case PS_RELABEL_DROPEQUAL:
    case PS_RELABEL_KEEPEQUAL: {
        const ps_label_pair_t *p = ps_labels_get(ls, target);
        bool equal = p != NULL ? (p->vlen == vlen && memcmp(p->value, val, vlen) == 0) : vlen == 0;
        return r->action == PS_RELABEL_KEEPEQUAL ? equal : !equal;
    }
    case PS_RELABEL_REPLACE: {
        if (vlen == 0 && strcmp(r->regex, "(.*)") == 0 && strchr(target, '$') == NULL &&
            strchr(r->replacement, '$') == NULL) {
            ps_labels_set(ls, arena, target, tlen, r->replacement, strlen(r->replacement));
            break;
        }
        int nset = re_match(r, val, vlen, w->md);
        if (nset == 0)
            break;
        ps_buf_reset(&w->tmp);
        expand(&w->tmp, target, r, val, w->md, nset);
        if (!ps_label_name_valid((const char *)w->tmp.data, w->tmp.len))
            break;
        ps_buf_reset(&w->res);
        expand(&w->res, r->replacement, r, val, w->md, nset);
        ps_labels_set(ls, arena, (const char *)w->tmp.data, w->tmp.len, (const char *)w->res.data, w->res.len);
        break;
    }
    case PS_RELABEL_LOWERCASE:
    case PS_RELABEL_UPPERCASE:
        ps_buf_reset(&w->res);
        change_case(&w->res, val, vlen, r->action == PS_RELABEL_UPPERCASE);
        ps_labels_set(ls, arena, target, tlen, (const char *)w->res.data, w->res.len);
        break;
    case PS_RELABEL_HASHMOD: {
        unsigned char sum[EVP_MAX_MD_SIZE];
        unsigned int slen = 0;
        if (EVP_Digest(val, vlen, sum, &slen, EVP_md5(), NULL) != 1 || slen != 16)
            return false; /* config.c checked at load that MD5 works */
        uint64_t h = 0;
        for (int i = 8; i < 16; i++)
            h = (h << 8) | sum[i];
        char num[24];
        int n = snprintf(num, sizeof(num), "%llu", (unsigned long long)(h % r->modulus));
        ps_labels_set(ls, arena, target, tlen, num, (size_t)n);
        break;
    }
    case PS_RELABEL_LABELMAP: {
        /* iterate a snapshot: Set during the walk does not change what is walked (Builder.Range) */
        uint32_t n = ls->n;
        ps_label_pair_t *snap = ps_xmalloc((n > 0 ? n : 1) * sizeof(ps_label_pair_t));
        if (n > 0)
            memcpy(snap, ls->pairs, n * sizeof(ps_label_pair_t));
        for (uint32_t i = 0; i < n; i++) {
            int nset = re_match(r, snap[i].name, snap[i].nlen, w->md);
            if (nset == 0)
                continue;
            ps_buf_reset(&w->res);
            expand(&w->res, r->replacement, r, snap[i].name, w->md, nset);
            if (ps_label_name_valid((const char *)w->res.data, w->res.len))
                ps_labels_set(ls, arena, (const char *)w->res.data, w->res.len, snap[i].value, snap[i].vlen);
        }
        free(snap);
        break;
    }
    case PS_RELABEL_LABELDROP:
    case PS_RELABEL_LABELKEEP: {
        bool drop_matching = r->action == PS_RELABEL_LABELDROP;
        for (uint32_t i = ls->n; i-- > 0;) {
            const ps_label_pair_t *p = &ls->pairs[i];
            if ((re_match(r, p->name, p->nlen, w->md) > 0) == drop_matching)
                ps_labels_del(ls, arena, p->name, p->nlen);
        }
        break;
    }
    }
    return true;
}

bool ps_relabel_process(const ps_relabel_t *rules, uint32_t n, ps_labels_t *ls, ps_arena_t *arena)
{
    if (n == 0)
        return true;
    uint32_t pairs = 1;
    for (uint32_t i = 0; i < n; i++)
        if (rules[i].re != NULL && ps_regex_groups(rules[i].re) + 1 > pairs)
            pairs = ps_regex_groups(rules[i].re) + 1;
    work_t w;
    memset(&w, 0, sizeof(w));
    w.md = ps_regex_match_new(pairs);
    bool keep = true;
    for (uint32_t i = 0; i < n && keep; i++)
        keep = relabel(&rules[i], ls, arena, &w);
    ps_regex_match_free(w.md);
    ps_buf_dispose(&w.val);
    ps_buf_dispose(&w.tmp);
    ps_buf_dispose(&w.res);
    return keep;
}
