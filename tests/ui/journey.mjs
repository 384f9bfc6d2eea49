// journey.mjs - the dashboard's browser test (rule S15): playwright-core
// drives Debian's chromium (never a downloaded browser) against a running
// `sqlbus serve` seeded by tests/scripts/ui_dashboard.sh.
//
//   node tests/ui/journey.mjs BASE_URL OUT_DIR
//       The journey: Overview, Failed messages (list, live refresh with
//       304s, keyboard), search, a message's detail (body, stack trace,
//       headers, raw toggle), retry it and see its status change, archive
//       a group on Groups and see its progress and the counts change,
//       the counts on Overview changed, error and unreachable states, a
//       narrow window. Asserts on the
//       page's real content; on failure saves OUT_DIR/failure-STEP.png and
//       prints its path. Exit 0 on success, 1 on failure.
//
//   node tests/ui/journey.mjs BASE_URL OUT_DIR --token TOKEN
//       Against a server started with --token-file: the page loads without
//       a token, the first API call's 401 brings up the token prompt, a
//       wrong token brings it back, the right one is kept in
//       sessionStorage and sent as Authorization: Bearer, no cookie is
//       ever set, "Forget token" asks again.
//
//   node tests/ui/journey.mjs BASE_URL --screenshots DIR
//       Screenshots at 1280x800 of Overview, Failed messages, Message
//       detail and Groups (DIR/overview.png ...) of whatever the server
//       holds (made for the README with `sqlbus serve --demo`).
//
// Environment: SB_UI_CHROMIUM (default /usr/bin/chromium).
import { chromium } from 'playwright-core';
import path from 'node:path';
import fs from 'node:fs';

const args = process.argv.slice(2);
if (args.length < 2) {
  console.error('usage: node journey.mjs BASE_URL OUT_DIR | node journey.mjs BASE_URL --screenshots DIR');
  process.exit(2);
}
const base = args[0].replace(/\/$/, '');
const shotsMode = args[1] === '--screenshots';
const outDir = shotsMode ? args[2] : args[1];
const tokenMode = args[2] === '--token' ? args[3] : null;
if (!outDir) {
  console.error('--screenshots needs a directory');
  process.exit(2);
}
fs.mkdirSync(outDir, {recursive: true});

const browser = await chromium.launch({
  executablePath: process.env.SB_UI_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
const context = await browser.newContext({viewport: {width: 1280, height: 800}, acceptDownloads: true});
const page = await context.newPage();
page.setDefaultTimeout(15000);

const problems = [];       // CSP violations, script errors
page.on('console', (m) => {
  const t = m.text();
  if (/Content.Security.Policy|Refused to/i.test(t)) problems.push('CSP: ' + t);
  else if (m.type() === 'error' && !/Failed to load resource/.test(t)) problems.push('console: ' + t);
});
page.on('pageerror', (e) => problems.push('page error: ' + e.message));
const responses = [];
page.on('response', (r) => responses.push({url: r.url(), status: r.status(), etag: r.headers()['etag']}));

let current = 'start';
async function step(name, fn) {
  current = name;
  const t0 = Date.now();
  await fn();
  console.log(`ok: ${name} (${Date.now() - t0} ms)`);
}

// until(what, fn): poll fn() (in node) until it returns a truthy value.
async function until(what, fn, timeout = 15000) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
    await page.waitForTimeout(150);
  }
}

const text = async (sel) => ((await page.locator(sel).first().textContent()) || '').trim();
const rowCount = () => page.locator('main table.messages tbody tr[data-row]').count();
async function card(title) {
  const c = page.locator('.card', {has: page.locator('.card-title', {hasText: new RegExp('^' + title + '$', 'i')})});
  return ((await c.locator('.card-value').textContent()) || '').trim();
}
async function nav(label) {
  await page.locator('.nav a', {hasText: label}).click();
}

async function screenshots() {
  const shot = async (name) => {
    await page.waitForTimeout(600);
    const file = path.join(outDir, name + '.png');
    await page.screenshot({path: file});
    console.log('wrote ' + file);
  };
  await page.goto(base + '/#/overview');
  await until('the overview', async () => (await page.locator('.card-value').count()) > 0 &&
    (await page.locator('.chart-svg, .chart-empty').count()) > 0);
  await page.waitForTimeout(2500);
  await shot('overview');
  await page.goto(base + '/#/failed');
  await until('the failed list', async () => (await rowCount()) > 0 || (await page.locator('.empty').count()) > 0);
  const boxes = page.locator('main table.messages tbody input[type=checkbox]');
  for (let i = 0; i < Math.min(2, await boxes.count()); i++) await boxes.nth(i).check();
  await shot('failed-messages');
  const first = page.locator('main table.messages tbody tr[data-row] a[data-primary]').first();
  if (await first.count()) {
    await first.click();
    await until('the message detail', async () => (await page.locator('pre.body, .detail .empty').count()) > 0);
    await shot('message-detail');
  }
  await page.goto(base + '/#/groups');
  await until('the groups', async () => (await page.locator('table.groups, .empty').count()) > 0);
  await shot('groups');
}

async function journey() {
  let unresolved0 = 0;
  await step('overview shows the seeded failures', async () => {
    await page.goto(base + '/');
    await until('the unresolved count', async () => /^\d+$/.test(await card('Unresolved')));
    unresolved0 = Number(await card('Unresolved'));
    if (unresolved0 !== 9) throw new Error(`Unresolved card says ${unresolved0}, want 9`);
    const ready = await until('ingestion health', async () => {
      const s = await text('.health-state');
      return s && s !== 'Loading…' ? s : null;
    });
    if (!/Ready/.test(ready)) throw new Error('ingestion health says ' + ready);
    await until('the queue table', async () => (await page.locator('main a', {hasText: /^orders$/}).count()) > 0);
    await until('the nav badge', async () => (await text('#nav-failed')) === '9');
  });

  // Issue 22: the running worker of "reports" beats; the Overview lists
  // its endpoint as beating.
  await step('overview: the endpoints and their liveness (issue 22)', async () => {
    const row = 'tr[data-row^="endpoint-reports@"]';
    await until('the reports endpoint row', async () => (await page.locator(row).count()) === 1);
    const t = await until('beating', async () => {
      const v = await text(row);
      return /beating/.test(v) ? v : null;
    });
    if (!/reports/.test(t) || !/ago|just now/.test(t)) throw new Error('endpoint row: ' + t);
  });

  await step('failed messages: the list', async () => {
    await nav('Failed messages');
    await until('9 rows', async () => (await rowCount()) === 9);
    const body = await text('main table.messages tbody');
    for (const want of ['Shop.PlaceOrder', 'Billing.ChargeCard', 'System.TimeoutException', 'card declined']) {
      if (!body.includes(want)) throw new Error(`the list does not show ${want}`);
    }
    const pager = await text('.pager-text');
    if (!/9 messages/.test(pager)) throw new Error('pager says ' + pager);
  });

  await step('live refresh polls with ETags (304, no re-render)', async () => {
    const before = responses.length;
    await page.waitForTimeout(4500);
    const polls = responses.slice(before).filter((r) => /\/api\/errors\?/.test(r.url));
    if (polls.length < 1) throw new Error('no poll of /api/errors in 4.5 s');
    const withEtag = responses.some((r) => /\/api\/errors\?/.test(r.url) && r.etag);
    if (withEtag && !polls.some((r) => r.status === 304)) {
      throw new Error('polls sent no If-None-Match hit: ' + polls.map((r) => r.status).join(','));
    }
    if (!withEtag) console.log('note: /api/errors sends no ETag; 304 not checked');
  });

  await step('keyboard: j/k move, x selects, CSV export of the selection', async () => {
    await page.locator('main h1').click();
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    const focused = await page.evaluate(() => document.activeElement && document.activeElement.dataset.primary);
    if (focused !== '1') throw new Error('j did not focus a row link');
    await page.keyboard.press('x');
    await page.keyboard.press('k');
    await page.keyboard.press('x');
    await until('2 selected', async () => (await text('.selcount')) === '2 selected');
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.locator('button[data-action=export]').click(),
    ]);
    const csv = fs.readFileSync(await download.path(), 'utf8');
    const lines = csv.trim().split(/\r?\n/);
    if (lines.length !== 3 || !lines[0].startsWith('id,message_id,message_type')) {
      throw new Error('CSV export: ' + csv.slice(0, 300));
    }
    await page.locator('button[data-key=clearsel]').click();
  });

  let detailHash = '';
  await step('search finds the one order', async () => {
    await page.locator('main h1').click();
    await page.keyboard.press('/');
    const isSearch = await page.evaluate(() => document.activeElement && document.activeElement.dataset.search === '1');
    if (!isSearch) throw new Error('/ did not focus the search box');
    await page.keyboard.type('zanzibar');
    await page.keyboard.press('Enter');
    await until('one search result', async () => (await rowCount()) === 1 &&
      /Shop\.PlaceOrder/.test(await text('main table.messages tbody')));
    if (!/Search results/.test(await text('.search-note'))) throw new Error('no search note');
  });

  await step('message detail: body, stack trace, headers, raw toggle', async () => {
    await page.locator('main table.messages tbody tr[data-row] a[data-primary]').first().click();
    await until('the detail page', async () => /^#\/messages\//.test(await page.evaluate(() => location.hash)));
    detailHash = await page.evaluate(() => location.hash);
    await until('the title', async () => (await text('main h1')) === 'Shop.PlaceOrder');
    await until('the status', async () => (await text('.status-line .badge')) === 'Unresolved');
    await until('the pretty body', async () => (await text('pre.body')).includes('"note": "zanzibar-special"'));
    if (!(await text('pre.stack')).includes('PlaceOrderHandler.Handle')) throw new Error('no stack trace');
    const headers = await text('table.headers');
    if (!headers.includes('sb-failed-queue') || !headers.includes('orders')) throw new Error('headers table: ' + headers.slice(0, 200));
    await page.locator('button[data-action=raw]').click();
    await until('the raw body', async () => (await text('pre.body')).startsWith('{"order":3,"note":"zanzibar-special"'));
    await page.locator('button[data-action=raw]').click();
  });

  await step('retry one: its status changes', async () => {
    await page.locator('button[data-action=retry]').click();
    await until('an operation in the corner', async () => (await page.locator('#ops .op').count()) > 0, 5000);
    await until('status Retry pending', async () => (await text('.status-line .badge')) === 'Retry pending');
    await until('the operation done', async () => /done/.test(await text('#ops .op .op-state')));
  });

  await step('groups: archive a group, see its progress and the counts change', async () => {
    await nav('Groups');
    const row = page.locator('table.groups tbody tr', {hasText: 'System.TimeoutException'});
    await until('the timeout group with 5 unresolved', async () => (await row.locator('.gcount').textContent()) === '5');
    const other = page.locator('table.groups tbody tr', {hasText: 'CardDeclined'});
    if ((await other.locator('.gcount').textContent()) !== '3') throw new Error('the card group is not 3');
    await row.locator('button[data-action=archive]').click();
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    if (!/Archive all 5 messages/.test(await dialog.textContent())) throw new Error('dialog: ' + await dialog.textContent());
    await dialog.locator('button', {hasText: 'Archive group'}).click();
    await until('a progress bar', async () => (await page.locator('#ops .op [role=progressbar]').count()) > 0 ||
      (await page.locator('table.groups [role=progressbar]').count()) > 0, 5000);
    await until('the operation done', async () => /done/.test(await text('#ops .op .op-state')), 20000);
    await until('the group gone', async () => (await page.locator('table.groups tbody tr', {hasText: 'System.TimeoutException'}).count()) === 0);
    if ((await other.locator('.gcount').textContent()) !== '3') throw new Error('the card group changed');
  });

  await step('overview: the counts changed', async () => {
    await nav('Overview');
    await until('unresolved 3', async () => (await card('Unresolved')) === '3');
    const pending = await card('Retry pending'), archived = await card('Archived');
    if (pending !== '1' || archived !== '5') throw new Error(`retry pending ${pending}, archived ${archived}; want 1 and 5`);
    await until('the nav badge', async () => (await text('#nav-failed')) === '3');
  });

  await step('archived: the group\'s messages are there', async () => {
    await nav('Archived');
    await until('5 archived rows', async () => (await rowCount()) === 5);
  });

  await step('the retried message shows on Pending retries', async () => {
    await nav('Pending retries');
    await until('1 pending row', async () => (await rowCount()) === 1);
    await page.goto(base + '/' + detailHash);
    await until('the detail again', async () => (await text('.status-line .badge')) === 'Retry pending');
  });

  await step('queues: pause and resume a queue from its page (T35)', async () => {
    await page.goto(base + '/#/queues/orders');
    await until('the state card', async () => (await card('State')) === 'Active');
    await page.locator('button[data-key="pause"]').click();
    await until('paused', async () => (await card('State')) === 'Paused');
    await page.goto(base + '/#/queues');
    await until('the paused badge in the list', async () =>
      (await page.locator('tr[data-row="orders"] .badge.paused').count()) === 1, 12000);
    await page.goto(base + '/#/queues/orders');
    await until('the resume button', async () => (await page.locator('button[data-action="resume"]').count()) === 1);
    await page.locator('button[data-action="resume"]').click();
    await until('active again', async () => (await card('State')) === 'Active');
  });

  await step('queues: the schedules publishing to them are listed (T41)', async () => {
    await page.goto(base + '/#/queues');
    await until('the nightly schedule row', async () =>
      (await page.locator('tr[data-row="schedule-nightly"]').count()) === 1);
    const row = await text('tr[data-row="schedule-nightly"]');
    if (!/reports/.test(row) || !/0 3 \* \* \* \(Europe\/Berlin\)/.test(row) || !/once/.test(row)) {
      throw new Error('schedule row: ' + row);
    }
  });

  await step('empty and error states read well', async () => {
    await page.goto(base + '/#/failed?q=nothing-matches-this-zq');
    await until('the empty search', async () => /Nothing matches/.test(await text('main .empty')));
    await page.goto(base + '/#/messages/no-such-message');
    await until('not found', async () => /No failed message/.test(await text('main .empty')));
  });

  await step('an API error shows its message and Try again', async () => {
    await page.goto(base + '/#/failed');
    await until('the list', async () => (await rowCount()) === 3);
    let failing = true, hits = 0;
    await page.route(/\/api\/errors\?/, (r) => {
      hits++;
      if (!failing) return r.continue();
      return r.fulfill({status: 500, contentType: 'application/json',
        body: JSON.stringify({error: 'internal', message: 'the store is having a bad day'})});
    });
    await page.keyboard.press('r');
    await until('the error box', async () => /the store is having a bad day/.test(await text('main .error-box')));
    const box = () => page.evaluate(() => {
      const el = document.querySelector('main .error-box');
      return el ? (el.dataset.seen || 'new') : 'none';
    });
    await page.evaluate(() => { document.querySelector('main .error-box').dataset.seen = 'kept'; });
    const before = hits;
    await until('two polls that fail again', async () => hits >= before + 2);
    if (await box() !== 'kept') throw new Error('a poll that failed the same way rebuilt the error box');

    /* A hidden tab does not poll, so from here every request is a click's. */
    await page.evaluate(() => Object.defineProperty(document, 'hidden', {configurable: true, get: () => true}));
    let settled = -1;
    while (settled !== hits) { settled = hits; await page.waitForTimeout(2500); }
    const tryAgain = page.locator('main .error-box button', {hasText: 'Try again'});
    await tryAgain.click();
    await until('the retry fetched and failed', async () => hits === settled + 1 &&
      (await tryAgain.count()) === 1 && !(await tryAgain.isDisabled()));
    if (await box() !== 'kept') throw new Error('Try again that failed the same way rebuilt the error box');
    failing = false;
    await tryAgain.click();
    await until('the list again', async () => (await rowCount()) === 3);
    if (hits !== settled + 2) throw new Error(`expected 2 requests from 2 clicks, saw ${hits - settled}`);
    await page.evaluate(() => { delete document.hidden; });
    await page.unroute(/\/api\/errors\?/);
  });

  await step('an unreachable server shows the banner, and recovers', async () => {
    await page.route(/\/(api|health)\//, (r) => r.abort('connectionrefused'));
    await until('the banner', async () => page.locator('#banner').isVisible(), 8000);
    if (!/cannot be reached/.test(await text('#banner'))) throw new Error('banner: ' + await text('#banner'));
    await page.unroute(/\/(api|health)\//);
    await until('the banner gone', async () => !(await page.locator('#banner').isVisible()), 8000);
    await until('the list again', async () => (await rowCount()) === 3);
  });

  await step('a narrow window (400 px) fits', async () => {
    await page.setViewportSize({width: 400, height: 800});
    await page.goto(base + '/#/failed?status=archived');
    await until('rows', async () => (await rowCount()) === 5);
    const fits = async (what) => {
      const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (over > 1) throw new Error(`${what} is ${over}px wider than a 400px window`);
    };
    await fits('the archived list');
    await page.goto(base + '/' + detailHash);
    await until('the detail', async () => (await text('main h1')) === 'Shop.PlaceOrder');
    await fits('the message detail');
    await page.goto(base + '/#/groups');
    await until('the groups', async () => (await page.locator('table.groups tbody tr').count()) === 1);
    await fits('the groups');
    await page.goto(base + '/#/overview');
    await until('the overview', async () => (await card('Unresolved')) === '3');
    await fits('the overview');
    await page.setViewportSize({width: 1280, height: 800});
  });

  await step('queues: a running message shows its handler\'s progress (T42)', async () => {
    await page.goto(base + '/#/queues/reports');
    await until('the progress', async () =>
      (await page.locator('main tr[data-row] .progress').allTextContents()).includes('rendered 3 of 10 pages'), 15000);
  });

  await step('queues: a queue\'s time to live and its messages\' expiry show (T40)', async () => {
    await page.goto(base + '/#/queues');
    await until('the ttl badge', async () =>
      (await page.locator('main tr[data-row="emails"] .badge.ttl').allTextContents()).includes('ttl 7 d'));
    await page.goto(base + '/#/queues/emails');
    await until('the expiry badges', async () => (await page.locator('main tr[data-row] .badge.expires').count()) === 2);
  });

  await step('queues: a message shows the unique key it holds (T38)', async () => {
    await page.goto(base + '/#/queues/signups');
    await until('the key badge', async () =>
      (await page.locator('main tr[data-row] .badge.key').allTextContents()).includes('key welcome-42'));
  });

  await step('queues: a queue\'s limits show on the list and its page (T36)', async () => {
    await page.goto(base + '/#/queues');
    await until('the limit badges', async () =>
      (await page.locator('main tr[data-row="emails"] .badge.limit').allTextContents()).join(' ') === 'max 5 100/s');
    await page.goto(base + '/#/queues/emails');
    await until('the limit badges on the page', async () =>
      (await page.locator('main .cards .badge.limit').allTextContents()).join(' ') === 'max 5 100/s');
  });

  await step('queues: cancel a waiting message from its queue page (T39)', async () => {
    /* Last: its dead letter becomes a failed message the steps above count. */
    await page.goto(base + '/#/queues/orders');
    await until('the peek rows', async () => (await page.locator('main tr[data-row] button[data-action="cancel"]').count()) > 0);
    const before = await page.locator('main tr[data-row] button[data-action="cancel"]').count();
    const row = page.locator('main tr[data-row]', {has: page.locator('button[data-action="cancel"]')}).first();
    const id = await row.getAttribute('data-row');
    await row.locator('button[data-action="cancel"]').click();
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    if (!(await dialog.textContent()).includes(id)) throw new Error('dialog: ' + await dialog.textContent());
    await dialog.locator('button', {hasText: 'Dead-letter it'}).click();
    await until('the row gone', async () => (await page.locator(`main tr[data-row="${id}"]`).count()) === 0);
    const after = await page.locator('main tr[data-row] button[data-action="cancel"]').count();
    if (after !== before - 1) throw new Error(`rows: ${before} before, ${after} after`);
  });

  if (problems.length) {
    current = 'no CSP violations or script errors';
    throw new Error(problems.join('\n'));
  }
}

async function tokenJourney(token) {
  const apiRequests = [];
  page.on('request', (r) => { if (/\/api\//.test(r.url())) apiRequests.push(r); });
  const prompt = page.locator('dialog[open]', {hasText: 'API token needed'});
  await step('the page loads without a token and asks for one', async () => {
    const resp = await page.goto(base + '/');
    if (resp.status() !== 200) throw new Error(`GET / answered ${resp.status()} without a token: the page and /ui/* must be open`);
    await prompt.waitFor();
  });
  await step('a wrong token is asked again', async () => {
    await prompt.locator('input[type=password]').fill('not-the-token');
    await prompt.locator('button', {hasText: 'Use token'}).click();
    await prompt.waitFor();
  });
  await step('the right token is kept in sessionStorage and sent as Bearer', async () => {
    await prompt.locator('input[type=password]').fill(token);
    const before = apiRequests.length;
    await prompt.locator('button', {hasText: 'Use token'}).click();
    await until('the overview', async () => /^\d+$/.test(await card('Unresolved')));
    const kept = await page.evaluate(() => sessionStorage.getItem('sqlbus.token'));
    if (kept !== token) throw new Error('sessionStorage holds ' + kept);
    const after = apiRequests.slice(before);
    if (!after.length) throw new Error('no API request after the token');
    for (const r of after) {
      const hd = await r.allHeaders();
      if (hd.authorization !== 'Bearer ' + token) throw new Error(r.url() + ' sent Authorization ' + hd.authorization);
      if (hd.cookie) throw new Error(r.url() + ' sent a cookie');
    }
    if ((await context.cookies()).length) throw new Error('a cookie was set');
  });
  await step('"Forget token" asks again', async () => {
    await page.locator('#btn-token').click();
    await prompt.waitFor();
    if (await page.evaluate(() => sessionStorage.getItem('sqlbus.token'))) throw new Error('the token is still kept');
  });
}

let status = 0;
try {
  if (shotsMode) await screenshots();
  else if (tokenMode) await tokenJourney(tokenMode);
  else await journey();
} catch (e) {
  status = 1;
  const file = path.join(outDir, 'failure-' + current.replace(/[^a-z0-9]+/gi, '-').slice(0, 60) + '.png');
  try {
    await page.screenshot({path: file, fullPage: true});
    console.error(`FAIL: ${current}: ${e.message}\nscreenshot: ${file}`);
  } catch (e2) {
    console.error(`FAIL: ${current}: ${e.message} (no screenshot: ${e2.message})`);
  }
  if (problems.length) console.error('browser said:\n' + problems.join('\n'));
} finally {
  await browser.close();
}
process.exit(status);
