// The node's HTTP API as the page uses it: every request carries the API
// key (kept in session storage, so it goes when the tab closes) as a bearer
// token, and every refusal becomes an ApiError with the server's message.

const keyName = 'skulk.apiKey';

export function apiKey(): string {
  return sessionStorage.getItem(keyName) ?? '';
}

export function setApiKey(key: string): void {
  if (key) sessionStorage.setItem(keyName, key);
  else sessionStorage.removeItem(keyName);
}

export class ApiError extends Error {
  constructor(public status: number, message: string) {
    super(message);
  }
}

function headers(json: boolean, key = apiKey()): HeadersInit {
  const h: Record<string, string> = {};
  if (key) h['Authorization'] = 'Bearer ' + key;
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

// errorOf reads the error document of a refusal: {"error": {"message"}}
// (OpenAI style) or {"error": "..."}, else the status text.
async function errorOf(r: Response): Promise<ApiError> {
  let msg = `${r.status} ${r.statusText}`;
  try {
    const doc = await r.json();
    const e = doc?.error;
    if (typeof e === 'string') msg = e;
    else if (e && typeof e.message === 'string') msg = e.message;
  } catch {
    /* not JSON: keep the status line */
  }
  return new ApiError(r.status, msg);
}

export async function call<T = any>(method: string, path: string, body?: unknown, signal?: AbortSignal, key?: string): Promise<T> {
  const r = await fetch(path, {
    method,
    headers: headers(body !== undefined, key),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!r.ok) throw await errorOf(r);
  return (await r.json()) as T;
}

// sse reads a text/event-stream answer with fetch (EventSource cannot send
// the key in a header), calling onEvent for each message.
export async function sse(
  method: string,
  path: string,
  body: unknown,
  signal: AbortSignal,
  onEvent: (event: string, data: string) => void,
): Promise<void> {
  const r = await fetch(path, {
    method,
    headers: { ...headers(body !== undefined), Accept: 'text/event-stream' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (!r.ok || !r.body) throw await errorOf(r);
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let at: number;
    while ((at = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, at);
      buf = buf.slice(at + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let v = colon < 0 ? '' : line.slice(colon + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'event') event = v;
        else if (field === 'data') data.push(v);
      }
      if (data.length) onEvent(event, data.join('\n'));
    }
  }
}

export function fmtBytes(n: number | undefined): string {
  if (n === undefined || !isFinite(n)) return '–';
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < u.length - 1) {
    n /= 1000;
    i++;
  }
  return `${n.toFixed(i && n < 10 ? 1 : 0)} ${u[i]}`;
}

export function shortID(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}
