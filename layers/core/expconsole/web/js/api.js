// The API client: the console key lives in sessionStorage and travels only in the SERVICE-API-KEY header.
const KEY = "expconsole.key";

export function getKey() { return sessionStorage.getItem(KEY); }
export function setKey(key) { sessionStorage.setItem(KEY, key); }
export function clearKey() { sessionStorage.removeItem(KEY); }

/** An answer that is not 2xx: `status`, `message` and the API's `errors` ([{field, message}]). */
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.errors = (body && body.errors) || [];
  }
}

// Requests of the page being shown: a new navigation aborts them, so a slow answer for the page
// just left can never be drawn over the new one.
let navigation = new AbortController();
export function newNavigation() {
  navigation.abort();
  navigation = new AbortController();
}

/** Calls /console/v1<path>; `query` is an object (arrays are repeated parameters). */
export async function api(method, path, { query, body } = {}) {
  const url = new URL("/console/v1" + path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(v));
  }
  const headers = { "SERVICE-API-KEY": getKey() || "" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store",
    signal: navigation.signal,
  });
  const text = await response.text();
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = { message: text }; }
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}
