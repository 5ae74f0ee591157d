import { useEffect, useState } from 'preact/hooks';
import { fmtBytes, shortID } from '../api';
import type { Departure, Frames, Remembered } from '../live';

const palette = 8; // instance colours, in CSS as .band-0 … .band-7

// health describes a node for its badges: ok, or the reasons it is not
// (unreachable, telemetry_missing, version_mismatch, …) from the State's
// nodeHealth and the diagnostics' reachability.
function health(id: string, f: Frames): { status: string; reasons: string[] } {
  const h = f.state?.nodeHealth?.[id];
  const d = (f.cluster?.nodes ?? []).find((n: any) => n.nodeId === id);
  const reasons: string[] = [...(h?.reasons ?? [])];
  if (d && !d.reachable && !reasons.includes('unreachable')) reasons.unshift('unreachable');
  for (const p of h?.persistence ?? []) reasons.push(`${p.store}: ${p.problem}`);
  const status = reasons.includes('unreachable') ? 'unreachable' : h?.status ?? (d ? 'ok' : 'unknown');
  return { status, reasons };
}

export function nodeIDs(f: Frames): string[] {
  const set = new Set<string>();
  for (const id of Object.keys(f.state?.nodes ?? {})) set.add(id);
  for (const n of f.cluster?.nodes ?? []) set.add(n.nodeId);
  for (const n of f.nodes ?? []) set.add(n.node);
  return [...set].sort();
}

// A lost node stays on the topology, greyed, while the node's departed
// frame names it (15 minutes after it left, the timeline's window), until
// it comes back (it is a member again, and its card is live) or the
// operator dismisses it: a dismissal holds for this tab and this loss
// (a later loss of the same node shows again).
const dismissedKey = 'skulk.dismissedLost';

function loadDismissed(): Record<string, string> {
  try {
    return JSON.parse(sessionStorage.getItem(dismissedKey) ?? '{}');
  } catch {
    return {};
  }
}

export function lostNodes(f: Frames, live: string[], dismissed: Record<string, string>): Departure[] {
  const here = new Set(live);
  return (f.departed ?? []).filter((d) => !here.has(d.node) && dismissed[d.node] !== d.since);
}

// why words a departure's last entry.
function why(d: Departure): string {
  switch (d.kind) {
    case 'MemberFailed':
      return 'stopped answering: the failure detector declared it dead';
    case 'MemberLeave':
      return 'left the cluster';
    case 'NodeLeft':
      return 'removed from the cluster by the master';
  }
  return d.detail;
}

function clock(at: Date): string {
  return at.toLocaleTimeString([], { hour12: false, hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  return `${Math.floor(m / 60)} h ${m % 60} min ago`;
}

// useNow returns the time, and re-renders every period while on is true
// (a lost card's "… ago").
function useNow(on: boolean, period: number): number {
  const [, tick] = useState(0);
  useEffect(() => {
    if (!on) return;
    const t = window.setInterval(() => tick((n) => n + 1), period);
    return () => clearInterval(t);
  }, [on, period]);
  return Date.now();
}

function LostCard({ d, last, now, onDismiss }: { d: Departure; last?: Remembered; now: number; onDismiss: () => void }) {
  const since = new Date(d.since);
  const diag = last?.diag ?? {};
  const r = last?.reading;
  return (
    <article class="card node lost" data-testid="node-card" data-node={d.node} data-role="none" data-health="lost" aria-label={`node ${shortID(d.node)}, lost`}>
      <header class="row">
        <strong class="mono" title={d.node}>
          {shortID(d.node)}
        </strong>
        <span class="badge" data-testid="health">
          lost
        </span>
        <button class="link small dismiss" data-testid="dismiss" onClick={onDismiss}>
          Dismiss
        </button>
      </header>
      <p class="small" data-testid="lost-since">
        lost since{' '}
        <time dateTime={d.since} title={since.toLocaleString()}>
          {clock(since)}
        </time>{' '}
        ({ago(now - since.getTime())})
      </p>
      <p class="small" title={d.detail}>
        {why(d)}
      </p>
      <dl class="facts">
        <dt>Last address</dt>
        <dd class="mono">{(diag.apiAddrs ?? []).join(', ') || '–'}</dd>
        <dt>CPU</dt>
        <dd>{r?.cpu?.cores ?? diag.cores ?? '–'} cores</dd>
        <dt>Version</dt>
        <dd>{diag.version || '–'}</dd>
      </dl>
    </article>
  );
}

function MemoryBar({ r }: { r: any }) {
  if (!r || !r.total_bytes) return <div class="muted">no memory reading yet</div>;
  const total = r.total_bytes;
  const used = Math.max(0, total - r.available_bytes);
  const placed = Math.min(total, r.committed_bytes ?? 0);
  const pct = (n: number) => `${Math.max(0, Math.min(100, (100 * n) / total)).toFixed(1)}%`;
  return (
    <div>
      <div
        class="bar"
        role="meter"
        aria-label="memory in use"
        aria-valuemin={0}
        aria-valuemax={total}
        aria-valuenow={used}
      >
        <div class="bar-used" style={{ width: pct(used) }} />
        <div class="bar-placed" style={{ width: pct(placed) }} title="held by placements" />
      </div>
      <div class="small">
        {fmtBytes(used)} used of {fmtBytes(total)} · {fmtBytes(placed)} placed · {fmtBytes(r.available_bytes)} free
        {r.memory_budget ? ` · budget ${fmtBytes(r.memory_budget)}` : ''}
      </div>
    </div>
  );
}

function Links({ f, ids }: { f: Frames; ids: string[] }) {
  const down = new Set(ids.filter((id) => health(id, f).status === 'unreachable'));
  const rtt: Record<string, Record<string, number>> = {};
  for (const n of f.nodes ?? []) rtt[n.node] = n.rtt_ms ?? {};
  const rows: [string, string, number | undefined][] = [];
  for (let i = 0; i < ids.length; i++)
    for (let j = i + 1; j < ids.length; j++) {
      const a = rtt[ids[i]]?.[ids[j]];
      const b = rtt[ids[j]]?.[ids[i]];
      const v = a !== undefined && b !== undefined ? (a + b) / 2 : a ?? b;
      rows.push([ids[i], ids[j], v]);
    }
  if (!rows.length) return null;
  return (
    <section aria-label="links">
      <h3>Links</h3>
      <ul class="links">
        {rows.map(([a, b, v]) => (
          <li data-testid="link">
            <span class="mono">{shortID(a)}</span> ↔ <span class="mono">{shortID(b)}</span>{' '}
            {down.has(a) || down.has(b) ? (
              <span class="badge bad">down</span>
            ) : (
              <span class="badge">{v === undefined ? 'not measured yet' : `${v.toFixed(2)} ms`}</span>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Instances({ f, ids }: { f: Frames; ids: string[] }) {
  const insts = Object.entries<any>(f.state?.instances ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (!insts.length) return <p class="muted">No instances placed. Place one from the Models panel.</p>;
  return (
    <section aria-label="instances">
      <h3>Instances</h3>
      {insts.map(([id, inst], k) => {
        const layers = inst.layers || Math.max(...inst.placement.map((s: any) => s.layer_end));
        return (
          <div class="instance" data-testid="instance" data-model={inst.model} data-status={inst.status} data-ranks={inst.placement.length}>
            <div class="row">
              <strong>{inst.model}</strong>
              <span class="mono small">{shortID(id)}</span>
              <span class={`badge st-${inst.status}`}>{inst.status}</span>
              <span class="small muted">{inst.context_tokens} tokens of context</span>
            </div>
            {/* The bar's segments are as wide as their layer ranges and carry
                only the rank's number; the key under the bar names each
                rank's node and layers, on as many lines as the width needs
                (one per rank on a phone), so no label is cut or overlaps. */}
            <div class="bands" aria-hidden="true">
              {inst.placement.map((s: any, rank: number) => (
                <div
                  class={`band band-${k % palette} shade-${rank % 2}`}
                  style={{ flexGrow: Math.max(1, s.layer_end - s.layer_start) }}
                  title={`rank ${rank} on ${s.node}: layers [${s.layer_start}, ${s.layer_end})`}
                >
                  {rank}
                </div>
              ))}
            </div>
            <ol class="rank-key" aria-label={`ranks of instance ${id}`}>
              {inst.placement.map((s: any, rank: number) => (
                <li data-testid="rank-label" title={s.node}>
                  <span class={`swatch band-${k % palette} shade-${rank % 2}`}>{rank}</span>
                  <span class="mono">{shortID(s.node)}</span>
                  <span>
                    layers [{s.layer_start}, {s.layer_end})
                    {s.holds_embedding ? ' · embedding' : ''}
                    {s.holds_head ? ' · head' : ''}
                  </span>
                </li>
              ))}
            </ol>
            <div class="small muted">
              {layers} layers across {new Set(inst.placement.map((s: any) => s.node)).size} of {ids.length} nodes
              {(inst.runners ?? []).some((r: any) => r.reason) &&
                ' · ' + inst.runners.filter((r: any) => r.reason).map((r: any) => r.reason).join('; ')}
            </div>
          </div>
        );
      })}
    </section>
  );
}

export function Topology({ f, remembered = {} }: { f: Frames; remembered?: Record<string, Remembered> }) {
  const ids = nodeIDs(f);
  const [dismissed, setDismissed] = useState(loadDismissed);
  const lost = lostNodes(f, ids, dismissed);
  const now = useNow(lost.length > 0, 10000);
  const dismiss = (d: Departure) => {
    // Only the departures still named are kept: a node that came back
    // and was lost again shows again.
    const next: Record<string, string> = { [d.node]: d.since };
    for (const x of f.departed ?? []) if (dismissed[x.node] === x.since) next[x.node] = x.since;
    sessionStorage.setItem(dismissedKey, JSON.stringify(next));
    setDismissed(next);
  };
  const readings: Record<string, any> = {};
  for (const r of f.nodes ?? []) readings[r.node] = r;
  const diag: Record<string, any> = {};
  for (const d of f.cluster?.nodes ?? []) diag[d.nodeId] = d;
  const master = f.state?.master || f.cluster?.masterNodeId;
  return (
    <div>
      <p class="small muted">
        {ids.length} node{ids.length === 1 ? '' : 's'}
        {lost.length > 0 && ` · ${lost.length} lost`} · master {master ? shortID(master) : 'not elected'} · term {f.state?.term ?? '–'}
        {f.cluster?.versionStatus === 'mismatch' && <span class="badge bad"> version mismatch</span>}
      </p>
      <div class="cards">
        {ids.map((id) => {
          const d = diag[id] ?? {};
          const r = readings[id];
          const h = health(id, f);
          const role = id === master ? 'master' : d.role || 'follower';
          return (
            <article class={`card node ${h.status}`} data-testid="node-card" data-node={id} data-role={role} data-health={h.status}>
              <header class="row">
                <strong class="mono" title={id}>
                  {shortID(id)}
                </strong>
                <span class={`badge role-${role}`}>{role}</span>
                {id === f.self?.node && <span class="badge">this node</span>}
                <span class={`badge ${h.status === 'ok' ? 'good' : 'bad'}`} data-testid="health">
                  {h.status}
                </span>
              </header>
              {h.reasons.length > 0 && (
                <ul class="reasons" aria-label="health reasons">
                  {h.reasons.map((x) => (
                    <li>{x}</li>
                  ))}
                </ul>
              )}
              <dl class="facts">
                <dt>Address</dt>
                <dd class="mono">{(d.apiAddrs ?? []).join(', ') || '–'}</dd>
                <dt>CPU</dt>
                <dd>
                  {r?.cpu?.cores ?? '–'} cores · {r?.kernels || 'kernels unknown'}
                </dd>
                <dt>Load</dt>
                <dd>{r?.cpu?.load1 !== undefined ? r.cpu.load1.toFixed(2) : '–'}</dd>
                <dt>Runners</dt>
                <dd>
                  {r?.runners ?? 0} of {r?.max_instances || '–'}
                </dd>
                <dt>Version</dt>
                <dd>{d.version || '–'}</dd>
              </dl>
              <MemoryBar r={r} />
            </article>
          );
        })}
        {lost.map((d) => (
          <LostCard d={d} last={remembered[d.node]} now={now} onDismiss={() => dismiss(d)} />
        ))}
      </div>
      {(f.cluster?.refused ?? []).length > 0 && (
        <section aria-label="refused peers">
          <h3>Refused peers</h3>
          <ul>
            {f.cluster.refused.map((x: any) => (
              <li>
                <span class="mono">{x.addr}</span>: {x.reason}
              </li>
            ))}
          </ul>
        </section>
      )}
      <Links f={f} ids={ids} />
      <Instances f={f} ids={ids} />
    </div>
  );
}
