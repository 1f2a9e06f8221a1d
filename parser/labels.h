/*
 * labels.h - parsing label sets written as Prometheus selectors with '=' only:
 *   {job="api", instance='a:6060', path=`raw\string`}
 * (the braces are optional; an empty string or {} is the empty set). The three quote styles
 * and Go escapes are those of PromQL string literals (docs/protocols.md, Selectors).
 */
#ifndef PS_PARSER_LABELS_H
#define PS_PARSER_LABELS_H

#include <stddef.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"

/** Unquotes a PromQL string literal starting at s[0] (a quote char). On success *end is the offset
 *  just past the closing quote and *out a NUL-terminated copy from arena. On an error err->pos is
 *  the offset in s of what is wrong and err->msg says what, without a position ("unknown escape
 *  sequence \q"): the caller, who knows the whole input, writes the position. */
int ps_parse_string(const char *s, size_t n, size_t *end, ps_arena_t *arena, char **out, size_t *outlen,
                    ps_err_t *err);

/** Parses a label set; pairs and strings come from arena. A name is classic ([a-zA-Z_][a-zA-Z0-9_]*)
 *  or quoted as a string (Prometheus 3's {"service.name"="x"}: any UTF-8 without NUL). Names are checked and the set normalised
 *  (sorted, duplicates refused) with ps_labels_normalize. Syntax errors read "1:17: expected ..."
 *  with err->pos the byte offset (16); the errors of ps_labels_normalize have no position (-1). */
int ps_parse_labelset(const char *s, size_t n, ps_arena_t *arena, ps_labels_t *out, ps_err_t *err);

/** Writes s[0..n) quoted as Go's %q does ("a\"b\n"), into out (always NUL-terminated). When s is
 *  longer than max bytes it is cut (on a character boundary) and "..." follows the closing quote. */
void ps_quote_string(char *out, size_t size, const char *s, size_t n, size_t max);

#endif
