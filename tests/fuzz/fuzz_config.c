/*
 * fuzz_config.c - libFuzzer target for the YAML configuration (src/config/config.c: ps_config_parse,
 * config_yaml.c: ps_config_yaml) and relabeling (relabel.c: ps_relabel_process).
 *
 * Arbitrary bytes are a config file. ps_config_parse may not crash, leak (the compiled regexes of
 * a failed parse must be freed) or take long; a failure is PS_EINVAL with a message that starts
 * with the file name. A success must hold the config's invariants (timeout <= interval, http or
 * https, six pprof entries at least), its /api/v1/status/config text (ps_config_yaml) must read
 * back to a config that prints the same text (unless a redacted password, longer than the one it
 * hides, pushes a label value over its limit), and each job's relabel rules run over the labels of
 * its static targets (and a fixed set) without crashing, the result still sorted.
 *
 * Build: tests/fuzz/build.sh (libyaml, OpenSSL for hashmod's MD5, the regex and label code).
 * Seeds: tests/fuzz/corpus/fuzz_config/ (configs as the README and the tests write them).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "core/labels.h"
#include "core/mem.h"

#define PS_FUZZ_NAME "fuzz_config"
#include "fuzzutil.h"

#define NAME "fuzz.yml"

static void check_sorted(const ps_labels_t *ls)
{
    for (uint32_t i = 1; i < ls->n; i++)
        CHECK(strcmp(ls->pairs[i - 1].name, ls->pairs[i].name) < 0, "relabel result not sorted at %u", i);
}

/* The job's rules over one label set: the target's address and group labels, with the
 * labels Prometheus adds before relabeling. */
static void relabel_one(const ps_scrape_config_t *sc, const char *target, const ps_labels_t *group)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = {0};
    for (uint32_t i = 0; i < group->n; i++)
        ps_labels_set(&ls, &a, group->pairs[i].name, strlen(group->pairs[i].name), group->pairs[i].value,
                      strlen(group->pairs[i].value));
    ps_labels_set(&ls, &a, "__address__", 11, target, strlen(target));
    ps_labels_set(&ls, &a, "job", 3, sc->job_name, strlen(sc->job_name));
    ps_labels_set(&ls, &a, "__scheme__", 10, sc->scheme, strlen(sc->scheme));
    ps_labels_set(&ls, &a, "__meta_x", 8, "A;b;C", 5);
    check_sorted(&ls);
    if (ps_relabel_process(sc->relabel, sc->nrelabel, &ls, &a))
        check_sorted(&ls);
    ps_arena_dispose(&a);
}

static void check_config(const ps_config_t *c)
{
    CHECK(c->scrape_timeout > 0 && c->scrape_timeout <= c->scrape_interval, "global timeout %lld > interval %lld",
          (long long)c->scrape_timeout, (long long)c->scrape_interval);
    check_sorted(&c->external_labels);
    for (uint32_t i = 0; i < c->nscrape; i++) {
        const ps_scrape_config_t *sc = &c->scrape[i];
        CHECK(sc->job_name != NULL && sc->job_name[0] != '\0', "job %u without a name", i);
        CHECK(sc->scrape_timeout > 0 && sc->scrape_timeout <= sc->scrape_interval, "job %u: timeout > interval", i);
        CHECK(strcmp(sc->scheme, "http") == 0 || strcmp(sc->scheme, "https") == 0, "scheme %s", sc->scheme);
        CHECK(sc->npprof >= 6, "job %u: %u pprof entries", i, sc->npprof);
        for (uint32_t k = 0; k < sc->nrelabel; k++)
            CHECK(sc->relabel[k].re != NULL, "job %u rule %u: no compiled regex", i, k);
        static const ps_labels_t none = {0};
        relabel_one(sc, "127.0.0.1:6060", &none);
        uint32_t runs = 0;
        for (uint32_t g = 0; g < sc->nstatic && runs < 8; g++) {
            check_sorted(&sc->static_configs[g].labels);
            for (uint32_t t = 0; t < sc->static_configs[g].ntargets && runs < 8; t++, runs++)
                relabel_one(sc, sc->static_configs[g].targets[t], &sc->static_configs[g].labels);
        }
    }
}

/* A redacted password ("xxxxx", "<secret>") can be longer than the one it hides, so a label
 * value close to its length limit may not read back; that is the only failure allowed. */
static int redaction_grew(const ps_buf_t *y, const char *msg)
{
    if (strstr(msg, "bytes long (the limit is") == NULL)
        return 0;
    return memmem(y->data, y->len, ":xxxxx@", 7) != NULL || memmem(y->data, y->len, "<secret>", 8) != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_config_t *c = NULL;
    ps_err_t err;
    ps_err_clear(&err);
    int rc = ps_config_parse((const char *)data, size, NAME, &c, &err);
    if (rc != 0) {
        CHECK(c == NULL, "a failed parse left a config");
        CHECK(rc == PS_EINVAL && err.code == rc, "parse returned %d", rc);
        CHECK(err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL, "error without a message");
        CHECK(strncmp(err.msg, NAME ":", strlen(NAME) + 1) == 0, "message without the file name: %s", err.msg);
        return 0;
    }
    CHECK(c != NULL, "no config");
    check_config(c);

    /* /api/v1/status/config: the text reads back to the same text */
    ps_buf_t y1 = PS_BUF_INIT, y2 = PS_BUF_INIT;
    ps_config_yaml(c, &y1);
    ps_config_free(c);
    ps_config_t *c2 = NULL;
    rc = ps_config_parse((const char *)y1.data, y1.len, "status.yml", &c2, &err);
    if (rc != 0 && redaction_grew(&y1, err.msg)) {
        ps_buf_dispose(&y1);
        return 0;
    }
    CHECK(rc == 0, "the status text does not read back: %s\n---\n%.*s", err.msg, (int)y1.len, (const char *)y1.data);
    ps_config_yaml(c2, &y2);
    CHECK(y1.len == y2.len && memcmp(y1.data, y2.data, y1.len) == 0, "the status text changes on reading back:\n%.*s\n---\n%.*s",
          (int)y1.len, (const char *)y1.data, (int)y2.len, (const char *)y2.data);
    ps_config_free(c2);
    ps_buf_dispose(&y1);
    ps_buf_dispose(&y2);
    return 0;
}
