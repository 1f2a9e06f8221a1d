/*
 * reserve.c - the disk reserve: <dir>/space.reserve holds --storage.disk-reserve bytes of the
 * file system, given up when the disk is full (a failed commit, txn.c) so that retention and
 * compaction can still run, and taken again before writes resume (ps_store_space_check, env.c).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "internal.h"

/* The mount point of path: the last directory up from it on the same device. */
void ps_store_mount_point(const char *path, char *out, size_t size)
{
    char cur[4096];
    if (realpath(path, cur) == NULL) {
        snprintf(out, size, "%s", path);
        return;
    }
    struct stat st, up;
    if (stat(cur, &st) != 0) {
        snprintf(out, size, "%s", cur);
        return;
    }
    for (;;) {
        char *slash = strrchr(cur, '/');
        if (slash == NULL || slash == cur) { /* the parent is / */
            if (stat("/", &up) == 0 && up.st_dev == st.st_dev)
                snprintf(cur, sizeof(cur), "/");
            break;
        }
        *slash = '\0';
        if (stat(cur, &up) != 0 || up.st_dev != st.st_dev) {
            *slash = '/';
            break;
        }
    }
    snprintf(out, size, "%s", cur);
}

static void reserve_path(const ps_store_t *s, char *out, size_t size)
{
    snprintf(out, size, "%s/space.reserve", s->dir);
}

/* The reserve is at most 1/16 of the file system: a reserve larger than the disk could never be
 * taken, and every write would be refused for good (32 MiB on a 20 MiB volume). */
void ps_store_reserve_fit(ps_store_t *s)
{
    struct statvfs vfs;
    if (s->opts.disk_reserve == 0 || statvfs(s->dir, &vfs) != 0)
        return;
    uint64_t most = (uint64_t)vfs.f_blocks * vfs.f_frsize / 16 / 4096 * 4096;
    if (s->opts.disk_reserve > most)
        s->opts.disk_reserve = most > 0 ? most : 4096;
}

uint64_t ps_store_disk_reserve(const ps_store_t *s)
{
    return s->opts.disk_reserve;
}

/* Takes the disk reserve (again): true once the file holds opts.disk_reserve bytes. */
bool ps_store_reserve_take(ps_store_t *s)
{
    if (s->opts.disk_reserve == 0 || s->reserve_held)
        return true;
    char path[4096];
    reserve_path(s, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    int rc = posix_fallocate(fd, 0, (off_t)s->opts.disk_reserve);
    close(fd);
    if (rc != 0) {
        unlink(path); /* a partial one would only hold space nobody can use */
        return false;
    }
    s->reserve_held = true;
    return true;
}

void ps_store_space_release(ps_store_t *s)
{
    if (!s->reserve_held)
        return;
    char path[4096];
    reserve_path(s, path, sizeof(path));
    unlink(path);
    s->reserve_held = false;
}
