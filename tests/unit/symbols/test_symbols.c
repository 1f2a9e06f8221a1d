/*
 * test_symbols.c - unit tests for src/symbols/symbols.c on a C program compiled here (gcc -g -O2,
 * an always-inlined function), its debug file split off (objcopy --only-keep-debug) and placed
 * under a temporary .build-id directory: a profile's unsymbolized locations get the functions of
 * nm's addresses, with an inline chain innermost first; the cache answers the second time without
 * opening the file again; a build id with no file, a damaged file, a build id that is not hex (a
 * path) leave the locations as they are; a file placed after a miss is read once it is there.
 * debuginfod through file:// URLs: fetched in the background and read by the next lookup, a 404
 * asked once, files that are not ELF, of another build id or too large refused and deleted, the
 * accepted file found again by a new symbolizer, bad URLs and cache directories refused; an endless
 * chunked body ended past max_bytes, a silent server ended at the timeout (in milliseconds) while
 * lookups answer at once. C++ names as go tool pprof shows them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbols/symbols.h"

static char dir[256], symdir[300], debug_path[512], build_id[128];
static uint64_t work_addr, main_addr, inl_addr;

static const char prog[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "static inline __attribute__((always_inline)) long mix(long x) { return x * 2654435761L ^ (x >> 7); }\n"
    "__attribute__((noinline)) long work(long n)\n"
    "{\n"
    "    long a = 0;\n"
    "    for (long i = 0; i < n; i++)\n"
    "        a += mix(a + i);\n"
    "    return a;\n"
    "}\n"
    "int main(int argc, char **argv) { printf(\"%ld\\n\", work(argc > 1 ? atol(argv[1]) : 10)); return 0; }\n";

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("command failed: %s", cmd);
}

static void read_line(const char *cmd, char *out, size_t n)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, (int)n, p));
    out[strcspn(out, "\n")] = 0;
    pclose(p);
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/ps_symbols_XXXXXX");
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof(path), "%s/prog.c", dir);
    FILE *f = fopen(path, "w");
    fputs(prog, f);
    fclose(f);
    sh("gcc -g -O2 -o %s/prog %s", dir, path);
    sh("objcopy --only-keep-debug %s/prog %s/prog.debug && strip %s/prog", dir, dir, dir);
    char cmd[1024], line[256];
    snprintf(cmd, sizeof(cmd), "readelf -n %s/prog | sed -n 's/.*Build ID: //p'", dir);
    read_line(cmd, build_id, sizeof(build_id));
    snprintf(cmd, sizeof(cmd), "nm %s/prog.debug | awk '$3==\"work\"{print $1}'", dir);
    read_line(cmd, line, sizeof(line));
    work_addr = strtoull(line, NULL, 16);
    snprintf(cmd, sizeof(cmd), "nm %s/prog.debug | awk '$3==\"main\"{print $1}'", dir);
    read_line(cmd, line, sizeof(line));
    main_addr = strtoull(line, NULL, 16);
    /* an address of work where mix is inlined: the first one eu-addr2line -i puts two frames on */
    snprintf(cmd, sizeof(cmd),
             "for a in $(seq %llu %llu); do n=$(eu-addr2line -i -f -e %s/prog.debug $(printf '0x%%x' $a) | wc -l); "
             "if [ $n = 4 ]; then echo $a; break; fi; done",
             (unsigned long long)work_addr, (unsigned long long)work_addr + 64, dir);
    read_line(cmd, line, sizeof(line));
    inl_addr = strtoull(line, NULL, 10);
    snprintf(symdir, sizeof(symdir), "%s/debug", dir);
    snprintf(debug_path, sizeof(debug_path), "%s/.build-id/%.2s/%s.debug", symdir, build_id, build_id + 2);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf %s", dir);
    return 0;
}

static void place(void)
{
    sh("mkdir -p %s/.build-id/%.2s && cp %s/prog.debug %s", symdir, build_id, dir, debug_path);
}

static void unplace(void)
{
    sh("rm -rf %s", symdir);
}

/* a profile of three locations of one mapping (the program mapped as a PIE at 0x5555_5555_4000:
 * its first page at file offset 0) */
#define BASE 0x555555554000ull
static ps_profile_t *profile(ps_arena_t *a, const char *bid)
{
    ps_profile_t *p = ps_arena_calloc(a, 1, sizeof(*p));
    static ps_str_t strs[3];
    strs[0] = (ps_str_t){"", 0};
    strs[1] = (ps_str_t){"/opt/prog", 9};
    strs[2] = (ps_str_t){bid, (uint32_t)strlen(bid)};
    p->strings = strs;
    p->nstrings = 3;
    p->nmappings = 1;
    p->mappings = ps_arena_calloc(a, 1, sizeof(ps_mapping_t));
    p->mappings[0] = (ps_mapping_t){.memory_start = BASE, .memory_limit = BASE + 0x4000, .file_offset = 0,
                                    .filename = 1, .build_id = 2};
    p->nlocations = 3;
    p->locations = ps_arena_calloc(a, 3, sizeof(ps_location_t));
    uint64_t addrs[3] = {work_addr, main_addr, inl_addr};
    for (int i = 0; i < 3; i++)
        p->locations[i] = (ps_location_t){.mapping = 1, .address = BASE + addrs[i]};
    return p;
}

static const char *fn_name(const ps_profile_t *p, const ps_location_t *l, uint32_t k)
{
    return p->strings[p->functions[l->lines[k].function - 1].name].ptr;
}

static void test_profile_symbolized(void **state)
{
    (void)state;
    place();
    ps_symbols_t *s = ps_symbols_new((const char *const[]){symdir}, 1);
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t *p = profile(&a, build_id);
    ps_symbols_profile(s, p, &a);
    assert_int_equal(p->locations[0].nlines, 1);
    assert_string_equal(fn_name(p, &p->locations[0], 0), "work");
    char src[512];
    snprintf(src, sizeof(src), "%s/prog.c", dir);
    assert_string_equal(p->strings[p->functions[p->locations[0].lines[0].function - 1].filename].ptr, src);
    assert_true(p->locations[0].lines[0].line >= 4 && p->locations[0].lines[0].line <= 10);
    assert_int_equal(p->locations[1].nlines, 1);
    assert_string_equal(fn_name(p, &p->locations[1], 0), "main");
    assert_int_equal(p->locations[2].nlines, 2); /* mix inlined into work, innermost first */
    assert_string_equal(fn_name(p, &p->locations[2], 0), "mix");
    assert_string_equal(fn_name(p, &p->locations[2], 1), "work");
    assert_int_equal(p->locations[2].lines[1].line, 8); /* the call's line */
    assert_int_equal(p->mappings[0].flags, PS_MAP_HAS_FUNCTIONS | PS_MAP_HAS_FILENAMES | PS_MAP_HAS_LINE_NUMBERS |
                                               PS_MAP_HAS_INLINE_FRAMES);
    /* again: from the cache, the file opened once */
    ps_profile_t *q = profile(&a, build_id);
    ps_symbols_profile(s, q, &a);
    assert_string_equal(fn_name(q, &q->locations[2], 0), "mix");
    uint64_t hits, misses, opened, missing;
    ps_symbols_stats(s, &hits, &misses, &opened, &missing);
    assert_int_equal(hits, 3);
    assert_int_equal(misses, 3);
    assert_int_equal(opened, 1);
    assert_int_equal(missing, 0);
    /* the lookup of one address, strings in the caller's arena; upper-case build ids too */
    char upper[128];
    for (size_t i = 0; i <= strlen(build_id); i++)
        upper[i] = (char)(build_id[i] >= 'a' && build_id[i] <= 'f' ? build_id[i] - 32 : build_id[i]);
    ps_symbol_frame_t f[4];
    size_t n = 0;
    assert_int_equal(ps_symbols_lookup(s, upper, BASE, BASE + 0x4000, 0, BASE + inl_addr, f, 4, &n, &a), 0);
    assert_int_equal(n, 2);
    assert_string_equal(f[0].function, "mix");
    assert_int_equal(f[1].line, 8);
    /* and straight from the file, as the fuzz target calls it */
    assert_int_equal(ps_symbols_lookup_file(debug_path, BASE, BASE + 0x4000, 0, BASE + inl_addr, f, 4, &n, &a), 0);
    assert_int_equal(n, 2);
    assert_string_equal(f[1].function, "work");
    ps_arena_dispose(&a);
    ps_symbols_free(s);
    unplace();
}

static void test_missing_then_placed(void **state)
{
    (void)state;
    unplace();
    ps_symbols_t *s = ps_symbols_new((const char *const[]){symdir}, 1);
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t *p = profile(&a, build_id);
    ps_symbols_profile(s, p, &a);
    for (int i = 0; i < 3; i++)
        assert_int_equal(p->locations[i].nlines, 0);
    assert_int_equal(p->mappings[0].flags, 0);
    assert_int_equal(p->nfunctions, 0);
    assert_int_equal(p->nstrings, 3);
    uint64_t hits, misses, opened, missing;
    ps_symbols_stats(s, &hits, &misses, &opened, &missing);
    assert_int_equal(missing, 1); /* tried once, remembered for the other two */
    place();
    sleep(1);
    usleep(100000);
    p = profile(&a, build_id);
    ps_symbols_profile(s, p, &a);
    assert_string_equal(fn_name(p, &p->locations[0], 0), "work");
    ps_symbols_stats(s, &hits, &misses, &opened, &missing);
    assert_int_equal(opened, 1);
    ps_arena_dispose(&a);
    ps_symbols_free(s);
    unplace();
}

/* several directories: the first that has the build id's file wins (a damaged one too) */
static void test_directories_in_order(void **state)
{
    (void)state;
    place();
    char empty[400], bad[400], bad_file[600];
    snprintf(empty, sizeof(empty), "%s/empty", dir);
    snprintf(bad, sizeof(bad), "%s/bad", dir);
    snprintf(bad_file, sizeof(bad_file), "%s/.build-id/%.2s/%s.debug", bad, build_id, build_id + 2);
    sh("mkdir -p %s %s/.build-id/%.2s && head -c 300 %s/prog.debug > %s", empty, bad, build_id, dir, bad_file);
    ps_arena_t a = PS_ARENA_INIT;
    ps_symbols_t *s = ps_symbols_new((const char *const[]){empty, symdir, bad}, 3);
    ps_profile_t *p = profile(&a, build_id);
    ps_symbols_profile(s, p, &a);
    assert_string_equal(fn_name(p, &p->locations[0], 0), "work");
    ps_symbols_free(s);
    s = ps_symbols_new((const char *const[]){bad, symdir}, 2);
    p = profile(&a, build_id);
    ps_symbols_profile(s, p, &a);
    assert_int_equal(p->locations[0].nlines, 0);
    uint64_t hits, misses, opened, missing;
    ps_symbols_stats(s, &hits, &misses, &opened, &missing);
    assert_true(opened == 0 && missing == 1);
    ps_symbols_free(s);
    ps_arena_dispose(&a);
    sh("rm -rf %s %s", empty, bad);
    unplace();
}

static void test_damaged_and_bad_ids(void **state)
{
    (void)state;
    sh("mkdir -p %s/.build-id/%.2s && head -c 300 %s/prog.debug > %s", symdir, build_id, dir, debug_path);
    ps_symbols_t *s = ps_symbols_new((const char *const[]){symdir}, 1);
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t *p = profile(&a, build_id);
    ps_symbols_profile(s, p, &a);
    for (int i = 0; i < 3; i++)
        assert_int_equal(p->locations[i].nlines, 0);
    static const char *bad[] = {"../../etc/passwd", "ab", "", "zz00112233", "abcd/../../x"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        p = profile(&a, bad[i]);
        ps_symbols_profile(s, p, &a);
        assert_int_equal(p->locations[0].nlines, 0);
    }
    uint64_t hits, misses, opened, missing;
    ps_symbols_stats(s, &hits, &misses, &opened, &missing);
    assert_int_equal(opened, 0);
    assert_int_equal(missing, 1); /* the damaged file; the bad ids are never looked up */
    ps_symbols_free(s);
    ps_symbols_free(NULL);
    ps_arena_dispose(&a);
    unplace();
}

/* debuginfod through file:// URLs (libdebuginfod takes them as it takes http://): a "server" is a
 * directory laid out <srv>/buildid/<hex>/debuginfo */
static void serve(const char *srv, const char *bid, const char *from)
{
    sh("mkdir -p %s/buildid/%s && cp %s %s/buildid/%s/debuginfo", srv, bid, from, srv, bid);
}

static ps_symbols_debuginfod_stats_t wait_fetches(ps_symbols_t *s, uint64_t n)
{
    ps_symbols_debuginfod_stats_t st;
    for (int i = 0; i < 2000; i++) {
        ps_symbols_debuginfod_stats(s, &st);
        if (st.fetches >= n)
            return st;
        usleep(5000);
    }
    fail_msg("no fetch finished");
    return st;
}

static void test_debuginfod_file_url(void **state)
{
    (void)state;
    char srv[512], url[600], cache[512];
    snprintf(srv, sizeof(srv), "%s/srv", dir);
    snprintf(url, sizeof(url), "file://%s", srv);
    snprintf(cache, sizeof(cache), "%s/cache", dir);
    char debug[512];
    snprintf(debug, sizeof(debug), "%s/prog.debug", dir);
    serve(srv, build_id, debug);
    ps_symbols_t *s = ps_symbols_new((const char *const[]){cache}, 1);
    ps_err_t err;
    ps_symbols_debuginfod_t o = {.urls = url, .cache_dir = cache, .timeout_ns = 5000000000LL};
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_symbol_frame_t f[4];
    size_t n = 9;
    /* the first lookup queues the fetch and answers at once */
    assert_int_equal(ps_symbols_lookup(s, build_id, BASE, BASE + 0x4000, 0, BASE + inl_addr, f, 4, &n, &a), 0);
    ps_symbols_debuginfod_stats_t st = wait_fetches(s, 1);
    assert_int_equal(st.ok, 1);
    assert_int_equal(st.fetches, 1);
    char cmd[2048], line[64];
    snprintf(cmd, sizeof(cmd), "stat -c %%s %s", debug);
    read_line(cmd, line, sizeof(line));
    assert_int_equal(st.bytes, strtoull(line, NULL, 10));
    /* the next lookup reads the fetched file (no second's wait: it landed since) */
    assert_int_equal(ps_symbols_lookup(s, build_id, BASE, BASE + 0x4000, 0, BASE + inl_addr, f, 4, &n, &a), 0);
    assert_int_equal(n, 2);
    assert_string_equal(f[0].function, "mix");
    assert_string_equal(f[1].function, "work");
    snprintf(cmd, sizeof(cmd), "cmp %s %s/.build-id/%.2s/%s.debug", debug, cache, build_id, build_id + 2);
    sh("%s", cmd);
    /* not found: asked once, not again at the next lookups */
    const char *nf = "00112233445566778899aabbccddeeff00112233";
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ps_symbols_lookup(s, nf, 0, 0, 0, 0x1000, f, 4, &n, &a), 0);
        assert_int_equal(n, 0);
        if (i == 0)
            st = wait_fetches(s, 2);
        sleep(i == 1 ? 1 : 0);
    }
    usleep(100000);
    ps_symbols_debuginfod_stats(s, &st);
    assert_int_equal(st.not_found, 1);
    assert_int_equal(st.fetches, 2);
    /* not ELF, and an ELF file of another build id: refused, deleted */
    const char *junk = "1111111111111111111111111111111111111111", *other = "2222222222222222222222222222222222222222";
    snprintf(cmd, sizeof(cmd), "%s/junk", dir);
    FILE *jf = fopen(cmd, "w");
    fputs("not an ELF file\n", jf);
    fclose(jf);
    serve(srv, junk, cmd);
    serve(srv, other, debug);
    assert_int_equal(ps_symbols_lookup(s, junk, 0, 0, 0, 0x1000, f, 4, &n, &a), 0);
    assert_int_equal(ps_symbols_lookup(s, other, 0, 0, 0, 0x1000, f, 4, &n, &a), 0);
    st = wait_fetches(s, 4);
    assert_int_equal(st.refused, 2);
    assert_int_equal(st.ok, 1);
    snprintf(cmd, sizeof(cmd), "ls %s/.build-id | wc -l; ls -d %s/11* %s/22* 2>/dev/null | wc -l", cache, cache, cache);
    FILE *pp = popen(cmd, "r");
    char l1[32], l2[32];
    assert_non_null(fgets(l1, sizeof(l1), pp));
    assert_non_null(fgets(l2, sizeof(l2), pp));
    pclose(pp);
    assert_string_equal(l1, "1\n"); /* the one accepted build id's directory */
    assert_string_equal(l2, "0\n"); /* nothing left of the refused ones */
    ps_symbols_free(s);
    /* a new symbolizer on the cache finds the file with no fetch; a file larger than max_bytes
     * is refused (file://: its size is known) */
    s = ps_symbols_new((const char *const[]){cache}, 1);
    const char *big = "3333333333333333333333333333333333333333";
    serve(srv, big, debug);
    o.max_bytes = 100;
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), 0);
    assert_int_equal(ps_symbols_lookup(s, build_id, BASE, BASE + 0x4000, 0, BASE + work_addr, f, 4, &n, &a), 0);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "work");
    assert_int_equal(ps_symbols_lookup(s, big, 0, 0, 0, 0x1000, f, 4, &n, &a), 0);
    st = wait_fetches(s, 1);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.fetches, 1);
    ps_symbols_free(s);
    /* bad settings */
    s = ps_symbols_new((const char *const[]){cache}, 1);
    o.urls = "http://ok ftp://no";
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), PS_EINVAL);
    assert_string_equal(err.msg, "debuginfod URL \"ftp://no\" is not http://, https:// or file://");
    o.urls = "  ";
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), PS_EINVAL);
    assert_string_equal(err.msg, "no debuginfod URL");
    o.urls = url;
    o.cache_dir = "/proc/no/such";
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), PS_ESTORAGE);
    assert_string_equal(err.msg, "debuginfod cache directory \"/proc/no/such\": No such file or directory");
    ps_symbols_free(s);
    ps_arena_dispose(&a);
}

/* C++ linkage names as go tool pprof shows them by default (each checked against its output) */
static void test_demangle(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"_ZN12_GLOBAL__N_16helperEl", "(anonymous namespace)::helper"},
        {"_ZN12_GLOBAL__N_16helperEl.cold", "(anonymous namespace)::helper"},
        {"_ZN3geo5norm2IdEET_RKSt6vectorINS_3VecIS1_EESaIS4_EE", "geo::norm2"},
        {"_ZNK3geo3VecIlE3dotERKS1_", "geo::Vec::dot"},
        {"_ZNK3geo3VecIlEltERKS1_", "geo::Vec::operator<"},
        {"_ZNSt6vectorIN3geo3VecIlEESaIS2_EE17_M_realloc_insertIJS2_EEEvN9__gnu_cxx17__normal_iteratorIPS2_S4_EEDpOT_",
         "std::vector::_M_realloc_insert"},
        {"_ZZ4mainENKUliE_clEi", "main::{lambda(int)#1}::operator()"},
        {"_ZN3geo3VecIlEC2Ev", "geo::Vec::Vec"},
        {"_ZNSt12_Vector_baseIN3geo3VecIdEESaIS2_EED2Ev", "std::_Vector_base::~_Vector_base"},
        {"_ZN3geo3VecIlEcviEv", "geo::Vec::operator int"},
        {"_Znwm", "operator new"},
        {"_ZN9__gnu_cxx17__normal_iteratorIPKN3geo3VecIlEESt6vectorIS3_SaIS3_EEEC4ERKS5_",
         "__gnu_cxx::__normal_iterator::__normal_iterator"},
        {"_ZNKSt6vectorIN3geo3VecIlEESaIS2_EE5beginEv", "std::vector::begin"},
    };
    ps_arena_t a = PS_ARENA_INIT;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = ps_symbols_demangle(cases[i][0], &a);
        assert_non_null(got);
        assert_string_equal(got, cases[i][1]);
    }
    /* not mangled, not demangleable, too long: NULL (the name is kept) */
    assert_null(ps_symbols_demangle("main", &a));
    assert_null(ps_symbols_demangle("_Z", &a));
    assert_null(ps_symbols_demangle("_ZN3foo", &a));
    char big[5000];
    memset(big, 'a', sizeof(big) - 1);
    big[0] = '_', big[1] = 'Z', big[sizeof(big) - 1] = 0;
    assert_null(ps_symbols_demangle(big, &a));
    ps_arena_dispose(&a);
}

/* a one-connection HTTP server on a loopback port: "chunked" answers 200 with an endless chunked
 * body (no Content-Length) until the client goes; "hang" accepts and never answers */
typedef struct tiny {
    int fd, port;
    const char *mode;
    uint64_t sent;
    pthread_t th;
} tiny_t;

static void *tiny_run(void *arg)
{
    tiny_t *t = arg;
    int c = accept(t->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    char req[4096];
    size_t got = 0;
    while (got < sizeof(req) - 1) {
        ssize_t r = recv(c, req + got, sizeof(req) - 1 - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
        req[got] = 0;
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    if (strcmp(t->mode, "chunked") == 0) {
        const char *h = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
        send(c, h, strlen(h), MSG_NOSIGNAL);
        static char chunk[8 + 65536 + 2];
        memcpy(chunk, "10000\r\n", 7);
        memset(chunk + 7, 'x', 65536);
        memcpy(chunk + 7 + 65536, "\r\n", 2);
        while (t->sent < (256u << 20) && send(c, chunk, 7 + 65536 + 2, MSG_NOSIGNAL) > 0)
            t->sent += 65536;
    } else {
        char b[256];
        while (recv(c, b, sizeof(b), 0) > 0)
            ;
    }
    close(c);
    return NULL;
}

static void tiny_start(tiny_t *t, const char *mode)
{
    memset(t, 0, sizeof(*t));
    t->mode = mode;
    t->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(t->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    getsockname(t->fd, (struct sockaddr *)&sa, &sl);
    t->port = ntohs(sa.sin_port);
    assert_int_equal(listen(t->fd, 4), 0);
    pthread_create(&t->th, NULL, tiny_run, t);
}

static void tiny_stop(tiny_t *t)
{
    shutdown(t->fd, SHUT_RDWR);
    close(t->fd);
    pthread_join(t->th, NULL);
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_debuginfod_endless_and_silent(void **state)
{
    (void)state;
    char url[64], cache[512];
    snprintf(cache, sizeof(cache), "%s/cache2", dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_symbol_frame_t f[4];
    size_t n = 0;
    ps_err_t err;
    const char *bid = "4444444444444444444444444444444444444444";
    /* an endless body with no Content-Length: ended past max_bytes (1 MiB), nothing kept */
    tiny_t t;
    tiny_start(&t, "chunked");
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", t.port);
    ps_symbols_t *s = ps_symbols_new((const char *const[]){cache}, 1);
    ps_symbols_debuginfod_t o = {.urls = url, .cache_dir = cache, .timeout_ns = 30000000000LL, .max_bytes = 1u << 20};
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), 0);
    assert_int_equal(ps_symbols_lookup(s, bid, 0, 0, 0, 0x1000, f, 4, &n, &a), 0);
    ps_symbols_debuginfod_stats_t st = wait_fetches(s, 1);
    assert_int_equal(st.refused, 1);
    assert_int_equal(st.fetches, 1);
    ps_symbols_free(s);
    tiny_stop(&t);
    assert_true(t.sent >= (1u << 20) && t.sent < (64u << 20)); /* stopped soon after the limit */
    char cmd[1024], line[64];
    snprintf(cmd, sizeof(cmd), "ls %s | tr '\\n' ' '", cache);
    read_line(cmd, line, sizeof(line));
    assert_string_equal(line, "cache_clean_interval_s cache_miss_s ");
    /* a server that never answers: the fetch ends at the timeout (1.5 s: milliseconds count), and
     * the lookups meanwhile answer at once */
    tiny_start(&t, "hang");
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", t.port);
    s = ps_symbols_new((const char *const[]){cache}, 1);
    o.timeout_ns = 1500000000LL;
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), 0);
    int64_t t0 = mono_ms();
    for (int i = 0; i < 100; i++) {
        assert_int_equal(ps_symbols_lookup(s, bid, 0, 0, 0, 0x1000 + (uint64_t)i, f, 4, &n, &a), 0);
        assert_int_equal(n, 0);
    }
    assert_true(mono_ms() - t0 < 500);
    st = wait_fetches(s, 1);
    int64_t took = mono_ms() - t0;
    assert_int_equal(st.timeouts, 1);
    assert_int_equal(st.fetches, 1);
    assert_true(took >= 1500 && took < 3500); /* within a second after it (and some load) */
    ps_symbols_free(s);
    tiny_stop(&t);
    /* the bounds: both workers stuck on the silent server (timeout 1 min), 300 build ids looked up:
     * at most 2 under way and 256 queued, the rest counted as finding the queue full; freeing it
     * then abandons the stuck fetches within a second */
    tiny_start(&t, "hang");
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", t.port);
    s = ps_symbols_new((const char *const[]){cache}, 1);
    o.timeout_ns = 60000000000LL;
    assert_int_equal(ps_symbols_set_debuginfod(s, &o, &err), 0);
    t0 = mono_ms();
    for (int i = 0; i < 300; i++) {
        char b[41];
        snprintf(b, sizeof(b), "%040x", 0x100 + i);
        assert_int_equal(ps_symbols_lookup(s, b, 0, 0, 0, 0x1000, f, 4, &n, &a), 0);
    }
    assert_true(mono_ms() - t0 < 500);
    ps_symbols_debuginfod_stats(s, &st);
    assert_int_equal(st.pending + st.queue_full, 300);
    assert_true(st.pending >= PS_SYMBOLS_DEBUGINFOD_QUEUE && st.pending <= PS_SYMBOLS_DEBUGINFOD_QUEUE + 2);
    assert_int_equal(st.fetches, 0);
    t0 = mono_ms();
    ps_symbols_free(s);
    assert_true(mono_ms() - t0 < 2500);
    tiny_stop(&t);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_symbolized),
        cmocka_unit_test(test_missing_then_placed),
        cmocka_unit_test(test_directories_in_order),
        cmocka_unit_test(test_damaged_and_bad_ids),
        cmocka_unit_test(test_debuginfod_file_url),
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_debuginfod_endless_and_silent),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
