/*
 * perfscript.c - `perf script` output (stacks.h), as Linux perf prints the samples of
 * `perf record -g`:
 *
 *   prog 4242 [001] 12345.678901:     250000 cpu-clock:ppp:      <- header: comm pid[/tid] ...
 *   	    55d4c0a0113d busy+0x14 (/tmp/prog)                    <- frames, leaf first:
 *   	    55d4c0a01170 main+0x20 (/tmp/prog)                       blank, address, symbol,
 *   	    7f3c2a229d90 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)  " (dso)"
 *                                                                 <- an empty line ends the event
 *
 * The header is read as Pyroscope's perf converter reads it: the command name is the shortest
 * prefix (it may hold spaces: "V8 WorkerThread") followed by blanks, the pid (digits, "/tid"
 * optional), blanks and at least two more characters. A frame line starts with a blank; its
 * address is hex, the symbol runs to the last " (" whose dso ends the line (a line without
 * " (dso)" is all symbol). Beyond Pyroscope, which keeps "busy+0x14" as the frame, the
 * "+0x<hex>" offset is cut so that one function is one node, as stackcollapse-perf.pl does; a
 * header followed straight by another header (perf script without callchains) is an event of its
 * command alone; '#' lines outside events (perf script --header) are comments. Identical stacks
 * are one sample, their events counted.
 */
#include <string.h>

#include "stacks.h"

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool hexdigit(char c)
{
    return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* the command name's length when s[0..n) is an event header, else 0 */
static size_t header(const char *s, size_t n)
{
    if (n == 0 || blank(s[0]))
        return 0;
    for (size_t k = 1; k < n; k++) {
        if (!blank(s[k]) || blank(s[k - 1])) /* a try per run of blanks: later ones end the same */
            continue;
        size_t j = k;
        while (j < n && blank(s[j]))
            j++;
        size_t d = j;
        while (j < n && digit(s[j]))
            j++;
        if (j == d)
            continue;
        if (j < n && s[j] == '/') {
            size_t t = ++j;
            while (j < n && digit(s[j]))
                j++;
            if (j == t)
                continue;
        }
        if (j == n || !blank(s[j]))
            continue;
        while (j < n && blank(s[j]))
            j++;
        if (n - j >= 2)
            return k;
    }
    return 0;
}

/* the symbol of frame line s[0..n) (it starts with a blank) into *sym, *sl; false when it is not one */
static bool frame(const char *s, size_t n, const char **sym, size_t *sl)
{
    size_t i = 0;
    while (i < n && blank(s[i]))
        i++;
    size_t a = i;
    while (i < n && hexdigit(s[i]))
        i++;
    if (i == a || i == n || !blank(s[i]))
        return false;
    while (i < n && blank(s[i]))
        i++;
    while (n > i && blank(s[n - 1]))
        n--;
    if (i == n)
        return false;
    size_t e = n;
    if (s[n - 1] == ')')
        for (size_t k = n - 1; k > i; k--) {
            if (blank(s[k]))
                break;
            if (s[k] == '(' && k - 1 > i && s[k - 1] == ' ') {
                e = k - 1;
                break;
            }
        }
    while (e > i && blank(s[e - 1]))
        e--;
    /* perf's offset: "+0x" and hex digits at the end */
    for (size_t k = e; k > i; k--) {
        if (s[k - 1] == '+') {
            if (k + 2 < e && s[k] == '0' && s[k + 1] == 'x') {
                size_t h = k + 2;
                while (h < e && hexdigit(s[h]))
                    h++;
                if (h == e && k - 1 > i)
                    e = k - 1;
            }
            break;
        }
        if (!hexdigit(s[k - 1]) && s[k - 1] != 'x')
            break;
    }
    *sym = s + i;
    *sl = e - i;
    return true;
}

int ps_perf_detect(const void *data, size_t n)
{
    const char *s = data;
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n, le = e;
        if (le > i && s[le - 1] == '\r')
            le--;
        if (le > i && s[i] != '#') {
            if (header(s + i, le - i) == 0)
                return 0;
            if (e >= n)
                return 1;
            size_t j = e + 1; /* the next line: a frame (a blank first), empty, or the end */
            return j >= n || blank(s[j]) || s[j] == '\n' || s[j] == '\r';
        }
        i = e + 1;
    }
    return 0;
}

typedef struct perf {
    ps_stacks_t b;
    ps_hmap_t seen;    /* stack (its location indexes' bytes) -> sample index */
    uint32_t *stack;   /* the event's frames: comm, then leaf first */
    uint32_t depth;
    size_t event_line; /* the header's line; 0: not in an event */
} perf_t;

static int end_event(perf_t *f, ps_err_t *err)
{
    if (f->event_line == 0)
        return 0;
    uint32_t *st = f->stack;
    for (uint32_t a = 1, z = f->depth - 1; a < z; a++, z--) { /* root first: comm, outermost, ..., leaf */
        uint32_t t = st[a];
        st[a] = st[z];
        st[z] = t;
    }
    size_t bytes = (size_t)f->depth * sizeof(uint32_t);
    uint64_t si;
    ps_profile_t *p = f->b.p;
    if (ps_hmap_get(&f->seen, st, bytes, &si))
        p->samples[si].values[0]++;
    else {
        int ret = ps_stacks_sample(&f->b, st, f->depth, 1, err);
        if (ret != 0)
            return ps_err_prefix(err, "line %zu: the event", f->event_line);
        ps_hmap_put(&f->seen, st, bytes, p->nsamples - 1);
    }
    f->event_line = 0;
    return 0;
}

int ps_perf_parse(const void *data, size_t n, const ps_stacks_limits_t *lim, ps_arena_t *arena, ps_profile_t *p,
                  ps_err_t *err)
{
    perf_t f;
    memset(&f, 0, sizeof(f));
    ps_stacks_init(&f.b, lim, arena, p, "samples", "count");
    ps_hmap_init(&f.seen);
    f.stack = ps_arena_alloc(arena, ((size_t)lim->max_stack_depth + 2) * sizeof(uint32_t));
    const char *s = data;
    size_t line = 0;
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n, le = e;
        const char *l = s + i;
        line++;
        i = e + 1;
        if (le > (size_t)(l - s) && s[le - 1] == '\r')
            le--;
        size_t ln = le - (size_t)(l - s), k = 0;
        while (k < ln && blank(l[k]))
            k++;
        if (k == ln) { /* an empty line ends the event */
            ret = end_event(&f, err);
            continue;
        }
        if (l[0] == '#' && f.event_line == 0)
            continue;
        uint32_t loc;
        if (!blank(l[0])) {
            if ((ret = end_event(&f, err)) != 0)
                break;
            size_t cl = header(l, ln);
            if (cl == 0) {
                ret = ps_err_set(err, PS_EINVAL, "line %zu: \"%.*s\" is not an event header (expected \"command "
                                 "pid[/tid] ...\", then its frames)", line, (int)(ln < 40 ? ln : 40), l);
                break;
            }
            if ((ret = ps_stacks_frame(&f.b, l, cl, &loc, err)) != 0) {
                ps_err_prefix(err, "line %zu: the command", line);
                break;
            }
            f.stack[0] = loc;
            f.depth = 1;
            f.event_line = line;
            continue;
        }
        const char *sym;
        size_t sl;
        if (f.event_line == 0) {
            ret = ps_err_set(err, PS_EINVAL, "line %zu: a frame outside an event (an event header comes first)", line);
            break;
        }
        if (!frame(l, ln, &sym, &sl)) {
            ret = ps_err_set(err, PS_EINVAL, "line %zu: \"%.*s\" is not a stack frame (expected \"address symbol "
                             "(dso)\")", line, (int)(ln - k < 40 ? ln - k : 40), l + k);
            break;
        }
        if (f.depth >= lim->max_stack_depth) { /* the command is a frame too */
            ret = ps_err_set(err, PS_ETOOBIG, "line %zu: the event of line %zu has more than %u frames", line,
                             f.event_line, lim->max_stack_depth);
            break;
        }
        if ((ret = ps_stacks_frame(&f.b, sym, sl, &loc, err)) != 0) {
            ps_err_prefix(err, "line %zu", line);
            break;
        }
        f.stack[f.depth++] = loc;
    }
    if (ret == 0)
        ret = end_event(&f, err);
    if (ret == 0 && p->nsamples == 0)
        ret = ps_err_set(err, PS_EINVAL, "no events (expected `perf script` output: an event header line, then its "
                         "frames)");
    ps_hmap_dispose(&f.seen);
    ps_stacks_dispose(&f.b);
    return ret;
}
