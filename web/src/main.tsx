import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { shortID } from './api';
import { Live, useLive } from './live';
import { Activity } from './panels/Activity';
import { Chat } from './panels/Chat';
import { Models } from './panels/Models';
import { Settings, SignIn, type Theme } from './panels/Settings';
import { Topology } from './panels/Topology';
import './style.css';

const panels = ['topology', 'models', 'chat', 'activity', 'settings'] as const;
type Panel = (typeof panels)[number];
const titles: Record<Panel, string> = { topology: 'Topology', models: 'Models', chat: 'Chat', activity: 'Activity', settings: 'Settings' };

function fromHash(): Panel {
  const h = location.hash.slice(1) as Panel;
  return panels.includes(h) ? h : 'topology';
}

function applyTheme(t: Theme) {
  if (t === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
}

function App() {
  const live = useMemo(() => new Live(), []);
  const [f, link] = useLive(live);
  const [panel, setPanel] = useState<Panel>(fromHash);
  const [theme, setThemeState] = useState<Theme>(() => (localStorage.getItem('skulk.theme') as Theme) || 'system');
  const setTheme = (t: Theme) => {
    setThemeState(t);
    localStorage.setItem('skulk.theme', t);
  };
  useEffect(() => applyTheme(theme), [theme]);
  useEffect(() => {
    live.connect();
    const onHash = () => setPanel(fromHash());
    addEventListener('hashchange', onHash);
    return () => {
      live.stop();
      removeEventListener('hashchange', onHash);
    };
  }, [live]);
  const go = (p: Panel) => {
    setPanel(p);
    history.replaceState(null, '', '#' + p);
  };
  // Arrow keys move between tabs, as the WAI-ARIA tabs pattern has it.
  const onTabKey = (e: KeyboardEvent) => {
    const i = panels.indexOf(panel);
    let j = -1;
    if (e.key === 'ArrowRight') j = (i + 1) % panels.length;
    else if (e.key === 'ArrowLeft') j = (i + panels.length - 1) % panels.length;
    else if (e.key === 'Home') j = 0;
    else if (e.key === 'End') j = panels.length - 1;
    if (j < 0) return;
    e.preventDefault();
    go(panels[j]);
    document.getElementById(`tab-${panels[j]}`)?.focus();
  };

  const needKey = link.status === 'auth';
  return (
    <>
      <header class="top">
        <div class="brand">
          <svg viewBox="0 0 32 32" width="22" height="22" aria-hidden="true">
            <rect width="32" height="32" rx="7" class="logo-bg" />
            <path d="M8 22 L16 8 L24 22 Z" class="logo-fg" />
          </svg>
          <span>Skulk</span>
          {f.self && <span class="small muted mono">node {shortID(f.self.node)} · {f.self.version}</span>}
        </div>
        <span class={`link-status ${link.status}`} data-testid="link-status" role="status">
          {link.status === 'live' ? 'live' : link.status === 'offline' ? 'reconnecting…' : link.status === 'auth' ? 'key needed' : link.status}
        </span>
      </header>
      <nav role="tablist" aria-label="panels" onKeyDown={onTabKey}>
        {panels.map((p) => (
          <button
            role="tab"
            id={`tab-${p}`}
            aria-selected={panel === p}
            aria-controls={`panel-${p}`}
            tabIndex={panel === p ? 0 : -1}
            onClick={() => go(p)}
          >
            {titles[p]}
          </button>
        ))}
      </nav>
      <main>
        <div id={`panel-${panel}`} role="tabpanel" aria-labelledby={`tab-${panel}`} data-testid={`panel-${panel}`} tabIndex={-1}>
          {link.status === 'forbidden' && (
            <div class="notice error" role="alert" data-testid="forbidden">
              {link.message}
            </div>
          )}
          {link.status === 'offline' && link.message && (
            <div class="notice" role="status">
              Lost the node's stream ({link.message}); reconnecting.
            </div>
          )}
          {needKey && panel !== 'settings' ? (
            <SignIn reason={link.message} onSignedIn={() => live.connect()} />
          ) : (
            <>
              {panel === 'topology' && <Topology f={f} remembered={live.remembered} />}
              {panel === 'models' && <Models f={f} />}
              {panel === 'chat' && <Chat f={f} />}
              {panel === 'activity' && <Activity f={f} />}
              {panel === 'settings' && (
                <Settings
                  theme={theme}
                  setTheme={setTheme}
                  onSignOut={() => live.connect()}
                  signIn={needKey ? <SignIn reason={link.message} onSignedIn={() => live.connect()} /> : undefined}
                />
              )}
            </>
          )}
        </div>
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
