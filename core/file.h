/*
 * file.h - reading files named by configuration or discovery without blocking.
 *
 * A name may point at a FIFO, a character device or a directory (a file_sd pattern matching a
 * FIFO, a password_file swapped for /dev/stdin): open(2) of a FIFO blocks until a writer comes
 * and read(2) of a terminal until a line does, which would stall the thread that reads (the
 * scraper's, the one applying a reload). These helpers open with O_NONBLOCK, then accept regular
 * files only.
 */
#ifndef PS_CORE_FILE_H
#define PS_CORE_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "mem.h"

/** Appends the content of the regular file path (at most max bytes) to b. Returns 0, or -1 with
 *  why filled ("No such file or directory", "not a regular file", "larger than 1048576 bytes");
 *  b may then hold part of the file. Never blocks on a FIFO or device. */
int ps_file_read(const char *path, size_t max, ps_buf_t *b, char *why, size_t whylen);

/** Whether path names a regular file this process can open for reading (why says otherwise).
 *  Never blocks. */
bool ps_file_readable(const char *path, char *why, size_t whylen);

#endif
