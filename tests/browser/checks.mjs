// What every browser check script of tests/ shares: the environment the Rust test gives it (WS_BASE, WS_EXPECT,
// WS_SCREENSHOT_DIR, WS_CHROMIUM), the lists of failed checks and of problems seen (outside requests, console
// errors), `check`, which prints each check and records a failure, and the run's frame: Chromium launched alike
// (`run`), requests leaving the service refused (`refuseOutside`), console errors recorded (`watchConsole`), and the
// final report with the exit status.
import { chromium } from 'playwright-core';

export const env = process.env;
export const base = env.WS_BASE;
export const expected = JSON.parse(env.WS_EXPECT);
export const shots = env.WS_SCREENSHOT_DIR;
export const failures = [];
export const problems = [];

export function check(ok, what) {
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
  if (!ok) failures.push(what);
}

// Refuses and reports any request that leaves the service (WS_BASE's origin). Playwright asks the last route
// registered first: register this one before a script's own routes.
export async function refuseOutside(context) {
  const origin = new URL(base).origin;
  await context.route(() => true, (route) => {
    const url = route.request().url();
    if (url.startsWith(origin + '/')) return route.continue();
    problems.push('request outside the service: ' + url);
    return route.abort();
  });
}

// Records the page's console errors and warnings (a CSP violation among them) and its uncaught errors.
export function watchConsole(page) {
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push('console ' + m.type() + ': ' + m.text());
  });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
}

// Launches Chromium, runs `checks(browser)` (an exception stops the run and is a failure), closes the browser, and
// reports: every problem seen is a failure; exits 1 when a check failed.
export async function run(checks) {
  const browser = await chromium.launch({
    executablePath: env.WS_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  try {
    await checks(browser);
  } catch (e) {
    failures.push('the run stopped: ' + (e && e.stack || e));
  } finally {
    await browser.close();
  }
  check(problems.length === 0, 'no console errors, page errors or outside requests' +
    (problems.length ? ': ' + problems.join(' | ') : ''));
  if (failures.length) {
    console.log(failures.length + ' check(s) failed');
    process.exit(1);
  }
  console.log('all checks passed');
}
