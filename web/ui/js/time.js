// time.js: times as Grafana takes them, and the one time zone every time on the page is shown in.
//
// A range is a preset (`range=1h`: the last hour) or from/to, each either absolute (unix seconds in
// the URL; typed as 2026-12-01 14:03, 2026-12-01 14:03:05, 2026-12-01 or an ISO time, read in the
// zone below) or relative to now as Grafana's date math writes it: now, now-30m, now-2d, now+1h,
// with units s m h d w M y, and /unit rounding (now/d the start of today; as a range's end, its
// end: Grafana's roundUp). A range with a relative end moves with the clock: each refresh (the
// button, or auto-refresh) asks for the range up to the new now.
//
// The zone is UTC or the browser's ("local"): the URL's tz, else the last one picked (localStorage
// ps.tz), else local. Axes, tooltips, the selection line and the typed times all use it, in
// 24-hour form.

export const PRESETS = ['5m', '15m', '30m', '1h', '3h', '6h', '12h', '24h', '2d', '7d', '30d'];
export const REFRESH = { '10s': 10, '30s': 30, '1m': 60, '5m': 300 };
const FIXED = { s: 1, m: 60, h: 3600, d: 86400, w: 604800 };

// '30m' -> 1800 (s m h d w); null when not a duration
export function durationSecs(d) {
  const m = /^(\d+)([smhdw])$/.exec(String(d || ''));
  return m ? Number(m[1]) * FIXED[m[2]] : null;
}

// 1800 -> '30m': the largest unit that divides it
export function fmtDuration(secs) {
  for (const u of ['d', 'h', 'm']) if (secs % FIXED[u] === 0 && secs >= FIXED[u]) return `${secs / FIXED[u]}${u}`;
  return `${secs}s`;
}

export const RANGES = Object.fromEntries(PRESETS.map((p) => [p, durationSecs(p)]));

// ---- the zone ----------------------------------------------------------------------------------

const KEY = 'ps.tz';

function stored() {
  try { return localStorage.getItem(KEY); } catch (_) { return null; }
}

// 'utc' or 'local'
export function zone() {
  const z = new URLSearchParams(location.search).get('tz') || stored();
  return z === 'utc' ? 'utc' : 'local';
}

export function rememberZone(z) {
  try { localStorage.setItem(KEY, z === 'utc' ? 'utc' : 'local'); } catch (_) { /* private mode: the URL keeps it */ }
}

// the calendar fields of a time (unix s) in a zone
function fields(sec, z) {
  const d = new Date(sec * 1000);
  if (z === 'utc') {
    return { y: d.getUTCFullYear(), M: d.getUTCMonth(), d: d.getUTCDate(), h: d.getUTCHours(), m: d.getUTCMinutes(), s: d.getUTCSeconds(), ms: d.getUTCMilliseconds(), dow: d.getUTCDay() };
  }
  return { y: d.getFullYear(), M: d.getMonth(), d: d.getDate(), h: d.getHours(), m: d.getMinutes(), s: d.getSeconds(), ms: d.getMilliseconds(), dow: d.getDay() };
}

// calendar fields in a zone -> unix s (fields overflow as Date's do: month 13 is next January)
function compose(f, z) {
  const ms = z === 'utc' ? Date.UTC(f.y, f.M, f.d, f.h, f.m, f.s, f.ms)
    : new Date(f.y, f.M, f.d, f.h, f.m, f.s, f.ms).getTime();
  return ms / 1000;
}

const p2 = (n) => String(n).padStart(2, '0');

// the zone's name at a time: UTC, or the local offset (UTC+1, UTC−3:30)
export function zoneName(sec, z = zone()) {
  if (z === 'utc') return 'UTC';
  const off = -new Date(sec * 1000).getTimezoneOffset();
  if (off === 0) return 'UTC';
  return `UTC${off > 0 ? '+' : '−'}${Math.floor(Math.abs(off) / 60)}${Math.abs(off) % 60 ? ':' + p2(Math.abs(off) % 60) : ''}`;
}

// 2026-12-01 14:03:05 (24-hour, in the zone), without the zone's name
export function fmtPlain(sec, z = zone(), seconds = true) {
  const f = fields(sec, z);
  return `${f.y}-${p2(f.M + 1)}-${p2(f.d)} ${p2(f.h)}:${p2(f.m)}${seconds ? ':' + p2(f.s) : ''}`;
}

// 2026-12-01 14:03:05 UTC: a time as the selection, tooltips and legend show it
export function fmtTime(sec, z = zone()) { return `${fmtPlain(sec, z)} ${zoneName(sec, z)}`; }

// an axis tick: HH:mm, with the date where the day changes or the ticks are days apart
export function fmtTick(sec, incr, prevSec, z = zone()) {
  const f = fields(sec, z);
  const day = `${p2(f.M + 1)}-${p2(f.d)}`;
  if (incr >= 86400) return day;
  const hm = incr < 60 ? `${p2(f.h)}:${p2(f.m)}:${p2(f.s)}` : `${p2(f.h)}:${p2(f.m)}`;
  const newDay = prevSec == null || fields(prevSec, z).d !== f.d;
  return newDay ? `${hm}\n${day}` : hm;
}

// ---- parsing -----------------------------------------------------------------------------------

const ABS = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?\s*(z|utc)?$/i;
const MATH = /([+-])(\d+)([smhdwMy])|\/([smhdwMy])/gy;

function addUnit(f, n, u) {
  if (u === 'y') f.y += n;
  else if (u === 'M') f.M += n;
  else if (u === 'w') f.d += 7 * n;
  else if (u === 'd') f.d += n;
  else if (u === 'h') f.h += n;
  else if (u === 'm') f.m += n;
  else f.s += n;
}

// the start of the unit holding f (weeks start on Monday), or its last second when up
function round(f, u, up) {
  const order = ['y', 'M', 'd', 'h', 'm', 's'];
  const k = order.indexOf(u === 'w' ? 'd' : u);
  if (u === 'w') f.d -= (f.dow + 6) % 7;
  const zero = { M: 0, d: 1, h: 0, m: 0, s: 0 };
  for (const x of order.slice(k + 1)) f[x] = zero[x];
  f.ms = 0;
  if (up) { addUnit(f, 1, u); f.s -= 1; }
}

// whether a typed time is relative to now
export function isRelative(text) { return /^\s*now/i.test(String(text || '')); }

// parseTime(text, {now, roundUp, z}) -> unix s, or null when it is not a time: date math from now,
// an absolute date and time in the zone (a trailing Z or UTC: in UTC), or unix seconds (more than
// 11 digits: milliseconds, as Grafana's URLs carry them)
export function parseTime(text, { now = Date.now() / 1000, roundUp = false, z = zone() } = {}) {
  const t = String(text ?? '').trim();
  if (!t) return null;
  if (/^\d+(\.\d+)?$/.test(t)) return t.replace(/\..*/, '').length > 11 ? Number(t) / 1000 : Number(t);
  if (/^now/i.test(t)) {
    const sec = Math.floor(now);
    let zz = z;
    const rest = t.slice(3).replace(/\s+/g, '');
    if (!rest) return sec;
    const f = fields(sec, zz);
    MATH.lastIndex = 0;
    let m, pos = 0;
    while (pos < rest.length && (m = MATH.exec(rest)) !== null) {
      if (m[4]) round(f, m[4], roundUp);
      else addUnit(f, (m[1] === '-' ? -1 : 1) * Number(m[2]), m[3]);
      pos = MATH.lastIndex;
      Object.assign(f, fields(compose(f, zz), zz)); // normalised, and its weekday
    }
    if (pos !== rest.length) return null;
    return compose(f, zz);
  }
  const a = ABS.exec(t);
  if (!a) return null;
  const zz = a[8] ? 'utc' : z;
  const f = { y: +a[1], M: +a[2] - 1, d: +a[3], h: +(a[4] || 0), m: +(a[5] || 0), s: +(a[6] || 0), ms: +((a[7] || '0').padEnd(3, '0')) };
  if (f.M > 11 || f.d < 1 || f.d > 31 || f.h > 23 || f.m > 59 || f.s > 59) return null;
  const sec = compose(f, zz);
  if (fields(sec, zz).d !== f.d) return null; // 2026-02-30
  if (roundUp && !a[4]) return sec + 86399; // a date as a range's end: its whole day
  return sec;
}

// ---- ranges ------------------------------------------------------------------------------------

// resolve(s, prefix) -> {start, end, relative} in unix s, or null when from/to do not parse
export function resolve(s, prefix = '', now = Date.now() / 1000) {
  const from = s[prefix + 'from'], to = s[prefix + 'to'];
  if (from && to) {
    const a = parseTime(from, { now }), b = parseTime(to, { now, roundUp: true });
    if (a === null || b === null || !(b > a)) return null;
    return { start: a, end: b, relative: isRelative(from) || isRelative(to) };
  }
  const secs = RANGES[s[prefix + 'range']] || RANGES['1h'];
  const end = Math.floor(now);
  return { start: end - secs, end, relative: true };
}

// the state keys of a range ending now of this length: a preset when there is one
function endingNow(secs, prefix) {
  const preset = PRESETS.find((p) => RANGES[p] === secs);
  if (preset) return { [prefix + 'range']: preset, [prefix + 'from']: null, [prefix + 'to']: null };
  const d = fmtDuration(secs);
  return { [prefix + 'range']: null, [prefix + 'from']: `now-${d}`, [prefix + 'to']: 'now' };
}

function absolute(start, end, prefix) {
  const r = (x) => String(Math.round(x * 1000) / 1000);
  return { [prefix + 'range']: null, [prefix + 'from']: r(start), [prefix + 'to']: r(end) };
}

// zoomOut(r, prefix): twice as long around its middle (a range ending now stays one: twice as long,
// still ending now, as Grafana's "last N"); the state patch
export function zoomOut(r, prefix = '', now = Date.now() / 1000) {
  const span = r.end - r.start;
  if (r.relative && Math.abs(r.end - Math.floor(now)) < 1) return endingNow(Math.round(span * 2), prefix);
  const mid = (r.start + r.end) / 2;
  if (mid + span >= now) return endingNow(Math.round(span * 2), prefix);
  return absolute(mid - span, mid + span, prefix);
}

// shift(r, dir, prefix): half a range earlier (dir -1) or later (+1), as Grafana's arrows; a
// shift past now gives the range of that length ending now
export function shift(r, dir, prefix = '', now = Date.now() / 1000) {
  const span = r.end - r.start, by = dir * span / 2;
  if (r.end + by >= Math.floor(now)) return endingNow(Math.round(span), prefix);
  return absolute(r.start + by, r.end + by, prefix);
}

// the text a from/to input shows for a state value: relative as typed, absolute in the zone
export function inputText(v, z = zone()) {
  if (v === undefined || v === null || v === '') return '';
  if (isRelative(v)) return String(v);
  const sec = parseTime(v, { z });
  if (sec === null) return String(v);
  return fmtPlain(sec, z, sec % 60 !== 0);
}

// the state value of a typed time: relative as typed (lower-case now), absolute as unix seconds;
// null when it is not a time
export function stateValue(text, { roundUp = false, z = zone() } = {}) {
  const t = String(text || '').trim();
  if (isRelative(t)) return parseTime(t, { roundUp, z }) === null ? null : 'now' + t.slice(3).replace(/\s+/g, '');
  const sec = parseTime(t, { roundUp, z });
  return sec === null ? null : String(Math.round(sec * 1000) / 1000);
}
