/*
 * file.c - non-blocking reads of regular files (file.h).
 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An fd of the regular file path, or -1 with why. O_NONBLOCK: a FIFO opens at once instead of
 * waiting for a writer, and is then refused by its type. */
static int open_regular(const char *path, char *why, size_t whylen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
        close(fd);
        return -1;
    }
    return fd;
}

int ps_file_read(const char *path, size_t max, ps_buf_t *b, char *why, size_t whylen)
{
    int fd = open_regular(path, why, whylen);
    if (fd < 0)
        return -1;
    size_t start = b->len;
    int rc = 0;
    for (;;) {
        uint8_t *dst = ps_buf_reserve(b, 65536);
        ssize_t got = read(fd, dst, 65536);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(why, whylen, "%s", strerror(errno));
            rc = -1;
            break;
        }
        if (got == 0)
            break;
        b->len += (size_t)got;
        if (b->len - start > max) {
            snprintf(why, whylen, "larger than %zu bytes", max);
            rc = -1;
            break;
        }
    }
    close(fd);
    return rc;
}

bool ps_file_readable(const char *path, char *why, size_t whylen)
{
    int fd = open_regular(path, why, whylen);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}
