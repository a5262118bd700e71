// memcg_exporter live view. Plain JS, no build step, no external requests:
// everything comes from this exporter's own JSON APIs (same origin).
//
// Data sources, best first:
//  - the query API (/api/v1/query, /api/v1/query_range; Prometheus' shape,
//    over the exporter's 1 s history): rates and percentiles by PromQL;
//  - without it (404/503/error: history off or not built in), the reclaim
//    report (/api/v1/reclaim/report, cumulative) polled every 2 s and turned
//    into rates here, plus the controller state for usage and limit of
//    protected cgroups. The page says which one it is using.
// The pure functions at the top are exported for node's test runner
// (tests/e2e/live_view_js_test.js); the rest only runs in a browser.
'use strict';

(function (root, factory) {
  const lib = factory();
  if (typeof module === 'object' && module.exports) module.exports = lib;
  else root.MemcgLive = lib;
  if (typeof document !== 'undefined') lib.start(document, root);
})(typeof self !== 'undefined' ? self : this, function () {

// ---------------------------------------------------------------- formatting

const IEC = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** 1536 -> "1.5 KiB"; null/NaN -> "—"; +Inf -> "∞". */
function fmtBytes(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  if (n === Infinity) return '∞';
  let i = 0, v = Math.abs(n);
  while (v >= 1024 && i < IEC.length - 1) { v /= 1024; i++; }
  const s = v >= 100 || i === 0 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
  return (n < 0 ? '-' : '') + s + ' ' + IEC[i];
}

/** Seconds, in the unit that keeps 3 significant digits: 0.0000123 -> "12.3 µs". */
function fmtSeconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return '—';
  if (s === Infinity) return '∞';
  if (s === 0) return '0';
  const a = Math.abs(s);
  const units = [[1, 's'], [1e-3, 'ms'], [1e-6, 'µs'], [1e-9, 'ns']];
  for (const [f, u] of units) {
    if (a >= f || f === 1e-9) return sig3(s / f) + ' ' + u;
  }
  return String(s);
}

/** A plain number with 3 significant digits and k/M/G suffixes. */
function fmtNum(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return '—';
  if (v === Infinity) return '∞';
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e9) return sig3(v / 1e9) + 'G';
  if (a >= 1e6) return sig3(v / 1e6) + 'M';
  if (a >= 1e4) return sig3(v / 1e3) + 'k';
  return sig3(v);
}

function fmtPercent(r) {
  if (r === null || r === undefined || Number.isNaN(r) || !Number.isFinite(r)) return '—';
  const p = r * 100;
  return (p !== 0 && Math.abs(p) < 0.1 ? p.toFixed(2) : p.toFixed(1)) + '%';
}

function sig3(x) {
  const a = Math.abs(x);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return Number(x.toPrecision(3)).toString();
}

/** Formatter by unit name (the chart axes use these). */
function formatter(unit) {
  switch (unit) {
    case 'bytes': return fmtBytes;
    case 'seconds': return fmtSeconds;
    case 'ratio': return fmtPercent;
    default: return fmtNum;
  }
}

// ---------------------------------------------------------------- PromQL

/** A PromQL string literal for a label value (", \ and newlines escaped). */
function promString(v) {
  return '"' + String(v).replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') + '"';
}

/** Instant vector result -> Map(labelValue -> number) keyed by `label`. */
function vectorBy(result, label) {
  const m = new Map();
  for (const s of result || []) {
    const k = s.metric ? s.metric[label] : undefined;
    if (k === undefined || !s.value) continue;
    m.set(k, parseValue(s.value[1]));
  }
  return m;
}

/** Prometheus' JSON sample values are strings ("NaN", "+Inf" included). */
function parseValue(v) {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  return Number(v);
}

/**
 * Aligns a query_range matrix on the grid start, start+step, ..., end:
 * returns [{metric, values: Array(n) of number|null}]. Samples off the grid
 * snap to the nearest slot; slots without a sample stay null (a gap, drawn as
 * a break, never as zero).
 */
function alignMatrix(result, start, end, step) {
  const n = Math.max(0, Math.floor((end - start) / step + 1e-9) + 1);
  return (result || []).map((s) => {
    const values = new Array(n).fill(null);
    for (const [t, v] of s.values || []) {
      const i = Math.round((Number(t) - start) / step);
      if (i >= 0 && i < n) values[i] = parseValue(v);
    }
    return { metric: s.metric || {}, values };
  });
}

/**
 * Where a cumulative counter went up: [{t, delta}] for each sample that is
 * above its predecessor (a drop is a reset and counts as the new value).
 * Used for controller actions as chart markers.
 */
function counterSteps(points) {
  const out = [];
  for (let i = 1; i < points.length; i++) {
    const [t, v] = points[i];
    const p = points[i - 1][1];
    if (v === null || p === null || v === undefined || p === undefined) continue;
    const d = v >= p ? v - p : v;
    if (d > 0) out.push({ t, delta: d });
  }
  return out;
}

// ---------------------------------------------------------------- ranking

/**
 * Rows filtered by a name pattern (a regex, or a plain substring when the
 * pattern is not a valid regex) and sorted by `key`; nulls sort last either
 * way, ties by cgroup name.
 */
function rankRows(rows, key, desc, filter) {
  let match = () => true;
  if (filter) {
    let re = null;
    try { re = new RegExp(filter, 'i'); } catch (e) { re = null; }
    const low = filter.toLowerCase();
    match = re ? (r) => re.test(r.cgroup) : (r) => r.cgroup.toLowerCase().includes(low);
  }
  const val = (r) => {
    const v = r[key];
    if (typeof v === 'boolean') return v ? 1 : 0;
    return v;
  };
  return rows.filter(match).sort((a, b) => {
    const va = val(a), vb = val(b);
    const na = va === null || va === undefined || Number.isNaN(va);
    const nb = vb === null || vb === undefined || Number.isNaN(vb);
    if (na !== nb) return na ? 1 : -1;
    if (!na && va !== vb) {
      const c = typeof va === 'string' ? va.localeCompare(vb) : va - vb;
      return desc ? -c : c;
    }
    return a.cgroup.localeCompare(b.cgroup);
  });
}

/**
 * Per-cgroup rates from two cumulative reclaim reports (the fallback when
 * history is off): {cgroup -> {stall, reclaims, kinds: {kind: calls/s}, stalls,
 * stallSeconds}} over dt seconds. A cgroup new in `cur` counts from zero only
 * when `prev` exists (otherwise it has no rate yet); a counter that went down
 * (a recreated cgroup) counts from zero.
 */
function reportRates(prev, cur, dt) {
  const out = new Map();
  if (!prev || !cur || !(dt > 0)) return out;
  const before = new Map();
  for (const c of prev.cgroups || []) before.set(c.cgroup, c);
  const inc = (a, b) => (b === undefined || a < b ? a : a - b);
  for (const c of cur.cgroups || []) {
    const p = before.get(c.cgroup) || { by_kind: {}, time_stalled_seconds: 0 };
    const kinds = {};
    let reclaims = 0, stalls = 0, stallSeconds = 0;
    for (const [k, r] of Object.entries(c.by_kind || {})) {
      const pr = (p.by_kind || {})[k] || {};
      const d = inc(r.reclaims || 0, pr.reclaims || 0);
      kinds[k] = d / dt;
      if (k !== 'proactive') {
        reclaims += d;
        stalls += inc(r.stalls || 0, pr.stalls || 0);
        stallSeconds += inc(r.stall_seconds || 0, pr.stall_seconds || 0);
      }
    }
    out.set(c.cgroup, { stall: stallSeconds / dt, reclaims: reclaims / dt, kinds, stalls, stallSeconds });
  }
  return out;
}

// ---------------------------------------------------------------- charts

/** About `n` round tick values covering [lo, hi] (1, 2, 5 × 10^k steps; powers of 2 of 1024^k for bytes). */
function niceTicks(lo, hi, n, unit) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / Math.max(1, n);
  let base = 10;
  if (unit === 'bytes' && raw >= 1024) base = 1024;
  let mag = Math.pow(base, Math.floor(Math.log(raw) / Math.log(base)));
  let step = mag;
  for (const m of base === 1024 ? [1, 2, 4, 8, 16, 32, 64, 128, 256, 512] : [1, 2, 5, 10]) {
    if (mag * m >= raw) { step = mag * m; break; }
  }
  const out = [];
  // The last tick is the first at or above hi, so the axis covers the data.
  for (let v = Math.ceil(lo / step) * step; out.length < 100; v += step) {
    out.push(v);
    if (v >= hi - step * 1e-9) break;
  }
  return out;
}

/**
 * Marker positions on an x range: events [{t, label, kind}] inside [t0, t1]
 * map to x in [x0, x1]; events closer than minGap pixels merge into one
 * marker that carries their count and labels. Sorted by x.
 */
function placeMarkers(events, t0, t1, x0, x1, minGap) {
  if (!(t1 > t0)) return [];
  const xs = events
    .filter((e) => e.t >= t0 && e.t <= t1)
    .map((e) => ({ x: x0 + ((e.t - t0) / (t1 - t0)) * (x1 - x0), e }))
    .sort((a, b) => a.x - b.x);
  const out = [];
  for (const { x, e } of xs) {
    const last = out[out.length - 1];
    if (last && last.kind === e.kind && x - last.x < minGap) {
      last.count += 1;
      if (last.labels.length < 5) last.labels.push(e.label);
      continue;
    }
    out.push({ x, count: 1, kind: e.kind, labels: [e.label] });
  }
  return out;
}

/**
 * The left edge of the charts: the range's start, or, when no series has data
 * that old, a little before the oldest point, keeping at least minSpan seconds.
 */
function zoomStart(charts, startT, end, minSpan) {
  let first = Infinity;
  for (const c of charts) {
    for (const s of c.series) {
      for (const [t, v] of s.points) {
        if (v !== null && Number.isFinite(v) && t >= startT) { if (t < first) first = t; break; }
      }
    }
  }
  if (first === Infinity) return startT;
  return Math.max(startT, Math.min(first - 5, end - minSpan));
}

function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

const MARKER_COLORS = { action: '#3ecf8e', alert: '#ff5d5d' };

/**
 * An SVG line chart as a string. opts: {width, height, t0, t1, unit,
 * series: [{name, color, points: [[t, v|null]], dash}], markers: [{t, label,
 * kind}], yMax (optional floor for the top of the axis)}.
 */
function chartSvg(opts) {
  const W = Math.max(200, Math.round(opts.width || 400)), H = Math.max(80, Math.round(opts.height || 160));
  const padL = 58, padR = 8, padT = 8, padB = 18;
  const x0 = padL, x1 = W - padR, y0 = H - padB, y1 = padT;
  const fmt = formatter(opts.unit);
  let hi = opts.yMax || 0;
  for (const s of opts.series) {
    for (const [, v] of s.points) if (v !== null && Number.isFinite(v) && v > hi) hi = v;
  }
  if (!(hi > 0)) hi = opts.unit === 'ratio' ? 0.01 : 1;
  const ticks = niceTicks(0, hi * 1.05, 4, opts.unit);
  const top = ticks[ticks.length - 1] || hi;
  const X = (t) => x0 + ((t - opts.t0) / (opts.t1 - opts.t0)) * (x1 - x0);
  const Y = (v) => y0 - (Math.min(v, top) / top) * (y0 - y1);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" data-t0="${opts.t0}" data-t1="${opts.t1}">`];
  for (const v of ticks) {
    const y = Y(v).toFixed(1);
    parts.push(`<line x1="${x0}" x2="${x1}" y1="${y}" y2="${y}" stroke="#2a313b" stroke-width="1"/>`);
    parts.push(`<text x="${x0 - 4}" y="${y}" fill="#8a95a3" font-size="10" text-anchor="end" dominant-baseline="middle">${esc(fmt(v))}</text>`);
  }
  // Time axis: one label per minute-ish, as "-Ns" ago from the right edge.
  const span = opts.t1 - opts.t0;
  const tstep = span > 600 ? 300 : span > 200 ? 60 : 30;
  for (let a = 0; a <= span; a += tstep) {
    const x = X(opts.t1 - a).toFixed(1);
    parts.push(`<text x="${x}" y="${H - 4}" fill="#8a95a3" font-size="10" text-anchor="${a === 0 ? 'end' : 'middle'}">${a === 0 ? 'now' : '-' + (a >= 60 ? a / 60 + 'm' : a + 's')}</text>`);
  }
  for (const m of placeMarkers(opts.markers || [], opts.t0, opts.t1, x0, x1, 6)) {
    const c = MARKER_COLORS[m.kind] || '#f0b429';
    const title = esc((m.count > 1 ? m.count + '× ' : '') + m.labels.join(', '));
    parts.push(`<g class="marker marker-${esc(m.kind)}"><title>${title}</title>` +
      `<line x1="${m.x.toFixed(1)}" x2="${m.x.toFixed(1)}" y1="${y1}" y2="${y0}" stroke="${c}" stroke-width="1" stroke-dasharray="2,2" opacity="0.8"/>` +
      `<path d="M${(m.x - 4).toFixed(1)},${y1} h8 l-4,6 z" fill="${c}"/></g>`);
  }
  for (const s of opts.series) {
    let d = '', pen = false, n = 0;
    for (const [t, v] of s.points) {
      if (v === null || !Number.isFinite(v) || t < opts.t0) { pen = false; continue; }
      d += (pen ? 'L' : 'M') + X(t).toFixed(1) + ',' + Y(v).toFixed(1);
      pen = true;
      n++;
    }
    if (!n) continue;
    parts.push(`<path class="series" data-name="${esc(s.name)}" data-points="${n}" d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`);
  }
  parts.push(`<line x1="${x0}" x2="${x1}" y1="${y0}" y2="${y0}" stroke="#3a424d"/></svg>`);
  return parts.join('');
}

// ---------------------------------------------------------------- the app

const POLL_MS = 2000;       // controller state; the charts without history
const CHART_MS = 4000;      // the charts' range queries with history
const RANK_MS = 4000;       // ranking (1000 cgroups: the larger answers)
const ALERTS_MS = 10000;    // alerts and rules
const COLORS = ['#5aa9ff', '#f0b429', '#3ecf8e', '#c792ea', '#ff8f5d', '#7fdbca', '#ff5d5d'];
const KIND_COLORS = { direct: '#ff5d5d', memcg: '#f0b429', softlimit: '#c792ea', proactive: '#3ecf8e' };

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function start(document, win) {
  const $ = (id) => document.getElementById(id);
  const st = {
    history: null,        // null unknown, true query API answers, false it does not
    historyWhy: '',
    controller: null,     // the last /api/v1/controller/state, or {error}
    report: null,         // the last cumulative report (fallback)
    reportAt: 0,
    ring: new Map(),      // fallback: cgroup -> [{t, stall, kinds, stalls, stallSeconds, usage, limit, actions}]
    rows: [],
    sort: { key: 'stall', desc: true },
    selected: null,
    unreachableSince: 0,
    banners: new Map(),
    lastRank: 0, lastAlerts: 0, lastReport: 0, lastChart: 0, alerts: [],
    inflight: false,
  };

  // ------------------------------------------------------------ transport
  async function getJson(path, extra) {
    let r;
    try {
      r = await win.fetch(path, { headers: { Accept: 'application/json', ...(extra || {}) }, cache: 'no-store' });
    } catch (e) {
      throw new ApiError(0, 'the exporter is unreachable');
    }
    let body = null;
    try { body = await r.json(); } catch (e) { body = null; }
    if (!r.ok || (body && body.status === 'error')) {
      throw new ApiError(r.status, (body && body.error) || r.status + ' ' + r.statusText);
    }
    return body;
  }
  async function query(q) {
    const b = await getJson('/api/v1/query?' + new URLSearchParams({ query: q }));
    return b.data.result;
  }
  async function queryRange(q, startT, endT, step) {
    const b = await getJson('/api/v1/query_range?' + new URLSearchParams({ query: q, start: startT, end: endT, step }));
    return b.data.result;
  }
  // A 404, 405 or 503 from the query API means history is off or not in this
  // build: switch to the fallback and say so. 0 is "unreachable", handled above.
  function historyFailed(e) {
    if (e.status === 0) throw e;
    st.history = false;
    st.historyWhy = e.status ? `${e.status}: ${e.message}` : e.message;
  }

  // ------------------------------------------------------------ banners
  function banner(key, level, html) {
    if (html) st.banners.set(key, { level, html });
    else st.banners.delete(key);
  }
  function renderBanners() {
    const el = $('banners');
    el.innerHTML = [...st.banners.entries()]
      .map(([k, b]) => `<div class="banner ${b.level}" data-banner="${esc(k)}">${b.html}</div>`).join('');
  }

  // ------------------------------------------------------------ polling
  async function tick() {
    if (st.inflight || $('pause').checked || document.hidden) return;
    st.inflight = true;
    const now = Date.now();
    try {
      // With history the cumulative report only feeds the tracing banner.
      const tasks = [pollController()];
      if (!st.history || now - st.lastReport >= RANK_MS) { st.lastReport = now; tasks.push(pollReport()); }
      if (st.history !== false) tasks.push(probeHistory());
      await Promise.all(tasks);
      if (now - st.lastRank >= RANK_MS || !st.rows.length) { st.lastRank = now; await pollRanking(); }
      if (now - st.lastAlerts >= ALERTS_MS) { st.lastAlerts = now; await pollAlerts(); }
      // Charts: 12 range queries with history, so every CHART_MS; the page's own
      // ring (no history) costs nothing to redraw.
      if (st.selected && (!st.history || now - st.lastChart >= CHART_MS)) { st.lastChart = now; await pollOne(); }
      if (st.unreachableSince) banner('down', null, null);
      st.unreachableSince = 0;
    } catch (e) {
      if (e.status === 0) {
        if (!st.unreachableSince) st.unreachableSince = now;
        banner('down', 'bad', `<b>The exporter is unreachable</b> since ${new Date(st.unreachableSince).toLocaleTimeString()}: retrying every ${POLL_MS / 1000} s; what is shown is the last data.`);
      } else {
        banner('error', 'warn', esc(e.message));
      }
    } finally {
      st.inflight = false;
      renderBanners();
      $('clock').textContent = new Date().toLocaleTimeString();
    }
  }

  async function probeHistory() {
    if (st.history !== null) return;
    try {
      await query('vector(1)');
      st.history = true;
    } catch (e) { historyFailed(e); }
  }

  // With --controller.token-file the state wants the bearer token: the
  // operator enters it once per tab (sessionStorage, sent only to this API).
  const TOKEN_KEY = 'memcg_exporter_controller_token';
  async function pollController() {
    if (st.controller && (st.controller.status === 401 || st.controller.status === 403) && !st.tokenChanged) return;
    st.tokenChanged = false;
    const token = win.sessionStorage.getItem(TOKEN_KEY);
    try {
      st.controller = await getJson('/api/v1/controller/state', token ? { Authorization: 'Bearer ' + token } : null);
      banner('controller', null, null);
    } catch (e) {
      if (e.status === 0) throw e;
      st.controller = { error: e.message, status: e.status };
      if (e.status === 401 || e.status === 403) {
        banner('controller', 'info', `The controller state needs its bearer token (${esc(e.message)}): protections and margins are not shown. ` +
          '<form id="token-form"><input type="password" id="token" placeholder="controller token" autocomplete="off"> <button>use</button></form>');
      } else {
        banner('controller', null, null);  // 503: the controller is off, said in the cgroup view
      }
    }
  }

  async function pollReport() {
    let rep;
    try {
      rep = await getJson('/api/v1/reclaim/report');
    } catch (e) {
      if (e.status === 0) throw e;
      banner('tracing', 'warn', `<b>vmscan tracing is down</b>: ${esc(e.message)}. Stall times, reclaim calls and latencies are missing; usage, limits and PSI still work.`);
      st.report = null;
      return;
    }
    banner('tracing', rep.tracing && !rep.tracing.running ? 'warn' : null,
      rep.tracing && !rep.tracing.running ? '<b>vmscan tracing is not running</b>: stall times and reclaim calls are missing.' : null);
    if (rep.tracing && rep.tracing.events_lost > 0) {
      banner('lost', 'info', `tracing lost ${fmtNum(rep.tracing.events_lost)} events since start (figures are lower bounds)`);
    }
    const t = Date.now() / 1000;
    if (st.report) {
      const rates = reportRates(st.report, rep, t - st.reportAt);
      const prot = protections();
      for (const [cg, r] of rates) {
        let ring = st.ring.get(cg);
        if (!ring) st.ring.set(cg, (ring = []));
        const p = prot.get(cg);
        ring.push({ t, ...r, usage: p ? p.usage_bytes : null, limit: p ? p.limit_bytes : null, actions: p ? p.actions : null });
        while (ring.length && ring[0].t < t - 900) ring.shift();
      }
      // Protected cgroups that did not reclaim still get usage points.
      for (const [cg, p] of prot) {
        if (rates.has(cg)) continue;
        let ring = st.ring.get(cg);
        if (!ring) st.ring.set(cg, (ring = []));
        ring.push({ t, stall: 0, reclaims: 0, kinds: {}, stalls: 0, stallSeconds: 0, usage: p.usage_bytes, limit: p.limit_bytes, actions: p.actions });
        while (ring.length && ring[0].t < t - 900) ring.shift();
      }
    }
    st.report = rep;
    st.reportAt = t;
  }

  function protections() {
    const m = new Map();
    const c = st.controller;
    if (c && c.protections) for (const p of c.protections) m.set(p.cgroup, p);
    return m;
  }

  // ------------------------------------------------------------ now
  async function pollRanking() {
    const prot = protections();
    let rows;
    if (st.history) {
      const [stall, calls, usage, limit, hits, psi, down] = await Promise.all([
        'sum by (cgroup) (rate(memcg_vmscan_reclaim_stall_seconds_sum{kind!="proactive"}[1m]))',
        'sum by (cgroup) (rate(memcg_vmscan_reclaim_total{kind!="proactive"}[1m]))',
        'memcg_memory_usage_bytes',
        'memcg_memory_limit_bytes',
        'rate(memcg_memory_failcnt_total[1m]) or rate(memcg_memory_events_max_total[1m])',
        'rate(memcg_pressure_memory_waiting_seconds_total[1m])',
        'memcg_exporter_collector_success == 0',
      ].map((q) => query(q).catch((e) => { if (e.status === 0) throw e; return null; })));
      if (usage === null && stall === null) {
        st.history = false;
        st.historyWhy = 'the query API answered with errors';
        return pollRanking();
      }
      const S = vectorBy(stall, 'cgroup'), C = vectorBy(calls, 'cgroup'), U = vectorBy(usage, 'cgroup'),
        L = vectorBy(limit, 'cgroup'), F = vectorBy(hits, 'cgroup'), P = vectorBy(psi, 'cgroup');
      const names = new Set([...U.keys(), ...S.keys(), ...prot.keys()]);
      rows = [...names].map((cg) => row(cg, S.get(cg), C.get(cg), U.get(cg), L.get(cg), F.get(cg), P.get(cg), prot));
      const failing = (down || []).map((s) => s.metric.collector).filter(Boolean);
      banner('collectors', failing.length ? 'warn' : null, failing.length
        ? `<b>collector${failing.length > 1 ? 's' : ''} failing</b>: ${failing.map(esc).join(', ')} (memcg_exporter_collector_success 0; the exporter's log says why)` : null);
      banner('history', null, null);
      $('ranking-note').textContent = `${names.size} cgroups · rates over 1m from the exporter's history (PromQL)`;
    } else {
      let rep = null;
      try { rep = await getJson('/api/v1/reclaim/report?window=1m'); } catch (e) { if (e.status === 0) throw e; }
      const W = (rep && rep.window_seconds) || null;
      const names = new Set(prot.keys());
      const by = new Map();
      for (const c of (rep && rep.cgroups) || []) { by.set(c.cgroup, c); names.add(c.cgroup); }
      rows = [...names].map((cg) => {
        const c = by.get(cg), p = prot.get(cg);
        let stall = null, calls = null;
        if (c) {
          const w = W || 60;
          stall = (c.time_stalled_seconds || 0) / w;
          calls = ((c.direct_reclaims || 0) + (c.memcg_reclaims || 0) + (c.softlimit_reclaims || 0)) / w;
        }
        return row(cg, stall, calls, p ? p.usage_bytes : null, p ? (p.limit_bytes === null ? Infinity : p.limit_bytes) : null, null, null, prot);
      });
      banner('history', 'warn', `<b>History is off</b> (the query API answered ${esc(st.historyWhy || 'no')}): ranking from the reclaim report's last minute, charts only from what this page saw since it opened; usage and limit only for protected cgroups, no limit hits, PSI or percentiles. Start the exporter with history on for the full view.`);
      $('ranking-note').textContent = `${names.size} cgroups that reclaimed in the last ${W ? Math.round(W) + ' s' : 'minute'} or are protected · from /api/v1/reclaim/report`;
    }
    st.rows = rows;
    renderRanking();
  }

  function row(cg, stall, calls, usage, limit, hits, psi, prot) {
    const u = usage === undefined ? null : usage, l = limit === undefined ? null : limit;
    return {
      cgroup: cg, stall: stall === undefined ? null : stall, reclaims: calls === undefined ? null : calls,
      usage: u, limit: l, used: u !== null && l !== null && Number.isFinite(l) && l > 0 ? u / l : null,
      hits: hits === undefined ? null : hits, psi: psi === undefined ? null : psi, prot: prot.has(cg),
    };
  }

  const MAX_ROWS = 200;
  function renderRanking() {
    const rows = rankRows(st.rows, st.sort.key, st.sort.desc, $('filter').value.trim());
    const maxStall = Math.max(1e-9, ...rows.slice(0, MAX_ROWS).map((r) => r.stall || 0));
    const cls = (v, warm, hot) => (v === null ? '' : v >= hot ? 'hot' : v >= warm ? 'warm' : '');
    const html = rows.slice(0, MAX_ROWS).map((r) => `<tr data-cgroup="${esc(r.cgroup)}"${r.cgroup === st.selected ? ' class="sel"' : ''}>` +
      `<td class="l" title="${esc(r.cgroup)}">${esc(r.cgroup)}</td>` +
      `<td class="${cls(r.stall, 0.01, 0.1)}"><span class="bar" style="width:${Math.round(((r.stall || 0) / maxStall) * 40)}px"></span>${fmtSeconds(r.stall)}</td>` +
      `<td>${fmtNum(r.reclaims)}</td><td>${fmtBytes(r.usage)}</td><td>${fmtBytes(r.limit)}</td>` +
      `<td class="${cls(r.used, 0.85, 0.95)}">${fmtPercent(r.used)}</td>` +
      `<td class="${cls(r.hits, 0.1, 1)}">${fmtNum(r.hits)}</td><td class="${cls(r.psi, 0.01, 0.1)}">${fmtPercent(r.psi)}</td>` +
      `<td>${r.prot ? '<span class="pill good">protected</span>' : ''}</td></tr>`).join('');
    $('ranking').querySelector('tbody').innerHTML = html ||
      `<tr><td class="l muted" colspan="9">${st.rows.length ? 'no cgroup matches the filter' : 'no cgroup has reclaimed yet'}</td></tr>`;
    if (rows.length > MAX_ROWS) {
      $('ranking').querySelector('tbody').insertAdjacentHTML('beforeend',
        `<tr><td class="l muted" colspan="9">${rows.length - MAX_ROWS} more: filter by name to narrow</td></tr>`);
    }
    for (const th of $('ranking').querySelectorAll('th[data-key]')) {
      th.classList.toggle('sorted', th.dataset.key === st.sort.key);
      th.classList.toggle('asc', th.dataset.key === st.sort.key && !st.sort.desc);
    }
  }

  // ------------------------------------------------------------ one cgroup
  function rangeSeconds() { return Number($('range').value) || 300; }

  async function pollOne() {
    const cg = st.selected;
    const span = rangeSeconds();
    const end = Math.floor(Date.now() / 1000), startT = end - span;
    const prot = protections().get(cg);
    let charts;
    if (st.history) {
      try { charts = await historyCharts(cg, startT, end); } catch (e) { historyFailed(e); }
    }
    if (!st.history) charts = ringCharts(cg, startT, end);
    // Margins: the controller's start/target lines below the limit.
    if (prot && prot.limit_bytes !== null) {
      const pts = (b) => [[startT, prot.limit_bytes - b], [end, prot.limit_bytes - b]];
      charts.usage.series.push({ name: 'start margin', color: '#f0b429', dash: '4,3', points: pts(prot.start_margin_bytes) });
      charts.usage.series.push({ name: 'target margin', color: '#3ecf8e', dash: '4,3', points: pts(prot.target_margin_bytes) });
    }
    // A cgroup seen for less than the range: zoom to its data (at least 60 s).
    const t0 = zoomStart(Object.values(charts).filter((c) => c && c.series), startT, end, 60);
    const alertMarks = st.alerts
      .filter((a) => a.labels && a.labels.cgroup === cg && a.activeAt)
      .map((a) => ({ t: Date.parse(a.activeAt) / 1000, label: `${a.labels.alertname} (${a.state})`, kind: 'alert' }));
    const markers = charts.actions.concat(alertMarks);
    for (const [id, c] of Object.entries({ usage: charts.usage, latency: charts.latency, reclaim: charts.reclaim, hits: charts.hits, psi: charts.psi, stall: charts.stall })) {
      drawChart('c-' + id, { ...c, t0, t1: end, markers });
    }
    $('one-prot').innerHTML = prot
      ? `<span class="pill good">protected</span> start ${fmtBytes(prot.start_margin_bytes)} · target ${fmtBytes(prot.target_margin_bytes)} below the limit · ${fmtNum(prot.actions)} actions, ${fmtBytes(prot.reclaimed_bytes)} reclaimed${prot.last_result ? ' · last: ' + esc(prot.last_result) : ''}`
      : (st.controller && st.controller.error ? `controller: ${esc(st.controller.error)}` : 'not protected');
    await pollProcs(cg, span);
  }

  async function historyCharts(cg, startT, end) {
    const sel = `cgroup=${promString(cg)}`;
    const qs = {
      usage: `memcg_memory_usage_bytes{${sel}}`,
      limit: `memcg_memory_limit_bytes{${sel}}`,
      p50: `histogram_quantile(0.5, sum by (le) (rate(memcg_vmscan_reclaim_stall_seconds_bucket{${sel},kind!="proactive"}[10s])))`,
      p99: `histogram_quantile(0.99, sum by (le) (rate(memcg_vmscan_reclaim_stall_seconds_bucket{${sel},kind!="proactive"}[10s])))`,
      kinds: `sum by (kind) (rate(memcg_vmscan_reclaim_total{${sel}}[5s]))`,
      hits: `rate(memcg_memory_failcnt_total{${sel}}[5s]) or rate(memcg_memory_events_max_total{${sel}}[5s])`,
      oom: `rate(memcg_memory_events_oom_kill_total{${sel}}[5s])`,
      high: `rate(memcg_memory_events_high_total{${sel}}[5s])`,
      some: `rate(memcg_pressure_memory_waiting_seconds_total{${sel}}[5s])`,
      full: `rate(memcg_pressure_memory_stalled_seconds_total{${sel}}[5s])`,
      stall: `sum by (kind) (rate(memcg_vmscan_reclaim_stall_seconds_sum{${sel}}[5s]))`,
      actions: `sum by (result) (memcg_controller_actions_total{${sel}})`,
    };
    const keys = Object.keys(qs);
    const res = await Promise.all(keys.map((k) => queryRange(qs[k], startT, end, 1)));
    const R = {};
    keys.forEach((k, i) => { R[k] = alignMatrix(res[i], startT, end, 1); });
    const pts = (vals) => vals.map((v, i) => [startT + i, v]);
    const one = (k, name, color, dash) => R[k].slice(0, 1).map((s) => ({ name, color, dash, points: pts(s.values) }));
    const byLabel = (k, label, colors) => R[k].map((s, i) => ({ name: s.metric[label] || k, color: (colors && colors[s.metric[label]]) || COLORS[i % COLORS.length], points: pts(s.values) }));
    const actions = [];
    for (const s of R.actions) {
      for (const st2 of counterSteps(pts(s.values))) actions.push({ t: st2.t, label: `controller ${s.metric.result || 'action'} ×${st2.delta}`, kind: 'action' });
    }
    return {
      usage: { unit: 'bytes', series: [...one('usage', 'usage', '#5aa9ff'), ...one('limit', 'limit', '#ff5d5d')] },
      latency: { unit: 'seconds', series: [...one('p50', 'p50', '#5aa9ff'), ...one('p99', 'p99', '#ff8f5d')] },
      reclaim: { unit: 'rate', series: byLabel('kinds', 'kind', KIND_COLORS) },
      hits: { unit: 'rate', series: [...one('hits', 'limit hits', '#f0b429'), ...one('high', 'memory.events high', '#c792ea'), ...one('oom', 'oom_kill', '#ff5d5d')] },
      psi: { unit: 'ratio', series: [...one('some', 'some', '#f0b429'), ...one('full', 'full', '#ff5d5d')] },
      stall: { unit: 'seconds', series: byLabel('stall', 'kind', KIND_COLORS) },
      actions,
      source: 'history',
    };
  }

  // Without history: what this page saw since it opened (the reclaim report
  // turned into rates every poll, the controller state for usage and limit).
  function ringCharts(cg, startT) {
    const ring = (st.ring.get(cg) || []).filter((p) => p.t >= startT);
    const P = (f) => ring.map((p) => [p.t, f(p)]);
    const kinds = new Set();
    for (const p of ring) for (const k of Object.keys(p.kinds || {})) kinds.add(k);
    const actions = counterSteps(P((p) => p.actions)).map((s) => ({ t: s.t, label: `controller action ×${s.delta}`, kind: 'action' }));
    return {
      usage: { unit: 'bytes', series: [{ name: 'usage', color: '#5aa9ff', points: P((p) => p.usage) },
        { name: 'limit', color: '#ff5d5d', points: P((p) => p.limit) }] },
      latency: { unit: 'seconds', series: [{ name: 'mean stall (no history: no percentiles)', color: '#5aa9ff', points: P((p) => (p.stalls ? p.stallSeconds / p.stalls : null)) }] },
      reclaim: { unit: 'rate', series: [...kinds].map((k, i) => ({ name: k, color: KIND_COLORS[k] || COLORS[i], points: P((p) => (p.kinds || {})[k] || 0) })) },
      hits: { unit: 'rate', series: [], empty: 'limit hits need the history (query API)' },
      psi: { unit: 'ratio', series: [], empty: 'PSI needs the history (query API)' },
      stall: { unit: 'seconds', series: [{ name: 'stall s/s', color: '#ff8f5d', points: P((p) => p.stall) }] },
      actions,
      source: 'page',
    };
  }

  function drawChart(id, c) {
    const el = $(id);
    const has = c.series.some((s) => s.points.some(([, v]) => v !== null && Number.isFinite(v)));
    const legend = c.series.map((s) => `<span><i style="background:${s.color}"></i>${esc(s.name)}</span>`).join('') +
      (c.markers.length ? `<span><i style="background:${MARKER_COLORS.action}"></i>controller action</span><span><i style="background:${MARKER_COLORS.alert}"></i>alert</span>` : '');
    const svg = chartSvg({ ...c, width: el.clientWidth || 440, height: el.clientHeight || 170 });
    el.innerHTML = svg + (has ? '' : `<div class="empty">${esc(c.empty || 'no data in this range')}</div>`);
    let lg = el.nextElementSibling;
    if (!lg || !lg.classList.contains('legend')) {
      lg = document.createElement('div');
      lg.className = 'legend';
      el.after(lg);
    }
    lg.innerHTML = legend;
  }

  async function pollProcs(cg, span) {
    let rep = null;
    try { rep = await getJson('/api/v1/reclaim/report?window=' + span + 's'); } catch (e) { if (e.status === 0) throw e; }
    const rows = ((rep && rep.processes) || []).filter((p) => p.cgroup === cg);
    $('report-window').textContent = rep ? (rep.window_seconds ? `last ${Math.round(rep.window_seconds)} s` : 'since the exporter started') : '(tracing down)';
    $('procs').querySelector('tbody').innerHTML = rows.slice(0, 50).map((p) =>
      `<tr><td class="l">${p.pid === null ? '' : esc(p.pid)}</td><td class="l">${esc(p.comm)}${p.exited ? ' <span class="muted">(exited)</span>' : ''}</td>` +
      `<td>${fmtNum(p.direct_reclaims)}</td><td>${fmtNum(p.memcg_reclaims)}</td><td>${fmtSeconds(p.time_stalled_seconds)}</td>` +
      `<td>${fmtNum(p.pages_scanned)}</td><td>${fmtNum(p.pages_reclaimed)}</td><td>${fmtNum(p.throttled)}</td></tr>`).join('') ||
      '<tr><td class="l muted" colspan="8">no process of this cgroup reclaimed in the window</td></tr>';
  }

  // ------------------------------------------------------------ alerts
  async function pollAlerts() {
    const note = [];
    try {
      const a = await getJson('/api/v1/alerts');
      st.alerts = (a.data && a.data.alerts) || [];
    } catch (e) {
      if (e.status === 0) throw e;
      st.alerts = [];
      note.push(e.status === 404 ? 'the rule engine is not in this build (/api/v1/alerts: 404)' : `alerts: ${e.message}`);
    }
    const order = { firing: 0, pending: 1 };
    const alerts = st.alerts.slice().sort((x, y) => (order[x.state] ?? 2) - (order[y.state] ?? 2));
    $('alert-table').querySelector('tbody').innerHTML = alerts.map((a) =>
      `<tr><td class="l">${esc(a.labels.alertname || '')}</td><td class="l ${a.state === 'firing' ? 'hot' : 'warm'}">${esc(a.state)}</td>` +
      `<td class="l">${a.labels.cgroup ? `<a href="#cgroup=${encodeURIComponent(a.labels.cgroup)}">${esc(a.labels.cgroup)}</a>` : ''}</td>` +
      `<td class="l">${a.activeAt ? esc(new Date(a.activeAt).toLocaleTimeString()) : ''}</td><td>${a.value !== undefined ? fmtNum(parseValue(a.value)) : ''}</td>` +
      `<td class="l">${esc((a.annotations && a.annotations.summary) || '')}</td></tr>`).join('') ||
      `<tr><td class="l muted" colspan="6">no alert is firing or pending</td></tr>`;
    let groups = [];
    try {
      const r = await getJson('/api/v1/rules');
      groups = (r.data && r.data.groups) || [];
    } catch (e) {
      if (e.status === 0) throw e;
      if (e.status !== 404 || !note.length) note.push(e.status === 404 ? 'no rules API (404)' : `rules: ${e.message}`);
    }
    $('alerts-note').textContent = note.join(' · ');
    $('rule-groups').innerHTML = groups.map((g) => {
      const bad = (g.rules || []).filter((r) => r.health && r.health !== 'ok').length;
      return `<details class="group"${bad ? ' open' : ''}><summary><b>${esc(g.name)}</b> <span class="muted">${(g.rules || []).length} rules · every ${esc(g.interval)} s · last evaluation ${g.lastEvaluation ? esc(new Date(g.lastEvaluation).toLocaleTimeString()) : 'never'} (${fmtSeconds(g.evaluationTime)})${bad ? ` · <span class="hot">${bad} unhealthy</span>` : ''}</span></summary>` +
        `<div class="scroll"><table><thead><tr><th class="l">rule</th><th class="l">type</th><th class="l">state</th><th class="l">health</th><th>eval</th></tr></thead><tbody>` +
        (g.rules || []).map((r) => `<tr><td class="l" title="${esc(r.query || '')}">${esc(r.name)}</td><td class="l">${esc(r.type || '')}</td>` +
          `<td class="l ${r.state === 'firing' ? 'hot' : r.state === 'pending' ? 'warm' : ''}">${esc(r.state || '')}</td>` +
          `<td class="l ${r.health && r.health !== 'ok' ? 'hot' : ''}" title="${esc(r.lastError || '')}">${esc(r.health || '')}</td><td>${fmtSeconds(r.evaluationTime)}</td></tr>`).join('') +
        '</tbody></table></div></details>';
    }).join('');
  }

  // ------------------------------------------------------------ wiring
  function select(cg) {
    st.selected = cg;
    $('one').hidden = !cg;
    $('one-name').textContent = cg || '';
    if (cg) win.history.replaceState(null, '', '#cgroup=' + encodeURIComponent(cg));
    else win.history.replaceState(null, '', '#');
    renderRanking();
    if (cg) { st.lastRank = 0; st.lastChart = 0; tick(); }
  }
  function fromHash() {
    const m = /^#cgroup=(.*)$/.exec(win.location.hash);
    if (m) select(decodeURIComponent(m[1]));
  }
  $('ranking').querySelector('thead').addEventListener('click', (ev) => {
    const k = ev.target.dataset && ev.target.dataset.key;
    if (!k) return;
    st.sort = { key: k, desc: st.sort.key === k ? !st.sort.desc : k !== 'cgroup' };
    renderRanking();
  });
  $('ranking').querySelector('tbody').addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr[data-cgroup]');
    if (tr) select(tr.dataset.cgroup);
  });
  $('filter').addEventListener('input', renderRanking);
  $('banners').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const v = ($('token') || {}).value;
    if (v) win.sessionStorage.setItem(TOKEN_KEY, v.trim());
    st.tokenChanged = true;
    tick();
  });
  $('close-one').addEventListener('click', () => select(null));
  $('range').addEventListener('change', () => { st.lastChart = 0; tick(); });
  win.addEventListener('hashchange', fromHash);
  document.addEventListener('visibilitychange', () => { if (!document.hidden) tick(); });
  fromHash();
  tick();
  win.setInterval(tick, POLL_MS);
  win.MemcgLiveState = st;  // for the browser test and for curious operators
}

return {
  fmtBytes, fmtSeconds, fmtNum, fmtPercent, promString, vectorBy, parseValue, alignMatrix,
  counterSteps, rankRows, reportRates, niceTicks, placeMarkers, zoomStart, chartSvg, start,
};
});
