// End-to-end test of the memvault dashboard in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core; no browser is ever downloaded).
//
//   node tests/e2e/dashboard.spec.mjs http://127.0.0.1:PORT
//
// tests/e2e/run.sh starts a fresh server and runs this against it. In one browser: sign up;
// create an API key and use it with curl; save a memory from the dashboard (source `web`);
// invite a second user who signs up in a second browser context and accepts; upload a PDF by
// drag and drop and watch it reach `completed`; read its cited memories; search memories; open
// the graph and select a node; change the plan; check the pages at 375 px; sign out.
// A screenshot after each step goes to tests/e2e/artifacts/. The last lines say PASS or FAIL.

import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const artifacts = path.join(here, 'artifacts');
mkdirSync(artifacts, { recursive: true });

const base = (process.argv[2] || process.env.MEMVAULT_E2E_URL || '').replace(/\/$/, '');
if (!base) {
  console.error('usage: node dashboard.spec.mjs <base url, e.g. http://127.0.0.1:8080>');
  process.exit(2);
}
const executablePath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

// Chromium as this machine needs it. playwright's launch() gives every run a fresh temporary
// profile (its own --user-data-dir, removed at close): nothing carries over between runs.
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic',
];

const stamp = Date.now().toString(36);
const ada = { name: 'Ada Lovelace', email: `ada-${stamp}@example.com`, password: 'a long passphrase 1' };
const grace = { name: 'Grace Hopper', email: `grace-${stamp}@example.com`, password: 'another passphrase 2' };
const STEP_TIMEOUT = 20_000;
const DOCUMENT_TIMEOUT = 240_000;

// ----- a small PDF, built by hand ---------------------------------------------------------------

/** A one-page PDF with a real text layer (Helvetica), with a correct cross-reference table. */
function minimalPdf(paragraphs) {
  const escape = (s) => s.replace(/\\/g, '\\\\').replace(/\(/g, '\\(').replace(/\)/g, '\\)');
  const lines = ['BT', '/F1 12 Tf', '72 720 Td'];
  paragraphs.forEach((text, i) => {
    if (i > 0) lines.push('0 -32 Td'); // over 1.8 line heights: a new paragraph
    lines.push(`(${escape(text)}) Tj`);
  });
  lines.push('ET');
  const content = lines.join('\n');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>',
    `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`,
  ];
  let pdf = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(pdf, 'latin1'));
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(pdf, 'latin1');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

const PDF_FACTS = [
  'Northwind Employee Handbook',
  'Every Northwind employee receives 27 vacation days per year.',
  'The Northwind support desk is open from 08:00 to 18:00 Lisbon time on weekdays.',
  'Production deploys at Northwind happen on Thursdays after the change review.',
  'The on-call rotation at Northwind changes every Monday at 09:00.',
];

// ----- helpers ----------------------------------------------------------------------------------

let shotNumber = 0;
async function shot(page, name) {
  shotNumber += 1;
  const file = path.join(artifacts, `${String(shotNumber).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

async function curl(args) {
  const { stdout } = await run('curl', ['-sS', '-w', '\n%{http_code}', ...args], { timeout: 30_000 });
  const cut = stdout.lastIndexOf('\n');
  const body = stdout.slice(0, cut);
  const status = Number(stdout.slice(cut + 1));
  let json = null;
  try { json = JSON.parse(body); } catch (_) { json = null; }
  return { status, body, json };
}

const saveWithKey = (key, memory) => curl([
  '-X', 'POST', `${base}/api/memories`, '-H', `X-API-Key: ${key}`,
  '-H', 'Content-Type: application/json', '-d', JSON.stringify(memory),
]);

/** Every input, select and textarea on the page has a label (or an aria-label). */
async function assertLabelled(page, where) {
  const unlabelled = await page.evaluate(() => Array.from(document.querySelectorAll('input, select, textarea'))
    .filter((el) => el.type !== 'hidden' && !el.closest('[hidden]'))
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    .map((el) => el.outerHTML.slice(0, 120)));
  check(unlabelled.length === 0, `${where}: controls without a label: ${unlabelled.join(', ')}`);
}

/** The page fits the viewport's width: nothing scrolls sideways. */
async function assertNoSidewaysScroll(page, where) {
  const { scroll, width } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
  check(scroll <= width + 1, `${where}: the page is ${scroll}px wide in a ${width}px viewport`);
}

async function openNav(page, label, heading) {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

function watchErrors(page, label, errors) {
  page.on('pageerror', (error) => errors.push(`${label}: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) {
      errors.push(`${label}: ${message.text()}`);
    }
  });
}

// ----- the run ----------------------------------------------------------------------------------

const steps = [];
const step = (name, fn) => steps.push({ name, fn });
const ctx = {};

step('sign up', async () => {
  const { page } = ctx;
  await page.goto(`${base}/`);
  await page.waitForURL(/\/app\/sign-in/);
  await page.getByRole('heading', { level: 1, name: 'Sign in to memvault' }).waitFor();
  await assertLabelled(page, 'sign-in');
  await shot(page, 'sign-in');
  await page.getByRole('link', { name: 'Create an account' }).click();
  await page.getByRole('heading', { level: 1, name: 'Create your account' }).waitFor();
  await page.getByLabel('Name').fill(ada.name);
  await page.getByLabel('Email').fill(ada.email);
  await page.getByLabel('Password').fill(ada.password);
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.getByRole('heading', { level: 1, name: 'Memories' }).waitFor();
  check(page.url().endsWith('/app/memories'), `after sign-up the page is ${page.url()}`);
  await page.getByText(ada.email).waitFor();
  ctx.workspaceName = await page.locator('#workspace-select option:checked').textContent();
  check(/Ada Lovelace/.test(ctx.workspaceName), `workspace switcher shows ${ctx.workspaceName}`);
  await page.locator('.list-area .state.empty').waitFor();
  await assertLabelled(page, 'memories');
  await shot(page, 'signed-up-memories');
});

step('create an API key and use it with curl', async () => {
  const { page } = ctx;
  await openNav(page, 'API keys', 'API keys');
  await page.getByRole('textbox', { name: 'Name' }).fill('e2e curl');
  await page.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.locator('[data-testid=new-key]').textContent()).trim();
  check(key.startsWith('mc_'), `the new key is shown: ${key}`);
  await page.getByRole('region', { name: /Your new key/ }).getByRole('button', { name: 'Copy' }).click();
  await page.locator('.copy-status', { hasText: /Copied/ }).waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText().catch(() => null));
  if (copied !== null) check(copied === key, 'the Copy button copied the key');
  await page.locator('table tbody tr', { hasText: 'e2e curl' }).waitFor();
  await assertLabelled(page, 'api keys');
  await shot(page, 'api-key-created');
  ctx.key = key;

  const saved = [];
  for (const content of [
    'The Northwind release train leaves every second Tuesday at noon.',
    'Maria leads the Northwind platform team.',
    'Maria approves every production deploy of the billing service.',
    'Ticket ZX-4471 tracks the billing migration to the new ledger.',
    'The billing migration ZX-4471 must be finished before the March audit.',
  ]) {
    const answer = await saveWithKey(key, { content });
    check(answer.status === 201, `curl save with the key: ${answer.status} ${answer.body}`);
    saved.push(answer.json.memory);
  }
  ctx.curlMemory = saved[0];
  const listed = await curl([`${base}/api/memories?limit=50`, '-H', `X-API-Key: ${key}`]);
  check(listed.status === 200 && listed.json.total >= 5, `curl list with the key: ${listed.body}`);
  await openNav(page, 'Memories', 'Memories');
  await page.locator('article.memory', { hasText: 'release train' }).waitFor();
});

step('save a memory from the dashboard (source web)', async () => {
  const { page } = ctx;
  const content = 'I prefer dark mode in every code editor.';
  await page.getByRole('textbox', { name: 'Memory' }).fill(content);
  await page.getByRole('button', { name: 'Save memory' }).click();
  await page.locator('.save-result', { hasText: 'Saved.' }).waitFor();
  const card = page.locator('article.memory', { hasText: content });
  await card.waitFor();
  await card.locator('.badge', { hasText: 'source: web' }).waitFor();
  const id = await card.getAttribute('data-id');
  const read = await curl([`${base}/api/memories/${id}`, '-H', `X-API-Key: ${ctx.key}`]);
  check(read.status === 200 && read.json.source === 'web', `the API records source web: ${read.body}`);
  // Edit it (a new version) and open its history.
  await card.getByRole('button', { name: 'Edit' }).click();
  await card.getByRole('textbox', { name: 'Content' }).fill('I prefer dark mode in every code editor and terminal.');
  await card.getByRole('button', { name: 'Save changes' }).click();
  const edited = page.locator('article.memory', { hasText: 'code editor and terminal' });
  await edited.waitFor();
  await edited.getByRole('button', { name: 'History' }).click();
  await edited.locator('.history', { hasText: '2 versions' }).waitFor();
  await shot(page, 'memory-saved-edited-history');
});

step('invite a second user who accepts', async () => {
  const { page, browser } = ctx;
  await openNav(page, 'Members', 'Members and invitations');
  await page.getByRole('textbox', { name: 'Email' }).first().fill(grace.email);
  await page.getByRole('combobox', { name: 'Role' }).first().selectOption('member');
  await page.getByRole('button', { name: 'Create invitation' }).click();
  const link = (await page.locator('[data-testid=invite-link]').textContent()).trim();
  check(link.startsWith(`${base}/app/invitations/`), `the invitation link: ${link}`);
  await page.locator('.invitations li', { hasText: grace.email }).waitFor();
  await assertLabelled(page, 'team');
  await shot(page, 'invitation-created');

  // Grace, in a browser context of her own, opens the link, signs up and accepts.
  const context2 = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page2 = await context2.newPage();
  watchErrors(page2, 'grace', ctx.errors);
  await page2.goto(link);
  await page2.getByRole('heading', { level: 1, name: 'Invitation' }).waitFor();
  await shot(page2, 'invitee-sees-invitation');
  await page2.getByRole('link', { name: 'Create an account' }).click();
  await page2.getByLabel('Name').fill(grace.name);
  await page2.getByLabel('Email').fill(grace.email);
  await page2.getByLabel('Password').fill(grace.password);
  await page2.getByRole('button', { name: 'Create account' }).click();
  await page2.getByRole('button', { name: 'Accept invitation' }).click();
  await page2.locator('.note.success', { hasText: `You joined ${ctx.workspaceName} as member` }).waitFor();
  const selected = await page2.locator('#workspace-select option:checked').textContent();
  check(selected === ctx.workspaceName, `the invitee switched to ${selected}`);
  await shot(page2, 'invitee-accepted');
  // A member reads the team but cannot manage it.
  await page2.getByRole('link', { name: `Open ${ctx.workspaceName}` }).click();
  await openNav(page2, 'Members', 'Members and invitations');
  await page2.locator('li.member', { hasText: ada.email }).waitFor();
  check(await page2.getByRole('button', { name: 'Create invitation' }).count() === 0, 'a member sees no invite form');
  await openNav(page2, 'API keys', 'API keys');
  await page2.getByText('may not manage API keys').waitFor();
  await context2.close();

  await openNav(page, 'Memories', 'Memories');
  await openNav(page, 'Members', 'Members and invitations');
  await page.locator('li.member', { hasText: grace.email }).waitFor();
  check(await page.locator('li.member').count() === 2, 'two members');
  await shot(page, 'team-with-two-members');
});

step('upload a PDF by drag and drop and watch it complete', async () => {
  const { page } = ctx;
  await openNav(page, 'Context Vault', 'Context Vault');
  await page.locator('.list-area .state.empty').waitFor();
  const pdf = minimalPdf(PDF_FACTS);
  writeFileSync(path.join(artifacts, 'handbook.pdf'), pdf);
  await page.evaluate(({ b64, name }) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const file = new File([bytes], name, { type: 'application/pdf' });
    const transfer = new DataTransfer();
    transfer.items.add(file);
    const zone = document.querySelector('[data-testid=dropzone]');
    for (const type of ['dragenter', 'dragover', 'drop']) {
      zone.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: transfer }));
    }
  }, { b64: pdf.toString('base64'), name: 'northwind-handbook.pdf' });
  await page.locator('.upload-log', { hasText: 'northwind-handbook.pdf: accepted' }).waitFor();
  const row = page.locator('li.document', { hasText: 'northwind-handbook' });
  await row.waitFor();
  await shot(page, 'document-uploaded');
  // The list updates by itself (polling): record the statuses it shows until completed.
  const seen = [];
  const deadline = Date.now() + DOCUMENT_TIMEOUT;
  for (;;) {
    const status = await row.getAttribute('data-status');
    if (seen[seen.length - 1] !== status) seen.push(status);
    if (status === 'completed') break;
    check(!['failed', 'cancelled'].includes(status), `the document ended ${status}: ${await row.textContent()}`);
    check(Date.now() < deadline, `the document did not complete in time (statuses: ${seen.join(' -> ')})`);
    await page.waitForTimeout(250);
  }
  console.log(`  document statuses seen live: ${seen.join(' -> ')}`);
  const progress = await row.getByRole('progressbar').getAttribute('aria-valuenow');
  check(progress === '100', `a completed document's bar is full (${progress})`);
  await row.getByText(/attempts: 1/).waitFor();
  await shot(page, 'document-completed');
});

step('see the document\'s cited memories', async () => {
  const { page } = ctx;
  await page.locator('li.document a.doc-title', { hasText: 'northwind-handbook' }).click();
  await page.getByRole('heading', { level: 1, name: 'northwind-handbook' }).waitFor();
  await page.locator('.cited-memory').first().waitFor();
  const count = await page.locator('.cited-memory').count();
  check(count >= 2, `cited memories: ${count}`);
  const vacation = page.locator('.cited-memory', { hasText: '27 vacation days' });
  await vacation.locator('blockquote').first().waitFor();
  const quote = await vacation.locator('blockquote').first().textContent();
  check(quote.includes('27 vacation days'), `the quote: ${quote}`);
  await page.locator('.timeline li', { hasText: 'completed' }).first().waitFor();
  await shot(page, 'document-cited-memories');
});

step('a broken file fails with the API\'s error and is retried', async () => {
  const { page } = ctx;
  await openNav(page, 'Context Vault', 'Context Vault');
  // This time through the file chooser (what a keyboard user reaches), not drag and drop.
  await page.locator('input[type=file]').setInputFiles({
    name: 'broken.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.4\nthis is not a pdf at all\n'),
  });
  await page.locator('.upload-log', { hasText: 'broken.pdf: accepted' }).waitFor();
  const failed = page.locator('li.document[data-status=failed]', { hasText: 'broken.pdf' });
  await failed.waitFor({ timeout: 60_000 });
  const error = (await failed.locator('.state.error').textContent()).trim();
  check(error.length > 0, 'a failed document shows its error');
  const id = await failed.getAttribute('data-id');
  await shot(page, 'document-failed');
  await failed.getByRole('button', { name: 'Retry' }).click();
  // The retry runs the document again; a corrupt file fails again, and its history says so.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const detail = await curl([`${base}/api/context-vault/documents/${id}`, '-H', `X-API-Key: ${ctx.key}`]);
    const failures = detail.json.history.filter((event) => event.status === 'failed').length;
    if (failures >= 2 && detail.json.document.status === 'failed') break;
    check(Date.now() < deadline, `the retried document: ${detail.body}`);
    await page.waitForTimeout(250);
  }
  await page.locator('li.document[data-status=failed]', { hasText: 'broken.pdf' }).getByRole('button', { name: 'Retry' }).waitFor();
  console.log(`  the broken file failed with: ${error}`);
});

step('search memories', async () => {
  const { page } = ctx;
  await openNav(page, 'Search', 'Search memories');
  await page.getByRole('searchbox', { name: 'Query' }).fill('when does the release train leave');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const first = page.locator('article.memory').first();
  await first.waitFor();
  const text = await first.textContent();
  check(text.includes('release train'), `the best result: ${text}`);
  await first.locator('.badge.score').waitFor();
  await assertLabelled(page, 'search');
  await shot(page, 'search-results');
});

step('open the memory graph', async () => {
  const { page } = ctx;
  await openNav(page, 'Graph', 'Memory graph');
  await page.locator('svg.graph g.node').first().waitFor();
  const nodes = await page.locator('svg.graph g.node').count();
  check(nodes >= 6, `graph nodes: ${nodes}`);
  const links = await page.locator('svg.graph .link').count();
  check(links >= 1, `graph links: ${links}`);
  // Derived links look different: dashed curves, not straight lines.
  const derived = await page.locator('svg.graph path.link.derived').count();
  const relations = await page.locator('svg.graph line.link.relation').count();
  check(derived >= 1 && relations >= 1, `derived ${derived}, relations ${relations}`);
  const dash = await page.locator('svg.graph path.link.derived').first().evaluate((el) => getComputedStyle(el).strokeDasharray);
  check(dash && dash !== 'none', `derived links are dashed (${dash})`);
  await page.locator('svg.graph[data-settled=true]').waitFor({ timeout: 30_000 });
  const maria = page.locator('svg.graph g.node[aria-label*="Maria leads"]');
  await maria.click();
  await page.locator('[data-testid=graph-node-content]', { hasText: 'Maria leads the Northwind platform team.' }).waitFor();
  await page.locator('[data-testid=graph-details] .badge', { hasText: 'same entity' }).first().waitFor();
  // Keyboard: a node takes focus and Enter selects it.
  await page.locator('svg.graph g.node').last().focus();
  await page.keyboard.press('Enter');
  await page.locator('svg.graph g.node.selected').waitFor();
  await maria.click();
  await shot(page, 'graph');
});

step('subscription: usage and a plan change', async () => {
  const { page } = ctx;
  await openNav(page, 'Subscription', 'Subscription');
  await page.locator('[data-testid=plan]', { hasText: 'free' }).waitFor();
  await page.getByText(/of 1,000 memories/).waitFor();
  await page.getByRole('combobox', { name: 'Plan' }).selectOption('pro');
  await page.getByRole('button', { name: 'Change plan' }).click();
  await page.locator('[data-testid=plan]', { hasText: 'pro' }).waitFor();
  await page.getByText(/of 100,000 memories/).waitFor();
  await shot(page, 'subscription');
});

step('the pages work at 375 px', async () => {
  const { page } = ctx;
  await page.setViewportSize({ width: 375, height: 812 });
  for (const [label, heading, name] of [
    ['Memories', 'Memories', 'mobile-memories'],
    ['Context Vault', 'Context Vault', 'mobile-vault'],
    ['Graph', 'Memory graph', 'mobile-graph'],
    ['API keys', 'API keys', 'mobile-keys'],
    ['Members', 'Members and invitations', 'mobile-team'],
    ['Subscription', 'Subscription', 'mobile-subscription'],
  ]) {
    await openNav(page, label, heading);
    await page.locator('.state.loading').first().waitFor({ state: 'detached', timeout: STEP_TIMEOUT }).catch(() => {});
    if (label === 'Graph') await page.locator('svg.graph[data-settled=true]').waitFor({ timeout: 30_000 });
    await assertNoSidewaysScroll(page, name);
    await shot(page, name);
  }
  // Keyboard: on a fresh load the skip link is the first stop.
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Subscription' }).waitFor();
  await page.keyboard.press('Tab');
  const focused = await page.evaluate(() => document.activeElement && document.activeElement.textContent);
  check(focused === 'Skip to content', `the first Tab stop is ${focused}`);
  await page.setViewportSize({ width: 1280, height: 900 });
});

step('sign out', async () => {
  const { page } = ctx;
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('heading', { level: 1, name: 'Sign in to memvault' }).waitFor();
  await page.goto(`${base}/app/memories`);
  await page.waitForURL(/\/app\/sign-in\?next=/);
  // Signing in again lands where the user was going.
  await page.getByLabel('Email').fill(ada.email);
  await page.getByLabel('Password').fill(ada.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Memories' }).waitFor();
  const wrong = page.getByLabel('Email');
  check(await wrong.count() === 0, 'signed in again');
  await shot(page, 'signed-in-again');
});

async function main() {
  let passed = 0;
  let failed = 0;
  let failure = null;
  let browser = null;
  ctx.errors = [];
  try {
    browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
    ctx.browser = browser;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    context.setDefaultTimeout(STEP_TIMEOUT);
    browser.on('disconnected', () => { ctx.disconnected = true; });
    ctx.page = await context.newPage();
    watchErrors(ctx.page, 'ada', ctx.errors);
    for (const { name, fn } of steps) {
      const started = Date.now();
      try {
        await fn();
        check(ctx.errors.length === 0, `errors in the page: ${ctx.errors.join(' | ')}`);
        passed += 1;
        console.log(`ok   ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      } catch (error) {
        failed += 1;
        failure = `${name}: ${error.message.split('\n')[0]}`;
        console.log(`FAIL ${name}: ${error.stack || error.message}`);
        await shot(ctx.page, 'failure').catch(() => {});
        break;
      }
    }
  } catch (error) {
    failed += 1;
    failure = `could not start Chromium at ${executablePath}: ${error.message}`;
    console.log(`FAIL ${failure}`);
  } finally {
    if (browser) await browser.close().catch(() => {});
  }
  const skipped = steps.length - passed - failed;
  console.log(`\nscreenshots: ${artifacts}`);
  console.log(failure ? `FAIL: dashboard end-to-end: ${failure}` : `PASS: dashboard end-to-end (${passed} steps)`);
  console.log(`e2e: ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
  process.exit(failure ? 1 : 0);
}

main();
