// The map page in a real browser (Chromium through playwright-core), run by tests/map_page.rs against a websearchd
// whose feeds are loopback servers replaying recorded answers. Leaflet's CDN requests are answered from the npm copy
// of the same version (so the page's Subresource Integrity hashes are checked against those bytes) and tiles with a
// plain PNG; any other request that leaves the loopback server is refused and reported.
//
// Environment: WS_BASE (http://127.0.0.1:port/map), WS_EXPECT (JSON {slug: objects}), WS_ERROR_SLUG (a layer in
// error), WS_DISABLED_SLUG (a layer disabled), WS_HUNG_SLUG (a layer whose reads are made to hang),
// WS_SCREENSHOT_DIR, WS_CHROMIUM (default /usr/bin/chromium).
// Prints what it checked; exits 1 with the reasons when a check fails.
import { base, check, env, expected, problems, refuseOutside, run, shots, watchConsole } from './checks.mjs';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const LEAFLET_DIST = join(here, 'node_modules', 'leaflet', 'dist');
const CDN = 'https://unpkg.com/leaflet@1.9.4/dist/';
const TILES = 'https://tile.openstreetmap.org/';
const WAIT_MS = 20000;

// A 256 x 256 PNG of one colour with a darker edge, so that tiles show as a grid.
function tile() {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'ascii');
    data.copy(out, 8);
    out.writeUInt32BE(crc(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const size = 256;
  const raw = Buffer.alloc(size * (1 + size * 3));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const edge = x === 0 || y === 0;
      raw.set(edge ? [0x9c, 0xb8, 0xc8] : [0xd4, 0xe4, 0xee], y * (1 + size * 3) + 1 + x * 3);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

const TILE = tile();

// `prepare(context)` runs before the page opens (routes of its own, which are asked first; a clock).
async function open(browser, options, prepare) {
  const context = await browser.newContext(options);
  // The last route registered is asked first: anything else leaving the service is refused and reported.
  await refuseOutside(context);
  await context.route(TILES + '**', (route) =>
    route.fulfill({ status: 200, contentType: 'image/png', body: TILE, headers: { 'Access-Control-Allow-Origin': '*' } }));
  await context.route(CDN + '**', (route) => {
    const name = route.request().url().slice(CDN.length);
    const types = { 'leaflet.js': 'text/javascript', 'leaflet.css': 'text/css' };
    if (!types[name]) {
      problems.push('unexpected asset: ' + name);
      return route.fulfill({ status: 404, body: '' });
    }
    return route.fulfill({
      status: 200,
      contentType: types[name],
      body: readFileSync(join(LEAFLET_DIST, name)),
      headers: { 'Access-Control-Allow-Origin': '*' },
    });
  });
  if (prepare) await prepare(context);
  const page = await context.newPage();
  watchConsole(page);
  const answer = await page.goto(base + '/');
  check(answer.status() === 200, 'the page answers 200');
  return { context, page };
}

const counts = (page) => page.evaluate((slugs) =>
  Object.fromEntries(slugs.map((s) => [s, document.querySelectorAll('.ws-obj.ws-' + s).length])), Object.keys(expected));

async function drawn(page, want, what) {
  try {
    await page.waitForFunction((w) => Object.entries(w).every(([s, n]) =>
      document.querySelectorAll('.ws-obj.ws-' + s).length === n), want, { timeout: WAIT_MS });
    check(true, what + ': ' + JSON.stringify(want));
  } catch {
    check(false, what + ': want ' + JSON.stringify(want) + ', drawn ' + JSON.stringify(await counts(page)));
  }
}

const text = (page, selector) => page.locator(selector).innerText();

// The base map's tiles cover the map from its top to its bottom: no empty band beyond the poles. Waited for, since
// Leaflet pans back inside the world with an animation after the map's size changes.
async function noBand(page, what) {
  try {
    await page.waitForFunction(() => {
      const map = document.getElementById('map').getBoundingClientRect();
      const tiles = [...document.querySelectorAll('#map .leaflet-tile-loaded')].map((t) => t.getBoundingClientRect());
      return tiles.length > 0 && Math.min(...tiles.map((t) => t.top)) <= map.top + 1 &&
        Math.max(...tiles.map((t) => t.bottom)) >= map.bottom - 1;
    }, null, { timeout: WAIT_MS });
    check(true, what);
  } catch {
    check(false, what);
  }
}

await run(async (browser) => {
  const { context, page } = await open(browser, { viewport: { width: 1280, height: 800 } });
  await drawn(page, expected, 'objects drawn per layer');
  const satellites = expected.satelites || 0;
  const tracks = await page.locator('.ws-track').count();
  check(tracks >= Math.min(1, satellites), `satellite ground tracks drawn (${tracks} lines for ${satellites} satellites)`);
  const headings = await page.locator('.ws-vuelos span').evaluateAll((spans) =>
    spans.filter((s) => /rotate\(/.test(s.style.transform)).length);
  check(headings > 0, `aircraft drawn with their heading (${headings} rotated)`);

  // The legend: status, source, licence and age of each layer; a layer in error and a disabled one say why.
  for (const slug of Object.keys(expected)) {
    const status = await text(page, `#layer-${slug} .status`);
    const meta = await text(page, `#layer-${slug} .meta`);
    check(status === 'ok', `${slug}: status ${status}`);
    check(/Source: .+ \(licence: .+\)/.test(meta) && /updated \d+ s ago/.test(meta), `${slug}: legend "${meta}"`);
  }
  const errorWhy = await text(page, `#layer-${env.WS_ERROR_SLUG} .why`);
  check(await text(page, `#layer-${env.WS_ERROR_SLUG} .status`) === 'error' && /HTTP 500/.test(errorWhy),
    `${env.WS_ERROR_SLUG} in error shows why: "${errorWhy}"`);
  const disabledWhy = await text(page, `#layer-${env.WS_DISABLED_SLUG} .why`);
  check(await text(page, `#layer-${env.WS_DISABLED_SLUG} .status`) === 'disabled' &&
    /WEBSEARCHD_MAP_LAYERS/.test(disabledWhy), `${env.WS_DISABLED_SLUG} disabled shows why: "${disabledWhy}"`);

  // Clicking an earthquake shows its properties: the one drawn on top at its own centre.
  const quakes = await (await fetch(base + '/api/capa/terremotos')).json();
  const point = await page.locator('.ws-obj.ws-terremotos').evaluateAll((paths) => {
    for (const p of paths) {
      const r = p.getBoundingClientRect();
      const x = r.left + r.width / 2, y = r.top + r.height / 2;
      if (document.elementFromPoint(x, y) === p) return { x, y };
    }
    return null;
  });
  check(point !== null, 'an earthquake can be clicked');
  if (point) {
    await page.mouse.click(point.x, point.y);
    await page.locator('#props').waitFor({ state: 'visible', timeout: WAIT_MS });
    const panel = await text(page, '#props');
    const id = (panel.match(/^id\s+(\S+)$/m) || [])[1];
    const quake = quakes.features.find((f) => f.properties.id === id);
    check(quake !== undefined, `the panel names a quake of the layer (id ${id})`);
    if (quake) {
      const p = quake.properties;
      check(panel.includes('magnitude\t' + p.magnitude) && panel.includes('place\t' + p.place),
        `the panel shows magnitude ${p.magnitude} and place "${p.place}"`);
    }
  }
  if (shots) {
    mkdirSync(shots, { recursive: true });
    await page.screenshot({ path: join(shots, 'map.png') });
    console.log('screenshot ' + join(shots, 'map.png'));
  }

  // Toggling hides a layer's objects and shows them again.
  await page.locator('#toggle-terremotos').uncheck();
  await page.locator('#toggle-vuelos').uncheck();
  await drawn(page, { ...expected, terremotos: 0, vuelos: 0 }, 'after hiding earthquakes and flights');
  await page.locator('#toggle-terremotos').check();
  await drawn(page, { ...expected, vuelos: 0 }, 'after showing earthquakes again');
  await context.close();

  // A phone: the map fills the width, the legend sits under it and folds away behind a button.
  const phone = await open(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true,
    deviceScaleFactor: 2 });
  await drawn(phone.page, expected, 'objects drawn on a phone');
  const box = await phone.page.locator('#map').boundingBox();
  check(box && box.width === 390 && box.height > 400, `the map fills a phone's width (${JSON.stringify(box)})`);
  await noBand(phone.page, 'the tiles fill the map from top to bottom');
  const button = phone.page.locator('#toggle');
  check(await button.isVisible(), 'the legend button shows on a phone');
  await button.tap();
  check(!(await phone.page.locator('#side').isVisible()), 'the legend folds away');
  await phone.page.waitForFunction(() => document.getElementById('map').getBoundingClientRect().height > 800);
  check(true, 'and the map takes the whole screen');
  await button.tap();
  check(await phone.page.locator('#side').isVisible(), 'and comes back');
  await noBand(phone.page, 'and the tiles fill the map again');
  if (shots) await phone.page.screenshot({ path: join(shots, 'map-phone.png') });
  await phone.context.close();

  // The map library unreachable (an offline machine, a blocked CDN): the legend still lists every layer with its
  // status, and the map's place says why it is empty. The failed loads' console lines are this case's, not faults.
  const before = problems.length;
  const bare = await open(browser, { viewport: { width: 800, height: 600 } }, async (context) => {
    await context.route(CDN + '**', (route) => route.abort());
  });
  await bare.page.waitForFunction(() => document.querySelector('#layer-terremotos .status') &&
    document.querySelector('#layer-terremotos .status').textContent === 'ok', null, { timeout: WAIT_MS });
  const rows = await bare.page.locator('#legend .layer').count();
  check(rows >= Object.keys(expected).length, `without the map library the legend lists every layer (${rows} rows)`);
  check(/could not be loaded/.test(await text(bare.page, '#map')), 'and the map says why it is empty');
  await bare.context.close();
  const theirs = problems.splice(before);
  problems.push(...theirs.filter((p) => !/ERR_FAILED|Failed to load resource/.test(p)));

  // A layer whose reads hang: the page's clock runs five minutes (five rounds of the legend's refresh), and the
  // layer never has more than one read in flight.
  const hung = env.WS_HUNG_SLUG;
  let inFlight = 0, mostInFlight = 0, reads = 0;
  const slow = await open(browser, { viewport: { width: 800, height: 600 } }, async (context) => {
    await context.clock.install();
    await context.route(base + '/api/capa/' + hung, () => {
      reads++;
      mostInFlight = Math.max(mostInFlight, ++inFlight);
    });
    context.on('requestfailed', (r) => { if (r.url().endsWith('/api/capa/' + hung)) inFlight--; });
  });
  await drawn(slow.page, { ...expected, [hung]: 0 }, 'the other layers drawn while one hangs');
  await slow.page.clock.runFor(5 * 60 * 1000);
  check(reads >= 1 && mostInFlight === 1, `${hung} read while hung: ${reads} read(s), at most ${mostInFlight} in flight`);
  await slow.context.close();
});
