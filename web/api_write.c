/*
 * api_write.c - POST /api/v1/write: Prometheus remote_write 1.0 and 2.0. Decode (a task: on the
 * decode pool, or in place on the loop; proto/remote.h), hand the samples to the writer thread (ingest/remote.c), answer once
 * they are durable: 204, or 400 naming the first rejected series when some samples were refused
 * (the others are stored), 5xx for our own failures, which the sender retries.
 *
 * The version is the Content-Type's proto parameter (io.prometheus.write.v2.Request = 2.0,
 * prometheus.WriteRequest or none = 1.0), else X-Prometheus-Remote-Write-Version (2.x = 2.0).
 * Native histograms and exemplars are counted and dropped (profstore_remote_write_dropped_total
 * and a log line at most once a minute), never failing the floats beside them.
 */
#include <stdlib.h>
#include <strings.h>

#include "core/log.h"
#include "core/metrics.h"
#include "core/timeutil.h"
#include "task.h"
#include "internal.h"
#include "ingest/ingest.h"

/* ---- metrics: relaxed atomics, bumped on the loops and the decode threads ---- */

static ps_counter_t rw_requests, rw_bad_requests, rw_failed_requests, rw_samples_received, rw_samples_written,
    rw_samples_duplicate, rw_rejected_out_of_order, rw_rejected_duplicate, rw_rejected_out_of_bounds, rw_rejected_series,
    rw_rejected_too_new, rw_dropped_histograms, rw_dropped_exemplars;

static const char *const by_reason[] = {"reason", NULL}, *const by_kind[] = {"kind", NULL};
static const ps_metric_t m_requests = {"profstore_remote_write_requests_total", PS_COUNTER,
                                       "Remote-write requests received."},
                         m_bad = {"profstore_remote_write_bad_requests_total", PS_COUNTER,
                                  "Remote-write requests refused as malformed (4xx, nothing stored)."},
                         m_failed = {"profstore_remote_write_failed_requests_total", PS_COUNTER,
                                     "Remote-write requests that failed in storage (5xx)."},
                         m_received = {"profstore_remote_write_samples_received_total", PS_COUNTER,
                                       "Float samples in decoded remote-write requests."},
                         m_written = {"profstore_remote_write_samples_written_total", PS_COUNTER,
                                      "Float samples stored."},
                         m_duplicate = {"profstore_remote_write_samples_duplicate_total", PS_COUNTER,
                                        "Samples identical to stored ones: accepted, not written again."},
                         m_rejected = {"profstore_remote_write_samples_rejected_total", PS_COUNTER,
                                       "Float samples refused (answered with a 400).", by_reason},
                         m_dropped = {"profstore_remote_write_dropped_total", PS_COUNTER,
                                      "Native histograms and exemplars received and not stored.", by_kind};

void ps_api_write_metrics(ps_buf_t *b)
{
    ps_metric_write_u64(b, &m_requests, ps_counter_get(&rw_requests));
    ps_metric_write_u64(b, &m_bad, ps_counter_get(&rw_bad_requests));
    ps_metric_write_u64(b, &m_failed, ps_counter_get(&rw_failed_requests));
    ps_metric_write_u64(b, &m_received, ps_counter_get(&rw_samples_received));
    ps_metric_write_u64(b, &m_written, ps_counter_get(&rw_samples_written));
    ps_metric_write_u64(b, &m_duplicate, ps_counter_get(&rw_samples_duplicate));
    static const char *const reasons[] = {"out_of_order", "duplicate_timestamp", "out_of_bounds", "profile_series",
                                          "too_far_in_future"};
    const ps_counter_t *rejected[] = {&rw_rejected_out_of_order, &rw_rejected_duplicate, &rw_rejected_out_of_bounds,
                                      &rw_rejected_series, &rw_rejected_too_new};
    ps_metric_head(b, &m_rejected);
    for (int i = 0; i < 5; i++)
        ps_metric_u64(b, &m_rejected, NULL, &reasons[i], ps_counter_get(rejected[i]));
    ps_metric_head(b, &m_dropped);
    ps_metric_u64(b, &m_dropped, NULL, (const char *const[]){"histogram"}, ps_counter_get(&rw_dropped_histograms));
    ps_metric_u64(b, &m_dropped, NULL, (const char *const[]){"exemplar"}, ps_counter_get(&rw_dropped_exemplars));
}

typedef struct pending {
    ps_wreq_t w;
    int version;
} pending_t;

static void add_header(ps_task_t *t, const char *name, uint64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
    ps_task_add_header(t, name, b, (size_t)n);
}

/* The remote-write answers are plain text, as Prometheus' and Mimir's receivers write them. */
static void send_text(ps_answer_t *a, int status, const char *msg, size_t len)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_append(&b, msg, len);
    ps_buf_putc(&b, '\n');
    ps_answer_set(a, status, "text/plain; charset=utf-8", b.data, b.len);
    ps_buf_dispose(&b);
}

/* A full write queue is a 503 here, not the 429 of the profile pushes: Prometheus 2.42 retries every
 * 5xx but a 429 only with retry_on_http_429 (off by default), dropping the samples otherwise. */
static int write_status(int code)
{
    return code == PS_EOVERLOAD ? 503 : ps_err_http_status(code);
}

void ps_api_remote_write_fail(ps_answer_t *a, int code, const char *msg)
{
    send_text(a, write_status(code), msg, strlen(msg));
}

static void send_error(ps_task_t *t, int code, const char *msg)
{
    ps_api_remote_write_fail(&t->ans, code, msg);
}

/* on the loop, the writer done */
static void on_finish(ps_task_t *t)
{
    pending_t *p = t->finish_arg;
    ps_remote_result_t res;
    ps_buf_t msg = PS_BUF_INIT;
    int code = ps_ingest_remote_result(&p->w, &res, &msg);
    /* counted before the answer, so a client reading /metrics after its 204 sees it */
    ps_counter_add(&rw_samples_written, res.written);
    ps_counter_add(&rw_samples_duplicate, res.duplicates);
    ps_counter_add(&rw_rejected_out_of_order, res.out_of_order);
    ps_counter_add(&rw_rejected_duplicate, res.dup_conflicts);
    ps_counter_add(&rw_rejected_out_of_bounds, res.out_of_bounds);
    ps_counter_add(&rw_rejected_too_new, res.too_new);
    ps_counter_add(&rw_rejected_series, res.samples_failed);
    if (code != 0 && p->w.status != 0) {
        ps_counter_add(&rw_failed_requests, 1);
        ps_log_error("remote write failed", "err=%s", ps_log_q(msg.len ? (char *)msg.data : ""));
    } else if (code != 0) {
        ps_log_debug("remote write partly rejected", "err=%s", ps_log_q((char *)msg.data));
    }
    if (p->version == 2) {
        /* 2.0: what was written (identical duplicates count: they are stored); histograms and
         * exemplars are dropped, so 0 */
        add_header(t, "X-Prometheus-Remote-Write-Samples-Written", res.written + res.duplicates);
        add_header(t, "X-Prometheus-Remote-Write-Histograms-Written", 0);
        add_header(t, "X-Prometheus-Remote-Write-Exemplars-Written", 0);
    }
    if (code == 0)
        ps_task_send(t, 204, "text/plain; charset=utf-8", "", 0);
    else
        send_text(&t->ans, write_status(code), (char *)msg.data, msg.len);
    ps_buf_dispose(&msg);
}

static bool ieq(const char *a, size_t n, const char *lit)
{
    return strlen(lit) == n && strncasecmp(a, lit, n) == 0;
}

static const char *trim(const char *p, const char *end, size_t *n)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *n = (size_t)(end - p);
    return p;
}

/* The remote-write version of the request (1 or 2), or PS_EUNSUPPORTED with a message. */
static int request_version(ps_task_t *t, ps_err_t *err)
{
    size_t ct_len;
    const char *ct_base = ps_task_header(t, "content-type", &ct_len);
    int version = 0;
    if (ct_base != NULL) {
        h2o_iovec_t ct = h2o_iovec_init(ct_base, ct_len);
        const char *end = ct.base + ct.len, *semi = memchr(ct.base, ';', ct.len);
        size_t n;
        const char *mt = trim(ct.base, semi ? semi : end, &n);
        if (!ieq(mt, n, "application/x-protobuf"))
            return ps_err_set(err, PS_EUNSUPPORTED,
                              "remote write: Content-Type must be application/x-protobuf (with proto=prometheus.WriteRequest "
                              "or proto=io.prometheus.write.v2.Request), got \"%.*s\"",
                              (int)(ct.len > 100 ? 100 : ct.len), ct.base);
        while (semi != NULL) {
            const char *p = semi + 1, *next = memchr(p, ';', (size_t)(end - p));
            const char *pe = next ? next : end, *eq = memchr(p, '=', (size_t)(pe - p));
            size_t kn, vn;
            if (eq != NULL) {
                const char *k = trim(p, eq, &kn), *v = trim(eq + 1, pe, &vn);
                if (ieq(k, kn, "proto")) {
                    if (vn >= 2 && v[0] == '"' && v[vn - 1] == '"')
                        v++, vn -= 2;
                    if (vn == strlen("prometheus.WriteRequest") && memcmp(v, "prometheus.WriteRequest", vn) == 0)
                        version = 1;
                    else if (vn == strlen("io.prometheus.write.v2.Request") &&
                             memcmp(v, "io.prometheus.write.v2.Request", vn) == 0)
                        version = 2;
                    else
                        return ps_err_set(err, PS_EUNSUPPORTED,
                                          "remote write: unknown proto \"%.*s\" in Content-Type: expected "
                                          "prometheus.WriteRequest (1.0) or io.prometheus.write.v2.Request (2.0)",
                                          (int)(vn > 100 ? 100 : vn), v);
                }
            }
            semi = next;
        }
    }
    if (version == 0) {
        size_t vn;
        const char *v = ps_task_header(t, "x-prometheus-remote-write-version", &vn);
        version = v != NULL && vn >= 2 && memcmp(v, "2.", 2) == 0 ? 2 : 1;
    }
    return version;
}

/* At most one log line a minute per kind of dropped data. */
static void log_dropped(uint64_t nh, uint64_t ne)
{
    static _Atomic int64_t last;
    int64_t now = ps_time_mono(), prev = atomic_load(&last);
    if (now - prev < 60 * PS_NS_PER_S && prev != 0)
        return;
    if (!atomic_compare_exchange_strong(&last, &prev, now))
        return;
    ps_log_warn("remote write: native histograms and exemplars are not stored (dropped, counted in "
                "profstore_remote_write_dropped_total)",
                "histograms=%llu exemplars=%llu total_histograms=%llu total_exemplars=%llu", (unsigned long long)nh,
                (unsigned long long)ne, (unsigned long long)ps_counter_get(&rw_dropped_histograms),
                (unsigned long long)ps_counter_get(&rw_dropped_exemplars));
}

int ps_api_remote_write(ps_task_t *t)
{
    ps_server_t *s = t->srv;
    ps_err_t err;
    if (atomic_load(&s->stopping)) {
        send_error(t, PS_EUNAVAIL, "server is shutting down");
        return 0;
    }
    ps_counter_add(&rw_requests, 1);
    size_t ce_len;
    const char *ce = ps_task_header(t, "content-encoding", &ce_len);
    if (ce == NULL || !ieq(ce, ce_len, "snappy")) {
        ps_counter_add(&rw_bad_requests, 1);
        if (ce == NULL)
            send_error(t, PS_EUNSUPPORTED, "remote write: Content-Encoding: snappy is required (snappy block format)");
        else {
            ps_err_set(&err, PS_EUNSUPPORTED, "remote write: Content-Encoding must be snappy, got \"%.*s\"",
                       (int)(ce_len > 100 ? 100 : ce_len), ce);
            send_error(t, err.code, err.msg);
        }
        return 0;
    }
    int version = request_version(t, &err);
    if (version < 0) {
        ps_counter_add(&rw_bad_requests, 1);
        send_error(t, version, err.msg);
        return 0;
    }
    if (t->body == NULL || t->body_len == 0) {
        ps_counter_add(&rw_bad_requests, 1);
        send_error(t, PS_EINVAL, "remote write: empty body");
        return 0;
    }
    pending_t *p = ps_arena_calloc(t->arena, 1, sizeof(*p));
    p->version = version;
    ps_remote_write_t w;
    ps_remote_limits_t lim;
    ps_remote_limits_default(&lim);
    if (s->opts.max_remote_uncompressed)
        lim.max_uncompressed = s->opts.max_remote_uncompressed;
    if (ps_remote_write_decode(t->body, t->body_len, version, &lim, t->arena, &w, &err) != 0) {
        ps_counter_add(&rw_bad_requests, 1);
        ps_err_prefix(&err, "remote write %s", version == 2 ? "2.0" : "1.0");
        goto Fail;
    }
    ps_counter_add(&rw_samples_received, w.nsamples);
    if (w.nhistograms || w.nexemplars) {
        ps_counter_add(&rw_dropped_histograms, w.nhistograms);
        ps_counter_add(&rw_dropped_exemplars, w.nexemplars);
        log_dropped(w.nhistograms, w.nexemplars);
    }
    ps_ingest_remote_prepare(&w, t->arena, &p->w);
    p->w.bytes = t->arena->used_total; /* the body's copy included: held until answered, the queue's bound */
    if (ps_task_write(t, &p->w, on_finish, p) != 0) {
        err = p->w.err;
        goto Fail;
    }
    return 0;
Fail:
    send_error(t, err.code, err.msg);
    return 0;
}
