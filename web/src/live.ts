// The live view of the cluster: one stream (GET /v1/dashboard/events) whose
// frames replace the page's copy of each document as they change.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiKey, setApiKey, sse } from './api';

export interface ChatDefaults {
  max_tokens: number;
  temperature: number;
  top_p: number;
}

// Departure is a node that left the cluster within the node's window (15
// minutes) and has not come back: the departed frame, from the node's
// timeline.
export interface Departure {
  node: string;
  since: string;
  kind: string;
  detail: string;
}

export interface Frames {
  self?: { node: string; version: string; commit: string; chat?: ChatDefaults };
  state?: any;
  cluster?: any;
  nodes?: any[];
  downloads?: Record<string, Record<string, any>>;
  activity?: { in_flight: Record<string, number>; generated_tokens: number; samples: { at: string; tokens_per_sec: number }[] };
  timeline?: { events: { at: string; kind: string; node?: string; detail: string }[] };
  departed?: Departure[];
}

// Remembered is what the page last saw of a node while it was a member:
// a lost node's card shows it after the frames no longer carry the node.
export interface Remembered {
  diag?: any;
  reading?: any;
}

// link: connecting, live, offline (retrying), auth (a key is needed, or the
// kept one was refused: message is 'needed' or 'refused'), forbidden (the
// node refuses this client whatever the key).
export type Link = { status: 'connecting' | 'live' | 'offline' | 'auth' | 'forbidden'; message?: string };

type Listener = () => void;

export class Live {
  frames: Frames = {};
  link: Link = { status: 'connecting' };
  // remembered holds, for this page's life, each node's latest cluster
  // diagnostics and telemetry.
  remembered: Record<string, Remembered> = {};
  private listeners = new Set<Listener>();
  private ctrl?: AbortController;
  private retry?: number;

  subscribe(f: Listener): () => void {
    this.listeners.add(f);
    return () => this.listeners.delete(f);
  }

  private emit() {
    for (const f of this.listeners) f();
  }

  private setLink(l: Link) {
    this.link = l;
    this.emit();
  }

  connect() {
    this.ctrl?.abort();
    clearTimeout(this.retry);
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    this.setLink({ status: 'connecting' });
    sse('GET', '/v1/dashboard/events', undefined, ctrl.signal, (event, data) => {
      try {
        this.frames = { ...this.frames, [event]: JSON.parse(data) };
      } catch {
        return;
      }
      this.remember(event);
      if (this.link.status !== 'live') this.link = { status: 'live' };
      this.emit();
    })
      .then(() => this.lost('the node closed the stream'))
      .catch((e) => {
        if (ctrl.signal.aborted) return;
        if (e instanceof ApiError && e.status === 401) {
          // The page words the key prompt itself (the node's refusal
          // speaks to CLI users); message says whether a kept key was
          // refused, which is then dropped.
          const refused = apiKey() !== '';
          if (refused) setApiKey('');
          this.setLink({ status: 'auth', message: refused ? 'refused' : 'needed' });
        }
        else if (e instanceof ApiError && e.status === 403) this.setLink({ status: 'forbidden', message: e.message });
        else this.lost(e instanceof Error ? e.message : String(e));
      });
  }

  private remember(event: string) {
    const r = this.remembered;
    if (event === 'cluster')
      for (const d of this.frames.cluster?.nodes ?? []) if (d.reachable) r[d.nodeId] = { ...r[d.nodeId], diag: d };
    if (event === 'nodes') for (const n of this.frames.nodes ?? []) r[n.node] = { ...r[n.node], reading: n };
  }

  private lost(message: string) {
    if (this.ctrl?.signal.aborted) return;
    this.setLink({ status: 'offline', message });
    this.retry = window.setTimeout(() => this.connect(), 2000);
  }

  stop() {
    this.ctrl?.abort();
    clearTimeout(this.retry);
  }
}

export function useLive(live: Live): [Frames, Link] {
  const [, set] = useState(0);
  useEffect(() => live.subscribe(() => set((n) => n + 1)), [live]);
  return [live.frames, live.link];
}
