/*
 * config.h - the YAML configuration file (--config). For now it is parsed and checked for YAML
 * errors (reported with file, line and column); the scrape configuration comes with the scraper.
 */
#ifndef PS_CONFIG_H
#define PS_CONFIG_H

#include "core/err.h"

typedef struct ps_config ps_config_t;

int ps_config_load(const char *path, ps_config_t **out, ps_err_t *err);
void ps_config_free(ps_config_t *c);

#endif
