/*
 * file_sd.c - the file_sd files of one scrape configuration (see discovery.h).
 *
 * Each refresh globs every pattern (only the last path segment may hold a '*', as in Prometheus),
 * stats each regular file it matches and re-reads the ones whose mtime, ctime, size or inode
 * changed: a file renamed into place may keep its mtime and size (cp -p, rsync -t), its inode and
 * ctime change all the same. Only well-formed files are applied; a broken one keeps the groups it
 * gave before. Files are read whole, at most 16 MiB.
 */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "core/file.h"
#include "core/log.h"
#include "discovery.h"

#define MAX_FILE_BYTES (16u << 20)

typedef struct sd_file {
    char *path;
    struct timespec mtime, ctime;
    off_t size;
    ino_t ino;
    ps_arena_t arena;
    ps_target_group_t *groups;
    uint32_t ngroups;
    bool seen; /* matched by the last glob */
} sd_file_t;

struct ps_filesd {
    const ps_scrape_config_t *cfg;
    sd_file_t *files;
    uint32_t nfiles;
    char warning[512];  /* patterns that matched nothing at the last refresh */
    uint32_t unmatched; /* how many */
    char warned[512];   /* the same, as last logged (logged again only when it changes) */
};

ps_filesd_t *ps_filesd_new(const ps_scrape_config_t *cfg)
{
    ps_filesd_t *f = ps_xcalloc(1, sizeof(*f));
    f->cfg = cfg;
    return f;
}

static void file_dispose(sd_file_t *f)
{
    free(f->path);
    ps_arena_dispose(&f->arena);
}

void ps_filesd_free(ps_filesd_t *f)
{
    if (f == NULL)
        return;
    for (uint32_t i = 0; i < f->nfiles; i++)
        file_dispose(&f->files[i]);
    free(f->files);
    free(f);
}

/* A regular file's bytes, NUL-terminated: a FIFO the pattern matches would block the scraper's
 * thread in open(2) or read(2), so it is refused like an unreadable file (core/file.h). */
static uint8_t *read_all(const char *path, size_t *n, size_t max, char *why, size_t whylen)
{
    ps_buf_t b = PS_BUF_INIT;
    char e[128];
    if (ps_file_read(path, max, &b, e, sizeof(e)) != 0) {
        if (strncmp(e, "larger than", 11) == 0)
            snprintf(why, whylen, "file is larger than %zu bytes", max);
        else
            snprintf(why, whylen, "%s", e);
        ps_buf_dispose(&b);
        return NULL;
    }
    *n = b.len;
    ps_buf_putc(&b, 0);
    return b.data;
}

static sd_file_t *file_get(ps_filesd_t *f, const char *path, bool *added)
{
    for (uint32_t i = 0; i < f->nfiles; i++)
        if (strcmp(f->files[i].path, path) == 0)
            return &f->files[i];
    f->files = ps_xrealloc(f->files, (f->nfiles + 1) * sizeof(sd_file_t));
    sd_file_t *sf = &f->files[f->nfiles++];
    memset(sf, 0, sizeof(*sf));
    sf->path = ps_xstrndup(path, strlen(path));
    *added = true;
    return sf;
}

/* Reads and parses one file whose stat changed; true when its groups were replaced. */
static bool reload_file(ps_filesd_t *f, sd_file_t *sf, const struct stat *st, uint64_t *failures)
{
    char why[256];
    size_t n;
    uint8_t *data = read_all(sf->path, &n, MAX_FILE_BYTES, why, sizeof(why));
    if (data == NULL) {
        ps_log_error("file_sd: cannot read file", "job=%s file=%s err=%s", ps_log_q(f->cfg->job_name),
                     ps_log_q(sf->path), ps_log_q(why));
        (*failures)++;
        return false;
    }
    size_t pl = strlen(sf->path);
    bool yaml = (pl > 4 && strcmp(sf->path + pl - 4, ".yml") == 0) || (pl > 5 && strcmp(sf->path + pl - 5, ".yaml") == 0);
    ps_arena_t na = PS_ARENA_INIT;
    ps_target_group_t *groups;
    uint32_t ng;
    ps_err_t err;
    int rc = ps_sd_parse((const char *)data, n, yaml, sf->path, &na, &groups, &ng, &err);
    free(data);
    if (rc != 0) {
        ps_log_error("file_sd: invalid file, keeping its previous targets", "job=%s err=%s", ps_log_q(f->cfg->job_name),
                     ps_log_q(err.msg));
        (*failures)++;
        ps_arena_dispose(&na);
        return false;
    }
    ps_arena_dispose(&sf->arena);
    sf->arena = na;
    sf->groups = groups;
    sf->ngroups = ng;
    sf->mtime = st->st_mtim;
    sf->ctime = st->st_ctim;
    sf->ino = st->st_ino;
    sf->size = st->st_size;
    return true;
}

bool ps_filesd_refresh(ps_filesd_t *f, bool force, uint64_t *failures)
{
    bool changed = false;
    for (uint32_t i = 0; i < f->nfiles; i++)
        f->files[i].seen = false;
    f->warning[0] = 0;
    f->unmatched = 0;
    for (uint32_t k = 0; k < f->cfg->nfile_sd; k++) {
        const ps_file_sd_t *fsd = &f->cfg->file_sd[k];
        for (uint32_t j = 0; j < fsd->nfiles; j++) {
            glob_t g;
            size_t matched = 0;
            if (glob(fsd->files[j], 0, NULL, &g) == 0) {
                for (size_t m = 0; m < g.gl_pathc; m++) {
                    const char *path = g.gl_pathv[m];
                    struct stat st;
                    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
                        continue;
                    matched++;
                    bool added = false;
                    sd_file_t *sf = file_get(f, path, &added);
                    sf->seen = true;
                    bool differs = added || force || st.st_mtim.tv_sec != sf->mtime.tv_sec ||
                                   st.st_mtim.tv_nsec != sf->mtime.tv_nsec || st.st_ctim.tv_sec != sf->ctime.tv_sec ||
                                   st.st_ctim.tv_nsec != sf->ctime.tv_nsec || st.st_size != sf->size ||
                                   st.st_ino != sf->ino;
                    if (differs && reload_file(f, sf, &st, failures))
                        changed = true;
                }
                globfree(&g);
            }
            size_t wl = strlen(f->warning);
            f->unmatched += matched == 0;
            if (matched == 0 && wl + 1 < sizeof(f->warning))
                snprintf(f->warning + wl, sizeof(f->warning) - wl, "%sfile_sd_configs[%u].files[%u]: \"%s\" matches no file",
                         wl ? "; " : "", k, j, fsd->files[j]);
        }
    }
    /* files that no longer exist take their targets with them */
    for (uint32_t i = 0; i < f->nfiles;) {
        if (!f->files[i].seen) {
            file_dispose(&f->files[i]);
            f->files[i] = f->files[--f->nfiles];
            changed = true;
        } else {
            i++;
        }
    }
    if (strcmp(f->warning, f->warned) != 0) {
        if (f->warning[0])
            ps_log_warn("file_sd: no file matches", "job=%s err=%s", ps_log_q(f->cfg->job_name), ps_log_q(f->warning));
        memcpy(f->warned, f->warning, sizeof(f->warned));
    }
    return changed;
}

int64_t ps_filesd_interval(const ps_filesd_t *f)
{
    int64_t iv = 0;
    for (uint32_t k = 0; k < f->cfg->nfile_sd; k++)
        if (iv == 0 || (f->cfg->file_sd[k].refresh_interval > 0 && f->cfg->file_sd[k].refresh_interval < iv))
            iv = f->cfg->file_sd[k].refresh_interval;
    return iv;
}

uint32_t ps_filesd_count(const ps_filesd_t *f)
{
    return f->nfiles;
}

const char *ps_filesd_file(const ps_filesd_t *f, uint32_t i, const ps_target_group_t **groups, uint32_t *ngroups)
{
    *groups = f->files[i].groups;
    *ngroups = f->files[i].ngroups;
    return f->files[i].path;
}

const char *ps_filesd_warning(const ps_filesd_t *f)
{
    return f->warning;
}

uint32_t ps_filesd_unmatched(const ps_filesd_t *f)
{
    return f->unmatched;
}

void ps_filesd_watch(const ps_filesd_t *f, int inotify_fd)
{
    if (inotify_fd < 0)
        return;
    for (uint32_t k = 0; k < f->cfg->nfile_sd; k++)
        for (uint32_t j = 0; j < f->cfg->file_sd[k].nfiles; j++) {
            char dir[PATH_MAX];
            snprintf(dir, sizeof(dir), "%s", f->cfg->file_sd[k].files[j]);
            char *slash = strrchr(dir, '/');
            if (slash == NULL)
                snprintf(dir, sizeof(dir), ".");
            else if (slash == dir)
                dir[1] = 0;
            else
                *slash = 0;
            inotify_add_watch(inotify_fd, dir,
                              IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_ATTRIB);
        }
}
