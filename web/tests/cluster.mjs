// A three-node cluster whose API needs a key, seen from another host: the
// page asks for the key and refuses a wrong one; signed in, the topology
// shows three nodes with one master and the latency of each link; when the test kills a node (the
// script prints KILL and waits for KILLED on stdin) its card turns
// unreachable within 10 s.
//
// Env: SKULK_URL, KEY, VICTIM (the id of the node the test kills),
// SCREENSHOTS. Prints "UNREACHABLE_MS <n>".
import { createInterface } from 'node:readline';
import { check, launch, log, need, page, screenshots } from './lib.mjs';

const url = need('SKULK_URL');
const key = need('KEY');
const victim = need('VICTIM');
const shots = need('SCREENSHOTS');
const stdin = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => stdin.once('line', resolve));

const { browser, close } = await launch();
try {
  const { page: p, errors } = await page(browser);
  await p.goto(url + '/');
  await p.waitForSelector('[data-testid=signin]', { timeout: 20000 });
  check((await p.locator('[data-testid=node-card]').count()) === 0, 'node cards shown before signing in');
  log('the page asks for the key');

  await p.fill('[data-testid=key]', key + '-wrong');
  await p.keyboard.press('Enter');
  await p.waitForSelector('[data-testid=signin-error]', { timeout: 10000 });
  const refusal = await p.locator('[data-testid=signin-error]').innerText();
  check(await p.locator('[data-testid=signin]').isVisible(), 'the sign-in form went away after a wrong key');
  check(!(await p.evaluate(() => sessionStorage.getItem('skulk.apiKey'))), 'a wrong key was kept');
  log(`wrong key refused: ${refusal}`);

  await p.fill('[data-testid=key]', key);
  await p.keyboard.press('Enter');
  await p.waitForSelector('[data-testid=link-status]:has-text("live")', { timeout: 20000 });
  await p.waitForFunction(() => document.querySelectorAll('[data-testid=node-card]').length === 3, null, { timeout: 30000 });
  await p.waitForFunction(
    () => document.querySelectorAll('[data-testid=node-card][data-health=ok]').length === 3,
    null,
    { timeout: 30000 },
  );
  const masters = await p.locator('[data-testid=node-card][data-role=master]').count();
  check(masters === 1, `${masters} master cards`);
  log('three nodes, one master');
  // Each link shows the latency the failure detector's probes measured.
  await p.waitForFunction(
    () => [...document.querySelectorAll('[data-testid=link]')].filter((l) => / ms$/.test(l.textContent.trim())).length === 3,
    null,
    { timeout: 30000 },
  );
  log('links: ' + (await p.locator('[data-testid=link]').allInnerTexts()).join('; '));
  // The test placed stories260k across the three nodes: three bands.
  const split = p.locator('[data-testid=instance][data-model=stories260k][data-status=ready][data-ranks="3"]');
  await split.waitFor({ timeout: 20000 });
  check((await split.locator('.band').count()) === 3, 'the split instance is not drawn as three bands');
  log('bands: ' + (await split.locator('.band').allInnerTexts()).join('; '));
  // The only console errors allowed are the browser's own lines for the
  // refused key's 401s.
  const others = errors.filter((e) => !/status of 401/.test(e));
  check(others.length === 0, `console errors:\n${others.join('\n')}`);

  await screenshots(p, shots, 'cluster', ['topology']);

  console.log('KILL');
  await nextLine();
  const start = Date.now();
  await p.waitForSelector(`[data-testid=node-card][data-node="${victim}"][data-health=unreachable]`, { timeout: 10000 });
  const ms = Date.now() - start;
  console.log(`UNREACHABLE_MS ${ms}`);
  log(`the killed node's card turned unreachable after ${ms} ms`);
  await screenshots(p, shots, 'cluster-node-down', ['topology']);
  log('PASS');
} finally {
  stdin.close();
  await close();
}
