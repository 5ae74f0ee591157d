// Shared helpers of the dashboard's browser tests: Debian's chromium driven
// by playwright-core (no downloaded browser), console errors collected,
// screenshots of every panel in both themes at desktop and phone widths.
import { chromium } from 'playwright-core';
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const panels = ['topology', 'models', 'chat', 'activity', 'settings'];
export const sizes = { desktop: { width: 1280, height: 860 }, phone: { width: 390, height: 844 } };

export function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'skulk-chromium-'));
  // A persistent context is how playwright takes a --user-data-dir: a
  // fresh one per run.
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: sizes.desktop,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  const close = async () => {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { browser, close };
}

// page opens a page (in the run's one context) that records console
// errors and page errors.
export async function page(browser) {
  const ctx = browser;
  const p = await ctx.newPage();
  const errors = [];
  p.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()} (${m.location()?.url ?? ''})`);
  });
  p.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  return { ctx, page: p, errors };
}

export async function showPanel(p, name) {
  await p.click(`#tab-${name}`);
  await p.waitForSelector(`[data-testid=panel-${name}]`);
}

// screenshots writes every panel, light and dark, desktop and phone, as
// DIR/PREFIX-PANEL-THEME-SIZE.png;
// prepare[panel], when set, readies a panel after it is shown.
export async function screenshots(p, dir, prefix, list = panels, prepare = {}) {
  mkdirSync(dir, { recursive: true });
  for (const size of Object.keys(sizes)) {
    await p.setViewportSize(sizes[size]);
    for (const theme of ['light', 'dark']) {
      await p.emulateMedia({ colorScheme: theme, reducedMotion: 'reduce' });
      for (const name of list) {
        await showPanel(p, name);
        if (prepare[name]) await prepare[name](p);
        await p.waitForTimeout(150);
        await p.screenshot({ path: join(dir, `${prefix}-${name}-${theme}-${size}.png`), fullPage: true });
        // Nothing may push the page wider than the screen (a phone would
        // scroll sideways).
        const wide = await p.evaluate(() => document.documentElement.scrollWidth);
        check(wide <= sizes[size].width, `the ${name} panel is ${wide} px wide at ${sizes[size].width} px`);
      }
    }
  }
  await p.setViewportSize(sizes.desktop);
  await p.emulateMedia({ colorScheme: 'light' });
}

export function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function log(...a) {
  console.log(new Date().toISOString(), ...a);
}
