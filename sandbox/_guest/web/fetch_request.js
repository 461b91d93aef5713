// Request (WHATWG Fetch), as a Worker has it: there is no base URL, so a relative URL is a
// TypeError; the members a Worker has (method, url, headers, redirect, signal, integrity,
// keepalive, cache, the Body mixin, clone()) and, with their spec values, a browser's others.
// native.requestParts gives fetchcap.js what a request sends.
(native) => {
  const TE = TypeError, U8 = Uint8Array;
  const apply = Reflect.apply, strToUpper = String.prototype.toUpperCase, reTest = RegExp.prototype.test;
  const taSlice = Object.getPrototypeOf(U8).prototype.slice;
  const AbortController_ = globalThis.AbortController, AbortSignal_ = globalThis.AbortSignal;
  const signalGetter = Reflect.getOwnPropertyDescriptor(AbortController_.prototype, "signal").get;
  const signalAny = AbortSignal_.any;
  const { isAbortSignal, extractBody, cloneBody, bodyUsed, bodyLocked } = native;
  const object = (v) => v !== null && (typeof v === "object" || typeof v === "function");
  const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
  const NORMALIZED = ["DELETE", "GET", "HEAD", "OPTIONS", "POST", "PUT"];
  const FORBIDDEN = ["CONNECT", "TRACE", "TRACK"];
  const REDIRECTS = ["follow", "error", "manual"];
  const CACHES = ["default", "no-store", "reload", "no-cache", "force-cache", "only-if-cached"];
  const CREDENTIALS = ["omit", "same-origin", "include"];
  const MODES = ["navigate", "same-origin", "no-cors", "cors"];
  const POLICIES = ["", "no-referrer", "no-referrer-when-downgrade", "same-origin", "origin", "strict-origin",
    "origin-when-cross-origin", "strict-origin-when-cross-origin", "unsafe-url"];
  const includes = (a, v) => {
    for (let i = 0; i < a.length; i++) if (a[i] === v) return true;
    return false;
  };
  const newSignal = () => apply(signalGetter, new AbortController_(), []);
  const following = (parent) => apply(signalAny, AbortSignal_, [[parent]]);

  const parseURL = (input) => {
    const parsed = native.parseURL(input);
    if (parsed === null) throw new TE(`Invalid URL: ${`${input}`.slice(0, 200)}`);
    if (parsed.credentials) throw new TE("Request cannot be constructed from a URL that includes credentials");
    return parsed.href;
  };
  const method = (m) => {
    const s = `${m}`;
    if (!apply(reTest, TOKEN, [s])) throw new TE(`Request: invalid method ${JSON.stringify(s.slice(0, 100))}`);
    const upper = apply(strToUpper, s, []);
    if (includes(FORBIDDEN, upper)) throw new TE(`Request: method ${upper} is forbidden`);
    return includes(NORMALIZED, upper) ? upper : s;
  };
  const enumValue = (v, values, what) => {
    const s = `${v}`;
    if (!includes(values, s)) throw new TE(`Request: ${s} is not a valid value for ${what}`);
    return s;
  };

  let stateOf, isRequest, making = null;
  class Request {
    #s;
    static {
      isRequest = (x) => object(x) && #s in x;
      stateOf = (x) => {
        if (!isRequest(x)) throw new TE("'this' is not a Request");
        return x.#s;
      };
    }
    constructor(input, init = undefined) {
      if (making) {
        this.#s = making;
        making = null;
        return;
      }
      if (arguments.length < 1) throw new TE("Request: 1 argument required, but only 0 present.");
      if (init !== undefined && init !== null && !object(init)) throw new TE("Request: init is not an object");
      const from = isRequest(input) ? input.#s : null;
      const s = from
        ? { ...from, headers: null }
        : { method: "GET", url: parseURL(input), headers: null, body: null, redirect: "follow",
          signal: null, integrity: "", keepalive: false, cache: "default", mode: "cors",
          credentials: "same-origin", referrer: "about:client", referrerPolicy: "" };
      init ??= {};
      // the dictionary members, in the order Web IDL reads them (alphabetical)
      const initBody = init.body, cache = init.cache, credentials = init.credentials, headers = init.headers;
      const integrity = init.integrity, keepalive = init.keepalive, m = init.method, mode = init.mode;
      const redirect = init.redirect, referrer = init.referrer, referrerPolicy = init.referrerPolicy;
      const signal = init.signal, window = init.window;
      // a non-empty init resets what the input request's client chose
      if (initBody !== undefined || cache !== undefined || credentials !== undefined || headers !== undefined
        || integrity !== undefined || keepalive !== undefined || m !== undefined || mode !== undefined
        || redirect !== undefined || referrer !== undefined || referrerPolicy !== undefined
        || signal !== undefined || window !== undefined) {
        s.referrer = "about:client";
        s.referrerPolicy = "";
      }
      // what a Worker has no use for is still checked as the spec says
      if (credentials !== undefined) s.credentials = enumValue(credentials, CREDENTIALS, "credentials");
      if (mode !== undefined && (s.mode = enumValue(mode, MODES, "mode")) === "navigate") {
        throw new TE("Request: mode cannot be \"navigate\"");
      }
      if (referrer !== undefined) {
        const r = `${referrer}`, parsed = r === "" ? null : native.parseURL(r);
        if (r !== "" && parsed === null) throw new TE("Request: referrer is not a valid URL");
        s.referrer = parsed === null ? "" : parsed.href;
      }
      if (referrerPolicy !== undefined) s.referrerPolicy = enumValue(referrerPolicy, POLICIES, "referrerPolicy");
      if (window !== undefined && window !== null) throw new TE("Request: window can only be null");
      if (cache !== undefined) s.cache = enumValue(cache, CACHES, "cache");
      if (integrity !== undefined) s.integrity = `${integrity}`;
      if (keepalive !== undefined) s.keepalive = !!keepalive;
      if (m !== undefined) s.method = method(m);
      if (redirect !== undefined) s.redirect = enumValue(redirect, REDIRECTS, "redirect");
      if (signal !== undefined && signal !== null && !isAbortSignal(signal)) {
        throw new TE("Request: signal is not an AbortSignal");
      }
      const parent = signal !== undefined ? signal : s.signal;
      s.signal = parent ? following(parent) : newSignal();
      // headers: init's, or a copy of the input's
      const h = new native.Headers();
      if (headers !== undefined) native.headersFill(h, headers);
      else if (from) {
        const list = native.headersList(from.headers);
        for (let i = 0; i < list.length; i++) native.headersAppend(h, list[i][0], list[i][1]);
      }
      s.headers = h;
      const hasInitBody = initBody !== undefined && initBody !== null;
      if ((hasInitBody || (from && from.body !== null)) && (s.method === "GET" || s.method === "HEAD")) {
        throw new TE("Request with GET/HEAD method cannot have body.");
      }
      if (hasInitBody) {
        const { bytes, stream, type } = extractBody(initBody);
        s.body = { bytes, stream, used: false };
        if (type !== null && native.headersGet(h, "content-type") === null) native.headersAppend(h, "content-type", type);
      } else if (from && from.body !== null) {
        if (bodyUsed(from.body) || bodyLocked(from.body)) throw new TE("Request: the input's body has already been used");
        s.body = { bytes: from.body.bytes, stream: from.body.stream, used: false };
      }
      // the input's body moves to the new request, or is dropped for init's: either way the input
      // is used from now on (and only once nothing above has thrown)
      if (from && from.body !== null) from.body.used = true;
      this.#s = s;
    }
    get method() {
      return this.#s.method;
    }
    get url() {
      return this.#s.url;
    }
    get headers() {
      return this.#s.headers;
    }
    get redirect() {
      return this.#s.redirect;
    }
    get signal() {
      return this.#s.signal;
    }
    get integrity() {
      return this.#s.integrity;
    }
    get keepalive() {
      return this.#s.keepalive;
    }
    get cache() {
      return this.#s.cache;
    }
    // what a browser's Request has and a Worker's lacks: the values the spec gives them
    get mode() {
      return this.#s.mode;
    }
    get credentials() {
      return this.#s.credentials;
    }
    get referrer() {
      return this.#s.referrer;
    }
    get referrerPolicy() {
      return this.#s.referrerPolicy;
    }
    get destination() {
      return this.#s && "";
    }
    get isReloadNavigation() {
      return this.#s && false;
    }
    get isHistoryNavigation() {
      return this.#s && false;
    }
    get duplex() {
      return this.#s && "half";
    }
    clone() {
      const s = this.#s;
      const h = new native.Headers();
      const list = native.headersList(s.headers);
      for (let i = 0; i < list.length; i++) native.headersAppend(h, list[i][0], list[i][1]);
      making = { ...s, headers: h, body: cloneBody(s.body, "Request.clone"), signal: following(s.signal) };
      return new Request();
    }
  }
  native.bodyMixin(Request, (r) => {
    const s = stateOf(r);
    return s;
  });
  native.webIDL(Request, "Request");

  native.Request = Request;
  native.isRequest = isRequest;
  // for fetchcap.js: what a request sends. The body's bytes are read (and the body used)
  // through native.consumeBody(parts.bodyRecord, what) when it is not null.
  native.requestParts = (r) => {
    const s = stateOf(r);
    const list = native.headersList(s.headers), headers = [];
    for (let i = 0; i < list.length; i++) headers[i] = [list[i][0], list[i][1]];
    const b = s.body;
    return {
      method: s.method, url: s.url, headers, redirect: s.redirect, signal: s.signal,
      body: b === null ? null : b.stream === null && !bodyUsed(b) ? apply(taSlice, b.bytes, []) : undefined,
      bodyRecord: b,
    };
  };
};
