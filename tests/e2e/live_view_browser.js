// Drives Debian's chromium (playwright-core, installed into the build tree at
// test time) against a running exporter's live view. Used by
// live_view_e2e.sh (checks) and live_view_cpu.sh (--hold: just keep it open).
//   node live_view_browser.js URL CGROUP SCREENSHOT_PREFIX [--hold SECONDS]
// Prints PASS/FAIL lines; exits 1 on any failure.
'use strict';
const path = require('path');
const fs = require('fs');
const os = require('os');

const [url, cgroup, shotPrefix, holdFlag, holdSecs] = process.argv.slice(2);
const nodeDir = process.env.LIVE_VIEW_NODE_MODULES;
const { chromium } = require(path.resolve(nodeDir, 'playwright-core'));

let fails = 0;
function check(name, ok, detail) {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
  if (!ok) fails++;
}

// APIs the page probes that may legitimately be absent (history off, no rule
// engine): a 404/503 from them is an answer the page explains, not a failure.
const optional = /\/api\/v1\/(query|query_range|alerts|rules)(\?|$)/;

(async () => {
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memcg_exporter_test_view_chromium_'));
  const browser = await chromium.launchPersistentContext(userDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--no-first-run'],
    viewport: { width: 1400, height: 1000 },
  });
  const page = browser.pages()[0] || await browser.newPage();
  const consoleErrors = [], failed = [], foreign = [];
  const optionalStatus = new Set();
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    const loc = m.location() && m.location().url || '';
    // Chromium logs every non-2xx fetch as a console error; the optional
    // APIs' answers are accounted for below, by status.
    if (/Failed to load resource/.test(m.text()) && optional.test(loc)) return;
    consoleErrors.push(m.text() + (loc ? ' @ ' + loc : ''));
  });
  page.on('pageerror', (e) => consoleErrors.push('pageerror: ' + e.message));
  page.on('requestfailed', (r) => failed.push(r.url() + ' ' + (r.failure() && r.failure().errorText)));
  page.on('request', (r) => { if (!r.url().startsWith(url) && !r.url().startsWith('data:')) foreign.push(r.url()); });
  page.on('response', (r) => {
    if (r.status() < 400) return;
    if (optional.test(r.url()) && (r.status() === 404 || r.status() === 503)) {
      optionalStatus.add(r.url().replace(/\?.*/, '') + ' ' + r.status());
      return;
    }
    failed.push(r.url() + ' ' + r.status());
  });
  let requests = 0;
  page.on('request', () => requests++);

  // The controller token, as an operator enters it once per tab.
  if (process.env.LIVE_VIEW_TOKEN) {
    await page.addInitScript((t) => sessionStorage.setItem('memcg_exporter_controller_token', t), process.env.LIVE_VIEW_TOKEN);
  }
  await page.goto(url + '/', { waitUntil: 'load' });
  if (holdFlag === '--hold') {
    await page.waitForSelector(`#ranking tr[data-cgroup]`, { timeout: 30000 }).catch(() => {});
    const first = await page.$('#ranking tr[data-cgroup]');
    if (first) await first.click();  // one cgroup open too: the full request set
    const t0 = Date.now(), r0 = requests;
    await page.waitForTimeout(Number(holdSecs) * 1000);
    console.log(`held the view open ${holdSecs} s: ${requests - r0} requests (${((requests - r0) * 1000 / (Date.now() - t0)).toFixed(2)}/s)`);
    await browser.close();
    fs.rmSync(userDir, { recursive: true, force: true });
    return;
  }

  const sel = `#ranking tr[data-cgroup="${cgroup}"]`;
  const inRanking = await page.waitForSelector(sel, { timeout: 60000 }).then(() => true, () => false);
  check(`the test cgroup ${cgroup} is in the ranking`, inRanking);
  const stallCell = inRanking ? await page.textContent(`${sel} td:nth-child(2)`) : '';
  console.log(`ranking row: ${inRanking ? (await page.textContent(sel)).replace(/\s+/g, ' ') : '-'}`);
  if (inRanking) await page.click(sel);
  const chartOk = await page.waitForFunction(() => {
    const el = document.querySelector('#c-reclaim path.series, #c-stall path.series');
    return el && Number(el.dataset.points) >= 2;
  }, null, { timeout: 30000 }).then(() => true, () => false);
  check('the cgroup view has chart series with data points', chartOk);
  // The newest point is from the last seconds: its x back to a time.
  const ageS = await page.evaluate(() => {
    let best = Infinity;
    for (const p of document.querySelectorAll('#one path.series')) {
      const svg = p.ownerSVGElement;
      const span = Number(svg.dataset.t1) - Number(svg.dataset.t0);
      const W = svg.viewBox.baseVal.width;
      const xs = [...p.getAttribute('d').matchAll(/[ML]([\d.]+),/g)].map((m) => Number(m[1]));
      const x = Math.max(...xs);
      const age = (1 - (x - 58) / (W - 66)) * span;
      best = Math.min(best, age);
    }
    return best;
  });
  check(`the newest chart point is from the last seconds (${ageS.toFixed(1)} s old)`, ageS <= 8);
  const marker = await page.waitForSelector('#one .marker-action', { timeout: 60000 }).then(() => true, () => false);
  check('a controller action shows as a marker', marker);
  if (marker) console.log(`marker: ${await page.textContent('#one .marker-action title')}`);
  // The per-process rows come with the next polls of the window's report.
  const procsOk = await page.waitForFunction(() => [...document.querySelectorAll('#procs tbody tr td:nth-child(2)')]
    .some((t) => /^cat\b/.test(t.textContent)), null, { timeout: 20000 }).then(() => true, () => false);
  const procs = await page.$$eval('#procs tbody tr', (rs) => rs.slice(0, 3).map((r) => r.textContent.replace(/\s+/g, ' ')));
  check('the reclaim report lists the workload process (cat)', procsOk, procs.join(' | '));
  await page.waitForTimeout(2500);  // one more poll: the live update keeps going
  const shot = shotPrefix + '.png';
  await page.screenshot({ path: shot, fullPage: true });
  console.log(`screenshot: ${shot}`);
  // A phone: nothing wider than the screen but the tables' own scrollers.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(2500);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(`narrow window (390 px): no page-wide horizontal overflow (${overflow} px)`, overflow <= 1);
  const phone = shotPrefix + '_phone.png';
  await page.screenshot({ path: phone, fullPage: true });
  console.log(`screenshot (phone): ${phone}`);
  const banners = await page.$$eval('#banners .banner', (bs) => bs.map((b) => b.dataset.banner + ': ' + b.textContent));
  console.log(`banners: ${banners.length ? banners.join(' | ') : 'none'}`);
  console.log(`optional APIs absent: ${[...optionalStatus].join(', ') || 'none'}`);
  check('no console errors', consoleErrors.length === 0, consoleErrors.slice(0, 5).join(' | '));
  check('no failed requests', failed.length === 0, failed.slice(0, 5).join(' | '));
  check('no requests off the exporter', foreign.length === 0, foreign.slice(0, 5).join(' | '));
  check('stall cell rendered', stallCell !== '', stallCell);
  await browser.close();
  fs.rmSync(userDir, { recursive: true, force: true });
  process.exit(fails ? 1 : 0);
})().catch((e) => { console.log('FAIL driver: ' + e.stack); process.exit(1); });
