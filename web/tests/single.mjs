// One node on loopback (no key needed): the page loads without console
// errors; stories260k is placed from the Models panel and becomes ready; a
// chat streams the greedy text the API gives, with skulk chat's defaults
// where the user sets nothing; a model added from the Hub stand-in is
// pulled with a moving progress bar that ends installed; an imported model
// says so; and every panel is photographed.
//
// Env: SKULK_URL, HUB_REF and HUB_MODEL (a model the stand-in serves,
// slowly), IMPORTED_MODEL (a model the test imported from a local file),
// CHAT_DEFAULTS (skulk chat's defaults, as JSON: max_tokens, temperature,
// top_p), SCREENSHOTS (the folder). It prints the chat's answer as a line
// "ANSWER <json>" for the Go test to hold against the API's greedy text.
import { check, launch, log, need, page, screenshots, showPanel } from './lib.mjs';

const url = need('SKULK_URL');
const hubRef = need('HUB_REF');
const hubModel = need('HUB_MODEL');
const importedModel = need('IMPORTED_MODEL');
const chatDefaults = JSON.parse(need('CHAT_DEFAULTS'));
const shots = need('SCREENSHOTS');

const { browser, close } = await launch();
try {
  const { page: p, errors } = await page(browser);
  const resp = await p.goto(url + '/');
  const csp = resp.headers()['content-security-policy'] ?? '';
  check(csp.includes("default-src 'none'") && csp.includes("script-src 'self'"), `weak or missing CSP: ${csp}`);
  await p.waitForSelector('[data-testid=link-status]:has-text("live")', { timeout: 20000 });
  await p.waitForSelector('[data-testid=node-card][data-role=master]', { timeout: 20000 });
  log('page live with one master card');

  // The panels are tabs the keyboard moves through.
  await p.focus('#tab-topology');
  await p.keyboard.press('ArrowRight');
  await p.waitForSelector('[data-testid=panel-models]');
  check(await p.evaluate(() => document.activeElement?.id === 'tab-models'), 'focus did not follow the tab');
  await p.keyboard.press('End');
  await p.waitForSelector('[data-testid=panel-settings]');
  await p.keyboard.press('Home');
  await p.waitForSelector('[data-testid=panel-topology]');

  // The Models panel lists the library's short names with their sizes.
  await showPanel(p, 'models');
  await p.click('[data-testid=library] summary');
  const entry = p.locator('[data-testid=library-entry][data-name="qwen3:8b"]');
  await entry.waitFor();
  const entries = await p.locator('[data-testid=library-entry]').count();
  const size = await entry.locator('[data-testid=library-size]').innerText();
  check(entries >= 10 && / GB$/.test(size), `the library lists ${entries} names, qwen3:8b of ${size}`);
  check((await entry.locator('[data-testid=library-pull]').count()) === 1, 'qwen3:8b, not installed, offers no pull');
  await p.click('[data-testid=library] summary');
  log(`the library lists ${entries} names (qwen3:8b: ${size})`);

  // Place stories260k from the Models panel.
  const card = p.locator('[data-testid=model][data-model=stories260k]');
  await card.getByRole('button', { name: 'Preview & place' }).click();
  await card.locator('[data-testid=place]').first().click();
  await p.waitForSelector('[data-testid=ok]:has-text("placed stories260k")', { timeout: 20000 });
  await showPanel(p, 'topology');
  await p.waitForSelector('[data-testid=instance][data-model=stories260k][data-status=ready]', { timeout: 60000 });
  log('stories260k ready');

  // Chat: greedy, 64 tokens; the answer must stream (partial texts seen)
  // and end equal to the API's.
  await showPanel(p, 'chat');
  await p.waitForSelector('[data-testid=model-picker] option[data-model=stories260k]', { state: 'attached' });
  // The settings start empty, showing skulk chat's defaults.
  for (const k of ['max_tokens', 'temperature', 'top_p']) {
    const f = p.locator(`[data-testid=set-${k}]`);
    const [value, placeholder] = [await f.inputValue(), await f.getAttribute('placeholder')];
    check(value === '' && placeholder === String(chatDefaults[k]), `the ${k} field holds ${JSON.stringify(value)} over ${JSON.stringify(placeholder)}, want skulk chat's ${chatDefaults[k]}`);
  }
  await p.fill('[data-testid=set-temperature]', '0');
  await p.fill('[data-testid=set-max_tokens]', '64');
  await p.evaluate(() => {
    window.__partials = new Set();
    new MutationObserver(() => {
      const m = document.querySelector('[data-testid=msg-assistant]:last-of-type');
      if (m) window.__partials.add(m.getAttribute('data-raw'));
    }).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  });
  // The network slowed to 4 KB/s for the answer, so its events arrive over
  // seconds and the page's partial renders can be seen (on loopback the
  // whole answer may otherwise land in one read).
  const cdp = await p.context().newCDPSession(p);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: 4000, uploadThroughput: -1 });
  const answer = p.waitForResponse((r) => r.url().endsWith('/v1/chat/completions'));
  await p.fill('[data-testid=prompt]', 'Once upon a time');
  await p.keyboard.press('Enter');
  const chat = await answer;
  check((chat.headers()["content-type"] ?? "").startsWith("text/event-stream"), `the chat was answered as ${chat.headers()["content-type"]}`);
  check(JSON.parse(chat.request().postData()).stream === true, 'the chat was not asked to stream');
  await p.waitForSelector('[data-testid=stop]', { timeout: 10000 }).catch(() => {});
  await p.waitForSelector('[data-testid=send]', { timeout: 60000 });
  await p.waitForSelector('[data-testid=msg-assistant] [data-testid=stats]', { timeout: 10000 });
  const events = (await chat.text()).split('\n').filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]').length;
  check(events >= 32, `the answer came in ${events} events`);
  const got = await p.locator('[data-testid=msg-assistant]').last().getAttribute('data-raw');
  check(got && got.length > 0, 'no chat answer');
  console.log('ANSWER ' + JSON.stringify(got));
  const shown = (await p.locator('[data-testid=msg-assistant]').last().locator('.md').innerText()).replace(/\s+/g, ' ').trim();
  check(shown === got.replace(/\s+/g, ' ').trim(), `rendered answer ${JSON.stringify(shown)}, streamed ${JSON.stringify(got)}`);
  const partials = await p.evaluate(() => [...window.__partials].filter((s) => s && s.length > 0));
  check(partials.length >= 2, `the answer did not stream: texts seen ${JSON.stringify(partials)}`);
  log(`chat streamed in ${events} events; the page showed ${partials.length} growing texts`);

  // Stop ends an answer mid-stream (the network still slowed): the text
  // stops growing and the page can send again.
  // With the cap emptied again the page sends skulk chat's, and leaves
  // top_p to the node as skulk chat does.
  await p.fill('[data-testid=set-max_tokens]', '');
  const second = p.waitForRequest((r) => r.url().endsWith('/v1/chat/completions'));
  await p.fill('[data-testid=prompt]', 'Once upon a time');
  await p.keyboard.press('Enter');
  const sent = JSON.parse((await second).postData());
  check(sent.max_tokens === chatDefaults.max_tokens && !('top_p' in sent), `the chat sent ${JSON.stringify(sent)} without its settings`);
  await p.waitForFunction(() => {
    const ms = document.querySelectorAll('[data-testid=msg-assistant]');
    return ms.length === 2 && (ms[1].getAttribute('data-raw') ?? '').length > 0;
  }, null, { timeout: 30000 });
  await p.click('[data-testid=stop]');
  await p.waitForSelector('[data-testid=send]', { timeout: 5000 });
  const stopped = await p.locator('[data-testid=msg-assistant]').nth(1).getAttribute('data-raw');
  await p.waitForTimeout(1000);
  check((await p.locator('[data-testid=msg-assistant]').nth(1).getAttribute('data-raw')) === stopped, 'the answer grew after Stop');
  log(`stopped after ${stopped.length} characters`);
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });

  // Download from the Hub stand-in: add, pull, watch the bar move to done.
  await showPanel(p, 'models');
  await p.fill('[data-testid=ref]', hubRef);
  await p.keyboard.press('Enter');
  const hub = p.locator(`[data-testid=model][data-model="${hubModel}"]`);
  await hub.waitFor({ timeout: 20000 });
  check((await hub.getAttribute('data-installed')) === 'false', 'the added model is installed before its pull');
  // Record every value the bar shows, as the page renders it.
  await p.evaluate((model) => {
    window.__progress = [];
    new MutationObserver(() => {
      const bar = document.querySelector(`[data-testid=download][data-model="${model}"]`);
      if (bar) window.__progress.push([bar.getAttribute('data-state'), Number(bar.getAttribute('data-done')), Number(bar.getAttribute('data-total'))]);
    }).observe(document.body, { subtree: true, childList: true, attributes: true });
  }, hubModel);
  await hub.locator('[data-testid=pull]').click();
  await p.waitForSelector(`[data-testid=download][data-model="${hubModel}"]:is([data-state=done], [data-state=failed])`, { timeout: 120000 });
  const progress = await p.evaluate(() => window.__progress);
  const state = progress[progress.length - 1][0];
  const seen = new Set(progress.filter(([s, d, t]) => s === 'downloading' && d > 0 && d < t).map(([, d]) => d));
  log(`download states seen: ${JSON.stringify([...new Set(progress.map((x) => x.join(' ')))])}`);
  check(state === 'done', `the download never ended: ${state}`);
  check(seen.size >= 2, `the progress bar did not move: values ${[...seen]}`);
  await p.waitForSelector(`[data-testid=model][data-model="${hubModel}"][data-installed=true]`, { timeout: 20000 });
  log(`download moved through ${seen.size} values and ended installed`);

  // An imported model is called imported, and offers no pull.
  const imp = p.locator(`[data-testid=model][data-model="${importedModel}"]`);
  await imp.waitFor({ timeout: 10000 });
  const impSource = await imp.locator('[data-testid=source]').innerText();
  const impState = await imp.locator('[data-testid=installed]').innerText();
  check(impSource === 'imported' && impState === 'imported here', `the imported model shows ${impSource} / ${impState}`);
  check((await imp.locator('[data-testid=pull]').count()) === 0, 'the imported model offers a pull');
  check(!/download/i.test(await imp.innerText()), `the imported model's card speaks of downloads: ${await imp.innerText()}`);
  log(`the imported model shows ${impSource} / ${impState}`);

  // The Models panel is photographed with a placement preview open.
  await screenshots(p, shots, 'single', undefined, {
    models: async () => {
      await card.getByRole('button', { name: 'Preview & place' }).click();
      await card.locator('[data-testid=preview] table').first().waitFor();
    },
  });
  check(errors.length === 0, `console errors:\n${errors.join('\n')}`);

  // Conversations are kept in the browser across reloads, and deletable.
  await p.reload();
  await showPanel(p, 'chat');
  await p.waitForSelector('[data-testid=delete-conv]');
  const kept = await p.locator('[data-testid=msg-assistant]').first().getAttribute('data-raw');
  check(kept === got, `after a reload the conversation holds ${JSON.stringify(kept)}`);
  await p.click('[data-testid=delete-conv]');
  await p.waitForSelector('[data-testid=delete-conv]', { state: 'detached' });
  await p.reload();
  await showPanel(p, 'chat');
  check((await p.locator('[data-testid=delete-conv]').count()) === 0, 'a deleted conversation came back after a reload');
  log('conversation kept across a reload, then deleted');

  // A refusal shows the server's message: the same model again (the
  // browser logs the 409 itself, so after the console check).
  await showPanel(p, 'models');
  await p.fill('[data-testid=ref]', hubRef);
  await p.keyboard.press('Enter');
  await p.waitForSelector('[data-testid=error]:has-text("already exists")', { timeout: 10000 });
  log('PASS');
} finally {
  await close();
}
