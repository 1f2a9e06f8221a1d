/*
 * config.c - see config.h.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct ps_config {
    int unused;
};

int ps_config_load(const char *path, ps_config_t **out, ps_err_t *err)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return ps_err_set(err, PS_EINVAL, "config %s: %s", path, strerror(errno));
    yaml_parser_t p;
    yaml_document_t doc;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_file(&p, fp);
    int ret = 0;
    if (!yaml_parser_load(&p, &doc)) {
        ret = ps_err_set(err, PS_EINVAL, "config %s:%zu:%zu: %s", path, p.problem_mark.line + 1,
                         p.problem_mark.column + 1, p.problem ? p.problem : "YAML error");
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        if (root != NULL && root->type != YAML_MAPPING_NODE)
            ret = ps_err_set(err, PS_EINVAL, "config %s:%zu:%zu: the top level must be a mapping", path,
                             root->start_mark.line + 1, root->start_mark.column + 1);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&p);
    fclose(fp);
    if (ret == 0)
        *out = calloc(1, sizeof(ps_config_t));
    return ret;
}

void ps_config_free(ps_config_t *c)
{
    free(c);
}
