// The search page in a real browser (Chromium through playwright-core), run by tests/searx_page.rs against a
// websearchd whose sources are loopback servers replaying recorded result pages. With JavaScript off (the page needs
// none): type a query on the home page, submit, read the results page (each recorded result linked, the failed
// sources listed), the CSP header; then a phone's layout. Any request that leaves the service is refused and
// reported, and so is every console error or warning (a CSP violation among them).
//
// Environment: WS_BASE (http://127.0.0.1:port), WS_EXPECT (JSON {query, results: [{url, title}], failed: [names]}),
// WS_SCREENSHOT_DIR, WS_CHROMIUM (default /usr/bin/chromium).
// Prints what it checked; exits 1 with the reasons when a check fails.
import { base, check, expected, refuseOutside, run, shots, watchConsole } from './checks.mjs';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

async function open(browser, options) {
  const context = await browser.newContext({ javaScriptEnabled: false, ...options });
  await refuseOutside(context);
  const page = await context.newPage();
  watchConsole(page);
  return { context, page };
}

async function shot(page, name) {
  if (!shots) return;
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, name), fullPage: true });
  console.log('screenshot ' + join(shots, name));
}

async function readResults(page, what) {
  const links = await page.locator('ol.results li h2 a').evaluateAll((as) =>
    as.map((a) => ({ url: a.getAttribute('href'), title: a.textContent })));
  const want = expected.results.map((r) => ({ url: r.url, title: r.title }));
  const same = JSON.stringify(links) === JSON.stringify(want);
  check(same, `${what}: each recorded result linked, in order (${links.length} of ${expected.results.length})` +
    (same ? '' : `: ${JSON.stringify(links)}`));
  const failed = await page.locator('section.sources tr.failed td:first-child').allTextContents();
  check(JSON.stringify(failed) === JSON.stringify(expected.failed), `${what}: failed sources listed: ${failed}`);
  const answered = await page.locator('section.sources tr.ok td:nth-child(2)').allTextContents();
  check(answered.length > 0 && answered.every((t) => t === 'answered'), `${what}: answering sources listed`);
  // Issue 42: names broke mid-word (`ddg_ht|ml`) at 1280 px and on phones. Each name and state is on one line.
  const broken = await page.locator('section.sources td:nth-child(-n+2)').evaluateAll((cells) =>
    cells.filter((td) => {
      const range = document.createRange();
      range.selectNodeContents(td);
      return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1;
    }).map((td) => td.textContent));
  check(broken.length === 0, `${what}: each source's name and state on one line` +
    (broken.length ? `: broken ${JSON.stringify(broken)}` : ''));
}

await run(async (browser) => {
  const { context, page } = await open(browser, { viewport: { width: 1280, height: 800 } });
  const home = await page.goto(base + '/');
  check(home.status() === 200, 'the home page answers 200');
  const csp = home.headers()['content-security-policy'] || '';
  check(csp.startsWith("default-src 'none'") && !csp.includes('script-src'), `the CSP header: ${csp}`);
  check(await page.locator('link[rel=search][href="/opensearch.xml"]').count() === 1, 'the OpenSearch link');
  await shot(page, 'searx-home.png');

  await page.locator('input[name=q]').fill(expected.query);
  const [answer] = await Promise.all([
    page.waitForNavigation(),
    page.locator('input[name=q]').press('Enter'),
  ]);
  check(answer.status() === 200, 'the results page answers 200');
  const url = new URL(page.url());
  check(url.pathname === '/search' && url.searchParams.get('q') === expected.query, `submitted to ${page.url()}`);
  check((answer.headers()['content-security-policy'] || '').startsWith("default-src 'none'"), 'its CSP header');
  await readResults(page, 'desktop');
  check(await page.locator('input[name=q]').inputValue() === expected.query, 'the query stays in the box');
  await shot(page, 'searx-results.png');
  await context.close();

  // A phone: the same results page fits its width (no sideways scrolling), the box and button on screen.
  const phone = await open(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
    deviceScaleFactor: 2 });
  const reply = await phone.page.goto(page.url());
  check(reply.status() === 200, 'the phone gets the results page');
  await readResults(phone.page, 'phone');
  const fits = await phone.page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  check(fits, 'no sideways scrolling on a phone');
  const box = await phone.page.locator('input[name=q]').boundingBox();
  check(box !== null && box.x >= 0 && box.x + box.width <= 390, `the search box fits the phone (${JSON.stringify(box)})`);
  await shot(phone.page, 'searx-phone.png');
  await phone.context.close();
});
