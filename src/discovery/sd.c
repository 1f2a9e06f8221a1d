/*
 * sd.c - target group lists from file_sd files (JSON or YAML) and http_sd bodies (JSON), the
 * format of Prometheus' discovery/file and discovery/http (docs/protocols.md):
 *
 *     [{"targets": ["10.0.0.1:9100", "10.0.0.2:9100"], "labels": {"env": "prod"}}, ...]
 *
 * Rules (Prometheus' where it has one):
 *  - the top level is a list; JSON `null` and an empty YAML document are an empty list;
 *  - a group is a mapping; a null group is an error (Prometheus: "nil target group item found");
 *  - "targets" is a list of strings (JSON: strings only; YAML: any scalar, as yaml.v2 decodes
 *    into a string); targets are not checked as host:port here: Prometheus checks __address__
 *    after relabeling, and a URL-as-target (blackbox style) is legitimate before relabeling;
 *  - "labels" maps valid label names ([a-zA-Z_][a-zA-Z0-9_]*) to strings (valid UTF-8, no NUL);
 *    null values are "" (unset); labels are returned sorted by name;
 *  - other keys: ignored in JSON (encoding/json), an error in YAML (yaml.UnmarshalStrict);
 *  - duplicate keys: an error in both (jansson JSON_REJECT_DUPLICATES; yaml.v2 strict).
 * Each group's `source` is "NAME:INDEX" (Prometheus' fileSource).
 *
 * Errors are PS_EINVAL:
 *     JSON  "NAME:LINE:COL: invalid JSON: ..."    (syntax, from jansson)
 *           "NAME: [2].targets[0]: must be a string, got a number"   (no positions in jansson values)
 *     YAML  "NAME:LINE:COL: [2].labels: \"a-b\" is not a valid label name ..."
 */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "discovery.h"

static int cmp_pair(const void *x, const void *y)
{
    const ps_label_pair_t *a = x, *b = y;
    size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
    int r = memcmp(a->name, b->name, n);
    return r != 0 ? r : (a->nlen > b->nlen) - (a->nlen < b->nlen);
}

static void set_source(ps_arena_t *arena, ps_target_group_t *g, const char *name, size_t i)
{
    char idx[24];
    int k = snprintf(idx, sizeof(idx), ":%zu", i);
    size_t nl = strlen(name);
    char *s = ps_arena_alloc(arena, nl + (size_t)k + 1);
    memcpy(s, name, nl);
    memcpy(s + nl, idx, (size_t)k + 1);
    g->source = s;
}

/* ---- JSON ---- */

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "a list";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static int parse_json(const char *data, size_t n, const char *name, ps_arena_t *arena, ps_target_group_t **groups,
                      uint32_t *ngroups, ps_err_t *err)
{
    json_error_t je;
    json_t *root = json_loadb(data, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &je);
    if (root == NULL)
        return ps_err_set(err, PS_EINVAL, "%s:%d:%d: invalid JSON: %s", name, je.line, je.column, je.text);
    int rc = 0;
    if (json_is_null(root))
        goto Exit;
    if (!json_is_array(root)) {
        rc = ps_err_set(err, PS_EINVAL,
                        "%s: expected a list of target groups ([{\"targets\": [...], \"labels\": {...}}]), got %s",
                        name, json_kind(root));
        goto Exit;
    }
    size_t cnt = json_array_size(root);
    if (cnt > UINT32_MAX) {
        rc = ps_err_set(err, PS_ETOOBIG, "%s: too many target groups", name);
        goto Exit;
    }
    ps_target_group_t *gs = ps_arena_calloc(arena, cnt, sizeof(ps_target_group_t));
    for (size_t i = 0; i < cnt; i++) {
        json_t *g = json_array_get(root, i);
        ps_target_group_t *tg = &gs[i];
        if (!json_is_object(g)) {
            rc = ps_err_set(err, PS_EINVAL, "%s: [%zu]: expected a target group (an object), got %s", name, i,
                            json_kind(g));
            goto Exit;
        }
        set_source(arena, tg, name, i);
        json_t *targets = json_object_get(g, "targets");
        if (targets != NULL && !json_is_null(targets)) {
            if (!json_is_array(targets)) {
                rc = ps_err_set(err, PS_EINVAL, "%s: [%zu].targets: expected a list of strings, got %s", name, i,
                                json_kind(targets));
                goto Exit;
            }
            size_t nt = json_array_size(targets);
            tg->targets = ps_arena_calloc(arena, nt, sizeof(char *));
            for (size_t k = 0; k < nt; k++) {
                json_t *t = json_array_get(targets, k);
                if (!json_is_string(t)) {
                    rc = ps_err_set(err, PS_EINVAL, "%s: [%zu].targets[%zu]: must be a string, got %s", name, i, k,
                                    json_kind(t));
                    goto Exit;
                }
                const char *s = json_string_value(t);
                size_t sl = json_string_length(t);
                if (memchr(s, '\0', sl) != NULL) {
                    rc = ps_err_set(err, PS_EINVAL, "%s: [%zu].targets[%zu]: contains a NUL character", name, i, k);
                    goto Exit;
                }
                tg->targets[tg->ntargets++] = ps_arena_strndup(arena, s, sl);
            }
        }
        json_t *labels = json_object_get(g, "labels");
        if (labels != NULL && !json_is_null(labels)) {
            if (!json_is_object(labels)) {
                rc = ps_err_set(err, PS_EINVAL, "%s: [%zu].labels: expected an object of strings, got %s", name, i,
                                json_kind(labels));
                goto Exit;
            }
            tg->labels.pairs = ps_arena_calloc(arena, json_object_size(labels), sizeof(ps_label_pair_t));
            const char *k;
            json_t *v;
            json_object_foreach(labels, k, v) {
                size_t kl = strlen(k);
                if (!ps_label_name_valid(k, kl)) {
                    rc = ps_err_set(err, PS_EINVAL,
                                    "%s: [%zu].labels: \"%.64s\" is not a valid label name (must match "
                                    "[a-zA-Z_][a-zA-Z0-9_]*)",
                                    name, i, k);
                    goto Exit;
                }
                if (!json_is_string(v) && !json_is_null(v)) {
                    rc = ps_err_set(err, PS_EINVAL, "%s: [%zu].labels.%s: must be a string, got %s", name, i, k,
                                    json_kind(v));
                    goto Exit;
                }
                const char *s = json_is_string(v) ? json_string_value(v) : "";
                size_t sl = json_is_string(v) ? json_string_length(v) : 0;
                if (memchr(s, '\0', sl) != NULL) {
                    rc = ps_err_set(err, PS_EINVAL, "%s: [%zu].labels.%s: contains a NUL character", name, i, k);
                    goto Exit;
                }
                ps_label_pair_t *p = &tg->labels.pairs[tg->labels.n++];
                p->name = ps_arena_strndup(arena, k, kl);
                p->nlen = (uint32_t)kl;
                p->value = ps_arena_strndup(arena, s, sl);
                p->vlen = (uint32_t)sl;
            }
            if (tg->labels.n > 1)
                qsort(tg->labels.pairs, tg->labels.n, sizeof(ps_label_pair_t), cmp_pair);
        }
    }
    *groups = gs;
    *ngroups = (uint32_t)cnt;
Exit:
    json_decref(root);
    return rc;
}

/* ---- YAML ---- */

typedef struct yctx {
    yaml_document_t *doc;
    const char *name;
    ps_err_t *err;
    char path[128];
} yctx_t;

__attribute__((format(printf, 3, 4))) static int yfail(yctx_t *c, const yaml_node_t *n, const char *fmt, ...)
{
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    size_t line = n->start_mark.line + 1, col = n->start_mark.column + 1;
    if (c->path[0] == '\0')
        return ps_err_set(c->err, PS_EINVAL, "%s:%zu:%zu: %s", c->name, line, col, what);
    return ps_err_set(c->err, PS_EINVAL, "%s:%zu:%zu: %s: %s", c->name, line, col, c->path, what);
}

static yaml_node_t *ynode(yctx_t *c, int i) { return yaml_document_get_node(c->doc, i); }

static bool y_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE)
        return false;
    if (n->tag != NULL && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return true;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE && n->data.scalar.style != YAML_ANY_SCALAR_STYLE)
        return false;
    const char *s = (const char *)n->data.scalar.value;
    size_t l = n->data.scalar.length;
    return l == 0 || (l == 1 && s[0] == '~') ||
           (l == 4 && (memcmp(s, "null", 4) == 0 || memcmp(s, "Null", 4) == 0 || memcmp(s, "NULL", 4) == 0));
}

static const char *y_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE: return y_is_null(n) ? "null" : "a string";
    default: return "nothing";
    }
}

/* A scalar as a string: a copy from arena, or NULL after an error. */
static const char *y_str(yctx_t *c, ps_arena_t *arena, const yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SCALAR_NODE || y_is_null(n)) {
        yfail(c, n, "%s must be a string, got %s", what, y_kind(n));
        return NULL;
    }
    if (memchr(n->data.scalar.value, '\0', n->data.scalar.length) != NULL) {
        yfail(c, n, "%s contains a NUL character", what);
        return NULL;
    }
    return ps_arena_strndup(arena, (const char *)n->data.scalar.value, n->data.scalar.length);
}

static int parse_yaml_group(yctx_t *c, ps_arena_t *arena, const yaml_node_t *g, ps_target_group_t *tg, size_t i)
{
    snprintf(c->path, sizeof(c->path), "[%zu]", i);
    if (g->type != YAML_MAPPING_NODE)
        return yfail(c, g, "expected a target group (a mapping with targets and labels), got %s", y_kind(g));
    for (yaml_node_pair_t *pr = g->data.mapping.pairs.start; pr < g->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = ynode(c, pr->key), *v = ynode(c, pr->value);
        snprintf(c->path, sizeof(c->path), "[%zu]", i);
        if (k->type != YAML_SCALAR_NODE)
            return yfail(c, k, "keys must be strings, got %s", y_kind(k));
        const char *key = (const char *)k->data.scalar.value;
        for (yaml_node_pair_t *q = g->data.mapping.pairs.start; q < pr; q++)
            if (ynode(c, q->key)->type == YAML_SCALAR_NODE &&
                strcmp((const char *)ynode(c, q->key)->data.scalar.value, key) == 0)
                return yfail(c, k, "duplicate key \"%.64s\"", key);
        bool is_targets = strcmp(key, "targets") == 0;
        if (!is_targets && strcmp(key, "labels") != 0)
            return yfail(c, k, "unknown field \"%.64s\" in a target group (valid fields: targets, labels)", key);
        if (y_is_null(v))
            continue;
        snprintf(c->path, sizeof(c->path), "[%zu].%s", i, key);
        if (is_targets) {
            if (v->type != YAML_SEQUENCE_NODE)
                return yfail(c, v, "expected a list of strings, got %s", y_kind(v));
            size_t nt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
            tg->targets = ps_arena_calloc(arena, nt, sizeof(char *));
            for (size_t t = 0; t < nt; t++) {
                yaml_node_t *it = ynode(c, v->data.sequence.items.start[t]);
                snprintf(c->path, sizeof(c->path), "[%zu].targets[%zu]", i, t);
                const char *s = y_str(c, arena, it, "a target");
                if (s == NULL)
                    return c->err != NULL ? c->err->code : PS_EINVAL;
                tg->targets[tg->ntargets++] = s;
            }
        } else {
            if (v->type != YAML_MAPPING_NODE)
                return yfail(c, v, "expected a mapping of label names to values, got %s", y_kind(v));
            size_t nl = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
            tg->labels.pairs = ps_arena_calloc(arena, nl, sizeof(ps_label_pair_t));
            for (yaml_node_pair_t *lp = v->data.mapping.pairs.start; lp < v->data.mapping.pairs.top; lp++) {
                yaml_node_t *lk = ynode(c, lp->key), *lv = ynode(c, lp->value);
                snprintf(c->path, sizeof(c->path), "[%zu].labels", i);
                if (lk->type != YAML_SCALAR_NODE ||
                    !ps_label_name_valid((const char *)lk->data.scalar.value, lk->data.scalar.length))
                    return yfail(c, lk, "\"%.64s\" is not a valid label name (must match [a-zA-Z_][a-zA-Z0-9_]*)",
                                 lk->type == YAML_SCALAR_NODE ? (const char *)lk->data.scalar.value : "(not a string)");
                const char *ln = (const char *)lk->data.scalar.value;
                for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < lp; q++)
                    if (strcmp((const char *)ynode(c, q->key)->data.scalar.value, ln) == 0)
                        return yfail(c, lk, "duplicate label name \"%.64s\"", ln);
                snprintf(c->path, sizeof(c->path), "[%zu].labels.%.64s", i, ln);
                const char *val = "";
                if (!y_is_null(lv) && (val = y_str(c, arena, lv, "a label value")) == NULL)
                    return c->err != NULL ? c->err->code : PS_EINVAL;
                ps_label_pair_t *p = &tg->labels.pairs[tg->labels.n++];
                p->name = ps_arena_strndup(arena, ln, lk->data.scalar.length);
                p->nlen = (uint32_t)lk->data.scalar.length;
                p->value = val;
                p->vlen = (uint32_t)strlen(val);
            }
            if (tg->labels.n > 1)
                qsort(tg->labels.pairs, tg->labels.n, sizeof(ps_label_pair_t), cmp_pair);
        }
    }
    return 0;
}

static int parse_yaml(const char *data, size_t n, const char *name, ps_arena_t *arena, ps_target_group_t **groups,
                      uint32_t *ngroups, ps_err_t *err)
{
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p))
        return ps_err_set(err, PS_ENOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(&p, (const unsigned char *)data, n);
    if (!yaml_parser_load(&p, &doc)) {
        size_t line = p.problem_mark.line + 1, col = p.problem_mark.column + 1;
        if (p.error == YAML_READER_ERROR) {
            line = 1;
            col = 1;
            for (size_t i = 0; i < p.problem_offset && i < n; i++, col++)
                if (data[i] == '\n') {
                    line++;
                    col = 0;
                }
        }
        int rc = ps_err_set(err, PS_EINVAL, "%s:%zu:%zu: invalid YAML: %s", name, line, col,
                            p.problem != NULL ? p.problem : "YAML error");
        yaml_parser_delete(&p);
        return rc;
    }
    yctx_t c = {&doc, name, err, ""};
    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root == NULL || y_is_null(root))
        goto Exit;
    if (root->type != YAML_SEQUENCE_NODE) {
        rc = yfail(&c, root, "expected a list of target groups (- targets: [...]), got %s", y_kind(root));
        goto Exit;
    }
    size_t cnt = (size_t)(root->data.sequence.items.top - root->data.sequence.items.start);
    ps_target_group_t *gs = ps_arena_calloc(arena, cnt, sizeof(ps_target_group_t));
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *g = ynode(&c, root->data.sequence.items.start[i]);
        if ((rc = parse_yaml_group(&c, arena, g, &gs[i], i)) != 0)
            goto Exit;
        set_source(arena, &gs[i], name, i);
    }
    *groups = gs;
    *ngroups = (uint32_t)cnt;
Exit:
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return rc;
}

int ps_sd_parse(const char *data, size_t n, bool yaml, const char *name, ps_arena_t *arena, ps_target_group_t **groups,
                uint32_t *ngroups, ps_err_t *err)
{
    *groups = NULL;
    *ngroups = 0;
    if (name == NULL)
        name = "<sd>";
    if (data == NULL)
        data = "";
    ps_target_group_t *gs = NULL;
    uint32_t ng = 0;
    int rc = yaml ? parse_yaml(data, n, name, arena, &gs, &ng, err) : parse_json(data, n, name, arena, &gs, &ng, err);
    if (rc == 0) {
        *groups = gs;
        *ngroups = ng;
    }
    return rc;
}
