// dom.js: the tiny h() helper the views build their DOM with, and shared formatting (units,
// times) so the graph, tables and tooltips say the same thing.

// The schemes a link or resource the UI makes may have: http(s), and blob: (object URLs of
// downloads the page made itself). A URL from outside (a scrape URL, a label) with any other
// scheme (javascript:, data:, vbscript:, file:) is never put into an attribute.
const SAFE_SCHEMES = new Set(['http:', 'https:', 'blob:']);
const URL_ATTRS = new Set(['href', 'src', 'action', 'formaction', 'xlink:href']);

// whether u (relative ones against the page) is an http(s) or blob: URL
export function safeUrl(u) {
  try {
    return SAFE_SCHEMES.has(new URL(String(u), location.href).protocol);
  } catch (e) {
    return false;
  }
}

// an external link: <a href> when url is http(s), else the same text, not clickable
export function extLink(url, text = url) {
  const s = String(url ?? '');
  if (!/^https?:/i.test(s) || !safeUrl(s)) return h('span.nolink', { title: 'not an http(s) URL' }, String(text ?? ''));
  return h('a', { href: s, rel: 'noreferrer' }, String(text ?? ''));
}

// h('div.cls#id', {attrs, on: {click}}, ...children). Attribute values are set as values (never
// parsed as markup); URL attributes only with a safe scheme (safeUrl), style strings through the
// CSSOM (allowed by the UI's Content-Security-Policy, unlike a style attribute).
export function h(tag, attrs, ...children) {
  const [, name, rest] = tag.match(/^([a-z0-9-]+)(.*)$/i) || [null, 'div', ''];
  const el = document.createElement(name);
  for (const part of rest.match(/[.#][^.#]+/g) || []) {
    if (part[0] === '.') el.classList.add(part.slice(1));
    else el.id = part.slice(1);
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (URL_ATTRS.has(k.toLowerCase()) && !safeUrl(v)) continue;
    else if (k === 'style' && typeof v === 'string') el.style.cssText = v;
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); return el; }

const TIME_UNITS = { nanoseconds: 1e-9, microseconds: 1e-6, milliseconds: 1e-3, seconds: 1 };
const BINARY = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

// whether a sample unit is a time (CPU time: shown in seconds, or as cores)
export function isTimeUnit(sampleUnit) { return sampleUnit in TIME_UNITS; }

// the binary prefix for bytes up to max: 1536 -> KiB (k = 1)
function binaryPower(max) {
  let k = 0;
  while (k < BINARY.length - 1 && Math.abs(max) >= 1024 ** (k + 1)) k++;
  return k;
}

// unitOf(sampleUnit, {max, perSecond}): the unit a profile type's values are drawn in: {name,
// scale, label} with drawn = raw * scale. Time in seconds; with perSecond (the seconds of a
// step) as cores: seconds of CPU per second; bytes with the binary prefix of max (the largest raw
// value drawn); anything else as counts of it.
export function unitOf(sampleUnit, { max = 0, perSecond = 0 } = {}) {
  if (sampleUnit in TIME_UNITS) {
    if (perSecond > 0) return { name: 'cores', scale: TIME_UNITS[sampleUnit] / perSecond, label: 'cores' };
    return { name: 's', scale: TIME_UNITS[sampleUnit], label: 'seconds' };
  }
  if (sampleUnit === 'bytes') {
    const k = binaryPower(max);
    return { name: BINARY[k], scale: 1 / 1024 ** k, label: `bytes (${BINARY[k]})` };
  }
  return { name: '', scale: 1, label: sampleUnit || 'count' };
}

function trim(x) {
  const a = Math.abs(x);
  if (a === 0) return '0';
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}

// formatValue(raw, sampleUnit, perSecond): a raw profile value as the user reads it: seconds (or
// cores over perSecond seconds), bytes with their binary prefix, counts with k/M/G
export function formatValue(v, sampleUnit, perSecond = 0) {
  if (v === null || v === undefined || Number.isNaN(v)) return '–';
  if (sampleUnit in TIME_UNITS) {
    const x = v * TIME_UNITS[sampleUnit];
    return perSecond > 0 ? `${trim(x / perSecond)} cores` : `${trim(x)} s`;
  }
  if (sampleUnit === 'bytes') {
    const k = binaryPower(v);
    return `${k ? trim(v / 1024 ** k) : Math.round(v)} ${BINARY[k]}`;
  }
  const a = Math.abs(v);
  if (a >= 1e9) return `${trim(v / 1e9)}G`;
  if (a >= 1e6) return `${trim(v / 1e6)}M`;
  if (a >= 1e4) return `${trim(v / 1e3)}k`;
  return String(Math.round(v * 100) / 100);
}

export function pct(part, whole) {
  if (!whole) return '0.00%';
  return `${((100 * part) / whole).toFixed(2)}%`;
}

// a time in the zone the user picked (time.js), 24-hour: 2026-12-01 14:03:05 UTC
export { fmtTime } from './time.js';

// an inline error box with the server's message
export function errorBox(err, what) {
  return h('div.error', { role: 'alert' }, h('strong', `${what}: `), (err && err.message) || String(err));
}

export const PUSH_HINT = "curl -g --data-binary @cpu.pb.gz 'http://" + location.host +
  "/api/v1/profiles/write?labels={job=\"api\",instance=\"a:6060\"}'";

export function emptyState(message) {
  return h('div.empty', h('p', message), h('pre.cmd', PUSH_HINT),
    h('p.hint', 'or add a scrape job (see README, "Scrape a Go program"), then refresh.'));
}
