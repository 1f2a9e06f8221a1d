/*
 * fuzz_symbols.c - libFuzzer target for the debug files read when native frames are symbolized
 * (src/symbols/symbols.c over elfutils' libdwfl): the input's bytes after the first 8 are written
 * as the debug file of a build id under a temporary .build-id directory, then a profile with
 * locations of that build id (the addresses: the first 8 bytes, twice, and +1) is symbolized
 * through ps_symbols_profile, as the store's read does (a new symbolizer per input, so every input
 * is read from its file). It must not crash and must leave a profile whose every index is in
 * range, with at most PS_SYMBOLS_FRAMES_MAX frames per location.
 * Seeds (run.sh): a small program compiled with gcc -g -O2, whole and as objcopy --only-keep-debug
 * makes its debug file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols/symbols.h"

#define PS_FUZZ_NAME "fuzz_symbols"
#include "fuzzutil.h"

#define BID "abcdef0123456789"

static char dir[64], path[160];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    strcpy(dir, "/tmp/fuzz_symbols_XXXXXX");
    if (mkdtemp(dir) == NULL)
        abort();
    char sub[128];
    snprintf(sub, sizeof(sub), "%s/.build-id", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof(sub), "%s/.build-id/ab", dir);
    mkdir(sub, 0700);
    snprintf(path, sizeof(path), "%s/.build-id/ab/%s.debug", dir, &BID[2]);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t addr;
    memcpy(&addr, data, 8);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    fwrite(data + 8, 1, size - 8, f);
    fclose(f);

    ps_symbols_t *s = ps_symbols_new((const char *const[]){dir}, 1);
    ps_arena_t a = PS_ARENA_INIT;
    ps_str_t strs[3] = {{"", 0}, {"/bin/x", 6}, {BID, sizeof(BID) - 1}};
    ps_mapping_t maps[2] = {{.memory_start = 0, .memory_limit = 0, .filename = 1, .build_id = 2},
                            {.memory_start = 0x400000, .memory_limit = 0x800000, .file_offset = 0x1000,
                             .filename = 1, .build_id = 2}};
    ps_location_t locs[3] = {{.mapping = 1, .address = addr & 0xffffff},
                             {.mapping = 2, .address = 0x400000 + (addr >> 40)},
                             {.mapping = 1, .address = (addr & 0xffffff) + 1}};
    ps_profile_t p = {.nstrings = 3, .strings = strs, .nmappings = 2, .mappings = maps, .nlocations = 3,
                      .locations = locs};
    ps_symbols_profile(s, &p, &a);
    for (uint32_t i = 0; i < p.nlocations; i++) {
        CHECK(p.locations[i].nlines <= PS_SYMBOLS_FRAMES_MAX, "location %u: %u frames", i, p.locations[i].nlines);
        for (uint32_t k = 0; k < p.locations[i].nlines; k++) {
            uint32_t fn = p.locations[i].lines[k].function;
            CHECK(fn >= 1 && fn <= p.nfunctions, "location %u line %u: function %u of %u", i, k, fn, p.nfunctions);
            const ps_function_t *fu = &p.functions[fn - 1];
            CHECK(fu->name < p.nstrings && fu->filename < p.nstrings, "function %u", fn);
            CHECK(strlen(p.strings[fu->name].ptr) == p.strings[fu->name].len, "function %u name", fn);
        }
    }
    ps_arena_dispose(&a);
    ps_symbols_free(s);
    return 0;
}
