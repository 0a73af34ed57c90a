// The sign-in page's passkeys: the browser's own picker behind the "sign in with a passkey"
// button, and its autofill on the address field (conditional mediation), so that a person with
// a passkey signs in without typing anything. Plain script, no build step: the page works
// without it, and it adds nothing a browser without WebAuthn could not use.
(() => {
  'use strict';
  const button = document.getElementById('passkey');
  const status = document.getElementById('passkey-status');
  if (!button || !status || !window.PublicKeyCredential || !navigator.credentials) return;
  button.hidden = false;

  const base64url = (buffer) =>
    btoa(String.fromCharCode(...new Uint8Array(buffer)))
      .replace(/\+/g, '-')
      .replace(/\//g, '_')
      .replace(/=+$/, '');
  const bytes = (text) =>
    Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

  // The page carries the messages in its own language (auth's catalogue, crates/auth/src/i18n.rs).
  const messages = {
    PASSKEY_NOT_FOUND: status.dataset.notFound,
    AUTHENTICATION_FAILED: status.dataset.failed,
    CHALLENGE_NOT_FOUND: status.dataset.expired,
    RATE_LIMITED: status.dataset.rateLimited,
  };
  const show = (code) => {
    status.textContent = messages[code] ?? status.dataset.other ?? '';
    status.hidden = false;
  };

  // The autofill request waits in the background; the button's request replaces it.
  let waiting = null;

  async function signIn(conditional) {
    const options = await fetch('/api/auth/passkey/generate-authenticate-options', {
      credentials: 'same-origin',
    });
    const o = await options.json().catch(() => ({}));
    if (!options.ok) throw Object.assign(new Error('options'), { code: o.code });
    const publicKey = {
      ...o,
      challenge: bytes(o.challenge),
      allowCredentials: (o.allowCredentials ?? []).map((c) => ({ ...c, id: bytes(c.id) })),
    };
    const controller = new AbortController();
    if (waiting) waiting.abort();
    waiting = conditional ? controller : null;
    const credential = await navigator.credentials.get({
      publicKey,
      signal: controller.signal,
      ...(conditional ? { mediation: 'conditional' } : {}),
    });
    if (!credential) return;
    const r = credential.response;
    const response = {
      id: credential.id,
      rawId: base64url(credential.rawId),
      type: credential.type,
      authenticatorAttachment: credential.authenticatorAttachment ?? undefined,
      clientExtensionResults: credential.getClientExtensionResults(),
      response: {
        clientDataJSON: base64url(r.clientDataJSON),
        authenticatorData: base64url(r.authenticatorData),
        signature: base64url(r.signature),
        userHandle: r.userHandle ? base64url(r.userHandle) : undefined,
      },
    };
    const answer = await fetch('/api/auth/passkey/verify-authentication', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ response }),
    });
    if (!answer.ok) {
      const e = await answer.json().catch(() => ({}));
      throw Object.assign(new Error('verify'), { code: e.code });
    }
    location.assign(button.dataset.next || '/');
  }

  const failed = (error) => {
    // Cancelled by the person, or replaced by the button's request: nothing to say.
    if (error && (error.name === 'AbortError' || error.name === 'NotAllowedError')) return;
    show(error && error.code);
  };

  button.addEventListener('click', () => {
    status.hidden = true;
    signIn(false).catch(failed);
  });
  if (PublicKeyCredential.isConditionalMediationAvailable) {
    PublicKeyCredential.isConditionalMediationAvailable()
      .then((available) => available && signIn(true))
      .catch(failed);
  }
})();
