// pages.js: what the targets and status pages (targets.js, status.js) share: dom.js's h() to build
// DOM, their stylesheet (css/pages.css, added to the document once), times and sizes as a person
// reads them, and a section that shows "loading…", then its content or the server's error inline.

import { errorBox, h } from './dom.js';

export { errorBox, h };

export function ensureCss(href = '/ui/css/pages.css') {
  if (document.querySelector(`link[rel="stylesheet"][href="${href}"]`)) return;
  document.head.append(h('link', { rel: 'stylesheet', href }));
}

// GET path (Prometheus' envelope unwrapped) through the app's api when it has one (its loading
// indicator and error messages), else fetch with the same rules
export async function getData(api, path, params = {}) {
  if (api && typeof api.get === 'function') return api.get(path, params);
  const q = new URLSearchParams(params).toString();
  const res = await fetch(q ? `${path}?${q}` : path, { headers: { Accept: 'application/json' } });
  const text = await res.text();
  let j = null;
  try { j = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!res.ok) throw new Error((j && j.error) || text.trim() || `${res.status} ${res.statusText}`);
  return j && j.status === 'success' && 'data' in j ? j.data : j;
}

export const NEVER = '0001-01-01T00:00:00Z';

// "3.2s ago", "4m 5s ago", "2h 3m ago", "3d 4h ago"
export function ago(iso, now = Date.now()) {
  if (!iso || iso === NEVER) return 'never';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  return `${duration((now - t) / 1000)} ago`;
}

// seconds -> "850ms", "3.2s", "4m 5s", "2h 3m", "3d 4h"
export function duration(s) {
  if (!Number.isFinite(s)) return '–';
  const a = Math.max(0, s);
  if (a < 1) return `${Math.round(a * 1000)}ms`;
  if (a < 60) return `${a.toFixed(a < 10 ? 1 : 0)}s`;
  const m = Math.floor(a / 60), hr = Math.floor(a / 3600), d = Math.floor(a / 86400);
  if (a < 3600) return `${m}m ${Math.floor(a % 60)}s`;
  if (a < 86400) return `${hr}h ${Math.floor((a % 3600) / 60)}m`;
  return `${d}d ${Math.floor((a % 86400) / 3600)}h`;
}

// bytes -> "512 B", "1.5 KiB", "245.8 MiB"
export function bytes(n) {
  if (!Number.isFinite(n)) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0, x = n;
  while (Math.abs(x) >= 1024 && i < u.length - 1) { x /= 1024; i++; }
  return i === 0 ? `${x} B` : `${x.toFixed(x < 10 ? 2 : 1)} ${u[i]}`;
}

export function count(n) {
  return Number.isFinite(n) ? n.toLocaleString('en-US') : '–';
}

// an ISO/RFC 3339 time as the browser's local time "2026-12-01 15:04:51"
export function localTime(iso) {
  const t = typeof iso === 'number' ? iso : Date.parse(iso);
  if (!Number.isFinite(t)) return String(iso);
  const d = new Date(t), p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// a section that loads: shows "loading…" (after 300 ms), then fill(body, data) or the error
export function loadingSection(title, load, fill, { id } = {}) {
  const body = h('div.pg-body');
  const sec = h('section.pg-section', { id, 'aria-busy': 'true' }, title ? h('h2', title) : null, body);
  const timer = setTimeout(() => body.append(h('p.pg-loading', 'loading…')), 300);
  sec.ready = load().then((data) => {
    clearTimeout(timer);
    body.replaceChildren();
    fill(body, data);
  }, (err) => {
    clearTimeout(timer);
    body.replaceChildren(errorBox(err, title || 'error'));
  }).finally(() => sec.setAttribute('aria-busy', 'false'));
  return sec;
}

// a two-column table of [name, value] rows
export function kvTable(rows, cls = '') {
  return h(`table.pg-kv${cls ? '.' + cls : ''}`, h('tbody', rows.map(([k, v, key]) =>
    h('tr', { dataset: key ? { key } : {} }, h('th', { scope: 'row' }, k), h('td', v)))));
}
