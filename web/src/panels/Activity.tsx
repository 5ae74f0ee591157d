import { shortID } from '../api';
import type { Frames } from '../live';

function Chart({ samples }: { samples: { at: string; tokens_per_sec: number }[] }) {
  const w = 600;
  const h = 120;
  if (!samples.length) return <p class="muted">No samples yet: the chart fills in every 5 seconds.</p>;
  const max = Math.max(1, ...samples.map((s) => s.tokens_per_sec));
  const t0 = Date.parse(samples[0].at);
  const t1 = Math.max(t0 + 1, Date.parse(samples[samples.length - 1].at));
  const pts = samples.map((s) => `${(((Date.parse(s.at) - t0) / (t1 - t0)) * w).toFixed(1)},${(h - (s.tokens_per_sec / max) * (h - 8)).toFixed(1)}`);
  const last = samples[samples.length - 1].tokens_per_sec;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${w} ${h}`} preserveAspectRatio="none" role="img" aria-label={`tokens per second, latest ${last.toFixed(1)}, peak ${max.toFixed(1)}`}>
        <polyline points={`0,${h} ${pts.join(' ')} ${w},${h}`} class="area" />
        <polyline points={pts.join(' ')} class="line" />
      </svg>
      <figcaption class="small muted">
        tokens/s generated for this node's API over the last {Math.round((t1 - t0) / 60000) || '<1'} min · now {last.toFixed(1)} · peak{' '}
        {max.toFixed(1)}
      </figcaption>
    </figure>
  );
}

export function Activity({ f }: { f: Frames }) {
  const insts = Object.entries<any>(f.state?.instances ?? {});
  const inflight = f.activity?.in_flight ?? {};
  return (
    <div>
      <h3>Requests in flight</h3>
      {insts.length === 0 ? (
        <p class="muted">No instances.</p>
      ) : (
        <table data-testid="inflight">
          <thead>
            <tr>
              <th>instance</th>
              <th>model</th>
              <th>this node</th>
            </tr>
          </thead>
          <tbody>
            {insts.map(([id, i]) => (
              <tr>
                <td class="mono">{shortID(id)}</td>
                <td>{i.model}</td>
                <td>{inflight[id] ?? 0}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Tokens per second</h3>
      <Chart samples={f.activity?.samples ?? []} />
      <h3>Control-plane events</h3>
      <ol class="timeline" data-testid="timeline">
        {[...(f.timeline?.events ?? [])].reverse().map((e) => (
          <li>
            <time dateTime={e.at}>{new Date(e.at).toLocaleTimeString()}</time> <span class="badge">{e.kind}</span>{' '}
            {e.node && <span class="mono small">{shortID(e.node)}</span>} {e.detail}
          </li>
        ))}
      </ol>
    </div>
  );
}
