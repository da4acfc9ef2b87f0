// Signing in at the gateway's OAuth issuer: the authorization code flow with PKCE (RFC 7636)
// for a public client, as OAuth 2.1 has browser apps do it. The gateway says where the issuer's
// endpoints are (sign-in.json, `{}` when it offers none); the page goes there, comes back to
// itself with a code, and trades the code and its verifier for an access token, which is then
// used like a key typed in. The verifier and the state stay in this tab's sessionStorage.

const PENDING = "toolmesh.console.sign-in";

function base64url(bytes) {
  let text = "";
  for (const byte of bytes) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText() {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** The console's own address without query or fragment: the redirect URI the issuer knows. */
function redirectUri() {
  return location.origin + location.pathname;
}

/** How to sign in here, or null when the gateway offers no sign-in. */
export async function signInOffer() {
  const response = await fetch(new URL("sign-in.json", document.baseURI), { cache: "no-store" });
  const offer = response.ok ? await response.json() : {};
  return offer.client_id ? offer : null;
}

/** Go to the issuer to sign in (the page is left). */
export async function signIn(offer) {
  const verifier = randomText();
  const state = randomText();
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, offer }));
  const url = new URL(offer.authorization_endpoint);
  const params = {
    response_type: "code",
    client_id: offer.client_id,
    redirect_uri: redirectUri(),
    scope: offer.scope,
    resource: offer.resource,
    state,
    code_challenge: base64url(new Uint8Array(digest)),
    code_challenge_method: "S256",
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  location.assign(url.toString());
}

/** After the issuer sent the browser back: the access token for the code in the address, or
 * null when the address holds none. Throws with the issuer's reason when it refused. */
export async function finishSignIn() {
  const query = new URLSearchParams(location.search);
  if (!query.has("code") && !query.has("error")) return null;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  // The code is single-use and not for the address bar or the history.
  history.replaceState(null, "", redirectUri() + location.hash);
  if (query.has("error")) {
    throw new Error(`the issuer refused: ${query.get("error_description") || query.get("error")}`);
  }
  if (!pending || query.get("state") !== pending.state) {
    throw new Error("this sign-in was not started from this tab (state does not match)");
  }
  const response = await fetch(pending.offer.token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    credentials: "omit",
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: query.get("code"),
      redirect_uri: redirectUri(),
      client_id: pending.offer.client_id,
      code_verifier: pending.verifier,
      resource: pending.offer.resource,
    }),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok || !answer.access_token) {
    throw new Error(`the issuer gave no token: ${answer.error_description || answer.error || response.status}`);
  }
  return answer.access_token;
}
