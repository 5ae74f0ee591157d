import type { ComponentChild } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, apiKey, call, setApiKey } from '../api';

export type Theme = 'system' | 'light' | 'dark';

// SignIn asks for the API key; a key the node refuses is not kept. It is
// the page's one wording of the prompt: reason is 'refused' when the key
// this tab kept stopped working.
export function SignIn({ reason, onSignedIn }: { reason?: string; onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card signin"
      data-testid="signin"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError('');
        try {
          await call('GET', '/v1/diagnostics/cluster', undefined, undefined, key.trim());
          setApiKey(key.trim());
          setKey('');
          onSignedIn();
        } catch (err) {
          setError(err instanceof ApiError ? err.message : String(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>Sign in</h2>
      <p data-testid="signin-why">
        {reason === 'refused' ? 'This node refused the API key this tab kept. Enter a valid key.' : 'This node requires an API key.'}
      </p>
      <label for="key">API key</label>
      <div class="row">
        <input id="key" data-testid="key" type="password" autocomplete="current-password" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} required />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </div>
      {error && (
        <div class="notice error" role="alert" data-testid="signin-error">
          {error}
        </div>
      )}
      <p class="small muted">The key stays in this tab's session storage and is sent as a bearer token.</p>
    </form>
  );
}

export function Settings({
  theme,
  setTheme,
  onSignOut,
  signIn,
}: {
  theme: Theme;
  setTheme: (t: Theme) => void;
  onSignOut: () => void;
  // signIn, when the node needs a key the tab lacks, takes the place of
  // the key's card.
  signIn?: ComponentChild;
}) {
  return (
    <div class="grid2">
      <fieldset class="card">
        <legend>Theme</legend>
        {(['system', 'light', 'dark'] as Theme[]).map((t) => (
          <label class="block">
            <input type="radio" name="theme" value={t} checked={theme === t} onChange={() => setTheme(t)} /> {t === 'system' ? 'follow the system' : t}
          </label>
        ))}
      </fieldset>
      {signIn ?? (
        <div class="card">
          <h3>API key</h3>
          {apiKey() ? (
            <>
              <p>Signed in with a key kept in this tab's session storage.</p>
              <button
                onClick={() => {
                  setApiKey('');
                  onSignOut();
                }}
              >
                Sign out
              </button>
            </>
          ) : (
            <p>No key: the node serves this page without one (loopback, or an open API).</p>
          )}
        </div>
      )}
    </div>
  );
}
