/*
 * fuzz_webconfig.c - libFuzzer target for the web configuration parser (src/config/webconfig.c):
 * any bytes as the file. It may refuse, never crash or leak; a refusal is PS_EINVAL with a
 * message that starts "<file>:LINE:COL: " (or "<file>: " for I/O), and an accepted file is self-
 * consistent: TLS on means cert and key files are set, every token has scopes, every header has a
 * lower-case name, every user a 60-character bcrypt-shaped hash.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PS_FUZZ_NAME "fuzz_webconfig"
#include "config/webconfig.h"
#include "fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_err_t err;
    ps_err_clear(&err);
    ps_webconfig_t *c = NULL;
    int rc = ps_webconfig_parse((const char *)data, size, "f.yml", "/d", &c, &err);
    if (rc != 0) {
        CHECK(rc == PS_EINVAL || rc == PS_ENOMEM, "rc %d", rc);
        CHECK(c == NULL, "an error left a config");
        CHECK(strncmp(err.msg, "f.yml:", 6) == 0 && isdigit((unsigned char)err.msg[6]), "message \"%s\"", err.msg);
        return 0;
    }
    CHECK(c != NULL, "no config");
    if (c->tls.enabled)
        CHECK(c->tls.cert_file && c->tls.cert_file[0] && c->tls.key_file && c->tls.key_file[0], "TLS without files");
    CHECK(c->tls.min_version >= 0x301 && c->tls.min_version <= c->tls.max_version && c->tls.max_version <= 0x304,
          "versions %x..%x", c->tls.min_version, c->tls.max_version);
    for (uint32_t i = 0; i < c->ntokens; i++)
        CHECK(c->tokens[i].scopes != 0 && (c->tokens[i].scopes & ~PS_SCOPE_ALL) == 0, "token %u scopes", i);
    for (uint32_t i = 0; i < c->nheaders; i++)
        for (const char *p = c->headers[i].name; *p; p++)
            CHECK(!isupper((unsigned char)*p), "header name %s", c->headers[i].name);
    for (uint32_t i = 0; i < c->nusers; i++)
        CHECK(strlen(c->users[i].hash) == 60 && strchr(c->users[i].name, ':') == NULL, "user %u", i);
    ps_webconfig_free(c);
    return 0;
}
