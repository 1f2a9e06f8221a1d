/*
 * json.h - the one JSON writer: objects, arrays, keys and values appended to a ps_buf_t, with the
 * commas placed for you. Strings are escaped (ps_buf_json_str: ", \, control characters; other
 * bytes as they are, so the caller passes valid UTF-8). Numbers: integers exactly; floats as
 * Prometheus writes them (core/fmt.h), as JSON numbers where finite. Nesting up to
 * PS_JSON_MAX_DEPTH; deeper is a programming error (asserted). Reading JSON is jansson's job;
 * ps_json_prescan bounds what jansson will be asked to read.
 *
 *     ps_json_t j;
 *     ps_json_init(&j, &buf);
 *     ps_json_obj(&j);
 *     ps_json_key(&j, "status"); ps_json_cstr(&j, "success");
 *     ps_json_key(&j, "data");   ps_json_arr(&j); ps_json_int(&j, 1); ps_json_int(&j, 2); ps_json_end(&j);
 *     ps_json_end(&j);            ->  {"status":"success","data":[1,2]}
 */
#ifndef PS_CORE_JSON_H
#define PS_CORE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "mem.h"

#define PS_JSON_MAX_DEPTH 32

typedef struct ps_json {
    ps_buf_t *out;
    uint32_t depth;
    bool after_key;                       /* a key was written: the next value needs no comma */
    bool has_items[PS_JSON_MAX_DEPTH + 1]; /* per level: something was written already */
    char closers[PS_JSON_MAX_DEPTH + 1];
} ps_json_t;

/** Starts writing into out (appended to what is there). */
void ps_json_init(ps_json_t *j, ps_buf_t *out);
/** Starts Prometheus' API answer {"status":"success","data": in out; the caller writes the data
 *  value (and maybe more keys), then ps_json_envelope_close. */
void ps_json_envelope(ps_json_t *j, ps_buf_t *out);
/** Closes the answer and ends it with a newline. */
void ps_json_envelope_close(ps_json_t *j);
/** Opens an object / an array (as a value: after a key, in an array, or at the top). */
void ps_json_obj(ps_json_t *j);
void ps_json_arr(ps_json_t *j);
/** Closes the innermost object or array. */
void ps_json_end(ps_json_t *j);
/** An object key (NUL-terminated / with length). */
void ps_json_key(ps_json_t *j, const char *k);
void ps_json_keyn(ps_json_t *j, const char *k, size_t n);
/** Values. */
void ps_json_str(ps_json_t *j, const char *s, size_t n);
void ps_json_cstr(ps_json_t *j, const char *s); /* NULL writes null */
void ps_json_int(ps_json_t *j, int64_t v);
void ps_json_uint(ps_json_t *j, uint64_t v);
/** A finite double as a JSON number in Prometheus' shortest form; NaN and infinities as the strings
 *  "NaN", "+Inf", "-Inf" (JSON has no such numbers). */
void ps_json_double(ps_json_t *j, double v);
/** A double with a fixed number of decimals (percentages), e.g. 12.35. */
void ps_json_fixed(ps_json_t *j, double v, int decimals);
/** A double as a JSON string in Prometheus' form ("1.5", "NaN", "+Inf"): sample values. */
void ps_json_double_str(ps_json_t *j, double v);
void ps_json_bool(ps_json_t *j, bool v);
void ps_json_null(ps_json_t *j);
/** A value that is JSON already (written as it is). */
void ps_json_raw(ps_json_t *j, const char *s, size_t n);
/** v in decimal appended to b, as ps_json_int writes it but without a separator: for plain text
 *  (folded stacks). */
void ps_buf_put_i64(ps_buf_t *b, int64_t v);

/** Before a JSON document of n bytes is handed to jansson: its nesting must not pass max_depth
 *  (else PS_EINVAL, "<what>: line L column C: nesting deeper than D", at the byte), and *values
 *  gets an upper bound of its values (one, plus each ',' '[' '{' ':' outside strings) for the
 *  caller's memory budget. neg_zero (may be NULL) is set when a number is a negative zero written
 *  as an integer ("-0"), which jansson reads as the integer 0. Nothing is allocated. */
int ps_json_prescan(const char *s, size_t n, const char *what, size_t max_depth, size_t *values, bool *neg_zero,
                    ps_err_t *err);

#endif
