// api.js: the UI's fetch wrapper. Every request goes through get(): an answer that is not 2xx
// becomes an ApiError carrying the server's own message (Prometheus' error JSON), and the
// page's loading indicator appears while any request has been running for more than 300 ms.

export class ApiError extends Error {
  constructor(message, status, path, params = {}) {
    super(message);
    this.status = status;
    this.path = path;
    this.params = params; // what was asked: a selector error's position refers to one of these
  }
}

const LOADING_DELAY_MS = 300;
let inflight = 0;
let timer = null;

function loadingEl() { return document.getElementById('loading'); }

function begin() {
  inflight++;
  if (inflight === 1) {
    timer = setTimeout(() => { const el = loadingEl(); if (el) el.hidden = false; }, LOADING_DELAY_MS);
  }
}

function end() {
  inflight--;
  if (inflight === 0) {
    clearTimeout(timer);
    timer = null;
    const el = loadingEl();
    if (el) el.hidden = true;
  }
}

// url(path, params): params is an object; arrays repeat the key (match[]); null/undefined skipped
export function url(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue;
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function errorMessage(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    if (j && j.error) return j.error;
  } catch (_) { /* not JSON */ }
  return text.trim() || `${res.status} ${res.statusText}`;
}

// get(path, params, {signal, as}) -> parsed JSON (as='json', default), Blob (as='blob')
export async function get(path, params = {}, { signal, as = 'json' } = {}) {
  const u = url(path, params);
  begin();
  try {
    let res;
    try {
      res = await fetch(u, { signal, headers: { Accept: as === 'json' ? 'application/json' : '*/*' } });
    } catch (e) {
      if (e.name === 'AbortError') throw e;
      throw new ApiError(`cannot reach the server: ${e.message}`, 0, path);
    }
    if (!res.ok) throw new ApiError(await errorMessage(res), res.status, path, params);
    if (as === 'blob') return await res.blob();
    const j = await res.json();
    // Prometheus-shaped answers are unwrapped; profile answers come bare
    if (j && j.status === 'success' && 'data' in j) return j.data;
    return j;
  } finally {
    end();
  }
}

// the profile APIs the views use
export const api = {
  types: (o) => get('/api/v1/profiles/types', {}, o),
  labels: (match, o) => get('/api/v1/labels', { 'match[]': match ? [match] : [] }, o),
  labelValues: (name, match, o) =>
    get(`/api/v1/label/${encodeURIComponent(name)}/values`, { 'match[]': match ? [match] : [] }, o),
  labelsIn: (match, start, end, o) => get('/api/v1/labels', { 'match[]': [match], start, end }, o),
  labelValuesIn: (name, match, start, end, o) =>
    get(`/api/v1/label/${encodeURIComponent(name)}/values`, { 'match[]': [match], start, end }, o),
  query: (query, time, o) => get('/api/v1/query', { query, time }, o),
  queryRange: (query, start, end, step, o) => get('/api/v1/query_range', { query, start, end, step }, o),
  profile: (params, o) => get('/api/v1/profiles/query', params, o),
  diff: (params, o) => get('/api/v1/profiles/diff', params, o),
  // one stored profile by its id ({id, format, ...}), and the ids of a selector's profiles in a range
  profileById: (params, o) => get('/api/v1/profile', params, o),
  profileIds: (query, start, end, o) => get('/api/v1/profiles/ids', { query, start, end }, o),
  get,
  url,
};
