import { useEffect, useRef, useState } from 'preact/hooks';
import { sse } from '../api';
import type { Frames } from '../live';
import { Markdown } from '../markdown';

type Msg = { role: 'user' | 'assistant'; content: string; reasoning?: string; ttftMs?: number; tokPerSec?: number; error?: string };
type Conversation = { id: string; title: string; model: string; messages: Msg[]; updated: number };
type Settings = { system: string; temperature: string; top_p: string; max_tokens: string; seed: string };

const storeKey = 'skulk.conversations';
// The settings' key changed when the page's own defaults (temperature 0.7,
// top_p 1, 256 tokens) gave way to skulk chat's: settings saved under the
// old key held those old defaults, so they are dropped.
const settingsKey = 'skulk.chatSettings.2';
const oldSettingsKey = 'skulk.chatSettings';

function loadConversations(): Conversation[] {
  try {
    return JSON.parse(localStorage.getItem(storeKey) ?? '[]');
  } catch {
    return [];
  }
}

function saveConversations(cs: Conversation[]) {
  localStorage.setItem(storeKey, JSON.stringify(cs));
}

// An empty setting is skulk chat's default, which the node serving the page
// names in its self frame: the reply cap is sent (as skulk chat sends
// --max-tokens' default), the sampling is left to the node (skulk chat
// sends no temperature unless told), and the fields show them as their
// placeholders.
const defaults: Settings = { system: '', temperature: '', top_p: '', max_tokens: '', seed: '' };

function loadSettings(): Settings {
  localStorage.removeItem(oldSettingsKey);
  try {
    return { ...defaults, ...JSON.parse(localStorage.getItem(settingsKey) ?? '{}') };
  } catch {
    return defaults;
  }
}

export function Chat({ f }: { f: Frames }) {
  const ready = [...new Set(Object.values<any>(f.state?.instances ?? {}).filter((i) => i.status === 'ready').map((i) => i.model as string))].sort();
  const [convs, setConvs] = useState<Conversation[]>(loadConversations);
  const [current, setCurrent] = useState<string | null>(convs[0]?.id ?? null);
  const [model, setModel] = useState('');
  const [input, setInput] = useState('');
  const [settings, setSettings] = useState<Settings>(loadSettings);
  const [streaming, setStreaming] = useState(false);
  const ctrl = useRef<AbortController | null>(null);
  const conv = convs.find((c) => c.id === current) ?? null;

  useEffect(() => {
    if (!model && ready.length) setModel(ready[0]);
  }, [ready.join(',')]);
  useEffect(() => saveConversations(convs), [convs]);
  useEffect(() => localStorage.setItem(settingsKey, JSON.stringify(settings)), [settings]);
  useEffect(() => () => ctrl.current?.abort(), []);

  const update = (id: string, fn: (c: Conversation) => Conversation) => setConvs((cs) => cs.map((c) => (c.id === id ? fn(c) : c)));
  const setLast = (id: string, fn: (m: Msg) => Msg) =>
    update(id, (c) => ({ ...c, updated: Date.now(), messages: [...c.messages.slice(0, -1), fn(c.messages[c.messages.length - 1])] }));

  const send = async () => {
    const text = input.trim();
    if (!text || !model || streaming) return;
    let c = conv;
    if (!c || c.model !== model) {
      c = { id: crypto.randomUUID(), title: text.slice(0, 40), model, messages: [], updated: Date.now() };
      const fresh = c;
      setConvs((cs) => [fresh, ...cs]);
      setCurrent(c.id);
    }
    const id = c.id;
    const history = [...c.messages, { role: 'user' as const, content: text }];
    update(id, (x) => ({ ...x, messages: [...history, { role: 'assistant', content: '' }], updated: Date.now() }));
    setInput('');
    const body: any = {
      model,
      stream: true,
      stream_options: { include_usage: true },
      messages: [...(settings.system ? [{ role: 'system', content: settings.system }] : []), ...history.map((m) => ({ role: m.role, content: m.content }))],
    };
    const num = (s: string) => (s.trim() === '' ? undefined : Number(s));
    if (num(settings.temperature) !== undefined) body.temperature = num(settings.temperature);
    if (num(settings.top_p) !== undefined) body.top_p = num(settings.top_p);
    const cap = num(settings.max_tokens) ?? f.self?.chat?.max_tokens;
    if (cap) body.max_tokens = cap;
    if (num(settings.seed) !== undefined) body.seed = num(settings.seed);
    const ac = new AbortController();
    ctrl.current = ac;
    setStreaming(true);
    const start = performance.now();
    let first = 0;
    let tokens = 0;
    let usage = 0;
    try {
      await sse('POST', '/v1/chat/completions', body, ac.signal, (_ev, data) => {
        if (data === '[DONE]') return;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new Error(chunk.error.message ?? String(chunk.error));
        if (chunk.usage?.completion_tokens) usage = chunk.usage.completion_tokens;
        const delta = chunk.choices?.[0]?.delta ?? {};
        const piece = delta.content ?? '';
        const thought = delta.reasoning_content ?? delta.reasoning ?? '';
        if (!piece && !thought) return;
        tokens++;
        if (!first) first = performance.now();
        setLast(id, (m) => ({ ...m, content: m.content + piece, reasoning: thought ? (m.reasoning ?? '') + thought : m.reasoning, ttftMs: first - start }));
      });
    } catch (e: any) {
      if (!ac.signal.aborted) setLast(id, (m) => ({ ...m, error: e.message }));
    } finally {
      const end = performance.now();
      const n = usage || tokens;
      setLast(id, (m) => ({ ...m, tokPerSec: first && end > first && n > 1 ? ((n - 1) * 1000) / (end - first) : undefined }));
      setStreaming(false);
      ctrl.current = null;
    }
  };

  const remove = (id: string) => {
    // Saved at once, not in the effect after the next paint: a page
    // closed or reloaded right after a delete must not bring it back.
    setConvs((cs) => {
      const next = cs.filter((c) => c.id !== id);
      saveConversations(next);
      return next;
    });
    if (current === id) setCurrent(null);
  };

  const chat = f.self?.chat;
  const field = (k: keyof Settings, label: string, mode: 'decimal' | 'numeric', placeholder?: number) => (
    <label>
      {label}
      <input
        data-testid={`set-${k}`}
        inputMode={mode}
        size={6}
        placeholder={placeholder === undefined ? '' : String(placeholder)}
        value={settings[k]}
        onInput={(e) => setSettings({ ...settings, [k]: (e.target as HTMLInputElement).value })}
      />
    </label>
  );

  return (
    <div class="chat">
      <aside class="convs" aria-label="conversations">
        <button
          onClick={() => {
            setCurrent(null);
          }}
        >
          New chat
        </button>
        <ul>
          {convs.map((c) => (
            <li class={c.id === current ? 'row active' : 'row'}>
              <button class="link" onClick={() => setCurrent(c.id)} aria-current={c.id === current}>
                {c.title || 'untitled'}
              </button>
              <button class="icon danger" aria-label={`delete conversation ${c.title}`} data-testid="delete-conv" onClick={() => remove(c.id)}>
                ×
              </button>
            </li>
          ))}
        </ul>
      </aside>
      <section class="thread">
        <div class="row wrap">
          <label>
            Model{' '}
            <select data-testid="model-picker" value={model} onChange={(e) => setModel((e.target as HTMLSelectElement).value)}>
              {!ready.length && <option value="">no ready instance</option>}
              {ready.map((m) => (
                <option value={m} data-model={m}>
                  {m}
                </option>
              ))}
            </select>
          </label>
          {field('temperature', 'Temperature ', 'decimal', chat?.temperature)}
          {field('top_p', 'top_p ', 'decimal', chat?.top_p)}
          {field('max_tokens', 'Max tokens ', 'numeric', chat?.max_tokens)}
          {field('seed', 'Seed ', 'numeric')}
        </div>
        <label class="block">
          System prompt
          <textarea data-testid="system" rows={2} value={settings.system} onInput={(e) => setSettings({ ...settings, system: (e.target as HTMLTextAreaElement).value })} />
        </label>
        <div class="messages" aria-live="polite">
          {(conv?.messages ?? []).map((m) => (
            <div class={`msg ${m.role}`} data-testid={`msg-${m.role}`} data-raw={m.content}>
              {m.reasoning && (
                <details class="reasoning">
                  <summary>Reasoning</summary>
                  <Markdown text={m.reasoning} />
                </details>
              )}
              {m.role === 'assistant' ? <Markdown text={m.content} /> : <p>{m.content}</p>}
              {m.error && (
                <div class="notice error" role="alert">
                  {m.error}
                </div>
              )}
              {m.role === 'assistant' && m.ttftMs !== undefined && (
                <div class="small muted" data-testid="stats">
                  first token {Math.round(m.ttftMs)} ms{m.tokPerSec ? ` · ${m.tokPerSec.toFixed(1)} tok/s` : ''}
                </div>
              )}
            </div>
          ))}
        </div>
        <form
          class="row compose"
          onSubmit={(e) => {
            e.preventDefault();
            send();
          }}
        >
          <textarea
            data-testid="prompt"
            aria-label="message"
            rows={2}
            value={input}
            placeholder={ready.length ? 'Message (Enter sends, Shift+Enter for a new line)' : 'Place a model first'}
            onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) {
                e.preventDefault();
                send();
              }
            }}
          />
          {streaming ? (
            <button type="button" data-testid="stop" onClick={() => ctrl.current?.abort()}>
              Stop
            </button>
          ) : (
            <button type="submit" data-testid="send" disabled={!ready.length}>
              Send
            </button>
          )}
        </form>
      </section>
    </div>
  );
}
