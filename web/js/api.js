// The REST surface (same origin as the page): JSON calls, Server-Sent Event streams and uploads,
// with the stored bearer token and errors turned into plain sentences.

const TOKEN_KEY = "docuthinker.token";

export function getToken() {
  return localStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(token) {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const h = { ...extra };
  const token = getToken();
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

// Which part of the mesh answers a path, for saying which one is down.
const SERVICES = [
  [/^\/v1\/nlp/, "the language analysis service (nlp)"],
  [/^\/v1\/graph/, "the knowledge graph service (graph)"],
  [/^\/v1\/(documents|query|search|agents|crew|analyze)/, "the documents and answers service (rag)"],
  [/^\/v1\/chat\/completions/, "the chat API"],
  [/^\/v1\//, "the orchestrator"],
];
// Envoy's own words for an upstream it could not use, as people would say them.
const GATEWAY_WORDS = [
  [/no healthy upstream/i, "no instance of it is healthy right now (it may be starting or restarting)"],
  [/upstream connect error|disconnect\/reset before headers|connection (failure|termination|refused)/i,
    "it did not answer (it may be restarting)"],
  [/upstream request timeout/i, "it took too long to answer"],
  [/overloaded|overflow/i, "the gateway is overloaded"],
];
const RETRYABLE_CODES = new Set([4, 8, 10, 14]); // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, UNAVAILABLE

/** An HTTP or in-stream error: `status` (HTTP), `code` (gRPC), the server's `message`, and `explain()`. */
export class ApiError extends Error {
  constructor(status, message, code = 0, details = [], path = "") {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.details = details;
    this.path = path;
  }

  /** Whether the same call may work if made again shortly (the gateway, a service or a limit). */
  retryable() {
    return [-1, 429, 502, 503, 504].includes(this.status) || (this.status === 0 && RETRYABLE_CODES.has(this.code));
  }

  /** The part of the mesh behind the call, in words. */
  service() {
    const found = SERVICES.find(([pattern]) => pattern.test(this.path || ""));
    return found ? found[1] : "a service of the mesh";
  }

  /** Envoy's raw words (never shown as they are) as a sentence, or "". */
  gatewayWords() {
    const found = GATEWAY_WORDS.find(([pattern]) => pattern.test(this.message));
    return found ? found[1] : "";
  }

  /** The google.rpc.ErrorInfo reason of the details (e.g. "NO_SPEECH"), or "". */
  reason() {
    const info = (this.details || []).find((d) => String(d["@type"] || "").endsWith("google.rpc.ErrorInfo"));
    return info ? info.reason || "" : "";
  }

  /** The google.rpc.BadRequest field violations of the details, as " (field: why; ...)". */
  violations() {
    const list = (this.details || []).flatMap((d) => d.field_violations || d.fieldViolations || [])
      .filter((v) => v.description && !this.message.includes(v.description)); // no sentence said twice
    return list.length ? ` (${list.map((v) => `${v.field}: ${v.description}`).join("; ")})` : "";
  }

  /** The sentence shown to a person: what happened, in words, with the server's own message. */
  explain() {
    const server = this.message + this.violations();
    switch (this.status) {
      case 401:
        return `Not authenticated (401): the gateway needs a valid bearer token. Paste one under "Token". Server said: ${server}`;
      case 403:
        return `Forbidden (403): the token was accepted but does not allow this (no usable tenant claim?). Server said: ${server}`;
      case 429:
        return `Too many requests or over budget (429): ${server}. Wait a little, or raise the limit.`;
      case 400:
        return `Refused (400): ${server}`;
      case 404:
        return `Not found (404): ${server}`;
      case 413:
        return `Too large (413): the gateway refused a body over its upload limit. ${server}`;
      case 502:
      case 503: {
        const words = this.gatewayWords();
        return words ? `Unavailable (${this.status}): ${this.service()} — ${words}. Try again in a few seconds; System shows each service's state.`
          : `Unavailable (${this.status}): ${server}. A service may be starting or down (see System).`;
      }
      case 504:
        return `Timed out (504): ${this.service()} took too long to answer${this.gatewayWords() ? "" : ` (${server})`}. Try again; a first question after a start is slower.`;
      case -1:
        return `The gateway could not be reached: is DocuThinker running (make run)? ${server}`;
      case 0: {
        const words = this.gatewayWords();
        return words ? `${this.service()} stopped mid-way: ${words}. Try again.`
          : `In-stream error${this.code ? ` (gRPC code ${this.code})` : ""}: ${server}`;
      }
      default:
        return `Error ${this.status}: ${server}`;
    }
  }
}

async function errorFrom(response, path = "") {
  const text = await response.text();
  try {
    const status = JSON.parse(text);
    return new ApiError(response.status, status.message || text, status.code || 0, status.details || [], path);
  } catch {
    return new ApiError(response.status, text.trim() || response.statusText, 0, [], path);
  }
}

/** Builds an ApiError from a google.rpc.Status sent inside a stream. */
export function streamError(status, path = "") {
  return new ApiError(0, status.message || "the stream reported an error", status.code || 0, status.details || [], path);
}

/** A JSON call: GET when `body` is undefined, else POST (or `method`). */
export async function call(path, { method, body, signal } = {}) {
  const init = { method: method || (body === undefined ? "GET" : "POST"), headers: headers(), signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(-1, `(${error.message})`, 0, [], path);
  }
  if (!response.ok) throw await errorFrom(response, path);
  return response.json();
}

/** POSTs raw bytes (a recording) with their content type and returns the JSON reply. */
export async function sendBytes(path, blob, { type, signal } = {}) {
  let response;
  try {
    response = await fetch(path, { method: "POST", headers: headers({ "Content-Type": type || blob.type || "application/octet-stream" }), body: blob, signal });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(-1, `(${error.message})`, 0, [], path);
  }
  if (!response.ok) throw await errorFrom(response, path);
  return response.json();
}

/** The raw bytes of a GET (the stored original of a document). */
export async function fetchBytes(path) {
  let response;
  try {
    response = await fetch(path, { headers: headers() });
  } catch (error) {
    throw new ApiError(-1, `(${error.message})`, 0, [], path);
  }
  if (!response.ok) throw await errorFrom(response, path);
  return { type: response.headers.get("content-type") || "", data: await response.arrayBuffer() };
}

/** Splits SSE text into JSON messages; returns [messages, unparsed rest]. */
export function parseSse(buffer) {
  const messages = [];
  let rest = buffer.replace(/\r\n/g, "\n");
  let cut;
  while ((cut = rest.indexOf("\n\n")) >= 0) {
    const block = rest.slice(0, cut);
    rest = rest.slice(cut + 2);
    const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
    if (data) messages.push(JSON.parse(data));
  }
  return [messages, rest];
}

/** POSTs JSON and calls `onEvent` for every SSE message of the reply, in order. */
export async function stream(path, body, onEvent, { signal } = {}) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(body),
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(-1, `(${error.message})`, 0, [], path);
  }
  if (!response.ok) throw await errorFrom(response, path);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    let messages;
    [messages, buffer] = parseSse(buffer + value);
    for (const message of messages) onEvent(message);
  }
  const [last] = parseSse(buffer + "\n\n");
  for (const message of last) onEvent(message);
}

/**
 * Uploads one file (raw bytes, POST /v1/documents?filename=) and reports progress:
 * onSent(fraction) while bytes go up, onEvent(message) for each SSE message that comes back.
 * XMLHttpRequest, because fetch() reports no upload progress.
 */
export function upload(file, { onSent, onEvent }) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/v1/documents?filename=${encodeURIComponent(file.name)}`);
    for (const [k, v] of Object.entries(headers())) xhr.setRequestHeader(k, v);
    xhr.setRequestHeader("Content-Type", file.type || "application/octet-stream");
    let seen = 0;
    let buffer = "";
    let failure = null; // the first error onEvent raised (an in-stream error event): the upload's outcome
    const deliver = (messages) => {
      for (const message of messages) {
        if (failure) return;
        try {
          onEvent(message);
        } catch (error) {
          failure = error;
        }
      }
    };
    const drain = () => {
      if (xhr.status !== 200) return;
      const text = xhr.responseText;
      buffer += text.slice(seen);
      seen = text.length;
      let messages;
      [messages, buffer] = parseSse(buffer);
      deliver(messages);
    };
    xhr.upload.onprogress = (e) => e.lengthComputable && onSent(e.loaded / e.total);
    xhr.onprogress = drain;
    xhr.onerror = () => reject(new ApiError(-1, "(the upload could not be sent)", 0, [], "/v1/documents"));
    xhr.onload = () => {
      if (xhr.status !== 200) {
        let error;
        try {
          const s = JSON.parse(xhr.responseText);
          error = new ApiError(xhr.status, s.message, s.code, s.details, "/v1/documents");
        } catch {
          error = new ApiError(xhr.status, xhr.responseText.trim() || xhr.statusText, 0, [], "/v1/documents");
        }
        reject(error);
        return;
      }
      drain();
      const [last] = parseSse(buffer + "\n\n");
      deliver(last);
      if (failure) reject(failure);
      else resolve();
    };
    xhr.send(file);
  });
}
