import { useEffect, useRef, useState } from 'preact/hooks';
import { call, fmtBytes, shortID } from '../api';
import type { Frames } from '../live';

type Notice = { kind: 'error' | 'ok'; text: string } | null;

// Progress of one model's download on one node, with the rate and ETA the
// page measures between the frames it receives.
type Rate = { at: number; bytes: number; rate: number };

function useRates(f: Frames) {
  const rates = useRef<Record<string, Rate>>({});
  const now = performance.now();
  for (const [model, perNode] of Object.entries(f.downloads ?? {})) {
    for (const [node, d] of Object.entries<any>(perNode)) {
      const k = `${model} ${node}`;
      const prev = rates.current[k];
      if (!prev || d.done_bytes < prev.bytes) rates.current[k] = { at: now, bytes: d.done_bytes, rate: 0 };
      else if (d.done_bytes > prev.bytes && now > prev.at) {
        const r = ((d.done_bytes - prev.bytes) * 1000) / (now - prev.at);
        rates.current[k] = { at: now, bytes: d.done_bytes, rate: prev.rate ? 0.6 * r + 0.4 * prev.rate : r };
      }
    }
  }
  return rates.current;
}

function Progress({ model, node, d, rate }: { model: string; node: string; d: any; rate?: Rate }) {
  const pct = d.total_bytes ? (100 * d.done_bytes) / d.total_bytes : 0;
  const r = rate?.rate ?? 0;
  const eta = r > 0 && d.total_bytes ? (d.total_bytes - d.done_bytes) / r : undefined;
  return (
    <div class="progress" data-testid="download" data-model={model} data-state={d.state} data-done={d.done_bytes} data-total={d.total_bytes}>
      <div class="small">
        {shortID(node)}: {d.state} {fmtBytes(d.done_bytes)} of {fmtBytes(d.total_bytes)}
        {d.state === 'downloading' && ` · ${fmtBytes(r)}/s${eta !== undefined ? ` · ${Math.ceil(eta)} s left` : ''}`}
        {d.error && <span class="bad-text"> · {d.error}</span>}
      </div>
      <div class="bar" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(pct)} aria-label={`download of ${model}`}>
        <div class="bar-used" style={{ width: `${pct.toFixed(1)}%` }} />
      </div>
    </div>
  );
}

function Preview({ model, onPlaced, onNotice }: { model: any; onPlaced: () => void; onNotice: (n: Notice) => void }) {
  const [ctx, setCtx] = useState('');
  const [req, setReq] = useState<any>(null);
  const [pv, setPv] = useState<any>(null);
  const [busy, setBusy] = useState(false);
  const id = model.model_id;
  const load = async () => {
    onNotice(null);
    try {
      const q = ctx ? `&context=${encodeURIComponent(ctx)}` : '';
      const [r, p] = await Promise.all([
        call('GET', `/models/requirements?model_id=${encodeURIComponent(id)}${q}`),
        call('GET', `/instance/previews?model_id=${encodeURIComponent(id)}`),
      ]);
      setReq(r);
      setPv(p);
    } catch (e: any) {
      onNotice({ kind: 'error', text: e.message });
    }
  };
  useEffect(() => {
    load();
  }, [id]);
  const place = async (width?: number) => {
    setBusy(true);
    onNotice(null);
    try {
      const body: any = { model_id: id };
      if (width) body.min_nodes = width;
      if (ctx) body.context_tokens = Number(ctx);
      const r = await call('POST', '/place_instance', body);
      onNotice({ kind: 'ok', text: `placed ${id} as instance ${shortID(r.instance_id)}` });
      onPlaced();
    } catch (e: any) {
      onNotice({ kind: 'error', text: e.message });
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="preview" data-testid="preview">
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          load();
        }}
      >
        <label>
          Context tokens{' '}
          <input inputMode="numeric" size={8} value={ctx} placeholder="default" onInput={(e) => setCtx((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit">Size</button>
      </form>
      {req && (
        <p class="small">
          Needs {fmtBytes(req.footprint_bytes)} at {req.context_tokens} tokens: weights {fmtBytes(req.weight_bytes)} + KV cache{' '}
          {fmtBytes(req.kv_bytes)} ({req.kv_bytes_per_token} B/token) + overhead.
        </p>
      )}
      {pv?.previews?.map((p: any) => (
        <div class="card sub">
          <div class="row">
            <strong>
              {p.width} node{p.width > 1 ? 's' : ''}
            </strong>
            <span class="small">
              {fmtBytes(p.memory_bytes)} · context up to {p.context_ceiling}
            </span>
            <button disabled={busy} data-testid="place" onClick={() => place(p.width)}>
              Place on {p.width}
            </button>
          </div>
          <table class="small">
            <thead>
              <tr>
                <th>node</th>
                <th>layers</th>
                <th>weights</th>
                <th>KV</th>
                <th>overhead</th>
                <th>total</th>
                <th>available</th>
              </tr>
            </thead>
            <tbody>
              {p.per_node.map((n: any) => {
                const rank = p.ranks.find((r: any) => r.node === n.node);
                return (
                  <tr>
                    <td class="mono">{shortID(n.node)}</td>
                    <td>{rank ? `[${rank.start}, ${rank.end})` : '–'}</td>
                    <td>{fmtBytes(n.weights)}</td>
                    <td>{fmtBytes(n.kv)}</td>
                    <td>{fmtBytes(n.overhead + (n.floor ?? 0))}</td>
                    <td>{fmtBytes(n.total)}</td>
                    <td>{fmtBytes(n.available)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ))}
      {pv && !pv.previews?.length && (
        <button disabled={busy} data-testid="place" onClick={() => place()}>
          Place
        </button>
      )}
    </div>
  );
}

export function Models({ f }: { f: Frames }) {
  const [catalog, setCatalog] = useState<any[]>([]);
  const [notice, setNotice] = useState<Notice>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [ref, setRef] = useState('');
  const [query, setQuery] = useState('');
  const [results, setResults] = useState<any[] | null>(null);
  const [library, setLibrary] = useState<any[]>([]);
  const rates = useRates(f);
  const refresh = async () => {
    try {
      const doc = await call('GET', '/models');
      setCatalog(doc.data ?? []);
      // The short names skulk pull takes, and which of them this node has.
      const lib = await call('GET', '/models/library');
      setLibrary(lib.data ?? []);
    } catch (e: any) {
      setNotice({ kind: 'error', text: e.message });
    }
  };
  // The catalog follows the stream: it is read again when the State or a
  // download changes, not on a timer.
  const dlKey = JSON.stringify(Object.entries(f.downloads ?? {}).map(([m, n]) => [m, Object.values<any>(n).map((d) => d.state)]));
  useEffect(() => {
    refresh();
  }, [f.state?.last_index, dlKey]);

  const act = async (what: () => Promise<any>, ok: string) => {
    setNotice(null);
    try {
      await what();
      setNotice({ kind: 'ok', text: ok });
      refresh();
    } catch (e: any) {
      setNotice({ kind: 'error', text: e.message });
    }
  };
  const add = (r: string) => act(() => call('POST', '/models/add', { ref: r }), `added ${r}`);
  const search = async () => {
    setNotice(null);
    try {
      const doc = await call('GET', `/models/search?q=${encodeURIComponent(query)}&limit=20`);
      setResults(doc.data ?? []);
    } catch (e: any) {
      setNotice({ kind: 'error', text: e.message });
    }
  };
  const instances = Object.entries<any>(f.state?.instances ?? {});
  return (
    <div>
      {notice && (
        <div class={`notice ${notice.kind}`} role={notice.kind === 'error' ? 'alert' : 'status'} data-testid={notice.kind === 'error' ? 'error' : 'ok'}>
          {notice.text}
        </div>
      )}
      <div class="grid2">
        <form
          class="card"
          onSubmit={(e) => {
            e.preventDefault();
            add(ref.trim());
          }}
        >
          <label for="ref">Add from the Hub</label>
          <div class="row">
            <input id="ref" data-testid="ref" placeholder="hf:OWNER/REPO[/FILE][@REV]" value={ref} onInput={(e) => setRef((e.target as HTMLInputElement).value)} />
            <button type="submit">Add</button>
          </div>
        </form>
        <form
          class="card"
          onSubmit={(e) => {
            e.preventDefault();
            search();
          }}
        >
          <label for="q">Search the Hub</label>
          <div class="row">
            <input id="q" data-testid="search" placeholder="qwen" value={query} onInput={(e) => setQuery((e.target as HTMLInputElement).value)} />
            <button type="submit">Search</button>
          </div>
          {results && (
            <ul class="results">
              {results.length === 0 && <li class="muted">nothing found</li>}
              {results.map((r) => (
                <li class="row">
                  <span class="mono">{r.id}</span>
                  <span class="small muted">{r.downloads} downloads</span>
                  <button type="button" onClick={() => add('hf:' + r.id)}>
                    Add
                  </button>
                </li>
              ))}
            </ul>
          )}
        </form>
      </div>
      <details class="card" data-testid="library">
        <summary>
          Library: {library.length} models by short name, as <span class="mono">skulk pull NAME</span> takes them (* the tag a bare name means)
        </summary>
        <table class="library">
          <tbody>
            {library.map((e) => (
              <tr data-testid="library-entry" data-name={e.name}>
                <td class="mono">
                  {e.name}
                  {e.default ? ' *' : ''}
                </td>
                <td class="small">{e.description}</td>
                <td class="small mono" data-testid="library-size">
                  {fmtBytes(e.size_bytes)}
                </td>
                <td>
                  {e.installed ? (
                    <span class="badge good">installed</span>
                  ) : (
                    <button data-testid="library-pull" onClick={() => act(() => call('POST', '/models/pull', { model_id: e.name }), `pulling ${e.name}`)}>
                      Pull
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
      <h3>Catalog</h3>
      <div class="models">
        {catalog.map((m) => {
          const mine = instances.filter(([, i]) => i.model === m.model_id);
          const dls = Object.entries<any>(f.downloads?.[m.model_id] ?? {});
          // An imported model (a local GGUF, no Hub source) was never
          // downloaded and cannot be pulled: its weights are where it was
          // imported, and a stage elsewhere fetches its tensors from there.
          const imported = !m.builtin && !m.source_repository;
          const heldBy: string[] = m.held_by ?? [];
          return (
            <article class="card" data-testid="model" data-model={m.model_id} data-installed={String(!!m.installed)}>
              <header class="row">
                <strong>{m.model_id}</strong>
                <span class="badge" data-testid="source">
                  {m.builtin ? 'built-in' : imported ? 'imported' : 'from the Hub'}
                </span>
                <span class={`badge ${m.installed ? 'good' : ''}`} data-testid="installed">
                  {m.installed ? (imported ? 'imported here' : 'installed') : imported ? 'imported elsewhere' : 'not installed'}
                </span>
                {m.placement && <span class="badge">{m.placement}</span>}
              </header>
              <div class="small muted">
                {m.name ?? ''} {m.architecture && `· ${m.architecture}`} {m.layers ? `· ${m.layers} layers` : ''} · {fmtBytes(m.storage_bytes)}
                {m.source_repository && ` · ${m.source_repository}`}
              </div>
              {!m.installed && imported && (
                <div class="small">
                  imported on {heldBy.length ? heldBy.map(shortID).join(', ') : 'another node'}; a placement here fetches its tensors from there
                </div>
              )}
              {!m.installed && !imported && m.reason && <div class="small">{m.reason}</div>}
              {dls.map(([node, d]) => (
                <Progress model={m.model_id} node={node} d={d} rate={rates[`${m.model_id} ${node}`]} />
              ))}
              <div class="row actions">
                <button aria-expanded={open === m.model_id} onClick={() => setOpen(open === m.model_id ? null : m.model_id)}>
                  {open === m.model_id ? 'Hide preview' : 'Preview & place'}
                </button>
                {!m.installed && !imported && (
                  <button data-testid="pull" onClick={() => act(() => call('POST', '/models/pull', { model_id: m.model_id }), `pulling ${m.model_id}`)}>
                    Pull
                  </button>
                )}
                {!m.builtin && (
                  <button
                    class="danger"
                    onClick={() => {
                      if (confirm(`Remove ${m.model_id} and its files?`))
                        act(() => call('DELETE', `/models/${encodeURIComponent(m.model_id)}?files=true`), `removed ${m.model_id}`);
                    }}
                  >
                    Remove
                  </button>
                )}
              </div>
              {mine.length > 0 && (
                <ul class="inst-list">
                  {mine.map(([id, i]) => (
                    <li class="row">
                      <span class="mono">{shortID(id)}</span>
                      <span class={`badge st-${i.status}`}>{i.status}</span>
                      <button class="danger" onClick={() => act(() => call('DELETE', `/instance/${id}`), `deleted instance ${shortID(id)}`)}>
                        Delete instance
                      </button>
                    </li>
                  ))}
                </ul>
              )}
              {open === m.model_id && <Preview model={m} onPlaced={refresh} onNotice={setNotice} />}
            </article>
          );
        })}
      </div>
    </div>
  );
}
