// Drives the Perses project's Pyroscope plugin (@perses-dev/pyroscope-plugin, its CommonJS build
// in lib/cjs) against a server, in Node with Node's global fetch: the plugin's own datasource
// (PyroscopeDatasource.createClient, whose client calls model/pyroscope-client.js through
// @perses-dev/core's fetch), the hooks its pickers call (utils/use-query.js: profile types, services,
// label names and values) and its profile query (getProfileData, which builds the selector and the
// /pyroscope/render parameters and turns the flamebearer into Perses' profile tree).
//
// Stubbed, and only these (browser UI and the Perses app around the plugin, not installed):
// - the datasource's options editor (PyroscopeDatasourceEditor, a React form);
// - @perses-dev/plugin-system's useDatasourceClient: gives the hooks the client, as the app's
//   datasource store does; the profile query's context.datasourceStore.getDatasourceClient too;
// - @tanstack/react-query's useQuery: runs the hook's queryFn once, as React Query does for an
//   enabled query, and returns {data} or throws its error.
// global.fetch is wrapped only to record each request (method, url, headers, body).
//
// env: PERSES_MODULES (the node_modules of scripts/install-perses.sh), SERVER_URL (no trailing /).
// stdin: a JSON list of steps; stdout: a JSON list of {"result"} or {"error", "status", "type"},
// each with the requests its step made.
'use strict';
const path = require('path');
const Module = require('module');

const plugin = path.join(process.env.PERSES_MODULES, '@perses-dev', 'pyroscope-plugin', 'lib', 'cjs');

let client = null;
const asked = []; // the datasource selectors the plugin asked the app for
const STUBS = {
    './PyroscopeDatasourceEditor': { PyroscopeDatasourceEditor: () => null },
    '@perses-dev/plugin-system': {
        useDatasourceClient: (sel) => { asked.push(sel ?? null); return { data: client }; },
    },
    '@tanstack/react-query': {
        useQuery: (opts) => {
            if (!opts.enabled) throw new Error('query not enabled: ' + JSON.stringify(opts.queryKey));
            return opts.queryFn().then((data) => ({ data, queryKey: opts.queryKey }));
        },
    },
};
const load = Module._load;
Module._load = function (request, parent, isMain) {
    if (Object.prototype.hasOwnProperty.call(STUBS, request) && parent && parent.filename.startsWith(plugin)) {
        return STUBS[request];
    }
    return load.apply(this, arguments);
};

const { PyroscopeDatasource } = require(path.join(plugin, 'plugins', 'pyroscope-datasource.js'));
const { getProfileData } = require(path.join(plugin, 'plugins', 'pyroscope-profile-query', 'get-profile-data.js'));
const hooks = require(path.join(plugin, 'utils', 'use-query.js'));

let requests = [];
const realFetch = global.fetch;
global.fetch = async (url, init) => {
    requests.push({ method: init && init.method, url: String(url), headers: (init && init.headers) || null,
                    body: init && init.body !== undefined ? init.body : null });
    return realFetch(url, init);
};

const DS = { kind: 'PyroscopeDatasource', name: 'profstore' };

async function step(s) {
    switch (s.call) {
    case 'profileTypes': // the ProfileTypeSelector's hook
        return (await hooks.useProfileTypes(DS)).data;
    case 'services': // the Service picker's hook
        return (await hooks.useServices(DS)).data;
    case 'labelNames': { // the LabelName picker's hook and its filter of the options
        const r = (await hooks.useLabelNames(DS)).data;
        return { response: r, options: hooks.filterLabelNamesOptions(r.names ?? []) };
    }
    case 'labelValues': // the LabelValue picker's hook
        return (await hooks.useLabelValues(DS, s.name)).data;
    case 'render': // the client's own call, parameters as given
        return client.searchProfiles(s.params);
    case 'profile': { // the ProfileQuery plugin: a panel's query
        const context = {
            datasourceStore: { getDatasourceClient: async (sel) => { asked.push(sel); return client; } },
        };
        if (s.range) {
            context.absoluteTimeRange = { start: new Date(s.range[0] * 1000), end: new Date(s.range[1] * 1000) };
        }
        return getProfileData(s.spec, context);
    }
    default:
        throw new Error('unknown step ' + s.call);
    }
}

async function main() {
    const steps = JSON.parse(require('fs').readFileSync(0, 'utf8'));
    client = PyroscopeDatasource.createClient({ directUrl: process.env.SERVER_URL }, {});
    const out = [];
    for (const s of steps) {
        requests = [];
        try {
            asked.length = 0;
            const result = await step(s);
            out.push({ result, requests, datasource: asked.slice() });
        } catch (e) {
            out.push({ error: e.message, status: e.status ?? null, type: e.constructor.name, requests,
                       datasource: asked.slice() });
        }
    }
    process.stdout.write(JSON.stringify(out));
}

main().catch((e) => { console.error(e); process.exit(1); });
