/*
 * elfcheck.c - whether a file is an ELF file whole enough to symbolize from, and its GNU build id
 * (symbols.h, ps_symbols_elf_check): what an uploaded debug file must be before it is kept. All
 * reading is libelf's and libdwelf's (elf_begin over a read-only private mapping: the file is
 * never altered, whatever byte order it has); this file only compares the section offsets libelf
 * parsed with the file's size. Program headers are only parsed, not held to the file's size: a
 * split debug file keeps its program's (eu-strip -f keeps their sizes, whose bytes stay in the
 * program), and the symbolizer reads only their addresses.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbols.h"

int ps_symbols_elf_check(int fd, char *hex, size_t cap, ps_err_t *err)
{
    struct stat st;
    unsigned char magic[4] = {0};
    int ret = PS_EINVAL;
    if (fstat(fd, &st) != 0)
        return ps_err_set(err, PS_ESTORAGE, "cannot read the uploaded file: %s", strerror(errno));
    uint64_t size = (uint64_t)st.st_size;
    if (size < sizeof(magic) || pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
        memcmp(magic, ELFMAG, SELFMAG) != 0)
        return ps_err_set(err, PS_EINVAL, "not an ELF file (it does not start with \\x7fELF)");
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (e == NULL)
        return ps_err_set(err, PS_EINVAL, "truncated or damaged ELF file (%llu bytes): libelf: %s",
                          (unsigned long long)size, elf_errmsg(-1));
    GElf_Ehdr eh;
    size_t nph = 0, nsh = 0, shstr = 0;
    if (elf_kind(e) != ELF_K_ELF || gelf_getehdr(e, &eh) == NULL) {
        ps_err_set(err, PS_EINVAL, "truncated or damaged ELF file (%llu bytes): its ELF header: libelf: %s",
                   (unsigned long long)size, elf_errmsg(-1));
        goto Exit;
    }
    /* libelf reads a header table that lies past the end as none: held to the size here */
    const struct {
        const char *what;
        uint64_t off, n, entsize;
    } tables[2] = {{"program header table", eh.e_phoff, eh.e_phnum, eh.e_phentsize},
                   {"section header table", eh.e_shoff, eh.e_shnum ? eh.e_shnum : 1, eh.e_shentsize}};
    for (int i = 0; i < 2; i++) {
        if (tables[i].off == 0 || (i == 0 && tables[i].n == 0))
            continue;
        uint64_t bytes = tables[i].n * tables[i].entsize; /* at most 65535 * 65535 */
        if (tables[i].off > size || bytes > size - tables[i].off) {
            ps_err_set(err, PS_EINVAL, "truncated ELF file: its %s ends at byte %llu, the file has %llu bytes",
                       tables[i].what, (unsigned long long)(tables[i].off + bytes), (unsigned long long)size);
            goto Exit;
        }
    }
    if (elf_getphdrnum(e, &nph) != 0 || elf_getshdrnum(e, &nsh) != 0) {
        ps_err_set(err, PS_EINVAL, "truncated or damaged ELF file (%llu bytes): its header tables: libelf: %s",
                   (unsigned long long)size, elf_errmsg(-1));
        goto Exit;
    }
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(e, (int)i, &ph) == NULL) {
            ps_err_set(err, PS_EINVAL, "truncated or damaged ELF file (%llu bytes): program header %zu: libelf: %s",
                       (unsigned long long)size, i, elf_errmsg(-1));
            goto Exit;
        }
    }
    if (elf_getshdrstrndx(e, &shstr) != 0)
        shstr = 0;
    for (Elf_Scn *scn = elf_nextscn(e, NULL); scn != NULL; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == NULL) {
            ps_err_set(err, PS_EINVAL, "truncated or damaged ELF file (%llu bytes): section %zu: libelf: %s",
                       (unsigned long long)size, elf_ndxscn(scn), elf_errmsg(-1));
            goto Exit;
        }
        if (sh.sh_type == SHT_NOBITS)
            continue;
        if (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset) {
            const char *name = shstr != 0 ? elf_strptr(e, shstr, sh.sh_name) : NULL;
            ps_err_set(err, PS_EINVAL, "truncated ELF file: section %zu (%.64s) ends at byte %llu, the file has %llu bytes",
                       elf_ndxscn(scn), name != NULL ? name : "?", (unsigned long long)sh.sh_offset + sh.sh_size,
                       (unsigned long long)size);
            goto Exit;
        }
    }
    const void *id = NULL;
    ssize_t n = dwelf_elf_gnu_build_id(e, &id);
    if (n <= 0 || id == NULL) {
        ps_err_set(err, PS_EINVAL, "the ELF file has no GNU build ID note (.note.gnu.build-id)");
        goto Exit;
    }
    if ((size_t)n * 2 + 1 > cap) {
        ps_err_set(err, PS_EINVAL, "the ELF file's GNU build ID is %zd bytes, more than %zu", n, (cap - 1) / 2);
        goto Exit;
    }
    static const char digits[] = "0123456789abcdef";
    for (ssize_t i = 0; i < n; i++) {
        hex[2 * i] = digits[((const unsigned char *)id)[i] >> 4];
        hex[2 * i + 1] = digits[((const unsigned char *)id)[i] & 15];
    }
    hex[2 * n] = 0;
    ret = 0;
Exit:
    elf_end(e);
    return ret;
}
