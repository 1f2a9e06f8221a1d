/*
 * debuginfo.c - the uploaded debug files (debuginfo.h). Layout under the store's directory:
 *
 *   <dir>/.build-id/ab/cdef….debug   the uploaded ELF file, as sent
 *   <dir>/.build-id/ab/cdef….meta    its ObjectMetadata (binary protobuf, proto/debuginfo.h)
 *   <dir>/tmp/<build id>.{debug,meta}.tmp   an upload being written (emptied at open)
 *
 * An upload is acknowledged once both files are fsynced, renamed into .build-id/ab/ (.meta
 * first, so a .debug never lacks the metadata it was sent with) and that directory fsynced
 * (with .build-id when ab/ was made for it). A crash before leaves at most a .tmp (removed at
 * open) or a .meta alone (removed at open).
 */
#include "debuginfo.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/symbols.h"

#define ID_MAX 40         /* hex digits of a build id (Pyroscope's ^[a-fA-F0-9]{2,40}$) */
#define META_RESERVE 8192 /* bytes counted for a .meta being written (a real one is < 200 + strings) */
#define META_READ_MAX (64u << 10)
#define DIR_MAX 3000 /* bytes of the directory's path */

enum { P_WAITING, P_WRITING, P_WRITTEN }; /* a pending upload: for its body, writing it, for UploadFinished */

typedef struct pending {
    char id[ID_MAX + 1]; /* "" : a free slot */
    int state;
    int64_t started_ns;
    ps_di_file_t file; /* strings malloc'ed */
} pending_t;

struct ps_debuginfo {
    pthread_mutex_t mu;
    char *dir;
    ps_debuginfo_opts_t o;
    uint64_t used, files, reserved; /* bytes and .debug files kept; bytes being written */
    pending_t pending[PS_DEBUGINFO_PENDING_MAX];
};

/* ---- helpers ---- */

/* id (as sent) in lowercase into out; false when it is not 2 to 40 hex digits */
static bool norm_id(const char *id, char *out)
{
    size_t n = strlen(id);
    if (n < 2 || n > ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)id[i]))
            return false;
        out[i] = (char)tolower((unsigned char)id[i]);
    }
    out[n] = 0;
    return true;
}

/* PS_EINVAL "<prefix>invalid gnuBuildID "<id>"" (Pyroscope's words; the id Go-quoted, at most 100 bytes) */
static int bad_id(ps_err_t *err, const char *prefix, const char *id)
{
    char q[512];
    size_t k = 0, n = strlen(id);
    for (size_t i = 0; i < n && i < 100; i++) {
        unsigned char c = (unsigned char)id[i];
        if (c == '"' || c == '\\')
            k += (size_t)snprintf(q + k, sizeof(q) - k, "\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            k += (size_t)snprintf(q + k, sizeof(q) - k, "\\x%02x", c);
        else
            q[k++] = (char)c;
    }
    q[k] = 0;
    return ps_err_set(err, PS_EINVAL, "%sinvalid gnuBuildID \"%s%s\"", prefix, q, n > 100 ? "..." : "");
}

/* snprintf of a path (paths are bounded: the directory is at most DIR_MAX bytes) */
static void __attribute__((format(printf, 3, 4))) pathf(char *out, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, cap, fmt, ap);
    va_end(ap);
}

static void path_of(const ps_debuginfo_t *d, const char *id, const char *ext, char *out, size_t cap)
{
    pathf(out, cap, "%s/.build-id/%.2s/%s.%s", d->dir, id, id + 2, ext);
}

static int sync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* a file system error: PS_ENOSPACE for a full disk, else PS_ESTORAGE */
static int fs_error(ps_err_t *err, const char *what, const char *path)
{
    int e = errno;
    if (e == ENOSPC || e == EDQUOT)
        return ps_err_set(err, PS_ENOSPACE, "disk full: %s %s: %s", what, path, strerror(e));
    return ps_err_set(err, PS_ESTORAGE, "%s %s: %s", what, path, strerror(e));
}

static bool file_size(const char *path, uint64_t *size)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    *size = (uint64_t)st.st_size;
    return true;
}

static char *dup_bounded(const char *s)
{
    return ps_xstrndup(s, strnlen(s, PS_DEBUGINFO_STRING_MAX));
}

static void pending_clear(pending_t *p)
{
    free((char *)p->file.gnu_build_id);
    free((char *)p->file.go_build_id);
    free((char *)p->file.otel_file_id);
    free((char *)p->file.name);
    memset(p, 0, sizeof(*p));
}

static pending_t *pending_find(ps_debuginfo_t *d, const char *id)
{
    for (size_t i = 0; i < PS_DEBUGINFO_PENDING_MAX; i++)
        if (d->pending[i].id[0] && strcmp(d->pending[i].id, id) == 0)
            return &d->pending[i];
    return NULL;
}

/* a free slot, making one of a stale upload not being written; NULL when all are taken */
static pending_t *pending_slot(ps_debuginfo_t *d, int64_t now_ns)
{
    pending_t *stale = NULL;
    for (size_t i = 0; i < PS_DEBUGINFO_PENDING_MAX; i++) {
        pending_t *p = &d->pending[i];
        if (!p->id[0])
            return p;
        if (p->state != P_WRITING && now_ns - p->started_ns > PS_DEBUGINFO_STALE_NS &&
            (stale == NULL || p->started_ns < stale->started_ns))
            stale = p;
    }
    if (stale != NULL)
        pending_clear(stale);
    return stale;
}

/* ---- open, scan ---- */

/* counts the files of .build-id/<ab>/ (and removes a .meta alone) */
static void scan_subdir(ps_debuginfo_t *d, const char *sub)
{
    DIR *dp = opendir(sub);
    if (dp == NULL)
        return;
    struct dirent *e;
    char path[4096], other[4096];
    while ((e = readdir(dp)) != NULL) {
        size_t n = strlen(e->d_name);
        bool debug = n > 6 && strcmp(e->d_name + n - 6, ".debug") == 0;
        bool meta = n > 5 && strcmp(e->d_name + n - 5, ".meta") == 0;
        if (!debug && !meta)
            continue;
        uint64_t size;
        pathf(path, sizeof(path), "%s/%s", sub, e->d_name);
        if (!file_size(path, &size))
            continue;
        if (meta) {
            pathf(other, sizeof(other), "%s/%.*s.debug", sub, (int)(n - 5), e->d_name);
            uint64_t ds;
            if (!file_size(other, &ds)) { /* an upload that died between its two renames */
                unlink(path);
                continue;
            }
        } else {
            d->files++;
        }
        d->used += size;
    }
    closedir(dp);
}

int ps_debuginfo_open(const char *dir, const ps_debuginfo_opts_t *o, ps_debuginfo_t **out, ps_err_t *err)
{
    char path[4096];
    *out = NULL;
    if (strlen(dir) > DIR_MAX)
        return ps_err_set(err, PS_EINVAL, "the debug info directory's path is longer than %d bytes", DIR_MAX);
    const char *subs[] = {"", "/.build-id", "/tmp"};
    for (size_t i = 0; i < 3; i++) {
        pathf(path, sizeof(path), "%s%s", dir, subs[i]);
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return fs_error(err, "cannot make the debug info directory", path);
    }
    ps_debuginfo_t *d = ps_xcalloc(1, sizeof(*d));
    pthread_mutex_init(&d->mu, NULL);
    d->dir = ps_xstrndup(dir, strlen(dir));
    d->o = *o;
    pathf(path, sizeof(path), "%s/tmp", dir);
    DIR *dp = opendir(path);
    if (dp != NULL) {
        struct dirent *e;
        char f[4096];
        while ((e = readdir(dp)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            pathf(f, sizeof(f), "%s/%s", path, e->d_name);
            unlink(f);
        }
        closedir(dp);
    }
    pathf(path, sizeof(path), "%s/.build-id", dir);
    dp = opendir(path);
    if (dp == NULL) {
        ps_debuginfo_free(d);
        return fs_error(err, "cannot read the debug info directory", path);
    }
    struct dirent *e;
    char sub[4096];
    while ((e = readdir(dp)) != NULL) {
        if (strlen(e->d_name) != 2 || !isxdigit((unsigned char)e->d_name[0]) || !isxdigit((unsigned char)e->d_name[1]))
            continue;
        pathf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        scan_subdir(d, sub);
    }
    closedir(dp);
    *out = d;
    return 0;
}

void ps_debuginfo_free(ps_debuginfo_t *d)
{
    if (d == NULL)
        return;
    for (size_t i = 0; i < PS_DEBUGINFO_PENDING_MAX; i++)
        if (d->pending[i].id[0])
            pending_clear(&d->pending[i]);
    pthread_mutex_destroy(&d->mu);
    free(d->dir);
    free(d);
}

const char *ps_debuginfo_dir(const ps_debuginfo_t *d)
{
    return d->dir;
}

void ps_debuginfo_usage(ps_debuginfo_t *d, uint64_t *bytes, uint64_t *files, uint64_t *pending)
{
    pthread_mutex_lock(&d->mu);
    *bytes = d->used;
    *files = d->files;
    uint64_t n = 0;
    for (size_t i = 0; i < PS_DEBUGINFO_PENDING_MAX; i++)
        n += d->pending[i].id[0] != 0;
    *pending = n;
    pthread_mutex_unlock(&d->mu);
}

/* ---- the protocol ---- */

int ps_debuginfo_should_upload(ps_debuginfo_t *d, const ps_di_file_t *file, int64_t now_ns, bool *should,
                               const char **reason, ps_err_t *err)
{
    char id[ID_MAX + 1], path[4096];
    uint64_t size;
    *should = false;
    *reason = "";
    if (file != NULL && file->gnu_build_id[0] == 0) {
        *reason = PS_DEBUGINFO_REASON_EMPTY;
        return 0;
    }
    if (file == NULL)
        return ps_err_set(err, PS_EINVAL, "invalid request: init.File == nil");
    if (file->type != PS_DI_TYPE_EXECUTABLE_FULL && file->type != PS_DI_TYPE_EXECUTABLE_NO_TEXT)
        return ps_err_set(err, PS_EINVAL, "invalid request: init.File.Type(%d) is not valid", (int)file->type);
    if (!norm_id(file->gnu_build_id, id))
        return bad_id(err, "invalid request: ", file->gnu_build_id);
    path_of(d, id, "debug", path, sizeof(path));
    int ret = 0;
    pthread_mutex_lock(&d->mu);
    pending_t *p = pending_find(d, id);
    if (file_size(path, &size)) {
        *reason = PS_DEBUGINFO_REASON_EXISTS;
    } else if (p != NULL && (p->state == P_WRITING || now_ns - p->started_ns <= PS_DEBUGINFO_STALE_NS)) {
        *reason = PS_DEBUGINFO_REASON_IN_PROGRESS;
    } else if (d->used + d->reserved >= d->o.max_bytes) {
        ret = ps_err_set(err, PS_ENOSPACE, "debug info store full: %llu bytes kept, %s is %llu bytes",
                         (unsigned long long)(d->used + d->reserved),
                         ps_setting_name(PS_SETTING_DEBUGINFO_MAX_BYTES), (unsigned long long)d->o.max_bytes);
    } else {
        *reason = p != NULL ? PS_DEBUGINFO_REASON_STALE : PS_DEBUGINFO_REASON_FIRST_TIME;
        if (p == NULL && (p = pending_slot(d, now_ns)) == NULL) {
            ret = ps_err_set(err, PS_EOVERLOAD, "%d uploads are in progress, none stale; try again later",
                             PS_DEBUGINFO_PENDING_MAX);
        } else {
            pending_clear(p);
            memcpy(p->id, id, strlen(id) + 1);
            p->state = P_WAITING;
            p->started_ns = now_ns;
            p->file = (ps_di_file_t){.gnu_build_id = ps_xstrndup(id, strlen(id)),
                                     .go_build_id = dup_bounded(file->go_build_id),
                                     .otel_file_id = dup_bounded(file->otel_file_id),
                                     .name = dup_bounded(file->name),
                                     .type = file->type};
            *should = true;
        }
    }
    pthread_mutex_unlock(&d->mu);
    if (ret != 0)
        *reason = "";
    return ret;
}

/* writes data to a new file at path, fsynced unless nosync; check: the ELF check of it */
static int write_file(const ps_debuginfo_t *d, const char *path, const void *data, size_t len, const char *check_id,
                      ps_err_t *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fs_error(err, "cannot create", path);
    int ret = 0;
    if (write_all(fd, data, len) != 0) {
        ret = fs_error(err, "cannot write", path);
        goto Exit;
    }
    if (check_id != NULL) {
        char got[2 * 64 + 1];
        if ((ret = ps_symbols_elf_check(fd, got, sizeof(got), err)) != 0)
            goto Exit;
        if (strcmp(got, check_id) != 0) {
            ret = ps_err_set(err, PS_EINVAL, "the file's GNU build ID is %s, not %s (the build ID it is uploaded as)",
                             got, check_id);
            goto Exit;
        }
    }
    if (!d->o.nosync && fsync(fd) != 0)
        ret = fs_error(err, "cannot fsync", path);
Exit:
    close(fd);
    if (ret != 0)
        unlink(path);
    return ret;
}

int ps_debuginfo_upload(ps_debuginfo_t *d, const char *build_id, const void *data, size_t len, int64_t now_ns,
                        ps_err_t *err)
{
    char id[ID_MAX + 1], final_debug[4096], final_meta[4096], tmp_debug[4096], tmp_meta[4096], sub[4096];
    uint64_t size;
    if (!norm_id(build_id, id))
        return bad_id(err, "invalid gnu_build_id: ", build_id);
    if (len > d->o.max_file_bytes)
        return ps_err_set(err, PS_ETOOBIG, "the file is %zu bytes, more than %s (%llu bytes)", len,
                          ps_setting_name(PS_SETTING_DEBUGINFO_MAX_FILE), (unsigned long long)d->o.max_file_bytes);
    path_of(d, id, "debug", final_debug, sizeof(final_debug));
    path_of(d, id, "meta", final_meta, sizeof(final_meta));
    pathf(tmp_debug, sizeof(tmp_debug), "%s/tmp/%s.debug.tmp", d->dir, id);
    pathf(tmp_meta, sizeof(tmp_meta), "%s/tmp/%s.meta.tmp", d->dir, id);
    pathf(sub, sizeof(sub), "%s/.build-id/%.2s", d->dir, id);

    /* the pending upload, and room for it */
    ps_di_object_t meta = {0};
    uint64_t reserve = (uint64_t)len + META_RESERVE;
    int ret = 0;
    pthread_mutex_lock(&d->mu);
    pending_t *p = pending_find(d, id);
    if (p == NULL || p->state == P_WRITTEN || file_size(final_debug, &size))
        ret = ps_err_set(err, PS_ENOTFOUND, "no pending upload for this build ID");
    else if (p->state == P_WRITING)
        ret = ps_err_set(err, PS_ECONFLICT, "this build ID is being uploaded by another request");
    else if (d->used + d->reserved + reserve > d->o.max_bytes)
        ret = ps_err_set(err, PS_ENOSPACE,
                         "debug info store full: the file's %zu bytes and the %llu bytes kept are more than %s (%llu bytes)",
                         len, (unsigned long long)(d->used + d->reserved),
                         ps_setting_name(PS_SETTING_DEBUGINFO_MAX_BYTES), (unsigned long long)d->o.max_bytes);
    if (ret == 0) {
        p->state = P_WRITING;
        d->reserved += reserve;
        meta.file = p->file;
        meta.file.gnu_build_id = ps_xstrndup(id, strlen(id)); /* p's strings may go (a Delete) */
        meta.file.go_build_id = ps_xstrndup(p->file.go_build_id, strlen(p->file.go_build_id));
        meta.file.otel_file_id = ps_xstrndup(p->file.otel_file_id, strlen(p->file.otel_file_id));
        meta.file.name = ps_xstrndup(p->file.name, strlen(p->file.name));
        meta.started_ns = p->started_ns;
    }
    pthread_mutex_unlock(&d->mu);
    if (ret != 0)
        return ret;

    /* the files: written, checked, fsynced, renamed, their directory fsynced */
    meta.state = PS_DI_STATE_UPLOADED;
    meta.finished_ns = now_ns;
    meta.size_bytes = (int64_t)len;
    ps_buf_t mb = PS_BUF_INIT;
    ps_di_meta_encode(&meta, &mb);
    bool made_sub = false;
    if ((ret = write_file(d, tmp_debug, data, len, id, err)) != 0)
        goto Exit;
    if ((ret = write_file(d, tmp_meta, mb.data, mb.len, NULL, err)) != 0)
        goto Exit;
    if (mkdir(sub, 0755) == 0)
        made_sub = true;
    else if (errno != EEXIST) {
        ret = fs_error(err, "cannot make", sub);
        goto Exit;
    }
    if (made_sub && !d->o.nosync) {
        char bid[4096];
        pathf(bid, sizeof(bid), "%s/.build-id", d->dir);
        if (sync_dir(bid) != 0) {
            ret = fs_error(err, "cannot fsync", bid);
            goto Exit;
        }
    }
    if (rename(tmp_meta, final_meta) != 0) {
        ret = fs_error(err, "cannot rename into", final_meta);
        goto Exit;
    }
    if (rename(tmp_debug, final_debug) != 0) {
        ret = fs_error(err, "cannot rename into", final_debug);
        unlink(final_meta);
        goto Exit;
    }
    if (!d->o.nosync && sync_dir(sub) != 0) /* the renames are not known durable: the answer says so */
        ret = fs_error(err, "cannot fsync", sub);
Exit:
    if (ret != 0) {
        unlink(tmp_debug);
        unlink(tmp_meta);
    }
    pthread_mutex_lock(&d->mu);
    d->reserved -= reserve;
    if (ret == 0 || file_size(final_debug, &size)) { /* kept (even when the last fsync failed) */
        if (file_size(final_debug, &size)) {
            d->used += size;
            d->files++;
        }
        if (file_size(final_meta, &size))
            d->used += size;
    }
    p = pending_find(d, id);
    if (p != NULL)
        p->state = ret == 0 ? P_WRITTEN : P_WAITING;
    pthread_mutex_unlock(&d->mu);
    ps_buf_dispose(&mb);
    free((char *)meta.file.gnu_build_id);
    free((char *)meta.file.go_build_id);
    free((char *)meta.file.otel_file_id);
    free((char *)meta.file.name);
    return ret;
}

int ps_debuginfo_finished(ps_debuginfo_t *d, const char *build_id, ps_err_t *err)
{
    char id[ID_MAX + 1], path[4096];
    uint64_t size;
    if (!norm_id(build_id, id))
        return bad_id(err, "invalid gnu_build_id: ", build_id);
    path_of(d, id, "debug", path, sizeof(path));
    int ret = 0;
    pthread_mutex_lock(&d->mu);
    pending_t *p = pending_find(d, id);
    if (p == NULL && file_size(path, &size))
        ret = ps_err_set(err, PS_ECONFLICT, "upload is not in uploading state");
    else if (p == NULL)
        ret = ps_err_set(err, PS_ENOTFOUND, "no upload metadata found for build ID %s", build_id);
    else if (p->state != P_WRITTEN)
        ret = ps_err_set(err, PS_ECONFLICT, "no uploaded file found for build ID %s", build_id);
    else
        pending_clear(p);
    pthread_mutex_unlock(&d->mu);
    return ret;
}

static int cmp_object(const void *a, const void *b)
{
    return strcmp(((const ps_di_object_t *)a)->file.gnu_build_id, ((const ps_di_object_t *)b)->file.gnu_build_id);
}

/* the object of a kept file: its .meta, or what its path and stat say */
static void kept_object(ps_arena_t *arena, const char *sub, const char *ab, const char *name, size_t nlen,
                        ps_di_object_t *o)
{
    char path[4096], id[ID_MAX + 1];
    pathf(id, sizeof(id), "%s%.*s", ab, (int)(nlen - 6), name);
    pathf(path, sizeof(path), "%s/%.*s.meta", sub, (int)(nlen - 6), name);
    struct stat st;
    bool have = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= META_READ_MAX) {
            char *b = ps_arena_alloc(arena, (size_t)st.st_size + 1);
            ps_err_t err;
            have = pread(fd, b, (size_t)st.st_size, 0) == st.st_size &&
                   ps_di_meta_decode(b, (size_t)st.st_size, arena, o, &err) == 0;
        }
        close(fd);
    }
    if (!have) {
        memset(o, 0, sizeof(*o));
        o->file = (ps_di_file_t){"", "", "", "", 0};
    }
    o->file.gnu_build_id = ps_arena_strndup(arena, id, strlen(id));
    o->state = PS_DI_STATE_UPLOADED;
    pathf(path, sizeof(path), "%s/%.*s", sub, (int)nlen, name);
    if (stat(path, &st) == 0) {
        o->size_bytes = (int64_t)st.st_size;
        if (!have)
            o->finished_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    }
}

int ps_debuginfo_list(ps_debuginfo_t *d, ps_arena_t *arena, ps_di_object_t **v, size_t *n, ps_err_t *err)
{
    size_t cap = 64, k = 0;
    ps_di_object_t *out = ps_arena_alloc(arena, cap * sizeof(*out));
#define GROW()                                                                     \
    do {                                                                           \
        if (k == cap) {                                                            \
            ps_di_object_t *nv = ps_arena_alloc(arena, 2 * cap * sizeof(*nv));     \
            memcpy(nv, out, k * sizeof(*nv));                                      \
            out = nv;                                                              \
            cap *= 2;                                                              \
        }                                                                          \
    } while (0)
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < PS_DEBUGINFO_PENDING_MAX; i++) {
        const pending_t *p = &d->pending[i];
        if (!p->id[0] || p->state == P_WRITTEN)
            continue;
        GROW();
        ps_di_object_t *o = &out[k++];
        memset(o, 0, sizeof(*o));
        o->file.gnu_build_id = ps_arena_strndup(arena, p->id, strlen(p->id));
        o->file.go_build_id = ps_arena_strndup(arena, p->file.go_build_id, strlen(p->file.go_build_id));
        o->file.otel_file_id = ps_arena_strndup(arena, p->file.otel_file_id, strlen(p->file.otel_file_id));
        o->file.name = ps_arena_strndup(arena, p->file.name, strlen(p->file.name));
        o->file.type = p->file.type;
        o->state = PS_DI_STATE_UPLOADING;
        o->started_ns = p->started_ns;
    }
    pthread_mutex_unlock(&d->mu);
    char path[4096], sub[4096];
    pathf(path, sizeof(path), "%s/.build-id", d->dir);
    DIR *dp = opendir(path);
    if (dp == NULL)
        return fs_error(err, "cannot read", path);
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        if (strlen(e->d_name) != 2 || !isxdigit((unsigned char)e->d_name[0]) || !isxdigit((unsigned char)e->d_name[1]))
            continue;
        pathf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        DIR *sp = opendir(sub);
        if (sp == NULL)
            continue;
        struct dirent *f;
        while ((f = readdir(sp)) != NULL) {
            size_t nl = strlen(f->d_name);
            if (nl <= 6 || nl - 6 > ID_MAX - 2 || strcmp(f->d_name + nl - 6, ".debug") != 0)
                continue;
            GROW();
            kept_object(arena, sub, e->d_name, f->d_name, nl, &out[k++]);
        }
        closedir(sp);
    }
    closedir(dp);
#undef GROW
    qsort(out, k, sizeof(*out), cmp_object);
    *v = out;
    *n = k;
    return 0;
}

int ps_debuginfo_delete(ps_debuginfo_t *d, const char *build_id, ps_err_t *err)
{
    char id[ID_MAX + 1], debug[4096], meta[4096], sub[4096];
    uint64_t size;
    if (!norm_id(build_id, id))
        return bad_id(err, "invalid gnu_build_id: ", build_id);
    path_of(d, id, "debug", debug, sizeof(debug));
    path_of(d, id, "meta", meta, sizeof(meta));
    pathf(sub, sizeof(sub), "%s/.build-id/%.2s", d->dir, id);
    int ret = 0;
    pthread_mutex_lock(&d->mu);
    pending_t *p = pending_find(d, id);
    if (p != NULL && p->state == P_WRITING) {
        ret = ps_err_set(err, PS_ECONFLICT, "this build ID is being uploaded by another request");
    } else {
        if (p != NULL)
            pending_clear(p);
        const char *paths[2] = {debug, meta};
        bool removed = false;
        for (int i = 0; i < 2 && ret == 0; i++) {
            if (!file_size(paths[i], &size))
                continue;
            if (unlink(paths[i]) != 0) {
                ret = fs_error(err, "cannot remove", paths[i]);
                break;
            }
            removed = true;
            d->used -= size < d->used ? size : d->used;
            if (i == 0 && d->files > 0)
                d->files--;
        }
        if (ret == 0 && removed && !d->o.nosync && sync_dir(sub) != 0)
            ret = fs_error(err, "cannot fsync", sub);
    }
    pthread_mutex_unlock(&d->mu);
    return ret;
}
