/*
 * fuzz_elfcheck.c - libFuzzer target for the check of an uploaded debug file
 * (src/symbols/elfcheck.c, ps_symbols_elf_check over libelf and libdwelf, as src/debuginfo/ calls
 * it on the file it has just written): the input is written to a file and checked through its
 * descriptor. It must not crash, must answer 0 or PS_EINVAL, with a build id of lowercase hex
 * digits (an even number, at most 128) on 0 and a message on PS_EINVAL, and must leave the file's
 * bytes as they were (libelf reads through a private read-only mapping).
 * Seeds (run.sh): a program compiled with gcc -g -O2, whole and as objcopy --only-keep-debug makes
 * its debug file.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbols/symbols.h"

#define PS_FUZZ_NAME "fuzz_elfcheck"
#include "fuzzutil.h"

static char path[64];
static uint8_t *back;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    strcpy(path, "/tmp/fuzz_elfcheck_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = open(path, O_RDWR | O_TRUNC);
    if (fd < 0)
        abort();
    if (size > 0 && write(fd, data, size) != (ssize_t)size)
        abort();
    char hex[2 * 64 + 1];
    ps_err_t err;
    err.msg[0] = 0;
    int ret = ps_symbols_elf_check(fd, hex, sizeof(hex), &err);
    CHECK(ret == 0 || ret == PS_EINVAL, "returned %d (%s)", ret, err.msg);
    if (ret == 0) {
        size_t n = strlen(hex);
        CHECK(n > 0 && n % 2 == 0 && n <= 128, "build id of %zu digits", n);
        for (size_t i = 0; i < n; i++)
            CHECK((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'), "digit %zu: %c", i, hex[i]);
    } else {
        CHECK(err.msg[0] != 0, "no message");
    }
    back = realloc(back, size + 1);
    CHECK(pread(fd, back, size + 1, 0) == (ssize_t)size && memcmp(back, data, size) == 0, "the file changed");
    close(fd);
    return 0;
}
