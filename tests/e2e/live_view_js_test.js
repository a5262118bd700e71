// unit.live_view_js: the live view's client-side logic (web/ui/live.js)
// under node's built-in test runner.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const L = require(path.join(__dirname, '..', '..', 'web', 'ui', 'live.js'));

test('bytes in IEC units, absent and unlimited stay distinct from 0', () => {
  assert.equal(L.fmtBytes(0), '0 B');
  assert.equal(L.fmtBytes(1536), '1.50 KiB');
  assert.equal(L.fmtBytes(64 * 1024 * 1024), '64.0 MiB');
  assert.equal(L.fmtBytes(null), '—');
  assert.equal(L.fmtBytes(Infinity), '∞');
});

test('seconds pick the unit that keeps 3 significant digits', () => {
  assert.equal(L.fmtSeconds(0.0000123), '12.3 µs');
  assert.equal(L.fmtSeconds(0.0235), '23.5 ms');
  assert.equal(L.fmtSeconds(2.5), '2.50 s');
  assert.equal(L.fmtSeconds(0), '0');
  assert.equal(L.fmtSeconds(NaN), '—');
  assert.equal(L.fmtPercent(0.0004), '0.04%');
  assert.equal(L.fmtPercent(0.5), '50.0%');
  assert.equal(L.fmtNum(12345), '12.3k');
});

test('label values are PromQL string literals', () => {
  assert.equal(L.promString('/a"b\\c'), '"/a\\"b\\\\c"');
});

test('Prometheus sample strings, +Inf included', () => {
  assert.equal(L.parseValue('+Inf'), Infinity);
  assert.ok(Number.isNaN(L.parseValue('NaN')));
  const m = L.vectorBy([{ metric: { cgroup: '/a' }, value: [1, '2.5'] }, { metric: {}, value: [1, '1'] }], 'cgroup');
  assert.deepEqual([...m.entries()], [['/a', 2.5]]);
});

test('a range matrix aligns on the step grid, gaps stay null', () => {
  const r = L.alignMatrix([{ metric: { kind: 'memcg' }, values: [[100, '1'], [102.0004, '3'], [105, '9']] }], 100, 104, 1);
  assert.deepEqual(r[0].values, [1, null, 3, null, null]);  // 105 is past the end
  assert.equal(r[0].metric.kind, 'memcg');
  assert.deepEqual(L.alignMatrix([], 0, 10, 1), []);
});

test('counter steps: increases become markers, a reset counts as the new value', () => {
  const s = L.counterSteps([[1, 0], [2, 0], [3, 2], [4, null], [5, 2], [6, 1], [7, 1]]);
  assert.deepEqual(s, [{ t: 3, delta: 2 }, { t: 6, delta: 1 }]);
});

test('ranking: sort by key, nulls last both ways, ties by name, filter regex or substring', () => {
  const rows = [
    { cgroup: '/b', stall: 0.5 }, { cgroup: '/a', stall: 0.5 }, { cgroup: '/c', stall: null },
    { cgroup: '/d.slice', stall: 0.1 },
  ];
  assert.deepEqual(L.rankRows(rows, 'stall', true, '').map((r) => r.cgroup), ['/a', '/b', '/d.slice', '/c']);
  assert.deepEqual(L.rankRows(rows, 'stall', false, '').map((r) => r.cgroup), ['/d.slice', '/a', '/b', '/c']);
  assert.deepEqual(L.rankRows(rows, 'stall', true, '^/[ab]$').map((r) => r.cgroup), ['/a', '/b']);
  // "(" is not a regex: matched as text
  assert.deepEqual(L.rankRows([{ cgroup: '/x(1)', stall: 1 }, { cgroup: '/y', stall: 2 }], 'stall', true, 'x(').map((r) => r.cgroup), ['/x(1)']);
  assert.deepEqual(L.rankRows([{ cgroup: '/p', prot: true }, { cgroup: '/q', prot: false }], 'prot', true, '').map((r) => r.cgroup), ['/p', '/q']);
});

test('report rates: deltas per second by kind, proactive kept out of stalls, recreated counts from zero', () => {
  const prev = { cgroups: [{ cgroup: '/a', by_kind: { memcg: { reclaims: 10, stalls: 10, stall_seconds: 1 } } }] };
  const cur = { cgroups: [
    { cgroup: '/a', by_kind: { memcg: { reclaims: 30, stalls: 30, stall_seconds: 2 }, proactive: { reclaims: 4, stalls: 4, stall_seconds: 5 } } },
    { cgroup: '/new', by_kind: { direct: { reclaims: 2, stalls: 2, stall_seconds: 0.5 } } },
  ] };
  const r = L.reportRates(prev, cur, 2);
  assert.equal(r.get('/a').reclaims, 10);
  assert.equal(r.get('/a').stall, 0.5);
  assert.equal(r.get('/a').kinds.proactive, 2);
  assert.equal(r.get('/a').stalls, 20);
  assert.equal(r.get('/new').reclaims, 1);
  const reset = L.reportRates(cur, prev, 1);
  assert.equal(reset.get('/a').reclaims, 10);  // 30 -> 10: recreated, counts 10
  assert.equal(L.reportRates(null, cur, 1).size, 0);
  assert.equal(L.reportRates(prev, cur, 0).size, 0);
});

test('ticks are round and cover the top of the data', () => {
  const t = L.niceTicks(0, 70e6, 4, 'bytes');
  assert.equal(t[0], 0);
  assert.ok(t[t.length - 1] >= 70e6);
  assert.ok(t.every((v) => v % (32 << 20) === 0), String(t));
  const d = L.niceTicks(0, 0.037, 4);
  assert.ok(Math.abs(d[1] - 0.01) < 1e-12 && d[d.length - 1] >= 0.037);
});

test('markers: placed by time, out of range dropped, close ones of a kind merged', () => {
  const ev = [
    { t: 10, label: 'a', kind: 'action' }, { t: 10.1, label: 'b', kind: 'action' },
    { t: 10.1, label: 'x', kind: 'alert' }, { t: 20, label: 'c', kind: 'action' }, { t: 99, label: 'z', kind: 'action' },
  ];
  const m = L.placeMarkers(ev, 0, 20, 0, 200, 4);
  assert.deepEqual(m.map((x) => [Math.round(x.x), x.count, x.kind]), [[100, 2, 'action'], [101, 1, 'alert'], [200, 1, 'action']]);
  assert.deepEqual(m[0].labels, ['a', 'b']);
  assert.deepEqual(L.placeMarkers(ev, 5, 5, 0, 100, 4), []);
});

test('chart SVG: gaps break the line, markers drawn, labels escaped', () => {
  const svg = L.chartSvg({
    width: 400, height: 160, t0: 0, t1: 10, unit: 'bytes',
    series: [{ name: '<u>', color: '#fff', points: [[0, 1], [1, 2], [2, null], [3, 4]] }],
    markers: [{ t: 5, label: 'act', kind: 'action' }],
  });
  const d = /d="([^"]+)"[^>]*stroke="#fff"/.exec(svg)[1];
  assert.equal((d.match(/M/g) || []).length, 2);  // the null splits it in two
  assert.match(svg, /data-points="3"/);
  assert.match(svg, /class="marker marker-action"/);
  assert.match(svg, /&lt;u&gt;/);
  assert.doesNotMatch(svg, /<u>/);
});

test('zoom: the charts of a young cgroup start just before its first point, at least minSpan wide', () => {
  const c = (pts) => ({ series: [{ points: pts }] });
  assert.equal(L.zoomStart([c([[100, null], [250, 1]])], 0, 300, 60), 240);
  assert.equal(L.zoomStart([c([[290, 1]])], 0, 300, 60), 240);           // >= 60 s shown
  assert.equal(L.zoomStart([c([[2, 1]]), c([[200, 1]])], 0, 300, 60), 0);  // data from the start
  assert.equal(L.zoomStart([c([[5, null]])], 0, 300, 60), 0);              // no data: the range
});
