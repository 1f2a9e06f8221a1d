/*
 * httpclient - the outbound side of Prometheus' HTTP client configuration (config/config.h's
 * ps_http_client_t: basic_auth, authorization, tls_config, follow_redirects) applied to a libcurl
 * handle. The scraper (targets, http_sd) and the forwarder send their requests through it, so a
 * setting means the same in scrape_configs and in forward.
 */
#ifndef PS_HTTPCLIENT_H
#define PS_HTTPCLIENT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/**
 * Sets e up to request url with c's settings: http and https only (also for redirects: libcurl
 * refuses file://, gopher://, ... with CURLE_UNSUPPORTED_PROTOCOL), CURLOPT_URL, basic auth (password_file read now),
 * an Authorization header (credentials_file read now), the TLS files (checked readable;
 * secret and TLS files must be regular files, never a FIFO that would block),
 * insecure_skip_verify, tls_config.server_name, redirects (at most 10), no signals, profstore's
 * User-Agent. Headers it needs are appended to *headers and the server_name route to *connect_to:
 * the caller passes both to libcurl's lifetime rules (keeps them while e transfers, then
 * curl_slist_free_all) and sets CURLOPT_HTTPHEADER itself, after adding its own.
 * Returns false with why ("unable to read tls_config ca_file /x: No such file or directory") when a
 * file cannot be read or server_name is unusable; e is then half set up.
 */
bool ps_httpclient_setup(CURL *e, const char *url, const ps_http_client_t *c, struct curl_slist **headers,
                         struct curl_slist **connect_to, char *why, size_t whylen);

/** Whether every TLS file c names can be opened (why says which cannot): a handle kept across
 * requests re-checks with this before reuse. */
bool ps_httpclient_tls_files_ok(const ps_http_client_t *c, char *why, size_t whylen);

#endif
