// breakdown.js: the label breakdown. Pick a label (instance, version, …) and see each value's
// share of the selection as a table with bars, from one PromQL instant query:
// sum by (<label>) (sum_over_time(<selector>[<selection length>])) at the selection's end
// (avg_over_time for a type a merge averages over time: the flame graph's measure).
// Series without the label form the "(none)" row. Clicking a value narrows the selector.

import { h, clear, errorBox, pct } from './dom.js';
import { formatValue, displayUnit } from './flame.js';
import { selector } from './state.js';

export class Breakdown {
  // onPick(label): the label chosen; onNarrow(label, value): a row clicked
  constructor(container, { onPick, onNarrow } = {}) {
    this.labelSel = h('select.bd-label', { 'aria-label': 'breakdown label', on: { change: () => onPick(this.labelSel.value) } });
    this.body = h('div.bd-body');
    this.el = h('section.breakdown', h('div.bd-head', h('h3', 'Label breakdown'), this.labelSel), this.body);
    container.append(this.el);
    this.onNarrow = onNarrow || (() => {});
  }

  // load(api, {type, sel, label, names, start, end, point, sampleUnit, perSecond (> 0: CPU as cores
  // over these seconds, as the panel)})
  async load(api, q) {
    clear(this.labelSel);
    this.labelSel.append(h('option', { value: '' }, '— pick a label —'));
    for (const n of q.names) this.labelSel.append(h('option', { value: n, selected: n === q.label }, n));
    clear(this.body);
    this.rows = [];
    if (!q.label) {
      this.body.append(h('p.hint', 'Pick a label to see how each of its values shares the selection.'));
      return;
    }
    const ms = q.point ? 1 : Math.max(1, Math.round((q.end - q.start) * 1000));
    const fn = q.aggregation === 'avg' ? 'avg_over_time' : 'sum_over_time';
    const expr = `sum by (${q.label}) (${fn}(${selector(q.type, q.sel)}[${ms}ms]))`;
    let res;
    try {
      res = await api.query(expr, q.end.toFixed(3));
    } catch (e) {
      this.body.append(errorBox(e, 'breakdown'));
      return;
    }
    const rows = res.result.map((r) => ({ value: r.metric[q.label] ?? null, total: Number(r.value[1]) }))
      .sort((a, b) => b.total - a.total || String(a.value).localeCompare(String(b.value)));
    const whole = rows.reduce((s, r) => s + r.total, 0);
    this.rows = rows;
    this.whole = whole;
    if (!rows.length) { this.body.append(h('p.hint', 'Nothing in the selection.')); return; }
    const table = h('table.bd-table', { dataset: { whole: String(whole) } },
      h('thead', h('tr', h('th', q.label), h('th.num', 'total'), h('th.num', 'share'), h('th', ''))),
      h('tbody', rows.map((r) => {
        const share = whole ? r.total / whole : 0;
        const name = r.value === null ? '(none)' : r.value;
        const narrow = () => this.onNarrow(q.label, r.value);
        return h('tr', {
          tabindex: '0', dataset: { value: name, total: String(r.total) }, title: `narrow the selector to ${q.label}="${r.value ?? ''}"`,
          on: { click: narrow, keydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); narrow(); } } },
        },
        h('td.bd-name', name), h('td.num', formatValue(r.total, displayUnit(q.sampleUnit, q.perSecond || 0))), h('td.num', pct(r.total, whole)),
        h('td.bd-barcell', h('div.bd-bar', { style: `width:${(100 * share).toFixed(2)}%` })));
      })));
    this.body.append(table);
  }
}
