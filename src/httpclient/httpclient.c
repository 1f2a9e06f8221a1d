/*
 * httpclient.c - Prometheus' HTTP client settings on a libcurl handle (httpclient.h).
 *
 * Secret files are read at each setup, as Prometheus re-reads password_file and credentials_file
 * per request, and their content is trimmed of surrounding white space (Go's strings.TrimSpace).
 */
#include "httpclient.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/file.h"

static bool file_readable(const char *path, const char *what, char *why, size_t whylen)
{
    char e[256];
    if (ps_file_readable(path, e, sizeof(e)))
        return true;
    snprintf(why, whylen, "unable to read %s %s: %s", what, path, e);
    return false;
}

bool ps_httpclient_tls_files_ok(const ps_http_client_t *c, char *why, size_t whylen)
{
    const ps_tls_config_t *tls = &c->tls;
    return (tls->ca_file == NULL || file_readable(tls->ca_file, "tls_config ca_file", why, whylen)) &&
           (tls->cert_file == NULL || file_readable(tls->cert_file, "tls_config cert_file", why, whylen)) &&
           (tls->key_file == NULL || file_readable(tls->key_file, "tls_config key_file", why, whylen));
}

/* A secret file's content, trimmed of white space at both ends (a regular file only: a FIFO or a
 * terminal would block the scraper's thread, core/file.h). */
static bool read_secret(const char *path, const char *what, char *buf, size_t size, char *why, size_t whylen)
{
    ps_buf_t b = PS_BUF_INIT;
    char e[256];
    if (ps_file_read(path, size - 1, &b, e, sizeof(e)) != 0) {
        snprintf(why, whylen, "unable to read %s %s: %s", what, path, e);
        ps_buf_dispose(&b);
        return false;
    }
    size_t n = b.len;
    if (n > 0)
        memcpy(buf, b.data, n);
    ps_buf_dispose(&b);
    buf[n] = 0;
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        buf[--n] = 0;
    size_t lead = 0;
    while (lead < n && isspace((unsigned char)buf[lead]))
        lead++;
    memmove(buf, buf + lead, n - lead + 1);
    return true;
}

/*
 * tls_config.server_name, as Go's tls.Config.ServerName: the name sent in SNI and checked against
 * the server's certificate, while the connection goes to the URL's host and the Host header stays
 * the URL's. libcurl takes SNI and verification from the URL, so the URL gets server_name as host,
 * CURLOPT_CONNECT_TO sends the connection to the real host and port, and Host is set by hand.
 * Plain http URLs are left alone (there is no TLS to name).
 */
static bool server_name(CURL *e, const char *url, const char *name, struct curl_slist **headers,
                        struct curl_slist **connect_to, char *why, size_t whylen)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *rewritten = NULL;
    bool ok = false;
    if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        snprintf(why, whylen, "tls_config.server_name: cannot parse the URL %s", url);
        goto Exit;
    }
    ok = true;
    if (strcasecmp(scheme, "https") != 0 || strcasecmp(host, name) == 0)
        goto Exit;
    if (curl_url_set(u, CURLUPART_HOST, name, 0) != CURLUE_OK ||
        curl_url_get(u, CURLUPART_URL, &rewritten, 0) != CURLUE_OK) {
        snprintf(why, whylen, "tls_config.server_name: \"%s\" is not a valid host name", name);
        ok = false;
        goto Exit;
    }
    char line[1024];
    snprintf(line, sizeof(line), "%s:%s:%s:%s", name, port, host, port);
    *connect_to = curl_slist_append(*connect_to, line);
    bool default_port = strcmp(port, "443") == 0;
    snprintf(line, sizeof(line), "Host: %s%s%s", host, default_port ? "" : ":", default_port ? "" : port);
    *headers = curl_slist_append(*headers, line);
    curl_easy_setopt(e, CURLOPT_URL, rewritten); /* libcurl keeps its own copy */
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, *connect_to);
Exit:
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(rewritten);
    curl_url_cleanup(u);
    return ok;
}

bool ps_httpclient_setup(CURL *e, const char *url, const ps_http_client_t *c, struct curl_slist **headers,
                         struct curl_slist **connect_to, char *why, size_t whylen)
{
    if (!ps_httpclient_tls_files_ok(c, why, whylen))
        return false;
    /* http and https only, also after a redirect: libcurl speaks every protocol it was built with
     * (file, gopher, dict, ldap, smtp, ...), and a URL comes from service discovery and relabeling */
    if (curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK ||
        curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK) {
        snprintf(why, whylen, "libcurl cannot be limited to http and https");
        return false;
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    if (c->tls.server_name && c->tls.server_name[0] &&
        !server_name(e, url, c->tls.server_name, headers, connect_to, why, whylen))
        return false;
    if (c->basic_user) {
        curl_easy_setopt(e, CURLOPT_USERNAME, c->basic_user);
        const char *pw = c->basic_password;
        char buf[1024];
        if (c->basic_password_file) {
            if (!read_secret(c->basic_password_file, "basic auth password file", buf, sizeof(buf), why, whylen))
                return false;
            pw = buf;
        }
        curl_easy_setopt(e, CURLOPT_PASSWORD, pw ? pw : "");
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    }
    if (c->auth_credentials || c->auth_credentials_file) {
        char cred[4096] = "";
        if (c->auth_credentials_file) {
            if (!read_secret(c->auth_credentials_file, "authorization credentials file", cred, sizeof(cred), why,
                             whylen))
                return false;
        } else {
            snprintf(cred, sizeof(cred), "%s", c->auth_credentials);
        }
        char h[4200];
        snprintf(h, sizeof(h), "Authorization: %s %s", c->auth_type ? c->auth_type : "Bearer", cred);
        *headers = curl_slist_append(*headers, h);
    }
    if (c->tls.ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->tls.ca_file);
    if (c->tls.cert_file)
        curl_easy_setopt(e, CURLOPT_SSLCERT, c->tls.cert_file);
    if (c->tls.key_file)
        curl_easy_setopt(e, CURLOPT_SSLKEY, c->tls.key_file);
    if (c->tls.insecure_skip_verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, c->follow_redirects ? 1L : 0L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "profstore/0.1.0");
    return true;
}
