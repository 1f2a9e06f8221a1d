// graph.js: the profile totals over time, drawn with uPlot (embedded at /ui/vendor/uPlot.esm.js).
// Without "sum by", each matching series is a line with one point per stored profile: the
// instant query `sel[range]` at the range's end answers every profile total with its time. With
// "sum by", each group is a line of `sum by (...) (sum_over_time(sel[step]))` from query_range, or
// avg_over_time for a type that a merge averages over time (/api/v1/profiles/types' aggregation:
// inuse, goroutine, threadcreate), so a step's point is what the flame graph of that step shows:
// per series the mean of its profiles, the series summed.
// Click a point -> that profile (or that group's step); drag a range -> everything in it merged.
// The selection stays drawn on the graph.
// Units (dom.js unitOf): CPU time in seconds, or with `cores` as cores (CPU seconds per second of
// each step: every line is then a step's sum over time, also without "sum by"); bytes with the
// binary prefix of the largest value; counts as counts. Times on the axis and in the legend are in
// the zone the page shows (time.js), 24-hour. The legend names only the labels in which the drawn
// series differ; the labels they share are said once above it.

import uPlot from '/ui/vendor/uPlot.esm.js';
import { h, clear, unitOf, formatValue, fmtTime, isTimeUnit } from './dom.js';
import { selector, set as setState } from './state.js';
import { zone, fmtTick } from './time.js';

const COLORS = ['#3b82f6', '#f97316', '#10b981', '#e11d48', '#8b5cf6', '#eab308', '#06b6d4',
  '#db2777', '#65a30d', '#a16207'];
const MAX_POINTS = 240;

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

// labels -> matcher text without __name__: instance="a:6060", job="api"
export function matchers(metric) {
  return Object.keys(metric).filter((k) => k !== '__name__').sort()
    .map((k) => `${k}=${JSON.stringify(metric[k])}`).join(', ');
}

// join(result) -> uPlot's aligned data [xs, ys1, ys2, …] (null where a series has no point)
export function join(result, scale) {
  const xs = [...new Set(result.flatMap((r) => r.values.map((v) => v[0])))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys = result.map((r) => {
    const col = new Array(xs.length).fill(null);
    for (const [t, v] of r.values) col[at.get(t)] = Number(v) * scale;
    return col;
  });
  return [xs, ...ys];
}

// legendOf(metrics) -> {labels: the text of each series: its labels that not every series has
// alike (all of them for one series), common: the matchers every series shares}
export function legendOf(metrics) {
  const keys = [...new Set(metrics.flatMap((m) => Object.keys(m)))].filter((k) => k !== '__name__').sort();
  const same = metrics.length < 2 ? [] : keys.filter((k) => metrics.every((m) => k in m && m[k] === metrics[0][k]));
  const pick = (m, ks) => ks.filter((k) => k in m).map((k) => `${k}=${JSON.stringify(m[k])}`).join(', ');
  const differ = keys.filter((k) => !same.includes(k));
  return { labels: metrics.map((m) => `{${pick(m, differ)}}`), common: pick(metrics[0] || {}, same) };
}

export function stepFor(start, end) {
  return Math.max(15, Math.ceil((end - start) / MAX_POINTS));
}

export class TimeGraph {
  // onSelect({sfrom, sto, ssel}) : a click (point) or a drag (range)
  constructor(container, { onSelect, height = 240 } = {}) {
    this.height = height;
    this.el = h('div.graph', {
      tabindex: '0', role: 'application',
      'aria-label': 'profile totals over time: ← → move between profiles, ↑ ↓ between series, Enter selects the profile',
      on: { keydown: (e) => this.key(e) },
    });
    this.plotEl = h('div.plot');
    this.commonEl = h('span.legend-common');
    // CPU time as seconds (per profile) or cores (per second of each step): state key cpu
    this.unitBtns = {};
    this.unitBar = h('span.units', { role: 'radiogroup', 'aria-label': 'CPU time as', hidden: true },
      [['seconds', 'CPU seconds'], ['cores', 'cores']].map(([u, text]) => {
        const b = h('button.unit', {
          type: 'button', role: 'radio', dataset: { unit: u }, 'aria-checked': 'false',
          title: u === 'cores' ? 'CPU seconds per second of each step: how many cores were busy' : 'CPU seconds of each profile',
          on: { click: () => setState({ cpu: u === 'cores' ? 'cores' : null }) },
        }, text);
        this.unitBtns[u] = b;
        return b;
      }));
    this.head = h('div.graph-head', this.unitBar, this.commonEl);
    this.el.append(this.head, this.plotEl);
    container.append(this.el);
    this.onSelect = onSelect || (() => {});
    this.u = null;
    this.sel = null;
    this.resize = () => { if (this.u) this.u.setSize(this.size()); };
    window.addEventListener('resize', this.resize);
    // a new zone or theme: drawn again from the same answer
    this.redraw = () => { if (this.u) this.draw(); };
    window.addEventListener('ps-zone', this.redraw);
    window.addEventListener('ps-theme', this.redraw);
    this.mq = window.matchMedia('(prefers-color-scheme: dark)');
    this.mq.addEventListener('change', this.redraw);
  }

  size() { return { width: Math.max(300, this.el.clientWidth || 800), height: this.height }; }

  // load(api, {type, sel, by, start, end, typeInfo, cores}) -> number of series; cores: CPU time
  // as cores (a time type only)
  async load(api, q) {
    const sel = selector(q.type, q.sel);
    const by = (q.by || '').split(',').filter(Boolean);
    const sampleUnit = q.typeInfo ? q.typeInfo.sample_unit : '';
    const cores = Boolean(q.cores) && isTimeUnit(sampleUnit);
    let result;
    this.step = null;
    if (by.length || cores) {
      const step = stepFor(q.start, q.end);
      this.step = step;
      const fn = q.typeInfo && q.typeInfo.aggregation === 'avg' ? 'avg_over_time' : 'sum_over_time';
      const inner = `${fn}(${sel}[${step * 1000 - 1}ms])`;
      const expr = by.length ? `sum by (${by.join(', ')}) (${inner})` : inner;
      result = (await api.queryRange(expr, q.start, q.end, step)).result;
    } else {
      const secs = Math.max(1, Math.ceil(q.end - q.start));
      result = (await api.query(`${sel}[${secs}s]`, q.end)).result;
    }
    this.result = result;
    const max = Math.max(0, ...result.flatMap((r) => r.values.map((v) => Math.abs(Number(v[1])))));
    this.perSecond = cores ? this.step : 0;
    this.unit = unitOf(sampleUnit, { max, perSecond: this.perSecond });
    this.sampleUnit = sampleUnit;
    this.unitBar.hidden = !isTimeUnit(sampleUnit);
    for (const [u, b] of Object.entries(this.unitBtns)) b.setAttribute('aria-checked', String((u === 'cores') === cores));
    this.range = [q.start, q.end];
    this.draw();
    return result.length;
  }

  clear() {
    if (this.u) { this.u.destroy(); this.u = null; }
    clear(this.plotEl);
    clear(this.commonEl);
    this.result = [];
  }

  draw() {
    if (this.u) { this.u.destroy(); this.u = null; }
    clear(this.plotEl);
    clear(this.commonEl);
    const result = this.result;
    if (!result.length) return;
    const legend = legendOf(result.map((r) => r.metric));
    if (legend.common) this.commonEl.append(h('span.hint', 'every series: '), h('code', `{${legend.common}}`));
    const z = zone();
    const data = join(result, this.unit.scale);
    const fg = cssVar('--fg', '#222'), grid = cssVar('--grid', 'rgba(128,128,128,.2)');
    const unitName = this.unit.name;
    const self = this;
    const series = [{ value: (u, v) => (v == null ? '–' : fmtTime(v)) }].concat(result.map((r, i) => ({
      label: `{${matchers(r.metric)}}`,
      stroke: COLORS[i % COLORS.length],
      width: 1.5,
      spanGaps: true,
      points: { show: true, size: 5 },
      value: (u, v) => (v == null ? '–' : formatValue(v / self.unit.scale, self.sampleUnit, self.perSecond)),
    })));
    const opts = {
      ...this.size(),
      series,
      scales: { x: { time: true, range: () => this.range } },
      ...(z === 'utc' ? { tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC') } : {}),
      axes: [
        {
          stroke: fg, grid: { stroke: grid }, ticks: { stroke: grid }, space: 60,
          values: (u, splits, ax, space, incr) => splits.map((t, i) => fmtTick(t, incr, i ? splits[i - 1] : null, z)),
        },
        {
          stroke: fg, grid: { stroke: grid }, ticks: { stroke: grid }, size: 70,
          label: this.unit.label, labelSize: 18,
          values: (u, vals) => vals.map((v) => (unitName ? `${+v.toPrecision(4)} ${unitName}` : `${+v.toPrecision(4)}`)),
        },
      ],
      cursor: { drag: { x: true, y: false, setScale: false }, focus: { prox: 30 } },
      focus: { alpha: 0.4 },
      legend: { live: true },
      hooks: {
        setSelect: [(u) => this.selected(u)],
        draw: [(u) => this.drawSelection(u)],
      },
    };
    this.u = new uPlot(opts, data, this.plotEl);
    // the legend's rows say the labels that differ (the series keep their whole label set)
    const rows = this.u.root.querySelectorAll('.u-legend .u-series');
    legend.labels.forEach((text, i) => {
      const lab = rows[i + 1] && rows[i + 1].querySelector('.u-label');
      if (lab) { lab.textContent = text; lab.title = series[i + 1].label; }
    });
    this.kIdx = null;
    this.kSer = 0;
    this.u.over.addEventListener('mousedown', (e) => { this.down = [e.clientX, e.clientY]; });
    this.u.over.addEventListener('mouseup', (e) => this.clicked(e));
  }

  selected(u) {
    if (u.select.width < 3) return;
    const a = u.posToVal(u.select.left, 'x'), b = u.posToVal(u.select.left + u.select.width, 'x');
    u.setSelect({ left: 0, width: 0, top: 0, height: 0 }, false);
    this.down = null;
    this.onSelect({ sfrom: a.toFixed(3), sto: b.toFixed(3), ssel: null });
  }

  clicked(e) {
    if (!this.down) return;
    const [x0, y0] = this.down;
    this.down = null;
    if (Math.abs(e.clientX - x0) > 2 || Math.abs(e.clientY - y0) > 2) return;
    const u = this.u, idx = u.cursor.idx;
    if (idx == null) return;
    const top = u.cursor.top;
    let best = -1, bestD = Infinity;
    for (let s = 1; s < u.data.length; s++) {
      const v = u.data[s][idx];
      if (v == null || !u.series[s].show) continue;
      const d = Math.abs(u.valToPos(v, 'y') - top);
      if (d < bestD) { bestD = d; best = s; }
    }
    if (best < 0) return;
    this.pick(idx, best);
  }

  // pick(idx, s): the point idx of series s (1-based, as in u.data) becomes the selection
  pick(idx, s) {
    const t = this.u.data[0][idx];
    const ssel = matchers(this.result[s - 1].metric);
    if (this.step) this.onSelect({ sfrom: (t - this.step + 0.001).toFixed(3), sto: t.toFixed(3), ssel });
    else this.onSelect({ sfrom: t.toFixed(3), sto: t.toFixed(3), ssel });
  }

  // the series (1-based) with a value at idx, from `from` on in direction d
  seriesAt(idx, from, d) {
    const u = this.u, n = u.data.length - 1;
    for (let k = 0; k < n; k++) {
      const s = ((from - 1 + d * k + n * n) % n) + 1;
      if (u.data[s][idx] != null && u.series[s].show) return s;
    }
    return -1;
  }

  key(e) {
    const u = this.u;
    if (!u || !u.data[0].length) return;
    const n = u.data[0].length;
    let i = this.kIdx, s = this.kSer || 1;
    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      const d = e.key === 'ArrowRight' ? 1 : -1;
      i = i == null ? (d > 0 ? 0 : n - 1) : Math.min(n - 1, Math.max(0, i + d));
      s = this.seriesAt(i, s, 1);
    } else if (e.key === 'ArrowUp' || e.key === 'ArrowDown') {
      if (i == null) return;
      s = this.seriesAt(i, s + (e.key === 'ArrowDown' ? 1 : -1), e.key === 'ArrowDown' ? 1 : -1);
    } else if (e.key === 'Enter' || e.key === ' ') {
      if (i != null && this.kSer > 0) { e.preventDefault(); this.pick(i, this.kSer); }
      return;
    } else if (e.key === 'Escape') {
      this.kIdx = null;
      u.setCursor({ left: -10, top: -10 });
      return;
    } else return;
    e.preventDefault();
    if (s < 0) return;
    this.kIdx = i;
    this.kSer = s;
    u.setCursor({ left: u.valToPos(u.data[0][i], 'x'), top: u.valToPos(u.data[s][i], 'y') });
  }

  // setSelection({sfrom, sto}) or null: drawn as a band (range) or a line (point)
  setSelection(s) {
    this.sel = s && s.sfrom && s.sto ? [Number(s.sfrom), Number(s.sto)] : null;
    if (this.u) this.u.redraw(false, false);
  }

  drawSelection(u) {
    if (!this.sel) return;
    const ctx = u.ctx, { top, height } = u.bbox;
    const a = u.valToPos(this.sel[0], 'x', true), b = u.valToPos(this.sel[1], 'x', true);
    ctx.save();
    if (b - a < 2) {
      ctx.strokeStyle = cssVar('--accent', '#e11d48');
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.beginPath(); ctx.moveTo(a, top); ctx.lineTo(a, top + height); ctx.stroke();
    } else {
      ctx.fillStyle = cssVar('--selection', 'rgba(59,130,246,.18)');
      ctx.fillRect(a, top, b - a, height);
    }
    ctx.restore();
  }

  destroy() {
    window.removeEventListener('resize', this.resize);
    window.removeEventListener('ps-zone', this.redraw);
    window.removeEventListener('ps-theme', this.redraw);
    this.mq.removeEventListener('change', this.redraw);
    if (this.u) this.u.destroy();
    this.el.remove();
  }
}
