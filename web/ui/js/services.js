// services.js: the service list over the graph (Pyroscope's service picker): every value of
// service_name (else of job, when no profile series has a service_name) with data in the time
// range, across profile types, each with the profile names it has. A click on a service selects
// it (the selector becomes service_name="…") with the current type if it has that, else its CPU
// (types.js preferred); a click on one of its profile names selects that profile too. Names and
// values are shown as text only (they come from whoever pushed).
//
// Requests: /api/v1/label/<label>/values with match[] over every type id (which label), then
// once per picker entry (which services have it), all within [start, end].

import { h, clear, errorBox } from './dom.js';
import { selectorOf, preferred } from './types.js';
import { matchersOf } from './query.js';

export const SERVICE_LABELS = ['service_name', 'job'];
const FILTER_FROM = 9; // services before the filter box appears

export class ServiceList {
  // groups: types.js entries; onPick({type, sel}): a service (and type) chosen
  constructor(container, { api, groups, onPick }) {
    this.api = api;
    this.groups = groups;
    this.onPick = onPick;
    this.count = h('span.svc-count');
    this.filter = h('input.svc-filter', {
      type: 'search', placeholder: 'filter services', 'aria-label': 'filter services', spellcheck: 'false', hidden: true,
      on: { input: () => this.applyFilter() },
    });
    this.list = h('ul.svc-list', { 'aria-label': 'services' });
    this.msg = h('div.svc-msg');
    this.el = h('details.services', { open: true },
      h('summary', h('strong', 'Services'), ' ', this.count), this.filter, this.msg, this.list);
    container.append(this.el);
    this.services = [];
    this.seq = 0;
  }

  // load({start, end}): the services with data in [start, end] (unix s)
  async load({ start, end }) {
    const seq = ++this.seq;
    const all = selectorOf(this.groups.flatMap((g) => g.ids), '').text;
    let label = null, names = [];
    try {
      for (const l of SERVICE_LABELS) {
        names = await this.api.labelValuesIn(l, all, start, end);
        if (names.length) { label = l; break; }
      }
      if (seq !== this.seq) return;
      const by = new Map(names.map((n) => [n, []]));
      if (label) {
        const per = await Promise.all(this.groups.map((g) => this.api.labelValuesIn(label, selectorOf(g.ids, '').text, start, end)));
        if (seq !== this.seq) return;
        per.forEach((vals, i) => { for (const v of vals) if (by.has(v)) by.get(v).push(this.groups[i]); });
      }
      this.label = label;
      this.services = [...by.entries()].map(([name, groups]) => ({ name, groups }));
    } catch (e) {
      if (seq !== this.seq) return;
      clear(this.list);
      clear(this.msg).append(errorBox(e, 'services'));
      return;
    }
    this.render();
  }

  render() {
    clear(this.msg);
    clear(this.list);
    this.count.textContent = this.label ? `by ${this.label} · ${this.services.length}` : '· none';
    this.filter.hidden = this.services.length < FILTER_FROM;
    if (!this.label) {
      this.msg.append(h('p.hint', 'No profile series in this range has a service_name or job label.'));
      return;
    }
    for (const s of this.services) {
      const families = [...new Set(s.groups.map((g) => g.name))];
      const li = h('li.svc', { dataset: { service: s.name } },
        h('button.svc-name', {
          type: 'button', title: `${this.label}=${JSON.stringify(s.name)}`,
          on: { click: () => this.pick(s, null) },
        }, s.name),
        h('span.svc-types', families.map((f) => {
          const gs = s.groups.filter((g) => g.name === f);
          return h('button.svc-type', {
            type: 'button', dataset: { type: preferred(gs).id },
            title: gs.map((g) => g.label).join('\n'),
            on: { click: () => this.pick(s, preferred(gs)) },
          }, f);
        })));
      this.list.append(li);
    }
    this.applyFilter();
    if (this.last) this.mark(this.last);
  }

  pick(s, group) {
    const cur = this.current && s.groups.find((g) => g.id === this.current.type);
    const type = (group || cur || preferred(s.groups) || {}).id;
    this.onPick({ type, sel: `${this.label}=${JSON.stringify(s.name)}` });
  }

  applyFilter() {
    const f = this.filter.value.trim().toLowerCase();
    for (const li of this.list.children) li.hidden = f !== '' && !li.dataset.service.toLowerCase().includes(f);
  }

  // mark({type, sel}): the service the selector names (label="value" among its matchers) and
  // the profile type shown
  mark(s) {
    this.last = s;
    this.current = s;
    const chosen = new Set(matchersOf(s.sel || '').filter((m) => m.name === this.label && m.op === '=').map((m) => m.value));
    for (const li of this.list.children) {
      const on = chosen.has(li.dataset.service);
      if (on) li.setAttribute('aria-current', 'true');
      else li.removeAttribute('aria-current');
      for (const b of li.querySelectorAll('button.svc-type')) {
        const g = this.groups.find((x) => x.id === b.dataset.type);
        b.classList.toggle('on', on && !!g && g.name === (this.groups.find((x) => x.id === s.type) || {}).name);
      }
    }
  }
}
