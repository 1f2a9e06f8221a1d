// state.js: the whole view state lives in the URL (path = view, query string = the rest), so a
// reload, back/forward and a shared link reproduce the view. Views read state.get() and call
// state.set(patch, {push}); listeners run on every change, including back/forward (popstate).
//
// Keys (all optional):
//   type              profile type id                     sel    label matchers, without braces
//   range             5m … 30d (time.js PRESETS: the last 5m … 30d)
//   from,to           a range: unix seconds, or relative to now as typed (now-30m, now): time.js
//   tz                utc|local: the zone times are shown and typed in  refresh  10s|30s|1m|5m
//   by                sum-by labels, comma-separated
//   sfrom,sto         the selection on the graph (unix s)  ssel  the series of a clicked point
//   pid               the id of a clicked point's profile (shown by id: /api/v1/profile?id=)
//   zoom              zoomed flame node (JSON array of frame names)   q   flame search regex
//   mode              flame|table|both|sandwich            inv    1 = root at the bottom
//   fn                selected function (table row, sandwich)         bd  breakdown label
//   bsel,brange,bfrom,bto / csel,crange,cfrom,cto   compare view's baseline and comparison
//   norm              rate|none: the compare view's diff measure (absent: the server's default)
//   boff              1d|7d: compare's baseline = the comparison's range that much earlier
//   hm, tmin,tmax     1 = the graph's heatmap; a heatmap cell's totals (with sfrom,sto its window)
//   id, compare, st   the shared view: a shared profile's id, the one diffed with it, its sample type

import { selectorOf } from './types.js';
import { RANGES as PRESET_RANGES, resolve } from './time.js';

export const VIEWS = ['graph', 'compare', 'targets', 'status', 'upload', 'shared'];
export const RANGES = PRESET_RANGES;

const listeners = new Set();

function parse() {
  let view = location.pathname.replace(/^\/+|\/+$/g, '') || 'graph';
  if (!VIEWS.includes(view)) view = 'graph';
  const p = {};
  for (const [k, v] of new URLSearchParams(location.search)) p[k] = v;
  return { view, ...p };
}

let current = parse();

export function get() { return { ...current }; }

function href(s) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(s)) {
    if (k === 'view' || v === null || v === undefined || v === '') continue;
    q.set(k, String(v));
  }
  const qs = q.toString();
  return `/${s.view}${qs ? '?' + qs : ''}`;
}

export function link(s) { return href({ ...s }); }

function notify(prev) {
  for (const fn of listeners) fn(get(), prev);
}

// set(patch, {push=true, replace=false}): null/'' deletes a key; replace=true drops all keys first
export function set(patch, { push = true, replace = false } = {}) {
  const prev = get();
  const next = replace ? { view: current.view } : { ...current };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined || v === '') delete next[k];
    else next[k] = String(v);
  }
  const h = href(next);
  if (h === location.pathname + location.search) { current = next; return false; }
  if (push) history.pushState(null, '', h);
  else history.replaceState(null, '', h);
  current = parse();
  notify(prev);
  return true;
}

export function subscribe(fn) { listeners.add(fn); return () => listeners.delete(fn); }

window.addEventListener('popstate', () => {
  const prev = get();
  current = parse();
  notify(prev);
});

// the time range of a prefix ('' for the graph, 'b'/'c' for compare) -> {start, end} in unix s
// (from/to that do not parse: the last hour; the query bar marks them)
export function timeRange(s, prefix = '') {
  return resolve(s, prefix) || resolve({}, '');
}

// changed(a, b, keys): whether any of keys differs between two states
export function changed(a, b, keys) {
  if (!b) return true;
  return keys.some((k) => (a[k] || '') !== (b[k] || ''));
}

// the type ids a type stands for (main.js sets it: a picker entry may merge several, types.js)
let idsOf = (type) => [type || ''];
export function setTypeIds(fn) { idsOf = fn; }
export function typeIds(type) { return idsOf(type); }

// selector text for a type and matchers: process_cpu:...{job="api"}, or {__name__=~"a|b", job="api"}
export function selector(type, sel) { return selectorOf(idsOf(type), sel).text; }

// go(view, params): another view with exactly these keys (a new history entry)
export function go(view, params = {}) {
  const prev = get();
  const h = href({ ...params, view });
  if (h === location.pathname + location.search) return false;
  history.pushState(null, '', h);
  current = parse();
  notify(prev);
  return true;
}
