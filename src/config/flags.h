/*
 * flags.h - command-line flags as one table. Each row names a flag, its type, where its value
 * goes (an offset into the caller's struct), its bounds, its default, its short help and its longer
 * doc; the same rows drive the parsing, --help, /api/v1/status/flags and the generated docs/flags.md
 * (the one flag reference: docs/configuration.md links to it).
 *
 *   --name=value or --name value; a bool takes --name, --name=true or --name=false. A row with a
 *   short name also takes -n value (-n alone for a bool or an action), as the benchmarks' -n, -h.
 *   Errors name the flag and the value: `--threads: "0" is not a positive number in range`.
 *
 * Not getopt_long(3): it accepts abbreviations (--ret=1d for --retention), prints its own error
 * messages and cannot take "--flag value" for a bool whose value is optional.
 */
#ifndef PS_CONFIG_FLAGS_H
#define PS_CONFIG_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

typedef enum {
    PS_FLAG_BOOL,     /* bool; no value, "true" or "false" */
    PS_FLAG_STRING,   /* const char * (borrowed from argv) */
    PS_FLAG_ENUM,     /* const char *, one of choices */
    PS_FLAG_UINT,     /* uint64_t in [min, max], decimal */
    PS_FLAG_SIZE,     /* uint64_t bytes: 1048576, 32MiB, 1GB, 1.5KiB */
    PS_FLAG_DURATION, /* int64_t ns: 0, 10ms, 2h, 15d (Prometheus' duration syntax) */
    PS_FLAG_ACTION,   /* --help, --version: ps_flags_parse returns action at once */
    PS_FLAG_FLOAT,    /* double in [fmin, fmax] */
    PS_FLAG_FUNC,     /* set(fl, value, dst, err) parses it (a repeatable flag: a list; a mapping) */
} ps_flag_type_t;

typedef struct ps_flag {
    const char *name;    /* without "--" */
    char short_name;     /* -x as well as --name; 0: none */
    ps_flag_type_t type;
    size_t offset;       /* of the value in the destination struct */
    const char *metavar; /* what --help writes after "=": "N", "SIZE", "DURATION"; NULL for bools */
    const char *def;     /* the default as written on the command line; NULL: none or computed */
    const char *def_note; /* docs/flags.md's default (Markdown) when def is NULL: computed ("CPUs"),
                             following another flag, or "none"; else NULL */
    uint64_t min, max;   /* PS_FLAG_UINT bounds */
    double fmin, fmax;   /* PS_FLAG_FLOAT bounds (both 0: any finite number) */
    int (*set)(const struct ps_flag *fl, const char *val, void *dst, ps_err_t *err); /* PS_FLAG_FUNC:
                            0, or PS_EINVAL with the message that names the flag */
    const char *bad;     /* the error's noun after "is not a": default "number in range" (UINT),
                            "number in [fmin, fmax]" (FLOAT),
                            "size (e.g. 1048576, 32MiB, 1GB)" (SIZE) */
    const char *const *choices; /* PS_FLAG_ENUM: NULL-terminated */
    int action;          /* PS_FLAG_ACTION: what ps_flags_parse returns (> 0) */
    const char *help;    /* --help text; '\n' continues on the next line; NULL: a hidden flag */
    const char *doc;     /* docs/flags.md's meaning: Markdown, one table cell (no '|' or '\n'), with
                            what --help has no room for (errors, answers, bounds, links relative to
                            docs/); NULL: the help text, escaped */
} ps_flag_t;

typedef struct ps_flagset {
    const char *prog;       /* "profstore": error messages start with it */
    const char *head;       /* what --help prints before the flags */
    const ps_flag_t *flags;
    size_t n;
} ps_flagset_t;

/** One flag with its value as /api/v1/status/flags shows it. */
typedef struct ps_flag_value {
    const char *name, *value;
} ps_flag_value_t;

/** Sets every flag that has a def to it (the defaults are parsed as if given). */
void ps_flags_defaults(const ps_flagset_t *fs, void *dst);

/** Parses argv[1..] into dst: 0, an action's number (--help), or PS_EINVAL with the message that
 *  names the flag in err ("unknown flag --x", "--threads: \"0\" is not a positive number in range").
 *  String values point into argv. */
int ps_flags_parse(const ps_flagset_t *fs, int argc, char **argv, void *dst, ps_err_t *err);

/** Parses one value of flag fl into dst as ps_flags_parse does (also for benchmarks' own tables). */
int ps_flag_set(const ps_flag_t *fl, const char *val, void *dst, ps_err_t *err);

/** Appends the --help text: head, then each visible flag, its help aligned at column 35. */
void ps_flags_help(const ps_flagset_t *fs, ps_buf_t *out);

/** Appends docs/flags.md: a Markdown table of the visible flags (name, default or def_note, doc or
 *  else help). */
void ps_flags_markdown(const ps_flagset_t *fs, ps_buf_t *out);

/** Fills out (cap entries) with every visible non-action flag and its value in dst, sorted by name;
 *  each value is malloc'd (free it, or keep it for the life of the process). Returns how many. */
uint32_t ps_flags_values(const ps_flagset_t *fs, const void *dst, ps_flag_value_t *out, uint32_t cap);

/** Bytes in the largest binary unit that divides them: "32MiB", "1536B". */
void ps_flags_format_size(uint64_t v, char *buf, size_t size);

/** Parses a size: a decimal number (fractions allowed) and a unit of B, KB, MB, GB, TB, KiB, MiB,
 *  GiB, TiB, k (1000) or K (1024), or none. 0, or -1 when it is not one. */
int ps_flags_parse_size(const char *s, uint64_t *out);

/* ---- profstore's own flags ---- */

enum { PS_FLAGS_HELP = 1, PS_FLAGS_VERSION = 2, PS_FLAGS_MARKDOWN = 3 };

/** Every flag of profstore, with its value: the destination of ps_profstore_flagset's rows. */
typedef struct ps_flags {
    const char *listen, *data_dir, *config, *log_level, *web_config;
    const char *symbols_dir; /* --symbols.dir, NULL: off */
    uint64_t debuginfo_max_file, debuginfo_max_bytes; /* --debuginfo.max-file-bytes, --debuginfo.max-bytes */
    const char *debuginfod_urls, *debuginfod_cache; /* --debuginfod.url (NULL: off), --debuginfod.cache-dir */
    int64_t debuginfod_timeout;
    const char *otlp_http_listen; /* --otlp.http.listen-address ("": none) */
    const char *promql_compat;    /* --promql.compat: "3" or "2" */
    const char *enable_feature;   /* --enable-feature: "" or "promql-experimental-functions" */
    int64_t retention, compact_window, compact_interval, retention_interval, commit_delay;
    uint64_t max_body, max_inflated, max_size, compact_max, threads, max_series;
    int64_t future_grace;
    uint64_t max_inflated_total, queue_bytes, queue_items, disk_reserve; /* 0 total: max_inflated */
    uint64_t read_sample_limit, read_concurrent_limit, read_max_frame;
    int64_t query_timeout;
    uint64_t query_max_concurrency, query_max_regex_steps;
    uint64_t decode_threads, decode_queue_bytes;
    uint64_t query_cpus;
    uint64_t adhoc_max_profiles, adhoc_max_bytes;
    uint64_t query_max_samples, query_max_memory;
    bool nosync, admin_api, lifecycle, h2c, agent, check;
    uint64_t max_conns, body_min_rate, h2_max_resets, scrape_max_targets;
    int64_t header_timeout, body_idle_timeout, idle_timeout;
    const char *grpc_listen;  /* NULL: no gRPC listener */
    uint64_t grpc_max_msg, grpc_max_streams, grpc_max_conns;
    int64_t grpc_idle_timeout;
} ps_flags_t;

/** profstore's table (flags.c), in --help order. */
extern const ps_flagset_t ps_profstore_flagset;

/** Sets f to the defaults, those computed from this machine too (CPUs, memory). */
void ps_profstore_flags_init(ps_flags_t *f);

/** ps_flags_parse on profstore's table, then the defaults that follow other flags
 *  (--max-inflated-total from --max-inflated-size). */
int ps_profstore_flags_parse(ps_flags_t *f, int argc, char **argv, ps_err_t *err);

#endif
