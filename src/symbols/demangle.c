/*
 * demangle.c - the name a frame is shown by: a C++ linkage name demangled and simplified as
 * `go tool pprof` shows it by default and Parca stores it ("simple" mode: no parameters, no
 * template arguments, no return type, no clone suffix), e.g.
 *
 *   _ZN3geo5norm2IdEET_RKSt6vectorINS_3VecIS1_EESaIS4_EE   geo::norm2
 *   _ZNK3geo3VecIlEltERKS1_                                 geo::Vec::operator<
 *   _ZZ4mainENKUliE_clEi                                    main::{lambda(int)#1}::operator()
 *   _ZN12_GLOBAL__N_16helperEl.cold                         (anonymous namespace)::helper
 *
 * The demangling is libstdc++'s __cxa_demangle (the GNU demangler of c++filt, addr2line -C and
 * eu-addr2line -C; it bounds its recursion); the simplification works on its text:
 *   - " [clone .cold]" suffixes go;
 *   - template argument lists <…> go, at any depth;
 *   - a parameter list (…) goes, and so does what follows it (" const", " &&") unless it is "::"
 *     (the enclosing function of a local entity: "f()::{lambda()#1}");
 *   - a space at the top level ends a return type: what came before it goes ("double geo::norm2");
 *   - kept as they are: "(anonymous namespace)", {…} groups ("{lambda(int)#1}", "{unnamed type#1}"),
 *     and operator names ("operator<", "operator()", "operator new[]", "operator int").
 * A name that is not mangled (C, or already demangled), or that __cxa_demangle refuses, is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "symbols_int.h"

/* libstdc++ (the C++ ABI's demangler) */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status);

#define MANGLED_MAX 4096 /* longer names are shown as they are */

static bool ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* The end of the group opening at s[i] (open/close nest), or n when it is not closed. */
static size_t group_end(const char *s, size_t i, size_t n, char open, char close)
{
    int depth = 0;
    for (; i < n; i++) {
        if (s[i] == open)
            depth++;
        else if (s[i] == close && --depth == 0)
            return i + 1;
    }
    return n;
}

/* The operator's symbol after "operator" at s[i]: its length (0: none) */
static size_t operator_len(const char *s, size_t i, size_t n)
{
    static const char *const ops[] = {"()", "[]", "->*", "->", "<<=", ">>=", "<=>", "<<", ">>", "<=", ">=", "==",
                                      "!=", "&&", "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
                                      "^=", ",", "<", ">", "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "="};
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        size_t l = strlen(ops[k]);
        if (i + l <= n && memcmp(s + i, ops[k], l) == 0)
            return l;
    }
    return 0;
}

/* The simplified form of a demangled name d (n bytes) into out (at least n + 1 bytes). */
static void simplify(const char *d, size_t n, char *out)
{
    /* " [clone .cold]" suffixes */
    for (;;) {
        const char *c = NULL;
        for (const char *p = d; (p = strstr(p, " [clone ")) != NULL && p < d + n; p++)
            c = p;
        if (c == NULL || d[n - 1] != ']')
            break;
        n = (size_t)(c - d);
    }
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        char c = d[i];
        if (c == '(' && n - i >= 21 && memcmp(d + i, "(anonymous namespace)", 21) == 0) {
            memcpy(out + o, d + i, 21);
            o += 21, i += 21;
        } else if (c == '{') {
            size_t e = group_end(d, i, n, '{', '}');
            memcpy(out + o, d + i, e - i);
            o += e - i, i = e;
        } else if (c == 'o' && n - i >= 8 && memcmp(d + i, "operator", 8) == 0 && (i == 0 || !ident(d[i - 1])) &&
                   (i + 8 == n || !ident(d[i + 8]))) {
            memcpy(out + o, "operator", 8);
            o += 8, i += 8;
            size_t l = operator_len(d, i, n);
            if (l > 0) {
                memcpy(out + o, d + i, l);
                o += l, i += l;
            } else { /* operator new, operator delete[], operator unsigned int: up to the parameters */
                while (i < n && d[i] != '(') {
                    if (d[i] == '<')
                        i = group_end(d, i, n, '<', '>');
                    else
                        out[o++] = d[i++];
                }
            }
        } else if (c == '<') {
            i = group_end(d, i, n, '<', '>');
        } else if (c == '(') {
            i = group_end(d, i, n, '(', ')');
            if (!(i + 1 < n && d[i] == ':' && d[i + 1] == ':'))
                break; /* the parameters: the name ended before them */
        } else if (c == ' ') {
            o = 0; /* what came before was a return type */
            i++;
        } else {
            out[o++] = d[i++];
        }
    }
    out[o] = 0;
}

char *ps_symbols_demangle(const char *name, ps_arena_t *a)
{
    size_t n = strlen(name);
    if (n < 3 || n > MANGLED_MAX || name[0] != '_' || name[1] != 'Z')
        return NULL;
    int status = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &status);
    if (d == NULL || status != 0) {
        free(d);
        return NULL;
    }
    size_t dn = strlen(d);
    char *out = ps_arena_alloc(a, dn + 1);
    simplify(d, dn, out);
    free(d);
    if (out[0] == 0)
        return NULL;
    return out;
}
