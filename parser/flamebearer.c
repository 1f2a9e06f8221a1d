/*
 * flamebearer.c - Pyroscope's flamebearer JSON read back into a profile (stacks.h): the document
 * its UI exports and /render answers (profstore's /pyroscope/render writes the same), e.g.
 *
 *   {"version":1,
 *    "flamebearer":{"names":["total","main","work"],
 *                   "levels":[[0,10,0,0],[0,10,2,1],[2,8,8,2]],"numTicks":10,"maxSelf":8},
 *    "metadata":{"format":"single","spyName":"","sampleRate":100,"units":"samples","name":"cpu"}}
 *
 * A node is 4 integers: x offset, total, self, index into names. The x offset is delta-encoded
 * within its level (the gap from the end, x + total, of the level's previous node); level 0 is
 * the root ("total"), not a frame. The parent of a node is the node of the level above with the
 * largest x not past its own (Pyroscope's ProfileToTree), and a node must lie within its parent.
 * Each node with a self value is a sample of that value whose stack is the names from level 1
 * down to it: the flame graph of the profile is the document's again. numTicks, maxSelf,
 * timeline, groups, heatmap and any other field are derived or not profile data, and ignored.
 * As in Pyroscope, version is at most 1 and "double" (a diff, 7 integers a node) is refused.
 *
 * jansson holds the whole document, about 96 bytes a value: a pre-scan counts the values and
 * refuses a document that would need more than max_json_memory, before jansson allocates.
 */
#include <jansson.h>
#include <string.h>

#include "core/json.h"
#include "stacks.h"

#define VALUE_COST 96    /* bytes jansson takes per JSON value, at most */
#define MAX_DEPTH 64     /* nesting of the document (the profile itself needs 3) */
#define MAX_VALUE (((int64_t)1 << 62) - 1)

static int prescan(const char *s, size_t n, size_t budget, ps_err_t *err)
{
    size_t values;
    int ret = ps_json_prescan(s, n, "flamebearer JSON", MAX_DEPTH, &values, NULL, err);
    if (ret == 0 && values > budget / VALUE_COST)
        ret = ps_err_set(err, PS_ETOOBIG, "flamebearer JSON: %zu values need more than the %zu bytes of memory allowed",
                         values, budget);
    return ret;
}

static const char *jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* an optional string field of obj (absent or null: "") */
static int opt_str(const json_t *obj, const char *key, const char *path, ps_arena_t *a, const char **out, ps_err_t *err)
{
    const json_t *v = json_object_get(obj, key);
    *out = "";
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return ps_err_set(err, PS_EINVAL, "%s: %s, not a string", path, jtype(v));
    *out = ps_arena_strndup(a, json_string_value(v), json_string_length(v));
    return 0;
}

typedef struct level {
    uint32_t n;       /* nodes */
    int64_t *x, *total, *self;
    uint32_t *name, *parent;
} level_t;

/* reads level li (an array of 4-integer nodes) into *lv, x offsets decoded */
static int read_level(const json_t *arr, uint32_t li, uint32_t nnames, ps_arena_t *a, level_t *lv, ps_err_t *err)
{
    if (!json_is_array(arr))
        return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u]: %s, not an array", li, jtype(arr));
    size_t len = json_array_size(arr);
    if (len % 4 != 0)
        return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u]: %zu values, not a multiple of 4 (x offset, total, "
                          "self, name index per node)", li, len);
    lv->n = (uint32_t)(len / 4);
    lv->x = ps_arena_alloc(a, ((size_t)lv->n + 1) * sizeof(int64_t));
    lv->total = ps_arena_alloc(a, ((size_t)lv->n + 1) * sizeof(int64_t));
    lv->self = ps_arena_alloc(a, ((size_t)lv->n + 1) * sizeof(int64_t));
    lv->name = ps_arena_alloc(a, ((size_t)lv->n + 1) * sizeof(uint32_t));
    lv->parent = ps_arena_alloc(a, ((size_t)lv->n + 1) * sizeof(uint32_t));
    int64_t end = 0; /* where the previous node ends */
    for (uint32_t k = 0; k < lv->n; k++) {
        int64_t v[4];
        for (int f = 0; f < 4; f++) {
            const json_t *e = json_array_get(arr, (size_t)k * 4 + (size_t)f);
            if (!json_is_integer(e))
                return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u][%zu]: %s, not an integer", li,
                                  (size_t)k * 4 + (size_t)f, jtype(e));
            v[f] = (int64_t)json_integer_value(e);
            if (v[f] < 0 || v[f] > MAX_VALUE)
                return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u][%zu]: %lld is out of range (0 to 2^62-1)", li,
                                  (size_t)k * 4 + (size_t)f, (long long)v[f]);
        }
        if (v[2] > v[1])
            return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u][%zu]: self %lld is more than the node's total %lld",
                              li, (size_t)k * 4 + 2, (long long)v[2], (long long)v[1]);
        if (v[3] >= nnames)
            return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u][%zu]: name index %lld, there are %u names", li,
                              (size_t)k * 4 + 3, (long long)v[3], nnames);
        if (v[0] > MAX_VALUE - end || end + v[0] > MAX_VALUE - v[1])
            return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u][%zu]: the node ends past 2^62-1", li,
                              (size_t)k * 4);
        lv->x[k] = end + v[0];
        lv->total[k] = v[1];
        lv->self[k] = v[2];
        lv->name[k] = (uint32_t)v[3];
        lv->parent[k] = 0;
        end = lv->x[k] + v[1];
    }
    return 0;
}

/* links each node of lv (level li >= 2) to its parent in up */
static int link_level(level_t *lv, const level_t *up, uint32_t li, ps_err_t *err)
{
    uint32_t j = 0;
    for (uint32_t k = 0; k < lv->n; k++) {
        while (j + 1 < up->n && up->x[j + 1] <= lv->x[k])
            j++;
        if (up->n == 0 || up->x[j] > lv->x[k])
            return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u][%zu]: no node of level %u above x offset %lld", li,
                              (size_t)k * 4, li - 1, (long long)lv->x[k]);
        if (lv->x[k] + lv->total[k] > up->x[j] + up->total[j])
            return ps_err_set(err, PS_EINVAL, "flamebearer.levels[%u][%zu]: the node (x %lld, total %lld) is not within "
                              "its parent levels[%u][%zu] (x %lld, total %lld)", li, (size_t)k * 4, (long long)lv->x[k],
                              (long long)lv->total[k], li - 1, (size_t)j * 4, (long long)up->x[j],
                              (long long)up->total[j]);
        lv->parent[k] = j;
    }
    return 0;
}

static int parse(const json_t *root, const ps_stacks_limits_t *lim, ps_arena_t *arena, ps_profile_t *p,
                 ps_fbjson_meta_t *meta, ps_err_t *err)
{
    int ret;
    if (!json_is_object(root))
        return ps_err_set(err, PS_EINVAL, "flamebearer JSON: the document is %s, not an object", jtype(root));
    const json_t *ver = json_object_get(root, "version");
    if (ver != NULL && !json_is_null(ver)) {
        if (!json_is_integer(ver))
            return ps_err_set(err, PS_EINVAL, "version: %s, not an integer", jtype(ver));
        if (json_integer_value(ver) < 0 || json_integer_value(ver) > 1)
            return ps_err_set(err, PS_EINVAL, "version: %lld is not supported (1 is)",
                              (long long)json_integer_value(ver));
    }
    const json_t *md = json_object_get(root, "metadata");
    if (md == NULL || !json_is_object(md))
        return ps_err_set(err, PS_EINVAL, "metadata: %s, not an object", md ? jtype(md) : "missing");
    const char *format;
    if ((ret = opt_str(md, "format", "metadata.format", arena, &format, err)) != 0)
        return ret;
    if (strcmp(format, "double") == 0)
        return ps_err_set(err, PS_EINVAL, "metadata.format: \"double\" (a diff) cannot be uploaded, as in "
                          "Pyroscope: upload its two profiles and diff them");
    if (strcmp(format, "single") != 0)
        return ps_err_set(err, PS_EINVAL, "metadata.format: \"%.40s\" is not supported (\"single\" is)", format);
    memset(meta, 0, sizeof(*meta));
    if ((ret = opt_str(md, "name", "metadata.name", arena, &meta->name, err)) != 0 ||
        (ret = opt_str(md, "units", "metadata.units", arena, &meta->units, err)) != 0 ||
        (ret = opt_str(md, "spyName", "metadata.spyName", arena, &meta->spy_name, err)) != 0)
        return ret;
    const json_t *sr = json_object_get(md, "sampleRate");
    if (sr != NULL && !json_is_null(sr)) {
        if (!json_is_integer(sr) || json_integer_value(sr) < 0 || json_integer_value(sr) > UINT32_MAX)
            return ps_err_set(err, PS_EINVAL, "metadata.sampleRate: %s, not an integer from 0 to 4294967295",
                              json_is_integer(sr) ? "out of range" : jtype(sr));
        meta->sample_rate = (uint32_t)json_integer_value(sr);
    }
    const json_t *fb = json_object_get(root, "flamebearer");
    if (fb == NULL || !json_is_object(fb))
        return ps_err_set(err, PS_EINVAL, "flamebearer: %s, not an object", fb ? jtype(fb) : "missing");
    const json_t *names = json_object_get(fb, "names"), *levels = json_object_get(fb, "levels");
    if (names == NULL || !json_is_array(names))
        return ps_err_set(err, PS_EINVAL, "flamebearer.names: %s, not an array", names ? jtype(names) : "missing");
    if (json_array_size(names) == 0)
        return ps_err_set(err, PS_EINVAL, "flamebearer.names: empty (a profile has at least one name)");
    if (levels == NULL || !json_is_array(levels))
        return ps_err_set(err, PS_EINVAL, "flamebearer.levels: %s, not an array", levels ? jtype(levels) : "missing");
    size_t nl = json_array_size(levels);
    if (nl == 0)
        return ps_err_set(err, PS_EINVAL, "flamebearer.levels: empty (a profile has at least one level)");
    if (nl - 1 > lim->max_stack_depth)
        return ps_err_set(err, PS_ETOOBIG, "flamebearer.levels: %zu levels, stacks deeper than %u frames", nl,
                          lim->max_stack_depth);
    uint32_t nnames = (uint32_t)json_array_size(names);
    for (uint32_t i = 0; i < nnames; i++)
        if (!json_is_string(json_array_get(names, i)))
            return ps_err_set(err, PS_EINVAL, "flamebearer.names[%u]: %s, not a string", i,
                              jtype(json_array_get(names, i)));
    level_t *lv = ps_arena_calloc(arena, nl, sizeof(level_t));
    for (uint32_t li = 0; li < nl; li++) {
        if ((ret = read_level(json_array_get(levels, li), li, nnames, arena, &lv[li], err)) != 0)
            return ret;
        if (li >= 2 && (ret = link_level(&lv[li], &lv[li - 1], li, err)) != 0)
            return ret;
    }
    ps_stacks_t b;
    ps_stacks_init(&b, lim, arena, p, meta->name[0] ? meta->name : "samples", meta->units[0] ? meta->units : "count");
    uint32_t *locs = ps_arena_calloc(arena, nnames, sizeof(uint32_t)); /* name index -> location, 0: not yet */
    uint32_t *stack = ps_arena_alloc(arena, nl * sizeof(uint32_t));
    for (uint32_t li = 1; li < nl && ret == 0; li++)
        for (uint32_t k = 0; k < lv[li].n && ret == 0; k++) {
            const json_t *nm = json_array_get(names, lv[li].name[k]);
            meta->other_nodes += json_string_length(nm) == 5 && memcmp(json_string_value(nm), "other", 5) == 0;
            if (lv[li].self[k] == 0)
                continue;
            uint32_t at = k;
            for (uint32_t d = li; d >= 1; d--) { /* leaf to level 1 */
                uint32_t ni = lv[d].name[at];
                if (locs[ni] == 0) {
                    const json_t *s = json_array_get(names, ni);
                    if ((ret = ps_stacks_frame(&b, json_string_value(s), json_string_length(s), &locs[ni], err)) != 0) {
                        ps_err_prefix(err, "flamebearer.names[%u]", ni);
                        break;
                    }
                }
                stack[d - 1] = locs[ni];
                at = lv[d].parent[at];
            }
            if (ret == 0 && (ret = ps_stacks_sample(&b, stack, li, lv[li].self[k], err)) != 0)
                ps_err_prefix(err, "flamebearer.levels[%u][%zu]", li, (size_t)k * 4);
        }
    ps_stacks_dispose(&b);
    return ret;
}

int ps_fbjson_parse(const void *data, size_t n, const ps_stacks_limits_t *lim, ps_arena_t *arena, ps_profile_t *p,
                    ps_fbjson_meta_t *meta, ps_err_t *err)
{
    memset(p, 0, sizeof(*p));
    memset(meta, 0, sizeof(*meta));
    int ret = prescan(data, n, lim->max_json_memory, err);
    if (ret != 0)
        return ret;
    json_error_t je;
    json_t *root = json_loadb(data, n, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return ps_err_set_at(err, PS_EINVAL, (size_t)(je.position > 0 ? je.position : 0),
                             "flamebearer JSON: line %d column %d: %s", je.line, je.column, je.text);
    ret = parse(root, lim, arena, p, meta, err);
    json_decref(root);
    return ret;
}
