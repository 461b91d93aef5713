// Response (WHATWG Fetch): the constructor's status, statusText and body checks,
// Response.error(), Response.redirect(), Response.json(), clone() and the Body mixin.
// native.makeResponse lets fetchcap.js build a fetched response (its url, redirected, type
// "basic", immutable headers).
(native) => {
  const TE = TypeError, RE = RangeError;
  const apply = Reflect.apply, reTest = RegExp.prototype.test, stringify = JSON.stringify;
  const { extractBody, cloneBody, utf8Encode } = native;
  const trunc = Math.trunc, isFinite = Number.isFinite;
  const object = (v) => v !== null && (typeof v === "object" || typeof v === "function");
  const NULL_BODY = [101, 103, 204, 205, 304];
  const REDIRECT = [301, 302, 303, 307, 308];
  const includes = (a, v) => {
    for (let i = 0; i < a.length; i++) if (a[i] === v) return true;
    return false;
  };
  // Web IDL unsigned short: ToNumber, truncate, modulo 2^16
  const unsignedShort = (v) => {
    let n = trunc(+v);
    if (!isFinite(n)) return 0;
    n %= 65536;
    return n < 0 ? n + 65536 : n;
  };

  // "initialize a response": status, statusText, headers, then the body and its Content-Type
  const initialize = (s, init, body, what) => {
    if (init !== undefined && init !== null && !object(init)) throw new TE(`${what}: init is not an object`);
    init ??= {};
    const headers = init.headers, status = init.status, statusText = init.statusText;
    if (status !== undefined) s.status = unsignedShort(status);
    if (statusText !== undefined) s.statusText = `${statusText}`;
    if (s.status < 200 || s.status > 599) {
      throw new RE(`${what}: the status provided (${s.status}) is outside the range [200, 599].`);
    }
    if (apply(reTest, /[^\t\x20-\x7e\x80-\xff]/, [s.statusText])) throw new TE(`${what}: invalid statusText`);
    if (headers !== undefined) native.headersFill(s.headers, headers);
    if (body !== null) {
      if (includes(NULL_BODY, s.status)) throw new TE(`${what}: a Response with status ${s.status} cannot have a body.`);
      s.body = { bytes: body.bytes, stream: body.stream, used: false };
      if (body.type !== null && native.headersGet(s.headers, "content-type") === null) {
        native.headersAppend(s.headers, "content-type", body.type);
      }
    }
  };
  const newState = () => ({
    type: "default", status: 200, statusText: "", headers: new native.Headers(), body: null,
    url: "", redirected: false,
  });

  let stateOf, isResponse, making = null;
  class Response {
    #s;
    static {
      isResponse = (x) => object(x) && #s in x;
      stateOf = (x) => {
        if (!isResponse(x)) throw new TE("'this' is not a Response");
        return x.#s;
      };
    }
    constructor(body = null, init = undefined) {
      if (making) {
        this.#s = making;
        making = null;
        return;
      }
      const s = newState();
      const extracted = body === null || body === undefined ? null : extractBody(body);
      initialize(s, init, extracted, "Response");
      this.#s = s;
    }
    static error() {
      const s = newState();
      s.type = "error";
      s.status = 0;
      native.setHeadersGuard(s.headers, "immutable");
      return make(s);
    }
    static redirect(url, status = 302) {
      if (arguments.length < 1) throw new TE("Response.redirect: 1 argument required, but only 0 present.");
      const parsed = native.parseURL(url);
      if (parsed === null) throw new TE(`Response.redirect: invalid URL ${`${url}`.slice(0, 200)}`);
      const code = unsignedShort(status);
      if (!includes(REDIRECT, code)) throw new RE(`Response.redirect: invalid status code ${code}`);
      const s = newState();
      s.status = code;
      native.headersAppend(s.headers, "location", parsed.href);
      native.setHeadersGuard(s.headers, "immutable");
      return make(s);
    }
    static json(data, init = undefined) {
      if (arguments.length < 1) throw new TE("Response.json: 1 argument required, but only 0 present.");
      const text = stringify(data);
      if (text === undefined) throw new TE("Response.json: the data is not JSON-serializable");
      const s = newState();
      initialize(s, init, { bytes: utf8Encode(text), stream: null, type: "application/json" }, "Response.json");
      return make(s);
    }
    get type() {
      return this.#s.type;
    }
    get url() {
      return this.#s.url;
    }
    get redirected() {
      return this.#s.redirected;
    }
    get status() {
      return this.#s.status;
    }
    get ok() {
      return this.#s.status >= 200 && this.#s.status <= 299;
    }
    get statusText() {
      return this.#s.statusText;
    }
    get headers() {
      return this.#s.headers;
    }
    clone() {
      const s = this.#s;
      const h = new native.Headers();
      const list = native.headersList(s.headers);
      for (let i = 0; i < list.length; i++) native.headersAppend(h, list[i][0], list[i][1]);
      native.setHeadersGuard(h, native.headersGuard(s.headers));
      return make({ ...s, headers: h, body: cloneBody(s.body, "Response.clone") });
    }
  }
  const make = (s) => {
    making = s;
    return new Response();
  };
  native.bodyMixin(Response, (r) => stateOf(r));
  native.webIDL(Response, "Response");

  native.Response = Response;
  native.isResponse = isResponse;
  // for fetchcap.js: a fetched response. `body` is a BodyInit or null (a ReadableStream for a
  // streamed one), `init` as for the constructor; its headers become immutable.
  native.makeResponse = (body, init, url, redirected) => {
    const s = newState();
    s.type = "basic";
    initialize(s, init, body === null || body === undefined ? null : extractBody(body), "Response");
    s.url = `${url}`;
    s.redirected = !!redirected;
    native.setHeadersGuard(s.headers, "immutable");
    return make(s);
  };
};
