/*
 * rules.h - recording rules ("metrics from profiles", Pyroscope's settings.v1
 * RecordingRulesService): their validation, the rule set in force (rules stored through the API
 * and rules provisioned by the configuration file), and their evaluation as profiles are written.
 *
 * Semantics (docs/api.md "Recording rules"): a rule matches a profile series by its matchers
 * (__profile_type__ is the series' type id, our __name__). Each profile of a matching series
 * contributes its total (the sum of its samples' values of the series' sample type), or with
 * stacktrace_filter.function_name the total of the samples whose stack holds a frame of that
 * function (once per sample, however often it appears). The recorded series is
 * {__name__=metric_name, pyroscope_rule_id=id, external_labels..., group_by labels of the profile
 * series (those it has)}, and it is a counter: each contribution is added to its newest value at
 * the profile's time (ms), in the same transaction as the profile. Contributions at the same
 * millisecond in one write are one sample; a contribution at or before the newest sample of its
 * series (a late member of the group) is stamped 1 ms after it, so nothing is lost and the series
 * stays in time order. rate() then gives the group's resource use per second, increase() the
 * total in a window, sum by () adds groups up.
 *
 * Threads: ps_rules_eval runs on the submitting threads (decode pool, scraper), any number at once;
 * ps_rules_record on the writer thread inside its transaction (ps_store_set_recorder);
 * ps_rules_reload on the writer thread after each change; reads (list, get) anywhere.
 */
#ifndef PS_RULES_H
#define PS_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/recording.h"
#include "storage/store.h"

#define PS_RULES_MAX 100             /* rules stored through the API (and, apart, provisioned) */
#define PS_RULE_MATCHERS_MAX 16      /* matcher strings of a rule */
#define PS_RULE_GROUP_BY_MAX 16      /* group_by labels */
#define PS_RULE_EXTERNAL_MAX 16      /* external_labels */
#define PS_RULE_FUNCTION_MAX 1024    /* bytes of stacktrace_filter.function_name */
#define PS_RULE_NAME_MAX 256         /* bytes of metric_name */
#define PS_RULE_SERIES_MAX 10000     /* recorded series one rule (one generation of it) records in a
                                      * process; contributions to more groups are dropped and counted */

typedef struct ps_rules ps_rules_t;

/**
 * Checks r as Pyroscope's UpsertRecordingRule does, plus profstore's limits; every problem found,
 * one a line, in err (PS_EINVAL). upsert: an empty id is given a new random one (10 letters) with
 * generation 1, and the metric name is trimmed. The messages are Pyroscope's:
 *   id "a1" must match ^[a-zA-Z]+$
 *   metric_name is required | metric_name "x" is invalid: metric name must start with profiles_recorded_
 *   matcher "{" is invalid: <the selector's parse error>
 *   matcher "__profile_type__" must have type "="
 *   matchers must contain a "__profile_type__" matcher      (none, or more than one)
 *   group_by label "a.b" must match ^[a-zA-Z_][a-zA-Z0-9_]*$
 *   external_labels name "a.b" must match ^[a-zA-Z_][a-zA-Z0-9_]*$
 *   generation must be positive
 */
int ps_rules_validate(ps_rr_rule_t *r, bool upsert, ps_arena_t *arena, ps_err_t *err);

/** The profile type of r: the value of its __profile_type__ matcher ("unknown" if none). */
const char *ps_rules_profile_type(const ps_rr_rule_t *r, ps_arena_t *arena);

ps_rules_t *ps_rules_new(void);
/** ps_rules_free(NULL) is a no-op. */
void ps_rules_free(ps_rules_t *rs);

/** Replaces the provisioned rules (the configuration file's recording_rules) with v (copied). Each
 *  is validated (an empty id becomes one derived from the rule's content); the first invalid one
 *  fails it all with "recording_rules[i]: ..." and nothing changes. */
int ps_rules_set_provisioned(ps_rules_t *rs, const ps_rr_rule_t *v, size_t n, ps_err_t *err);
/** Reads the stored rules of store and makes them (with the provisioned ones) the set in force. A
 *  stored rule that no longer validates is skipped with a warning in the log. */
int ps_rules_reload(ps_rules_t *rs, ps_store_t *store, ps_err_t *err);

/** The rules in force, as ListRecordingRules answers: provisioned first, then stored ones by id
 *  (a stored rule with a provisioned rule's id is hidden). Copies from arena. */
void ps_rules_list(ps_rules_t *rs, ps_arena_t *arena, ps_rr_rule_t **v, size_t *n);
/** The rule with this id, or PS_ENOTFOUND ("no rule with id='x' found"). *provisioned tells which. */
int ps_rules_get(ps_rules_t *rs, const char *id, ps_arena_t *arena, ps_rr_rule_t *out, ps_err_t *err);

/** The stored value of r (ps_store_rule_put's bytes). */
void ps_rules_encode(const ps_rr_rule_t *r, ps_arena_t *arena, ps_buf_t *out);

/** Submitting thread (ps_writer_opts_t.rec_entry): the contributions of app to the rules in force,
 *  into out (nothing when no rule matches); the writer hands them to ps_rules_record. */
void ps_rules_eval(ps_rules_t *rs, const ps_append_t *app, ps_buf_t *out);
/** The recorder (ps_store_record_fn, ctx a ps_rules_t): the counter appends of the contributions of
 *  the stored profiles among items. */
void ps_rules_record(void *ctx, ps_append_t *const *items, size_t n, ps_float_append_t ***out, size_t *nout);

typedef struct ps_rules_stats {
    uint32_t rules, provisioned;
    uint64_t evaluations;       /* profile series matched by a rule */
    uint64_t samples;           /* recorded samples handed to the store */
    uint64_t series_dropped;    /* contributions dropped: their rule had PS_RULE_SERIES_MAX series */
} ps_rules_stats_t;
void ps_rules_stats(ps_rules_t *rs, ps_rules_stats_t *st);

#endif
