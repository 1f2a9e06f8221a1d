// heatmap.js: the individual profiles of a selection as a heatmap (the Graph view's "heatmap"):
// time across, profile total up, the colour of a cell how many profiles fall into it. Read from
// the querier's SelectHeatmap (HEATMAP_QUERY_TYPE_INDIVIDUAL, docs/api.md): 20 linear total
// buckets from the smallest total of the range to the largest, slots of `step` ending at
// start + k step. The range [start, end] maps to the heatmap's start = start + step, so every
// profile of the range (and no other) counts once, as on the graph.
// A click (or Enter on the focused cell; arrows move) reports the cell: its slot's time window and
// its bucket's totals, which the view merges (/api/v1/profiles/query total_min/total_max); each
// cell's largest profile (the exemplar) can be opened on its own.

import { h, clear, formatValue, fmtTime } from './dom.js';
import { ApiError } from './api.js';
import { ensureCss } from './pages.js';

const BUCKETS = 20;
// the step of a range: about 150 slots, a round number of seconds
const STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
export function heatStep(start, end) {
  const want = (end - start) / 150;
  return STEPS.find((s) => s >= want) || 86400;
}

// a Connect JSON call of the querier; its error JSON's message becomes the ApiError's
async function querier(method, body) {
  const path = `/querier.v1.QuerierService/${method}`;
  let res;
  try {
    res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(`cannot reach the server: ${e.message}`, 0, path);
  }
  const text = await res.text();
  let j = null;
  try { j = text ? JSON.parse(text) : {}; } catch (_) { /* not JSON */ }
  if (!res.ok || j === null) throw new ApiError((j && j.message) || text.trim() || `${res.status} ${res.statusText}`, res.status, path);
  return j;
}

// count -> a colour from pale to dark (log scale over 1..max)
function colour(count, max) {
  if (!count) return null;
  const f = max <= 1 ? 1 : Math.log(count) / Math.log(max);
  const l = 76 - 46 * f; // lightness 76% .. 30%
  return `hsl(${28 - 18 * f}, 90%, ${l}%)`;
}

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

const LEFT = 78, BOTTOM = 22, TOP = 6, RIGHT = 8;

export class Heatmap {
  // onCell(cell): a cell picked: {from, to (unix s strings of its window, both inclusive), lo, hi
  // (its totals, hi null for the last bucket: up to the largest), count, exemplar {id, time, labels}}
  // plotBox(): {left, width} of the graph's plot area in px from the heatmap's left edge (its
  // columns then line up with the graph's time axis), or null
  constructor(container, { onCell, height = 220, plotBox = null } = {}) {
    this.plotBox = plotBox || (() => null);
    ensureCss('/ui/css/heat.css');
    this.onCell = onCell || (() => {});
    this.height = height;
    this.canvas = h('canvas.heatcanvas', {
      tabindex: '0', role: 'application',
      'aria-label': 'heatmap of the profiles: time across, total up, colour = how many profiles; arrows move, Enter merges the cell',
      on: {
        mousemove: (e) => this.hover(e), mouseleave: () => this.hover(null),
        click: (e) => { const c = this.cellAt(e); if (c) this.pick(c); },
        keydown: (e) => this.key(e),
      },
    });
    this.tip = h('div.heattip', { role: 'status' });
    this.tip.hidden = true;
    this.note = h('div.heatnote');
    this.el = h('div.heatmap', h('div.heatbox', this.canvas, this.tip), this.note);
    container.append(this.el);
    this.cells = [];
    this.sel = null;
    this.cursor = null;
    // a resized window (the graph's plot area moves with it), a new zone or theme: drawn again from
    // the same answer at the next frame (after the graph has taken its new size)
    this.redraw = () => {
      cancelAnimationFrame(this.raf);
      this.raf = requestAnimationFrame(() => { this.raf = 0; this.draw(); });
    };
    for (const ev of ['resize', 'ps-zone', 'ps-theme']) window.addEventListener(ev, this.redraw);
  }

  // load(api, {type, sel, start, end, sampleUnit}) -> the number of profiles counted
  async load({ type, sel, start, end, sampleUnit }) {
    const seq = this.seq = (this.seq || 0) + 1;
    const step = heatStep(start, end);
    const t0 = performance.now();
    const j = await querier('SelectHeatmap', {
      profileTypeID: type, labelSelector: `{${sel || ''}}`, start: String((start + step) * 1000), end: String(end * 1000),
      step, queryType: 'HEATMAP_QUERY_TYPE_INDIVIDUAL', exemplarType: 'EXEMPLAR_TYPE_INDIVIDUAL',
    });
    if (seq !== this.seq) return null;
    this.loadMs = performance.now() - t0;
    this.unit = sampleUnit;
    this.step = step;
    this.start = start;
    this.end = end;
    const s = (j.series || [])[0];
    const slots = s ? s.slots || [] : [];
    this.yMin = slots.length ? slots[0].yMin.map(Number) : [];
    this.cells = [];
    let total = 0, max = 0;
    for (const sl of slots) {
      const t = Number(sl.timestamp); // ms: the slot is (t - step, t]
      const k = Math.round((t - (start + step) * 1000) / (step * 1000));
      const ex = sl.exemplars || [];
      let e = 0;
      sl.counts.forEach((c, b) => {
        c = Number(c);
        if (!c) return;
        const x = ex[e++] || null;
        this.cells.push({
          k, b, t, count: c,
          exemplar: x && { id: x.profileId, time: Number(x.timestamp) / 1000, value: Number(x.value), labels: Object.fromEntries((x.labels || []).map((l) => [l.name, l.value])) },
        });
        total += c;
        max = Math.max(max, c);
      });
    }
    this.max = max;
    this.total = total;
    this.el.dataset.total = String(total);
    this.el.dataset.cells = String(this.cells.length);
    this.el.dataset.step = String(step);
    clear(this.note).append(total
      ? `${total} profiles in ${this.cells.length} cells of ${step >= 60 ? `${step / 60} min` : `${step} s`} × 1/20 of the totals; darker = more profiles. Click a cell to merge its profiles.`
      : 'No profiles in this range.');
    this.draw();
    this.loadedAt = performance.now(); // bench/ui.py: navigation start -> heatmap drawn
    return total;
  }

  // the window and totals of a cell
  cellInfo(c) {
    const stepMs = this.step * 1000;
    const first = c.k === 0;
    const fromMs = first ? this.start * 1000 : c.t - stepMs + 1;
    const sec = (ms) => `${Math.floor(ms / 1000)}.${String(ms % 1000).padStart(3, '0')}`;
    const lo = this.yMin[c.b];
    const hi = c.b + 1 < BUCKETS ? this.yMin[c.b + 1] - 1 : null;
    return { from: sec(fromMs), to: `${sec(c.t)}999999`, lo, hi, count: c.count, exemplar: c.exemplar, k: c.k, b: c.b };
  }

  pick(c) { this.onCell(this.cellInfo(c)); }

  // the selected cell (from the URL): {from, lo} or null
  setSelection(sel) { this.sel = sel; this.draw(); }

  // the plot area: left, width (pw), height (ph); x(t) of a time (unix s); slot k spans
  // [x0(k), x0(k) + cw) (its times (start + k step, start + (k + 1) step], the last clipped at end)
  geometry() {
    const w = this.el.clientWidth || 800;
    const box = this.plotBox();
    const left = box && box.left > 40 && box.width > 50 ? box.left : LEFT;
    const pw = box && box.left > 40 && box.width > 50 ? Math.min(box.width, w - left) : Math.max(10, w - LEFT - RIGHT);
    const ph = this.height - TOP - BOTTOM;
    const span = Math.max(1e-9, this.end - this.start);
    const x = (t) => left + (Math.min(Math.max(t, this.start), this.end) - this.start) / span * pw;
    return { w, left, pw, ph, x, x0: (k) => x(this.start + k * this.step), cw: pw * this.step / span, ch: ph / BUCKETS };
  }

  draw() {
    const cv = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const w = this.el.clientWidth || 800;
    cv.style.width = `${w}px`;
    cv.style.height = `${this.height}px`;
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(this.height * dpr);
    const ctx = cv.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, this.height);
    if (!this.yMin || !this.yMin.length) return;
    const g = this.geometry();
    const fg = cssVar('--fg2', '#59636e');
    ctx.strokeStyle = cssVar('--border', '#d0d7de');
    ctx.strokeRect(g.left - 0.5, TOP - 0.5, g.pw + 1, g.ph + 1);
    const width = (k) => Math.max(1, g.x0(k + 1) - g.x0(k) - (g.cw > 3 ? 1 : 0));
    for (const c of this.cells) {
      ctx.fillStyle = colour(c.count, this.max);
      ctx.fillRect(g.x0(c.k), TOP + (BUCKETS - 1 - c.b) * g.ch, width(c.k), g.ch - 1);
    }
    for (const [c, col] of [[this.selectedCell(), cssVar('--accent', '#e11d48')], [this.cursor, cssVar('--focus', '#2563eb')]]) {
      if (!c) continue;
      ctx.strokeStyle = col;
      ctx.lineWidth = 2;
      ctx.strokeRect(g.x0(c.k) - 1, TOP + (BUCKETS - 1 - c.b) * g.ch - 1, Math.max(3, width(c.k)) + 2, g.ch + 1);
      ctx.lineWidth = 1;
    }
    ctx.fillStyle = fg;
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (const b of [0, 5, 10, 15, 19]) ctx.fillText(formatValue(this.yMin[b], this.unit), g.left - 4, TOP + (BUCKETS - 1 - b + 0.5) * g.ch);
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    const ticks = Math.max(2, Math.floor(g.pw / 160));
    for (let i = 0; i <= ticks; i++) {
      const sec = this.start + (this.end - this.start) * i / ticks;
      const text = fmtTime(sec).slice(5, 16);
      ctx.textAlign = i === 0 ? 'left' : i === ticks ? 'right' : 'center';
      ctx.fillText(text, g.left + g.pw * i / ticks, TOP + g.ph + 5);
    }
  }

  selectedCell() {
    if (!this.sel) return null;
    return this.cells.find((c) => { const i = this.cellInfo(c); return i.from === this.sel.from && String(i.lo) === String(this.sel.lo); }) || null;
  }

  cellAt(e) {
    const r = this.canvas.getBoundingClientRect();
    const g = this.geometry();
    const k = Math.floor((e.clientX - r.left - g.left) / (g.pw / ((this.end - this.start) / this.step))),
      b = BUCKETS - 1 - Math.floor((e.clientY - r.top - TOP) / g.ch);
    return this.cells.find((c) => c.k === k && c.b === b) || null;
  }

  describe(c) {
    const i = this.cellInfo(c);
    const hi = i.hi === null ? 'the largest' : formatValue(i.hi, this.unit);
    return `${fmtTime(Number(i.from))} – ${fmtTime(c.t / 1000)}: ${c.count} profile${c.count > 1 ? 's' : ''} with totals ${formatValue(i.lo, this.unit)} – ${hi}`;
  }

  hover(e) {
    const c = e && this.cellAt(e);
    this.tip.hidden = !c;
    if (!c) return;
    this.tip.textContent = this.describe(c);
    const r = this.canvas.getBoundingClientRect();
    this.tip.style.left = `${Math.min(e.clientX - r.left + 12, r.width - 320)}px`;
    this.tip.style.top = `${e.clientY - r.top + 12}px`;
  }

  // arrows move between the non-empty cells, Enter picks
  key(e) {
    if (!this.cells.length) return;
    const cur = this.cursor || this.selectedCell() || this.cells[0];
    let next = null;
    const dist = (a) => Math.abs(a.k - cur.k) * BUCKETS + Math.abs(a.b - cur.b);
    const best = (list) => list.sort((a, b) => dist(a) - dist(b))[0] || null;
    if (e.key === 'ArrowRight') next = best(this.cells.filter((c) => c.k > cur.k));
    else if (e.key === 'ArrowLeft') next = best(this.cells.filter((c) => c.k < cur.k));
    else if (e.key === 'ArrowUp') next = best(this.cells.filter((c) => c.k === cur.k && c.b > cur.b));
    else if (e.key === 'ArrowDown') next = best(this.cells.filter((c) => c.k === cur.k && c.b < cur.b));
    else if (e.key === 'Enter') { e.preventDefault(); this.pick(cur); return; } else return;
    e.preventDefault();
    this.cursor = next || cur;
    this.tip.hidden = false;
    this.tip.textContent = this.describe(this.cursor);
    this.tip.style.left = '90px';
    this.tip.style.top = '8px';
    this.draw();
  }

  destroy() {
    for (const ev of ['resize', 'ps-zone', 'ps-theme']) window.removeEventListener(ev, this.redraw);
    cancelAnimationFrame(this.raf);
    this.el.remove();
  }
}
