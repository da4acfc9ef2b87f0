// The console's entry point: the key form, the catalog, the prompt panel, the live view,
// the API reference.

import { ApiError, getKey, setKey } from "./api.js";
import { Catalog } from "./catalog.js";
import { LiveView } from "./live.js";
import { loadApiDocs } from "./api_docs.js";
import { setupPrompt } from "./prompt.js";
import { finishSignIn, signIn, signInOffer } from "./sign_in.js";

const status = document.getElementById("status");
const keyInput = document.getElementById("api-key");
const catalog = new Catalog(status);

async function loadCatalog() {
  status.textContent = "Loading the catalog…";
  try {
    await catalog.load();
    status.textContent = `${catalog.functions.length} functions${getKey() ? " for this key" : ""}.`;
  } catch (error) {
    if (!(error instanceof ApiError)) {
      status.textContent = `The gateway did not answer: ${error.message}`;
      return;
    }
    status.textContent = error.status === 401
      ? `This gateway needs an API key (${error.message}).`
      : `The catalog did not load: ${error.message}`;
    if (error.status === 401) keyInput.focus();
  }
}

keyInput.value = getKey();
document.getElementById("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  setKey(keyInput.value.trim());
  loadCatalog();
});
document.getElementById("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  catalog.search(document.getElementById("search").value);
});
document.getElementById("search-clear").addEventListener("click", () => {
  document.getElementById("search").value = "";
  catalog.search("");
});

/** Offer the issuer's sign-in when the gateway has one; take the token it sent back, if any. */
async function setupSignIn() {
  const button = document.getElementById("sign-in");
  const offer = await signInOffer().catch(() => null);
  if (offer) {
    button.textContent = `Sign in at ${new URL(offer.issuer).host}`;
    button.hidden = false;
    button.addEventListener("click", () => signIn(offer));
  }
  try {
    const token = await finishSignIn();
    if (token) {
      setKey(token);
      keyInput.value = token;
    }
  } catch (error) {
    status.textContent = `Signing in failed: ${error.message}`;
    throw error;
  }
}

setupPrompt((name, args) => catalog.open(name, args));
new LiveView();
loadApiDocs();
setupSignIn().then(loadCatalog, () => {});
