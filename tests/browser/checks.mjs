// What every browser check script of tests/ shares: the environment the Rust test gives it (WS_BASE, WS_EXPECT,
// WS_SCREENSHOT_DIR), the lists of failed checks and of problems seen (outside requests, console errors), and
// `check`, which prints each check and records a failure.
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
