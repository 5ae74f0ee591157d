// The live view of the cluster: one stream (GET /v1/dashboard/events) whose
// frames replace the page's copy of each document as they change.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, sse } from './api';

export interface Frames {
  self?: { node: string; version: string; commit: string };
  state?: any;
  cluster?: any;
  nodes?: any[];
  downloads?: Record<string, Record<string, any>>;
  activity?: { in_flight: Record<string, number>; generated_tokens: number; samples: { at: string; tokens_per_sec: number }[] };
  timeline?: { events: { at: string; kind: string; node?: string; detail: string }[] };
}

// link: connecting, live, offline (retrying), auth (a key is needed or was
// refused), forbidden (the node refuses this client whatever the key).
export type Link = { status: 'connecting' | 'live' | 'offline' | 'auth' | 'forbidden'; message?: string };

type Listener = () => void;

export class Live {
  frames: Frames = {};
  link: Link = { status: 'connecting' };
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
      if (this.link.status !== 'live') this.link = { status: 'live' };
      this.emit();
    })
      .then(() => this.lost('the node closed the stream'))
      .catch((e) => {
        if (ctrl.signal.aborted) return;
        if (e instanceof ApiError && e.status === 401) this.setLink({ status: 'auth', message: e.message });
        else if (e instanceof ApiError && e.status === 403) this.setLink({ status: 'forbidden', message: e.message });
        else this.lost(e instanceof Error ? e.message : String(e));
      });
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
