// settings.js: the header's two page-wide settings. The time zone (UTC or the browser's): the
// URL's tz and localStorage ps.tz (time.js reads them), used by every time on the page; a change
// redraws the graphs (event ps-zone). The theme: the system's (prefers-color-scheme), light or
// dark: localStorage ps.theme, put on <html data-theme> (the CSS's dark variables follow it); a
// change redraws the canvases (event ps-theme).

import { h } from './dom.js';
import { zone, rememberZone, zoneName } from './time.js';
import { set as setState, subscribe } from './state.js';

const THEME_KEY = 'ps.theme';
const THEMES = { system: 'theme: system', light: 'theme: light', dark: 'theme: dark' };

export function theme() {
  let t = null;
  try { t = localStorage.getItem(THEME_KEY); } catch (_) { /* the system's */ }
  return t === 'light' || t === 'dark' ? t : 'system';
}

function applyTheme(t) {
  if (t === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
}

applyTheme(theme());

// init(header): the two pickers, at the header's end
export function init(header) {
  const now = Date.now() / 1000;
  // a link's tz is kept for the pages it leads to (their URLs may not carry it)
  const linked = () => { if (new URLSearchParams(location.search).get('tz')) rememberZone(zone()); };
  linked();
  const local = zoneName(now, 'local');
  const tz = h('select#tz', {
    'aria-label': 'time zone', title: 'the time zone of every time on the page (axes, tooltips, selections, typed times)',
    on: {
      change: () => {
        rememberZone(tz.value);
        setState({ tz: tz.value }, { push: false });
        window.dispatchEvent(new Event('ps-zone'));
      },
    },
  }, h('option', { value: 'local' }, `local time (${local})`), h('option', { value: 'utc' }, 'UTC'));
  tz.value = zone();
  const th = h('select#theme', {
    'aria-label': 'colour theme',
    on: {
      change: () => {
        try {
          if (th.value === 'system') localStorage.removeItem(THEME_KEY);
          else localStorage.setItem(THEME_KEY, th.value);
        } catch (_) { /* this page only */ }
        applyTheme(th.value);
        window.dispatchEvent(new Event('ps-theme'));
      },
    },
  }, Object.entries(THEMES).map(([v, label]) => h('option', { value: v }, label)));
  th.value = theme();
  header.append(h('span.settings', tz, th));
  // back/forward or a link with another tz: the picker shows it, the graphs redraw
  subscribe((s, prev) => {
    linked();
    if (tz.value !== zone()) {
      tz.value = zone();
      if (prev && (s.tz || '') !== (prev.tz || '')) window.dispatchEvent(new Event('ps-zone'));
    }
  });
}
