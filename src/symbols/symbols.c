/*
 * symbols.c - native frames from debug files through libdwfl (symbols.h).
 *
 * A lookup: the debug file of the build id is reported to a Dwfl of its own as an offline module
 * (dwfl_report_offline), the stored address becomes an ELF address (symbols.h), then the frames
 * are those eu-addr2line -i -f prints: the innermost scope's name (dwarf_getscopes: the first
 * subprogram or inlined subroutine, its linkage name first) with the line table's file and line
 * (dwfl_module_getsrc), then for each inlined subroutine of the chain (dwarf_getscopes_die) its
 * caller's name with the subroutine's DW_AT_call_file and DW_AT_call_line. With no DWARF scope,
 * the ELF symbol's name (dwfl_module_addrinfo).
 */
#include "symbols/symbols.h"

#include <ctype.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/hash.h"
#include "symbols_int.h"

#define BUILD_ID_MAX 128      /* hex digits of a build id we look up */
#define RETRY_NANOS 1000000000LL /* a build id with no usable file is looked at again after this */

typedef struct module {
    Dwfl *dwfl;          /* NULL: no usable file */
    Dwfl_Module *mod;
    GElf_Addr bias;      /* dwfl address = ELF address + bias */
    int etype;
    size_t nloads;
    GElf_Phdr *loads;    /* the PT_LOAD headers */
    /* no usable file: what stat said when it was tried, and when */
    int64_t tried_at;
    struct timespec mtime;
    off_t size;
    int stat_ok;
    uint64_t landed;     /* ps_dbgd_landed when it was tried: a file fetched since is looked for */
    int from;            /* usable: where its file is (ps_symbols_has) */
} module_t;

typedef struct cached {
    uint32_t n;
    ps_symbol_frame_t f[];
} cached_t;

struct ps_symbols {
    pthread_mutex_t mu;
    char **dirs; /* looked in in order: the first with the file wins */
    size_t ndirs;
    ps_hmap_t mods;      /* build id -> index in modules */
    module_t *modules;
    size_t nmodules;
    ps_hmap_t frames;    /* build id + ELF address -> cached_t * */
    size_t nframes;
    ps_arena_t fa;       /* the cached frames and their strings */
    uint64_t hits, misses, opened, missing;
    ps_dbgd_t *dbgd;     /* debuginfod servers (debuginfod.c), or NULL */
};

static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                        char **debuginfo_file_name)
{
    (void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)debuglink_file;
    (void)debuglink_crc, (void)debuginfo_file_name;
    return -1; /* the reported file is the debug file: nothing is searched elsewhere */
}

static const Dwfl_Callbacks callbacks = {
    .find_debuginfo = no_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* Opens path as the one module of a new Dwfl: 0, or -1 (m untouched). */
static int module_open(const char *path, module_t *m)
{
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (dwfl == NULL)
        return -1;
    dwfl_report_begin(dwfl);
    Dwfl_Module *mod = dwfl_report_offline(dwfl, "", path, -1);
    if (mod == NULL || dwfl_report_end(dwfl, NULL, NULL) != 0)
        goto Fail;
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    GElf_Ehdr eh;
    if (elf == NULL || gelf_getehdr(elf, &eh) == NULL)
        goto Fail;
    size_t nph = 0;
    if (elf_getphdrnum(elf, &nph) != 0 || nph > 4096)
        goto Fail;
    GElf_Phdr *loads = ps_xcalloc(nph ? nph : 1, sizeof(GElf_Phdr));
    size_t nl = 0;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) != NULL && ph.p_type == PT_LOAD)
            loads[nl++] = ph;
    }
    m->dwfl = dwfl;
    m->mod = mod;
    m->bias = bias;
    m->etype = eh.e_type;
    m->nloads = nl;
    m->loads = loads;
    return 0;
Fail:
    dwfl_end(dwfl);
    return -1;
}

static void module_close(module_t *m)
{
    if (m->dwfl)
        dwfl_end(m->dwfl);
    free(m->loads);
    memset(m, 0, sizeof(*m));
}

/* The ELF address of a stored address (symbols.h). */
static GElf_Addr elf_address(const module_t *m, uint64_t start, uint64_t limit, uint64_t offset, uint64_t address)
{
    if (m->etype == ET_EXEC || (start == 0 && limit == 0))
        return address;
    uint64_t off = address - start + offset;
    for (size_t i = 0; i < m->nloads; i++) {
        const GElf_Phdr *ph = &m->loads[i];
        if (off >= ph->p_offset && off - ph->p_offset < (ph->p_memsz > ph->p_filesz ? ph->p_memsz : ph->p_filesz))
            return off - ph->p_offset + ph->p_vaddr;
    }
    return off; /* no segment holds it: as if loaded at 0 */
}

static const char *diename(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr)
                                            ?: dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    return name ? name : dwarf_diename(die);
}

static const char *dup(ps_arena_t *a, const char *s)
{
    return s ? ps_arena_strndup(a, s, strlen(s)) : "";
}

/* A frame with its strings copied into a, and the name it is shown by (ps_symbols_demangle). */
static ps_symbol_frame_t frame(ps_arena_t *a, const char *function, const char *file, int64_t line, int64_t col)
{
    const char *fn = dup(a, function), *name = ps_symbols_demangle(fn, a);
    return (ps_symbol_frame_t){fn, dup(a, file), line, col, name ? name : fn};
}

/* The frames of a dwfl address in m, strings copied into a. */
static size_t frames_of(const module_t *m, GElf_Addr addr, ps_symbol_frame_t *out, size_t cap, ps_arena_t *a)
{
    if (cap == 0)
        return 0;
    Dwfl_Module *mod = m->mod;
    size_t n = 0;
    const char *file = NULL;
    int lineno = 0, col = 0;
    GElf_Addr row_addr = addr;
    Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
    if (line != NULL) {
        Dwarf_Addr la = addr;
        file = dwfl_lineinfo(line, &la, &lineno, &col, NULL, NULL);
        if (file == NULL)
            lineno = col = 0;
        else
            row_addr = la;
    }
    const char *fname = NULL;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cudie = dwfl_module_addrdie(mod, addr, &bias);
    Dwarf_Die *scopes = NULL;
    int nscopes = cudie ? dwarf_getscopes(cudie, addr - bias, &scopes) : 0;
    for (int i = 0; i < nscopes && fname == NULL; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            fname = diename(&scopes[i]);
            break;
        }
    }
    if (fname == NULL) {
        GElf_Off off;
        GElf_Sym sym;
        fname = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
    }
    if (fname == NULL && file == NULL) {
        free(scopes);
        return 0;
    }
    out[n++] = frame(a, fname, file, lineno, col);
    /* the chain is that of the line table row's address (as eu-addr2line -i: its lineinfo call
     * moves the address to the row's) */
    if (row_addr != addr && cudie != NULL) {
        free(scopes);
        scopes = NULL;
        nscopes = dwarf_getscopes(cudie, row_addr - bias, &scopes);
    }
    if (nscopes > 0) {
        Dwarf_Die sub;
        Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
        Dwarf_Off dieoff = dwarf_dieoffset(&scopes[0]);
        free(scopes);
        scopes = NULL;
        if (dw != NULL && dwarf_offdie(dw, dieoff, &sub) != NULL)
            nscopes = dwarf_getscopes_die(&sub, &scopes);
        else
            nscopes = 0;
        Dwarf_Die cu;
        Dwarf_Files *files;
        if (nscopes > 1 && dwarf_diecu(&scopes[0], &cu, NULL, NULL) != NULL &&
            dwarf_getsrcfiles(cudie, &files, NULL) == 0) {
            for (int i = 0; i < nscopes - 1 && n < cap; i++) {
                Dwarf_Die *die = &scopes[i];
                if (dwarf_tag(die) != DW_TAG_inlined_subroutine)
                    continue;
                const char *caller = NULL;
                for (int j = i + 1; j < nscopes; j++) {
                    int tag = dwarf_tag(&scopes[j]);
                    if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_entry_point || tag == DW_TAG_subprogram) {
                        caller = diename(&scopes[j]);
                        break;
                    }
                }
                Dwarf_Attribute attr;
                Dwarf_Word val;
                const char *src = NULL;
                int64_t ln = 0, cl = 0;
                if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &val) == 0)
                    src = dwarf_filesrc(files, val, NULL, NULL);
                if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &val) == 0)
                    ln = (int64_t)val;
                if (dwarf_formudata(dwarf_attr(die, DW_AT_call_column, &attr), &val) == 0)
                    cl = (int64_t)val;
                out[n++] = frame(a, caller, src, ln, cl);
            }
        }
    }
    free(scopes);
    return n;
}

ps_symbols_t *ps_symbols_new(const char *const *dirs, size_t ndirs)
{
    ps_symbols_t *s = ps_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->dirs = ps_xcalloc(ndirs + 1, sizeof(*s->dirs));
    for (size_t i = 0; i < ndirs; i++)
        s->dirs[i] = ps_xstrndup(dirs[i], strlen(dirs[i]));
    s->ndirs = ndirs;
    ps_hmap_init(&s->mods);
    ps_hmap_init(&s->frames);
    s->modules = ps_xcalloc(PS_SYMBOLS_MODULES, sizeof(module_t));
    s->fa = (ps_arena_t)PS_ARENA_INIT;
    return s;
}

static void modules_close(ps_symbols_t *s)
{
    for (size_t i = 0; i < s->nmodules; i++)
        module_close(&s->modules[i]);
    s->nmodules = 0;
    ps_hmap_clear(&s->mods);
}

void ps_symbols_free(ps_symbols_t *s)
{
    if (s == NULL)
        return;
    ps_dbgd_free(s->dbgd);
    modules_close(s);
    free(s->modules);
    ps_hmap_dispose(&s->mods);
    ps_hmap_dispose(&s->frames);
    ps_arena_dispose(&s->fa);
    pthread_mutex_destroy(&s->mu);
    for (size_t i = 0; i < s->ndirs; i++)
        free(s->dirs[i]);
    free(s->dirs);
    free(s);
}

static int64_t now_nanos(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The build id in lowercase hex into out; false when it is not hex (or too short, too long). */
static bool norm_build_id(const char *b, char *out)
{
    size_t n = strlen(b);
    if (n < 4 || n > BUILD_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)b[i]))
            return false;
        out[i] = (char)tolower((unsigned char)b[i]);
    }
    out[n] = 0;
    return true;
}

/* The debug file of a build id (normalised) in the first directory that has one: its path, stat'ed
 * into st, and 1 + that directory's index; 0 when none has one. */
static int find_file(const ps_symbols_t *s, const char *bid, char *path, size_t cap, struct stat *st)
{
    path[0] = 0;
    for (size_t i = 0; i < s->ndirs; i++) {
        snprintf(path, cap, "%s/.build-id/%.2s/%s.debug", s->dirs[i], bid, bid + 2);
        if (stat(path, st) == 0)
            return (int)i + 1;
    }
    return 0;
}

/* No usable file in the directory: the one fetched from debuginfod (opened into m), or false and
 * a fetch queued in the background (ps_dbgd_find: never waits on the network). */
static bool debuginfod_open(ps_symbols_t *s, const char *bid, module_t *m)
{
    char path[4096];
    m->landed = ps_dbgd_landed(s->dbgd); /* before looking: a file landing meanwhile is seen next time */
    return ps_dbgd_find(s->dbgd, bid, path, sizeof(path)) && module_open(path, m) == 0;
}

/* The module of a build id (normalised), opened or tried as needed; NULL when no usable file. */
static module_t *module_get(ps_symbols_t *s, const char *bid)
{
    char path[4096];
    uint64_t idx;
    module_t *m;
    struct stat st;
    if (ps_hmap_get(&s->mods, bid, strlen(bid), &idx)) {
        m = &s->modules[idx];
        if (m->dwfl != NULL)
            return m;
        int64_t now = now_nanos();
        bool landed = m->landed != ps_dbgd_landed(s->dbgd); /* debuginfod: a file arrived since */
        if (!landed && now - m->tried_at < RETRY_NANOS)
            return NULL;
        m->tried_at = now;
        int ok = find_file(s, bid, path, sizeof(path), &st);
        if (!landed && ok == m->stat_ok &&
            (!ok || (st.st_size == m->size && st.st_mtim.tv_sec == m->mtime.tv_sec &&
                     st.st_mtim.tv_nsec == m->mtime.tv_nsec)))
            return NULL;
    } else {
        if (s->nmodules == PS_SYMBOLS_MODULES)
            modules_close(s);
        idx = s->nmodules++;
        ps_hmap_put(&s->mods, bid, strlen(bid), idx);
        m = &s->modules[idx];
    }
    m->stat_ok = find_file(s, bid, path, sizeof(path), &st);
    if (m->stat_ok) {
        m->mtime = st.st_mtim;
        m->size = st.st_size;
    }
    m->tried_at = now_nanos();
    if (m->stat_ok && S_ISREG(st.st_mode) && module_open(path, m) == 0) {
        s->opened++;
        m->from = m->stat_ok;
        return m;
    }
    if (debuginfod_open(s, bid, m)) {
        s->opened++;
        m->from = PS_SYMBOLS_DEBUGINFOD;
        return m;
    }
    s->missing++;
    return NULL;
}

/* The cached frames of an address of a build id (normalised: norm_build_id), under s->mu; valid
 * until the cache is next emptied. NULL: no usable debug file. */
static const cached_t *lookup_locked(ps_symbols_t *s, const char *bid, uint64_t memory_start,
                                     uint64_t memory_limit, uint64_t file_offset, uint64_t address)
{
    module_t *m = module_get(s, bid);
    if (m == NULL)
        return NULL;
    GElf_Addr ea = elf_address(m, memory_start, memory_limit, file_offset, address);
    size_t bl = strlen(bid);
    uint8_t key[BUILD_ID_MAX + 8];
    memcpy(key, bid, bl);
    memcpy(key + bl, &ea, 8);
    uint64_t v;
    if (ps_hmap_get(&s->frames, key, bl + 8, &v)) {
        s->hits++;
        return (const cached_t *)(uintptr_t)v;
    }
    s->misses++;
    if (s->nframes >= PS_SYMBOLS_CACHE_ENTRIES) {
        ps_hmap_clear(&s->frames);
        ps_arena_reset(&s->fa);
        s->nframes = 0;
    }
    ps_symbol_frame_t f[PS_SYMBOLS_FRAMES_MAX];
    size_t nf = frames_of(m, ea + m->bias, f, PS_SYMBOLS_FRAMES_MAX, &s->fa);
    cached_t *c = ps_arena_alloc(&s->fa, sizeof(cached_t) + nf * sizeof(ps_symbol_frame_t));
    c->n = (uint32_t)nf;
    memcpy(c->f, f, nf * sizeof(ps_symbol_frame_t));
    ps_hmap_put(&s->frames, key, bl + 8, (uint64_t)(uintptr_t)c);
    s->nframes++;
    return c;
}

int ps_symbols_lookup(ps_symbols_t *s, const char *build_id, uint64_t memory_start, uint64_t memory_limit,
                      uint64_t file_offset, uint64_t address, ps_symbol_frame_t *out, size_t cap, size_t *n,
                      ps_arena_t *arena)
{
    char bid[BUILD_ID_MAX + 1];
    *n = 0;
    if (!norm_build_id(build_id, bid))
        return 0;
    pthread_mutex_lock(&s->mu);
    const cached_t *c = lookup_locked(s, bid, memory_start, memory_limit, file_offset, address);
    for (uint32_t k = 0; c != NULL && k < c->n && *n < cap; k++)
        out[(*n)++] = (ps_symbol_frame_t){dup(arena, c->f[k].function), dup(arena, c->f[k].file), c->f[k].line,
                                           c->f[k].column, dup(arena, c->f[k].name)};
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int ps_symbols_lookup_file(const char *path, uint64_t memory_start, uint64_t memory_limit, uint64_t file_offset,
                           uint64_t address, ps_symbol_frame_t *out, size_t cap, size_t *n, ps_arena_t *arena)
{
    module_t m = {0};
    *n = 0;
    if (module_open(path, &m) != 0)
        return 0;
    GElf_Addr ea = elf_address(&m, memory_start, memory_limit, file_offset, address);
    *n = frames_of(&m, ea + m.bias, out, cap, arena);
    module_close(&m);
    return 0;
}

int ps_symbols_set_debuginfod(ps_symbols_t *s, const ps_symbols_debuginfod_t *o, ps_err_t *err)
{
    ps_dbgd_t *d = ps_dbgd_new(o, err);
    if (d == NULL)
        return err != NULL ? err->code : PS_EINVAL;
    pthread_mutex_lock(&s->mu);
    ps_dbgd_t *old = s->dbgd;
    s->dbgd = d;
    pthread_mutex_unlock(&s->mu);
    ps_dbgd_free(old);
    return 0;
}

void ps_symbols_debuginfod_stats(ps_symbols_t *s, ps_symbols_debuginfod_stats_t *st)
{
    ps_dbgd_stats(s->dbgd, st);
}

void ps_symbols_metrics(ps_symbols_t *s, ps_buf_t *b)
{
    if (s != NULL)
        ps_dbgd_metrics(s->dbgd, b);
}

int ps_symbols_has(ps_symbols_t *s, const char *build_id)
{
    char bid[BUILD_ID_MAX + 1];
    if (s == NULL || !norm_build_id(build_id, bid))
        return 0;
    pthread_mutex_lock(&s->mu);
    const module_t *m = module_get(s, bid);
    int from = m != NULL ? m->from : 0;
    pthread_mutex_unlock(&s->mu);
    return from;
}

void ps_symbols_stats(ps_symbols_t *s, uint64_t *hits, uint64_t *misses, uint64_t *opened, uint64_t *missing)
{
    pthread_mutex_lock(&s->mu);
    *hits = s->hits;
    *misses = s->misses;
    *opened = s->opened;
    *missing = s->missing;
    pthread_mutex_unlock(&s->mu);
}

/* ---- a profile's locations ---- */

typedef struct grow {
    ps_profile_t *p;
    ps_arena_t *a;
    ps_hmap_t strs, fns;
    ps_str_t *strings;
    size_t nstr, capstr;
    ps_function_t *functions;
    size_t nfn, capfn;
} grow_t;

static uint32_t add_string(grow_t *g, const char *s)
{
    size_t len = strlen(s);
    if (len == 0)
        return 0;
    uint64_t v;
    if (ps_hmap_get(&g->strs, s, len, &v))
        return (uint32_t)v;
    if (g->nstr == g->capstr) {
        g->capstr = g->capstr ? 2 * g->capstr : 64;
        g->strings = ps_xrealloc(g->strings, g->capstr * sizeof(ps_str_t));
    }
    g->strings[g->nstr] = (ps_str_t){ps_arena_strndup(g->a, s, len), (uint32_t)len};
    uint32_t idx = g->p->nstrings + (uint32_t)g->nstr++;
    ps_hmap_put(&g->strs, s, len, idx);
    return idx;
}

static uint32_t add_function(grow_t *g, const char *name, const char *system_name, const char *file)
{
    uint32_t ni = add_string(g, name), si = add_string(g, system_name), fi = add_string(g, file);
    uint32_t key[3] = {ni, si, fi};
    uint64_t v;
    if (ps_hmap_get(&g->fns, key, sizeof(key), &v))
        return (uint32_t)v;
    if (g->nfn == g->capfn) {
        g->capfn = g->capfn ? 2 * g->capfn : 64;
        g->functions = ps_xrealloc(g->functions, g->capfn * sizeof(ps_function_t));
    }
    g->functions[g->nfn] = (ps_function_t){.name = ni, .system_name = si, .filename = fi};
    uint32_t idx = g->p->nfunctions + (uint32_t)++g->nfn; /* function indexes are 1-based */
    ps_hmap_put(&g->fns, key, sizeof(key), idx);
    return idx;
}

void ps_symbols_profile(void *ctx, ps_profile_t *p, ps_arena_t *arena)
{
    ps_symbols_t *s = ctx;
    if (s == NULL)
        return;
    grow_t g = {.p = p, .a = arena};
    ps_hmap_init(&g.strs);
    ps_hmap_init(&g.fns);
    char **bids = ps_arena_calloc(arena, p->nmappings + 1, sizeof(char *));
    /* the lock is held for one location at a time (its frames are copied before it is let go), so
     * that another read's locations are served from the cache while this one reads files */
    for (uint32_t i = 0; i < p->nlocations; i++) {
        ps_location_t *l = &p->locations[i];
        if (l->nlines != 0 || l->mapping == 0 || l->mapping > p->nmappings)
            continue;
        ps_mapping_t *m = &p->mappings[l->mapping - 1];
        if (m->build_id == 0 || m->build_id >= p->nstrings)
            continue;
        /* each mapping's build id normalised once: "" when it is not one */
        char **bid = &bids[l->mapping - 1];
        if (*bid == NULL) {
            *bid = ps_arena_alloc(arena, BUILD_ID_MAX + 1);
            if (!norm_build_id(p->strings[m->build_id].ptr, *bid))
                (*bid)[0] = 0;
        }
        if ((*bid)[0] == 0)
            continue;
        pthread_mutex_lock(&s->mu);
        const cached_t *c = lookup_locked(s, *bid, m->memory_start, m->memory_limit, m->file_offset, l->address);
        if (c == NULL || c->n == 0) {
            pthread_mutex_unlock(&s->mu);
            continue;
        }
        ps_line_t *lines = ps_arena_calloc(arena, c->n, sizeof(ps_line_t));
        for (uint32_t k = 0; k < c->n; k++) {
            lines[k].function = add_function(&g, c->f[k].name, c->f[k].function, c->f[k].file);
            lines[k].line = c->f[k].line;
            lines[k].column = c->f[k].column;
        }
        uint32_t nf = c->n;
        pthread_mutex_unlock(&s->mu);
        l->lines = lines;
        l->nlines = (uint32_t)nf;
        m->flags |= PS_MAP_HAS_FUNCTIONS | PS_MAP_HAS_FILENAMES | PS_MAP_HAS_LINE_NUMBERS | PS_MAP_HAS_INLINE_FRAMES;
    }
    if (g.nstr) {
        ps_str_t *ns = ps_arena_alloc(arena, (p->nstrings + g.nstr) * sizeof(ps_str_t));
        if (p->nstrings)
            memcpy(ns, p->strings, p->nstrings * sizeof(ps_str_t));
        memcpy(ns + p->nstrings, g.strings, g.nstr * sizeof(ps_str_t));
        p->strings = ns;
        p->nstrings += (uint32_t)g.nstr;
    }
    if (g.nfn) {
        ps_function_t *nf = ps_arena_alloc(arena, (p->nfunctions + g.nfn + 1) * sizeof(ps_function_t));
        if (p->nfunctions)
            memcpy(nf, p->functions, p->nfunctions * sizeof(ps_function_t));
        memcpy(nf + p->nfunctions, g.functions, g.nfn * sizeof(ps_function_t));
        p->functions = nf;
        p->nfunctions += (uint32_t)g.nfn;
    }
    free(g.strings);
    free(g.functions);
    ps_hmap_dispose(&g.strs);
    ps_hmap_dispose(&g.fns);
}
