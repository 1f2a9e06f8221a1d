/*
 * profile.c - the names of frames that have no function: one naming for every room that shows or
 * matches them (render's flame graphs and tables, the querier's call sites).
 */
#include "profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

size_t ps_profile_addr_name(uint64_t addr, char *buf, size_t size)
{
    int n = snprintf(buf, size, "0x%" PRIx64, addr);
    return n > 0 ? (size_t)n : 0;
}

size_t ps_profile_bare_name(const ps_profile_t *p, const ps_location_t *loc, char *buf, size_t size)
{
    if (loc->mapping >= 1 && loc->mapping <= p->nmappings) {
        const ps_mapping_t *m = &p->mappings[loc->mapping - 1];
        ps_str_t fn = ps_profile_str(p, m->filename);
        if (fn.len > 0) {
            const char *base = fn.ptr;
            for (uint32_t i = 0; i < fn.len; i++)
                if (fn.ptr[i] == '/')
                    base = fn.ptr + i + 1;
            size_t blen = (size_t)(fn.ptr + fn.len - base);
            int n = snprintf(buf, size, "%.*s+0x%" PRIx64, (int)blen, base,
                             loc->address - m->memory_start + m->file_offset);
            return n > 0 ? (size_t)n : 0;
        }
    }
    return ps_profile_addr_name(loc->address, buf, size);
}
